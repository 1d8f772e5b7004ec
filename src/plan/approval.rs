//! Approval, rejection and receipt payloads (docs/plan-format.md): plain serde data, strict.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub const RECEIPT_PAYLOAD_TYPE: &str = "application/vnd.guardctl.receipt.v1+json";
/// SSHSIG namespace of approvals and rejections.
pub const APPROVAL_NAMESPACE: &str = "guardctl-approval";
/// SSHSIG namespace of apply receipts (and of the executor's identity).
pub const APPLY_NAMESPACE: &str = "guardctl-apply";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
    /// Lifts the signer's own rejections named in `withdraws` (nothing else).
    Withdraw,
}

/// A signed statement by one principal about exactly one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    pub plan_id: String,
    pub plan_hash: String,
    pub repository: String,
    pub decision: Decision,
    pub principal: String,
    /// Fingerprint of the key that signs this approval.
    pub key: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The review groups this approval covers (`approve --group`); empty = every group the
    /// principal may approve. Still bound to the whole plan's id and hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// For a withdrawal: the ids (`sha256:` of the payload) of the rejections it lifts, each
    /// by the same principal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdraws: Vec<String>,
}

/// What an apply did, signed by the executor. Printed byte-identically on every replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    pub plan_id: String,
    pub plan_hash: String,
    pub repository: String,
    pub executor: String,
    pub key: String,
    pub approved_by: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub applied_at: OffsetDateTime,
    /// The one backup ref keeping every deleted tip reachable (none when nothing was deleted).
    pub backup: Option<String>,
    pub deleted: Vec<DeletedRef>,
    pub config_removed: usize,
    /// True when the observed effect equals the planned diff (for a command: it succeeded).
    pub verified: bool,
    pub mismatches: Vec<String>,
    /// For an exec plan: how the command ended and digests of what it printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecResult>,
    /// The receipt's place in the audit log, which it is the entry of (its signature is the
    /// entry's): `guardctl log --verify` finds every receipt there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditLink>,
}

/// A place in the audit log: the entry's number and the id of the entry before it, and the
/// id of the log's first entry (the log's identity: later entries can be re-signed by whoever
/// signed them, the first one stays, so a receipt or consumed marker naming it still names
/// this log when the entry before it was replaced; `evidence::unlogged_published`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditLink {
    pub seq: u64,
    pub prev: String,
    /// `None`: the log was empty (this is its first entry), or written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// How a planned command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecResult {
    pub command: Vec<String>,
    /// The exit status; `None` when killed by a signal or not started.
    pub status: Option<i32>,
    /// Why it did not end with a status, if so.
    pub error: Option<String>,
    pub stdout: String,
    pub stdout_bytes: u64,
    pub stderr: String,
    pub stderr_bytes: u64,
    /// With `--verify`: the manifest against what the verify command observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
}

/// Expected (the manifest) against observed (the `--verify` output), after the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verification {
    pub command: String,
    /// `state` (it lists what still exists) or `diff` (it lists what changed).
    pub prints: String,
    /// Its exit status; `None` when killed by a signal or not started.
    pub status: Option<i32>,
    /// The manifest's ids.
    pub expected: Vec<String>,
    /// The ids it printed.
    pub observed: Vec<String>,
    /// Manifest ids still present (`state`), or not among the changes (`diff`).
    pub remaining: Vec<String>,
    /// `diff` only: changes the manifest did not list.
    pub unexpected: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeletedRef {
    #[serde(rename = "ref")]
    pub refname: String,
    pub oid: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_round_trips_and_rejects_unknown_fields() {
        let a = Approval {
            plan_id: "sha256:1".into(),
            plan_hash: "sha256:2".into(),
            repository: "r".into(),
            decision: Decision::Approve,
            principal: "bob@example.com".into(),
            key: "SHA256:k".into(),
            created_at: time::macros::datetime!(2026-01-01 0:00 UTC),
            comment: None,
            groups: vec![],
            withdraws: vec![],
        };
        let bytes = serde_json::to_vec(&a).unwrap();
        assert_eq!(serde_json::from_slice::<Approval>(&bytes).unwrap(), a);
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v["extra"] = 1.into();
        assert!(serde_json::from_value::<Approval>(v).is_err());
    }
}
