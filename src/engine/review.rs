//! Deciding about a plan: `approve`, `reject` and `reject --withdraw`. The decision is
//! checked (`review`: who decides, no self-approval, eligibility, expiry, what a withdrawal
//! lifts), shown to the reviewer through the front end (which may ask them to confirm), then
//! signed, published when asked (first: what the remote refuses is recorded nowhere),
//! written to the plan file or a detached file, kept in the repository's state when it is a
//! veto, and entered in the audit log.

use super::publish::Publish;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::gate::plans_repo;
use crate::plan::approval::{APPROVAL_NAMESPACE, Approval, Decision};
use crate::plan::envelope::APPROVAL_PAYLOAD_TYPE;
use crate::planfile::Loaded;
use crate::render::review::{DecisionView, PublishedDecisionView};
use crate::render::view::{self, Paging, ViewInput};
use crate::review;
use crate::sign::dsse;
use crate::text::safe;
use crate::ui::Ui;
use std::path::PathBuf;

/// A decision to record.
#[derive(Debug, Clone)]
pub struct DecisionRequest {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a published plan.
    pub plan: PathBuf,
    pub decision: Decision,
    pub comment: Option<String>,
    /// A detached approval file to write instead of appending to the plan file.
    pub out: Option<PathBuf>,
    /// The review groups an approval is scoped to (none: every group that lists the
    /// principal).
    pub groups: Vec<String>,
    pub publish: Publish,
}

/// What the reviewer is shown before anything is signed.
pub struct Presented {
    /// The plan as `show` would print it.
    pub view: view::ShowView,
    /// The plan id's hex digits (what a confirmation prompt asks for).
    pub id_hex: String,
}

