//! Planning: observe the repository, decide, sign, write the plan where the front end chose
//! and, when asked, publish it on the team remote. Read-only towards the repository: it
//! writes the plan file (and, publishing, the remote's refs/guardctl/plans/) only.
//!
//! The front end chooses the destination ([`Destination`]) and what to publish
//! ([`Publish`]); both are settled before the observation starts, so a destination that
//! would be refused, or a remote that cannot be published to, fails before a long
//! observation, not after it.

use super::publish::Publish;
use crate::context::Ctx;
use crate::context::POLICY_PATH;
use crate::error::{Error, Result};
use crate::ops::assemble;
use crate::ops::stale_branches;
use crate::ops::{exec, tags};
use crate::plan::envelope::PLAN_NAMESPACE;
use crate::plan::model::{Operation, Party, Plan, RemoteBranchesInputs};
use crate::policy::{InForce, Policy};
use crate::render::view::{self, Paging, ViewInput};
use crate::repo::{RemoteRefs, Repo};
use crate::sign::sshsig::fingerprint;
use crate::text::safe;
use crate::ui::Ui;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Any destructive command, gated by its preview.
pub use crate::ops::exec::Request as ExecRequest;
/// Local branches: the base, the criteria and the patterns (`gone` included).
pub use crate::ops::stale_branches::Request as BranchesRequest;
/// Tags, here or on a remote.
pub use crate::ops::tags::Request as TagsRequest;

/// What to plan.
#[derive(Debug, Clone)]
pub enum OperationRequest {
    StaleBranches(BranchesRequest),
    RemoteBranches(RemoteBranchesRequest),
    Tags(TagsRequest),
    Exec(ExecRequest),
}

/// A remote's branches: the remote by name, and the base (a remote branch, default the
/// remote's HEAD), criteria and patterns of `branches` (`gone` does not apply: a remote
/// branch has no upstream).
#[derive(Debug, Clone)]
pub struct RemoteBranchesRequest {
    pub remote: String,
    pub branches: BranchesRequest,
}

/// Where the new plan goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// `plan -o FILE` (`destination::check_cli`); `force` replaces what is there.
    File { out: PathBuf, force: bool },
    /// An agent's plan (`destination::check_agent`): `out` when the call names one, else
    /// `<plans_dir>/<plan id>.json`, the directory made private.
    Agent {
        plans_dir: Option<PathBuf>,
        out: Option<String>,
    },
}

/// A plan to make: the operation, how long it stays valid, who may apply it, where it is
/// written and whether it is published.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub operation: OperationRequest,
    pub expires_in: Option<Duration>,
    /// The principal that may apply it (default: the planner).
    pub executor: Option<String>,
    pub destination: Destination,
    pub publish: Publish,
}

/// A signed plan, written, and the view `plan` prints of it.
pub struct Planned {
    pub plan: Plan,
    pub plan_id: String,
    pub view: view::ShowView,
    /// How many resources it affects (for an exec plan, its manifest's ids).
    pub count: usize,
    /// Where it was written.
    pub path: PathBuf,
    /// Where it was published, when it was.
    pub published: Option<PublishedPlan>,
}

/// A plan published on a remote.
#[derive(Debug, Clone)]
pub struct PublishedPlan {
    /// The remote's name.
    pub remote: String,
    /// The ref that holds it (refs/guardctl/plans/...).
    pub refname: String,
}

/// Observe, decide, sign, write (and publish) a plan.
///
/// A publication that fails leaves the plan written: that is said (status) before the error
/// is returned.
pub fn plan(ctx: &Ctx, ui: &mut Ui, request: PlanRequest) -> Result<Planned> {
    let PlanRequest {
        operation,
        expires_in,
        executor,
        destination,
        publish,
    } = request;
    // Before any work: a destination that would be refused fails now, not after planning.
    let checked = match &destination {
        Destination::File { out, force } => Some(crate::destination::check_cli(ctx, out, *force)?),
        Destination::Agent { .. } => None,
    };
    // Where to publish is settled before any work: a remote that cannot be published to
    // fails here, not after a long observation.
    let publish_to = publish.remote(ctx, false)?;
    let made = make(ctx, ui, operation, expires_in, executor)?;
    let path = match destination {
        Destination::File { out, force } => {
            // Again, for what planning took: the file may have been put there meanwhile.
            if let Some(checked) = &checked {
                crate::destination::recheck_cli(ctx, &out, force, checked)?;
            }
            out
        }
        Destination::Agent {
            plans_dir,
            out: Some(out),
        } => crate::destination::check_agent(ctx, plans_dir.as_deref(), &out, &made.plan_id)?,
        Destination::Agent { plans_dir, out: None } => {
            let dir = plans_dir.ok_or_else(|| {
                Error::usage("no data directory for plans (HOME is not set)").with_hint("pass `out`")
            })?;
            create_private_dir(&dir)?;
            dir.join(format!("{}.json", made.plan_id.trim_start_matches("sha256:")))
        }
    };
    crate::planfile::write(&path, &made.file)?;
    let id_hex = made.plan_id.trim_start_matches("sha256:");
    // A plan that changes nothing waits for nobody: it is saved, never published (an inbox
    // would list it for an approval it does not need).
    let publish_to = match publish_to {
        Some(remote) if crate::policy::changes_nothing(&made.plan) => {
            ui.status(&format!(
                "Plan {} changes nothing: saved to {}, not published to remote `{}`.",
                made.plan_id,
                path.display(),
                crate::text::safe(&remote.name)
            ));
            None
        }
        other => other,
    };
    let published = match publish_to {
        Some(remote) => {
            let item = crate::store::published::Item::plan(id_hex, &made.file)?;
            let refname = item.refname.clone();
            if let Err(e) = crate::store::published::publish(&remote, &[item], &[]) {
                ui.status(&format!(
                    "Saved plan {} to {}; it was not published.",
                    made.plan_id,
                    path.display()
                ));
                return Err(e);
            }
            Some(PublishedPlan {
                remote: remote.name,
                refname,
            })
        }
        None => None,
    };
    Ok(Planned {
        plan: made.plan,
        plan_id: made.plan_id,
        view: made.view,
        count: made.count,
        path,
        published,
    })
}

fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::internal(format!("cannot create {}", dir.display())).caused_by(e))
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

fn resolve(operation: OperationRequest, ctx: &Ctx, repo: &Repo, policy: &Policy) -> Result<Resolved> {
    match operation {
        OperationRequest::Exec(request) => {
            let repository = match &request.remote {
                Some(remote) => repo.remote_url(remote)?,
                None => repo.identity()?,
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
        OperationRequest::StaleBranches(request) => {
            let (base_ref, base_oid) = repo.resolve_base(request.base.as_deref())?;
            // A revision (`main~2`, `feature/x^0`, an id) is not recognised as the branch it
            // names, so that branch would be judged "merged" into itself: a base is a ref.
            if !base_ref.starts_with("refs/") {
                return Err(Error::usage(format!(
                    "--base `{}` is a revision, not a branch or other ref",
                    safe(&base_ref)
                ))
                .with_hint("name the branch the others are compared with, e.g. --base main"));
            }
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
        OperationRequest::RemoteBranches(RemoteBranchesRequest {
            remote,
            branches: request,
        }) => {
            // A remote branch has no upstream: `gone` is no criterion there.
            let request = BranchesRequest {
                gone: false,
                ..request
            };
            let (url, refs) = remote_state(repo, &remote, false)?;
            let base_ref = match &request.base {
                Some(b) if b.starts_with("refs/") => b.clone(),
                Some(b) => format!("refs/heads/{b}"),
                None => refs.head.clone().ok_or_else(|| {
                    Error::usage(format!(
                        "remote `{}` does not say which branch its HEAD names",
                        safe(&remote)
                    ))
                    .with_hint("pass --base <branch>")
                })?,
            };
            let base_oid = refs.target(&base_ref).ok_or_else(|| {
                Error::usage(format!(
                    "remote `{}` has no branch {}",
                    safe(&remote),
                    safe(&base_ref)
                ))
            })?;
            let selection = stale_branches::normalize(&request, base_ref, &policy.protected);
            Ok(Resolved {
                operation: Operation::RemoteBranches(RemoteBranchesInputs { remote, selection }),
                remote_refs: Some(refs),
                base_oid: Some(base_oid),
                repository: url,
            })
        }
        OperationRequest::Tags(request) => {
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

/// A signed plan, not yet written anywhere, and the view `plan` prints of it.
struct Made {
    plan: Plan,
    plan_id: String,
    file: crate::plan::envelope::PlanFile,
    view: view::ShowView,
    count: usize,
}

/// Observe, decide and sign: everything [`plan`] does but writing and publishing.
fn make(
    ctx: &Ctx,
    ui: &mut Ui,
    operation: OperationRequest,
    expires_in: Option<Duration>,
    executor: Option<String>,
) -> Result<Made> {
    let repo = ctx.repo()?;
    // A remote's plan is judged by that remote's policy, read from it now.
    let bound_to = match &operation {
        OperationRequest::StaleBranches(_) => None,
        OperationRequest::RemoteBranches(op) => Some(op.remote.clone()),
        OperationRequest::Tags(op) => op.remote.clone(),
        OperationRequest::Exec(op) => op.remote.clone(),
    };
    let in_force = ctx.policy_for(bound_to.as_deref())?;
    let policy = &in_force.policy;
    warn_uncommitted_policy(repo, in_force, ui);
    let now = ctx.now;
    let expiry = policy.expiry(expires_in).map_err(Error::usage)?;
    let Resolved {
        operation,
        remote_refs,
        base_oid,
        repository,
    } = resolve(operation, ctx, repo, policy)?;

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
    let executor = assemble::executor(executor, planner.as_deref(), &key_id);
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
