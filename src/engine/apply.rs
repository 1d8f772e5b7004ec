//! Applying exactly the approved plan (docs/guide.md "Safety model"): the checks in the contract's
//! order, then in a [`Session`] (the lock, the audit log, recovery): replay if consumed, then
//! the journaled sequence in `execute`: drift (checked while git locks the refs of the one
//! compare-and-swap transaction), before-image, consumed marker, commit, config removal,
//! observation, signed receipt, audit.
//!
//! Across machines (docs/remote.md): a plan bound to a remote is consumed on that remote too
//! (`refs/guardctl/consumed/<id>`, create-only, pushed by `execute`), and its receipt is
//! published there once applied (`refs/guardctl/receipts/<id>`); a local plan's receipt and
//! marker are published to the team remote when publishing is on. An apply that finds the
//! plan consumed on the remote by another apply returns that apply's receipt as a replay
//! (waiting for it, `wait`), exactly as a replay in the clone that applied it would.
//!
//! The outcome carries the receipt verified once (`execute::recorded`,
//! `execute::remote_result`), typed: the front ends render it (`render::receipt`).

use super::session::{AuditLog, Notices, Session, Signer};
use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::gate::Target;
use crate::plan::approval::{DeletedRef, Receipt};
use crate::plan::envelope::Envelope;
use crate::plan::model::{BACKUP_NAMESPACE, Operation, ResourceFacts};
use crate::store::{BeforeImage, RemoteConsumption, SavedTag, Store};
use crate::text::safe;
use crate::ui::Ui;
use std::time::Duration;

/// Apply the plan `target` names, with its detached approvals.
#[derive(Debug)]
pub struct ApplyRequest {
    pub target: Target,
    /// When another clone has consumed the plan and its receipt is not published yet: how
    /// long to wait for it (zero: do not wait).
    pub wait: Duration,
}

/// How long `apply` waits, unless told otherwise, for the receipt of an apply of the same plan
/// that consumed it in another clone.
pub const DEFAULT_WAIT: &str = "10m";

/// A wait: a duration (`30s`, `10m`), or `0` for not waiting (`apply --wait`, the MCP tool's
/// `wait`).
pub fn parse_wait(s: &str) -> std::result::Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    crate::duration::parse(s)
}

/// What an apply did: applied the plan now, or found it applied before (a replay, which
/// changes nothing), with the verified receipt.
#[derive(Debug)]
pub struct ApplyOutcome {
    /// `sha256:<hex>`.
    pub plan_id: String,
    pub how: How,
    /// The plan ran a command (it has no rollback).
    pub command: bool,
    /// For a plan bound to a remote, where it is consumed, as the apply recorded it.
    pub consumed_on: Option<ConsumedOn>,
    pub receipt: Receipt,
    pub envelope: Envelope,
}

/// Whether this run applied the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// Applied now, and the observed effect is the plan's.
    Applied,
    /// Applied now, and the observed effect differs from the plan (exit 15).
    Unverified,
    /// Applied before: nothing was changed now. A replay is never unverified: it exits 0
    /// whatever the recorded receipt says.
    Replayed(ReplayedFrom),
}

/// Where a replayed receipt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayedFrom {
    /// This clone applied the plan.
    ThisClone,
    /// Another clone applied it: the remote it consumed the plan on and published its
    /// receipt to.
    Remote(String),
}

/// Where a plan bound to a remote is consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumedOn {
    /// On the remote (its consumed marker).
    Remote,
    /// In the applying clone only (`[remote] consumed_marker = false`).
    Clone,
}

impl ConsumedOn {
    /// As `apply --json` prints it (`consumed_on`).
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumedOn::Remote => "remote",
            ConsumedOn::Clone => "clone",
        }
    }
}

impl ApplyOutcome {
    pub fn replayed(&self) -> bool {
        matches!(self.how, How::Replayed(_))
    }

    /// The error this apply ends with (exit 15) when its observed effect differs from the
    /// plan; `None` otherwise.
    pub fn unverified(&self) -> Option<Error> {
        (self.how == How::Unverified).then(|| unverified(&self.plan_id, self.command))
    }
}

/// The error of an apply whose observed effect differs from the plan.
fn unverified(plan_id: &str, command: bool) -> Error {
    Error::new(
        Kind::Unverified,
        "applied, but the observed effect differs from the plan",
    )
    .with_hint(if command {
        // A command has no rollback: its --before-image is the way back.
        "inspect the mismatches above; a command cannot be rolled back (see its --before-image output)"
            .to_string()
    } else {
        format!("inspect the mismatches above; `guardctl rollback {plan_id}` restores the backups")
    })
}

