//! `guardctl plan <OPERATION>`: the clap arguments of each operation, turned into the
//! engine's request (`engine::plan`), and the plan's view and where it went, printed.

use super::approve::PublishArgs;
use crate::context::Ctx;
use crate::engine::plan::{
    BranchesRequest, Destination, ExecRequest, OperationRequest, PlanRequest, RemoteBranchesRequest,
    TagsRequest,
};
use crate::error::Result;
use crate::plan::model::VerifyPrints;
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

    /// Replace FILE even when it is not a guardctl plan, or holds a plan with approvals
    /// (guardctl's own state and trust files are refused whatever is given)
    #[arg(long, global = true)]
    pub force: bool,

    /// Also publish the plan to the team remote (`guardctl.remote`, else origin), or to
    /// REMOTE, under refs/guardctl/plans/ (docs/remote.md)
    #[arg(
        long,
        value_name = "REMOTE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        global = true
    )]
    pub publish: Option<String>,

    /// Do not publish, even where `guardctl.remote` makes publishing the default
    #[arg(long, conflicts_with = "publish", global = true)]
    pub no_publish: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum OperationArgs {
    StaleBranches(StaleBranchesArgs),
    RemoteBranches(RemoteBranchesArgs),
    Tags(TagsArgs),
    Exec(ExecArgs),
}

/// Any destructive command, gated by its preview.
///
/// The plan records the command and its arguments (run without a shell), the working
/// directory, the content of every repository file an argument names, the allowlisted
/// environment (values as digests; the commands get nothing else, PATH always), every file
/// that runs (programs resolved through PATH, the scripts interpreters run, symbolic links
/// and their targets, --pin paths), and the preview's output: the manifest the reviewer
/// approves and the policy sees (one resource a line, or JSON lines with an "id"). Apply
/// re-derives the pinned files and re-runs the preview; any difference is drift (10) and
/// the command does not run. Otherwise it runs the command once from a private copy of the
/// pinned files and records its exit status (15 when it fails, or when --verify finds
/// manifest resources still present).
/// Not pinned: anything the command calls by name or reads outside the pinned files.
/// Example: plan exec --preview 'scripts/prune.sh --dry-run' -- scripts/prune.sh
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// Bind the plan to this remote's URL instead of this clone, so that another clone of it
    /// (a CI job) can apply it
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// A shell command whose output lists what the command will do (the manifest)
    #[arg(long, value_name = "CMD")]
    pub preview: String,
    /// A shell command run first at apply time (e.g. a dump); it must succeed
    #[arg(long, value_name = "CMD")]
    pub before_image: Option<String>,
    /// Give the commands this environment variable (repeatable; PATH always)
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    /// Pin this file or directory too, e.g. a helper a script sources (repeatable;
    /// directories are pinned as trees, relative to the working directory)
    #[arg(long = "pin", value_name = "PATH")]
    pub pin: Vec<String>,
    /// A shell command run after the command; its output is the observed state
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// What --verify prints: the manifest's resources still present (state), or what the
    /// command changed (diff)
    #[arg(long, value_name = "WHAT", value_enum)]
    pub verify_prints: Option<VerifyPrintsArg>,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum VerifyPrintsArg {
    State,
    Diff,
}

/// Tags that are safe to delete, here or (with --remote) on a remote.
///
/// Say which: --match GLOB and/or --older-than DUR (the tagger's date, else the commit's).
/// Signed tags are kept unless --include-signed; --annotated or --lightweight keeps to one
/// kind. A tag whose commit no branch reaches is planned only with --include-unmerged. The
/// backup keeps every tag's commit and the annotated tag objects themselves, so a rollback
/// recreates identical tags.
#[derive(Debug, clap::Args)]
pub struct TagsArgs {
    /// A remote's tags, by remote name (judged with this clone's objects: fetch first)
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Tags whose name matches GLOB (repeatable)
    #[arg(long = "match", value_name = "GLOB")]
    pub match_globs: Vec<String>,
    /// Tags older than DUR (e.g. 2y, 6mo, 90d; `m` alone is refused: 6min or 6mo?)
    #[arg(long, value_name = "DUR", value_parser = parse_age)]
    pub older_than: Option<Duration>,
    /// Never consider tags matching GLOB (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Protect tags matching GLOB, in addition to the policy's (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub protect: Vec<String>,
    /// Only annotated tags
    #[arg(long, conflicts_with = "lightweight")]
    pub annotated: bool,
    /// Only lightweight tags
    #[arg(long)]
    pub lightweight: bool,
    /// Allow signed tags
    #[arg(long)]
    pub include_signed: bool,
    /// Allow tags whose commits no branch reaches (each is flagged as losing work)
    #[arg(long)]
    pub include_unmerged: bool,
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
    /// Branches whose upstream is configured but no longer exists
    #[arg(long)]
    pub gone: bool,
    #[command(flatten)]
    pub selection: SelectionArgs,
}

