//! `guardctl plan <OPERATION>`: observe the repository, decide, and write a signed plan.
//! Read-only towards the repository: it writes the plan file and guardctl's own state only.

use crate::context::Ctx;
use crate::context::POLICY_PATH;
use crate::error::{Error, Result};
use crate::ops::assemble;
use crate::ops::stale_branches::{self, Request};
use crate::ops::{exec, tags};
use crate::plan::envelope::PLAN_NAMESPACE;
use crate::plan::model::{Operation, Party, Plan, RemoteBranchesInputs};
use crate::policy::{InForce, Policy};
use crate::render::view::{self, Paging, ViewInput};
use crate::repo::{RemoteRefs, Repo};
use crate::sign::sshsig::fingerprint;
use crate::text::safe;
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
    /// Tags older than DUR (e.g. 2y)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
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
    /// The remote, by name (its URL identifies the plan)
    #[arg(long, value_name = "NAME")]
    pub remote: String,
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

impl SelectionArgs {
    fn request(self, base: Option<String>, gone: bool) -> Request {
        Request {
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

/// What the operation resolved to before anything is judged: its inputs, the remote's refs
/// (for a remote operation), the base commit (branches only), and the identity the plan is
/// bound to.
struct Resolved {
    operation: Operation,
    remote_refs: Option<RemoteRefs>,
    base_oid: Option<crate::repo::Oid>,
    repository: String,
}

/// A remote's URL and refs, every tip (and tag, for a tag plan) fetched.
fn remote_state(repo: &Repo, remote: &str, tags: bool) -> Result<(String, RemoteRefs)> {
    let url = repo.remote_url(remote)?;
    let refs = repo.ls_remote(&url)?;
    stale_branches::require_fetched(repo, remote, &refs, tags)?;
    Ok((url, refs))
}

fn resolve(operation: OperationArgs, ctx: &Ctx, repo: &Repo, policy: &Policy) -> Result<Resolved> {
    match operation {
        OperationArgs::Exec(op) => {
            let repository = match &op.remote {
                Some(remote) => repo.remote_url(remote)?,
                None => repo.identity()?,
            };
            let request = exec::Request {
                remote: op.remote,
                command: op.command,
                preview: op.preview,
                before_image: op.before_image,
                env: op.env,
                pin: op.pin,
                verify: op.verify,
                verify_prints: op.verify_prints.map(|v| match v {
                    VerifyPrintsArg::State => crate::plan::model::VerifyPrints::State,
                    VerifyPrintsArg::Diff => crate::plan::model::VerifyPrints::Diff,
                }),
            };
            Ok(Resolved {
                operation: Operation::Exec(exec::observe(
                    &repo.display_path(),
                    &ctx.start_dir()?,
                    &request,
                    &ctx.preview_sandbox(request.remote.as_deref())?,
                    &|rel| repo.work_tree_files(rel),
                )?),
                remote_refs: None,
                base_oid: None,
                repository,
            })
        }
        OperationArgs::StaleBranches(op) => {
            let (base_ref, base_oid) = repo.resolve_base(op.base.as_deref())?;
            // A revision (`main~2`, `feature/x^0`, an id) is not recognised as the branch it
            // names, so that branch would be judged "merged" into itself: a base is a ref.
            if !base_ref.starts_with("refs/") {
                return Err(Error::usage(format!(
                    "--base `{}` is a revision, not a branch or other ref",
                    safe(&base_ref)
                ))
                .with_hint("name the branch the others are compared with, e.g. --base main"));
            }
            let request = op.selection.request(op.base, op.gone);
            Ok(Resolved {
                operation: Operation::StaleBranches(stale_branches::normalize(
                    &request,
                    base_ref,
                    &policy.protected,
                )),
                remote_refs: None,
                base_oid: Some(base_oid),
                repository: repo.identity()?,
            })
        }
        OperationArgs::RemoteBranches(op) => {
            let (url, refs) = remote_state(repo, &op.remote, false)?;
            let base_ref = match &op.base {
                Some(b) if b.starts_with("refs/") => b.clone(),
                Some(b) => format!("refs/heads/{b}"),
                None => refs.head.clone().ok_or_else(|| {
                    Error::usage(format!(
                        "remote `{}` does not say which branch its HEAD names",
                        safe(&op.remote)
                    ))
                    .with_hint("pass --base <branch>")
                })?,
            };
            let base_oid = refs.target(&base_ref).ok_or_else(|| {
                Error::usage(format!(
                    "remote `{}` has no branch {}",
                    safe(&op.remote),
                    safe(&base_ref)
                ))
            })?;
            let request = op.selection.request(op.base, false);
            let selection = stale_branches::normalize(&request, base_ref, &policy.protected);
            Ok(Resolved {
                operation: Operation::RemoteBranches(RemoteBranchesInputs {
                    remote: op.remote,
                    selection,
                }),
                remote_refs: Some(refs),
                base_oid: Some(base_oid),
                repository: url,
            })
        }
        OperationArgs::Tags(op) => {
            let request = tags::Request {
                remote: op.remote,
                annotated: op.annotated,
                lightweight: op.lightweight,
                include_signed: op.include_signed,
                include_unmerged: op.include_unmerged,
                older_than: op.older_than,
                match_globs: op.match_globs,
                exclude: op.exclude,
                protect: op.protect,
            };
            let inputs = tags::normalize(&request, &policy.protected)?;
            let (repository, remote_refs) = match &inputs.remote {
                Some(remote) => {
                    let (url, refs) = remote_state(repo, remote, true)?;
                    (url, Some(refs))
                }
                None => (repo.identity()?, None),
            };
            Ok(Resolved {
                operation: Operation::Tags(inputs),
                remote_refs,
                base_oid: None,
                repository,
            })
        }
    }
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    crate::duration::parse(s)
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let (out, detailed_exitcode) = (args.out.clone(), args.detailed_exitcode);
    // Before any work: a destination that would be refused fails now, not after planning.
    crate::destination::check_cli(ctx, &out, args.force)?;
    // Where to publish is settled before any work: a remote that cannot be published to
    // fails here, not after a long observation.
    let publish_to = super::approve::PublishArgs {
        publish: args.publish.clone(),
        no_publish: args.no_publish,
    }
    .remote(ctx, false)?;
    let force = args.force;
    let made = make(args, ctx, ui)?;
    // Again, for what planning took: the file may have been put there meanwhile.
    crate::destination::check_cli(ctx, &out, force)?;
    crate::planfile::write(&out, &made.file)?;
    let id_hex = made.plan_id.trim_start_matches("sha256:").to_string();
    let published = match &publish_to {
        Some(remote) => {
            let item = crate::store::published::Item::plan(&id_hex, &made.file)?;
            let refname = item.refname.clone();
            if let Err(e) = crate::store::published::publish(remote, &[item], &[]) {
                ui.status(&format!(
                    "Saved plan {} to {}; it was not published.",
                    made.plan_id,
                    out.display()
                ));
                return Err(e);
            }
            Some((remote, refname))
        }
        None => None,
    };
    if ui.json {
        ui.json_doc(&made.view)?;
    } else {
        let color = ui.color;
        crate::render::human::render(&made.view, color, ui.out().writer())
            .map_err(crate::ui::output_error)?;
    }
    match published {
        Some((remote, refname)) => ui.status(&format!(
            "\nSaved plan {} to {} and published it to remote `{}` ({refname}). Reviewers: `guardctl inbox`, `guardctl show {}`.",
            made.plan_id,
            out.display(),
            crate::text::safe(&remote.name),
            &id_hex[..12],
        )),
        None => ui.status(&format!(
            "\nSaved plan {} to {}. Review it with `guardctl show {}`.",
            made.plan_id,
            out.display(),
            out.display()
        )),
    }
    Ok(if detailed_exitcode && made.count > 0 { 2 } else { 0 })
}

/// A signed plan, not yet written anywhere, and the view `plan` prints of it.
pub struct Made {
    pub plan: Plan,
    pub plan_id: String,
    pub file: crate::plan::envelope::PlanFile,
    pub view: view::ShowView,
    /// How many resources it affects (for an exec plan, its manifest's ids).
    pub count: usize,
}

/// Observe, decide and sign: everything `plan` does but writing the file and printing (which
/// `run` does, and `guardctl mcp` does its own way). `args.out` is not used.
pub fn make(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<Made> {
    let repo = ctx.repo()?;
    // A remote's plan is judged by that remote's policy, read from it now.
    let bound_to = match &args.operation {
        OperationArgs::StaleBranches(_) => None,
        OperationArgs::RemoteBranches(op) => Some(op.remote.clone()),
        OperationArgs::Tags(op) => op.remote.clone(),
        OperationArgs::Exec(op) => op.remote.clone(),
    };
    let in_force = ctx.policy_for(bound_to.as_deref())?;
    let policy = &in_force.policy;
    warn_uncommitted_policy(repo, in_force, ui);
    let now = ctx.now;
    let expiry = policy.expiry(args.expires_in).map_err(Error::usage)?;
    let Resolved {
        operation,
        remote_refs,
        base_oid,
        repository,
    } = resolve(args.operation, ctx, repo, policy)?;

    let key = ctx.signing_key(ui)?;
    let key_id = fingerprint(&key.public);
    let (signers, _) = ctx.allowed_signers()?;
    let planner = assemble::planner(
        &signers.principals_at(key.signer(), PLAN_NAMESPACE, &[now]),
        &key_id,
    )?;
    if planner.is_none() {
        ui.warn(&format!(
            "key {key_id} maps to no principal for {PLAN_NAMESPACE}: this plan can be shown but never applied"
        ));
    }
    let executor = assemble::executor(args.executor, planner.as_deref(), &key_id);
    if let Some(e) = &executor.principal
        && !signers.lists(e)
    {
        // A typo here gives a plan that no one can ever apply: said now, not at apply.
        ui.warn(&format!(
            "executor {} is in no allowed-signers line: no one can apply this plan",
            safe(e)
        ));
    }
    assemble::check_executor(policy, &executor)?;
    let (_, resources) = operation.nouns();
    ui.status(&format!(
        "Observing {resources} in {} ...",
        repo.display_path().display()
    ));
    let progress = ui.progress(&format!("observing {resources}"));
    let outcome = assemble::observe(repo, &operation, remote_refs.as_ref(), base_oid, now, &progress)?;
    drop(progress);
    let (count, review) = assemble::limits(policy, &operation, &outcome)?;
    // The plan's lifetime starts now that it is about to be written, so a long observation
    // does not eat into the reviewers' time.
    let plan = assemble::assemble(assemble::Parts {
        repository,
        operation,
        outcome,
        planner: Party {
            principal: planner,
            key: Some(key_id),
        },
        executor,
        review,
        policy,
        policy_source: in_force.source.clone(),
        policy_hash: in_force.hash.clone(),
        created_at: ctx.written_at(),
        expiry,
        nonce: crate::plan::envelope::hex(&crate::fsutil::random_bytes::<16>()?),
    })?;
    let (file, plan_id) = crate::planfile::sign(&plan, &key)?;
    let mut view = view::build(ViewInput {
        plan: &plan,
        plan_id: &plan_id,
        approvals: view::ApprovalsView::unapproved(&plan),
        policy: view::PolicyView::new(&plan, Some(Ok(&in_force.hash))),
        now,
        paging: Paging::Auto,
        show_all_skipped: false,
    });
    if plan.operation.bound_to_remote().is_some() {
        view.consumed_on = Some(if policy.consumed_marker { "remote" } else { "clone" });
    }
    Ok(Made {
        plan,
        plan_id,
        file,
        view,
        count,
    })
}

/// Say so when the work tree holds a policy file that is not the one in force: editing it, or
/// committing it locally in a clone of a remote, changes nothing until it is on the default
/// branch the policy is read from.
fn warn_uncommitted_policy(repo: &crate::repo::Repo, in_force: &InForce, ui: &mut Ui) {
    let Ok(text) = std::fs::read_to_string(repo.display_path().join(POLICY_PATH)) else {
        return;
    };
    let differs = match crate::policy::file::parse(&text) {
        Ok(p) => p.hash().ok().as_ref() != Some(&in_force.hash),
        Err(_) => true,
    };
    if differs {
        ui.warn(&format!(
            "{POLICY_PATH} in the work tree differs from the policy in force ({}): a change counts once it is there (committed, and where the policy comes from a remote, pushed to its default branch), not before",
            in_force.source.describe()
        ));
    }
}
