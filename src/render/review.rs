//! What `approve` and `reject` print: the plan's policy as a warning beside the plan shown to
//! the reviewer, the decision recorded (`--json`'s document, and the status line a person
//! reads), and where the plan stands once it counts.

use crate::render::view::{ApprovalsView, PolicyView, short_id};
use crate::text::safe;
use serde::Serialize;

/// A decision recorded: `approve --json`'s (and `reject --json`'s) document, its keys in
/// alphabetical order at every level, as it has always been written
/// ([`crate::render::sorted`]).
#[derive(Debug, Serialize)]
pub struct DecisionView {
    /// Where the plan stands once this decision counts.
    #[serde(serialize_with = "crate::render::sorted")]
    pub approvals: ApprovalsView,
    /// `approve`, `reject` or `withdraw`.
    pub decision: &'static str,
    /// The review groups an approval was scoped to.
    pub groups: Vec<String>,
    pub plan_id: String,
    pub principal: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedDecisionView>,
    /// The plan file it was appended to, or the detached approval file.
    pub written_to: Option<String>,
    /// The plan's operation (`stale-branches`, ...).
    #[serde(skip)]
    pub operation: &'static str,
}

/// Where the decision was published.
#[derive(Debug, Serialize)]
pub struct PublishedDecisionView {
    /// Refs that already held these bytes.
    pub already: Vec<String>,
    /// Refs created now.
    pub created: Vec<String>,
    #[serde(rename = "ref")]
    pub refname: String,
    /// The remote's name.
    pub remote: String,
    pub url: String,
}

/// Said plainly, apart from the plan's table: the approver signs under this policy.
pub fn policy_warning(policy: &PolicyView) -> Option<String> {
    (policy.status != "in_force").then(|| {
        format!(
            "the plan's policy ({}) is {}: {}",
            policy.source,
            policy.status.replace('_', " ").to_uppercase(),
            policy.detail.clone().unwrap_or_default()
        )
    })
}

/// "Approved stale-branches plan sha256:… as bob; recorded in plan.json.": what was decided,
/// by whom, and where it is recorded.
pub fn decision_line(d: &DecisionView) -> String {
    let scope = if d.groups.is_empty() {
        String::new()
    } else {
        format!(
            " (review group{} {})",
            if d.groups.len() == 1 { "" } else { "s" },
            d.groups.iter().map(|g| safe(g)).collect::<Vec<_>>().join(", ")
        )
    };
    let mut places: Vec<String> = d.written_to.iter().cloned().collect();
    if let Some(p) = &d.published {
        places.push(format!("{} on remote `{}`", p.refname, safe(&p.remote)));
    }
    format!(
        "{} {} plan {}{scope} as {}; recorded in {}.",
        match d.decision {
            "approve" => "Approved",
            "reject" => "Rejected",
            _ => "Withdrew the rejection of",
        },
        d.operation,
        short_id(&d.plan_id),
        safe(&d.principal),
        places.join(" and ")
    )
}

/// Where the plan stands once this approval or rejection counts: what is still missing.
pub fn standing_line(a: &ApprovalsView) -> String {
    if !a.rejected_by.is_empty() {
        return format!(
            "The plan is rejected (by {}): apply will refuse it.",
            a.rejected_by.join(", ")
        );
    }
    if !a.blocked_by.is_empty() {
        return format!(
            "The plan is blocked by {}, taken for a veto: apply will refuse it.",
            a.blocked_by.join("; ")
        );
    }
    let open: Vec<String> = a
        .groups
        .iter()
        .filter(|g| g.missing > 0)
        .map(|g| {
            let who = match g.open_approvers() {
                None => "any principal but the planner".to_string(),
                Some(open) => open.join(", "),
            };
            format!("{} needs {} more (from {who})", g.name, g.missing)
        })
        .collect();
    if open.is_empty() {
        "Every approval the plan needs is in place.".to_string()
    } else {
        format!("Still needed: {}.", open.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::view::GroupView;

    #[test]
    fn the_document_has_the_bytes_json_wrote() {
        let approvals = ApprovalsView {
            groups: vec![GroupView {
                name: "default".into(),
                kind: "default",
                resources: 3,
                required: 2,
                from: vec![],
                approvers: vec![],
                approved_by: vec!["bob".into()],
                missing: 1,
            }],
            approved_by: vec!["bob".into()],
            ..Default::default()
        };
        let d = DecisionView {
            approvals: approvals.clone(),
            decision: "approve",
            groups: vec!["ops".into()],
            plan_id: "sha256:ab".into(),
            principal: "bob".into(),
            published: Some(PublishedDecisionView {
                already: vec![],
                created: vec!["refs/guardctl/x".into()],
                refname: "refs/guardctl/x".into(),
                remote: "origin".into(),
                url: "/r".into(),
            }),
            written_to: Some("plan.json".into()),
            operation: "stale-branches",
        };
        let mut before = serde_json::json!({
            "decision": "approve",
            "plan_id": "sha256:ab",
            "principal": "bob",
            "groups": ["ops"],
            "written_to": "plan.json",
            "approvals": approvals,
        });
        before["published"] = serde_json::json!({
            "remote": "origin",
            "url": "/r",
            "ref": "refs/guardctl/x",
            "created": ["refs/guardctl/x"],
            "already": Vec::<String>::new(),
        });
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            serde_json::to_string(&before).unwrap()
        );
        assert_eq!(
            decision_line(&d),
            "Approved stale-branches plan sha256:ab… (review group ops) as bob; recorded in plan.json and refs/guardctl/x on remote `origin`."
        );
        assert_eq!(
            standing_line(&d.approvals),
            "Still needed: default needs 1 more (from any principal but the planner)."
        );
    }
}
