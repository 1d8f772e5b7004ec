//! `guardctl hook install claude-code`: the Claude Code settings that run the hook before
//! every Bash command, printed, or merged into a settings file.
//!
//! The hook must fail closed, and Claude Code lets a call through on any exit but 2 (it has
//! no fail-closed setting of its own). So the command it runs is `<guardctl …> || exit 2`: a
//! guardctl that is missing (127), not executable (126), killed or crashing blocks the call.
//! guardctl is named as the user's `PATH` finds it (the path a package manager keeps up to
//! date), not as the running binary resolves (a versioned store path, a build directory). By
//! default the hook goes into the local settings file (`.claude/settings.local.json`), which
//! guardctl makes ignored for this clone: no commit, checkout, reset or clean of the
//! project's tracked files rewrites it, and a `git clean -x` that would delete it is a
//! change to the gate, which the hook plans rather than allows.

use super::hook::InstallArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::ui::Ui;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Claude Code's own limit for the hook, above guardctl's `--timeout`: guardctl denies first.
const HARNESS_TIMEOUT_SECS: u64 = 60;

/// What turns every failure of the hook's program into a block (Claude Code blocks on 2).
pub const FAIL_CLOSED: &str = " || exit 2";

/// The local settings file, relative to the work tree's top.
pub const LOCAL_SETTINGS: &str = ".claude/settings.local.json";

pub fn run(args: InstallArgs, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let exe = hook_binary(ui)?;
    for warning in writable_warnings(&exe) {
        ui.warn(&warning);
    }
    let command = hook_command(ctx, &exe)?;
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
    if args.scope == "local" {
        // Ignored for this clone only (`.git/info/exclude`): nothing is committed.
        let repo = ctx.repo()?;
        if !repo.is_ignored(Path::new(LOCAL_SETTINGS))? {
            repo.exclude_locally(&format!("/{LOCAL_SETTINGS}"))?;
        }
    }
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
        "Added the guardctl PreToolUse hook to {}. Restart Claude Code (or open /hooks) for it to take effect; \
         `guardctl doctor` checks the set-up end to end.",
        path.display()
    ));
    Ok(0)
}

/// The guardctl the hook runs: the `guardctl` the user's `PATH` finds when that is this very
/// program, else this program's own path (with a warning when that looks temporary).
pub fn hook_binary(ui: &mut Ui) -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal("cannot tell where this guardctl is").caused_by(e))?;
    let same = |p: &Path| {
        let (a, b) = (std::fs::canonicalize(p), std::fs::canonicalize(&exe));
        matches!((a, b), (Ok(a), Ok(b)) if a == b)
    };
    if let Some(on_path) = on_path("guardctl").filter(|p| same(p)) {
        return Ok(on_path);
    }
    let shown = exe.display().to_string();
    let temporary = ["/tmp/", "/var/tmp/", "/target/debug/", "/target/release/"]
        .iter()
        .any(|t| shown.contains(t));
    if temporary {
        ui.warn(&format!(
            "this guardctl runs from {shown}, which looks temporary (a build or temporary directory): \
             once it is gone the hook blocks every command; install guardctl on your PATH \
             (`cargo install --locked --path .`) and run `guardctl hook install` again"
        ));
    }
    Ok(exe)
}

/// The first `name` on `PATH` that is an executable file, as `PATH` spells it.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Warnings for a binary (or its directory) that this user can write: an agent running as
/// this user could replace the gate with a program that allows everything.
pub fn writable_warnings(exe: &Path) -> Vec<String> {
    use nix::unistd::{AccessFlags, access};
    let mut out = Vec::new();
    for (what, path) in [
        ("guardctl's binary", Some(exe)),
        ("the directory holding guardctl's binary", exe.parent()),
    ] {
        let Some(path) = path else { continue };
        if access(path, AccessFlags::W_OK).is_ok() {
            out.push(format!(
                "{what} ({}) is writable by this user: an agent running as this user could replace the gate; \
                 install guardctl where only root (or another user) can write, and run the agent as a user who cannot",
                path.display()
            ));
        }
    }
    out
}

/// `<guardctl> [--key K] [--allowed-signers F] hook claude-code || exit 2`, quoted for a shell.
fn hook_command(ctx: &Ctx, exe: &Path) -> Result<String> {
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
    Ok(format!(
        "{}{FAIL_CLOSED}",
        crate::plan::derive::shell_words(&words)
    ))
}

/// The settings file of `scope` (`local`, `project` or `user`).
pub fn settings_path(ctx: &Ctx, scope: &str) -> Result<PathBuf> {
    let top = || {
        ctx.repo()?
            .work_tree()
            .ok_or_else(|| Error::usage("a bare repository has no project settings; use --scope user"))
    };
    Ok(match scope {
        "user" => directories::BaseDirs::new()
            .ok_or_else(|| Error::usage("no home directory (HOME is not set)"))?
            .home_dir()
            .join(".claude/settings.json"),
        "project" => top()?.join(".claude/settings.json"),
        _ => top()?.join(LOCAL_SETTINGS),
    })
}

pub fn read_settings(path: &Path) -> Result<Value> {
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

/// The hook commands of `settings` that run `guardctl … hook claude-code`.
pub fn hook_commands(settings: &Value) -> Vec<String> {
    settings["hooks"]["PreToolUse"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| {
            m["matcher"]
                .as_str()
                .is_none_or(|t| t == "Bash" || t == "*" || t.is_empty())
        })
        .flat_map(|m| m["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str())
        .filter(|c| c.contains("hook claude-code"))
        .map(String::from)
        .collect()
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
        assert_eq!(hook_commands(&s), vec!["/g hook claude-code".to_string()]);
    }

    #[test]
    fn a_file_this_user_can_write_is_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("guardctl");
        std::fs::write(&exe, "").unwrap();
        let w = writable_warnings(&exe);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("writable by this user"), "{w:?}");
    }
}
