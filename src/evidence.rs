//! What else knows that an apply happened, besides the audit log, and what `log --verify`
//! checks the log against: the approvals behind each receipt (kept beside it, [`APPROVALS`]),
//! this clone's journals and backup refs, and the receipts its team remote published.
//!
//! Anyone who can write `.git` can rewrite the log consistently with their own key: drop the
//! last apply, rewind the anchor, delete the receipt file, or re-sign a receipt saying
//! something else. What they cannot rewrite is what others hold: the approvers' signatures,
//! and the receipt the apply published on the team remote's ledger (append-only where the
//! host protects it, docs/remote.md). Each check here names the entry where the log stops
//! agreeing with one of them.

use crate::error::Result;
use crate::execute::records;
use crate::plan::approval::{Decision, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::plan::envelope::Envelope;
use crate::repo::Repo;
use crate::sign::{AllowedSigners, dsse};
use crate::store::Store;
use crate::store::audit::{Break, GENESIS, Record};
use crate::store::published::Snapshot;
use crate::store::state::Step;
use crate::text::safe;
use std::collections::HashSet;

/// Where `apply` keeps the approval envelopes its receipt names (a JSON array), beside the
/// receipt in `.git/guardctl/plans/<id>/`.
pub const APPROVALS: &str = "approvals.json";

/// The earlier of two breaks (entries from the first one on cannot be trusted).
pub fn earliest(a: Option<Break>, b: Option<Break>) -> Option<Break> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.line < a.line { b } else { a }),
        (a, b) => a.or(b),
    }
}

fn id_hex(plan_id: &str) -> &str {
    plan_id.strip_prefix("sha256:").unwrap_or(plan_id)
}

/// Every receipt of the log with its entry.
fn receipts(records: &[Record]) -> Vec<(&Record, Receipt)> {
    records
        .iter()
        .filter_map(|r| r.receipt_payload().map(|p| (r, p)))
        .collect()
}

/// The first receipt naming an approver that no approval kept beside it backs: an approval
/// envelope of that plan (its id and hash), signed by a key the trusted identities list for
/// that principal. A receipt re-signed by its executor to name others, or no one, than those
/// who approved, stops agreeing with the signatures only the approvers could make.
pub fn unbacked_approvers(
    records: &[Record],
    store: &Store,
    signers: &AllowedSigners,
) -> Result<Option<Break>> {
    for (record, receipt) in receipts(records) {
        let id = id_hex(&receipt.plan_id);
        let path = store.plan_dir(id).join(APPROVALS);
        let broken = |reason: String| Break {
            line: record.seq,
            reason,
        };
        let Some(bytes) = store.read_file(id, APPROVALS)? else {
            return Ok(Some(broken(format!(
                "the approvals of the receipt of plan {} are not in guardctl's state ({} is missing)",
                safe(&receipt.plan_id),
                path.display()
            ))));
        };
        let Ok(kept) = serde_json::from_slice::<Vec<Envelope>>(&bytes) else {
            return Ok(Some(broken(format!(
                "{} is not a list of approvals",
                path.display()
            ))));
        };
        let backed: Vec<String> = kept
            .iter()
            .filter_map(|e| crate::gate::check_approval(signers, e, receipt.applied_at).ok())
            .filter(|c| {
                let a = &c.approval;
                a.decision == Decision::Approve
                    && a.plan_id == receipt.plan_id
                    && a.plan_hash == receipt.plan_hash
                    && a.key == c.signer_fingerprint
                    && c.signer_principals.contains(&a.principal)
            })
            .map(|c| c.approval.principal)
            .collect();
        if let Some(p) = receipt.approved_by.iter().find(|p| !backed.contains(p)) {
            return Ok(Some(broken(format!(
                "the receipt of plan {} names {} as an approver, but no approval of that plan by a key of {} is kept beside it",
                safe(&receipt.plan_id),
                safe(p),
                safe(p)
            ))));
        }
        if receipt.approved_by.is_empty() && !backed.is_empty() {
            return Ok(Some(broken(format!(
                "the receipt of plan {} names no approver, but {} approved it",
                safe(&receipt.plan_id),
                backed.iter().map(|p| safe(p)).collect::<Vec<_>>().join(", ")
            ))));
        }
    }
    Ok(None)
}

