//! `guardctl explain -- LINE`: what the agent-shell gate makes of a line, and why, without
//! planning anything: the static reader's verdict, and for a line it cannot clear, what the
//! trial saw the line destroy on a copy-on-write view of the machine. The same engine as the
//! hooks (`engine::guard`); nothing is signed, written or run for real.

use crate::context::Ctx;
use crate::engine::guard::{GuardRequest, effect_reason, try_line};
use crate::error::Result;
use crate::shell::{Action, Reading};
use crate::text::safe;
use crate::ui::Ui;
use serde::Serialize;
use std::path::PathBuf;

/// Explain what the agent-shell gate would do with a command line, without planning it.
///
/// Prints the static reader's verdict (cleared, known destroyers, or sent to the trial) and,
/// for a line it cannot clear, runs the line's trial (a copy-on-write view of this machine,
/// no network, no keys) and prints exactly what it changed and destroyed there. Plans nothing
/// and changes nothing. Exit 0 when the hook would let the line run, 3 when it would deny it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A rules file whose rules come before the built-in ones (repeatable; docs/agents.md)
    #[arg(long, value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// The command line, after `--`
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Explained {
    /// `allow` or `deny`, as the hook would decide.
    decision: &'static str,
    /// `cleared`, `known` or `tried`.
    reader: &'static str,
    /// Why the reader sent the line to the trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    /// What the reader knows each destructive command does.
    known: Vec<KnownView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trial: Option<TrialExplained>,
}

#[derive(Debug, Serialize)]
struct KnownView {
    command: String,
    destroys: String,
    /// `plan` (guardctl plans it natively or by a preview) or `refuse` (and why).
    then: String,
}

#[derive(Debug, Serialize)]
struct TrialExplained {
    /// Why the trial could not finish, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    incomplete: Option<String>,
    /// One line per thing destroyed or per change to the gate: the manifest a plan of it lists.
    manifest: Vec<String>,
    created: usize,
    exempt: usize,
    #[serde(skip_serializing_if = "String::is_empty")]
    stderr_tail: String,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let line = match args.command.as_slice() {
        [one] => one.clone(),
        words => crate::plan::derive::shell_words(words),
    };
    let rules = super::guard::load_rules(&args.rules)?;
    let mut e = Explained {
        decision: "allow",
        reader: "cleared",
        why: None,
        known: Vec::new(),
        trial: None,
    };
    let (_, key, allowed_signers) = ctx.flags();
    let request = GuardRequest {
        line: line.clone(),
        cwd: ctx.start_dir()?,
        rules,
        key,
        allowed_signers,
        plans_dir: None,
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect(),
        trial_timeout: crate::ops::exec::TRIAL_TIMEOUT,
    };
    match crate::engine::guard::read(&request) {
        Reading::Safe => {}
        Reading::Known(findings) => {
            e.decision = "deny";
            e.reader = "known";
            e.known = findings
                .iter()
                .map(|f| KnownView {
                    command: safe(&f.command),
                    destroys: f.reason.clone(),
                    then: match &f.action {
                        Action::Refuse { why } => format!("refuse: {}", safe(why)),
                        _ => "plan".into(),
                    },
                })
                .collect();
        }
        Reading::Try(why) => {
            e.reader = "tried";
            e.why = Some(safe(&why));
            let effect = try_line(&request)?;
            let incomplete = effect.incomplete();
            if incomplete.is_some() || !effect.destroys_nothing() {
                e.decision = "deny";
            }
            if !effect.destroys_nothing() {
                e.why = Some(format!("{} — {}", safe(&why), effect_reason(&effect)));
            }
            e.trial = Some(TrialExplained {
                incomplete,
                manifest: effect.manifest().lines().map(safe).collect(),
                created: effect.created,
                exempt: effect.exempt,
                stderr_tail: effect.stderr_tail.clone(),
            });
        }
    }
    let code = if e.decision == "allow" {
        0
    } else {
        super::guard::DENIED
    };
    if ui.json {
        ui.json_doc(&e)?;
    } else {
        ui.out().write_all(text(&e).as_bytes())?;
    }
    Ok(code)
}

fn text(e: &Explained) -> String {
    let mut out = String::new();
    match e.reader {
        "cleared" => out.push_str(
            "reader: cleared — every command in the line is a known non-destroying program and form\n",
        ),
        "known" => {
            out.push_str("reader: knows what this destroys\n");
            for k in &e.known {
                out.push_str(&format!("  `{}`: {} → {}\n", k.command, k.destroys, k.then));
            }
        }
        _ => {
            out.push_str(&format!(
                "reader: cannot clear it: {}\n",
                e.why.as_deref().unwrap_or_default()
            ));
            if let Some(t) = &e.trial {
                out.push_str("trial: ran on a copy-on-write view (no network, no keys)\n");
                if let Some(i) = &t.incomplete {
                    out.push_str(&format!("  could not finish: {i}\n"));
                }
                if t.manifest.is_empty() {
                    out.push_str("  destroyed nothing\n");
                }
                for m in &t.manifest {
                    out.push_str(&format!("  - {m}\n"));
                }
                out.push_str(&format!(
                    "  created {} files; changed {} temporary or regenerable paths\n",
                    t.created, t.exempt
                ));
                if !t.stderr_tail.is_empty() {
                    out.push_str("  stderr (last lines):\n");
                    for l in t.stderr_tail.lines() {
                        out.push_str(&format!("  | {l}\n"));
                    }
                }
            }
        }
    }
    out.push_str(&format!(
        "decision: {}\n",
        if e.decision == "allow" {
            "allow (the hook lets it run)"
        } else {
            "deny (the hook blocks it; it plans what it can for a person to approve)"
        }
    ));
    out
}
