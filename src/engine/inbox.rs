//! The reviewer's inbox: the plans published on the team remote that still wait, what each
//! needs from which review group, and which of them the key in use may approve
//! (docs/remote.md). Reads only: everything is fetched into a private scratch repository;
//! this clone is not written.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::plan::approval::APPROVAL_NAMESPACE;
use crate::planfile::Loaded;
use crate::render::view::{ApprovalsView, InboxLeftOut, InboxPlan, InboxView, StillNeeded};
use crate::sign::SigningKey;
use crate::ui::Ui;

/// The plans published on the team remote that still wait, with what each needs and
/// whether the key in use may approve it; warns about each plan left out as invalid.
pub fn inbox(ctx: &Ctx, ui: &mut Ui) -> Result<InboxView> {
    ctx.repo()?;
    let remote = ctx.team_remote()?.cloned().ok_or_else(|| {
        Error::usage("this repository has no team remote to read published plans from")
            .with_hint("add an `origin` remote, or name one with `git config --global guardctl.remote NAME`")
    })?;
    ctx.report_signers(ui, false)?;
    let snapshot = ctx
        .published_all()?
        .ok_or_else(|| Error::internal("the team remote went away while reading it"))?;
    let (signers, _) = ctx.allowed_signers()?;
    // The key in use, as `whoami` finds it; inbox lists plans without one.
    let key = ctx.signing_key_as_is().ok();
    let principal = key.as_ref().and_then(|k| {
        match signers
            .principals_at(k.signer(), APPROVAL_NAMESPACE, &[ctx.now])
            .as_slice()
        {
            [one] => Some(one.clone()),
            _ => None,
        }
    });
    let mut left_out = InboxLeftOut::default();
    let mut plans = Vec::new();
    for id in snapshot.plan_ids()? {
        if snapshot.consumed(&id)?.is_some() {
            left_out.consumed += 1;
            continue;
        }
        let loaded = match snapshot.plan(&id) {
            Ok(Some(l)) => l,
            Ok(None) => continue,
            Err(e) => {
                left_out.invalid += 1;
                ui.warn(&format!("left out: {}", e.chain()));
                continue;
            }
        };
        let plan = &loaded.plan;
        // Anyone who can push may publish a plan signed by a key of their own that claims to
        // be alice's: listed, it would read "by alice@…, you may approve it". A plan whose
        // planner the trusted identities do not confirm can never be applied (the gate
        // refuses it); it is left out like any other invalid plan, with a warning.
        let backed = crate::gate::planner_principals(&signers, &loaded, ctx.now);
        if !plan
            .planner
            .principal
            .as_ref()
            .is_some_and(|p| backed.contains(p))
        {
            left_out.invalid += 1;
            ui.warn(&format!(
                "left out: plan {} claims planner {}, which the trusted identities do not confirm for its key {} (it can never be applied)",
                loaded.plan_id,
                crate::text::safe(plan.planner.principal.as_deref().unwrap_or("(none)")),
                crate::sign::sshsig::fingerprint(&loaded.signer),
            ));
            continue;
        }
        if ctx.now >= plan.expires_at {
            left_out.expired += 1;
            continue;
        }
        // Published by an earlier version, or by hand: nothing to approve.
        if crate::policy::changes_nothing(plan) {
            left_out.empty += 1;
            continue;
        }
        // This repository's: a remote plan bound to the team remote's repository, or a plan
        // of a clone (the planner's, where it will be applied) published here.
        let ours = match plan.operation.bound_to_remote() {
            Some(_) => crate::repo::url::same_repository(&plan.repository, &remote.url),
            None => true,
        };
        if !ours {
            left_out.other_repository += 1;
            continue;
        }
        let approvals = crate::gate::approval_status(ctx, &loaded)?;
        let why_not = why_not(&loaded, &approvals, key.as_ref(), principal.as_deref(), &signers);
        plans.push(InboxPlan {
            plan_id: loaded.plan_id.clone(),
            summary: plan.summary.clone(),
            operation: plan.operation.kind(),
            remote: plan.operation.bound_to_remote().map(String::from),
            planner: plan.planner.principal.clone(),
            created_at: crate::text::rfc3339(plan.created_at),
            expires_at: crate::text::rfc3339(plan.expires_at),
            expires_in_secs: (plan.expires_at - ctx.now).whole_seconds(),
            still_needed: approvals
                .groups
                .iter()
                .filter(|g| g.missing > 0)
                .map(|g| StillNeeded {
                    group: g.name.clone(),
                    missing: g.missing,
                    from: g
                        .open_approvers()
                        .map(|v| v.into_iter().map(String::from).collect()),
                })
                .collect(),
            rejected_by: approvals.rejected_by.clone(),
            may_approve: why_not.is_none(),
            why_not,
            approvals,
        });
    }
    plans.sort_by(|a, b| (&a.created_at, &a.plan_id).cmp(&(&b.created_at, &b.plan_id)));
    Ok(InboxView {
        remote: remote.name.clone(),
        url: remote.url.clone(),
        principal,
        key: key.as_ref().map(|k| crate::sign::sshsig::fingerprint(&k.public)),
        plans,
        left_out,
    })
}

/// Why the key in use may not add an approval that counts (`None`: it may): no principal,
/// the planner's key or name, a veto, nothing left to approve, no group it may approve, or
/// it approved already.
fn why_not(
    loaded: &Loaded,
    approvals: &ApprovalsView,
    key: Option<&SigningKey>,
    principal: Option<&str>,
    signers: &crate::sign::AllowedSigners,
) -> Option<String> {
    let Some(key) = key else {
        return Some("no signing key".into());
    };
    let Some(me) = principal else {
        return Some("your key approves as no principal".into());
    };
    let fingerprint = crate::sign::sshsig::fingerprint(&key.public);
    let plan = &loaded.plan;
    let planner = plan.planner.principal.as_deref();
    if plan.planner.key.as_deref() == Some(fingerprint.as_str())
        || planner.is_some_and(|p| p.eq_ignore_ascii_case(me) || signers.keys_of(p).contains(&fingerprint))
    {
        return Some("you planned it".into());
    }
    if !approvals.rejected_by.is_empty() {
        return Some("it is rejected".into());
    }
    if !approvals.blocked_by.is_empty() {
        return Some("a ref under its rejections/ that cannot be verified blocks it".into());
    }
    if approvals.approved_by.iter().any(|p| p == me) {
        return Some("you approved it".into());
    }
    let open: Vec<_> = approvals.groups.iter().filter(|g| g.missing > 0).collect();
    if open.is_empty() {
        return Some("it needs no more approvals".into());
    }
    if !open
        .iter()
        .any(|g| g.approvers.is_empty() || g.approvers.iter().any(|a| a == me))
    {
        return Some("no group that still needs approvals lists you".into());
    }
    None
}
