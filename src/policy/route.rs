//! Review routing: which review groups a plan needs, computed from the policy and the affected
//! resources. Pure, so `plan` (which records the groups) and `apply` (which recomputes them
//! from the policy in force and refuses when they differ) get the same answer.
//!
//! Every route that matches a resource applies to it (a branch of team A under `release/*`
//! needs both); resources no route matches form the `default` group; a plan above the bulk
//! threshold also needs the `bulk` group, which covers every resource. A route's `authors`
//! match the tip's author and, for a branch holding commits not in the base, every author and
//! committer of those commits: whoever's work is at stake.

use super::{Policy, Requirement};
use crate::plan::derive::resource_risk;
use crate::plan::model::{Resource, ReviewGroup, ReviewKind, RiskLevel};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The review groups of a plan with these affected resources, in the policy's order: routes
/// that matched something, then `default` (when some resource matched no route, or the plan
/// is empty), then `bulk`.
pub fn review(policy: &Policy, affected: &[Resource]) -> Result<Vec<ReviewGroup>, String> {
    let bulk = affected.len() as u64 > policy.bulk.threshold;
    let subjects: Vec<Subject> = affected
        .iter()
        .map(|a| Subject {
            id: &a.refname,
            name: a.name(),
            author: Some(&a.author.email),
            people: a.people_not_in_base(),
            risk: resource_risk(a, bulk),
        })
        .collect();
    review_subjects(policy, &subjects)
}

/// The review groups of an exec plan whose manifest lists `ids`: routes' `refs` patterns
/// match the ids, a route with `authors` matches none (a listed resource has no author), and
/// every resource is of high risk (guardctl cannot bound what a command does).
pub fn review_ids(policy: &Policy, ids: &[String]) -> Result<Vec<ReviewGroup>, String> {
    let subjects: Vec<Subject> = ids
        .iter()
        .map(|id| Subject {
            id,
            name: id,
            author: None,
            people: &[],
            risk: RiskLevel::High,
        })
        .collect();
    review_subjects(policy, &subjects)
}

/// The first of `ids` a protected pattern of the policy matches.
pub fn protected_id<'a>(policy: &Policy, ids: &'a [String]) -> Result<Option<&'a String>, String> {
    let protected = name_globs(&policy.protected)?;
    Ok(ids.iter().find(|id| protected.is_match(id.as_str())))
}

/// One resource as routing sees it.
struct Subject<'a> {
    /// As recorded in a group's `refs`.
    id: &'a str,
    /// What `refs` patterns match.
    name: &'a str,
    author: Option<&'a str>,
    /// Authors and committers of the commits not in the base (whose work is at stake).
    people: &'a [String],
    risk: RiskLevel,
}

fn review_subjects(policy: &Policy, affected: &[Subject]) -> Result<Vec<ReviewGroup>, String> {
    let bulk = affected.len() as u64 > policy.bulk.threshold;
    let mut routed = vec![false; affected.len()];
    let mut out = Vec::new();
    for route in &policy.routes {
        let refs = name_globs(&route.refs)?;
        let authors = globs(&route.authors, true)?;
        let mut names = Vec::new();
        for (i, a) in affected.iter().enumerate() {
            let hit = (route.refs.is_empty() || refs.is_match(a.name))
                && (route.authors.is_empty()
                    || a.author.is_some_and(|e| authors.is_match(e))
                    || a.people.iter().any(|p| authors.is_match(p)))
                && (route.risk.is_empty() || route.risk.contains(&a.risk));
            if hit {
                routed[i] = true;
                names.push(a.id.to_string());
            }
        }
        if !names.is_empty() {
            out.push(group(
                policy,
                &route.name,
                ReviewKind::Route,
                &route.approvals,
                names,
            ));
        }
    }
    let rest = routed.iter().filter(|r| !**r).count();
    if rest > 0 || affected.is_empty() {
        let mut g = group(policy, "default", ReviewKind::Default, &policy.approvals, vec![]);
        g.resources = rest as u64;
        out.push(g);
    }
    if let (true, Some(req)) = (bulk, &policy.bulk.approvals) {
        let mut g = group(policy, "bulk", ReviewKind::Bulk, req, vec![]);
        g.resources = affected.len() as u64;
        out.push(g);
    }
    Ok(out)
}

fn group(policy: &Policy, name: &str, kind: ReviewKind, req: &Requirement, refs: Vec<String>) -> ReviewGroup {
    ReviewGroup {
        name: name.to_string(),
        kind,
        required: req.required,
        from: req.from.clone(),
        approvers: policy.members(&req.from),
        resources: refs.len() as u64,
        refs,
    }
}

/// The policy's name patterns (`protected`, a route's `refs`) as one set.
pub fn name_globs(patterns: &[String]) -> Result<GlobSet, String> {
    globs(patterns, false)
}

