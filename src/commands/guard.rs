//! `guardctl guard -- COMMAND…`: the agent-shell gate for any harness — classify one command
//! line (`engine::guard`), exit 0 when nothing in it is destructive, else plan what it would
//! destroy and exit 3 with what to do next.

use crate::context::Ctx;
use crate::engine::guard::{Cleared, Guarded, LeftOut, Outcome};
use crate::engine::guard::{GuardRequest, Verdict};
use crate::error::Result;
use crate::render::guard::{
    CommandView, GuardView, LeftOutView, TrialView, guardctl_command, guardctl_command_as,
};
use crate::shell::rules::Rules;
use crate::text::safe;
use crate::ui::Ui;
use std::path::PathBuf;

/// `guard`'s exit code for a line it denies (docs/exit-codes.md).
pub const DENIED: u8 = 3;

/// Classify a command line before it runs: exit 0 when nothing in it is destructive; else
/// plan exactly what it would destroy (signed with your key, written to guardctl's plan
/// directory) and exit 3, saying how to have the plan approved and applied.
///
/// One argument is read as a shell line (`guardctl guard -- 'cd x && git push origin
/// --delete y'`); several as the words of one command. The rules are guardctl's built-in
/// ones, after any --rules files (docs/agents.md). A line guardctl cannot read with
/// confidence is denied, never allowed.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A rules file whose rules come before the built-in ones (repeatable; TOML, docs/agents.md)
    #[arg(long, value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// The command line, after `--`
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let line = match args.command.as_slice() {
        [one] => one.clone(),
        words => crate::plan::derive::shell_words(words),
    };
    let (_, key, allowed_signers) = ctx.flags();
    let request = GuardRequest {
        line,
        cwd: ctx.start_dir()?,
        rules: load_rules(&args.rules)?,
        key,
        allowed_signers,
        plans_dir: crate::context::default_plans_dir(),
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect(),
        trial_timeout: crate::ops::exec::TRIAL_TIMEOUT,
    };
    let verdict = crate::engine::guard::guard(ui, &request);
    let allowed = matches!(verdict, Verdict::Allow(_));
    let view = view(&verdict);
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        ui.out().write_all(crate::render::guard::text(&view).as_bytes())?;
    }
    Ok(if allowed { 0 } else { DENIED })
}

/// The rules in force: the files' rules, in order, before the built-in ones. A file that
/// cannot be read or parsed is an error, never skipped.
pub fn load_rules(files: &[PathBuf]) -> Result<Rules> {
    let mut first = Vec::new();
    for f in files {
        let text = crate::fsutil::read_bounded(f, 1 << 20).map_err(|e| {
            crate::error::Error::usage(format!("cannot read the rules file {}", f.display())).caused_by(e)
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            crate::error::Error::usage(format!("the rules file {} is not UTF-8", f.display()))
        })?;
        let parsed = crate::shell::rules::parse(&text)
            .map_err(|e| crate::error::Error::usage(format!("the rules file {}: {e}", f.display())))?;
        first.extend(parsed.rules);
    }
    let built_in = Rules::built_in().map_err(crate::error::Error::internal)?;
    Ok(built_in.after(first))
}

/// The view of what guardctl made of a line (both `guard` and the hooks print it).
pub fn view(verdict: &Verdict) -> GuardView {
    match verdict {
        Verdict::Allow(cleared) => GuardView {
            decision: "allow",
            unreadable: None,
            trial: match cleared {
                Cleared::Read => None,
                Cleared::Tried { why, effect } => Some(trial_view(why, effect)),
            },
            stderr_tail: None,
            plan_by_hand: None,
            commands: Vec::new(),
        },
        Verdict::Unreadable(u) => GuardView {
            decision: "deny",
            unreadable: Some(format!("{} ({})", safe(&u.because), safe(&u.why))),
            trial: None,
            stderr_tail: (!u.stderr_tail.is_empty()).then(|| u.stderr_tail.clone()),
            plan_by_hand: Some(plan_by_hand(&u.line)),
            commands: Vec::new(),
        },
        Verdict::Deny(guarded) => GuardView {
            decision: "deny",
            unreadable: None,
            trial: None,
            stderr_tail: None,
            plan_by_hand: None,
            commands: guarded.iter().map(command_view).collect(),
        },
    }
}

/// What the trial of a line it cleared found (counts; it destroyed nothing).
fn trial_view(why: &str, effect: &crate::trial::Effect) -> TrialView {
    TrialView {
        why: safe(why),
        created: effect.created,
        exempt: effect.exempt,
    }
}

/// `guardctl plan exec --preview '…' -- bash -c LINE`: how a person plans by hand a line
/// whose trial could not finish.
fn plan_by_hand(line: &str) -> String {
    format!(
        "guardctl plan exec --preview '<a command that lists what it destroys>' -- {}",
        crate::plan::derive::shell_words(&["bash".into(), "-c".into(), safe(line)])
    )
}

fn command_view(g: &Guarded) -> CommandView {
    let f = &g.finding;
    let dir = f.dir.display().to_string();
    let mut v = CommandView {
        command: safe(&f.command),
        dir: if dir.is_empty() { ".".into() } else { safe(&dir) },
        destroys: f.reason.clone(),
        outcome: "planned",
        plan_id: None,
        plan_file: None,
        summary: None,
        affected: None,
        left_out: Vec::new(),
        reason: None,
        error_kind: None,
        hint: None,
        approve_command: None,
        wait_command: None,
        apply_command: None,
    };
    match &g.outcome {
        Outcome::Planned(p) => {
            let file = p.plan_file.display().to_string();
            v.plan_id = Some(p.plan_id.clone());
            v.plan_file = Some(file.clone());
            v.summary = Some(p.summary.clone());
            v.affected = Some(p.affected);
            v.left_out = p
                .left_out
                .iter()
                .map(|(name, why)| LeftOutView {
                    name: safe(name),
                    reason: match why {
                        LeftOut::Skipped(r) => r.describe().to_string(),
                        LeftOut::Missing => "no such branch or tag".to_string(),
                    },
                })
                .collect();
            if p.affected > 0 {
                v.approve_command = Some(guardctl_command(&p.repo, "approve", &file));
                // The agent's own key and trusted identities, as the hook was given them.
                let mut agent = Vec::new();
                if let Some(k) = &p.key {
                    agent.extend(["--key".to_string(), k.display().to_string()]);
                }
                if let Some(f) = &p.allowed_signers {
                    agent.extend(["--allowed-signers".to_string(), f.display().to_string()]);
                }
                // Below the 2 minutes Claude Code gives a Bash call by default: a wait the
                // harness kills says nothing; one that ends says "still waiting" (75).
                v.wait_command = Some(format!(
                    "{} --timeout 110s",
                    guardctl_command_as(&p.repo, &agent, "wait", &file)
                ));
                v.apply_command = Some(guardctl_command_as(&p.repo, &agent, "apply", &file));
            }
        }
        Outcome::Refused(why) => {
            v.outcome = "refused";
            v.reason = Some(safe(why));
        }
        Outcome::Failed(e) => {
            v.outcome = "failed";
            // What failed, and its causes' last lines (a preview's stderr): an agent acts on
            // the reason, not on "exit status 1".
            let causes: Vec<&str> = e.causes.iter().flat_map(|c| c.lines()).collect();
            let tail = &causes[causes.len().saturating_sub(8)..];
            v.reason = Some(if tail.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.message, tail.join(" / "))
            });
            v.error_kind = Some(e.kind.as_str());
            v.hint = e.hint.clone();
        }
    }
    v
}
