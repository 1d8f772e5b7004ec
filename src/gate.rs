//! The checks `apply` performs, shared with `verify` so both give the same exit code:
//! integrity, expiry, principal, approvals, policy (`preflight`), then drift (`drift`).
//! `apply` takes the repository lock between the two, as docs/guide.md "Safety model" orders.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::ops::stale_branches::{self, Drift};
use crate::ops::{exec, tags};
use crate::plan::approval::{APPLY_NAMESPACE, APPROVAL_NAMESPACE, Approval};
use crate::plan::envelope::{APPROVAL_PAYLOAD_TYPE, Envelope, PLAN_NAMESPACE};
use crate::plan::model::{Operation, Plan, StaleBranchesInputs};
use crate::planfile::Loaded;
use crate::policy::{ApprovalReport, CheckedApproval, GateInput, GroupStatus, Ignored, Policy, Refusal};
use crate::render::view::{ApprovalsView, PolicyView};
use crate::sign::allowed_signers::Signer;
use crate::sign::{AllowedSigners, SigningKey, dsse, sshsig};
use crate::text::safe;
use serde_json::json;
use std::path::PathBuf;

/// What `verify` and `apply` act on: a plan file and any detached approvals.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
    #[arg(value_hint = clap::ValueHint::FilePath)]
    pub plan: PathBuf,
    /// A detached approval file (repeatable)
    #[arg(long = "approval", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub approvals: Vec<PathBuf>,
}

/// A plan that passed every check but drift.
pub struct Cleared {
    pub loaded: Loaded,
    pub report: ApprovalReport,
    /// The principal applying it (its executor), when a key was given.
    pub executor: Option<String>,
    /// Whether the planner's other live plans seen here made it need the bulk group.
    pub bulk_across: bool,
    /// The approval envelopes of the principals the report counts: `apply` keeps them
    /// beside the receipt, the evidence `log --verify` checks its approvers against.
    pub approvals: Vec<Envelope>,
}

impl Cleared {
    /// Verified and parsed: `verify` and `apply` never write the plan file back, so its
    /// encoded payload (tens of megabytes for a 50,000-branch plan) can go once nothing
    /// needs the signed bytes.
    pub fn forget_payload(&mut self) {
        self.loaded.file.payload = String::new();
    }
}

/// Every approval envelope: those attached to the plan file, then detached ones, then the
/// rejections and withdrawals recorded in this repository's state, then those published on
/// the team remote (each envelope once); and what blocks the plan on the remote (refs under
/// its `rejections/` that cannot be verified: `published::Decisions::blocking`).
fn approval_envelopes(
    ctx: &Ctx,
    loaded: &Loaded,
    extra: &[PathBuf],
) -> Result<crate::store::published::Decisions> {
    let mut out: Vec<(String, Envelope)> = loaded
        .file
        .approvals
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("approval #{}", i + 1), e.clone()))
        .collect();
    for p in extra {
        out.push((p.display().to_string(), crate::planfile::load_envelope(p)?));
    }
    out.extend(recorded_decisions(ctx, loaded)?);
    let published = published_decisions(ctx, loaded)?;
    out.extend(published.envelopes);
    let mut seen = std::collections::HashSet::new();
    out.retain(|(_, e)| seen.insert(same_envelope(e)));
    Ok(crate::store::published::Decisions {
        envelopes: out,
        warnings: Vec::new(),
        blocking: published.blocking,
    })
}

/// What makes two copies of an envelope the same one (a rejection is in the plan file, in
/// the state and on the remote): its payload *and* its signatures. Not the payload alone: a
/// copy of someone's rejection payload re-signed by another key would then stand in for the
/// real one (and count for nothing), lifting the veto. Two signings of one payload are two
/// envelopes; the gate counts a principal once however many there are.
fn same_envelope(e: &Envelope) -> (String, Vec<String>) {
    (
        e.payload.clone(),
        e.signatures.iter().map(|s| s.sig.clone()).collect(),
    )
}

/// The approvals, rejections and withdrawals of the plan published on the team remote
/// (docs/remote.md), those that are what their refs say, and what blocks the plan there (refs
/// under its `rejections/` that cannot be verified); the others are noted as warnings
/// (`Ctx::report_published`). None without a team remote. A remote that cannot be read is
/// an error: it may hold a veto.
pub fn published_decisions(ctx: &Ctx, loaded: &Loaded) -> Result<crate::store::published::Decisions> {
    let Some(snapshot) = ctx.published(loaded.id_hex())? else {
        return Ok(Default::default());
    };
    let mut d = snapshot.decisions(loaded.id_hex())?;
    ctx.note_published(std::mem::take(&mut d.warnings));
    Ok(d)
}

/// The refusal of a plan with refs under its `rejections/` on the remote that cannot be
/// verified (`blocking`): fail closed, as for a veto (12), since such a ref may be a damaged
/// or replaced rejection, and only whoever administers the remote can remove it. `judged` is
/// the gate's own verdict: a refusal other than "unapproved" (expired, wrong principal, a
/// policy) is that refusal, whatever blocks.
fn blocked(blocking: &[String], judged: Result<ApprovalReport>) -> Result<ApprovalReport> {
    if blocking.is_empty() {
        return judged;
    }
    let why = match judged {
        Err(e) if e.kind != Kind::Unapproved => return Err(e),
        // A reviewer's own veto is said first, as it is; what blocks besides is a cause.
        Err(e) if e.details["rejected_by"].as_array().is_some_and(|r| !r.is_empty()) => {
            return Err(e.caused_by(format!(
                "also blocked: {} cannot be verified as a rejection",
                blocking.join("; ")
            )));
        }
        Err(e) => Some(e.message),
        Ok(_) => None,
    };
    let mut e = Error::new(
        Kind::Unapproved,
        format!(
            "the plan is blocked: {} cannot be verified as a rejection, and is taken for a veto",
            blocking.join("; ")
        ),
    )
    .with_details(json!({"blocked_by": blocking}))
    .with_hint(
        "anyone who can push can create refs under refs/guardctl/rejections/ (docs/remote.md): ask whoever administers the remote to inspect that ref (`git fetch <remote> <ref> && git show FETCH_HEAD --stat`) and delete it if it is not a reviewer's rejection, or plan again",
    );
    if let Some(why) = why {
        e = e.caused_by(why);
    }
    Err(e)
}

