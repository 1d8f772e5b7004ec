//! Assembling a plan from an observation, the decisions `guardctl plan` makes between its
//! arguments and the signature: who planned it and who may apply it, what the policy allows it
//! to affect and which review groups it needs, and the plan itself with its derived parts.
//! `observe` reads the repository (through `&Repo`); everything else is pure: no files, no
//! clock but the times given.
//!
//! Not here: turning arguments into an operation's inputs and resolving its base or remote
//! (`engine::plan`), signing (`planfile::sign`), the view (`render::view`).

use super::stale_branches::{self, Outcome};
use super::{progress::Progress, tags};
use crate::error::{Error, Kind, Result};
use crate::plan::derive;
use crate::plan::hash::plan_hash;
use crate::plan::model::{
    BACKUP_NAMESPACE, BeforeImage, FORMAT_VERSION, Operation, Party, Plan, PolicySource,
    RemoteBranchesInputs, ReviewGroup,
};
use crate::policy::Policy;
use crate::repo::{RemoteRefs, Repo};
use crate::text::safe;
use time::OffsetDateTime;

/// The principal the planner's key speaks for in `guardctl-plan`: `None` when it speaks for
/// none (the plan can be shown but never applied: the caller warns); several is an error (a
/// plan names one planner).
pub fn planner(principals: &[String], key_id: &str) -> Result<Option<String>> {
    match principals {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        many => Err(Error::usage(format!(
            "key {key_id} maps to several principals: {}",
            many.join(", ")
        ))
        .with_hint("give each principal its own key in the allowed-signers file")),
    }
}

/// Who may apply the plan: the principal asked for (bound to the planner's key only when it
/// is the planner), else the planner with their key.
pub fn executor(requested: Option<String>, planner: Option<&str>, key_id: &str) -> Party {
    match requested {
        Some(e) if Some(e.as_str()) == planner => Party {
            principal: Some(e),
            key: Some(key_id.to_string()),
        },
        Some(e) => Party {
            principal: Some(e),
            key: None,
        },
        None => Party {
            principal: planner.map(String::from),
            key: Some(key_id.to_string()),
        },
    }
}

/// The policy's `executors`: a plan naming an executor it does not allow is not written.
pub fn check_executor(policy: &Policy, executor: &Party) -> Result<()> {
    match &executor.principal {
        Some(e) if !policy.may_execute(e) => Err(Error::new(
            Kind::Policy,
            format!(
                "the policy does not allow {} as an executor (allowed: members of {})",
                safe(e),
                policy.executors.join(", ")
            ),
        )
        .with_hint("name an allowed principal with --executor")),
        _ => Ok(()),
    }
}

/// Observe what `operation` would change: read-only, through `&Repo`. Every kind answers
/// (no wildcard): a new kind must say how it is observed.
pub fn observe(
    repo: &Repo,
    operation: &Operation,
    remote_refs: Option<&RemoteRefs>,
    base_oid: Option<crate::repo::Oid>,
    now: OffsetDateTime,
    progress: &dyn Progress,
) -> Result<Outcome> {
    match operation {
        Operation::Tags(inputs) => tags::run(repo, inputs, remote_refs.into(), now),
        Operation::Exec(_) => Ok(Outcome::default()),
        Operation::StaleBranches(selection)
        | Operation::RemoteBranches(RemoteBranchesInputs { selection, .. }) => {
            let base_oid = base_oid.ok_or_else(|| Error::internal("a branch operation without a base"))?;
            let mut outcome =
                stale_branches::run(repo, selection, remote_refs.into(), base_oid, now, progress)?;
            stale_branches::fill_people_not_in_base(repo, base_oid, &mut outcome.affected)?;
            Ok(outcome)
        }
    }
}

/// What the policy allows a plan to affect, and the review groups it routes it into. Returns
/// how many resources it affects (for an exec plan, the ids its preview listed: its
/// manifest) and the groups. Refused (`policy`, no plan written): more than `max_affected`,
/// or a manifest listing a protected id.
pub fn limits(
    policy: &Policy,
    operation: &Operation,
    outcome: &Outcome,
) -> Result<(usize, Vec<ReviewGroup>)> {
    let manifest = crate::plan::manifest::of(operation);
    let count = manifest.as_ref().map_or(outcome.affected.len(), Vec::len);
    if let Some(max) = policy.max_affected
        && count as u64 > max
    {
        return Err(Error::new(
            Kind::Policy,
            format!("the plan would affect {count} resources; the policy allows at most {max} per plan"),
        )
        .with_details(serde_json::json!({"affected": count, "max_affected": max}))
        .with_hint("narrow the selection (--match, --exclude, --older-than) and plan in parts"));
    }
    if let Some(ids) = &manifest
        && let Some(id) =
            crate::policy::route::protected_id(policy, ids).map_err(|e| Error::new(Kind::Policy, e))?
    {
        return Err(Error::new(
            Kind::Policy,
            format!(
                "the preview lists {}, which the policy protects; no plan was written",
                safe(id)
            ),
        )
        .with_details(serde_json::json!({"protected": id}))
        .with_hint("leave protected resources out of what the command does (and of its preview)"));
    }
    let review = match &manifest {
        Some(ids) => crate::policy::route::review_ids(policy, ids),
        None => crate::policy::route::review(policy, &outcome.affected),
    }
    .map_err(|e| Error::new(Kind::Policy, e))?;
    Ok((count, review))
}