/// A plan this clone applied whose receipt is not in the log: its journal says it is done,
/// or its backup ref (`refs/guardctl/backup/<id>`) keeps what it deleted while no journal
/// says an apply is still to be finished (`recover`). Reported after the last entry: the
/// entry is gone, not misplaced.
pub fn unlogged_applies(records: &[Record], store: &Store, repo: &Repo) -> Result<Option<Break>> {
    let logged: HashSet<String> = receipts(records)
        .into_iter()
        .map(|(_, r)| id_hex(&r.plan_id).to_string())
        .collect();
    let after = records.len() as u64 + 1;
    let steps = |id: &str| store.journal_steps(id).unwrap_or_default();
    for id in store.plan_ids()? {
        if crate::store::state::is_plan_id_hex(&id)
            && !logged.contains(&id)
            && steps(&id).contains(&Step::Done)
        {
            return Ok(Some(Break {
                line: after,
                reason: format!(
                    "plan sha256:{id}'s journal says it was applied, but its receipt is not in the log (its entry was removed)"
                ),
            }));
        }
    }
    let prefix = format!("{}/", crate::store::state::BACKUP_NAMESPACE);
    for refname in repo.refs_under(&prefix)? {
        let id = &refname[prefix.len()..];
        let pending = steps(id).last().is_some_and(|s| *s != Step::Done);
        if crate::store::state::is_plan_id_hex(id) && !logged.contains(id) && !pending {
            return Ok(Some(Break {
                line: after,
                reason: format!(
                    "{} keeps what plan sha256:{id} deleted, but its receipt is not in the log (its entry was removed)",
                    safe(&refname)
                ),
            }));
        }
    }
    Ok(None)
}

/// The entries signed in `guardctl-approval` (store::audit): a reviewer's, not an executor's.
const APPROVAL_EVENTS: [&str; 3] = ["approve", "reject", "withdraw"];

/// A receipt published on the team remote that is an entry of this log and is not in it:
/// it follows an entry of this log (its `audit.prev`) and was signed by a key that acted
/// here as an executor does (an entry in `guardctl-apply`: a receipt, rollback, recover,
/// gc) and that speaks for the receipt's executor, yet the log holds something else at its
/// place, or ends before it. "Follows" is by the entry before it or by the log's first
/// entry ([`names_this_log`]): an executor who re-signs the entry before an apply, then
/// erases the apply, changes the one and not the other. Other receipts (other clones', junk) say nothing about this log
/// and are not read further: entry ids are public (every published receipt names the one
/// before it), so a reviewer who approved in this clone, or anyone with a key, could
/// otherwise sign a receipt "following" an honest log and have it reported as erased. A
/// receipt that follows the log's start (`prev` is the genesis) cannot be told apart from
/// another clone's first and is left out.
pub fn unlogged_published(
    records: &[Record],
    snapshot: &Snapshot,
    signers: &AllowedSigners,
) -> Result<Option<Break>> {
    let keys = executor_keys(records);
    let logged: HashSet<&str> = records.iter().map(|r| r.payload.as_str()).collect();
    let mut first = None;
    for id in snapshot.receipt_ids()? {
        let Some((env, v, receipt)) = signed_item::<Receipt>(snapshot.receipt(&id)?, RECEIPT_PAYLOAD_TYPE)
        else {
            continue;
        };
        if logged.contains(env.payload.as_str()) {
            continue;
        }
        let Some(link) = receipt.audit else {
            continue;
        };
        if !names_this_log(records, &link) || !keys.contains(v.fingerprint.as_str()) {
            continue;
        }
        // As `audit::check_trust` reads a receipt: a plan with no executor principal (its
        // executor named by key) has a receipt naming none, whose key must be trusted.
        let principals = records::apply_principals(signers, &v, &env, receipt.applied_at);
        let speaks = match receipt.executor.as_str() {
            "" => !principals.is_empty(),
            executor => principals.iter().any(|p| p == executor),
        };
        if !speaks {
            continue;
        }
        let here = match records.iter().find(|r| r.seq == link.seq) {
            // Its place holds an entry with another id (the receipt is not `logged`).
            Some(_) => format!("entry {} here is another", link.seq),
            None => format!("the log here ends at entry {}", records.len()),
        };
        first = earliest(
            first,
            Some(Break {
                line: link.seq,
                reason: format!(
                    "the team remote holds the receipt of plan sha256:{id} as entry {} of this log, which does not have it ({here}: the entry was removed or replaced)",
                    link.seq
                ),
            }),
        );
    }
    Ok(first)
}

/// The keys that acted in this log as an executor does (an entry in `guardctl-apply`: a
/// receipt, rollback, recover, gc).
fn executor_keys(records: &[Record]) -> HashSet<&str> {
    records
        .iter()
        .filter(|r| !APPROVAL_EVENTS.contains(&r.event.as_str()))
        .map(|r| r.key.as_str())
        .collect()
}

/// A published item's envelope, verified as `payload_type` in `guardctl-apply`, and its
/// payload read as `T` (`execute::records::open`); `None` when it is missing, unreadable,
/// junk, or does not verify (it then says nothing about this log).
fn signed_item<T: serde::de::DeserializeOwned>(
    item: Option<crate::store::published::ConsumedItem>,
    payload_type: &str,
) -> Option<(Envelope, dsse::Verified, T)> {
    let (value, v, env) = records::open::<T>(&item?.marker.ok()?, payload_type, "record").ok()?;
    Some((env, v, value))
}

