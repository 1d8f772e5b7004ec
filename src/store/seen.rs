//! The plans this clone has seen (`<state>/seen/`): each plan `approve`, `reject` or `apply`
//! took in, kept until it expires, so that the bulk class can count a planner's other live
//! plans (`bulk.across_plans`): splitting one deletion into several small plans must not keep
//! each one away from the bulk approvers.
//!
//! Each entry is the plan file as signed (approvals stripped), named
//! `<counted until, unix>-<plan id hex>.json` so that entries no longer counted are skipped
//! and pruned by name alone. A plan counts until it expires; one applied here counts until
//! the later of its expiry and the policy's default plan lifetime after it was applied: its
//! expiry is the planner's choice, and a part applied with one minute to live is as much part
//! of the deletion ten minutes later. (Not the longest lifetime: a week of "one deletion"
//! would make a nightly clean-up bulk by Thursday.) The directory is untrusted like every state file: an entry counts only after
//! its signature and contents verify as a plan (`planfile::load`) and its name matches what
//! it holds (its id, and a time no earlier than its expiry). Nothing here can weaken a check: a forged or damaged entry is not counted, and
//! deleting entries is no more than never having seen those plans.

use crate::error::{Error, Result};
use crate::plan::envelope::{Envelope, Signature};
use crate::planfile::Loaded;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("seen")
}

fn entry_name(until: OffsetDateTime, id_hex: &str) -> String {
    format!("{}-{id_hex}.json", until.unix_timestamp())
}

/// `(counted until, plan id hex)` from an entry's file name; `None` for anything else.
fn parse_name(name: &str) -> Option<(i64, &str)> {
    let (expiry, id) = name.strip_suffix(".json")?.split_once('-')?;
    (crate::store::state::is_plan_id_hex(id)).then_some(())?;
    Some((expiry.parse().ok()?, id))
}

/// A [`crate::plan::envelope::PlanFile`] without approvals, as borrowed fields (serialised exactly as one).
#[derive(serde::Serialize)]
struct Unapproved<'a> {
    #[serde(rename = "payloadType")]
    payload_type: &'a str,
    payload: &'a str,
    signatures: &'a [Signature],
    approvals: &'a [Envelope],
}

/// Keep `loaded` (as signed, without approvals) until the later of its expiry and `until`
/// (`None` for a plan reviewed, the time an applied one keeps counting), and prune entries
/// no longer counted at `now`. Recording twice is harmless.
pub fn record(
    state_dir: &Path,
    loaded: &Loaded,
    until: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Result<()> {
    let dir = dir(state_dir);
    let until = until.map_or(loaded.plan.expires_at, |t| t.max(loaded.plan.expires_at));
    let path = dir.join(entry_name(until, loaded.id_hex()));
    if !path.exists() {
        // The plan file's fields, borrowed and streamed: no copy of a payload that is tens
        // of megabytes at 50,000 branches (apply with a `[branch]` section per branch peaked
        // at 240 MB with two).
        let file = &loaded.file;
        let unapproved = Unapproved {
            payload_type: &file.payload_type,
            payload: &file.payload,
            signatures: &file.signatures,
            approvals: &[],
        };
        crate::fsutil::write_atomic_with(&path, |w| Ok(serde_json::to_writer(w, &unapproved)?))
            .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))?;
    }
    for (p, expiry, _) in entries(&dir)? {
        if expiry <= now.unix_timestamp() {
            // Pruning is housekeeping: an entry that cannot be removed now is skipped by
            // name on every read and removed next time.
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// Every entry's path, time counted until and plan id hex, by name.
fn entries(dir: &Path) -> Result<Vec<(PathBuf, i64, String)>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => {
            return Err(Error::internal(format!("cannot read {}", dir.display())).caused_by(e));
        }
    };
    let mut out: Vec<(PathBuf, i64, String)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (expiry, id) = parse_name(&name)?;
            Some((e.path(), expiry, id.to_string()))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// What reading the seen plans found: the ones still counted that verified (each with the
/// time it is counted until), and the entries that did not (named, so the user can remove
/// them; they are not counted).
#[derive(Default)]
pub struct Seen {
    pub plans: Vec<(Loaded, OffsetDateTime)>,
    pub unreadable: Vec<String>,
}

/// The seen plans still counted at `now`, other than `except` (a plan id hex), each
/// verified as a plan file; read-only.
pub fn live(state_dir: &Path, now: OffsetDateTime, except: &str) -> Result<Seen> {
    let mut seen = Seen::default();
    for (path, expiry, id) in entries(&dir(state_dir))? {
        if expiry <= now.unix_timestamp() || id == except {
            continue;
        }
        match crate::planfile::load(&path) {
            Ok(l) if l.id_hex() == id && l.plan.expires_at.unix_timestamp() <= expiry => {
                let until = OffsetDateTime::from_unix_timestamp(expiry).unwrap_or(l.plan.expires_at);
                seen.plans.push((l, until));
            }
            Ok(_) => seen.unreadable.push(format!(
                "{}: its name does not match the plan it holds",
                path.display()
            )),
            Err(e) => seen.unreadable.push(e.message),
        }
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_carry_expiry_and_plan_id() {
        let id = "ab".repeat(32);
        let t = time::macros::datetime!(2026-06-01 12:00 UTC);
        let name = entry_name(t, &id);
        assert_eq!(parse_name(&name), Some((t.unix_timestamp(), id.as_str())));
        assert_eq!(parse_name("1-xyz.json"), None);
        assert_eq!(parse_name(&format!("soon-{id}.json")), None);
        assert_eq!(parse_name(&format!("1-{id}.txt")), None);
    }
}
