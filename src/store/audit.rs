//! The audit trail: `guardctl/audit.log`, one signed DSSE envelope per line, hash-chained, its
//! head anchored outside the file.
//!
//! - **Signed**: each line is signed by the key that acted: an audit entry
//!   (`application/vnd.guardctl.audit.v1+json`, in `guardctl-approval` for approve, reject and
//!   withdraw, in `guardctl-apply` otherwise), or, for an apply, the signed receipt itself
//!   (its signature reused), which names its place in the log (`audit: {seq, prev}`).
//! - **Chained**: each payload names the id (`sha256:` of the payload bytes) of the line before;
//!   an edit, insertion or removal breaks the chain where it happened.
//! - **Anchored**: `refs/guardctl/audit` points at a blob naming the last entry (its number and
//!   id), moved (through `repo::mutate`, with a reflog) on every append: truncating, deleting or
//!   rewriting the file no longer matches it.
//!
//! [`read`] checks everything a log can prove by itself (entries, signatures, chain, anchor);
//! trust (does each key speak for its principal, per the trusted identity sources) is
//! [`check_trust`]; that every receipt is in the log is `guardctl log --verify`'s job. An
//! append refuses to extend a log that fails [`read`]. Not here: who may do what.

use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPLY_NAMESPACE, APPROVAL_NAMESPACE, AuditLink, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::plan::envelope::{Envelope, sha256_id};
use crate::repo::Repo;
use crate::repo::mutate::RepoMut;
use crate::sign::allowed_signers::Signer;
use crate::sign::{AllowedSigners, SigningKey, dsse, sshsig};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use time::OffsetDateTime;

pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
pub const AUDIT_PAYLOAD_TYPE: &str = "application/vnd.guardctl.audit.v1+json";
/// The ref that anchors the log's head outside the file (defined beside the code that moves it).
pub use crate::repo::mutate::ANCHOR_REF;

/// The signed payload of one audit entry (an apply's entry is its receipt instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seq: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// `approve`, `reject`, `withdraw`, `rollback`, `recover`, `gc` (`apply` is a receipt).
    pub event: String,
    pub plan_id: Option<String>,
    pub principal: Option<String>,
    /// Fingerprint of the key that signed this entry.
    pub key: String,
    pub detail: String,
    /// The id of the entry before, or [`GENESIS`].
    pub prev: String,
}

/// One line of the log, its signature verified, as `log` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub seq: u64,
    pub time: String,
    pub event: String,
    pub plan_id: Option<String>,
    pub principal: Option<String>,
    pub key: String,
    pub detail: String,
    pub prev: String,
    /// `sha256:` of the payload bytes: what the next entry and the anchor name.
    pub id: String,
    #[serde(skip)]
    pub payload: String,
    #[serde(skip)]
    at: OffsetDateTime,
    #[serde(skip)]
    namespace: &'static str,
    #[serde(skip)]
    signer: ssh_key::PublicKey,
    #[serde(skip)]
    sig: String,
    /// An apply's receipt: its `principal` is the plan's executor.
    #[serde(skip)]
    receipt: bool,
}

impl Record {
    /// The receipt this entry is, if it is an apply's.
    pub fn receipt_payload(&self) -> Option<Receipt> {
        if !self.receipt {
            return None;
        }
        let bytes = crate::plan::envelope::decode_payload(&self.payload).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Where and why the log breaks: entries from `line` on cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    pub line: u64,
    pub reason: String,
}

/// What the anchor ref names: the last entry's number and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub seq: u64,
    pub id: String,
    oid: crate::repo::Oid,
}

/// The log as read: every entry up to the first break.
#[derive(Debug, Default)]
pub struct Log {
    pub records: Vec<Record>,
    pub brk: Option<Break>,
    /// The last entry was written but the anchor not yet moved (an interrupted append); the
    /// next append completes it.
    pub pending: bool,
    anchor: Option<Anchor>,
}

impl Log {
    /// Where the next entry goes.
    pub fn next(&self) -> AuditLink {
        AuditLink {
            seq: self.records.len() as u64 + 1,
            prev: self
                .records
                .last()
                .map(|r| r.id.clone())
                .unwrap_or_else(|| GENESIS.to_string()),
            first: self.records.first().map(|r| r.id.clone()),
        }
    }

