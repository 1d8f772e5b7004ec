//! The audit trail: an append-only, hash-chained log of JSON lines in `guardctl/audit.log`.
//! Each entry carries the hash of the one before, and its own hash over its content, so any
//! edit, insertion or deletion breaks the chain at a place `log` can name.

use crate::error::{Error, Result};
use crate::plan::envelope::sha256_id;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seq: u64,
    pub time: String,
    /// `plan`, `approve`, `reject`, `apply`, `refusal`, `rollback`, `gc`.
    pub event: String,
    pub plan_id: Option<String>,
    pub principal: Option<String>,
    pub detail: String,
    pub prev: String,
    pub hash: String,
}

impl Entry {
    fn compute_hash(&self) -> String {
        let body = Entry {
            hash: String::new(),
            ..self.clone()
        };
        sha256_id(&serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    pub line: usize,
    pub reason: String,
}

/// Read every entry and verify the chain; entries up to the first break are returned.
pub fn read(path: &Path) -> Result<(Vec<Entry>, Option<Break>)> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((vec![], None)),
        Err(e) => return Err(e.into()),
    };
    let mut entries = Vec::new();
    let mut prev = GENESIS.to_string();
    for (i, line) in text.lines().enumerate() {
        let brk = |reason: &str| Break {
            line: i + 1,
            reason: reason.to_string(),
        };
        let Ok(e) = serde_json::from_str::<Entry>(line) else {
            return Ok((entries, Some(brk("not a valid entry"))));
        };
        if e.seq != i as u64 + 1 {
            return Ok((
                entries,
                Some(brk("sequence number out of order (entry inserted or removed)")),
            ));
        }
        if e.prev != prev {
            return Ok((
                entries,
                Some(brk(
                    "does not chain to the entry before (entry inserted or removed)",
                )),
            ));
        }
        if e.hash != e.compute_hash() {
            return Ok((
                entries,
                Some(brk("content does not match its hash (entry edited)")),
            ));
        }
        prev = e.hash.clone();
        entries.push(e);
    }
    Ok((entries, None))
}

/// Append an entry (the caller holds the store lock). Refuses to extend a broken chain.
pub fn append(
    path: &Path,
    now: time::OffsetDateTime,
    event: &str,
    plan_id: Option<&str>,
    principal: Option<&str>,
    detail: &str,
) -> Result<Entry> {
    let (entries, brk) = read(path)?;
    if let Some(b) = brk {
        return Err(Error::internal(format!(
            "the audit log is broken at line {}: {}",
            b.line, b.reason
        ))
        .with_hint("inspect it with `guardctl log`; guardctl does not extend a broken chain"));
    }
    let mut e = Entry {
        seq: entries.len() as u64 + 1,
        time: crate::render::view::rfc3339(now),
        event: event.to_string(),
        plan_id: plan_id.map(String::from),
        principal: principal.map(String::from),
        detail: detail.to_string(),
        prev: entries
            .last()
            .map(|e| e.hash.clone())
            .unwrap_or_else(|| GENESIS.to_string()),
        hash: String::new(),
    };
    e.hash = e.compute_hash();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let line = serde_json::to_string(&e)
        .map_err(|err| Error::internal("cannot encode audit entry").caused_by(err))?;
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()?;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn chain_verifies_and_names_the_edited_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit.log");
        let t = datetime!(2026-01-01 0:00 UTC);
        for ev in ["plan", "approve", "apply"] {
            append(&p, t, ev, Some("sha256:x"), Some("alice"), "ok").unwrap();
        }
        let (entries, brk) = read(&p).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(brk, None);
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replacen("\"approve\"", "\"reject\"", 1);
        std::fs::write(&p, text).unwrap();
        let (entries, brk) = read(&p).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(brk.unwrap().line, 2);
        assert!(
            append(&p, t, "gc", None, None, "").is_err(),
            "never extends a broken chain"
        );
    }

    #[test]
    fn removing_an_entry_breaks_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit.log");
        let t = datetime!(2026-01-01 0:00 UTC);
        for ev in ["a", "b", "c"] {
            append(&p, t, ev, None, None, "").unwrap();
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let kept: Vec<&str> = text
            .lines()
            .enumerate()
            .filter(|(i, _)| *i != 1)
            .map(|(_, l)| l)
            .collect();
        std::fs::write(&p, kept.join("\n") + "\n").unwrap();
        assert_eq!(read(&p).unwrap().1.unwrap().line, 2);
    }
}