/// The checks, then in a session: recovery, then the journaled apply, or nothing when the
/// plan was applied before. Prints only notices and warnings (stderr).
pub fn apply(ctx: &Ctx, ui: &mut Ui, request: &ApplyRequest) -> Result<ApplyOutcome> {
    let mut key = ctx.signing_key(ui)?;
    ctx.report_signers(ui, false)?;
    let mut cleared = crate::gate::preflight(ctx, &request.target, Some(&key))?;
    // Every signature this apply makes (records, receipt, audit entries) is one passphrase,
    // asked here, after the checks and before the first write.
    ctx.unlock(&mut key, ui)?;
    let repo = ctx.repo()?;
    let store = super::session::store(ctx)?;
    let locked = Session::lock(ctx, &store)?;
    // An applied plan stays one of its planner's live plans here, for the bulk class of their
    // other plans (`bulk.across_plans`): until it expires, and at least the policy's default
    // plan lifetime from now, since its expiry is the planner's choice. Recorded under the
    // lock and judged again: two parts applied at the same moment each passed the checks
    // before the other was recorded, and the second to get the lock must see the first.
    let policy = &ctx
        .policy_for(cleared.loaded.plan.operation.bound_to_remote())?
        .policy;
    let until = ctx.now.saturating_add(time::Duration::seconds(
        policy.default_expiry_secs.min(i64::MAX as u64) as i64,
    ));
    crate::store::seen::record(&repo.state_dir(), &cleared.loaded, Some(until), ctx.now)?;
    if !cleared.bulk_across
        && crate::gate::part_of(ctx, &cleared.loaded, &ctx.allowed_signers()?.0, policy)?
            .is_some_and(|p| p.group.is_some())
    {
        cleared = crate::gate::preflight(ctx, &request.target, Some(&key))?;
    }
    // Published with the consumed marker (`execute::PUBLISHED_PLAN`), made while the
    // payload is still held.
    let to_publish = match cleared.loaded.plan.operation.bound_to_remote() {
        Some(_) => Some(crate::store::published::Item::plan(
            cleared.loaded.id_hex(),
            &cleared.loaded.file,
        )?),
        None => None,
    };
    cleared.forget_payload();
    let loaded = &cleared.loaded;
    let plan = &loaded.plan;
    let id = loaded.id_hex().to_string();
    let is_exec = matches!(plan.operation, Operation::Exec(_));
    // What cannot be recorded is not done: a broken audit log refuses before any change.
    let session = locked.check_log(ui, AuditLog::MustBeIntact)?.begin(
        ui,
        Signer {
            key: Some(&key),
            principal: cleared.executor.clone(),
        },
        Notices::Print,
    )?;
    let ex = session.executor();
    let (signers, _) = ctx.allowed_signers()?;

    // Where this plan's consumption and receipt are published, if anywhere.
    let bound = match plan.operation.bound_to_remote() {
        Some(name) => Some(crate::consume::plan_remote(repo, name)?),
        None => None,
    };
    let local = crate::gate::consumed(&store, &id);
    if let Ok(true) = local {
        // A replay here also publishes a receipt an earlier run could not.
        crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
        let consumed_on = consumed_on(&store, &id, bound.is_some())?;
        let (receipt, envelope) = crate::execute::recorded(&store, &id, &signers)?;
        return Ok(ApplyOutcome {
            plan_id: loaded.plan_id.clone(),
            how: How::Replayed(ReplayedFrom::ThisClone),
            command: is_exec,
            consumed_on,
            receipt,
            envelope,
        });
    }
    // Consumed on its remote by another apply, anywhere: that apply's receipt, before any
    // check that could tell this clone's state apart (a replay reports no drift).
    let replay = |r: crate::consume::Replay| ApplyOutcome {
        plan_id: loaded.plan_id.clone(),
        how: How::Replayed(ReplayedFrom::Remote(r.remote)),
        command: is_exec,
        consumed_on: Some(ConsumedOn::Remote),
        receipt: r.receipt,
        envelope: r.envelope,
    };
    if let Some(remote) = &bound
        && let Some(r) = crate::consume::replay_from_remote(
            ui,
            &store,
            loaded,
            (remote, ctx.fetched_published().as_deref()),
            request.wait,
            &signers,
            crate::gate::clock_skew(ctx),
        )?
    {
        return Ok(replay(r));
    }
    if local.is_err() && store.read_file(&id, crate::execute::ABANDONED)?.is_some() {
        // Abandoned here after its marker landed: other clones learn it from the record a
        // recovery could not publish then.
        crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
    }
    local?;
    let image = BeforeImage {
        plan_id: loaded.plan_id.clone(),
        plan_hash: plan.plan_hash.clone(),
        repository: plan.repository.clone(),
        executor: cleared.executor.clone().unwrap_or_default(),
        approved_by: cleared.report.approved_by.clone(),
        created_at: ctx.now,
        retention_days: plan.before_image.retention_days,
        remote: plan.operation.remote().map(String::from),
        backup_ref: (!plan.affected.is_empty()).then(|| format!("{BACKUP_NAMESPACE}/{id}")),
        backup_commit: None,
        refs: plan
            .affected
            .iter()
            .map(|a| DeletedRef {
                refname: a.refname.clone(),
                oid: a.oid.clone(),
            })
            .collect(),
        config: plan
            .affected
            .iter()
            .filter(|a| !a.config().is_empty())
            .map(|a| {
                (
                    a.name().to_string(),
                    a.config()
                        .iter()
                        .map(|c| (c.key.clone(), c.value.clone()))
                        .collect(),
                )
            })
            .collect(),
        tag_objects: saved_tags(repo, plan)?,
        command: match &plan.operation {
            Operation::Exec(e) => Some(e.command.clone()),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => None,
        },
        // How this apply consumes the plan beyond this clone, as the policy in force says
        // now: recorded, so that a recovery never reads a later policy to interpret it.
        consumed_on: bound.as_ref().map(|r| RemoteConsumption {
            remote: r.name.clone(),
            url: r.url.clone(),
            marker: policy.consumed_marker,
        }),
    };
    if let Some(item) = &to_publish
        && let Some(remote) = &bound
        && policy.consumed_marker
    {
        // Before anything is consumed: a name taken by something else than this plan would
        // keep it out of every other clone's bulk count (`execute::plan_name_taken`; the
        // push checks again, for a name taken since).
        let taken = match ctx.fetched_published().filter(|s| s.remote.url == remote.url) {
            Some(s) => crate::execute::holds_other_than_plan(&s, &id),
            None => crate::execute::plan_name_held_by_other(remote, &id)?,
        };
        if taken {
            return Err(crate::execute::plan_name_taken(&id));
        }
        store.write_file(&id, crate::execute::PUBLISHED_PLAN, &item.bytes)?;
    }
    // The approvals the receipt will name, kept for `log --verify` (`evidence`).
    let approvals = serde_json::to_vec_pretty(&cleared.approvals)
        .map_err(|e| Error::internal("cannot encode the approvals").caused_by(e))?;
    store.write_file(&id, crate::evidence::APPROVALS, &approvals)?;
    let mut drift = || crate::gate::drift(ctx, loaded);
    let result = match &plan.operation {
        Operation::Exec(inputs) => ex.apply_exec(
            &id,
            image,
            &key,
            crate::execute::Run {
                inputs,
                top: &repo.display_path(),
                sandbox: &ctx.preview_sandbox(inputs.remote.as_deref())?,
            },
            &mut drift,
        ),
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
            ex.apply(&id, image, &key, &mut drift)
        }
    };
    if let Err(e) = result {
        // Refused (drift: the branches are gone; the consumed ref is taken) because another
        // apply consumed the plan meanwhile: that apply's receipt, as a replay.
        let Some(remote) = &bound else {
            return Err(e);
        };
        return match crate::consume::replay_from_remote(
            ui,
            &store,
            loaded,
            // After a refused apply: what the remote holds now, not the snapshot.
            (remote, None),
            request.wait,
            &signers,
            crate::gate::clock_skew(ctx),
        )? {
            Some(r) => Ok(replay(r)),
            // Consumed in each applying clone only: the refs another clone deleted
            // first are drift here, with no receipt to print.
            None if e.kind == Kind::Drift && !policy.consumed_marker && !is_exec => {
                Err(e.with_hint(crate::execute::CONSUMED_HERE_ONLY_HINT))
            }
            None => Err(e),
        };
    }
    crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
    let consumed_on = consumed_on(&store, &id, bound.is_some())?;
    // Read back as a replay reads it: the one receipt this run signed, verified once.
    let (receipt, envelope) = crate::execute::recorded(&store, &id, &signers)?;
    Ok(ApplyOutcome {
        plan_id: receipt.plan_id.clone(),
        how: if receipt.verified {
            How::Applied
        } else {
            How::Unverified
        },
        command: receipt.exec.is_some(),
        consumed_on,
        receipt,
        envelope,
    })
}