/// Whether the place `link` that a published receipt or marker names is in this log: it
/// follows an entry here (the id before it and the number after), or it names this log's
/// first entry as its log's first. The first entry's id is the log's identity: whoever signed
/// an entry can re-sign it (changing its id, and every `prev` after it), but the first entry
/// of a log with others' entries in it cannot be replaced without breaking their chain, and
/// one replaced makes a new log that the remote's items do not name. Items that follow the
/// log's start (`prev` is the genesis, no first entry) cannot be told apart from another
/// clone's first, and are left out.
fn names_this_log(records: &[Record], link: &crate::plan::approval::AuditLink) -> bool {
    let follows = link.prev != GENESIS && records.iter().any(|r| r.id == link.prev && r.seq + 1 == link.seq);
    let same_first = matches!((&link.first, records.first()), (Some(f), Some(r)) if *f == r.id);
    follows || same_first
}

/// A consumed marker published on the team remote by an apply made in this clone (it names
/// this log: [`names_this_log`]; signed by a key that acted here as an executor and that the
/// trusted identities still list for applying) whose plan the log records nothing of after
/// that place: no receipt and no recovery of it. The marker reaches the remote in the same
/// atomic push as the deletions, before the receipt, so an executor who keeps the receipt
/// off the remote (junk pushed at its name first, or guardctl killed after the push) and then
/// erases the apply is still found. `last_step`: the last step of a plan's journal here; a
/// plan whose apply this clone has yet to finish or recover is not a break.
pub fn unlogged_consumed(
    records: &[Record],
    snapshot: &Snapshot,
    signers: &AllowedSigners,
    last_step: &dyn Fn(&str) -> Option<Step>,
) -> Result<Option<Break>> {
    use crate::store::state::{CONSUMED_PAYLOAD_TYPE, Consumed};
    let keys = executor_keys(records);
    let mut first = None;
    for id in snapshot.consumed_ids()? {
        let Some((env, v, marker)) = signed_item::<Consumed>(snapshot.consumed(&id)?, CONSUMED_PAYLOAD_TYPE)
        else {
            continue;
        };
        let Some(link) = marker.audit else {
            continue;
        };
        if marker.plan_id != format!("sha256:{id}")
            || !names_this_log(records, &link)
            || !keys.contains(v.fingerprint.as_str())
        {
            continue;
        }
        // A ref plan (read from the remote, under its own id; one not found there cannot
        // say): its marker lands in the one atomic push with its deletions, so an honest
        // clone holding it either journals the apply done (and logs its receipt) or has it
        // still to recover. An exec plan's marker is pushed before its command runs, and its
        // apply may end aborted or abandoned with the marker there.
        let ref_plan = matches!(
            snapshot.plan(&id),
            Ok(Some(l)) if !matches!(l.plan.operation, crate::plan::model::Operation::Exec(_))
        );
        // Pending: a journal `recover` has yet to act on. The journal is the executor's to
        // write: a ref plan's journal that ends `aborted` (or any other settled step but
        // `done`) is no excuse for a marker that landed with the deletions (attack33).
        let pending = match last_step(&id) {
            None | Some(Step::Done) => false,
            Some(s) if ref_plan => !matches!(
                s,
                Step::Refused
                    | Step::Aborted
                    | Step::RecoveredUnstarted
                    | Step::RolledBack
                    | Step::RollbackAbandoned
            ),
            Some(_) => true,
        };
        if pending {
            continue;
        }
        if records::apply_principals(signers, &v, &env, marker.created_at).is_empty() {
            continue;
        }
        // The receipt's entry, or a recovery's (an abandoned exec apply), comes at or after
        // the place the marker names: recovery may finish an apply after other entries.
        // A recovery stands for the apply only where the plan may have been abandoned with its
        // marker on the remote: an exec plan (its marker is pushed before the command runs). A
        // ref plan's marker lands in the one atomic push with its deletions, so an honest
        // `recover` completes it with a receipt; a `recover` entry alone is the executor's own
        // word (any entry they can sign) put where an erased apply was (attack33).
        let recorded = records.iter().any(|r| {
            r.seq >= link.seq
                && r.plan_id.as_deref() == Some(marker.plan_id.as_str())
                && (r.event == "apply" || (r.event == "recover" && !ref_plan))
        });
        if recorded {
            continue;
        }
        first = earliest(
            first,
            Some(Break {
                line: link.seq,
                reason: format!(
                    "the team remote holds the consumed marker of plan sha256:{id}, applied in this clone as entry {} of this log or later, but the log records no apply of it (the entry was removed)",
                    link.seq
                ),
            }),
        );
    }
    Ok(first)
}

/// The first break among the local checks ([`unbacked_approvers`], [`unlogged_applies`]).
pub fn check_local(
    records: &[Record],
    store: &Store,
    repo: &Repo,
    signers: &AllowedSigners,
) -> Result<Option<Break>> {
    Ok(earliest(
        unbacked_approvers(records, store, signers)?,
        unlogged_applies(records, store, repo)?,
    ))
}