/// The plan `arg` names: a plan file when the path exists (as always), else a plan
/// published on the team remote, by id (`sha256:<hex>`, hex) or a unique prefix of at least
/// 8 hex digits (docs/remote.md). Read from the remote, it is checked exactly as a file.
pub fn load_plan(ctx: &Ctx, arg: &std::path::Path) -> Result<Loaded> {
    let looks_like_id = arg.to_str().is_some_and(|s| {
        let hex = s.strip_prefix("sha256:").unwrap_or(s);
        !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
    });
    if !looks_like_id || std::fs::symlink_metadata(arg).is_ok() {
        let loaded = crate::planfile::load(arg)?;
        if looks_like_id {
            file_named_like_an_id(&arg.to_string_lossy(), &loaded)?;
        }
        return Ok(loaded);
    }
    // A team remote that cannot be resolved (several URLs, an insteadOf in the clone's own
    // config) is its own error, not "no such file": swallowing it would hide why the plan
    // cannot be read, and that a URL rewrite was refused.
    let Some(remote) = ctx.team_remote()?.cloned() else {
        // No remote to look in: the path's own error (66, not found).
        return crate::planfile::load(arg);
    };
    // The run's one snapshot: a ledger rewound behind the tip this clone saw is refused
    // (16) before an id is looked for in it.
    let snapshot = ctx
        .published_all()?
        .ok_or_else(|| Error::internal("the team remote went away while reading it"))?;
    let id = snapshot.resolve(&arg.to_string_lossy())?;
    snapshot.plan(&id)?.ok_or_else(|| {
        Error::new(
            Kind::NotFound,
            format!(
                "plan sha256:{id} is no longer published on remote `{}`",
                safe(&remote.name)
            ),
        )
        .with_hint("`guardctl inbox` lists the published plans")
    })
}

/// An argument that looks like a plan id or prefix (`arg`) and names an existing file: the
/// file is read, as a path always is, but only when it holds a plan whose id that is.
/// Otherwise anyone who can add a file to the repository (a planner committing one named
/// after the id of the plan they ask reviewers to approve by id, as `inbox` lists it) would
/// have `approve <id> --yes` sign another plan than the one the reviewer looked at: refused
/// (64), naming both.
pub fn file_named_like_an_id(arg: &str, loaded: &Loaded) -> Result<()> {
    let hex = arg.strip_prefix("sha256:").unwrap_or(arg).to_ascii_lowercase();
    if loaded.id_hex().starts_with(&hex) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "`{}` is a file here, and it holds plan {}, not the plan its name looks like the id of",
        safe(arg),
        loaded.plan_id
    ))
    .with_hint(format!(
        "to read that file, pass it as `./{}`; to read the published plan by its id, run guardctl where no file has that name, or remove the file (guardctl never names a plan file after its id)",
        safe(arg)
    )))
}

/// The rejections and withdrawals of the plan recorded in this repository's guardctl state
/// (none outside a repository).
pub fn recorded_decisions(ctx: &Ctx, loaded: &Loaded) -> Result<Vec<(String, Envelope)>> {
    match ctx.repo() {
        Ok(repo) => crate::store::decisions::load(&repo.state_dir(), loaded.id_hex()),
        Err(_) => Ok(vec![]),
    }
}

/// Verify one approval envelope and look up who its key (or certificate) speaks for, at the
/// time the approval claims and now: a key retired since cannot back-date an approval.
pub fn check_approval(
    signers: &AllowedSigners,
    env: &Envelope,
    now: time::OffsetDateTime,
) -> std::result::Result<CheckedApproval, String> {
    let v = dsse::verify(env, APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE).map_err(|e| e.to_string())?;
    let approval: Approval =
        serde_json::from_slice(&v.payload).map_err(|e| format!("malformed approval ({e})"))?;
    let cert = env
        .signatures
        .first()
        .and_then(|s| sshsig::certificate_of(&s.sig));
    let signer = Signer {
        key: &v.signer,
        certificate: cert.as_ref(),
    };
    let signer_principals = signers.principals_at(signer, APPROVAL_NAMESPACE, &[approval.created_at, now]);
    Ok(CheckedApproval {
        id: crate::plan::envelope::sha256_id(&v.payload),
        approval,
        signer_fingerprint: v.fingerprint,
        signer_principals,
    })
}

/// Verify approval envelopes: a bad signature or payload is `invalid_plan`.
fn check_approvals(
    signers: &AllowedSigners,
    envs: &[(String, Envelope)],
    now: time::OffsetDateTime,
) -> Result<Vec<CheckedApproval>> {
    envs.iter()
        .map(|(name, env)| {
            check_approval(signers, env, now).map_err(|what| {
                Error::invalid_plan(format!("{name}: {what}"))
                    .with_hint("remove the damaged approval and ask for it again")
            })
        })
        .collect()
}

/// How the approvals attached to a plan count now, for `show` and `approve` (never fails on
/// a bad approval: it is reported as invalid instead).
pub fn approval_status(ctx: &Ctx, loaded: &Loaded) -> Result<ApprovalsView> {
    approval_status_with(ctx, loaded, &[])
}

