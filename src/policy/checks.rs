//! The gate's checks, pure, in the contract's order: integrity, expiry, principal, approvals,
//! policy. Drift needs the repository and is checked by the caller afterwards (`gate.rs`).
//!
//! Approvals are counted against the review groups recorded in the plan (what the approvers
//! saw); the policy step then recomputes those groups from the policy in force and refuses
//! when anything differs, so a planner cannot weaken the routing of their own plan.

use super::Policy;
use crate::plan::approval::{Approval, Decision};
use crate::plan::model::{Plan, ReviewGroup};
use serde::Serialize;
use time::OffsetDateTime;

/// An approval or rejection whose envelope signature verified, with what the allowed-signers
/// file says about its key.
#[derive(Debug, Clone)]
pub struct CheckedApproval {
    pub approval: Approval,
    pub signer_fingerprint: String,
    /// Principals the signing key speaks for in `guardctl-approval` at the approval's time
    /// and now.
    pub signer_principals: Vec<String>,
    /// `sha256:` of the payload bytes: what a withdrawal names.
    pub id: String,
}

/// Why an approval or rejection does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ignored {
    /// Bound to another plan id, plan hash or repository.
    OtherPlan,
    /// The key speaks for no such principal (or not for approvals, or not at that time).
    UnknownApprover,
    /// The payload names another key than the one that signed it.
    KeyMismatch,
    /// The planner approving their own plan, with whatever key.
    SelfApproval,
    /// Adds nothing: the principal is already counted in every group it could count for.
    Duplicate,
    /// Dated before the plan, after its expiry, or in the future.
    OutOfTime,
    /// The principal may approve none of the review groups the approval covers.
    NotEligible,
    /// A rejection its own author withdrew (with a signed withdrawal naming it).
    Withdrawn,
}

impl Ignored {
    pub fn describe(self) -> &'static str {
        match self {
            Ignored::OtherPlan => "approves another plan",
            Ignored::UnknownApprover => "key not allowed to approve as that principal",
            Ignored::KeyMismatch => "names another key than the one that signed it",
            Ignored::SelfApproval => "the planner cannot approve their own plan",
            Ignored::Duplicate => "already counted",
            Ignored::OutOfTime => "dated outside the plan's lifetime",
            Ignored::NotEligible => "not among the approvers of the groups it covers",
            Ignored::Withdrawn => "rejection withdrawn by its author",
        }
    }
}

/// One review group's standing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupStatus {
    pub name: String,
    pub required: u32,
    pub approved_by: Vec<String>,
    /// Approvals still needed.
    pub missing: u32,
    /// Who may approve; empty = any known principal other than the planner.
    pub approvers: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ApprovalReport {
    pub groups: Vec<GroupStatus>,
    /// Distinct principals counted in at least one group.
    pub approved_by: Vec<String>,
    pub rejected_by: Vec<String>,
    pub ignored: Vec<(String, Ignored)>,
    /// What each counted approval or standing rejection said (`--comment`), in order: a veto
    /// without its reason leaves the planner guessing.
    pub comments: Vec<DecisionComment>,
}

/// A counted decision's comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionComment {
    pub principal: String,
    /// `approve` or `reject`.
    pub decision: &'static str,
    pub comment: String,
}

impl DecisionComment {
    fn of(a: &Approval) -> Option<Self> {
        let decision = match a.decision {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
            Decision::Withdraw => return None,
        };
        a.comment
            .as_ref()
            .filter(|c| !c.trim().is_empty())
            .map(|c| DecisionComment {
                principal: a.principal.clone(),
                decision,
                comment: c.clone(),
            })
    }
}

impl ApprovalReport {
    pub fn satisfied(&self) -> bool {
        self.rejected_by.is_empty() && self.unmet().next().is_none()
    }

    pub fn unmet(&self) -> impl Iterator<Item = &GroupStatus> {
        self.groups.iter().filter(|g| g.missing > 0)
    }
}

