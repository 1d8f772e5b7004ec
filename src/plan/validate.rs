//! What a plan payload must be before anything reads it as a plan: the structure its kind
//! allows, and every derived field equal to what guardctl computes from the structured data.
//!
//! Why: a planner holds a valid key and can re-sign any payload. Their signature proves who
//! wrote the plan, not that it is true. So nothing a reviewer reads or `apply` acts on may be
//! the planner's own words: the summary, diff, side effects, risk and plan hash are recomputed
//! here and must match byte for byte; the backup location is fixed; every affected resource
//! must be a well-formed ref of the operation's own namespace, once. What the repository says
//! (tips, the screens that made each resource eligible) is re-derived at `verify`/`apply` time
//! by the operation's `recheck`; what the policy says (review routing) by the policy step.
//!
//! Pure: the ref-name rule is passed in (it is git's, and `plan/` does not link git).

use super::derive;
use super::hash::plan_hash;
use super::model::{
    BACKUP_NAMESPACE, Criterion, ExecInputs, Operation, Plan, ResourceFacts, ReviewKind, StaleBranchesInputs,
    TAG_BASE,
};
use std::collections::HashSet;

/// The first field that is not what guardctl would have written, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {why}")]
pub struct Invalid {
    pub field: String,
    pub why: String,
}

fn invalid(field: impl Into<String>, why: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        why: why.into(),
    }
}

/// A name the environment can hold as one variable and a shell can name: `[A-Za-z_][A-Za-z0-9_]*`.
/// An exec plan's `--env` names are shown to reviewers; anything else in one is a forgery's
/// way to write into what they read.
pub fn is_env_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The longest a backup may be kept: 100 years (longer is a typo, or an attempt to overflow
/// the date arithmetic of `gc`).
pub const MAX_RETENTION_DAYS: u32 = 36_500;

/// `sha256:<64 lowercase hex digits>`.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| is_hex(h, 64))
}

/// An object id as git writes it: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
pub fn is_oid(s: &str) -> bool {
    is_hex(s, 40) || is_hex(s, 64)
}

/// Check a parsed plan. `valid_refname` is git's rule for ref names.
pub fn check(plan: &Plan, valid_refname: impl Fn(&str) -> bool) -> Result<(), Invalid> {
    if !is_hex(&plan.nonce, 32) {
        return Err(invalid("nonce", "must be 32 lowercase hex digits"));
    }
    if plan.expires_at <= plan.created_at {
        return Err(invalid("expires_at", "is not after created_at"));
    }
    if !is_digest(&plan.policy_hash) {
        return Err(invalid("policy_hash", "is not a sha256 digest"));
    }
    if plan.before_image.retention_days > MAX_RETENTION_DAYS {
        return Err(invalid(
            "before_image.retention_days",
            format!("is more than {MAX_RETENTION_DAYS} days"),
        ));
    }
    structure(plan, &valid_refname)?;
    derived(plan)
}

