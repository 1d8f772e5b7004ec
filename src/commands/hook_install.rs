//! `guardctl hook install claude-code`: the Claude Code settings that run the hook before
//! every Bash command, printed, or merged into the project's or the user's settings file.
//!
//! The hook command names this guardctl by its absolute path: a hook Claude Code cannot find
//! exits 127, which lets the command through.

use super::hook::InstallArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::ui::Ui;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Claude Code's own limit for the hook, above guardctl's `--timeout`: guardctl denies first.
const HARNESS_TIMEOUT_SECS: u64 = 60;

pub fn run(args: InstallArgs, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let command = hook_command(ctx)?;
    let entry = json!({
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": command, "timeout": HARNESS_TIMEOUT_SECS}],
    });
    if ctx.flags().1.is_none() {
        ui.warn(
            "no --key given: the hook signs with guardctl's default key, which may be yours; \
             give the agent a key of its own (`guardctl --key ~/.ssh/agent_ed25519 hook install claude-code`): \
             the hook refuses a key that may approve",
        );
    }
    if !args.write {
        let doc = json!({"hooks": {"PreToolUse": [entry]}});
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| Error::internal("cannot encode the settings").caused_by(e))?;
        ui.out().write_all(format!("{text}\n").as_bytes())?;
        return Ok(0);
    }
    let path = settings_path(ctx, &args.scope)?;
    let mut settings = read_settings(&path)?;
    let added = merge(&mut settings, entry)?;
    if !added {
        ui.status(&format!(
            "{} already runs this hook; nothing changed.",
            path.display()
        ));
        return Ok(0);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::internal(format!("cannot create {}", dir.display())).caused_by(e))?;
    }
    let text = serde_json::to_string_pretty(&settings)
        .map_err(|e| Error::internal("cannot encode the settings").caused_by(e))?;
    crate::fsutil::write_atomic(&path, format!("{text}\n").as_bytes())
        .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))?;
    ui.status(&format!(
        "Added the guardctl PreToolUse hook to {}. Restart Claude Code (or open /hooks) for it to take effect.",
        path.display()
    ));
    Ok(0)
}

/// `<this guardctl> [--key K] [--allowed-signers F] hook claude-code`, quoted for a shell.
fn hook_command(ctx: &Ctx) -> Result<String> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal("cannot tell where this guardctl is").caused_by(e))?;
    let cwd = ctx.start_dir()?;
    let absolute = |p: &Path| cwd.join(crate::context::expand_home(&p.to_string_lossy()));
    let (_, key, signers) = ctx.flags();
    let mut words = vec![exe.display().to_string()];
    if let Some(k) = key {
        words.extend(["--key".to_string(), absolute(&k).display().to_string()]);
    }
    if let Some(s) = signers {
        words.extend([
            "--allowed-signers".to_string(),
            absolute(&s).display().to_string(),
        ]);
    }
    words.extend(["hook".to_string(), "claude-code".to_string()]);
    Ok(crate::plan::derive::shell_words(&words))
}

fn settings_path(ctx: &Ctx, scope: &str) -> Result<PathBuf> {
    Ok(match scope {
        "user" => directories::BaseDirs::new()
            .ok_or_else(|| Error::usage("no home directory (HOME is not set)"))?
            .home_dir()
            .join(".claude/settings.json"),
        _ => ctx
            .repo()?
            .work_tree()
            .ok_or_else(|| Error::usage("a bare repository has no project settings; use --scope user"))?
            .join(".claude/settings.json"),
    })
}

fn read_settings(path: &Path) -> Result<Value> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Error::usage(format!("{} is not JSON: {e}", path.display()))
                    .with_hint("fix it, or print the settings without --write")
            })?;
            if !v.is_object() {
                return Err(Error::usage(format!("{} is not a JSON object", path.display())));
            }
            Ok(v)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(Error::internal(format!("cannot read {}", path.display())).caused_by(e)),
    }
}

/// Adds `entry` to `hooks.PreToolUse`; false when a hook with its command is there already.
fn merge(settings: &mut Value, entry: Value) -> Result<bool> {
    let shape = || Error::usage("the settings' `hooks.PreToolUse` is not a list");
    let hooks = settings
        .as_object_mut()
        .ok_or_else(shape)?
        .entry("hooks")
        .or_insert_with(|| json!({}));
    let list = hooks
        .as_object_mut()
        .ok_or_else(shape)?
        .entry("PreToolUse")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(shape)?;
    let command = &entry["hooks"][0]["command"];
    let present = list.iter().any(|m| {
        m["hooks"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(|h| &h["command"] == command))
    });
    if present {
        return Ok(false);
    }
    list.push(entry);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_other_settings_and_does_not_add_the_hook_twice() {
        let mut s = json!({"model": "x", "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": []}]}});
        let entry =
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "/g hook claude-code"}]});
        assert!(merge(&mut s, entry.clone()).unwrap());
        assert!(!merge(&mut s, entry).unwrap());
        assert_eq!(s["model"], "x");
        assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert!(merge(&mut json!({"hooks": []}), json!({})).is_err());
    }
}
