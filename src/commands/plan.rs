//! `guardctl plan <OPERATION>`: observe the repository, decide, and write a signed plan.
//! Read-only towards the repository: it writes the plan file and guardctl's own state only.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::ops::stale_branches::{self, Request};
use crate::plan::derive;
use crate::plan::envelope::PLAN_NAMESPACE;
use crate::plan::hash::plan_hash;
use crate::plan::model::{BeforeImage, FORMAT_VERSION, Operation, Party, Plan};
use crate::policy::Policy;
use crate::render::view::{self, Paging, ViewInput};
use crate::sign::sshsig::fingerprint;
use crate::ui::Ui;
use std::path::PathBuf;
use std::time::Duration;

/// Observe and write a signed plan (read-only: never changes the repository).
///
/// The plan lists every resource the operation would change with the object ids observed
/// now, a field-level diff, side effects, the risk, and an expiry. Review it with
/// `guardctl show`. Exit status: 0 (or with --detailed-exitcode: 0 no changes, 2 changes).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub operation: OperationArgs,

    /// Where to write the plan
    #[arg(short, long, value_name = "FILE", default_value = "plan.json", global = true)]
    pub out: PathBuf,

    /// How long the plan stays valid, e.g. 15m, 2h, 1d (bounded by policy)
    #[arg(long, value_name = "DUR", value_parser = parse_duration, global = true)]
    pub expires_in: Option<Duration>,

    /// The principal that may apply the plan [default: the planner]
    #[arg(long, value_name = "PRINCIPAL", global = true)]
    pub executor: Option<String>,

    /// Exit 2 when the plan has changes, 0 when it has none
    #[arg(long, global = true)]
    pub detailed_exitcode: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum OperationArgs {
    StaleBranches(StaleBranchesArgs),
}

/// Local branches that are safe to delete.
///
/// Default criterion: --merged. Several criteria combine with OR. Weak criteria (--gone,
/// --older-than) never plan a branch holding commits not in the base unless
/// --include-unmerged is given. Never planned: the base, the checked-out branch, branches
/// checked out in any worktree, protected patterns (main, master, develop, release/*), and
/// names git would reject. Patterns are globs on the branch name; `*` does not cross `/`.
#[derive(Debug, clap::Args)]
pub struct StaleBranchesArgs {
    /// The branch others are compared with [default: the remote HEAD's target, else
    /// init.defaultBranch, else main or master]
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Branches whose tip is reachable from the base
    #[arg(long)]
    pub merged: bool,
    /// Branches whose upstream is configured but no longer exists
    #[arg(long)]
    pub gone: bool,
    /// Branches whose last commit is older than DUR (e.g. 90d)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Branches whose combined change is already in the base (squash or rebase merged)
    #[arg(long)]
    pub squash_merged: bool,
    /// Allow branches with commits not in the base (each is flagged as losing work)
    #[arg(long)]
    pub include_unmerged: bool,
    /// Only consider branches matching GLOB (repeatable)
    #[arg(long = "match", value_name = "GLOB")]
    pub match_globs: Vec<String>,
    /// Never consider branches matching GLOB (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Protect branches matching GLOB, in addition to the policy's (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub protect: Vec<String>,
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    crate::duration::parse(s)
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let OperationArgs::StaleBranches(op) = args.operation;
    let repo = ctx.repo()?;
    let policy = Policy::default();
    let now = ctx.now;
    let expiry = policy.expiry(args.expires_in).map_err(Error::usage)?;

    let (base_ref, base_oid) = repo.resolve_base(op.base.as_deref())?;
    let request = Request {
        base: op.base,
        merged: op.merged,
        squash_merged: op.squash_merged,
        gone: op.gone,
        older_than: op.older_than,
        include_unmerged: op.include_unmerged,
        match_globs: op.match_globs,
        exclude: op.exclude,
        protect: op.protect,
    };
    let inputs = stale_branches::normalize(&request, base_ref, &policy.protected);

    let key = ctx.signing_key(ui)?;
    let key_id = fingerprint(&key.public);
    let (signers, _) = ctx.allowed_signers()?;
    let planner = match signers
        .principals_for(&key.public, PLAN_NAMESPACE, now)
        .as_slice()
    {
        [] => {
            ui.warn(&format!(
                "key {key_id} maps to no principal for {PLAN_NAMESPACE}: this plan can be shown but never applied"
            ));
            None
        }
        [one] => Some(one.clone()),
        many => {
            return Err(Error::usage(format!(
                "key {key_id} maps to several principals: {}",
                many.join(", ")
            ))
            .with_hint("give each principal its own key in the allowed-signers file"));
        }
    };
    let executor = match args.executor {
        Some(e) if Some(&e) == planner.as_ref() => Party {
            principal: Some(e),
            key: Some(key_id.clone()),
        },
        Some(e) => Party {
            principal: Some(e),
            key: None,
        },
        None => Party {
            principal: planner.clone(),
            key: Some(key_id.clone()),
        },
    };
    let repository = repo.identity()?;

    ui.status(&format!(
        "Observing branches in {} ...",
        repo.display_path().display()
    ));
    let spinner = ui.spinner("observing branches");
    let outcome = stale_branches::run(repo, &inputs, base_oid, now)?;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let operation = Operation::StaleBranches(inputs);
    let policy_hash = policy.hash();
    let plan = Plan {
        format_version: FORMAT_VERSION,
        plan_hash: plan_hash(&repository, &operation, &policy_hash, &outcome.affected),
        created_at: now,
        expires_at: now + expiry,
        planner: Party {
            principal: planner,
            key: Some(key_id),
        },
        executor,
        repository,
        operation,
        summary: derive::summary(&outcome.affected),
        diff: derive::diff(&outcome.affected),
        side_effects: derive::side_effects(&outcome.affected),
        risk: derive::risk(&outcome.affected),
        before_image: BeforeImage {
            namespace: "refs/guardctl/backup".into(),
            retention_days: policy.retention_days,
        },
        affected: outcome.affected,
        skipped: outcome.skipped,
        policy_hash,
    };
    let (file, plan_id) = crate::planfile::sign(&plan, &key)?;
    crate::planfile::write(&args.out, &file)?;
    let store = crate::store::Store::new(repo.state_dir());
    {
        let _lock = store.lock()?;
        store.audit(
            now,
            "plan",
            Some(&plan_id),
            plan.planner.principal.as_deref(),
            &plan.summary,
        )?;
    }

    let view = view::build(ViewInput {
        plan: &plan,
        plan_id: &plan_id,
        approvals: view::ApprovalsView {
            required: policy.required_approvals,
            ..Default::default()
        },
        now,
        paging: Paging::Auto,
        show_all_skipped: false,
    });
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        let color = ui.color;
        crate::render::human::render(&view, color, ui.out())?;
    }
    ui.status(&format!(
        "\nSaved plan {} to {}. Review it with `guardctl show {}`.",
        plan_id,
        args.out.display(),
        args.out.display()
    ));
    Ok(if args.detailed_exitcode && !plan.affected.is_empty() {
        2
    } else {
        0
    })
}