/// Every affected resource is a valid ref of the operation's namespace, listed once, with the
/// facts its kind has and no others.
fn structure(plan: &Plan, valid_refname: &impl Fn(&str) -> bool) -> Result<(), Invalid> {
    let op = &plan.operation;
    let Some(namespace) = op.ref_namespace() else {
        // A command deletes no refs guardctl could back up: its manifest is the preview.
        if !plan.affected.is_empty() || !plan.skipped.is_empty() {
            return Err(invalid("affected", "an exec plan lists no refs"));
        }
        return match op {
            Operation::Exec(x) => exec(x),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => Ok(()),
        };
    };
    let criteria = inputs(op)?;
    let mut seen = HashSet::with_capacity(plan.affected.len());
    for (i, a) in plan.affected.iter().enumerate() {
        let field = |name: &str| format!("affected[{i}].{name}");
        // Escaped only for a message: escaping every name cost a tenth of `show` at 20,000.
        let name = || crate::text::safe(&a.refname);
        if !a.refname.starts_with(namespace) || !valid_refname(&a.refname) {
            return Err(invalid(
                field("ref"),
                format!(
                    "{} is not a valid ref under {namespace}, the only refs a {} plan deletes",
                    name(),
                    op.kind()
                ),
            ));
        }
        if !seen.insert(a.refname.as_str()) {
            return Err(invalid(field("ref"), format!("{} is listed twice", name())));
        }
        if !is_oid(&a.oid) {
            return Err(invalid(field("oid"), "is not an object id"));
        }
        if a.reasons.is_empty() || a.reasons.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(
                field("reasons"),
                "must be sorted, distinct and not empty",
            ));
        }
        // The facts of the operation's own kind of resource, and no other's.
        match (op, &a.facts) {
            (Operation::Tags(_), ResourceFacts::Tag(t)) => {
                if !is_oid(&t.object.commit) {
                    return Err(invalid(field("tag.commit"), "is not an object id"));
                }
            }
            (Operation::StaleBranches(_), ResourceFacts::Branch(b)) => {
                let section = format!("branch.{}.", a.name());
                // `branch.<name>.<variable>`: a variable has no dot, else the key is another
                // branch's (`branch.a.b.remote` is branch `a.b`'s, not `a`'s).
                let own = |key: &str| {
                    key.strip_prefix(&section)
                        .is_some_and(|var| !var.is_empty() && !var.contains('.'))
                };
                if let Some(c) = b.config.iter().find(|c| !own(&c.key)) {
                    return Err(invalid(
                        field("config"),
                        format!(
                            "{} is not a key of {}'s own section",
                            crate::text::safe(&c.key),
                            name()
                        ),
                    ));
                }
            }
            (Operation::RemoteBranches(_), ResourceFacts::Branch(b)) => {
                if b.upstream.is_some() || !b.config.is_empty() {
                    return Err(invalid(
                        field("config"),
                        "only local branches have upstreams and config",
                    ));
                }
            }
            (Operation::Tags(_), ResourceFacts::Branch(_))
            | (Operation::StaleBranches(_) | Operation::RemoteBranches(_), ResourceFacts::Tag(_)) => {
                return Err(invalid(
                    field("tag"),
                    "tag facts belong to tag plans, and only there",
                ));
            }
            // Refused above: an exec plan lists no resources.
            (Operation::Exec(_), ResourceFacts::Branch(_) | ResourceFacts::Tag(_)) => {
                return Err(invalid("affected", "an exec plan lists no refs"));
            }
        }
        // Squash evidence is a squash-merged branch's, and names a commit: guardctl writes it
        // nowhere else, and `compare` re-derives it only where the branch is squash-merged.
        if let ResourceFacts::Branch(b) = &a.facts
            && let Some(s) = &b.squashed_into
        {
            if !a.reasons.contains(&Criterion::SquashMerged) {
                return Err(invalid(
                    field("squashed_into"),
                    "only a squash-merged branch names the base commit that carries its change",
                ));
            }
            if !is_oid(&s.commit) {
                return Err(invalid(field("squashed_into.commit"), "is not an object id"));
            }
        }
        let history = a.history();
        if history.loses_work && history.commits_not_in_base == 0 {
            return Err(invalid(
                field("loses_work"),
                "loses work but has no commit not in base",
            ));
        }
        if let Some(criteria) = criteria
            && let Some(r) = a.reasons.iter().find(|r| !criteria.contains(r))
        {
            return Err(invalid(
                field("reasons"),
                format!("`{}` is not a criterion the plan selected by", r.as_str()),
            ));
        }
    }
    // Counts a summary adds up must add up (a forged count would wrap the total).
    if plan
        .affected
        .iter()
        .try_fold(0u64, |sum, a| sum.checked_add(a.commits_not_in_base()))
        .is_none()
    {
        return Err(invalid("affected", "commit counts beyond any repository"));
    }
    skipped(plan, namespace, &seen)
}

