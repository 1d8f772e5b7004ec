//! `show --since OLD`: what changed between an earlier plan of the same operation and this
//! one, branch by branch (added, removed, moved to another commit), diffed with `similar`
//! over the sorted ref names; for two previews of a command, line by line.

use crate::plan::model::{Plan, Resource};
use crate::text::safe;
use serde::Serialize;
use similar::{Algorithm, DiffTag, capture_diff_slices};

#[derive(Debug, Serialize)]
pub struct SinceView {
    pub old_plan_id: String,
    /// True when the operation's inputs (base, criteria, patterns) differ.
    pub inputs_changed: bool,
    pub changed: usize,
    pub added: usize,
    pub removed: usize,
    pub moved: usize,
    pub changes: Vec<Change>,
}

#[derive(Debug, Serialize)]
pub struct Change {
    /// `added`, `removed` or `moved`.
    pub change: &'static str,
    pub name: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// Two previews of a command: the lines the new one adds and drops.
fn preview_changes(old: &str, new: &str) -> Vec<Change> {
    let (added, removed) = crate::text::line_changes(old, new);
    let line = |kind, l: &String| Change {
        change: kind,
        name: safe(l),
        from: None,
        to: None,
    };
    let mut changes: Vec<Change> = removed.iter().map(|l| line("removed", l)).collect();
    changes.extend(added.iter().map(|l| line("added", l)));
    changes
}

pub fn build(old: &Plan, old_id: &str, new: &Plan) -> SinceView {
    // Two command plans compare previews; any other pair compares affected refs.
    if let (Some(o), Some(n)) = (old.operation.command(), new.operation.command()) {
        let changes = preview_changes(&o.preview_output.text, &n.preview_output.text);
        let count = |k: &str| changes.iter().filter(|c| c.change == k).count();
        return SinceView {
            old_plan_id: old_id.to_string(),
            inputs_changed: (&o.command, &o.preview, &o.files, &o.env)
                != (&n.command, &n.preview, &n.files, &n.env),
            changed: changes.len(),
            added: count("added"),
            removed: count("removed"),
            moved: 0,
            changes,
        };
    }
    fn sorted(p: &Plan) -> Vec<&Resource> {
        let mut v: Vec<&Resource> = p.affected.iter().collect();
        v.sort_by(|a, b| a.refname.cmp(&b.refname));
        v
    }
    let (o, n) = (sorted(old), sorted(new));
    let on: Vec<&str> = o.iter().map(|a| a.refname.as_str()).collect();
    let nn: Vec<&str> = n.iter().map(|a| a.refname.as_str()).collect();
    let mut changes = Vec::new();
    let change = |kind, a: &Resource, from: Option<&str>, to: Option<&str>| Change {
        change: kind,
        name: safe(a.name()),
        from: from.map(String::from),
        to: to.map(String::from),
    };
    for op in capture_diff_slices(Algorithm::Myers, &on, &nn) {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {
                for (a, b) in o[old_range].iter().zip(&n[new_range]) {
                    if a.oid != b.oid {
                        changes.push(change("moved", b, Some(&a.oid), Some(&b.oid)));
                    }
                }
            }
            DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                for a in &o[old_range] {
                    changes.push(change("removed", a, Some(&a.oid), None));
                }
                for b in &n[new_range] {
                    changes.push(change("added", b, None, Some(&b.oid)));
                }
            }
        }
    }
    let count = |k: &str| changes.iter().filter(|c| c.change == k).count();
    SinceView {
        old_plan_id: old_id.to_string(),
        inputs_changed: old.operation != new.operation,
        changed: changes.len(),
        added: count("added"),
        removed: count("removed"),
        moved: count("moved"),
        changes,
    }
}
