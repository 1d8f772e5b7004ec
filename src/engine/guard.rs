//! Guarding a shell command line an agent (or anyone) is about to run: the engine behind
//! `guardctl hook claude-code`, `guardctl guard` and `guardctl explain`. Judged by effect,
//! not by spelling:
//!
//! 1. The static reader (`shell::read`) clears a line whose every command is a known
//!    non-destroying program and form: allowed at once, nothing else runs (the fast path).
//! 2. A line whose destroyers the reader knows exactly (`git branch -D`, `git tag -d`, a
//!    push that deletes, a remote command) becomes plans made exactly as `guardctl plan`
//!    makes them (the same `engine::plan::plan`, signed with the caller's key, written to the
//!    agent's plan directory), or refusals.
//! 3. Anything else — unknown programs, interpreters, scripts, dynamic words, lines the
//!    parser cannot read — is tried: run by bash in the trial sandbox on a copy-on-write
//!    view of the machine, without network or keys (`crate::trial`). Nothing destroyed:
//!    allowed (the harness then runs the line for real). Something destroyed: an exec plan
//!    whose manifest is exactly what the trial destroyed (the same trial runs again at
//!    apply, and any difference refuses it). A trial that could not finish (the network, a
//!    hidden path, the time limit): denied, saying why and how to plan it by hand.
//!
//! Nothing here runs the line for real: a person approves the plan and the agent applies
//! it with `guardctl apply`, through the same gate as everyone else.
//!
//! A key that may approve is refused before any plan is made (the agent would approve its
//! own plans), as `guardctl mcp` refuses it at start.

use super::plan::{
    BranchesRequest, Destination, ExecRequest, OperationRequest, PlanRequest, RemoteBranchesRequest,
    TagsRequest,
};
use super::publish::Publish;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::plan::model::SkipReason;
use crate::shell::rules::Rules;
use crate::shell::{Action, Assumption, Finding, Reading};
use crate::trial::Effect;
use crate::ui::Ui;
use std::path::PathBuf;

/// A command line to guard.
#[derive(Debug, Clone)]
pub struct GuardRequest {
    /// The line as the shell would read it.
    pub line: String,
    /// Where it would run (the hook's `cwd`; `guardctl guard`'s working directory).
    pub cwd: PathBuf,
    pub rules: Rules,
    /// The key and allowed-signers flags, as for every command.
    pub key: Option<PathBuf>,
    pub allowed_signers: Option<PathBuf>,
    /// Where the plans go (the agent's plan directory).
    pub plans_dir: Option<PathBuf>,
    /// The environment the line would run with (the trial gets exactly this).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// The most a trial may take before the line is denied.
    pub trial_timeout: std::time::Duration,
}

/// What guardctl makes of the line.
#[derive(Debug)]
pub enum Verdict {
    /// It destroys nothing: cleared by the reader, or tried and nothing destroyed.
    Allow(Cleared),
    /// It was tried, and the trial could not finish: it must not run as it is.
    Unreadable(Untried),
    /// Destructive: each destructive command and what guardctl did about it.
    Deny(Vec<Guarded>),
}

/// How a line was cleared.
#[derive(Debug)]
pub enum Cleared {
    /// Every command in it is a known non-destroying program and form.
    Read,
    /// The reader could not clear it (why); the trial ran it and it destroyed nothing.
    Tried { why: String, effect: Box<Effect> },
}

/// A line whose trial could not finish.
#[derive(Debug)]
pub struct Untried {
    /// The line.
    pub line: String,
    /// Why the reader sent it to the trial.
    pub why: String,
    /// Why the trial could not decide (the network, a hidden path, the time limit, an
    /// error building the sandbox).
    pub because: String,
    /// The last lines the line printed on stderr in the trial.
    pub stderr_tail: String,
}

#[derive(Debug)]
pub struct Guarded {
    pub finding: Finding,
    pub outcome: Outcome,
}

#[derive(Debug)]
pub enum Outcome {
    /// A plan of it was made.
    Planned(PlannedCommand),
    /// Nothing guardctl can plan from here (the classifier's words).
    Refused(String),
    /// Planning failed (a repository error, no key, a key that may approve, a preview that
    /// failed).
    Failed(Error),
}

#[derive(Debug)]
pub struct PlannedCommand {
    pub plan_id: String,
    pub plan_file: PathBuf,
    /// The repository's top directory (for the commands to run next).
    pub repo: PathBuf,
    pub summary: String,
    /// How many resources the plan affects.
    pub affected: usize,
    /// Names the command gave that the plan leaves out, and why.
    pub left_out: Vec<(String, LeftOut)>,
    /// The key and allowed-signers files the plan was made with (absolute): the agent waits
    /// and applies with them, not with whatever key its shell would find.
    pub key: Option<PathBuf>,
    pub allowed_signers: Option<PathBuf>,
}

