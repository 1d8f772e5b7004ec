//! What `rollback` restored: `rollback --json`'s document and the human report, from the same
//! view; and the apply made in another clone a rollback restored from (also the details of
//! its refusals).

use crate::plan::approval::{DeletedRef, Receipt};
use crate::text::safe;
use serde::Serialize;
use std::fmt::Write;

/// `rollback --json`'s document, its keys in alphabetical order at every level, as it has
/// always been written ([`crate::render::sorted`]).
#[derive(Debug, Serialize)]
pub struct RollbackView<'a> {
    pub already_present: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_elsewhere: Option<ElsewhereView<'a>>,
    pub plan_id: &'a str,
    pub recorded_in_log: bool,
    pub restored: usize,
    /// What the plan deleted (listed by the human report only).
    #[serde(skip)]
    pub refs: &'a [DeletedRef],
}

/// The apply made in another clone, as its verified receipt on the team remote says.
#[derive(Debug, Serialize)]
pub struct ElsewhereView<'a> {
    pub applied_at: String,
    #[serde(serialize_with = "super::sorted")]
    pub deleted: &'a [DeletedRef],
    pub executor: &'a str,
    pub key: &'a str,
    pub remote: &'a str,
    pub url: &'a str,
}

impl<'a> ElsewhereView<'a> {
    /// The receipt published on `remote` (at `url`).
    pub fn of(remote: &'a str, url: &'a str, receipt: &'a Receipt) -> ElsewhereView<'a> {
        ElsewhereView {
            applied_at: crate::text::rfc3339(receipt.applied_at),
            deleted: &receipt.deleted,
            executor: &receipt.executor,
            key: &receipt.key,
            remote,
            url,
        }
    }
}

/// `rollback`'s human report.
pub fn human(view: &RollbackView) -> String {
    let mut s = String::new();
    let short = super::view::short_id(view.plan_id);
    let how = match view.applied_elsewhere {
        Some(_) => " (applied in another clone)",
        None => "",
    };
    let _ = writeln!(
        s,
        "Rolled back plan {short}{how}: restored {} branches ({} already present).",
        view.restored, view.already_present
    );
    if !view.recorded_in_log {
        let _ = writeln!(s, "  not recorded in the audit log: the log is broken");
    }
    for r in view.refs {
        let _ = writeln!(s, "  {} at {}", safe(&r.refname), &r.oid[..12.min(r.oid.len())]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document `rollback --json` printed when it was built with `json!`.
    #[test]
    fn the_document_is_the_one_json_built() {
        let deleted = vec![DeletedRef {
            refname: "refs/heads/topic".into(),
            oid: "1".repeat(40),
        }];
        let elsewhere = ElsewhereView {
            applied_at: "2026-06-01T12:00:00Z".into(),
            deleted: &deleted,
            executor: "alice",
            key: "SHA256:k",
            remote: "origin",
            url: "file:///r",
        };
        let old = serde_json::json!({
            "plan_id": "sha256:ab",
            "restored": 1,
            "already_present": 0,
            "recorded_in_log": false,
            "applied_elsewhere": {
                "remote": "origin",
                "url": "file:///r",
                "executor": "alice",
                "key": "SHA256:k",
                "applied_at": "2026-06-01T12:00:00Z",
                "deleted": deleted,
            },
        });
        let view = RollbackView {
            already_present: 0,
            applied_elsewhere: Some(elsewhere),
            plan_id: "sha256:ab",
            recorded_in_log: false,
            restored: 1,
            refs: &deleted,
        };
        assert_eq!(serde_json::to_string(&view).unwrap(), old.to_string());
        assert_eq!(
            human(&view),
            "Rolled back plan sha256:ab… (applied in another clone): restored 1 branches (0 already present).\n  not recorded in the audit log: the log is broken\n  refs/heads/topic at 111111111111\n"
        );
    }
}
