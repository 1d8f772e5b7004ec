//! The policy in force, and the gate's pure checks against it. Until policy files exist it is
//! the built-in default below; its hash goes into every plan so a later change of policy is
//! detectable.
//!
//! Pure data and pure checks, in the contract's order (integrity, expiry, principal,
//! approvals, policy): no I/O here. Drift needs the repository and lives in `gate.rs`.

use crate::plan::approval::{Approval, Decision};
use crate::plan::model::Plan;
use serde::Serialize;
use std::time::Duration;
use time::OffsetDateTime;

#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    /// Branch patterns never planned, on top of `--protect`.
    pub protected: Vec<String>,
    pub default_expiry_secs: u64,
    pub max_expiry_secs: u64,
    /// Approvals from distinct principals other than the planner.
    pub required_approvals: u32,
    /// How long backups of deleted branches are kept.
    pub retention_days: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            protected: ["main", "master", "develop", "release/*"]
                .map(String::from)
                .to_vec(),
            default_expiry_secs: 15 * 60,
            max_expiry_secs: 7 * 86_400,
            required_approvals: 1,
            retention_days: 30,
        }
    }
}

impl Policy {
    pub fn hash(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        crate::plan::envelope::sha256_id(&bytes)
    }

    /// The expiry a plan gets: the requested one, or the default; never above the maximum.
    pub fn expiry(&self, requested: Option<Duration>) -> Result<Duration, String> {
        let want = requested.unwrap_or(Duration::from_secs(self.default_expiry_secs));
        if want.as_secs() > self.max_expiry_secs {
            return Err(format!(
                "--expires-in {} exceeds the policy maximum of {}",
                crate::duration::humanize(want.as_secs() as i64),
                crate::duration::humanize(self.max_expiry_secs as i64)
            ));
        }
        Ok(want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_defaults_and_is_bounded() {
        let p = Policy::default();
        assert_eq!(p.expiry(None), Ok(Duration::from_secs(900)));
        assert_eq!(
            p.expiry(Some(Duration::from_secs(3600))),
            Ok(Duration::from_secs(3600))
        );
        assert!(p.expiry(Some(Duration::from_secs(8 * 86_400))).is_err());
    }

    #[test]
    fn hash_is_stable_and_changes_with_content() {
        let p = Policy::default();
        assert_eq!(p.hash(), Policy::default().hash());
        let q = Policy {
            required_approvals: 2,
            ..Policy::default()
        };
        assert_ne!(p.hash(), q.hash());
    }
}

// ---------------------------------------------------------------------------------------
// The gate's checks, pure, in the contract's order: integrity, expiry, principal, approvals,
// policy. (Drift needs the repository and is checked by the caller afterwards.)
// ---------------------------------------------------------------------------------------

/// How far in the future a plan or approval timestamp may lie (clock skew between machines).
pub const CLOCK_SKEW_SECS: i64 = 300;

/// An approval or rejection whose envelope signature verified, with what the allowed-signers
/// file says about its key.
#[derive(Debug, Clone)]
pub struct CheckedApproval {
    pub approval: Approval,
    pub signer_fingerprint: String,
    /// Principals the signing key speaks for in `guardctl-approval` at the approval's time.
    pub signer_principals: Vec<String>,
}

/// Why an approval or rejection does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
    /// A second approval by a principal already counted.
    Duplicate,
    /// Dated before the plan, after its expiry, or in the future.
    OutOfTime,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ApprovalReport {
    pub required: u32,
    pub approved_by: Vec<String>,
    pub rejected_by: Vec<String>,
    pub ignored: Vec<(String, Ignored)>,
}

impl ApprovalReport {
    pub fn satisfied(&self) -> bool {
        self.rejected_by.is_empty() && self.approved_by.len() as u32 >= self.required
    }
}

pub fn evaluate_approvals(
    plan: &Plan,
    plan_id: &str,
    approvals: &[CheckedApproval],
    required: u32,
    now: OffsetDateTime,
) -> ApprovalReport {
    let mut report = ApprovalReport {
        required,
        ..Default::default()
    };
    for c in approvals {
        let a = &c.approval;
        let why = if a.plan_id != plan_id || a.plan_hash != plan.plan_hash || a.repository != plan.repository
        {
            Some(Ignored::OtherPlan)
        } else if a.key != c.signer_fingerprint {
            Some(Ignored::KeyMismatch)
        } else if !c.signer_principals.contains(&a.principal) {
            Some(Ignored::UnknownApprover)
        } else if a.created_at < plan.created_at
            || a.created_at >= plan.expires_at
            || (a.created_at - now).whole_seconds() > CLOCK_SKEW_SECS
        {
            Some(Ignored::OutOfTime)
        } else if a.decision == Decision::Approve && Some(&a.principal) == plan.planner.principal.as_ref() {
            Some(Ignored::SelfApproval)
        } else {
            None
        };
        if let Some(why) = why {
            report.ignored.push((a.principal.clone(), why));
            continue;
        }
        let list = match a.decision {
            Decision::Approve => &mut report.approved_by,
            Decision::Reject => &mut report.rejected_by,
        };
        if list.contains(&a.principal) {
            report.ignored.push((a.principal.clone(), Ignored::Duplicate));
        } else {
            list.push(a.principal.clone());
        }
    }
    report
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
}

pub struct GateInput<'a> {
    pub plan: &'a Plan,
    pub plan_id: &'a str,
    /// Principals the plan's signing key speaks for in `guardctl-plan` at `created_at`.
    pub planner_principals: &'a [String],
    /// Principals the applying key speaks for in `guardctl-apply` now; `None` when only
    /// verifying on behalf of nobody in particular (then the executor check is skipped).
    pub applying_principals: Option<&'a [String]>,
    pub approvals: &'a [CheckedApproval],
    pub policy: &'a Policy,
    pub now: OffsetDateTime,
}

/// Every check but drift, in the contract's order. Returns the approval report on success.
pub fn gate(input: GateInput) -> Result<ApprovalReport, Refusal> {
    let plan = input.plan;
    match &plan.planner.principal {
        Some(p) if input.planner_principals.contains(p) => {}
        claimed => {
            return Err(Refusal::PlannerUnconfirmed {
                claimed: claimed.clone(),
            });
        }
    }
    if (plan.created_at - input.now).whole_seconds() > CLOCK_SKEW_SECS {
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
    let report = evaluate_approvals(
        plan,
        input.plan_id,
        input.approvals,
        input.policy.required_approvals,
        input.now,
    );
    if !report.satisfied() {
        return Err(Refusal::Unapproved(report));
    }
    let now_hash = input.policy.hash();
    if plan.policy_hash != now_hash {
        return Err(Refusal::PolicyChanged {
            planned: plan.policy_hash.clone(),
            now: now_hash,
        });
    }
    Ok(report)
}

#[cfg(test)]
mod gate_tests {
    use super::*;
    use crate::plan::model::*;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);

    fn plan() -> Plan {
        Plan {
            format_version: 1,
            plan_hash: "sha256:h".into(),
            created_at: T0,
            expires_at: T0 + time::Duration::minutes(15),
            planner: Party {
                principal: Some("alice".into()),
                key: Some("SHA256:a".into()),
            },
            executor: Party {
                principal: Some("alice".into()),
                key: Some("SHA256:a".into()),
            },
            repository: "r".into(),
            operation: Operation::StaleBranches(StaleBranchesInputs {
                base: "refs/heads/main".into(),
                criteria: vec![Criterion::Merged],
                older_than_secs: None,
                include_unmerged: false,
                match_globs: vec![],
                exclude: vec![],
                protect: vec![],
            }),
            summary: String::new(),
            affected: vec![],
            skipped: vec![],
            diff: vec![],
            side_effects: vec![],
            before_image: BeforeImage {
                namespace: "refs/guardctl/backup".into(),
                retention_days: 30,
            },
            risk: Risk {
                level: RiskLevel::Low,
                reasons: vec![],
            },
            policy_hash: Policy::default().hash(),
        }
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
            },
            signer_fingerprint: key.into(),
            signer_principals: vec![who.into()],
        }
    }

    fn run(
        p: &Plan,
        approvals: &[CheckedApproval],
        applying: &[String],
        now: OffsetDateTime,
    ) -> Result<ApprovalReport, Refusal> {
        gate(GateInput {
            plan: p,
            plan_id: "sha256:id",
            planner_principals: &["alice".to_string()],
            applying_principals: Some(applying),
            approvals,
            policy: &Policy::default(),
            now,
        })
    }

    fn alice() -> Vec<String> {
        vec!["alice".to_string()]
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
    fn one_principal_with_two_keys_counts_once() {
        let mut p = plan();
        let policy = Policy {
            required_approvals: 2,
            ..Policy::default()
        };
        p.policy_hash = policy.hash();
        let a = [
            approval("bob", "SHA256:b1", Decision::Approve),
            approval("bob", "SHA256:b2", Decision::Approve),
        ];
        let r = gate(GateInput {
            plan: &p,
            plan_id: "sha256:id",
            planner_principals: &["alice".to_string()],
            applying_principals: Some(&alice()),
            approvals: &a,
            policy: &policy,
            now: T0,
        });
        let Err(Refusal::Unapproved(rep)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(rep.approved_by, vec!["bob"]);
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