/// Why a name the command gave is not in its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    Skipped(SkipReason),
    /// No such branch or tag.
    Missing,
}

/// Read the line; plan what the reader knows to destroy; try what it cannot clear.
pub fn guard(ui: &mut Ui, request: &GuardRequest) -> Verdict {
    let findings = match read(request) {
        Reading::Safe => return Verdict::Allow(Cleared::Read),
        Reading::Known(findings) => findings,
        Reading::Try(why) => return tried(ui, request, why),
    };
    let guarded = findings
        .into_iter()
        .map(|finding| {
            let outcome = match &finding.action {
                Action::Refuse { why } => Outcome::Refused(why.clone()),
                _ => match plan_one(ui, request, &finding) {
                    Ok(p) => Outcome::Planned(p),
                    Err(e) => Outcome::Failed(e),
                },
            };
            Guarded { finding, outcome }
        })
        .collect();
    Verdict::Deny(guarded)
}

/// The reader's verdict on the request's line, with what a Safe reading took for granted
/// checked against the repository and the environment: Safe only when all of it holds.
/// (`guardctl explain` shows exactly this, then the trial.)
pub fn read(request: &GuardRequest) -> Reading {
    let (reading, assumptions) = crate::shell::read_with_assumptions(&request.line, &request.rules);
    match reading {
        Reading::Safe => match unmet(request, &assumptions) {
            None => Reading::Safe,
            Some(Unmet::Refuse { reason, why }) => Reading::Known(vec![Finding {
                command: request.line.clone(),
                dir: PathBuf::new(),
                reason,
                action: Action::Refuse { why },
            }]),
            Some(Unmet::Try(why)) => Reading::Try(why),
        },
        other => other,
    }
}

/// What a cleared line took for granted that does not hold here.
enum Unmet {
    /// Refused: a fetch or push the repository's config makes destructive (neither can be
    /// tried: they need the network).
    Refuse { reason: String, why: String },
    /// Tried after all: a temporary path it deletes holds the work tree, or `$TMPDIR` is not
    /// set.
    Try(String),
}

/// Check what the reader could not see (it is pure: no repository, no environment) for a
/// line it cleared: the repository's config for a fetch or a push, and where a deleted
/// temporary path really is.
fn unmet(request: &GuardRequest, assumptions: &[Assumption]) -> Option<Unmet> {
    let repo_at = |dir: &std::path::Path| Ctx::new(Some(request.cwd.join(dir)), None, None);
    let refuse = |what: &str, setting: Result<Option<String>>| {
        let setting = match setting {
            Ok(None) => return None,
            Ok(Some(s)) => s,
            // Config guardctl cannot read is not a fetch or push it can clear.
            Err(e) => format!("unreadable: {}", e.message),
        };
        Some(Unmet::Refuse {
            reason: format!(
                "this repository's config ({}) makes `git {what}` delete or overwrite refs",
                crate::text::safe(&setting)
            ),
            why: format!(
                "a {what} needs the network, which the trial does not have: plan it by hand, or fix the config"
            ),
        })
    };
    for a in assumptions {
        let found = match a {
            Assumption::Fetch { dir, .. } => {
                let ctx = repo_at(dir);
                match ctx.repo() {
                    Ok(repo) => refuse("fetch", repo.fetch_rewrites_local_refs()),
                    Err(_) => None,
                }
            }
            Assumption::Push { dir, .. } => {
                let ctx = repo_at(dir);
                match ctx.repo() {
                    Ok(repo) => refuse("push", repo.push_rewrites_remote_refs()),
                    Err(_) => None,
                }
            }
            Assumption::Deletes { dir, path } => temporary_unmet(request, dir, path),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// A temporary path a cleared line deletes that is not harmless here: `$TMPDIR` unset (so
/// `$TMPDIR/x` is `/x`), or a path that holds the starting directory or its repository.
fn temporary_unmet(request: &GuardRequest, dir: &std::path::Path, path: &str) -> Option<Unmet> {
    let tmpdir = request
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "TMPDIR")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty());
    let mentions_tmpdir = path.contains("TMPDIR");
    let resolved = if mentions_tmpdir {
        let Some(t) = tmpdir else {
            return Some(Unmet::Try(format!(
                "`{}` with TMPDIR unset is not a temporary path",
                crate::text::safe(path)
            )));
        };
        let t = t.to_string_lossy().into_owned();
        PathBuf::from(
            path.replace("\"$TMPDIR\"", &t)
                .replace("${TMPDIR}", &t)
                .replace("$TMPDIR", &t)
                .replace('"', ""),
        )
    } else if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        // A `mktemp` variable: the path is made by the line itself, holding nothing before.
        return None;
    };
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let target = canon(&request.cwd.join(dir).join(resolved));
    // Where the kernel takes it, not where the text says: a symbolic link under /tmp with
    // `..` after it (`/tmp/link/../notes.txt`) leads anywhere.
    let mut temporary: Vec<PathBuf> = vec![
        canon(std::path::Path::new("/tmp")),
        canon(std::path::Path::new("/var/tmp")),
    ];
    if let Some(t) = request
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "TMPDIR")
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
    {
        temporary.push(canon(std::path::Path::new(t)));
    }
    if !temporary.iter().any(|t| target.starts_with(t) && target != *t) {
        return Some(Unmet::Try(format!(
            "`{}` leads outside the temporary directories",
            crate::text::safe(path)
        )));
    }
    let mut held = vec![canon(&request.cwd)];
    if let Ok(repo) = Ctx::new(Some(request.cwd.clone()), None, None).repo() {
        held.extend(repo.preview_readable());
    }
    held.iter().any(|h| h.starts_with(&target)).then(|| {
        Unmet::Try(format!(
            "`{}` holds the directory the line runs in or its repository",
            crate::text::safe(path)
        ))
    })
}