/// Check, show (`present`: the front end draws the plan and may refuse, e.g. when the
/// reviewer does not confirm; nothing is recorded then), sign and record a decision.
pub fn decide(
    ctx: &Ctx,
    ui: &mut Ui,
    request: DecisionRequest,
    present: &mut dyn FnMut(&mut Ui, &Presented) -> Result<()>,
) -> Result<DecisionView> {
    ctx.record_ledger_tips();
    let DecisionRequest {
        plan: plan_path,
        decision,
        comment,
        out,
        groups,
        publish,
    } = request;
    let loaded = crate::gate::load_plan(ctx, &plan_path)?;
    // A plan named by its id was read from the remote: that is where its decisions go too,
    // unless written to a file.
    let from_file = std::fs::symlink_metadata(&plan_path).is_ok();
    let publish_to = publish.remote(ctx, !from_file && out.is_none())?;
    if !from_file && out.is_none() && publish_to.is_none() {
        return Err(Error::usage(
            "nowhere to record this: the plan was read from the remote and --no-publish was given",
        )
        .with_hint("pass --out FILE for a detached file, or leave --no-publish out"));
    }
    let plan = &loaded.plan;
    let mut key = ctx.signing_key(ui)?;
    let fingerprint = crate::sign::sshsig::fingerprint(&key.public);
    let (signers, source) = ctx.allowed_signers()?;
    ctx.report_signers(ui, false)?;
    let principals = signers.principals_at(key.signer(), APPROVAL_NAMESPACE, &[ctx.now]);
    if principals.is_empty() && ctx.repo().is_err() {
        // The team's identities are usually its committed allowed-signers file, which only a
        // clone can read: say that, not what a `namespaces=` restriction would mean.
        let read = match &source {
            Some(s) => format!(
                "only {} ({}) was read, and it does not list key {fingerprint}",
                safe(&s.location),
                s.how
            ),
            None => "no allowed-signers file was read".to_string(),
        };
        return Err(Error::usage(format!(
            "outside a repository the team's identities (its committed allowed-signers file) cannot be read: {read}"
        ))
        .with_hint("run it in a clone of the plan's repository (`guardctl -C <clone> approve …`), or pass the team's file with `--allowed-signers FILE`"));
    }
    let principal = review::decider(&principals, &fingerprint)?;
    if decision == Decision::Approve {
        review::refuse_self_approval(plan, &principal, &fingerprint, &signers)?;
        // Eligible for the groups `apply` will count: with the bulk group when the planner's
        // other live plans (seen here or published) make this one bulk.
        let part_of = match (
            plans_repo(ctx, plan),
            ctx.policy_for(plan.operation.bound_to_remote()),
        ) {
            (Some(_), Ok(p)) => crate::gate::part_of_known(ctx, &loaded, &signers, &p.policy)?,
            _ => None,
        };
        let in_review = crate::policy::across::in_review(plan, part_of.as_ref());
        review::check_eligible(in_review.as_ref().unwrap_or(plan), &principal, &groups)?;
    }
    let withdraws = match decision {
        Decision::Withdraw => {
            let mut recorded = crate::gate::recorded_decisions(ctx, &loaded)?;
            recorded.extend(crate::gate::published_decisions(ctx, &loaded)?.envelopes);
            let envelopes = loaded
                .file
                .approvals
                .iter()
                .chain(recorded.iter().map(|(_, e)| e));
            review::own_rejections(envelopes, &loaded.plan_id, &signers, &principal)?
        }
        _ => Vec::new(),
    };
    review::check_not_expired(plan, ctx.now)?;

    // Nothing is recorded where the audit log could not record it. Read under the store's
    // lock: another approver appending meanwhile has written its entry before it anchors it,
    // and the first entry of a log, seen in that moment, is an entry with no anchor at all
    // (two concurrent first approvals: one was refused as a broken log).
    if let Some(repo) = plans_repo(ctx, plan) {
        let store = crate::store::Store::new(repo.state_dir());
        let locked = store.lock(repo)?;
        crate::engine::session::say_stale_locks(ui, locked.stale_locks());
        let retired = store.audit_intact(&locked, &signers)?;
        crate::engine::session::say_retired(ctx, ui, &retired)?;
    }

    let policy = crate::gate::policy_status(ctx, &loaded.plan);
    let presented = Presented {
        view: view::build(ViewInput {
            plan: &loaded.plan,
            plan_id: &loaded.plan_id,
            approvals: crate::gate::approval_status(ctx, &loaded)?,
            policy,
            now: ctx.now,
            paging: Paging::Auto,
            show_all_skipped: false,
        }),
        id_hex: loaded.id_hex().to_string(),
    };
    present(ui, &presented)?;

    let approval = Approval {
        plan_id: loaded.plan_id.clone(),
        plan_hash: plan.plan_hash.clone(),
        repository: plan.repository.clone(),
        decision,
        principal: principal.clone(),
        key: fingerprint,
        created_at: ctx.now,
        comment,
        groups,
        withdraws,
    };
    let groups_recorded = approval.groups.clone();
    let payload =
        serde_json::to_vec(&approval).map_err(|e| Error::internal("cannot encode approval").caused_by(e))?;
    let event = match decision {
        Decision::Approve => "approve",
        Decision::Reject => "reject",
        Decision::Withdraw => "withdraw",
    };
    // Everything this decision signs is signed before its first write, with one passphrase
    // for a key that needs one (`Ctx::unlock`): its audit entry, prepared under the store's
    // lock (held until the entry is appended, so the chain it extends cannot move), then the
    // decision itself. A key that cannot sign leaves nothing behind to retry over.
    ctx.unlock(&mut key, ui)?;
    let repo = plans_repo(ctx, plan);
    let store = repo.map(|r| crate::store::Store::new(r.state_dir()));
    let mut audit = match (repo, &store) {
        (Some(repo), Some(store)) => {
            let locked = store.lock(repo)?;
            let entry = audit_entry(
                ctx,
                store,
                &locked,
                &loaded,
                &key,
                event,
                &principal,
                approval.comment.as_deref(),
            )?;
            Some((locked, entry))
        }
        _ => None,
    };
    let env = dsse::sign(APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE, &payload, &key)
        .map_err(|e| Error::internal("cannot sign the approval").caused_by(e))?;
    let env_copy = env.clone();
    // A reviewed plan is one of its planner's live plans here: the bulk class of their
    // other plans counts it (`bulk.across_plans`).
    if let Some(repo) = repo {
        crate::store::seen::record(&repo.state_dir(), &loaded, None, ctx.now)?;
    }
    let standing = crate::gate::approval_status_with(ctx, &loaded, std::slice::from_ref(&env))?;
    // Published first: what the remote refuses is recorded nowhere, so a retry starts clean.
    let published = match &publish_to {
        Some(remote) => {
            let p = publish_decision(ctx, remote, &loaded, &env)?;
            if let Some(taken) = &p.taken {
                ui.warn(&format!(
                    "{} on remote `{}` was taken by something that is not your decision: yours is published as {} instead (ask whoever administers the remote to inspect and delete the other)",
                    safe(taken),
                    safe(&remote.name),
                    safe(&p.refname)
                ));
            }
            if let Some(before) = &p.before_ledger {
                ui.notice(&format!(
                    "your earlier decision at {} on remote `{}` was published before the ledger, as a ref anyone who can push can delete: this one is on the ledger as {}",
                    safe(before),
                    safe(&remote.name),
                    safe(&p.refname)
                ));
            }
            Some(PublishedDecisionView {
                already: p.published.already,
                created: p.published.created,
                refname: p.refname,
                remote: remote.name.clone(),
                url: remote.url.clone(),
            })
        }
        None => None,
    };
    let written: Option<PathBuf> = match out {
        Some(path) => {
            crate::planfile::write_json(&path, &env)?;
            Some(path)
        }
        None if from_file => {
            crate::planfile::append_approval(&plan_path, &loaded.plan_id, env)?;
            Some(plan_path)
        }
        None => None,
    };
    // A veto (or its withdrawal) also goes into the repository's state, where stripping it
    // from the plan file cannot reach it.
    if decision != Decision::Approve {
        match plans_repo(ctx, plan) {
            Some(repo) => {
                crate::store::decisions::record(
                    &repo.state_dir(),
                    loaded.id_hex(),
                    &crate::plan::envelope::sha256_id(&payload),
                    &env_copy,
                )?;
            }
            // Published, it is on the remote every clone's `apply` reads.
            None if published.is_some() => {}
            None => ui.warn(
                "not run in the plan's repository: this decision is only in the plan file; run it inside the repository too so that it cannot be stripped from the file",
            ),
        }
    }
    if let (Some((locked, entry)), Some(store)) = (audit.take(), &store) {
        store.append_prepared(&locked, entry)?;
    }
    Ok(DecisionView {
        approvals: standing,
        decision: event,
        groups: groups_recorded,
        plan_id: loaded.plan_id.clone(),
        principal,
        published,
        written_to: written.as_ref().map(|p| p.display().to_string()),
        operation: plan.operation.kind(),
    })
}

