//! `guardctl doctor`: checks the agent-shell hook's set-up end to end, as the harness will run
//! it: which settings files run the hook, whether each hook command fails closed, whether the
//! guardctl it names exists, is this guardctl and is out of the agent's reach, whether this
//! system can run previews and trials in the sandbox, and finally the hook command itself, fed
//! a harmless line (it must pass) and a line that destroys everything (it must block).
//! Read-only: it plans nothing and writes nothing.

use super::hook_install::{FAIL_CLOSED, hook_commands, read_settings, settings_path, writable_warnings};
use crate::context::Ctx;
use crate::error::Result;
use crate::process::Process;
use crate::text::safe;
use crate::ui::Ui;
use serde::Serialize;
use std::path::PathBuf;

/// Check the agent-shell hook's set-up end to end (read-only).
///
/// Looks for `guardctl hook claude-code` in the local, project and user Claude Code settings,
/// checks that each such command fails closed (`|| exit 2`), that the guardctl it names is
/// there and cannot be replaced by the user the agent runs as, that previews and trials can be
/// sandboxed here, and runs the command with a harmless line (must pass) and `rm -rf /` (must
/// block). Exit 0 when every check passes, 1 otherwise.
#[derive(Debug, clap::Args)]
pub struct Args {}

#[derive(Debug, Serialize)]
struct Check {
    name: String,
    ok: bool,
    detail: String,
}

#[derive(Debug, Serialize)]
struct Report {
    ok: bool,
    checks: Vec<Check>,
}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let mut checks = Vec::new();
    let mut check = |name: &str, ok: bool, detail: String| {
        checks.push(Check {
            name: name.to_string(),
            ok,
            detail,
        })
    };
    let mut commands: Vec<(PathBuf, String)> = Vec::new();
    for scope in ["local", "project", "user"] {
        let Ok(path) = settings_path(ctx, scope) else {
            continue;
        };
        match read_settings(&path) {
            Ok(settings) => commands.extend(hook_commands(&settings).into_iter().map(|c| (path.clone(), c))),
            Err(e) => check("settings", false, format!("{}: {}", path.display(), e.message)),
        }
    }
    check(
        "installed",
        !commands.is_empty(),
        if commands.is_empty() {
            "no Claude Code settings file runs `guardctl hook claude-code`: run `guardctl --key <agent key> hook install claude-code --write`".into()
        } else {
            commands
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        },
    );
    for (path, command) in &commands {
        let at = format!("{}: {}", path.display(), safe(command));
        check(
            "fails closed",
            command.trim_end().ends_with(FAIL_CLOSED.trim()),
            if command.trim_end().ends_with(FAIL_CLOSED.trim()) {
                at.clone()
            } else {
                format!(
                    "{at}: a missing or broken guardctl would let every command through; run `guardctl hook install --write` again"
                )
            },
        );
        // Read by the one shell reader: the first word of the first command is the program.
        let program = crate::shell::words::commands(command)
            .ok()
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.words.first().and_then(|w| w.literal().map(PathBuf::from)));
        match program {
            Some(p) if p.is_absolute() && p.is_file() => {
                let warnings = writable_warnings(&p);
                check(
                    "binary out of the agent's reach",
                    warnings.is_empty(),
                    if warnings.is_empty() {
                        p.display().to_string()
                    } else {
                        warnings.join("; ")
                    },
                );
            }
            Some(p) => check(
                "binary",
                false,
                format!(
                    "{}: not an absolute path to a file",
                    safe(&p.display().to_string())
                ),
            ),
            None => check("binary", false, format!("{at}: cannot read the command's words")),
        }
        for (line, want) in [("true", 0), ("rm -rf /", 2)] {
            let (ok, detail) = try_hook(ctx, command, line, want);
            check(
                if want == 0 {
                    "passes a harmless line"
                } else {
                    "blocks `rm -rf /`"
                },
                ok,
                detail,
            );
        }
    }
    let probe = crate::sandbox::probe();
    check(
        "sandbox",
        probe == crate::sandbox::Probe::Ready,
        match probe {
            crate::sandbox::Probe::Ready => "previews and trials run sandboxed here".into(),
            crate::sandbox::Probe::Missing(w) | crate::sandbox::Probe::Broken(w) => w,
        },
    );
    let report = Report {
        ok: checks.iter().all(|c| c.ok),
        checks,
    };
    if ui.json {
        ui.json_doc(&report)?;
    } else {
        let mut text = String::new();
        for c in &report.checks {
            text.push_str(&format!(
                "{} {}: {}\n",
                if c.ok { "ok     " } else { "PROBLEM" },
                c.name,
                c.detail
            ));
        }
        ui.out().write_all(text.as_bytes())?;
    }
    Ok(if report.ok { 0 } else { 1 })
}

/// Run the hook `command` as the harness does (`sh -c`, a PreToolUse payload on stdin) for
/// `line` in this directory: whether it exits `want`, and what it said.
fn try_hook(ctx: &Ctx, command: &str, line: &str, want: i32) -> (bool, String) {
    let Ok(cwd) = ctx.start_dir() else {
        return (false, "no working directory".into());
    };
    let payload = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": line},
        "cwd": cwd,
    })
    .to_string();
    match Process::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(&cwd)
        .output(Some(payload.as_bytes()))
    {
        Ok(out) => {
            let code = out.status.code().unwrap_or(-1);
            let said = String::from_utf8_lossy(&out.stderr);
            let first = said.lines().next().unwrap_or("").to_string();
            (
                code == want,
                format!(
                    "`{line}`: exit {code} (want {want}){}",
                    if first.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", safe(&first))
                    }
                ),
            )
        }
        Err(e) => (false, format!("cannot run the hook: {}", e.message)),
    }
}
