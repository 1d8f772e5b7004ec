//! What `verify` prints of a plan that passed every check: `verify --json`'s document and,
//! from the same view, the lines a person reads.

use crate::plan::model::Plan;
use crate::policy::checks::{ApprovalReport, DecisionComment, GroupStatus};
use crate::render::view::short_id;
use crate::text::safe;
use serde::Serialize;
use std::io::{self, Write};

/// `verify --json`'s document, its keys in alphabetical order at every level, as it has
/// always been written ([`crate::render::sorted`]).
#[derive(Debug, Serialize)]
pub struct VerifyView {
    pub allowed_signers: Option<SignersView>,
    pub already_applied: bool,
    pub approved_by: Vec<String>,
    #[serde(serialize_with = "crate::render::sorted")]
    pub comments: Vec<DecisionComment>,
    #[serde(serialize_with = "crate::render::sorted")]
    pub groups: Vec<GroupStatus>,
    /// Always true: a failed check is an error.
    pub ok: bool,
    pub plan_id: String,
    /// Whether a person is shown each group (more than one, or one naming its approvers).
    #[serde(skip)]
    pub list_groups: bool,
}

/// Where the trusted identities were read from.
#[derive(Debug, Serialize)]
pub struct SignersView {
    pub location: String,
    pub source: &'static str,
}

impl VerifyView {
    /// The view of plan `plan_id` (`plan`) that passed with `report`; `consumed`: applied
    /// before; `signers`: where the trusted identities came from and how.
    pub fn new(
        plan: &Plan,
        plan_id: &str,
        report: &ApprovalReport,
        consumed: bool,
        signers: Option<(String, &'static str)>,
    ) -> VerifyView {
        VerifyView {
            plan_id: plan_id.to_string(),
            ok: true,
            already_applied: consumed,
            allowed_signers: signers.map(|(location, source)| SignersView { location, source }),
            approved_by: report.approved_by.clone(),
            groups: report.groups.clone(),
            comments: report.comments.clone(),
            list_groups: report.groups.len() > 1 || plan.review.iter().any(|g| !g.from.is_empty()),
        }
    }
}

/// What `verify` tells a person.
pub fn render(v: &VerifyView, _color: bool, w: &mut dyn Write) -> io::Result<()> {
    let what = if v.already_applied {
        "already applied; `apply` would print its receipt"
    } else {
        "`apply` would proceed"
    };
    writeln!(
        w,
        "Plan {} passes every check (approved by {}): {what}.",
        short_id(&v.plan_id),
        v.approved_by
            .iter()
            .map(|p| safe(p))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if v.list_groups {
        for g in &v.groups {
            writeln!(
                w,
                "  {:<16} {} of {} approved: {}",
                safe(&g.name),
                g.approved_by.len(),
                g.required,
                g.approved_by
                    .iter()
                    .map(|p| safe(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    for c in &v.comments {
        writeln!(
            w,
            "  {} ({}): {}",
            safe(&c.principal),
            c.decision,
            safe(&c.comment)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_has_the_bytes_json_wrote() {
        let report = ApprovalReport {
            groups: vec![GroupStatus {
                name: "default".into(),
                required: 1,
                approved_by: vec!["bob".into()],
                missing: 0,
                approvers: vec![],
            }],
            approved_by: vec!["bob".into()],
            comments: vec![DecisionComment {
                principal: "bob".into(),
                decision: "approve",
                comment: "ok".into(),
            }],
            ..Default::default()
        };
        let v = VerifyView {
            allowed_signers: Some(SignersView {
                location: "/s".into(),
                source: "--allowed-signers",
            }),
            already_applied: false,
            approved_by: report.approved_by.clone(),
            comments: report.comments.clone(),
            groups: report.groups.clone(),
            ok: true,
            plan_id: "sha256:ab".into(),
            list_groups: false,
        };
        let before = serde_json::json!({
            "plan_id": "sha256:ab",
            "ok": true,
            "already_applied": false,
            "allowed_signers": {"location": "/s", "source": "--allowed-signers"},
            "approved_by": report.approved_by,
            "groups": report.groups,
            "comments": report.comments,
        });
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            serde_json::to_string(&before).unwrap()
        );
    }
}