/// Where plan `id` is consumed, for [`ApplyOutcome::consumed_on`]: `None` for a local plan.
fn consumed_on(store: &Store, id: &str, bound: bool) -> Result<Option<ConsumedOn>> {
    Ok(match bound {
        false => None,
        true if crate::consume::with_marker(store, id)? => Some(ConsumedOn::Remote),
        true => Some(ConsumedOn::Clone),
    })
}

/// The annotated tag objects the plan deletes, read now: the before-image keeps them.
fn saved_tags(repo: &crate::repo::Repo, plan: &crate::plan::model::Plan) -> Result<Vec<SavedTag>> {
    use base64::Engine;
    let mut out = Vec::new();
    for a in &plan.affected {
        let t = match &a.facts {
            ResourceFacts::Tag(t) if t.object.annotated => &t.object,
            // A lightweight tag is its commit (the backup commit keeps it); a branch has none.
            ResourceFacts::Tag(_) | ResourceFacts::Branch(_) => continue,
        };
        let oid = crate::repo::Oid::from_str(&a.oid).map_err(Error::from)?;
        out.push(SavedTag {
            oid: a.oid.clone(),
            commit: t.commit.clone(),
            data: base64::engine::general_purpose::STANDARD.encode(repo.raw_object(oid).map_err(|e| {
                Error::usage(format!(
                    "the tag object of {} is not in this clone",
                    safe(&a.refname)
                ))
                .caused_by(e.message)
                .with_hint("fetch the tags (`git fetch --tags`), then apply again")
            })?),
        });
    }
    Ok(out)
}
