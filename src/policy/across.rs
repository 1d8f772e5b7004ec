//! Bulk across plans (`bulk.across_plans`, on by default): a planner who splits one large
//! deletion into several small plans keeps each under the bulk threshold, so the bulk
//! approvers would never see any of them. The bulk class therefore counts the planner's other
//! live plans in the same repository: when they total more resources than the threshold, each
//! of them also needs the bulk group, whatever its own size.
//!
//! "The planner's" is judged as self-approval is: a plan counts when its signing key is the
//! planner's or any key the trusted identities list for a name the planner goes by, or when
//! its key speaks for such a name (a certificate: each may be for a fresh key; `gate`
//! passes those keys in `planner_keys`).
//! "Live" means not expired, applied or not: a part applied a minute ago is still part of
//! the same deletion (counting only unapplied parts would let the planner apply one part at a
//! time); and a part applied here stays live for the policy's default plan lifetime after it
//! was applied, however soon the planner made it expire (`store::seen`). Which plans exist is
//! what this clone has seen (`store::seen`) and what is published on the team remote
//! (`gate::part_of`, by the same rule), so the count is a floor, never an invention: every plan
//! counted verified as a plan signed by that planner.

use super::Policy;
use crate::plan::model::{Plan, ReviewGroup, ReviewKind};
use serde::Serialize;
use time::OffsetDateTime;

/// A plan seen as one of several live plans by its planner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartOf {
    /// This plan and the planner's other live plans in the repository.
    pub plans: usize,
    /// The resources they affect together, each counted once.
    pub resources: u64,
    /// Whether every one of them is of this plan's operation kind (then the resources are
    /// all this plan's kind of resource: all branches, all tags).
    pub same_kind: bool,
    /// The other plans' ids (`sha256:<hex>`), sorted.
    pub others: Vec<String>,
    /// The bulk group this plan needs because of them; `None` when it is bulk on its own,
    /// the total is within the threshold, or the policy asks nothing more of bulk plans or
    /// counts plans one by one.
    pub group: Option<ReviewGroup>,
}

/// How many resources a plan affects: its affected refs, or the ids an exec plan's preview
/// lists.
pub fn resources(plan: &Plan) -> u64 {
    crate::plan::manifest::of(&plan.operation).map_or(plan.affected.len(), |ids| ids.len()) as u64
}

/// What a plan affects, as names comparable across its planner's plans: refnames (branch
/// and tag names differ by namespace), or an exec preview's ids kept apart from refnames (a
/// command's id is not the ref of the same name).
fn resource_names(plan: &Plan) -> Vec<String> {
    match crate::plan::manifest::of(&plan.operation) {
        Some(ids) => ids.into_iter().map(|id| format!("exec\0{id}")).collect(),
        None => plan.affected.iter().map(|a| a.refname.clone()).collect(),
    }
}

/// Where `plan` stands among `others` (plan id, plan, live until) — plans this clone has
/// seen, each verified — for the planner whose keys are `planner_keys`. `None` when none of them is a
/// live plan by the same planner for the same repository.
pub fn part_of(
    plan: &Plan,
    plan_id: &str,
    others: &[(&str, &Plan, OffsetDateTime)],
    planner_keys: &[String],
    policy: &Policy,
    now: OffsetDateTime,
) -> Option<PartOf> {
    let mut siblings: Vec<(&str, &Plan)> = others
        .iter()
        .filter(|(id, p, until)| {
            *id != plan_id
                && p.repository == plan.repository
                && now < *until
                && p.planner.key.as_ref().is_some_and(|k| planner_keys.contains(k))
        })
        .map(|(id, p, _)| (*id, *p))
        .collect();
    if siblings.is_empty() {
        return None;
    }
    siblings.sort_by(|a, b| a.0.cmp(b.0));
    siblings.dedup_by(|a, b| a.0 == b.0);
    // The resources they affect together, each once: a re-plan of the same branches (after
    // a rejection, a drift, an expiry) is not a second deletion of them.
    let total = std::iter::once(plan)
        .chain(siblings.iter().map(|(_, p)| *p))
        .flat_map(resource_names)
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    let bulk_alone = plan.review.iter().any(|g| g.kind == ReviewKind::Bulk);
    let group = match &policy.bulk.approvals {
        Some(req) if policy.bulk.across_plans && !bulk_alone && total > policy.bulk.threshold => {
            Some(ReviewGroup {
                name: "bulk".to_string(),
                kind: ReviewKind::Bulk,
                required: req.required,
                from: req.from.clone(),
                approvers: policy.members(&req.from),
                resources: resources(plan),
                refs: Vec::new(),
            })
        }
        _ => None,
    };
    let kind = std::mem::discriminant(&plan.operation);
    Some(PartOf {
        plans: siblings.len() + 1,
        resources: total,
        same_kind: siblings
            .iter()
            .all(|(_, p)| std::mem::discriminant(&p.operation) == kind),
        others: siblings.iter().map(|(id, _)| id.to_string()).collect(),
        group,
    })
}