/// `approval_status` counting `extra` approvals too (one just written to a detached file).
pub fn approval_status_with(ctx: &Ctx, loaded: &Loaded, extra: &[Envelope]) -> Result<ApprovalsView> {
    let (signers, _) = ctx.allowed_signers()?;
    let mut checked = Vec::new();
    let mut invalid = 0;
    let recorded: Vec<Envelope> = match recorded_decisions(ctx, loaded) {
        Ok(r) => r.into_iter().map(|(_, e)| e).collect(),
        Err(_) => {
            invalid += 1;
            vec![]
        }
    };
    // `show` works when the remote cannot be read; `apply` and `verify` refuse.
    let mut blocked_by = Vec::new();
    let published: Vec<Envelope> = match published_decisions(ctx, loaded) {
        Ok(p) => {
            blocked_by = p.blocking;
            p.envelopes.into_iter().map(|(_, e)| e).collect()
        }
        Err(e) => {
            ctx.alert_published(format!(
                "the published approvals and rejections are left out: {}",
                e.chain()
            ));
            vec![]
        }
    };
    let mut seen = std::collections::HashSet::new();
    for env in loaded
        .file
        .approvals
        .iter()
        .chain(extra)
        .chain(&recorded)
        .chain(&published)
        .filter(|e| seen.insert(same_envelope(e)))
    {
        match check_approval(&signers, env, ctx.now) {
            Ok(c) => checked.push(c),
            Err(_) => invalid += 1,
        }
    }
    let planner_keys = planner_keys(&signers, &loaded.plan);
    // Counted against the groups `apply` would require now: the plan's own, plus the bulk
    // group when the planner's other live plans make it bulk.
    // What cannot be read here (no policy, a damaged `seen/` directory) is left out of this
    // view, as for a policy: `show` still works, and `apply`, which reads both again, refuses.
    let part_of = match ctx.policy_for(loaded.plan.operation.bound_to_remote()) {
        Ok(p) => part_of_known(ctx, loaded, &signers, &p.policy).unwrap_or(None),
        Err(_) => None,
    };
    let in_review = crate::policy::across::in_review(&loaded.plan, part_of.as_ref());
    let plan = in_review.as_ref().unwrap_or(&loaded.plan);
    let report = crate::policy::evaluate_approvals(
        plan,
        &loaded.plan_id,
        &checked,
        &planner_keys,
        clock_skew(ctx),
        ctx.now,
    );
    let mut view = ApprovalsView::new(plan, &report, invalid);
    view.blocked_by = blocked_by;
    view.part_of = part_of.map(|p| crate::render::view::PartOfView::new(&loaded.plan, &p));
    Ok(view)
}

/// The policy's clock skew when it can be read here; the default otherwise (`show` works
/// outside the plan's repository).
pub fn clock_skew(ctx: &Ctx) -> u64 {
    match ctx.policy() {
        Ok(p) => p.policy.clock_skew_secs,
        Err(_) => Policy::default().clock_skew_secs,
    }
}

/// The policy the plan was made under, checked against the one in force when run in the
/// plan's repository.
pub fn policy_status(ctx: &Ctx, plan: &Plan) -> PolicyView {
    let now =
        plans_repo(ctx, plan)
            .is_some()
            .then(|| match ctx.policy_for(plan.operation.bound_to_remote()) {
                Ok(p) => Ok(p.hash.as_str()),
                Err(e) => Err(e.chain()),
            });
    PolicyView::new(plan, now)
}

/// Where a plan bound to a remote is consumed under the policy in force (`ShowView::
/// consumed_on`): `None` for a local plan, outside the plan's repository, or when that
/// policy cannot be read (the policy line says why).
pub fn consumed_on(ctx: &Ctx, plan: &Plan) -> Option<&'static str> {
    let remote = plan.operation.bound_to_remote()?;
    plans_repo(ctx, plan)?;
    let p = ctx.policy_for(Some(remote)).ok()?;
    Some(if p.policy.consumed_marker {
        "remote"
    } else {
        "clone"
    })
}

/// The repository guardctl runs in, when it is the plan's: this clone for a local plan, a
/// clone of the remote a remote plan is bound to (any clone whose remote has the plan's one
/// URL).
pub fn plans_repo<'a>(ctx: &'a Ctx, plan: &Plan) -> Option<&'a crate::repo::Repo> {
    let repo = ctx.repo().ok()?;
    let here = match plan.operation.bound_to_remote() {
        None => repo.identity().ok().is_some_and(|id| id == plan.repository),
        Some(remote) => repo
            .remote_url(remote)
            .ok()
            .is_some_and(|url| crate::repo::url::same_repository(&url, &plan.repository)),
    };
    here.then_some(repo)
}

/// Integrity, expiry, principal, approvals, policy. `applying` is the key of whoever applies
/// (None for `verify` without a key of its own: the executor check is then skipped).
pub fn preflight(ctx: &Ctx, target: &Target, applying: Option<&SigningKey>) -> Result<Cleared> {
    let (plan_path, extra) = (target.plan.as_path(), target.approvals.as_slice());
    let loaded = load_plan(ctx, plan_path)?;
    let repo = ctx.repo()?;
    // A local plan belongs to the clone it was made in; a remote's to that remote's URL,
    // whichever clone applies it.
    let identity = match loaded.plan.operation.bound_to_remote() {
        None => repo.identity()?,
        // A remote with several URLs, or pushing elsewhere than it fetches from, is refused
        // as such (64, naming the config keys); a missing remote means another repository.
        Some(remote) => repo.remote_url(remote).map_err(|e| match repo.remote_names() {
            Ok(names) if names.iter().any(|n| n == remote) => e,
            _ => Error::invalid_plan(format!(
                "{} is a plan for remote `{}`, which this repository does not have",
                plan_path.display(),
                safe(remote)
            ))
            .caused_by(e.message),
        })?,
    };
    // A remote's URL is compared by meaning (`file://` or a path, ssh or https, `.git` or
    // not); a clone's identity exactly.
    let same = match loaded.plan.operation.bound_to_remote() {
        Some(_) => crate::repo::url::same_repository(&loaded.plan.repository, &identity),
        None => loaded.plan.repository == identity,
    };
    if !same {
        return Err(Error::invalid_plan(format!(
            "{} is a plan for another repository ({}, this is {})",
            plan_path.display(),
            safe(&loaded.plan.repository),
            safe(&identity)
        ))
        .with_hint("apply a plan in the repository (clone) it was made in, or re-run `guardctl plan` here"));
    }
    let (signers, _) = ctx.allowed_signers()?;
    let all = approval_envelopes(ctx, &loaded, extra)?;
    let (envelopes, blocking) = (all.envelopes, all.blocking);
    let approvals = check_approvals(&signers, &envelopes, ctx.now)?;
    let planner_principals = planner_principals(&signers, &loaded, ctx.now);
    let planner_keys = planner_keys(&signers, &loaded.plan);
    let applying_principals =
        applying.map(|k| signers.principals_at(k.signer(), APPLY_NAMESPACE, &[ctx.now]));
    let in_force = ctx.policy_for(loaded.plan.operation.bound_to_remote())?;
    let part_of = part_of(ctx, &loaded, &signers, &in_force.policy)?;
    let report = blocked(
        &blocking,
        judge(GateInput {
            plan: &loaded.plan,
            plan_id: &loaded.plan_id,
            planner_principals: &planner_principals,
            planner_keys: &planner_keys,
            applying_principals: applying_principals.as_deref(),
            approvals: &approvals,
            policy: &in_force.policy,
            policy_hash: &in_force.hash,
            now: ctx.now,
            part_of: part_of.as_ref(),
        }),
    )?;
    let executor = applying_principals.and_then(|_| loaded.plan.executor.principal.clone());
    let approvals = envelopes
        .iter()
        .zip(&approvals)
        .filter(|(_, c)| {
            c.approval.decision == crate::plan::approval::Decision::Approve
                && report.approved_by.contains(&c.approval.principal)
        })
        .map(|((_, e), _)| e.clone())
        .collect();
    Ok(Cleared {
        loaded,
        report,
        executor,
        approvals,
        bulk_across: part_of.as_ref().is_some_and(|p| p.group.is_some()),
    })
}