/// Everything a plan is made of, decided.
pub struct Parts<'a> {
    /// The identity the plan is bound to: this clone's, or a remote's URL.
    pub repository: String,
    pub operation: Operation,
    pub outcome: Outcome,
    pub planner: Party,
    pub executor: Party,
    pub review: Vec<ReviewGroup>,
    /// The policy in force, where it came from, and its hash.
    pub policy: &'a Policy,
    pub policy_source: PolicySource,
    pub policy_hash: String,
    /// When the plan is written (its lifetime starts then) and how long it lives.
    pub created_at: OffsetDateTime,
    pub expiry: std::time::Duration,
    /// 16 random bytes, hex: two plans of the same observation are two plans.
    pub nonce: String,
}

/// The plan, with its hash and derived parts (summary, diff, side effects, risk).
pub fn assemble(p: Parts) -> Result<Plan> {
    let affected = &p.outcome.affected;
    Ok(Plan {
        format_version: FORMAT_VERSION,
        plan_hash: plan_hash(&p.repository, &p.operation, &p.policy_hash, affected)
            .map_err(|e| Error::internal("cannot hash the plan").caused_by(e))?,
        created_at: p.created_at,
        expires_at: p.created_at + p.expiry,
        planner: p.planner,
        executor: p.executor,
        repository: p.repository,
        nonce: p.nonce,
        summary: derive::summary(&p.operation, affected),
        diff: derive::diff(affected),
        side_effects: derive::side_effects(&p.operation, affected),
        risk: derive::risk(&p.operation, affected, p.policy.bulk.threshold),
        review: p.review,
        policy_source: p.policy_source,
        before_image: BeforeImage {
            namespace: BACKUP_NAMESPACE.into(),
            retention_days: p.policy.retention_days,
        },
        operation: p.operation,
        affected: p.outcome.affected,
        skipped: p.outcome.skipped,
        policy_hash: p.policy_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::{PolicySourceKind, test_data};
    use time::macros::datetime;

    fn outcome(n: usize) -> Outcome {
        Outcome {
            affected: (0..n).map(|i| test_data::branch(&format!("b{i}"), 0)).collect(),
            skipped: vec![],
        }
    }

    #[test]
    fn the_planner_is_the_one_principal_of_the_key() {
        assert_eq!(planner(&[], "SHA256:k").unwrap(), None);
        assert_eq!(
            planner(&["alice".into()], "SHA256:k").unwrap().as_deref(),
            Some("alice")
        );
        let e = planner(&["alice".into(), "al".into()], "SHA256:k").unwrap_err();
        assert_eq!(e.kind, Kind::Usage);
        assert_eq!(e.message, "key SHA256:k maps to several principals: alice, al");
    }

    #[test]
    fn the_executor_defaults_to_the_planner_and_is_key_bound_only_as_the_planner() {
        let party = |p: &Party| (p.principal.clone(), p.key.clone());
        let k = Some("SHA256:k".to_string());
        assert_eq!(
            party(&executor(None, Some("alice"), "SHA256:k")),
            (Some("alice".into()), k.clone())
        );
        assert_eq!(
            party(&executor(Some("alice".into()), Some("alice"), "SHA256:k")),
            (Some("alice".into()), k.clone())
        );
        assert_eq!(
            party(&executor(Some("ci".into()), Some("alice"), "SHA256:k")),
            (Some("ci".into()), None)
        );
        assert_eq!(party(&executor(None, None, "SHA256:k")), (None, k));
    }

    #[test]
    fn an_executor_the_policy_does_not_allow_is_refused() {
        let mut policy = Policy::default();
        policy.groups.insert("ci".into(), vec!["ci@x".into()]);
        policy.executors = vec!["ci".into()];
        let as_ = |who: &str| executor(Some(who.into()), Some("alice"), "SHA256:k");
        assert!(check_executor(&policy, &as_("ci@x")).is_ok());
        let e = check_executor(&policy, &as_("alice")).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert_eq!(
            e.message,
            "the policy does not allow alice as an executor (allowed: members of ci)"
        );
    }

    #[test]
    fn more_than_max_affected_is_refused_and_the_rest_is_routed() {
        let policy = Policy {
            max_affected: Some(2),
            ..Policy::default()
        };
        let op = test_data::merged_inputs();
        let (count, review) = limits(&policy, &op, &outcome(2)).unwrap();
        assert_eq!(count, 2);
        assert_eq!(review.len(), 1);
        assert_eq!((review[0].name.as_str(), review[0].resources), ("default", 2));
        let e = limits(&policy, &op, &outcome(3)).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert_eq!(e.details["affected"], 3);
        assert_eq!(e.details["max_affected"], 2);
    }

    #[test]
    fn an_assembled_plan_is_valid_and_derives_its_parts() {
        let policy = Policy::default();
        let created = datetime!(2026-06-01 12:00 UTC);
        let op = test_data::merged_inputs();
        let out = outcome(2);
        let (_, review) = limits(&policy, &op, &out).unwrap();
        let alice = executor(None, Some("alice"), "SHA256:k");
        let plan = assemble(Parts {
            repository: "r".into(),
            operation: op,
            outcome: out,
            planner: alice.clone(),
            executor: alice,
            review,
            policy: &policy,
            policy_source: PolicySource {
                kind: PolicySourceKind::BuiltIn,
                location: None,
            },
            policy_hash: policy.hash().unwrap(),
            created_at: created,
            expiry: std::time::Duration::from_secs(3600),
            nonce: "0".repeat(32),
        })
        .unwrap();
        assert_eq!(plan.expires_at, datetime!(2026-06-01 13:00 UTC));
        assert_eq!(plan.affected.len(), 2);
        assert_eq!(plan.before_image.retention_days, policy.retention_days);
        // What `plan` derives is what every reader re-checks.
        let again = test_data::plan(plan.affected.clone(), &plan.policy_hash);
        assert_eq!(plan.plan_hash, again.plan_hash);
        assert_eq!(plan.summary, again.summary);
        crate::plan::validate::check(&plan, |_| true).unwrap();
    }
}
