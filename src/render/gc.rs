//! What `gc` collected: `gc --json`'s document and the human lines, from the same list.

use serde::Serialize;

/// `gc --json`'s document, its keys in alphabetical order as it has always been written.
#[derive(Debug, Serialize)]
pub struct GcView {
    pub collected: Vec<CollectedView>,
}

/// One backup removed: the plan's id and how many refs the backup kept.
#[derive(Debug, Serialize)]
pub struct CollectedView {
    pub plan_id: String,
    pub refs: usize,
}

/// `gc`'s human output.
pub fn human(view: &GcView) -> String {
    if view.collected.is_empty() {
        return "Nothing to collect: every backup is within its retention.\n".into();
    }
    view.collected
        .iter()
        .map(|c| {
            format!(
                "Removed the backup of {} branches of plan {}.\n",
                c.refs,
                super::view::short_id(&c.plan_id)
            )
        })
        .collect()
}