/// Where the plan stands among its planner's other live plans (`bulk.across_plans`): those
/// this clone has seen (`store::seen`) and those published on the team remote
/// ([`published_plans`]), each verified as a plan file and counted once. `None` outside a
/// repository, when there are none, or when the plan was consumed here (a replay, or an
/// apply `recover` must finish, is judged as it was applied: its outcome no longer depends
/// on plans made since). A team remote that cannot be read is an error: `verify` and
/// `apply` are the gate, and a count that silently left out the plans published elsewhere
/// would let a split deletion through (they fail on that remote for its vetoes anyway).
pub fn part_of(
    ctx: &Ctx,
    loaded: &Loaded,
    signers: &AllowedSigners,
    policy: &Policy,
) -> Result<Option<crate::policy::across::PartOf>> {
    part_of_with(ctx, loaded, signers, policy, true)
}

/// [`part_of`] for advice (`show`, `approve`, `inbox`): a team remote that cannot be read
/// leaves its plans out of the count with a warning (`Ctx::report_published`) instead of
/// failing; `apply` judges again, strictly.
pub fn part_of_known(
    ctx: &Ctx,
    loaded: &Loaded,
    signers: &AllowedSigners,
    policy: &Policy,
) -> Result<Option<crate::policy::across::PartOf>> {
    part_of_with(ctx, loaded, signers, policy, false)
}

fn part_of_with(
    ctx: &Ctx,
    loaded: &Loaded,
    signers: &AllowedSigners,
    policy: &Policy,
    strict: bool,
) -> Result<Option<crate::policy::across::PartOf>> {
    let Ok(repo) = ctx.repo() else {
        return Ok(None);
    };
    let state = repo.state_dir();
    if crate::store::Store::new(state.clone()).is_consumed(loaded.id_hex()) {
        return Ok(None);
    }
    let seen = crate::store::seen::live(&state, ctx.now, loaded.id_hex())?;
    let snapshot = match ctx.published_plans() {
        // Counted only when the policy counts across plans: otherwise nothing depends on it.
        Ok(s) if policy.bulk.across_plans => s,
        Ok(_) => None,
        Err(e) if strict => return Err(e),
        Err(e) => {
            ctx.alert_published(format!(
                "the plans published on the team remote are not counted for the bulk class across plans: {}",
                e.chain()
            ));
            None
        }
    };
    let published = match &snapshot {
        Some(s) => published_plans(ctx, s, loaded, signers, policy)?,
        None => Vec::new(),
    };
    // Both sources, each entry with the time it counts until; a plan in both is counted
    // once (`across::part_of` deduplicates by id among those still counted).
    let candidates: Vec<(&Loaded, time::OffsetDateTime)> = seen
        .plans
        .iter()
        .map(|(l, until)| (l, *until))
        .chain(published)
        .collect();
    // By key, and by principal as self-approval is: a planner with certificates signs each
    // plan with whichever key the certificate of the day is for.
    let mut keys = planner_keys(signers, &loaded.plan);
    let mut names = planner_principals(signers, loaded, ctx.now);
    names.extend(loaded.plan.planner.principal.clone());
    for (l, _) in &candidates {
        let theirs = planner_principals(signers, l, ctx.now);
        if theirs
            .iter()
            .any(|t| names.iter().any(|n| n.eq_ignore_ascii_case(t)))
        {
            keys.extend(l.plan.planner.key.clone());
        }
    }
    let others: Vec<(&str, &Plan, time::OffsetDateTime)> = candidates
        .iter()
        .map(|(l, until)| (l.plan_id.as_str(), &l.plan, *until))
        .collect();
    Ok(crate::policy::across::part_of(
        &loaded.plan,
        &loaded.plan_id,
        &others,
        &keys,
        policy,
        ctx.now,
    ))
}

/// The plans published on the team remote, other than `loaded`, each with the time it counts
/// until by `store::seen`'s rule, so that both sources count alike: until it expires, and one
/// applied (its consumed marker on the remote verifies as the plan's executor's, made within
/// the plan's life) until the later of its expiry and the policy's default plan lifetime
/// after the marker was made. Every one verified as a plan file with the id its ref names
/// (`Snapshot::plans`); the others are warnings. A published plan is untrusted and can only
/// add to the count: a marker that does not verify extends nothing (the plan still counts
/// until its expiry), and nothing published removes a plan seen here.
fn published_plans<'s>(
    ctx: &Ctx,
    snapshot: &'s crate::store::published::Snapshot,
    loaded: &Loaded,
    signers: &AllowedSigners,
    policy: &Policy,
) -> Result<Vec<(&'s Loaded, time::OffsetDateTime)>> {
    let read = snapshot.plans()?;
    ctx.note_published(read.warnings.iter().cloned());
    let skew = time::Duration::seconds(policy.clock_skew_secs.min(i64::MAX as u64) as i64);
    let lifetime = time::Duration::seconds(policy.default_expiry_secs.min(i64::MAX as u64) as i64);
    Ok(read
        .plans
        .iter()
        .filter(|(l, _)| l.id_hex() != loaded.id_hex())
        .map(|(l, consumed)| {
            let applied_at = consumed.as_ref().and_then(|c| {
                let item = crate::store::consumption::RemoteItem {
                    refname: c.refname.clone(),
                    bytes: c.marker.clone(),
                };
                let made_within =
                    l.plan.created_at.saturating_sub(skew)..=l.plan.expires_at.saturating_add(skew);
                crate::execute::remote_marker(
                    &item,
                    &l.plan_id,
                    l.plan.executor.principal.as_deref(),
                    made_within,
                    signers,
                )
                .ok()
                .map(|m| m.created_at)
            });
            let until = applied_at.map_or(l.plan.expires_at, |t| {
                l.plan.expires_at.max(t.saturating_add(lifetime))
            });
            (l, until)
        })
        .collect())
}