    /// The log's break as the error `apply` and friends refuse with (exit 65: tampered input).
    pub fn refuse_if_broken(&self, path: &Path) -> Result<()> {
        match &self.brk {
            None => Ok(()),
            Some(b) => Err(broken(path, b)),
        }
    }
}

/// A broken log: `invalid_plan` (65), the contract's code for tampered input.
pub fn broken(path: &Path, b: &Break) -> Error {
    Error::new(
        Kind::InvalidPlan,
        format!("the audit log is broken at entry {}: {}", b.line, b.reason),
    )
    .with_details(serde_json::json!({"break": b}))
    .with_hint(format!(
        "{} or {ANCHOR_REF} was altered; entries from {} on cannot be trusted. guardctl records nothing more until it is restored (see `guardctl log --verify`; `git cat-file -p {ANCHOR_REF}@{{1}}` shows the head before the last)",
        path.display(),
        b.line
    ))
}

/// The anchor as the repository holds it now.
pub fn anchor(repo: &Repo) -> Result<Option<Anchor>> {
    let Some(oid) = repo.ref_target(ANCHOR_REF) else {
        return Ok(None);
    };
    let bytes = repo.raw_object(oid)?;
    Ok(Some(parse_anchor(&bytes, oid).ok_or_else(|| {
        Error::new(
            Kind::InvalidPlan,
            format!("{ANCHOR_REF} does not name an audit entry"),
        )
    })?))
}

fn anchor_content(seq: u64, id: &str) -> String {
    format!("guardctl audit anchor v1\nseq {seq}\nid {id}\n")
}

fn parse_anchor(bytes: &[u8], oid: crate::repo::Oid) -> Option<Anchor> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    (lines.next()? == "guardctl audit anchor v1").then_some(())?;
    let seq = lines.next()?.strip_prefix("seq ")?.parse().ok()?;
    let id = lines.next()?.strip_prefix("id ")?.to_string();
    Some(Anchor { seq, id, oid })
}

/// Read the log and check what it proves by itself: each line a signed entry, signatures,
/// numbering, chain, and the anchor.
pub fn read(repo: &Repo, path: &Path) -> Result<Log> {
    // Untrusted input: a regular file, bounded (a FIFO or a link to /dev/zero must not hang
    // or exhaust every later command).
    let text = match crate::fsutil::read_bounded(path, super::MAX_STATE_BYTES) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(crate::fsutil::ReadError::NotFound(_)) => String::new(),
        Err(e) => return Err(super::state::inconsistent(path, e)),
    };
    let mut log = check_lines(&text);
    log.anchor = anchor(repo)?;
    if log.brk.is_none() {
        log.brk = check_anchor(&log.records, log.anchor.as_ref(), &mut log.pending);
    }
    Ok(log)
}

fn check_lines(text: &str) -> Log {
    let mut log = Log::default();
    let mut prev = GENESIS.to_string();
    for (i, line) in text.lines().enumerate() {
        let seq = i as u64 + 1;
        let record = match record(line) {
            Ok(r) => r,
            Err(reason) => {
                log.brk = Some(Break { line: seq, reason });
                return log;
            }
        };
        let reason = if record.seq != seq {
            Some("numbered out of order (an entry was inserted or removed)")
        } else if record.prev != prev {
            Some("does not chain to the entry before (an entry was inserted, removed or rewritten)")
        } else {
            None
        };
        if let Some(reason) = reason {
            log.brk = Some(Break {
                line: seq,
                reason: reason.into(),
            });
            return log;
        }
        prev = record.id.clone();
        log.records.push(record);
    }
    log
}

