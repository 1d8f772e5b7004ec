//! The result of an apply, rendered from the verified receipt, so that every replay prints
//! exactly the same bytes: the human text ([`human`], [`applied`]) and the JSON document
//! ([`json`], what the apply stores; [`AppliedDoc`], what `apply --json` prints).

use crate::plan::approval::Receipt;
use crate::plan::envelope::Envelope;
use serde::Serialize;
use std::fmt::Write;

/// What `guardctl --json apply` prints: the recorded document (`receipt`, `envelope`), whether
/// this run found the plan applied before, and for a plan bound to a remote where it is
/// consumed (`remote` or `clone`). Its keys in alphabetical order at every level, as it has
/// always been written ([`crate::render::sorted`]).
#[derive(Debug, Serialize)]
pub struct AppliedDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_on: Option<&'a str>,
    #[serde(serialize_with = "super::sorted")]
    pub envelope: &'a Envelope,
    #[serde(serialize_with = "super::sorted")]
    pub receipt: &'a Receipt,
    pub replayed: bool,
}

/// What `guardctl apply` prints: for a replay, that nothing was changed now; for a plan
/// consumed in the applying clone only, what that leaves another clone able to do
/// (`command`: the plan ran a command); then the receipt ([`human`]).
pub fn applied(r: &Receipt, plan_id: &str, replayed: bool, clone_only: bool, command: bool) -> String {
    let mut s = String::new();
    if replayed {
        let _ = writeln!(
            s,
            "Replayed: plan {plan_id} was applied before; nothing was changed now. Its recorded result:"
        );
    }
    if clone_only {
        let _ = writeln!(
            s,
            "Consumed in this clone only: the policy sets `[remote] consumed_marker = false`, so no other clone is told this plan was applied{}",
            if command {
                "; another clone could run its command again"
            } else {
                "; another clone's apply finds the refs gone (drift) and deletes nothing"
            }
        );
    }
    s + &human(r)
}

pub fn human(r: &Receipt) -> String {
    let mut s = String::new();
    let state = if r.verified { "verified" } else { "NOT verified" };
    match &r.exec {
        Some(x) => {
            let ended = match (x.status, &x.error) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(why)) => format!("did not run to the end ({})", crate::text::safe(why)),
                (None, None) => "killed by a signal".to_string(),
            };
            let _ = writeln!(
                s,
                "Applied plan {}: ran {}: {ended}; {state}.",
                super::view::short_id(&r.plan_id),
                crate::text::safe(&crate::plan::derive::shell_words(&x.command))
            );
        }
        None if r.deleted.is_empty() => {
            let _ = writeln!(
                s,
                "Applied plan {}: nothing to do (the plan matched nothing); {state}.",
                super::view::short_id(&r.plan_id)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Applied plan {}: deleted {} {}; {state}.",
                super::view::short_id(&r.plan_id),
                r.deleted.len(),
                if r.deleted
                    .first()
                    .is_some_and(|d| d.refname.starts_with("refs/tags/"))
                {
                    crate::plan::derive::plural(r.deleted.len() as u64, "tag", "tags")
                } else {
                    crate::plan::derive::plural(r.deleted.len() as u64, "branch", "branches")
                }
            );
        }
    }
    let _ = writeln!(s, "  repository {}", crate::text::safe(&r.repository));
    let _ = writeln!(s, "  executor   {} ({})", crate::text::safe(&r.executor), r.key);
    let approvers: Vec<String> = r.approved_by.iter().map(|p| crate::text::safe(p)).collect();
    if approvers.is_empty() {
        let _ = writeln!(s, "  approved   (no approval needed: the plan changes nothing)");
    } else {
        let _ = writeln!(s, "  approved   {}", approvers.join(", "));
    }
    let _ = writeln!(s, "  applied    {}", super::view::rfc3339(r.applied_at));
    if let Some(b) = &r.backup {
        let _ = writeln!(
            s,
            "  backup     {} (keeps every deleted tip)",
            crate::text::safe(b)
        );
    }
    // Bounded, like `show`: the signed receipt lists every branch.
    for d in r.deleted.iter().take(super::view::PAGE_SIZE) {
        let short: String = d.oid.chars().take(12).collect();
        let _ = writeln!(s, "  - {} ({short})", crate::text::safe(&d.refname));
    }
    if let Some(more) = r
        .deleted
        .len()
        .checked_sub(super::view::PAGE_SIZE)
        .filter(|n| *n > 0)
    {
        let _ = writeln!(
            s,
            "  ... and {more} more (every one is in the signed receipt: `guardctl --json apply` replays it)"
        );
    }
    if r.config_removed > 0 {
        let _ = writeln!(
            s,
            "  removed the config sections of {} {} (kept in the before-image)",
            r.config_removed,
            crate::plan::derive::plural(r.config_removed as u64, "branch", "branches")
        );
    }
    for m in &r.mismatches {
        let _ = writeln!(s, "  mismatch: {}", crate::text::safe(m));
    }
    if let Some(x) = &r.exec {
        let _ = writeln!(s, "  stdout     {} ({} bytes)", x.stdout, x.stdout_bytes);
        let _ = writeln!(s, "  stderr     {} ({} bytes)", x.stderr, x.stderr_bytes);
        if let Some(v) = &x.verification {
            let _ = writeln!(
                s,
                "  verify     {}: {} expected, {} observed, {} {}",
                crate::text::safe(&v.command),
                v.expected.len(),
                v.observed.len(),
                v.remaining.len(),
                if v.prints == "diff" {
                    "not changed"
                } else {
                    "still present"
                }
            );
        }
        let _ = writeln!(
            s,
            "The command's output is kept in .git/guardctl/plans/{}/command-stdout and command-stderr.",
            r.plan_id.trim_start_matches("sha256:")
        );
        return s;
    }
    if !r.deleted.is_empty() {
        let _ = writeln!(s, "Undo with: guardctl rollback {}", r.plan_id);
    }
    s
}

