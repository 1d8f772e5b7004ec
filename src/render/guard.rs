//! What `guardctl guard` and `guardctl hook` say about a command line: `guard --json`'s
//! document and, from the same view, the words the agent (or person) reads — what was
//! planned, what was refused and why, and exactly what to run next.

use crate::plan::derive::shell_words;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct GuardView {
    /// `allow`: nothing destructive, it may run; `deny`: it must not run as it is.
    pub decision: &'static str,
    /// Why the line's trial could not finish, when that is why it is denied (and why the
    /// reader sent it there, in parentheses).
    pub unreadable: Option<String>,
    /// For an allowed line the reader could not clear: what its trial found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<TrialView>,
    /// The last lines the line printed on stderr in its trial, when the trial could not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// How a person plans the line by hand, when its trial could not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_by_hand: Option<String>,
    /// Each destructive command and what guardctl did about it.
    pub commands: Vec<CommandView>,
}

#[derive(Debug, Serialize)]
pub struct CommandView {
    /// The command as guardctl read it.
    pub command: String,
    /// Where it would run, relative to the line's directory (`.`: there).
    pub dir: String,
    /// What it destroys.
    pub destroys: String,
    /// `planned`, `refused` (nothing guardctl can plan from here) or `failed` (planning did).
    pub outcome: &'static str,
    pub plan_id: Option<String>,
    pub plan_file: Option<String>,
    pub summary: Option<String>,
    pub affected: Option<usize>,
    /// Names the command gave that its plan leaves out, and why.
    pub left_out: Vec<LeftOutView>,
    /// Why it was refused or why planning failed.
    pub reason: Option<String>,
    /// For a failure: the error kind and exit code guardctl gives it (docs/exit-codes.md).
    pub error_kind: Option<&'static str>,
    pub hint: Option<String>,
    /// What to run next: a person approves; the agent waits, then applies.
    pub approve_command: Option<String>,
    pub wait_command: Option<String>,
    pub apply_command: Option<String>,
}

/// What the trial of an allowed line found: it destroyed nothing.
#[derive(Debug, Serialize)]
pub struct TrialView {
    /// Why the reader could not clear the line by itself.
    pub why: String,
    /// Files it created.
    pub created: usize,
    /// Temporary files and regenerable build output it changed or deleted.
    pub exempt: usize,
}

#[derive(Debug, Serialize)]
pub struct LeftOutView {
    pub name: String,
    pub reason: String,
}

/// `guardctl -C <repo> <command> <arg>`, quoted for a POSIX shell.
pub fn guardctl_command(repo: &Path, command: &str, arg: &str) -> String {
    guardctl_command_as(repo, &[], command, arg)
}

/// [`guardctl_command`] with global flags (`--key K`) before the command.
pub fn guardctl_command_as(repo: &Path, flags: &[String], command: &str, arg: &str) -> String {
    // Components drop the trailing `/` libgit2 gives a work tree.
    let repo: std::path::PathBuf = repo.components().collect();
    let mut words = vec!["guardctl".to_string(), "-C".into(), repo.display().to_string()];
    words.extend(flags.iter().cloned());
    words.extend([command.to_string(), arg.to_string()]);
    shell_words(&words)
}

/// The words an agent (or person) reads when the line is denied; empty when allowed.
pub fn text(v: &GuardView) -> String {
    let mut out = String::new();
    if v.decision == "allow" {
        return out;
    }
    if let Some(why) = &v.unreadable {
        let _ = writeln!(
            out,
            "guardctl: denied. guardctl tried this line in its sandbox (a copy-on-write view, no network, \
             no keys) to see what it destroys, and the trial could not finish: {why}. Nothing ran."
        );
        if let Some(tail) = &v.stderr_tail {
            let _ = writeln!(out, "What it printed on stderr there (last lines):");
            for l in tail.lines() {
                let _ = writeln!(out, "  | {l}");
            }
        }
        if let Some(by_hand) = &v.plan_by_hand {
            let _ = writeln!(
                out,
                "A person can plan it by hand, with a preview that lists what it destroys:\n  {by_hand}\n\
                 Do not run the line another way; ask the person you work for."
            );
        }
        return out;
    }
    let _ = writeln!(
        out,
        "guardctl: denied. This command destroys something, so a person must approve exactly what \
         it destroys first. Nothing ran.\n"
    );
    for (i, c) in v.commands.iter().enumerate() {
        let here = if c.dir == "." {
            String::new()
        } else {
            format!(" (in {})", c.dir)
        };
        let _ = writeln!(out, "{}. `{}`{here}: {}.", i + 1, c.command, c.destroys);
        match c.outcome {
            "planned" => {
                let _ = writeln!(
                    out,
                    "   Planned: {} ({}).",
                    c.plan_id.as_deref().unwrap_or_default(),
                    c.summary.as_deref().unwrap_or_default()
                );
                for l in &c.left_out {
                    let _ = writeln!(out, "   Not in the plan: {} ({}).", l.name, l.reason);
                }
                match (&c.approve_command, &c.wait_command, &c.apply_command) {
                    (Some(approve), Some(wait), Some(apply)) => {
                        let _ = writeln!(out, "   A person approves it:  {approve}");
                        let _ = writeln!(out, "   You wait for that:     {wait}");
                        let _ = writeln!(
                            out,
                            "   (exit 0: approved; 75: still waiting, run it again; 12: rejected, stop)"
                        );
                        let _ = writeln!(out, "   then apply it:         {apply}");
                    }
                    _ => {
                        let _ = writeln!(
                            out,
                            "   The plan changes nothing: there is nothing to approve or run."
                        );
                    }
                }
            }
            "refused" => {
                let _ = writeln!(
                    out,
                    "   Not planned: {}.",
                    c.reason.as_deref().unwrap_or_default()
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "   Planning failed ({}): {}",
                    c.error_kind.unwrap_or("internal"),
                    c.reason.as_deref().unwrap_or_default()
                );
                if let Some(hint) = &c.hint {
                    let _ = writeln!(out, "   hint: {hint}");
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "\nDo not run the original command, nor a variant of it: `guardctl apply` runs exactly what \
         was approved, after checking nothing changed since. Run the rest of the line apart."
    );
    out
}