/// Count approvals per review group. A valid approval counts in every group it covers (all,
/// or those named by `approve --group`) whose approvers include its principal; any valid
/// rejection vetoes the plan unless a valid withdrawal by the same principal names it.
pub fn evaluate_approvals(
    plan: &Plan,
    plan_id: &str,
    approvals: &[CheckedApproval],
    planner_keys: &[String],
    clock_skew_secs: u64,
    now: OffsetDateTime,
) -> ApprovalReport {
    let skew = time::Duration::seconds(clock_skew_secs as i64);
    let mut report = ApprovalReport {
        groups: plan.review.iter().map(status).collect(),
        ..Default::default()
    };
    let invalid = |c: &CheckedApproval| {
        let a = &c.approval;
        if a.plan_id != plan_id || a.plan_hash != plan.plan_hash || a.repository != plan.repository {
            Some(Ignored::OtherPlan)
        } else if a.key != c.signer_fingerprint {
            Some(Ignored::KeyMismatch)
        } else if !c.signer_principals.contains(&a.principal) {
            Some(Ignored::UnknownApprover)
        } else if a.created_at < plan.created_at - skew
            || a.created_at >= plan.expires_at
            || a.created_at > now + skew
        {
            Some(Ignored::OutOfTime)
        } else if a.decision == Decision::Approve && by_planner(plan, c, planner_keys) {
            Some(Ignored::SelfApproval)
        } else {
            None
        }
    };
    // (principal, rejection id) lifted by a valid withdrawal of that principal.
    let withdrawn: Vec<(&str, &str)> = approvals
        .iter()
        .filter(|c| c.approval.decision == Decision::Withdraw && invalid(c).is_none())
        .flat_map(|c| {
            c.approval
                .withdraws
                .iter()
                .map(|id| (c.approval.principal.as_str(), id.as_str()))
        })
        .collect();
    // One key is one person, whatever principals a file lists it under: its second approval
    // under another name counts nothing.
    let mut counted_key: std::collections::HashMap<&str, &str> = Default::default();
    for c in approvals {
        let a = &c.approval;
        if let Some(why) = invalid(c) {
            report.ignored.push((a.principal.clone(), why));
            continue;
        }
        if a.decision == Decision::Withdraw {
            continue;
        }
        if a.decision == Decision::Reject && withdrawn.contains(&(a.principal.as_str(), c.id.as_str())) {
            report.ignored.push((a.principal.clone(), Ignored::Withdrawn));
            continue;
        }
        if a.decision == Decision::Reject {
            if report.rejected_by.contains(&a.principal) {
                report.ignored.push((a.principal.clone(), Ignored::Duplicate));
            } else {
                report.rejected_by.push(a.principal.clone());
            }
            report.comments.extend(DecisionComment::of(a));
            continue;
        }
        if counted_key
            .get(c.signer_fingerprint.as_str())
            .is_some_and(|p| *p != a.principal)
        {
            report.ignored.push((a.principal.clone(), Ignored::Duplicate));
            continue;
        }
        let (mut eligible, mut added) = (false, false);
        for (g, s) in plan.review.iter().zip(report.groups.iter_mut()) {
            let covered = a.groups.is_empty() || a.groups.contains(&g.name);
            let may = g.approvers.is_empty() || g.approvers.contains(&a.principal);
            if !(covered && may) {
                continue;
            }
            eligible = true;
            if !s.approved_by.contains(&a.principal) {
                s.approved_by.push(a.principal.clone());
                s.missing = s.missing.saturating_sub(1);
                added = true;
            }
        }
        if !eligible {
            report.ignored.push((a.principal.clone(), Ignored::NotEligible));
        } else if !added {
            report.ignored.push((a.principal.clone(), Ignored::Duplicate));
        } else if !report.approved_by.contains(&a.principal) {
            report.approved_by.push(a.principal.clone());
        }
        if added {
            report.comments.extend(DecisionComment::of(a));
        }
        if eligible {
            counted_key.insert(&c.signer_fingerprint, &a.principal);
        }
    }
    report
}