/// Parse and verify one line.
fn record(line: &str) -> std::result::Result<Record, String> {
    let env: Envelope = serde_json::from_str(line)
        .map_err(|_| "not a signed entry (a log from an earlier guardctl, or damaged)".to_string())?;
    let payload = crate::plan::envelope::decode_payload(&env.payload)
        .map_err(|e| format!("payload is not base64 ({e})"))?;
    let (namespace, entry) = match env.payload_type.as_str() {
        AUDIT_PAYLOAD_TYPE => {
            let e: Entry = serde_json::from_slice(&payload).map_err(|e| format!("malformed entry ({e})"))?;
            let ns = if matches!(e.event.as_str(), "approve" | "reject" | "withdraw") {
                APPROVAL_NAMESPACE
            } else {
                APPLY_NAMESPACE
            };
            (ns, e)
        }
        RECEIPT_PAYLOAD_TYPE => {
            let r: Receipt =
                serde_json::from_slice(&payload).map_err(|e| format!("malformed receipt ({e})"))?;
            let link = r
                .audit
                .clone()
                .ok_or("a receipt that names no place in the log")?;
            (APPLY_NAMESPACE, receipt_entry(&r, link))
        }
        other => {
            return Err(format!("unknown payload type `{}`", crate::text::safe(other)));
        }
    };
    let v = dsse::verify(&env, &env.payload_type, namespace).map_err(|e| format!("signature: {e}"))?;
    if v.fingerprint != entry.key {
        return Err("names another key than the one that signed it".into());
    }
    Ok(Record {
        seq: entry.seq,
        time: crate::text::rfc3339(entry.time),
        event: entry.event,
        plan_id: entry.plan_id,
        principal: entry.principal,
        key: entry.key,
        detail: entry.detail,
        prev: entry.prev,
        id: sha256_id(&payload),
        payload: env.payload,
        at: entry.time,
        namespace,
        signer: v.signer,
        sig: env.signatures.first().map(|s| s.sig.clone()).unwrap_or_default(),
        receipt: env.payload_type == RECEIPT_PAYLOAD_TYPE,
    })
}

/// An apply's receipt seen as an audit entry.
fn receipt_entry(r: &Receipt, link: AuditLink) -> Entry {
    Entry {
        seq: link.seq,
        time: r.applied_at,
        event: "apply".into(),
        plan_id: Some(r.plan_id.clone()),
        principal: Some(r.executor.clone()).filter(|e| !e.is_empty()),
        key: r.key.clone(),
        detail: format!("deleted {} refs; verified: {}", r.deleted.len(), r.verified),
        prev: link.prev,
    }
}

fn check_anchor(records: &[Record], anchor: Option<&Anchor>, pending: &mut bool) -> Option<Break> {
    let n = records.len() as u64;
    let Some(a) = anchor else {
        return (n > 0).then(|| Break {
            line: 1,
            reason: format!(
                "{ANCHOR_REF} is missing: the log is not anchored (the ref was deleted, or the log made up)"
            ),
        });
    };
    if a.seq > n {
        return Some(Break {
            line: n + 1,
            reason: format!(
                "{ANCHOR_REF} names entry {}, but the log ends at {n}: entries were removed (truncated or deleted)",
                a.seq
            ),
        });
    }
    if a.seq > 0 && records[a.seq as usize - 1].id != a.id {
        return Some(Break {
            line: a.seq,
            reason: format!("is not the entry {ANCHOR_REF} names (the log was rewritten)"),
        });
    }
    if n > a.seq + 1 {
        return Some(Break {
            line: a.seq + 2,
            reason: format!("not anchored: {ANCHOR_REF} names entry {}", a.seq),
        });
    }
    *pending = n == a.seq + 1;
    None
}

/// The first entry whose key the trusted identities do not list (in its namespace, at its
/// time) for the principal it names. For a receipt, that is its executor: only the key that
/// applied a plan signs its receipt, a `recover` finishing the apply included
/// (`execute::receipt_key`), so a receipt re-signed to name another executor breaks here.
///
/// A key the identities no longer list at all (a teammate retired by removing their line) is
/// no break: signatures, chain and anchor decide that, and such entries are [`retired`].
pub fn check_trust(records: &[Record], signers: &AllowedSigners) -> Option<Break> {
    for r in records {
        let cert = sshsig::certificate_of(&r.sig);
        let signer = Signer {
            key: &r.signer,
            certificate: cert.as_ref(),
        };
        let principals = signers.principals_at(signer, r.namespace, &[r.at]);
        if principals.is_empty() && !signers.mentions(signer) {
            continue;
        }
        let reason = match &r.principal {
            _ if principals.is_empty() => format!(
                "signed by key {}, which the trusted identities do not list for {} at {}",
                r.key, r.namespace, r.time
            ),
            Some(p) if !principals.contains(p) => format!(
                "claims {} but its key speaks for {}",
                crate::text::safe(p),
                principals.join(", ")
            ),
            _ => continue,
        };
        return Some(Break { line: r.seq, reason });
    }
    None
}