/// An exec plan's recorded facts are well-formed: every digest 64 hex digits, the preview's
/// text exactly the bytes its digest is of (the reviewer reads the text; apply compares the
/// digest), and every file path relative to the work tree, inside it and outside `.git`.
fn exec(x: &ExecInputs) -> Result<(), Invalid> {
    let digest_ok = |s: &str| is_hex(s, 64);
    if !digest_ok(&x.preview_output.sha256) {
        return Err(invalid(
            "operation.inputs.preview_output.sha256",
            "is not a sha256 digest",
        ));
    }
    let text_digest = {
        use sha2::Digest;
        super::envelope::hex(&sha2::Sha256::digest(x.preview_output.text.as_bytes()))
    };
    if text_digest != x.preview_output.sha256 {
        return Err(invalid(
            "operation.inputs.preview_output.text",
            "is not the output whose digest the plan records",
        ));
    }
    // A trial plan's manifest is its command's own effect: the command must be the line it
    // tried, and there is no preview a reviewer could be shown instead.
    if x.trial && (!x.preview.is_empty() || super::model::trial_line(&x.command).is_none()) {
        return Err(invalid(
            "operation.inputs.trial",
            "is set, but the command is not `bash -c LINE` with an empty preview",
        ));
    }
    if !x.trial && x.preview.trim().is_empty() {
        return Err(invalid("operation.inputs.preview", "is empty"));
    }
    if let Some((i, _)) = x.env.iter().enumerate().find(|(_, e)| !is_env_name(&e.name)) {
        return Err(invalid(
            format!("operation.inputs.env[{i}].name"),
            "is not a variable name",
        ));
    }
    if let Some((i, _)) = x
        .env
        .iter()
        .enumerate()
        .find(|(_, e)| e.sha256.as_deref().is_some_and(|d| !digest_ok(d)))
    {
        return Err(invalid(
            format!("operation.inputs.env[{i}].sha256"),
            "is not a sha256 digest",
        ));
    }
    let inside = |p: &str| {
        let path = std::path::Path::new(p);
        !p.is_empty()
            && path.is_relative()
            && path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
            && !path.starts_with(".git")
    };
    for (i, f) in x.files.iter().enumerate() {
        if !inside(&f.path) {
            return Err(invalid(
                format!("operation.inputs.files[{i}].path"),
                "is not a path inside the work tree",
            ));
        }
        if !digest_ok(&f.sha256) {
            return Err(invalid(
                format!("operation.inputs.files[{i}].sha256"),
                "is not a sha256 digest",
            ));
        }
    }
    for (i, p) in x.pinned.iter().enumerate() {
        if !digest_ok(&p.sha256) || p.tree.iter().any(|f| !digest_ok(&f.sha256)) {
            return Err(invalid(
                format!("operation.inputs.pinned[{i}].sha256"),
                "is not a sha256 digest",
            ));
        }
    }
    Ok(())
}

/// The refs the plan says it left alone: each once, of the operation's namespace (names git
/// would reject included: those are listed so a reviewer sees them), none of them deleted.
fn skipped(plan: &Plan, namespace: &str, affected: &HashSet<&str>) -> Result<(), Invalid> {
    let mut seen = HashSet::with_capacity(plan.skipped.len());
    for (i, s) in plan.skipped.iter().enumerate() {
        let field = || format!("skipped[{i}].ref");
        let name = || crate::text::safe(&s.refname);
        if !s.refname.starts_with(namespace) {
            return Err(invalid(field(), format!("{} is not under {namespace}", name())));
        }
        if affected.contains(s.refname.as_str()) {
            return Err(invalid(
                field(),
                format!("{} is both deleted and left alone", name()),
            ));
        }
        if !seen.insert(s.refname.as_str()) {
            return Err(invalid(field(), format!("{} is listed twice", name())));
        }
        if s.oid.as_deref().is_some_and(|o| !is_oid(o)) {
            return Err(invalid(format!("skipped[{i}].oid"), "is not an object id"));
        }
    }
    Ok(())
}