/// Self-approval: signed with the plan's own key (under whatever principal), with any key
/// listed for the planner's principal, or as (or by a key that may speak for) a principal
/// equal to the planner's ignoring ASCII case.
fn by_planner(plan: &Plan, c: &CheckedApproval, planner_keys: &[String]) -> bool {
    let same = |p: &String| {
        plan.planner
            .principal
            .as_ref()
            .is_some_and(|planner| planner.eq_ignore_ascii_case(p))
    };
    plan.planner.key.as_ref() == Some(&c.signer_fingerprint)
        || planner_keys.contains(&c.signer_fingerprint)
        || same(&c.approval.principal)
        || c.signer_principals.iter().any(same)
}

fn status(g: &ReviewGroup) -> GroupStatus {
    GroupStatus {
        name: g.name.clone(),
        required: g.required,
        approved_by: Vec::new(),
        missing: g.required,
        approvers: g.approvers.clone(),
    }
}

/// A refusal by one of the gate's checks.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// Integrity: the planner's principal is not backed by the allowed-signers file.
    PlannerUnconfirmed {
        claimed: Option<String>,
    },
    /// Integrity: the plan claims to be made in the future.
    FromTheFuture,
    Expired {
        expires_at: OffsetDateTime,
    },
    WrongPrincipal {
        executor: Option<String>,
        applying: Vec<String>,
    },
    Unapproved(ApprovalReport),
    PolicyChanged {
        planned: String,
        now: String,
    },
    /// The policy in force forbids the plan (it does not follow its own policy's rules).
    Forbidden(String),
}

pub struct GateInput<'a> {
    pub plan: &'a Plan,
    pub plan_id: &'a str,
    /// Principals the plan's signing key speaks for in `guardctl-plan` at `created_at` and now.
    pub planner_principals: &'a [String],
    /// Fingerprints of every key the allowed-signers file lists for the planner's principal:
    /// an approval signed by one of them is self-approval.
    pub planner_keys: &'a [String],
    /// Principals the applying key speaks for in `guardctl-apply` now; `None` when only
    /// verifying on behalf of nobody in particular (then the executor check is skipped).
    pub applying_principals: Option<&'a [String]>,
    pub approvals: &'a [CheckedApproval],
    /// The policy in force now.
    pub policy: &'a Policy,
    /// Its hash, computed once where it was read.
    pub policy_hash: &'a str,
    pub now: OffsetDateTime,
    /// The planner's other live plans this clone has seen ([`super::across`]): when they
    /// make the plan bulk, its approvals must also satisfy the bulk group.
    pub part_of: Option<&'a super::across::PartOf>,
}

/// Every check but drift, in the contract's order. Returns the approval report on success.
pub fn gate(input: GateInput) -> Result<ApprovalReport, Refusal> {
    let plan = input.plan;
    let skew = input.policy.clock_skew_secs;
    match &plan.planner.principal {
        Some(p) if input.planner_principals.contains(p) => {}
        claimed => {
            return Err(Refusal::PlannerUnconfirmed {
                claimed: claimed.clone(),
            });
        }
    }
    if (plan.created_at - input.now).whole_seconds() > skew as i64 {
        return Err(Refusal::FromTheFuture);
    }
    if input.now >= plan.expires_at {
        return Err(Refusal::Expired {
            expires_at: plan.expires_at,
        });
    }
    if let Some(applying) = input.applying_principals {
        match &plan.executor.principal {
            Some(e) if applying.contains(e) => {}
            executor => {
                return Err(Refusal::WrongPrincipal {
                    executor: executor.clone(),
                    applying: applying.to_vec(),
                });
            }
        }
    }
    let in_review = super::across::in_review(plan, input.part_of);
    let report = evaluate_approvals(
        in_review.as_ref().unwrap_or(plan),
        input.plan_id,
        input.approvals,
        input.planner_keys,
        skew,
        input.now,
    );
    // A plan that changes nothing needs no one's approval (there is nothing to guard), but a
    // veto still stands.
    if !report.rejected_by.is_empty() || (!changes_nothing(plan) && !report.satisfied()) {
        return Err(Refusal::Unapproved(report));
    }
    if plan.policy_hash != input.policy_hash {
        return Err(Refusal::PolicyChanged {
            planned: plan.policy_hash.clone(),
            now: input.policy_hash.to_string(),
        });
    }
    conforms(plan, input.policy).map_err(Refusal::Forbidden)?;
    Ok(report)
}