/// The entries signed by a key the trusted identities no longer list on any line (nor its
/// certificate's authority): `(key fingerprint, how many entries)`, in order of first use.
/// Kept in the log and trusted no more; what to say of them is the caller's.
pub fn retired(records: &[Record], signers: &AllowedSigners) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for r in records {
        let cert = sshsig::certificate_of(&r.sig);
        let signer = Signer {
            key: &r.signer,
            certificate: cert.as_ref(),
        };
        if signers.mentions(signer) {
            continue;
        }
        match out.iter_mut().find(|(k, _)| *k == r.key) {
            Some((_, n)) => *n += 1,
            None => out.push((r.key.clone(), 1)),
        }
    }
    out
}

/// The log, checked and ready to extend: a broken log is refused; an interrupted append's
/// entry is anchored first. The caller holds the store lock until it has appended.
pub fn open_for_append(repo: &RepoMut, path: &Path) -> Result<Log> {
    let mut log = read(repo, path)?;
    log.refuse_if_broken(path)?;
    if log.pending
        && let Some(last) = log.records.last()
    {
        let old = log.anchor.as_ref().map(|a| a.oid);
        let oid = repo.advance_audit_anchor(
            anchor_content(last.seq, &last.id).as_bytes(),
            old,
            "guardctl audit (completed)",
        )?;
        log.anchor = Some(Anchor {
            seq: last.seq,
            id: last.id.clone(),
            oid,
        });
        log.pending = false;
    }
    Ok(log)
}

/// Append a signed envelope (an entry, or a receipt naming `log.next()`) and move the anchor.
pub fn append_envelope(repo: &RepoMut, path: &Path, log: &Log, env: &Envelope) -> Result<AuditLink> {
    let link = log.next();
    let payload = crate::plan::envelope::decode_payload(&env.payload)
        .map_err(|e| Error::internal("cannot decode an audit entry").caused_by(e))?;
    let id = sha256_id(&payload);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("create", dir))?;
    }
    let line = serde_json::to_string(env)
        .map_err(|e| Error::internal("cannot encode an audit entry").caused_by(e))?;
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(Error::io("open", path))?;
    f.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| f.sync_data())
        .map_err(Error::io("append to", path))?;
    let old = log.anchor.as_ref().map(|a| a.oid);
    repo.advance_audit_anchor(
        anchor_content(link.seq, &id).as_bytes(),
        old,
        &format!("guardctl audit {}", link.seq),
    )?;
    Ok(link)
}

/// What an entry records.
pub struct Event<'a> {
    pub now: OffsetDateTime,
    pub event: &'a str,
    pub plan_id: Option<&'a str>,
    pub principal: Option<&'a str>,
    pub detail: &'a str,
}

/// Sign an entry with `key` and append it (the caller holds the store lock).
pub fn append(repo: &RepoMut, path: &Path, key: &SigningKey, e: Event) -> Result<()> {
    prepare(repo, path, key, e)?.append(repo, path)
}

/// An entry signed for the log as it stands, to append once what it records is done: a
/// command signs everything before its first write (`approve`: the entry, then the decision,
/// then the writes). Valid while the caller keeps holding the store lock it was made under.
pub struct Prepared {
    log: Log,
    env: crate::plan::envelope::Envelope,
}

impl Prepared {
    /// Append the signed entry and move the anchor (the same lock still held).
    pub fn append(self, repo: &RepoMut, path: &Path) -> Result<()> {
        append_envelope(repo, path, &self.log, &self.env).map(|_| ())
    }
}