/// Who the plan's key (or certificate) speaks for in `guardctl-plan`, at the time the plan
/// claims and now: a key retired since cannot back-date a plan.
pub fn planner_principals(
    signers: &AllowedSigners,
    loaded: &Loaded,
    now: time::OffsetDateTime,
) -> Vec<String> {
    let cert = loaded
        .file
        .signatures
        .first()
        .and_then(|s| sshsig::certificate_of(&s.sig));
    let signer = Signer {
        key: &loaded.signer,
        certificate: cert.as_ref(),
    };
    signers.principals_at(signer, PLAN_NAMESPACE, &[loaded.plan.created_at, now])
}

/// The plan's own key and every key listed for any name the planner goes by: the principal
/// the plan claims and every other principal the plan's key is listed under (one key, one
/// person: a key listed as alice@ and alice@corp approves nothing of a plan by either).
fn planner_keys(signers: &AllowedSigners, plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = plan
        .planner
        .key
        .as_deref()
        .map(|k| signers.principals_of_key(k))
        .unwrap_or_default();
    names.extend(plan.planner.principal.clone());
    let mut keys: Vec<String> = names.iter().flat_map(|p| signers.keys_of(p)).collect();
    keys.extend(plan.planner.key.clone());
    keys.sort();
    keys.dedup();
    keys
}

/// The gate's decision: `policy::gate`'s checks (principal, expiry, executor, approvals,
/// policy) on what `preflight` verified and looked up, a refusal as the error, exit code and
/// advice `verify` and `apply` give. Pure: no files, no repository, no clock but `input.now`.
pub fn judge(input: GateInput) -> Result<ApprovalReport> {
    let (plan, plan_id, part_of) = (input.plan, input.plan_id, input.part_of);
    crate::policy::gate(input).map_err(|r| refusal(r, plan, plan_id, part_of))
}