pub fn json(r: &Receipt, envelope: &Envelope) -> Result<String, serde_json::Error> {
    let doc = serde_json::json!({"receipt": r, "envelope": envelope});
    let bytes = crate::text::json_pretty(&doc)?;
    // serde_json writes UTF-8; lossy only to avoid a second error type for the impossible.
    Ok(String::from_utf8_lossy(&bytes).into_owned() + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::approval::DeletedRef;

    fn receipt() -> Receipt {
        Receipt {
            plan_id: format!("sha256:{}", "ab".repeat(32)),
            plan_hash: "sha256:00".into(),
            repository: "file:///r".into(),
            executor: "alice".into(),
            key: "SHA256:k".into(),
            approved_by: vec!["bob".into()],
            applied_at: time::macros::datetime!(2026-06-01 12:00 UTC),
            backup: Some("refs/guardctl/backup/x".into()),
            deleted: vec![DeletedRef {
                refname: "refs/heads/topic".into(),
                oid: "1".repeat(40),
            }],
            config_removed: 0,
            verified: true,
            mismatches: vec![],
            exec: None,
            audit: None,
        }
    }

    /// `apply --json`'s document is the one it printed when it was the stored document
    /// re-parsed into a `serde_json::Value` with `replayed` and `consumed_on` added.
    #[test]
    fn the_applied_document_is_the_recorded_one_with_replayed_and_consumed_on() {
        let r = receipt();
        let envelope = Envelope {
            payload_type: "application/x".into(),
            payload: "e30=".into(),
            signatures: vec![],
        };
        for (replayed, consumed_on) in [(false, None), (true, Some("clone")), (true, Some("remote"))] {
            let mut old: serde_json::Value = serde_json::from_str(&json(&r, &envelope).unwrap()).unwrap();
            old["replayed"] = replayed.into();
            if let Some(on) = consumed_on {
                old["consumed_on"] = on.into();
            }
            let new = AppliedDoc {
                consumed_on,
                envelope: &envelope,
                receipt: &r,
                replayed,
            };
            assert_eq!(
                crate::text::json_pretty(&new).unwrap(),
                crate::text::json_pretty(&old).unwrap()
            );
        }
    }

    #[test]
    fn a_replay_says_so_before_the_receipt() {
        let r = receipt();
        let text = applied(&r, &r.plan_id, true, true, false);
        assert!(text.starts_with("Replayed: plan sha256:abab"), "{text}");
        assert!(text.contains("Consumed in this clone only"), "{text}");
        assert!(text.ends_with(&human(&r)), "{text}");
        assert_eq!(applied(&r, &r.plan_id, false, false, false), human(&r));
    }
}