/// Sign the entry that [`append`] would append now, without appending it.
pub fn prepare(repo: &RepoMut, path: &Path, key: &SigningKey, e: Event) -> Result<Prepared> {
    let log = open_for_append(repo, path)?;
    let link = log.next();
    let entry = Entry {
        seq: link.seq,
        time: e.now,
        event: e.event.to_string(),
        plan_id: e.plan_id.map(String::from),
        principal: e.principal.map(String::from),
        key: sshsig::fingerprint(&key.public),
        detail: e.detail.to_string(),
        prev: link.prev,
    };
    let namespace = if matches!(e.event, "approve" | "reject" | "withdraw") {
        APPROVAL_NAMESPACE
    } else {
        APPLY_NAMESPACE
    };
    let payload = serde_json::to_vec(&entry)
        .map_err(|err| Error::internal("cannot encode an audit entry").caused_by(err))?;
    let env = dsse::sign(AUDIT_PAYLOAD_TYPE, namespace, &payload, key)
        .map_err(|err| Error::internal("cannot sign the audit entry").caused_by(err))?;
    Ok(Prepared { log, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, id: &str) -> Record {
        Record {
            seq,
            time: String::new(),
            event: "gc".into(),
            plan_id: None,
            principal: None,
            key: String::new(),
            detail: String::new(),
            prev: String::new(),
            id: id.into(),
            payload: String::new(),
            at: OffsetDateTime::UNIX_EPOCH,
            namespace: APPLY_NAMESPACE,
            signer: ssh_key::PublicKey::from_openssh(
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGTadL/M/DkOA/fXlbJ/tydAM7nOwGrYDWAYSOfe2udh",
            )
            .unwrap(),
            sig: String::new(),
            receipt: false,
        }
    }

    fn anchor_at(seq: u64, id: &str) -> Anchor {
        Anchor {
            seq,
            id: id.into(),
            oid: crate::repo::Oid::ZERO_SHA1,
        }
    }

    #[test]
    fn the_anchor_catches_truncation_deletion_rewriting_and_unanchored_entries() {
        let log = [rec(1, "a"), rec(2, "b"), rec(3, "c")];
        let mut pending = false;
        assert_eq!(check_anchor(&log, Some(&anchor_at(3, "c")), &mut pending), None);
        assert!(!pending);
        // Truncated to one entry, or deleted.
        assert_eq!(
            check_anchor(&log[..1], Some(&anchor_at(3, "c")), &mut pending)
                .unwrap()
                .line,
            2
        );
        assert_eq!(
            check_anchor(&[], Some(&anchor_at(3, "c")), &mut pending)
                .unwrap()
                .line,
            1
        );
        // Rewritten (the anchored entry's id differs).
        assert_eq!(
            check_anchor(&log, Some(&anchor_at(3, "x")), &mut pending)
                .unwrap()
                .line,
            3
        );
        // No anchor for a non-empty log; an empty log with none is fine.
        assert_eq!(check_anchor(&log, None, &mut pending).unwrap().line, 1);
        assert_eq!(check_anchor(&[], None, &mut pending), None);
        // One entry past the anchor is an interrupted append; two are not anchored.
        assert_eq!(check_anchor(&log, Some(&anchor_at(2, "b")), &mut pending), None);
        assert!(pending);
        assert_eq!(
            check_anchor(&log, Some(&anchor_at(1, "a")), &mut pending)
                .unwrap()
                .line,
            3
        );
    }

    #[test]
    fn anchor_content_round_trips_and_garbage_is_no_anchor() {
        let oid = crate::repo::Oid::ZERO_SHA1;
        let a = parse_anchor(anchor_content(7, "sha256:ab").as_bytes(), oid).unwrap();
        assert_eq!((a.seq, a.id.as_str()), (7, "sha256:ab"));
        assert!(parse_anchor(b"seq 7\n", oid).is_none());
    }

    #[test]
    fn lines_that_are_not_signed_entries_break_the_log_where_they_are() {
        let log = check_lines("{\"seq\":1}\n");
        assert_eq!(log.brk.unwrap().line, 1);
        let log = check_lines("");
        assert!(log.brk.is_none() && log.records.is_empty());
    }
}
