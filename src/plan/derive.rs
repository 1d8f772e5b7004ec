//! Everything in a plan that is computed from its affected resources: the field-level diff,
//! the side effects, the risk tier and the summary line. Pure functions, so the plan writer
//! and the tests get the same answer, and text is always generated from the data.

use super::model::{Criterion, DiffEntry, Operation, Resource, Risk, RiskLevel, SideEffect, SideEffectKind};

/// One `oid` entry per branch, and one entry per configuration key it removes.
pub fn diff(affected: &[Resource]) -> Vec<DiffEntry> {
    let mut out = Vec::with_capacity(affected.len());
    for a in affected {
        out.push(DiffEntry {
            resource: a.refname.clone(),
            field: "oid".into(),
            from: Some(a.oid.clone()),
            to: None,
        });
        for c in a.config() {
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

/// What deleting `affected` does beyond removing the refs. Local branches take their reflog
/// and config with them; a remote's branches vanish from every clone and close pull requests.
pub fn side_effects(op: &Operation, affected: &[Resource]) -> Vec<SideEffect> {
    let mut out = Vec::new();
    // Every kind answers here (no wildcard): a new kind must say what deleting it does.
    let command = match op {
        Operation::Exec(e) => Some(e),
        Operation::Tags(t) => {
            return tag_side_effects(t.remote.is_some(), affected);
        }
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) => None,
    };
    if let Some(e) = command {
        if e.before_image.is_some() {
            out.push(SideEffect {
                kind: SideEffectKind::BeforeImageCommand,
                branches: 0,
                commits: None,
            });
        }
        out.push(SideEffect {
            kind: SideEffectKind::CommandRuns,
            branches: 0,
            commits: None,
        });
        return out;
    }
    if affected.is_empty() {
        return out;
    }
    if op.remote().is_some() {
        for kind in [
            SideEffectKind::ClonesLoseBranch,
            SideEffectKind::PullRequestsClosed,
        ] {
            out.push(SideEffect {
                kind,
                branches: affected.len() as u64,
                commits: None,
            });
        }
        out.extend(backup_only(affected));
        return out;
    }
    out.push(SideEffect {
        kind: SideEffectKind::ReflogDeleted,
        branches: affected.len() as u64,
        commits: None,
    });
    let upstream = affected
        .iter()
        .filter(|a| a.config().iter().any(|c| is_upstream_key(&c.key)));
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
        .filter(|a| a.config().iter().any(|c| !is_upstream_key(&c.key)));
    let other = other.count() as u64;
    if other > 0 {
        out.push(SideEffect {
            kind: SideEffectKind::BranchConfigRemoved,
            branches: other,
            commits: None,
        });
    }
    out.extend(backup_only(affected));
    out
}

/// Deleting tags: a remote's deleted tags live on in other clones; unmerged history survives
/// only in the backup.
fn tag_side_effects(remote: bool, affected: &[Resource]) -> Vec<SideEffect> {
    let mut out = Vec::new();
    if affected.is_empty() {
        return out;
    }
    if remote {
        out.push(SideEffect {
            kind: SideEffectKind::ClonesKeepTags,
            branches: affected.len() as u64,
            commits: None,
        });
    }
    out.extend(backup_only(affected));
    out
}

/// Commits that only the backup will keep.
fn backup_only(affected: &[Resource]) -> Option<SideEffect> {
    let losing: Vec<&Resource> = affected.iter().filter(|a| a.loses_work()).collect();
    (!losing.is_empty()).then(|| SideEffect {
        kind: SideEffectKind::UnmergedCommitsBackupOnly,
        branches: losing.len() as u64,
        commits: Some(losing.iter().map(|a| a.commits_not_in_base()).sum()),
    })
}

/// The risk tier of deleting one resource. Every deletion is backed up, so the tier says what
/// a mistake would cost: low when the branch's work is in the base (only a name goes); medium
/// when its commits survive only in the backup, or when it is one of a bulk plan no reviewer
/// reads row by row; high when both.
pub fn resource_risk(a: &Resource, bulk: bool) -> RiskLevel {
    match (a.loses_work(), bulk) {
        (false, false) => RiskLevel::Low,
        (true, true) => RiskLevel::High,
        _ => RiskLevel::Medium,
    }
}

/// The plan's tier: the highest of its resources', with the reasons that raised it.
/// `bulk_threshold` is the policy's: more affected resources than this make a plan bulk.
pub fn risk(op: &Operation, affected: &[Resource], bulk_threshold: u64) -> Risk {
    // An exec plan's resources are its manifest's ids.
    let count = super::manifest::of(op).map_or(affected.len(), |m| m.len());
    risk_of(op, affected, count as u64 > bulk_threshold)
}

/// `risk` when whether the plan is bulk is already known (from its review groups).
pub fn risk_of(op: &Operation, affected: &[Resource], bulk: bool) -> Risk {
    // guardctl cannot bound what a command does: only the preview says. Its manifest makes
    // it bulk like any plan.
    match op {
        Operation::Exec(_) => {
            let mut reasons = vec!["command".to_string()];
            if bulk {
                reasons.push("bulk".to_string());
            }
            return Risk {
                level: RiskLevel::High,
                reasons,
            };
        }
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {}
    }
    let mut reasons = Vec::new();
    if affected.iter().any(|a| a.loses_work()) {
        reasons.push("unmerged_work".to_string());
    }
    if bulk {
        reasons.push("bulk".to_string());
    }
    let level = affected
        .iter()
        .map(|a| resource_risk(a, bulk))
        .max()
        .unwrap_or(RiskLevel::Low);
    Risk { level, reasons }
}

/// "delete 4 branches (2 merged, 1 squash-merged, 1 gone upstream); 0 unmerged commits lost"
pub fn summary(op: &Operation, affected: &[Resource]) -> String {
    match op {
        Operation::Exec(e) => {
            let lines = e.preview_output.text.lines().count() as u64;
            return format!(
                "run {} (preview: {lines} {})",
                crate::text::safe(&shell_words(&e.command)),
                plural(lines, "line", "lines")
            );
        }
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {}
    }
    let (one, many) = op.nouns();
    if affected.is_empty() {
        return format!("no changes: no {one} is stale");
    }
    let n = affected.len();
    let mut parts = Vec::new();
    for c in [
        Criterion::Merged,
        Criterion::SquashMerged,
        Criterion::Gone,
        Criterion::OlderThan,
        Criterion::Matched,
    ] {
        let count = affected.iter().filter(|a| a.main_reason() == Some(c)).count();
        if count > 0 {
            parts.push(format!("{count} {}", c.label()));
        }
    }
    let lost: u64 = affected
        .iter()
        .filter(|a| a.loses_work())
        .map(|a| a.commits_not_in_base())
        .sum();
    format!(
        "delete {n} {} ({}); {lost} unmerged {} lost",
        plural(n as u64, one, many),
        parts.join(", "),
        plural(lost, "commit", "commits"),
    )
}

/// A command as one would type it: words quoted where a shell would need it.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::*;

    fn branch(name: &str, reason: Criterion, lost: u64) -> Resource {
        let mut a = Resource {
            reasons: vec![reason],
            ..test_data::branch(name, lost)
        };
        test_data::branch_facts(&mut a).config = vec![ConfigEntry {
            key: format!("branch.{name}.remote"),
            value: "origin".into(),
        }];
        a
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
            summary(&test_data::merged_inputs(), &a),
            "delete 4 branches (2 merged, 1 squash-merged, 1 gone upstream); 3 unmerged commits lost"
        );
        assert_eq!(
            summary(&test_data::merged_inputs(), &[]),
            "no changes: no branch is stale"
        );
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
        assert_eq!(
            risk(
                &test_data::merged_inputs(),
                &[branch("a", Criterion::Merged, 0)],
                50
            )
            .level,
            RiskLevel::Low
        );
        assert_eq!(
            risk(
                &test_data::merged_inputs(),
                &[branch("a", Criterion::Gone, 1)],
                50
            )
            .level,
            RiskLevel::Medium
        );
        let many: Vec<_> = (0..51)
            .map(|i| branch(&i.to_string(), Criterion::Gone, 1))
            .collect();
        assert_eq!(
            risk(&test_data::merged_inputs(), &many, 50).level,
            RiskLevel::High
        );
        assert_eq!(
            risk(&test_data::merged_inputs(), &many, 51).level,
            RiskLevel::Medium
        );
        let merged: Vec<_> = (0..51)
            .map(|i| branch(&i.to_string(), Criterion::Merged, 0))
            .collect();
        assert_eq!(
            risk(&test_data::merged_inputs(), &merged, 50).level,
            RiskLevel::Medium
        );
    }

    #[test]
    fn side_effects_count_upstreams_and_backup_only_commits() {
        let s = side_effects(
            &test_data::merged_inputs(),
            &[branch("a", Criterion::Merged, 0), branch("b", Criterion::Gone, 2)],
        );
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
