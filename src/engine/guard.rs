//! Guarding a shell command line an agent (or anyone) is about to run: the engine behind
//! `guardctl hook claude-code` and `guardctl guard`. The line is classified (`shell`); each
//! destructive command in it becomes a plan made exactly as `guardctl plan` makes one (the
//! same `engine::plan::plan`, signed with the caller's key, written to the agent's plan
//! directory), or a refusal. Nothing runs the command itself: a person approves the plan and
//! the agent applies it with `guardctl apply`, through the same gate as everyone else.
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
use crate::shell::{Action, Finding};
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
}

/// What guardctl makes of the line.
#[derive(Debug)]
pub enum Verdict {
    /// Nothing in it is destructive by the rules: it may run.
    Allow,
    /// guardctl cannot read it with confidence (the reason); it must not run as it is.
    Unreadable(String),
    /// Destructive: each destructive command and what guardctl did about it.
    Deny(Vec<Guarded>),
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

/// Classify the line and plan each destructive command in it.
pub fn guard(ui: &mut Ui, request: &GuardRequest) -> Verdict {
    let findings = match crate::shell::classify(&request.line, &request.rules) {
        Ok(f) => f,
        Err(why) => return Verdict::Unreadable(why),
    };
    if findings.is_empty() {
        return Verdict::Allow;
    }
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