/// The operation's inputs as `guardctl plan` normalises them: criteria its kind selects by,
/// sorted and distinct; an age exactly when an age is a criterion (tags: whenever given);
/// patterns sorted and distinct; a base that is a ref. Returns the criteria.
fn inputs(op: &Operation) -> Result<Option<&[Criterion]>, Invalid> {
    let (selection, allowed): (&StaleBranchesInputs, &[Criterion]) = match op {
        Operation::StaleBranches(i) => (
            i,
            &[
                Criterion::Merged,
                Criterion::SquashMerged,
                Criterion::Gone,
                Criterion::OlderThan,
                Criterion::Matched,
            ],
        ),
        Operation::RemoteBranches(r) => (
            &r.selection,
            &[
                Criterion::Merged,
                Criterion::SquashMerged,
                Criterion::OlderThan,
                Criterion::Matched,
            ],
        ),
        Operation::Tags(t) => (&t.selection, &[Criterion::Matched, Criterion::OlderThan]),
        Operation::Exec(_) => return Ok(None),
    };
    let field = |name: &str| format!("operation.inputs.{name}");
    let c = &selection.criteria;
    if c.is_empty() || c.windows(2).any(|w| w[0] >= w[1]) || c.iter().any(|x| !allowed.contains(x)) {
        return Err(invalid(
            field("criteria"),
            format!("must be sorted, distinct criteria of a {} plan", op.kind()),
        ));
    }
    let tags = match op {
        Operation::Tags(_) => true,
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Exec(_) => false,
    };
    let by_age = c.contains(&Criterion::OlderThan);
    match selection.older_than_secs {
        Some(s) if s == 0 || s > crate::duration::MAX_SECS => {
            return Err(invalid(
                field("older_than_secs"),
                "is not a duration guardctl accepts",
            ));
        }
        Some(_) if !by_age && !tags => {
            return Err(invalid(
                field("older_than_secs"),
                "is set but older-than is not a criterion",
            ));
        }
        None if by_age => {
            return Err(invalid(
                field("older_than_secs"),
                "older-than is a criterion but no age is set",
            ));
        }
        _ => {}
    }
    if tags {
        // A tag plan selects by name alone ([matched]) or by age ([older-than]), against every
        // branch.
        let by_name = c == &[Criterion::Matched];
        if (by_name && (selection.match_globs.is_empty() || selection.older_than_secs.is_some()))
            || selection.base != TAG_BASE
        {
            return Err(invalid(field("criteria"), "not how `plan tags` selects"));
        }
    } else if !selection.base.starts_with("refs/") {
        return Err(invalid(field("base"), "is not a ref"));
    } else if c.contains(&Criterion::Matched) && (c.len() > 1 || selection.match_globs.is_empty()) {
        // Branches selected by name are selected by name alone, and by names given.
        return Err(invalid(
            field("criteria"),
            "`matched` selects named branches, alone",
        ));
    }
    for (name, globs) in [
        ("match", &selection.match_globs),
        ("exclude", &selection.exclude),
        ("protect", &selection.protect),
    ] {
        if globs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(field(name), "must be sorted and distinct"));
        }
    }
    Ok(Some(c))
}