/// The environment a trial plan records and its command gets at apply: `PATH` (always) and
/// `HOME` (where `~` leads); nothing that could carry a credential.
const TRIAL_ENV: [&str; 1] = ["HOME"];

/// The trial of a line the reader could not clear, and what follows from its effect.
fn tried(ui: &mut Ui, request: &GuardRequest, why: String) -> Verdict {
    let effect = match try_line(request) {
        Ok(e) => e,
        Err(e) => {
            return Verdict::Unreadable(Untried {
                line: request.line.clone(),
                why,
                because: e.chain(),
                stderr_tail: String::new(),
            });
        }
    };
    if let Some(because) = effect.incomplete() {
        return Verdict::Unreadable(Untried {
            line: request.line.clone(),
            why,
            because,
            stderr_tail: effect.stderr_tail.clone(),
        });
    }
    if effect.destroys_nothing() {
        return Verdict::Allow(Cleared::Tried {
            why,
            effect: Box::new(effect),
        });
    }
    let finding = Finding {
        command: request.line.clone(),
        dir: PathBuf::new(),
        reason: effect_reason(&effect),
        action: Action::Exec {
            argv: vec!["bash".into(), "-c".into(), request.line.clone()],
            preview: String::new(),
        },
    };
    let outcome = match plan_one(ui, request, &finding) {
        Ok(p) => Outcome::Planned(p),
        Err(e) => Outcome::Failed(e),
    };
    Verdict::Deny(vec![Guarded { finding, outcome }])
}

/// Run the line in the trial sandbox as the harness would run it: in its directory, with
/// its environment, under the trusted policy's network setting.
pub fn try_line(request: &GuardRequest) -> Result<Effect> {
    let ctx = Ctx::new(
        Some(request.cwd.clone()),
        request.key.clone(),
        request.allowed_signers.clone(),
    );
    // Outside a repository there is no trusted policy to widen anything: the defaults.
    let policy = ctx.policy().ok().map(|p| &p.policy);
    let network = policy.is_some_and(|p| p.sandbox.network);
    let regenerable = policy
        .and_then(|p| p.agents.regenerable.clone())
        .unwrap_or_else(crate::trial::default_regenerable);
    crate::trial::run(&crate::trial::Request {
        line: request.line.clone(),
        cwd: request.cwd.clone(),
        env: request.env.clone(),
        timeout: request.trial_timeout,
        regenerable,
        gate: crate::trial::default_gate(),
        network,
    })
}

/// What the trial destroyed, in a few words for the agent (the plan lists all of it).
pub fn effect_reason(effect: &Effect) -> String {
    let lines: Vec<String> = effect
        .destroyed
        .iter()
        .chain(&effect.gate)
        .map(|c| c.to_string())
        .collect();
    const SHOWN: usize = 5;
    let mut reason = format!(
        "in guardctl's trial it {}",
        lines.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ")
    );
    if lines.len() > SHOWN {
        reason.push_str(&format!("; and {} more", lines.len() - SHOWN));
    }
    reason
}