/// The plan as it must be reviewed now: its own review groups, plus the bulk group when it
/// is part of several plans that together are bulk.
pub fn in_review(plan: &Plan, part_of: Option<&PartOf>) -> Option<Plan> {
    let group = part_of?.group.clone()?;
    let mut p = plan.clone();
    p.review.push(group);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::test_data;
    use crate::policy::Requirement;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-06-01 12:05 UTC);

    fn policy(threshold: u64) -> Policy {
        let mut p = Policy::default();
        p.bulk.threshold = threshold;
        p.groups.insert("release".into(), vec!["rel@x".into()]);
        p.bulk.approvals = Some(Requirement {
            required: 1,
            from: vec!["release".into()],
        });
        p
    }

    /// A plan of `n` branches no other plan_of plan names.
    fn plan_of(n: usize, key: &str, policy: &Policy) -> Plan {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let affected = (0..n)
            .map(|_| {
                let i = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                test_data::by(&format!("b{i}"), "carol@x", 0)
            })
            .collect::<Vec<_>>();
        let mut p = test_data::plan(affected, &policy.hash().unwrap());
        p.planner.key = Some(key.into());
        p.review = crate::policy::route::review(policy, &p.affected).unwrap();
        p
    }

    #[test]
    fn two_small_plans_by_one_planner_together_need_the_bulk_group() {
        let pol = policy(3);
        let (a, b) = (plan_of(2, "K1", &pol), plan_of(2, "K1", &pol));
        assert!(a.review.iter().all(|g| g.kind != ReviewKind::Bulk));
        let part = part_of(
            &a,
            "sha256:a",
            &[("sha256:b", &b, b.expires_at)],
            &["K1".into()],
            &pol,
            NOW,
        )
        .unwrap();
        assert_eq!((part.plans, part.resources), (2, 4));
        assert_eq!(part.others, vec!["sha256:b".to_string()]);
        let g = part.group.clone().unwrap();
        assert_eq!((g.name.as_str(), g.required, g.resources), ("bulk", 1, 2));
        assert_eq!(g.approvers, vec!["rel@x".to_string()]);
        let reviewed = in_review(&a, Some(&part)).unwrap();
        assert_eq!(reviewed.review.len(), a.review.len() + 1);
    }

    #[test]
    fn the_same_branches_in_two_plans_count_once() {
        let pol = policy(3);
        let a = plan_of(2, "K1", &pol);
        let again = a.clone();
        let keys = ["K1".to_string()];
        let part = part_of(
            &a,
            "sha256:a",
            &[("sha256:r", &again, again.expires_at)],
            &keys,
            &pol,
            NOW,
        );
        assert_eq!(part.map(|p| (p.plans, p.resources, p.group)), Some((2, 2, None)));
    }

    #[test]
    fn the_planners_other_keys_count_but_other_planners_and_repositories_do_not() {
        let pol = policy(3);
        let a = plan_of(2, "K1", &pol);
        let by_second_key = plan_of(2, "K2", &pol);
        let by_someone_else = plan_of(2, "M", &pol);
        let mut elsewhere = plan_of(2, "K1", &pol);
        elsewhere.repository = "another".into();
        let keys = ["K1".to_string(), "K2".to_string()];
        let part = part_of(
            &a,
            "sha256:a",
            &[("sha256:b", &by_second_key, by_second_key.expires_at)],
            &keys,
            &pol,
            NOW,
        );
        assert!(part.unwrap().group.is_some());
        let others = [
            ("sha256:c", &by_someone_else, by_someone_else.expires_at),
            ("sha256:d", &elsewhere, elsewhere.expires_at),
        ];
        assert_eq!(part_of(&a, "sha256:a", &others, &keys, &pol, NOW), None);
    }

    #[test]
    fn expired_plans_and_the_plan_itself_do_not_count_unless_kept_longer() {
        let pol = policy(3);
        let a = plan_of(2, "K1", &pol);
        let mut old = plan_of(2, "K1", &pol);
        old.expires_at = NOW;
        let keys = ["K1".to_string()];
        assert_eq!(
            part_of(
                &a,
                "sha256:a",
                &[("sha256:o", &old, old.expires_at)],
                &keys,
                &pol,
                NOW
            ),
            None
        );
        assert_eq!(
            part_of(
                &a,
                "sha256:a",
                &[("sha256:a", &a, a.expires_at)],
                &keys,
                &pol,
                NOW
            ),
            None
        );
        // Applied here, it counts until the time its entry was kept for, past its expiry.
        let kept = NOW + time::Duration::hours(1);
        let part = part_of(&a, "sha256:a", &[("sha256:o", &old, kept)], &keys, &pol, NOW);
        assert_eq!(part.map(|p| p.plans), Some(2));
    }

    #[test]
    fn no_group_within_the_threshold_when_bulk_alone_or_when_the_policy_opts_out() {
        let pol = policy(4);
        let (a, b) = (plan_of(2, "K1", &pol), plan_of(2, "K1", &pol));
        let keys = ["K1".to_string()];
        // 4 is not above 4: shown as part of two plans, nothing more needed.
        let part = part_of(
            &a,
            "sha256:a",
            &[("sha256:b", &b, b.expires_at)],
            &keys,
            &pol,
            NOW,
        )
        .unwrap();
        assert_eq!((part.plans, part.group), (2, None));
        let pol3 = policy(3);
        let big = plan_of(4, "K1", &pol3);
        let small = plan_of(1, "K1", &pol3);
        // Already bulk on its own: its own bulk group covers it.
        let part = part_of(
            &big,
            "sha256:a",
            &[("sha256:s", &small, small.expires_at)],
            &keys,
            &pol3,
            NOW,
        )
        .unwrap();
        assert_eq!(part.group, None);
        let mut off = policy(3);
        off.bulk.across_plans = false;
        let (a, b) = (plan_of(2, "K1", &off), plan_of(2, "K1", &off));
        let part = part_of(
            &a,
            "sha256:a",
            &[("sha256:b", &b, b.expires_at)],
            &keys,
            &off,
            NOW,
        )
        .unwrap();
        assert_eq!(part.group, None);
        assert_ne!(
            off.hash().unwrap(),
            policy(3).hash().unwrap(),
            "opting out changes the policy hash"
        );
        // On (the default), the option is left out of the hash: policies written before it
        // existed keep theirs.
        assert!(
            !serde_json::to_string(&policy(3))
                .unwrap()
                .contains("across_plans")
        );
    }
}