fn refusal(r: Refusal, plan: &Plan, plan_id: &str, part_of: Option<&crate::policy::across::PartOf>) -> Error {
    let replan = "re-run `guardctl plan`";
    match r {
        Refusal::PlannerUnconfirmed { claimed: None } => Error::new(
            Kind::Unapproved,
            "the plan was signed by a key that maps to no principal; such plans cannot be applied",
        )
        .with_hint("add the planner's key to the allowed-signers file, then re-run `guardctl plan`"),
        Refusal::PlannerUnconfirmed { claimed: Some(p) } => Error::invalid_plan(format!(
            "the plan claims planner {} but the trusted identities do not give its key that principal (in guardctl-plan, both when the plan claims it was made and now)",
            safe(&p)
        ))
        .with_hint(replan),
        Refusal::FromTheFuture => {
            Error::invalid_plan("the plan is dated in the future (beyond the allowed clock skew)")
                .with_hint("check the clocks of the planning machine and this one")
        }
        Refusal::Expired { expires_at } => Error::new(
            Kind::Expired,
            format!("the plan expired at {}", crate::text::rfc3339(expires_at)),
        )
        .with_details(json!({"expires_at": crate::text::rfc3339(expires_at)}))
        .with_hint(format!("{replan} and have it approved again")),
        Refusal::WrongPrincipal { executor, applying } => Error::new(
            Kind::WrongPrincipal,
            format!(
                "only {} may apply this plan; your key speaks for {}",
                executor.as_deref().map(safe).unwrap_or_else(|| "(nobody)".into()),
                if applying.is_empty() {
                    "no principal (for guardctl-apply)".to_string()
                } else {
                    applying.join(", ")
                }
            ),
        )
        .with_details(json!({"executor": executor, "applying": applying}))
        .with_hint("run apply with the executor's key, or plan again with --executor"),
        Refusal::Unapproved(report) if !report.rejected_by.is_empty() => {
            // A veto: no approval lifts it, so "ask an approver" would be the wrong advice.
            let said: Vec<String> = report
                .rejected_by
                .iter()
                .map(|p| {
                    let comments: Vec<String> = report
                        .comments
                        .iter()
                        .filter(|c| c.decision == "reject" && &c.principal == p)
                        .map(|c| safe(&c.comment))
                        .collect();
                    if comments.is_empty() {
                        format!("rejected by {} (no comment)", safe(p))
                    } else {
                        format!("rejected by {}: {}", safe(p), comments.join("; "))
                    }
                })
                .collect();
            let details = serde_json::to_value(&report).unwrap_or_default();
            Error::new(Kind::Unapproved, format!("{}; plan again", said.join("; ")))
                .with_details(details)
                .with_hint(format!(
                    "a rejection is a veto that no approval outweighs: address it and run `guardctl plan` again (or {} may lift it with `guardctl reject --withdraw <plan file>`)",
                    report.rejected_by.iter().map(|p| safe(p)).collect::<Vec<_>>().join(" or ")
                ))
        }
        Refusal::Unapproved(report) => {
            let mut msg = if !report.rejected_by.is_empty() {
                format!("the plan was rejected by {}", report.rejected_by.join(", "))
            } else {
                let unmet: Vec<String> = report.unmet().map(describe_unmet).collect();
                match report.groups.as_slice() {
                    [g] if g.name == "default" => format!(
                        "the plan has {} of the {} approvals it needs",
                        g.approved_by.len(),
                        g.required
                    ),
                    groups => format!(
                        "{} of {} review groups lack approvals: {}",
                        unmet.len(),
                        groups.len(),
                        unmet.join("; ")
                    ),
                }
            };
            let ignored: Vec<String> = report
                .ignored
                .iter()
                .map(|(p, why)| not_counted(p, *why))
                .collect();
            if !ignored.is_empty() {
                msg += &format!("; not counted: {}", ignored.join(", "));
            }
            if let Some(p) = part_of.filter(|p| p.group.is_some()) {
                msg += &format!(
                    " (bulk: part of {} plans by {} totalling {} resources, seen in this repository or published on the team remote: {})",
                    p.plans,
                    safe(plan.planner.principal.as_deref().unwrap_or("(no principal)")),
                    p.resources,
                    p.others
                        .iter()
                        .map(|id| crate::render::view::short_id(id))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            let unmet: Vec<&str> = report.unmet().map(|g| g.name.as_str()).collect();
            let mut details = serde_json::to_value(&report).unwrap_or_default();
            details["unmet_groups"] = json!(unmet);
            if let Some(p) = part_of {
                details["part_of"] = json!({"plans": p.plans, "resources": p.resources, "others": p.others, "needs_bulk": p.group.is_some()});
            }
            Error::new(Kind::Unapproved, msg)
                .with_details(details)
                .with_hint(format!(
                    "ask an approver of each group to run `guardctl approve` on plan {}",
                    crate::render::view::short_id(plan_id)
                ))
        }
        Refusal::PolicyChanged { planned, now } => {
            Error::new(Kind::Policy, "the policy changed since the plan was made")
                .with_details(json!({"planned": planned, "now": now}))
                .with_hint(replan)
        }
        Refusal::Forbidden(why) => Error::new(
            Kind::Policy,
            format!("the policy forbids this plan: {}", safe(&why)),
        )
        .with_hint(replan),
    }
}

/// "release needs 2 more (from release: alice@example.com, bob@example.com)"
fn describe_unmet(g: &GroupStatus) -> String {
    let who = if g.approvers.is_empty() {
        "any principal but the planner".to_string()
    } else {
        g.approvers.iter().map(|p| safe(p)).collect::<Vec<_>>().join(", ")
    };
    format!("{} needs {} more (from {who})", safe(&g.name), g.missing)
}

/// "bob@example.com (approves another plan)": an approval that does not count, and why.
fn not_counted(principal: &str, why: Ignored) -> String {
    format!("{} ({})", safe(principal), why.describe())
}

/// Whether the plan was already consumed, with one meaning for `verify` and `apply`:
/// `Ok(true)` when an apply of it completed (apply prints the recorded result, byte for byte:
/// also after a rollback); `Ok(false)` when it was never consumed (a refused apply leaves it
/// usable); the refusal apply gives when an apply of it was aborted (drift, 10: a plan is
/// applied at most once) or interrupted (16: `recover` decides).
pub fn consumed(store: &crate::store::Store, id: &str) -> Result<bool> {
    if !store.is_consumed(id) {
        return Ok(false);
    }
    if store.read_file(id, "result.txt")?.is_some() {
        return Ok(true);
    }
    if let Some(bytes) = store.read_file(id, "aborted.json")? {
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let why = v["message"].as_str().unwrap_or("");
        return Err(Error::new(
            Kind::Drift,
            match store.before_image(id).ok().flatten().and_then(|i| i.command) {
                Some(_) => format!("this plan's apply was aborted: {}", safe(why)),
                None => format!(
                    "this plan's apply was aborted and nothing was deleted: {}",
                    safe(why)
                ),
            },
        )
        .with_hint("a plan is applied at most once: re-run `guardctl plan`"));
    }
    Err(
        Error::new(Kind::NeedsRecovery, "an apply of this plan was interrupted")
            .with_hint("run `guardctl recover` (`apply` runs it first)"),
    )
}

/// Re-derive the plan: run the operation's observation again with the plan's recorded inputs
/// against the repository as it is now, and compare with the approved plan resource by
/// resource, the screens that made each eligible included. Any difference is `drift`, naming
/// each resource with planned vs now. The dispatch names every operation kind: a new kind
/// does not compile until it says how it is re-derived.
pub fn drift(ctx: &Ctx, loaded: &Loaded) -> Result<()> {
    let repo = ctx.repo()?;
    let plan = &loaded.plan;
    // A remote's refs are listed at the remote's one URL, as this clone spells it (preflight
    // checked it names the repository the plan is bound to): what apply pushes to.
    let drifts = match &plan.operation {
        Operation::StaleBranches(inputs) => recheck_branches(repo, inputs, plan, None, ctx.now)?,
        Operation::RemoteBranches(r) => {
            let refs = repo.ls_remote(&repo.remote_url(&r.remote)?)?;
            recheck_branches(repo, &r.selection, plan, Some(&refs), ctx.now)?
        }
        Operation::Tags(inputs) => {
            let refs = match &inputs.remote {
                Some(remote) => Some(repo.ls_remote(&repo.remote_url(remote)?)?),
                None => None,
            };
            tags::recheck(repo, inputs, &plan.affected, refs.as_ref().into(), ctx.now)?
        }
        Operation::Exec(inputs) => {
            let sandbox = ctx.preview_sandbox(inputs.remote.as_deref())?;
            let drifts = exec::recheck(&repo.display_path(), inputs, &sandbox, &|rel| {
                repo.work_tree_files(rel)
            })?;
            if drifts.is_empty() {
                return Ok(());
            }
            return Err(drift_error(&drifts).with_hint(
                "the command was not run; re-run `guardctl plan exec` and have the new plan approved",
            ));
        }
    };
    if drifts.is_empty() {
        return Ok(());
    }
    Err(drift_error(&drifts))
}

/// Re-derive a branch plan's branches against the base as it is now.
fn recheck_branches(
    repo: &crate::repo::Repo,
    inputs: &StaleBranchesInputs,
    plan: &Plan,
    remote_refs: Option<&crate::repo::RemoteRefs>,
    now: time::OffsetDateTime,
) -> Result<Vec<Drift>> {
    let base_oid = match remote_refs {
        None => repo
            .ref_target(&inputs.base)
            .or_else(|| repo.resolve_base(Some(&inputs.base)).ok().map(|b| b.1)),
        Some(r) => r.target(&inputs.base),
    };
    let Some(base_oid) = base_oid else {
        return Err(Error::new(
            Kind::Drift,
            format!("the base {} no longer exists", safe(&inputs.base)),
        )
        .with_hint("re-run `guardctl plan`"));
    };
    if !repo.has_object(base_oid) {
        return Err(Error::new(
            Kind::Drift,
            format!(
                "the remote's base {} moved to {base_oid}, which this clone has not fetched",
                safe(&inputs.base)
            ),
        )
        .with_hint("run `git fetch`, then apply again (or re-plan)"));
    }
    stale_branches::recheck(repo, inputs, &plan.affected, remote_refs.into(), base_oid, now)
}

pub use crate::ops::stale_branches::drift_error;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::approval::Decision;
    use crate::plan::model::test_data;
    use crate::store::Store;
    use time::OffsetDateTime;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);
    const ID: &str = "sha256:0123456789abcdef";

    /// A plan by alice (key SHA256:a) deleting one branch, under the default policy.
    fn plan() -> Plan {
        let policy = Policy::default();
        let mut p = test_data::plan(vec![test_data::by("topic", "dave@x", 0)], &policy.hash().unwrap());
        p.plan_hash = "sha256:h".into();
        p.review = crate::policy::route::review(&policy, &p.affected).unwrap();
        p
    }

    fn approval(who: &str, key: &str, decision: Decision, comment: Option<&str>) -> CheckedApproval {
        CheckedApproval {
            approval: Approval {
                plan_id: ID.into(),
                plan_hash: "sha256:h".into(),
                repository: "r".into(),
                decision,
                principal: who.into(),
                key: key.into(),
                created_at: T0 + time::Duration::minutes(1),
                comment: comment.map(String::from),
                groups: vec![],
                withdraws: vec![],
            },
            signer_fingerprint: key.into(),
            signer_principals: vec![who.into()],
            id: format!("sha256:{who}-{key}"),
        }
    }

    fn bob() -> CheckedApproval {
        approval("bob", "SHA256:b", Decision::Approve, None)
    }

    /// The gate on `plan` at `now`, applied by alice (its executor) under `policy`.
    fn judged(
        plan: &Plan,
        approvals: &[CheckedApproval],
        policy: &Policy,
        now: OffsetDateTime,
    ) -> Result<ApprovalReport> {
        let alice = ["alice".to_string()];
        judge(GateInput {
            plan,
            plan_id: ID,
            planner_principals: &alice,
            planner_keys: &["SHA256:a".to_string()],
            applying_principals: Some(&alice),
            approvals,
            policy,
            policy_hash: &policy.hash().unwrap(),
            now,
            part_of: None,
        })
    }

    fn refused(plan: &Plan, approvals: &[CheckedApproval], now: OffsetDateTime) -> Error {
        judged(plan, approvals, &Policy::default(), now).unwrap_err()
    }

    #[test]
    fn an_approved_plan_in_time_passes_with_its_report() {
        let report = judged(
            &plan(),
            &[bob()],
            &Policy::default(),
            T0 + time::Duration::minutes(2),
        )
        .unwrap();
        assert_eq!(report.approved_by, ["bob"]);
    }

    #[test]
    fn an_expired_plan_is_refused_with_its_expiry() {
        let p = plan();
        let e = refused(&p, &[bob()], p.expires_at);
        assert_eq!(
            (e.kind, e.exit_code()),
            (Kind::Expired, Kind::Expired.exit_code())
        );
        assert_eq!(e.message, "the plan expired at 2026-06-01T12:15:00Z");
        assert_eq!(e.details["expires_at"], "2026-06-01T12:15:00Z");
        assert!(e.hint().contains("approved again"), "{}", e.hint());
    }

    #[test]
    fn self_approval_by_the_planners_key_or_principal_does_not_count() {
        let now = T0 + time::Duration::minutes(2);
        for own in [
            // Another principal's name, the planner's key.
            approval("mallory", "SHA256:a", Decision::Approve, None),
            // The planner's principal, another key.
            approval("alice", "SHA256:a2", Decision::Approve, None),
        ] {
            let e = refused(&plan(), &[own], now);
            assert_eq!(e.kind, Kind::Unapproved);
            assert!(
                e.message
                    .starts_with("the plan has 0 of the 1 approvals it needs; not counted: "),
                "{}",
                e.message
            );
            assert!(
                e.message.contains("(the planner cannot approve their own plan)"),
                "{}",
                e.message
            );
            assert!(e.hint().contains("plan sha256:0123456789ab…"), "{}", e.hint());
            assert_eq!(e.details["unmet_groups"], json!(["default"]));
        }
    }

    #[test]
    fn a_rejection_is_a_veto_named_with_its_comment() {
        let veto = approval("carol", "SHA256:c", Decision::Reject, Some("not \u{1b}[31myet"));
        let e = refused(&plan(), &[bob(), veto], T0 + time::Duration::minutes(2));
        assert_eq!(e.kind, Kind::Unapproved);
        assert_eq!(e.message, "rejected by carol: not \\x1b[31myet; plan again");
        assert!(e.hint().contains("guardctl reject --withdraw"), "{}", e.hint());
        assert!(e.hint().contains("carol may lift it"), "{}", e.hint());
    }

    #[test]
    fn a_changed_policy_is_refused_after_the_approvals() {
        let mut strict = Policy::default();
        strict.clock_skew_secs += 1;
        let e = judged(&plan(), &[bob()], &strict, T0 + time::Duration::minutes(2)).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert_eq!(e.message, "the policy changed since the plan was made");
        assert_eq!(e.details["now"], json!(strict.hash().unwrap()));
        assert_eq!(e.details["planned"], json!(plan().policy_hash));
    }

    #[test]
    fn only_the_executor_may_apply() {
        let mut p = plan();
        p.executor.principal = Some("ci".into());
        let e = refused(&p, &[bob()], T0 + time::Duration::minutes(2));
        assert_eq!(e.kind, Kind::WrongPrincipal);
        assert_eq!(
            e.message,
            "only ci may apply this plan; your key speaks for alice"
        );
    }

    #[test]
    fn a_planner_the_trusted_identities_do_not_confirm_is_refused() {
        let mut p = plan();
        p.planner.principal = Some("eve".into());
        let e = refused(&p, &[bob()], T0 + time::Duration::minutes(2));
        assert_eq!(e.kind, Kind::InvalidPlan);
        assert!(
            e.message.starts_with("the plan claims planner eve"),
            "{}",
            e.message
        );
        p.planner.principal = None;
        assert_eq!(refused(&p, &[bob()], T0).kind, Kind::Unapproved);
    }

    #[test]
    fn a_plan_from_the_future_is_invalid() {
        let e = refused(&plan(), &[bob()], T0 - time::Duration::hours(1));
        assert_eq!(e.kind, Kind::InvalidPlan);
        assert!(e.message.contains("dated in the future"), "{}", e.message);
    }

    #[test]
    fn drift_names_each_resource_escaped_with_planned_and_now() {
        let e = drift_error(&[Drift {
            refname: "refs/heads/to\u{1b}pic".into(),
            field: "tip".into(),
            planned: "aaaa".into(),
            now: "bbbb".into(),
        }]);
        assert_eq!((e.kind, e.exit_code()), (Kind::Drift, 10));
        assert_eq!(
            e.message,
            "the repository no longer matches the plan (1 resource drifted); nothing was changed"
        );
        assert_eq!(e.causes, ["refs/heads/to\\x1bpic tip: planned aaaa, now bbbb"]);
        assert_eq!(e.details["drift"][0]["field"], "tip");
    }

    /// A store in a fresh directory, and the id of a plan in it.
    fn store() -> (tempfile::TempDir, Store, &'static str) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("guardctl"));
        (
            dir,
            store,
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        )
    }

    #[test]
    fn a_plan_never_consumed_may_be_applied() {
        let (_dir, store, id) = store();
        assert!(!consumed(&store, id).unwrap());
    }

    #[test]
    fn a_completed_apply_is_a_replay() {
        let (_dir, store, id) = store();
        store.mark_consumed(id, b"marker").unwrap();
        store.write_file(id, "result.txt", b"done").unwrap();
        assert!(consumed(&store, id).unwrap());
    }

    #[test]
    fn an_aborted_apply_is_drift_and_the_plan_is_spent() {
        let (_dir, store, id) = store();
        store.mark_consumed(id, b"marker").unwrap();
        store
            .write_file(id, "aborted.json", br#"{"message": "topic moved"}"#)
            .unwrap();
        let e = consumed(&store, id).unwrap_err();
        assert_eq!(e.kind, Kind::Drift);
        assert_eq!(
            e.message,
            "this plan's apply was aborted and nothing was deleted: topic moved"
        );
        assert!(e.hint().contains("at most once"), "{}", e.hint());
    }

    #[test]
    fn an_interrupted_apply_needs_recovery() {
        let (_dir, store, id) = store();
        store.mark_consumed(id, b"marker").unwrap();
        let e = consumed(&store, id).unwrap_err();
        assert_eq!(e.kind, Kind::NeedsRecovery);
        assert!(e.hint().contains("guardctl recover"), "{}", e.hint());
    }

    /// A real repository: `main`, and `topic` merged into it (main's parent), planned for
    /// deletion with `--merged` by the real observation; returns the plan too.
    fn merged_topic() -> (tempfile::TempDir, crate::repo::Repo, Plan) {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::new("A", "a@x", &git2::Time::new(1_780_000_000, 0)).unwrap();
        let tree = git.find_tree(git.index().unwrap().write_tree().unwrap()).unwrap();
        let first = git
            .commit(Some("refs/heads/topic"), &sig, &sig, "topic", &tree, &[])
            .unwrap();
        let parent = git.find_commit(first).unwrap();
        git.commit(Some("refs/heads/main"), &sig, &sig, "main", &tree, &[&parent])
            .unwrap();
        git.set_head("refs/heads/main").unwrap();
        let repo = crate::repo::Repo::open(Some(dir.path())).unwrap();
        let policy = Policy::default();
        let operation = test_data::merged_inputs();
        let base = repo.ref_target("refs/heads/main");
        let outcome =
            crate::ops::assemble::observe(&repo, &operation, None, base, T0, &crate::ops::progress::Silent)
                .unwrap();
        let (_, review) = crate::ops::assemble::limits(&policy, &operation, &outcome).unwrap();
        let alice = crate::plan::model::Party {
            principal: Some("alice".into()),
            key: Some("SHA256:a".into()),
        };
        let plan = crate::ops::assemble::assemble(crate::ops::assemble::Parts {
            repository: "r".into(),
            operation,
            outcome,
            planner: alice.clone(),
            executor: alice,
            review,
            policy: &policy,
            policy_source: test_data::plan(vec![], "").policy_source,
            policy_hash: policy.hash().unwrap(),
            created_at: T0,
            expiry: std::time::Duration::from_secs(3600),
            nonce: "0".repeat(32),
        })
        .unwrap();
        (dir, repo, plan)
    }

    fn recheck(repo: &crate::repo::Repo, plan: &Plan) -> Result<Vec<Drift>> {
        let Operation::StaleBranches(inputs) = &plan.operation else {
            unreachable!("a branch plan")
        };
        recheck_branches(repo, inputs, plan, None, T0)
    }

    #[test]
    fn a_repository_as_planned_has_no_drift_and_a_moved_branch_is_named() {
        let (dir, repo, plan) = merged_topic();
        assert_eq!(plan.affected.len(), 1, "{:?}", plan.skipped);
        assert!(recheck(&repo, &plan).unwrap().is_empty());
        // topic moves to main's commit: still merged, but not the commit that was approved.
        let git = git2::Repository::open(dir.path()).unwrap();
        let main = git.refname_to_id("refs/heads/main").unwrap();
        git.reference("refs/heads/topic", main, true, "moved").unwrap();
        let drifts = recheck(&repo, &plan).unwrap();
        assert!(!drifts.is_empty());
        assert!(
            drifts.iter().all(|d| d.refname == "refs/heads/topic"),
            "{drifts:?}"
        );
        assert_eq!(drift_error(&drifts).exit_code(), 10);
    }

    #[test]
    fn a_base_that_no_longer_exists_is_drift() {
        let (dir, repo, plan) = merged_topic();
        let git = git2::Repository::open(dir.path()).unwrap();
        git.set_head("refs/heads/topic").unwrap();
        git.find_reference("refs/heads/main").unwrap().delete().unwrap();
        let e = recheck(&repo, &plan).unwrap_err();
        assert_eq!(e.kind, Kind::Drift);
        assert_eq!(e.message, "the base refs/heads/main no longer exists");
    }
}