/// Every field guardctl computes from the plan's own data must be exactly what it computes.
fn derived(plan: &Plan) -> Result<(), Invalid> {
    let (op, affected) = (&plan.operation, plan.affected.as_slice());
    let expected_hash = plan_hash(&plan.repository, op, &plan.policy_hash, affected)
        .map_err(|e| invalid("plan_hash", format!("cannot be computed: {e}")))?;
    if plan.plan_hash != expected_hash {
        return Err(invalid(
            "plan_hash",
            "is not the hash of the plan's inputs and state",
        ));
    }
    if plan.summary != derive::summary(op, affected) {
        return Err(invalid(
            "summary",
            "is not the summary guardctl generates from the plan",
        ));
    }
    if plan.diff != derive::diff(affected) {
        return Err(invalid("diff", "is not the diff of the affected resources"));
    }
    if plan.side_effects != derive::side_effects(op, affected) {
        return Err(invalid(
            "side_effects",
            "are not the side effects of the affected resources",
        ));
    }
    // Whether the plan is bulk is the policy's call (its threshold): the policy step checks
    // the risk against the policy in force. Here it must be one of the two guardctl could
    // have written, and bulk when the plan has a bulk review group.
    let bulk_group = plan.review.iter().any(|g| g.kind == ReviewKind::Bulk);
    let possible = [true, false].map(|bulk| derive::risk_of(op, affected, bulk));
    if !possible
        .iter()
        .enumerate()
        .any(|(i, r)| *r == plan.risk && (i == 0 || !bulk_group))
    {
        return Err(invalid("risk", "is not the risk of the affected resources"));
    }
    if plan.before_image.namespace != BACKUP_NAMESPACE {
        return Err(invalid(
            "before_image.namespace",
            format!("backups always live under {BACKUP_NAMESPACE}"),
        ));
    }
    // An exec plan's review groups name the ids its preview lists (its manifest).
    let manifest = super::manifest::of(op).unwrap_or_default();
    let names: HashSet<&str> = affected
        .iter()
        .map(|a| a.refname.as_str())
        .chain(manifest.iter().map(String::as_str))
        .collect();
    for (i, g) in plan.review.iter().enumerate() {
        if let Some(r) = g.refs.iter().find(|r| !names.contains(r.as_str())) {
            return Err(invalid(
                format!("review[{i}].refs"),
                format!("{} is not an affected resource", crate::text::safe(r)),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::*;

    fn valid(name: &str) -> bool {
        !name.contains("..") && !name.chars().any(|c| c.is_control())
    }

    /// A plan as `guardctl plan` writes it, with every derived field computed.
    fn honest(affected: Vec<Resource>) -> Plan {
        test_data::plan(affected, &format!("sha256:{}", "0".repeat(64)))
    }

    fn field(plan: &Plan) -> String {
        check(plan, valid)
            .map(|()| String::new())
            .unwrap_or_else(|e| e.field)
    }

    #[test]
    fn an_honest_plan_passes() {
        let p = honest(vec![test_data::branch("a", 0), test_data::branch("b", 2)]);
        assert_eq!(check(&p, valid), Ok(()));
    }

    #[test]
    fn a_planner_written_summary_risk_or_side_effect_is_refused_by_name() {
        let base = honest(vec![test_data::branch("a", 3)]);
        let mut p = base.clone();
        p.summary = "delete 0 branches; nothing is lost".into();
        assert_eq!(field(&p), "summary");
        let mut p = base.clone();
        p.risk.level = RiskLevel::Low;
        p.risk.reasons.clear();
        assert_eq!(field(&p), "risk");
        let mut p = base.clone();
        p.side_effects.clear();
        assert_eq!(field(&p), "side_effects");
        let mut p = base.clone();
        p.diff.clear();
        assert_eq!(field(&p), "diff");
        let mut p = base;
        p.before_image.namespace = "refs/remotes/origin".into();
        assert_eq!(field(&p), "before_image.namespace");
    }

    #[test]
    fn a_ref_outside_the_operations_namespace_is_refused() {
        let mut tag = test_data::branch("v1.0", 0);
        tag.refname = "refs/tags/v1.0".into();
        let p = honest(vec![tag]);
        assert_eq!(field(&p), "affected[0].ref");
        let mut odd = test_data::branch("x", 0);
        odd.refname = "refs/heads/../../x".into();
        assert_eq!(field(&honest(vec![odd])), "affected[0].ref");
    }

    #[test]
    fn a_ref_listed_twice_is_refused() {
        let p = honest(vec![test_data::branch("a", 0), test_data::branch("a", 0)]);
        assert_eq!(field(&p), "affected[1].ref");
    }

    #[test]
    fn a_changed_fact_without_a_new_hash_is_refused() {
        let mut p = honest(vec![test_data::branch("a", 0)]);
        p.affected[0].oid = "2".repeat(40);
        p.diff = derive::diff(&p.affected);
        assert_eq!(field(&p), "plan_hash");
    }

    #[test]
    fn config_of_another_section_is_refused() {
        let mut a = test_data::branch("a", 0);
        test_data::branch_facts(&mut a).config = vec![ConfigEntry {
            key: "core.fsmonitor".into(),
            value: "evil".into(),
        }];
        assert_eq!(field(&honest(vec![a])), "affected[0].config");
    }

    #[test]
    fn each_operation_lists_only_its_own_kind_of_resource() {
        let hash = format!("sha256:{}", "0".repeat(64));
        let tags = |a| test_data::plan_of(test_data::tag_inputs(), vec![a], &hash);
        assert_eq!(check(&tags(test_data::tag("v1")), valid), Ok(()));
        // A tag plan whose resource is branch-shaped (no tag object), in the tag namespace.
        let mut branch_shaped = test_data::branch("v1", 0);
        branch_shaped.refname = "refs/tags/v1".into();
        branch_shaped.reasons = vec![Criterion::Matched];
        assert_eq!(field(&tags(branch_shaped)), "affected[0].tag");
        // A branch plan whose resource is a tag.
        let mut tag_shaped = test_data::tag("a");
        tag_shaped.refname = "refs/heads/a".into();
        tag_shaped.reasons = vec![Criterion::Merged];
        assert_eq!(field(&honest(vec![tag_shaped])), "affected[0].tag");
        // A remote's branch has no upstream or config of this clone.
        let remote = Operation::RemoteBranches(RemoteBranchesInputs {
            remote: "origin".into(),
            selection: test_data::merged_inputs().selection().unwrap().clone(),
        });
        let mut a = test_data::branch("a", 0);
        assert_eq!(
            check(&test_data::plan_of(remote.clone(), vec![a.clone()], &hash), valid),
            Ok(())
        );
        test_data::branch_facts(&mut a).config = vec![ConfigEntry {
            key: "branch.a.remote".into(),
            value: "origin".into(),
        }];
        assert_eq!(
            field(&test_data::plan_of(remote, vec![a], &hash)),
            "affected[0].config"
        );
    }

    #[test]
    fn a_missing_or_malformed_nonce_is_refused() {
        let mut p = honest(vec![]);
        p.nonce = "abc".into();
        assert_eq!(field(&p), "nonce");
    }

    #[test]
    fn inputs_must_be_in_the_form_plan_writes_them() {
        let mut p = honest(vec![test_data::branch("a", 0)]);
        if let Operation::StaleBranches(i) = &mut p.operation {
            i.criteria = vec![Criterion::Matched];
        }
        assert_eq!(field(&p), "operation.inputs.criteria");
        let mut p = honest(vec![]);
        if let Operation::StaleBranches(i) = &mut p.operation {
            i.criteria = vec![Criterion::Merged, Criterion::OlderThan];
        }
        assert_eq!(
            field(&p),
            "operation.inputs.older_than_secs",
            "an age criterion needs an age"
        );
        let mut p = honest(vec![]);
        if let Operation::StaleBranches(i) = &mut p.operation {
            i.protect = vec!["b".into(), "a".into()];
        }
        assert_eq!(field(&p), "operation.inputs.protect");
    }

    #[test]
    fn skipped_refs_are_distinct_and_never_deleted() {
        let a = test_data::branch("a", 0);
        let mut p = honest(vec![a.clone()]);
        p.skipped = vec![Skipped {
            refname: a.refname.clone(),
            oid: Some(a.oid.clone()),
            reason: SkipReason::Protected,
            detail: None,
        }];
        assert_eq!(field(&p), "skipped[0].ref");
    }

    #[test]
    fn numbers_that_would_overflow_are_refused() {
        let mut p = honest(vec![]);
        p.before_image.retention_days = u32::MAX;
        assert_eq!(field(&p), "before_image.retention_days");
        let mut a = test_data::branch("a", 1);
        test_data::branch_facts(&mut a).history.commits_not_in_base = u64::MAX;
        let mut b = test_data::branch("b", 1);
        test_data::branch_facts(&mut b).history.commits_not_in_base = 2;
        let mut p = honest(vec![]);
        p.affected = vec![a, b];
        assert_eq!(field(&p), "affected");
        let mut p = honest(vec![]);
        p.policy_hash = "sha256:\u{202E}".into();
        assert_eq!(field(&p), "policy_hash");
    }
}