fn plan_one(ui: &mut Ui, request: &GuardRequest, finding: &Finding) -> Result<PlannedCommand> {
    let dir = request.cwd.join(&finding.dir);
    let ctx = Ctx::new(Some(dir), request.key.clone(), request.allowed_signers.clone());
    let agents = ctx.policy().map(|p| p.policy.agents.clone())?;
    if super::whoami::check_agent_key(&ctx, ui, &agents, super::whoami::AgentFront::Hook)?.is_none() {
        return Err(Error::usage("no usable signing key or allowed-signers file for the agent's plans")
            .with_hint("give the hook the agent's own key: `guardctl --key ~/.ssh/agent_ed25519 hook claude-code` (docs/agents.md)"));
    }
    let (operation, names) = operation(&finding.action)?;
    let planned = super::plan::plan(
        &ctx,
        ui,
        PlanRequest {
            operation,
            expires_in: None,
            executor: None,
            destination: Destination::Agent {
                plans_dir: request.plans_dir.clone(),
                out: None,
            },
            publish: Publish::Never,
        },
    )?;
    let kept = |refname: &str| short(refname).to_string();
    let planned_names: Vec<String> = planned.plan.affected.iter().map(|r| kept(&r.refname)).collect();
    let left_out = names
        .iter()
        .filter(|n| !planned_names.contains(n))
        .map(|n| {
            let why = planned
                .plan
                .skipped
                .iter()
                .find(|s| kept(&s.refname) == *n)
                .map_or(LeftOut::Missing, |s| LeftOut::Skipped(s.reason));
            (n.clone(), why)
        })
        .collect();
    Ok(PlannedCommand {
        plan_id: planned.plan_id,
        plan_file: planned.path,
        repo: ctx.repo()?.display_path(),
        summary: planned.plan.summary,
        affected: planned.count,
        left_out,
        // As given to this process: relative to where it runs.
        key: request
            .key
            .as_ref()
            .map(|k| std::path::absolute(k).unwrap_or_else(|_| k.clone())),
        allowed_signers: request
            .allowed_signers
            .as_ref()
            .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone())),
    })
}

/// A branch or tag's name from its ref.
fn short(refname: &str) -> &str {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| refname.strip_prefix("refs/tags/"))
        .unwrap_or(refname)
}

/// The plan request for a finding, and the names it gave (to say which are left out).
fn operation(action: &Action) -> Result<(OperationRequest, Vec<String>)> {
    // Exactly the names given: a name is a glob to `--match`, so one with glob characters
    // (which git refuses in a ref name anyway) could select others.
    let exact = |names: &[String]| -> Result<Vec<String>> {
        // `{a,b}` is an alternation to the glob matcher, though git allows braces in a name.
        match names.iter().find(|n| n.contains(['*', '?', '[', '\\', '{', '}'])) {
            Some(n) => Err(Error::usage(format!(
                "`{}` holds glob characters (`*`, `?`, `[`, `\\`, braces): plan it by hand with `guardctl plan`",
                crate::text::safe(n)
            ))),
            None => Ok(names.to_vec()),
        }
    };
    // `-D`: every branch named, merged or not (criterion `matched`), unmerged work flagged
    // as lost; `git branch -d` deletes only merged branches, and so does its plan.
    let named_branches = |names: Vec<String>, force: bool| BranchesRequest {
        base: None,
        gone: false,
        merged: true,
        older_than: None,
        squash_merged: false,
        include_unmerged: force,
        match_globs: names,
        exclude: Vec::new(),
        protect: Vec::new(),
        named: force,
    };
    let named_tags = |remote: Option<String>, names: Vec<String>| TagsRequest {
        remote,
        annotated: false,
        lightweight: false,
        include_signed: true,
        include_unmerged: true,
        older_than: None,
        match_globs: names,
        exclude: Vec::new(),
        protect: Vec::new(),
    };
    Ok(match action {
        Action::Branches { names, force } => {
            let names = exact(names)?;
            (
                OperationRequest::StaleBranches(named_branches(names.clone(), *force)),
                names,
            )
        }
        Action::RemoteBranches { remote, names } => {
            let names = exact(names)?;
            (
                OperationRequest::RemoteBranches(RemoteBranchesRequest {
                    remote: remote.clone(),
                    branches: named_branches(names.clone(), true),
                }),
                names,
            )
        }
        Action::Tags { remote, names } => {
            let names = exact(names)?;
            (
                OperationRequest::Tags(named_tags(remote.clone(), names.clone())),
                names,
            )
        }
        // An empty preview: the finding of a trial, whose manifest is the line's own effect.
        Action::Exec { argv, preview } if preview.is_empty() => (
            OperationRequest::Exec(ExecRequest {
                command: argv.clone(),
                env: TRIAL_ENV.iter().map(|s| s.to_string()).collect(),
                trial: true,
                ..Default::default()
            }),
            Vec::new(),
        ),
        Action::Exec { argv, preview } => (
            OperationRequest::Exec(ExecRequest {
                command: argv.clone(),
                preview: preview.clone(),
                ..Default::default()
            }),
            Vec::new(),
        ),
        Action::Refuse { why } => return Err(Error::usage(why.clone())),
    })
}