/// Publish a signed decision on `remote`, with the plan itself when the remote does not
/// have it yet, in one atomic push (under its fallback name when someone else took its own:
/// `published::publish_decision`).
///
/// What the run already read of that remote (its snapshot) answers whether the plan is
/// there and is what the push builds on: one connection to read, one to push.
fn publish_decision(
    ctx: &Ctx,
    remote: &crate::store::published::Remote,
    loaded: &Loaded,
    env: &crate::plan::envelope::Envelope,
) -> Result<crate::store::published::PublishedDecision> {
    use crate::store::published::{self, Item};
    let known = ctx.fetched_published().filter(|s| s.remote.url == remote.url);
    let there = match &known {
        Some(s) => s.has_plan(loaded.id_hex()),
        None => published::has_plan(remote, loaded.id_hex())?,
    };
    let plan = match there {
        true => None,
        false => Some(Item::plan(loaded.id_hex(), &loaded.file)?),
    };
    published::publish_decision(remote, loaded.id_hex(), env, plan, known.as_deref())
}

/// The audit entry recording this decision, signed with `key` for the log as it stands under
/// `locked` (appended by the caller once the decision is recorded).
#[allow(clippy::too_many_arguments)]
fn audit_entry(
    ctx: &Ctx,
    store: &crate::store::Store,
    locked: &crate::repo::mutate::RepoMut,
    loaded: &Loaded,
    key: &crate::sign::SigningKey,
    event: &str,
    principal: &str,
    comment: Option<&str>,
) -> Result<crate::store::audit::Prepared> {
    // The log keeps why, not only who: a veto's reason is part of the record.
    let detail = match comment.filter(|c| !c.trim().is_empty()) {
        Some(c) => format!("{}; comment: {c}", loaded.plan.summary),
        None => loaded.plan.summary.clone(),
    };
    store.prepare_audit(
        locked,
        key,
        crate::store::audit::Event {
            now: ctx.now,
            event,
            plan_id: Some(&loaded.plan_id),
            principal: Some(principal),
            detail: &detail,
        },
    )
}
