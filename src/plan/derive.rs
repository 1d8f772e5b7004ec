//! Everything in a plan that is computed from its affected resources: the field-level diff,
//! the side effects, the risk tier and the summary line. Pure functions, so the plan writer
//! and the tests get the same answer, and text is always generated from the data.

use super::model::{Affected, Criterion, DiffEntry, Risk, RiskLevel, SideEffect, SideEffectKind};

/// Above this many affected resources a plan is "bulk": no reviewer reads every row.
pub const BULK_THRESHOLD: usize = 50;

/// One `oid` entry per branch, and one entry per configuration key it removes.
pub fn diff(affected: &[Affected]) -> Vec<DiffEntry> {
    let mut out = Vec::with_capacity(affected.len());
    for a in affected {
        out.push(DiffEntry {
            resource: a.refname.clone(),
            field: "oid".into(),
            from: Some(a.oid.clone()),
            to: None,
        });
        for c in &a.config {
            out.push(DiffEntry {
                resource: a.refname.clone(),
                field: format!("config:{}", c.key),
                from: Some(c.value.clone()),
                to: None,
            });
        }
    }
    out
}

fn is_upstream_key(key: &str) -> bool {
    key.ends_with(".remote") || key.ends_with(".merge")
}

pub fn side_effects(affected: &[Affected]) -> Vec<SideEffect> {
    let mut out = Vec::new();
    if affected.is_empty() {
        return out;
    }
    out.push(SideEffect {
        kind: SideEffectKind::ReflogDeleted,
        branches: affected.len() as u64,
        commits: None,
    });
    let upstream = affected
        .iter()
        .filter(|a| a.config.iter().any(|c| is_upstream_key(&c.key)));
    let upstream = upstream.count() as u64;
    if upstream > 0 {
        out.push(SideEffect {
            kind: SideEffectKind::UpstreamConfigRemoved,
            branches: upstream,
            commits: None,
        });
    }
    let other = affected
        .iter()
        .filter(|a| a.config.iter().any(|c| !is_upstream_key(&c.key)));
    let other = other.count() as u64;
    if other > 0 {
        out.push(SideEffect {
            kind: SideEffectKind::BranchConfigRemoved,
            branches: other,
            commits: None,
        });
    }
    let losing: Vec<&Affected> = affected.iter().filter(|a| a.loses_work).collect();
    if !losing.is_empty() {
        out.push(SideEffect {
            kind: SideEffectKind::UnmergedCommitsBackupOnly,
            branches: losing.len() as u64,
            commits: Some(losing.iter().map(|a| a.commits_not_in_base).sum()),
        });
    }
    out
}

/// Low: every deletion is reversible and loses no work. Medium: bulk, or work kept only in
/// backups. High: both.
pub fn risk(affected: &[Affected]) -> Risk {
    let mut reasons = Vec::new();
    if affected.iter().any(|a| a.loses_work) {
        reasons.push("unmerged_work".to_string());
    }
    if affected.len() > BULK_THRESHOLD {
        reasons.push("bulk".to_string());
    }
    let level = match reasons.len() {
        0 => RiskLevel::Low,
        1 => RiskLevel::Medium,
        _ => RiskLevel::High,
    };
    Risk { level, reasons }
}

/// "delete 4 branches (2 merged, 1 squash-merged, 1 gone upstream); 0 unmerged commits lost"
pub fn summary(affected: &[Affected]) -> String {
    if affected.is_empty() {
        return "no changes: no branch is stale".to_string();
    }
    let n = affected.len();
    let mut parts = Vec::new();
    for c in [
        Criterion::Merged,
        Criterion::SquashMerged,
        Criterion::Gone,
        Criterion::OlderThan,
    ] {
        let count = affected.iter().filter(|a| a.main_reason() == Some(c)).count();
        if count > 0 {
            parts.push(format!("{count} {}", c.label()));
        }
    }
    let lost: u64 = affected
        .iter()
        .filter(|a| a.loses_work)
        .map(|a| a.commits_not_in_base)
        .sum();
    format!(
        "delete {n} {} ({}); {lost} unmerged {} lost",
        plural(n as u64, "branch", "branches"),
        parts.join(", "),
        plural(lost, "commit", "commits"),
    )
}

pub fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::*;
    use time::macros::datetime;

    fn branch(name: &str, reason: Criterion, lost: u64) -> Affected {
        Affected {
            refname: format!("refs/heads/{name}"),
            oid: "1".repeat(40),
            reasons: vec![reason],
            last_commit_time: datetime!(2026-01-01 0:00 UTC),
            author: Person {
                name: "A".into(),
                email: "a@x".into(),
            },
            subject: "s".into(),
            commits_not_in_base: lost,
            loses_work: lost > 0,
            upstream: None,
            config: vec![ConfigEntry {
                key: format!("branch.{name}.remote"),
                value: "origin".into(),
            }],
        }
    }

    #[test]
    fn summary_counts_by_main_reason_and_lost_commits() {
        let a = [
            branch("a", Criterion::Merged, 0),
            branch("b", Criterion::Merged, 0),
            branch("c", Criterion::SquashMerged, 0),
            branch("d", Criterion::Gone, 3),
        ];
        assert_eq!(
            summary(&a),
            "delete 4 branches (2 merged, 1 squash-merged, 1 gone upstream); 3 unmerged commits lost"
        );
        assert_eq!(summary(&[]), "no changes: no branch is stale");
    }

    #[test]
    fn diff_lists_oid_and_each_config_key() {
        let d = diff(&[branch("a", Criterion::Merged, 0)]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].field, "oid");
        assert_eq!(d[1].field, "config:branch.a.remote");
        assert_eq!(d[1].to, None);
    }

    #[test]
    fn risk_rises_with_lost_work_and_bulk() {
        assert_eq!(risk(&[branch("a", Criterion::Merged, 0)]).level, RiskLevel::Low);
        assert_eq!(risk(&[branch("a", Criterion::Gone, 1)]).level, RiskLevel::Medium);
        let many: Vec<_> = (0..51)
            .map(|i| branch(&i.to_string(), Criterion::Gone, 1))
            .collect();
        assert_eq!(risk(&many).level, RiskLevel::High);
    }

    #[test]
    fn side_effects_count_upstreams_and_backup_only_commits() {
        let s = side_effects(&[branch("a", Criterion::Merged, 0), branch("b", Criterion::Gone, 2)]);
        assert!(
            s.iter()
                .any(|e| e.kind == SideEffectKind::UpstreamConfigRemoved && e.branches == 2)
        );
        assert!(
            s.iter()
                .any(|e| e.kind == SideEffectKind::UnmergedCommitsBackupOnly && e.commits == Some(2))
        );
    }
}