/// A remote's branches that are safe to delete, as the remote holds them now.
///
/// The remote's branches are listed with `git ls-remote` and judged with this clone's
/// objects (run `git fetch` first). Same criteria and patterns as stale-branches, but --gone
/// (a remote branch has no upstream). Apply deletes them with one atomic `git push` in which
/// every deletion is leased on the planned object id, after writing a local backup ref. The
/// plan is bound to the remote's URL, not to this clone.
#[derive(Debug, clap::Args)]
pub struct RemoteBranchesArgs {
    /// The remote, by name (its URL identifies the plan) [default: the team remote:
    /// `guardctl.remote` in system or global config, else origin]
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// The remote branch others are compared with, e.g. main [default: the remote's HEAD]
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    #[command(flatten)]
    pub selection: SelectionArgs,
}

/// Criteria and patterns shared by the branch operations.
#[derive(Debug, clap::Args)]
pub struct SelectionArgs {
    /// Branches whose tip is reachable from the base
    #[arg(long)]
    pub merged: bool,
    /// Branches whose last commit is older than DUR (e.g. 90d, 6mo, 1y; `m` alone is refused:
    /// 6min or 6mo?)
    #[arg(long, value_name = "DUR", value_parser = parse_age)]
    pub older_than: Option<Duration>,
    /// Branches whose combined change is already in the base (squash or rebase merged)
    #[arg(long)]
    pub squash_merged: bool,
    /// Allow branches with commits not in the base (each is flagged as losing work)
    #[arg(long)]
    pub include_unmerged: bool,
    /// Select exactly the branches --match names, whatever their state (no other criterion;
    /// unmerged ones only with --include-unmerged): `git branch -D NAMES` as a plan
    #[arg(long, requires = "match_globs", conflicts_with_all = ["merged", "older_than", "squash_merged"])]
    pub named: bool,
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

impl SelectionArgs {
    fn request(self, base: Option<String>, gone: bool) -> BranchesRequest {
        BranchesRequest {
            named: self.named,
            base,
            merged: self.merged,
            squash_merged: self.squash_merged,
            gone,
            older_than: self.older_than,
            include_unmerged: self.include_unmerged,
            match_globs: self.match_globs,
            exclude: self.exclude,
            protect: self.protect,
        }
    }
}

impl OperationArgs {
    /// The engine's request for this operation; a remote's branches default to the team
    /// remote, as git's commands default to `origin`.
    fn request(self, ctx: &Ctx) -> Result<OperationRequest> {
        Ok(match self {
            OperationArgs::StaleBranches(op) => {
                OperationRequest::StaleBranches(op.selection.request(op.base, op.gone))
            }
            OperationArgs::RemoteBranches(op) => OperationRequest::RemoteBranches(RemoteBranchesRequest {
                remote: match op.remote {
                    Some(name) => name,
                    None => crate::context::policy_remote(ctx.repo()?)?.ok_or_else(|| {
                        crate::error::Error::usage(
                            "which remote? this repository has no `origin`, and no `guardctl.remote` is set",
                        )
                        .with_hint("name it: `--remote NAME`")
                    })?,
                },
                branches: op.selection.request(op.base, false),
            }),
            OperationArgs::Tags(op) => OperationRequest::Tags(TagsRequest {
                remote: op.remote,
                annotated: op.annotated,
                lightweight: op.lightweight,
                include_signed: op.include_signed,
                include_unmerged: op.include_unmerged,
                older_than: op.older_than,
                match_globs: op.match_globs,
                exclude: op.exclude,
                protect: op.protect,
            }),
            OperationArgs::Exec(op) => OperationRequest::Exec(ExecRequest {
                remote: op.remote,
                command: op.command,
                preview: op.preview,
                before_image: op.before_image,
                env: op.env,
                pin: op.pin,
                verify: op.verify,
                verify_prints: op.verify_prints.map(|v| match v {
                    VerifyPrintsArg::State => VerifyPrints::State,
                    VerifyPrintsArg::Diff => VerifyPrints::Diff,
                }),
                trial: false,
            }),
        })
    }
}

fn parse_age(s: &str) -> std::result::Result<Duration, String> {
    crate::duration::parse_age(s)
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    crate::duration::parse(s)
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let detailed_exitcode = args.detailed_exitcode;
    let publish = PublishArgs {
        publish: args.publish,
        no_publish: args.no_publish,
    };
    let planned = crate::engine::plan::plan(
        ctx,
        ui,
        PlanRequest {
            operation: args.operation.request(ctx)?,
            expires_in: args.expires_in,
            executor: args.executor,
            destination: Destination::File {
                out: args.out,
                force: args.force,
            },
            publish: publish.choice(),
        },
    )?;
    if ui.json {
        ui.json_doc(&planned.view)?;
    } else {
        let color = ui.color;
        crate::render::human::render(&planned.view, color, ui.out().writer())
            .map_err(crate::ui::output_error)?;
    }
    let out = planned.path.display();
    match &planned.published {
        Some(p) => ui.status(&format!(
            "\nSaved plan {} to {out} and published it to remote `{}` ({}). Reviewers: `guardctl inbox`, `guardctl show {}`.",
            planned.plan_id,
            crate::text::safe(&p.remote),
            p.refname,
            &planned.plan_id.trim_start_matches("sha256:")[..12],
        )),
        None => ui.status(&format!(
            "\nSaved plan {} to {out}. Review it with `guardctl show {out}`.",
            planned.plan_id,
        )),
    }
    Ok(if detailed_exitcode && planned.count > 0 {
        2
    } else {
        0
    })
}