fn globs(patterns: &[String], case_insensitive: bool) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let g = GlobBuilder::new(p)
            .literal_separator(true)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| format!("invalid pattern `{p}` in the policy: {e}"))?;
        b.add(g);
    }
    b.build()
        .map_err(|e| format!("invalid patterns in the policy: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::test_data::by as branch;

    fn policy() -> Policy {
        crate::policy::file::parse(
            r#"
version = 1
[groups]
a = ["ann@example.com"]
b = ["ben@example.com", "bea@example.com"]
rel = ["rel1@example.com", "rel2@example.com"]
[bulk]
threshold = 3
required = 2
from = ["rel"]
[[route]]
name = "team-a"
authors = ["*@A.example.com"]
required = 1
from = ["a"]
[[route]]
name = "release"
refs = ["release-*"]
required = 2
from = ["rel"]
[[route]]
name = "lossy"
risk = ["medium", "high"]
required = 1
from = ["b"]
"#,
        )
        .unwrap()
    }

    fn names(groups: &[ReviewGroup]) -> Vec<(&str, u64)> {
        groups.iter().map(|g| (g.name.as_str(), g.resources)).collect()
    }

    #[test]
    fn every_matching_route_applies_and_the_rest_is_default() {
        let a = [
            branch("x", "dev@a.example.com", 0),
            branch("release-1", "dev@a.example.com", 0),
            branch("y", "other@example.com", 2),
            branch("z", "other@example.com", 0),
        ];
        let g = review(&policy(), &a[..3]).unwrap();
        assert_eq!(names(&g), vec![("team-a", 2), ("release", 1), ("lossy", 1)]);
        assert_eq!(g[1].refs, vec!["refs/heads/release-1"]);
        assert_eq!(g[1].approvers, vec!["rel1@example.com", "rel2@example.com"]);
        // z matches no route: it forms the default group.
        let g = review(&policy(), &[a[0].clone(), a[1].clone(), a[3].clone()]).unwrap();
        assert_eq!(names(&g), vec![("team-a", 2), ("release", 1), ("default", 1)]);
        // Four resources: above the threshold of 3, so bulk, and every resource is at least
        // medium risk, so `lossy` covers them all.
        let g = review(&policy(), &a).unwrap();
        assert_eq!(
            names(&g),
            vec![("team-a", 2), ("release", 1), ("lossy", 4), ("bulk", 4)]
        );
        assert!(g[3].refs.is_empty());
    }

    #[test]
    fn empty_plan_needs_the_default_group_and_default_policy_routes_nothing() {
        assert_eq!(names(&review(&policy(), &[]).unwrap()), vec![("default", 0)]);
        let many: Vec<Resource> = (0..60)
            .map(|i| branch(&format!("b{i}"), "x@example.com", 0))
            .collect();
        let g = review(&Policy::default(), &many).unwrap();
        assert_eq!(names(&g), vec![("default", 60)]);
        assert!(g[0].from.is_empty() && g[0].approvers.is_empty());
    }

    #[test]
    fn manifest_ids_are_routed_by_pattern_and_count_towards_bulk() {
        let ids: Vec<String> = (0..3)
            .map(|i| format!("other-{i}"))
            .chain(["release-9".to_string()])
            .collect();
        let g = review_ids(&policy(), &ids).unwrap();
        // No author: team-a never matches; every listed resource is high risk.
        assert_eq!(names(&g), vec![("release", 1), ("lossy", 4), ("bulk", 4)]);
        assert_eq!(g[0].refs, vec!["release-9"]);
        let mut p = policy();
        p.protected = vec!["release-*".into()];
        assert_eq!(
            protected_id(&p, &ids).unwrap().map(String::as_str),
            Some("release-9")
        );
        assert_eq!(protected_id(&p, &ids[..3]).unwrap(), None);
    }

    #[test]
    fn an_author_route_matches_anyone_whose_unmerged_work_is_at_stake() {
        // The tip is someone else's, but team A's commits are underneath it.
        let mut b = branch("x", "other@example.com", 2);
        crate::plan::model::test_data::branch_facts(&mut b).people_not_in_base =
            vec!["dev@a.example.com".into(), "other@example.com".into()];
        let g = review(&policy(), &[b.clone()]).unwrap();
        assert_eq!(names(&g), vec![("team-a", 1), ("lossy", 1)]);
        crate::plan::model::test_data::branch_facts(&mut b).people_not_in_base =
            vec!["other@example.com".into()];
        let g = review(&policy(), &[b]).unwrap();
        assert_eq!(names(&g), vec![("lossy", 1)]);
    }

    #[test]
    fn risk_selector_sees_bulk() {
        // Merged branches lose nothing (low), but in a bulk plan they are medium.
        let a: Vec<Resource> = (0..4)
            .map(|i| branch(&format!("b{i}"), "x@example.com", 0))
            .collect();
        let g = review(&policy(), &a).unwrap();
        assert_eq!(names(&g), vec![("lossy", 4), ("bulk", 4)]);
    }
}