/// Whether applying the plan can change nothing: an operation on refs that matched no ref.
/// Never an exec plan: its command runs whatever its manifest lists. Drift re-derives the
/// plan at apply, so a plan that matched nothing cannot delete what appeared since.
pub fn changes_nothing(plan: &Plan) -> bool {
    use crate::plan::model::Operation;
    match plan.operation {
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
            plan.affected.is_empty()
        }
        Operation::Exec(_) => false,
    }
}

/// Whether a plan follows the policy's rules: what `plan` enforces when writing it, checked
/// again because the planner signs the plan and could have written anything.
pub fn conforms(plan: &Plan, policy: &Policy) -> Result<(), String> {
    // An exec plan's resources: the ids its (signed, re-checked) preview output lists.
    let manifest = crate::plan::manifest::of(&plan.operation);
    let count = manifest.as_ref().map_or(plan.affected.len(), Vec::len);
    if let Some(max) = policy.max_affected
        && count as u64 > max
    {
        return Err(format!(
            "the plan affects {count} resources; the policy allows at most {max} per plan"
        ));
    }
    if let Some(e) = &plan.executor.principal
        && !policy.may_execute(e)
    {
        return Err(format!(
            "{e} may not be an executor: the policy allows members of {}",
            policy.executors.join(", ")
        ));
    }
    if (plan.expires_at - plan.created_at).whole_seconds() > policy.max_expiry_secs as i64 {
        return Err("the plan's lifetime exceeds the policy's maximum expiry".into());
    }
    if plan.before_image.retention_days < policy.retention_days {
        return Err(format!(
            "the plan keeps backups {} days; the policy requires {}",
            plan.before_image.retention_days, policy.retention_days
        ));
    }
    let protected = super::route::name_globs(&policy.protected)?;
    if let Some(a) = plan.affected.iter().find(|a| protected.is_match(a.name())) {
        return Err(format!("{} is protected by the policy", a.refname));
    }
    if let Some(ids) = &manifest
        && let Some(id) = super::route::protected_id(policy, ids)?
    {
        return Err(format!("{id} is protected by the policy"));
    }
    if plan.risk != crate::plan::derive::risk(&plan.operation, &plan.affected, policy.bulk.threshold) {
        return Err("the plan's risk is not the one the policy in force gives it".into());
    }
    let expected = match &manifest {
        Some(ids) => super::route::review_ids(policy, ids)?,
        None => super::route::review(policy, &plan.affected)?,
    };
    if plan.review != expected {
        return Err("the plan's review groups do not follow the policy in force".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::*;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);

    fn plan_under(policy: &Policy, affected: Vec<Resource>) -> Plan {
        Plan {
            // What the approvals below are bound to.
            plan_hash: "sha256:h".into(),
            review: super::super::route::review(policy, &affected).unwrap(),
            ..test_data::plan(affected, &policy.hash().unwrap())
        }
    }

    /// A plan that deletes one branch (a plan that changes nothing needs no approval).
    fn plan() -> Plan {
        plan_under(&Policy::default(), vec![branch("feature/x", "dave@example.com")])
    }

    fn branch(name: &str, email: &str) -> Resource {
        test_data::by(name, email, 0)
    }

    fn approval(who: &str, key: &str, decision: Decision) -> CheckedApproval {
        CheckedApproval {
            approval: Approval {
                plan_id: "sha256:id".into(),
                plan_hash: "sha256:h".into(),
                repository: "r".into(),
                decision,
                principal: who.into(),
                key: key.into(),
                created_at: T0 + time::Duration::minutes(1),
                comment: None,
                groups: vec![],
                withdraws: vec![],
            },
            signer_fingerprint: key.into(),
            signer_principals: vec![who.into()],
            id: format!("sha256:{who}-{key}-{decision:?}"),
        }
    }

    fn scoped(who: &str, groups: &[&str]) -> CheckedApproval {
        let mut a = approval(who, &format!("SHA256:{who}"), Decision::Approve);
        a.approval.groups = groups.iter().map(|g| g.to_string()).collect();
        a
    }

    fn run_with(
        p: &Plan,
        policy: &Policy,
        approvals: &[CheckedApproval],
        applying: &[String],
        now: OffsetDateTime,
    ) -> Result<ApprovalReport, Refusal> {
        gate(GateInput {
            plan: p,
            plan_id: "sha256:id",
            planner_principals: &["alice".to_string()],
            planner_keys: &["SHA256:a".to_string(), "SHA256:a3".to_string()],
            applying_principals: Some(applying),
            approvals,
            policy,
            policy_hash: &policy.hash().unwrap(),
            now,
            part_of: None,
        })
    }

    fn run(
        p: &Plan,
        approvals: &[CheckedApproval],
        applying: &[String],
        now: OffsetDateTime,
    ) -> Result<ApprovalReport, Refusal> {
        run_with(p, &Policy::default(), approvals, applying, now)
    }

    fn alice() -> Vec<String> {
        vec!["alice".to_string()]
    }

    #[test]
    fn a_plan_that_changes_nothing_needs_no_approval_but_a_veto_still_stands() {
        let empty = plan_under(&Policy::default(), vec![]);
        assert!(changes_nothing(&empty));
        assert!(run(&empty, &[], &alice(), T0).is_ok());
        let veto = approval("bob", "SHA256:b", Decision::Reject);
        assert!(matches!(
            run(&empty, &[veto], &alice(), T0),
            Err(Refusal::Unapproved(_))
        ));
        assert!(matches!(
            run(&plan(), &[], &alice(), T0),
            Err(Refusal::Unapproved(_))
        ));
    }

    #[test]
    fn one_approval_by_another_principal_passes() {
        let r = run(
            &plan(),
            &[approval("bob", "SHA256:b", Decision::Approve)],
            &alice(),
            T0,
        )
        .unwrap();
        assert_eq!(r.approved_by, vec!["bob"]);
    }

    /// An exec plan whose preview listed `lines`, with the review groups the planner chose.
    fn exec_plan(policy: &Policy, lines: &str, review: Vec<ReviewGroup>) -> Plan {
        let mut p = plan_under(policy, vec![]);
        p.operation = Operation::Exec(ExecInputs {
            remote: None,
            command: vec!["true".into()],
            preview: "cat list".into(),
            before_image: None,
            workdir: ".".into(),
            env: vec![],
            files: vec![],
            preview_output: PreviewOutput {
                sha256: String::new(),
                text: lines.into(),
            },
            pin: vec![],
            verify: None,
            verify_prints: None,
            pinned: vec![],
            preview_unsandboxed: false,
            trial: false,
            path_dirs: vec![],
            content: Some(vec![]),
        });
        p.risk = crate::plan::derive::risk(&p.operation, &[], policy.bulk.threshold);
        p.review = review;
        p
    }

    #[test]
    fn an_exec_plan_is_held_to_its_manifest_whatever_the_planner_wrote() {
        let mut policy = Policy::default();
        policy.bulk.threshold = 2;
        policy.bulk.approvals = Some(crate::policy::Requirement {
            required: 1,
            from: vec![],
        });
        let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let honest = super::super::route::review_ids(&policy, &ids).unwrap();
        assert!(conforms(&exec_plan(&policy, "a\nb\nc\n", honest.clone()), &policy).is_ok());
        // The bulk group left out by a planner who re-signed the payload.
        let forged: Vec<ReviewGroup> = honest.iter().filter(|g| g.name != "bulk").cloned().collect();
        assert!(conforms(&exec_plan(&policy, "a\nb\nc\n", forged), &policy).is_err());
        // A protected id, and a manifest above max_affected.
        let m = conforms(&exec_plan(&policy, "a\nmain\n", vec![]), &policy).unwrap_err();
        assert!(m.contains("main is protected"), "{m}");
        policy.max_affected = Some(2);
        let m = conforms(&exec_plan(&policy, "a\nb\nc\n", honest), &policy).unwrap_err();
        assert!(m.contains("affects 3 resources"), "{m}");
    }

    #[test]
    fn expired_exactly_at_expires_at() {
        let p = plan();
        let ok = [approval("bob", "SHA256:b", Decision::Approve)];
        assert!(run(&p, &ok, &alice(), p.expires_at - time::Duration::seconds(1)).is_ok());
        assert!(matches!(
            run(&p, &ok, &alice(), p.expires_at),
            Err(Refusal::Expired { .. })
        ));
    }

    #[test]
    fn self_approval_with_a_second_key_does_not_count() {
        let r = run(
            &plan(),
            &[approval("alice", "SHA256:a2", Decision::Approve)],
            &alice(),
            T0,
        );
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(rep.ignored, vec![("alice".to_string(), Ignored::SelfApproval)]);
    }

    #[test]
    fn self_approval_by_the_plans_key_a_planner_key_or_a_case_variant() {
        let cases = [
            // The plan's own key, listed under another principal.
            approval("carol", "SHA256:a", Decision::Approve),
            // Another key the allowed-signers file lists for the planner.
            approval("carol", "SHA256:a3", Decision::Approve),
            // The planner's principal in another case.
            approval("Alice", "SHA256:x", Decision::Approve),
        ];
        for a in cases {
            let r = run(&plan(), std::slice::from_ref(&a), &alice(), T0);
            let Err(Refusal::Unapproved(rep)) = r else {
                panic!("{r:?}")
            };
            assert_eq!(
                rep.ignored,
                vec![(a.approval.principal.clone(), Ignored::SelfApproval)]
            );
        }
        // A key that may also speak for the planner (e.g. a certificate for both).
        let mut both = approval("carol", "SHA256:c", Decision::Approve);
        both.signer_principals.push("ALICE".into());
        assert!(matches!(
            run(&plan(), &[both], &alice(), T0),
            Err(Refusal::Unapproved(_))
        ));
        // The planner may still veto their own plan.
        let veto = approval("alice", "SHA256:a", Decision::Reject);
        assert!(
            matches!(run(&plan(), &[veto], &alice(), T0), Err(Refusal::Unapproved(r)) if r.rejected_by == ["alice"])
        );
    }

    #[test]
    fn approvals_dated_before_the_plan_minus_skew_or_after_now_plus_skew_do_not_count() {
        let p = plan();
        let at = |offset_secs: i64| {
            let mut a = approval("bob", "SHA256:b", Decision::Approve);
            a.approval.created_at = T0 + time::Duration::seconds(offset_secs);
            a
        };
        // Within the skew of the plan's creation: counts (clocks differ between machines).
        assert!(run(&p, &[at(-300)], &alice(), T0).is_ok());
        for a in [at(-301), at(301)] {
            let r = run(&p, &[a], &alice(), T0);
            let Err(Refusal::Unapproved(rep)) = r else {
                panic!("{r:?}")
            };
            assert_eq!(rep.ignored, vec![("bob".to_string(), Ignored::OutOfTime)]);
        }
    }

    #[test]
    fn one_principal_with_two_keys_counts_once() {
        let mut policy = Policy::default();
        policy.approvals.required = 2;
        let p = plan_under(&policy, vec![branch("feature/x", "dave@example.com")]);
        let a = [
            approval("bob", "SHA256:b1", Decision::Approve),
            approval("bob", "SHA256:b2", Decision::Approve),
        ];
        let r = run_with(&p, &policy, &a, &alice(), T0);
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(rep.approved_by, vec!["bob"]);
        assert_eq!(rep.groups[0].missing, 1);
        assert_eq!(rep.ignored, vec![("bob".to_string(), Ignored::Duplicate)]);
    }

    #[test]
    fn rejection_vetoes_and_other_plans_unknown_keys_do_not_count() {
        let a = [
            approval("bob", "SHA256:b", Decision::Approve),
            approval("carol", "SHA256:c", Decision::Reject),
        ];
        assert!(matches!(
            run(&plan(), &a, &alice(), T0),
            Err(Refusal::Unapproved(_))
        ));
        let mut other = approval("bob", "SHA256:b", Decision::Approve);
        other.approval.plan_hash = "sha256:other".into();
        let mut unknown = approval("carol", "SHA256:c", Decision::Approve);
        unknown.signer_principals.clear();
        let mut wrong_key = approval("dave", "SHA256:d", Decision::Approve);
        wrong_key.signer_fingerprint = "SHA256:x".into();
        let r = run(&plan(), &[other, unknown, wrong_key], &alice(), T0);
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        let why: Vec<Ignored> = rep.ignored.iter().map(|(_, w)| *w).collect();
        assert_eq!(
            why,
            vec![Ignored::OtherPlan, Ignored::UnknownApprover, Ignored::KeyMismatch]
        );
    }

    #[test]
    fn a_rejection_is_lifted_only_by_a_withdrawal_of_its_own_author_naming_it() {
        let ok = approval("bob", "SHA256:b", Decision::Approve);
        let veto = approval("carol", "SHA256:c", Decision::Reject);
        let withdrawal = |who: &str, names: &str| {
            let mut w = approval(who, &format!("SHA256:{who}"), Decision::Withdraw);
            w.approval.withdraws = vec![names.to_string()];
            w
        };
        let lifted = run(
            &plan(),
            &[ok.clone(), veto.clone(), withdrawal("carol", &veto.id)],
            &alice(),
            T0,
        )
        .unwrap();
        assert_eq!(lifted.approved_by, vec!["bob"]);
        assert_eq!(lifted.ignored, vec![("carol".to_string(), Ignored::Withdrawn)]);
        // Someone else's withdrawal, or one naming another rejection, lifts nothing; nor
        // does a withdrawal count as an approval.
        for w in [withdrawal("bob", &veto.id), withdrawal("carol", "sha256:other")] {
            let r = run(&plan(), &[ok.clone(), veto.clone(), w], &alice(), T0);
            assert!(
                matches!(&r, Err(Refusal::Unapproved(rep)) if rep.rejected_by == ["carol"]),
                "{r:?}"
            );
        }
        let r = run(&plan(), &[withdrawal("carol", &veto.id)], &alice(), T0);
        assert!(
            matches!(&r, Err(Refusal::Unapproved(rep)) if rep.approved_by.is_empty()),
            "{r:?}"
        );
    }

    fn routed() -> (Policy, Plan) {
        let policy = crate::policy::file::parse(
            r#"
version = 1
[groups]
a = ["ann"]
b = ["ben"]
c = ["ben", "cat"]
[[route]]
name = "A"
authors = ["*@a"]
required = 1
from = ["a"]
[[route]]
name = "B"
authors = ["*@b"]
required = 1
from = ["b"]
[[route]]
name = "C"
authors = ["*@c"]
required = 1
from = ["c"]
"#,
        )
        .unwrap();
        let affected = vec![branch("x", "dev@a"), branch("y", "dev@b"), branch("z", "dev@c")];
        let p = plan_under(&policy, affected);
        (policy, p)
    }

    #[test]
    fn routed_plan_needs_every_group_and_one_approval_may_cover_several() {
        let (policy, p) = routed();
        let ok = run_with(
            &p,
            &policy,
            &[scoped("ann", &[]), scoped("ben", &[])],
            &alice(),
            T0,
        )
        .unwrap();
        assert_eq!(ok.approved_by, vec!["ann", "ben"]);
        assert!(ok.groups.iter().all(|g| g.missing == 0));

        let r = run_with(&p, &policy, &[scoped("ben", &["B"])], &alice(), T0);
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        let unmet: Vec<&str> = rep.unmet().map(|g| g.name.as_str()).collect();
        assert_eq!(unmet, vec!["A", "C"]);
    }

    #[test]
    fn approvals_outside_their_groups_do_not_count() {
        let (policy, p) = routed();
        // cat may approve C only; asking to cover A does not make her eligible for it.
        let r = run_with(
            &p,
            &policy,
            &[scoped("cat", &["A"]), scoped("dan", &[])],
            &alice(),
            T0,
        );
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(
            rep.ignored,
            vec![
                ("cat".to_string(), Ignored::NotEligible),
                ("dan".to_string(), Ignored::NotEligible)
            ]
        );
    }

    #[test]
    fn forged_routing_or_rules_are_forbidden_by_the_policy_step() {
        let (policy, mut p) = routed();
        let all = [scoped("ann", &[]), scoped("ben", &[])];
        p.review.retain(|g| g.name == "A");
        assert!(matches!(
            run_with(&p, &policy, &all, &alice(), T0),
            Err(Refusal::Forbidden(_))
        ));
        let mut p = plan_under(&Policy::default(), vec![branch("main", "x@y")]);
        assert!(matches!(
            run(&p, &[approval("bob", "SHA256:b", Decision::Approve)], &alice(), T0),
            Err(Refusal::Forbidden(m)) if m.contains("protected")
        ));
        p = plan();
        p.expires_at = T0 + time::Duration::days(30);
        assert!(matches!(
            run(
                &p,
                &[approval("bob", "SHA256:b", Decision::Approve)],
                &alice(),
                T0
            ),
            Err(Refusal::Forbidden(_))
        ));
    }

    #[test]
    fn checks_run_in_the_contract_order() {
        // Expired and wrong principal and unapproved: expiry is reported first.
        let p = plan();
        let bob = vec!["bob".to_string()];
        assert!(matches!(
            run(&p, &[], &bob, p.expires_at),
            Err(Refusal::Expired { .. })
        ));
        // Wrong principal and unapproved: principal first.
        assert!(matches!(
            run(&p, &[], &bob, T0),
            Err(Refusal::WrongPrincipal { .. })
        ));
        // Unapproved and policy changed: approvals first.
        let mut changed = plan();
        changed.policy_hash = "sha256:old".into();
        assert!(matches!(
            run(&changed, &[], &alice(), T0),
            Err(Refusal::Unapproved(_))
        ));
        let ok = [approval("bob", "SHA256:b", Decision::Approve)];
        assert!(matches!(
            run(&changed, &ok, &alice(), T0),
            Err(Refusal::PolicyChanged { .. })
        ));
    }

    #[test]
    fn unconfirmed_planner_and_future_plans_fail_integrity() {
        let mut p = plan();
        p.planner.principal = None;
        assert!(matches!(
            run(&p, &[], &alice(), T0),
            Err(Refusal::PlannerUnconfirmed { .. })
        ));
        let mut p = plan();
        p.created_at = T0 + time::Duration::hours(1);
        p.expires_at = T0 + time::Duration::hours(2);
        assert!(matches!(run(&p, &[], &alice(), T0), Err(Refusal::FromTheFuture)));
    }
}
