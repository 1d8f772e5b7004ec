//! The ledger (docs/remote.md "The ledger"): the team remote's branch
//! `refs/heads/guardctl/ledger`, where every published item — plan, approval, rejection,
//! withdrawal, consumed marker, receipt — is added by a commit and never taken away.
//!
//! Why a branch: the hosts teams use protect branches and tags only (deletion restricted,
//! force-push blocked); a ref under `refs/guardctl/` can be deleted by anyone who can push,
//! lifting a veto or "unconsuming" a plan. On a protected branch the history is append-only,
//! and a clone that saw a tip refuses a ledger that no longer holds it (a rewind where the
//! host was not configured: [`check_seen`]).
//!
//! Invariants:
//! - Each commit's tree holds only the files that commit adds, at the item's ref name under
//!   `refs/guardctl/` plus its file (`plans/<id>/plan.json`, `rejections/<id>/<fpr>/rejection.json`,
//!   …). What the ledger holds is the union over its whole history (every commit the tip reaches: a host that refuses rewinds
//!   keeps each of them reachable), its first-parent chain oldest first, then the rest: a
//!   later commit can add, never change or remove (a second file at a name is a second
//!   entry, which readers judge like any other: under `rejections/` it blocks).
//! - A write is a fast-forward push of one new commit leased on the tip it was built on;
//!   a lost race is fetched and built again ([`crate::store::published::publish`]), so of
//!   any number of writers of the same name exactly one lands.
//! - Everything read is untrusted input, exactly as a ref under `refs/guardctl/` was: the
//!   entries are handed to `published::Snapshot`, which verifies each item.

use super::published::ROOT;
use crate::error::{Error, Kind, Result};
use crate::repo::Oid;
use crate::repo::publish::{Fetch, Scratch};
use crate::text::safe;
use std::path::{Path, PathBuf};

pub use crate::repo::ledger::LEDGER_REF;

/// The most one fetch of the ledger's whole history may write (its pack): a server that does
/// not filter blobs sends all of them, and a hostile pusher's huge blobs must not fill the
/// disk of every reader.
pub const MAX_LEDGER_PACK: u64 = 1 << 30;

/// One file the ledger holds: the item's ref name (`refs/guardctl/…`), its file's name, its
/// blob, the commit that added it, and whether it is a regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub file: String,
    pub blob: Oid,
    pub commit: Oid,
    pub regular: bool,
}

/// The ledger as fetched: its tip (none: the remote has no ledger yet), its entries in the
/// order they were added, and warnings about its shape.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    pub tip: Option<Oid>,
    pub entries: Vec<Entry>,
    pub warnings: Vec<String>,
}

impl Ledger {
    /// Fetch the ledger (its whole history) from `url` into `scratch` and read it; `listed`
    /// is its tip as `git ls-remote` listed it (`None`: there is no ledger, nothing is
    /// fetched). The tip read is the one fetched, which may be newer than the listed one.
    pub fn fetch(scratch: &Scratch, url: &str, listed: Option<Oid>) -> Result<Ledger> {
        if listed.is_none() {
            return Ok(Ledger::default());
        }
        let limit = super::published::MAX_ITEM_BYTES;
        if scratch.fetch_history(url, LEDGER_REF, limit, MAX_LEDGER_PACK)? == Fetch::Capped {
            return Err(Error::internal(format!(
                "the ledger {LEDGER_REF} on {} is larger than {} MiB with its files of up to {} MiB: it was not read",
                safe(url),
                MAX_LEDGER_PACK >> 20,
                limit >> 20
            ))
            .with_hint("someone pushed huge files onto the ledger; its administrator must inspect it (docs/remote.md \"Protecting the ledger\")"));
        }
        let tip = scratch
            .refs(LEDGER_REF)?
            .into_iter()
            .find(|(r, _)| r == LEDGER_REF)
            .map(|(_, o)| o)
            .ok_or_else(|| Error::internal(format!("fetching {LEDGER_REF} brought no such ref")))?;
        Ledger::read(scratch, tip)
    }

    /// List `patterns` at `url` (`git ls-remote`) with the ledger's own name and the backups
    /// branch's (`repo::backups`, listed for an apply that adds to it, never fetched here),
    /// then fetch the ledger if it is there: the refs listed (the ledger's among them) and
    /// the ledger read. Every reader and writer of published items starts here, or at
    /// [`Ledger::fetch_listed`] with a listing the run made already.
    pub fn list_and_fetch(
        scratch: &Scratch,
        url: &str,
        patterns: &[String],
    ) -> Result<(Vec<(String, Oid)>, Ledger)> {
        let mut patterns = patterns.to_vec();
        patterns.push(LEDGER_REF.to_string());
        patterns.push(crate::repo::backups::BACKUPS_REF.to_string());
        let listed = scratch.ls_remote(url, &patterns)?;
        Ledger::fetch_listed(scratch, url, listed)
    }

    /// [`Ledger::list_and_fetch`] with the refs already `listed` (one listing of the remote
    /// serves the run: `Repo::listing`).
    pub fn fetch_listed(
        scratch: &Scratch,
        url: &str,
        listed: Vec<(String, Oid)>,
    ) -> Result<(Vec<(String, Oid)>, Ledger)> {
        let tip = listed.iter().find(|(r, _)| r == LEDGER_REF).map(|(_, o)| *o);
        let ledger = Ledger::fetch(scratch, url, tip)?;
        Ok((listed, ledger))
    }

    /// The ledger ending at `tip`, already in `scratch`.
    pub fn read(scratch: &Scratch, tip: Oid) -> Result<Ledger> {
        let (chain, merges) = scratch.history(tip)?;
        let mut out = Ledger {
            tip: Some(tip),
            ..Ledger::default()
        };
        for m in merges {
            out.warnings.push(format!(
                "the ledger {LEDGER_REF} has a merge commit ({m}): its whole history is read (its first parent's first); guardctl never writes one"
            ));
        }
        for commit in chain {
            for f in scratch.added_files(commit)? {
                let Some((dir, file)) = f.path.rsplit_once('/') else {
                    out.warnings.push(format!(
                        "ignored `{}` at the top of the ledger (commit {commit}): no item is published there",
                        safe(&f.path)
                    ));
                    continue;
                };
                out.entries.push(Entry {
                    name: format!("{ROOT}{dir}"),
                    file: file.to_string(),
                    blob: f.blob,
                    commit,
                    regular: f.mode == 0o100644,
                });
            }
        }
        Ok(out)
    }

    /// The first entry at `name` (the one that counts for a plan or a marker: what was added
    /// first cannot be replaced by a later commit).
    pub fn first(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// This ledger once `commit`, made by [`Ledger::append`] of `files` on its tip, landed.
    pub fn appended(&self, commit: Oid, files: &[(&str, &str, &[u8])]) -> Result<Ledger> {
        let mut out = self.clone();
        out.tip = Some(commit);
        for (name, file, bytes) in files {
            out.entries.push(Entry {
                name: name.to_string(),
                file: file.to_string(),
                blob: crate::repo::blob_id(bytes)?,
                commit,
                regular: true,
            });
        }
        Ok(out)
    }

    /// A commit on this ledger's tip adding `files` (`(ref name under refs/guardctl/, file
    /// name, bytes)`).
    pub fn append(&self, scratch: &Scratch, files: &[(&str, &str, &[u8])]) -> Result<Oid> {
        let paths: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(name, file, bytes)| (format!("{}/{file}", &name[ROOT.len()..]), bytes.to_vec()))
            .collect();
        let message = format!(
            "guardctl: add {}\n",
            files
                .iter()
                .map(|(n, _, _)| &n[ROOT.len()..])
                .collect::<Vec<_>>()
                .join(", ")
        );
        scratch.ledger_commit(self.tip, &paths, &message)
    }
}

/// Where this clone keeps the ledger tip it last saw on the repository at `url`.
fn seen_path(state_dir: &Path, url: &str) -> PathBuf {
    let digest = crate::plan::envelope::sha256_id(url.as_bytes());
    state_dir
        .join("ledger-seen")
        .join(&digest.trim_start_matches("sha256:")[..32])
}

/// The ledger tip this clone last saw at `url`, if it recorded one. The file is untrusted
/// like every state file: anything but a commit id is no record (deleting it, or writing
/// junk, can only switch the rewind check off for this clone).
pub fn seen(state_dir: &Path, url: &str) -> Option<Oid> {
    let bytes = crate::fsutil::read_bounded(&seen_path(state_dir, url), 256).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Oid::from_str(text.lines().next()?.trim()).ok()
}

/// Record that this clone saw the ledger at `url` at `tip`.
pub fn record_seen(state_dir: &Path, url: &str, tip: Oid) -> Result<()> {
    let path = seen_path(state_dir, url);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io("create", dir))?;
    }
    crate::fsutil::write_atomic(&path, format!("{tip}\n{url}\n").as_bytes())
        .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))
}

/// Refuse (16) a ledger that no longer holds `seen`, the tip this clone saw: someone rewound
/// or replaced it (the host does not protect it), and whatever it held since — a veto, a
/// consumed marker — may be gone.
pub fn check_seen(scratch: &Scratch, ledger: &Ledger, seen: Oid, url: &str, state_dir: &Path) -> Result<()> {
    refuse_rewound(scratch, ledger, seen, url).map_err(|e| {
        e.with_hint(format!(
            "the remote does not protect the ledger (docs/remote.md \"Protecting the ledger\"): have its administrator restore {seen} and protect the branch; if they rewound it on purpose and you trust what is there now, delete {} and run guardctl again",
            seen_path(state_dir, url).display()
        ))
    })
}

/// The refusal (16, naming both tips) of a ledger that does not hold `seen`.
pub fn refuse_rewound(scratch: &Scratch, ledger: &Ledger, seen: Oid, url: &str) -> Result<()> {
    let holds = ledger.tip.is_some_and(|tip| scratch.holds_commit(tip, seen));
    if holds {
        return Ok(());
    }
    let now = ledger
        .tip
        .map_or("nothing (the branch is gone)".to_string(), |t| t.to_string());
    Err(Error::new(
        Kind::NeedsRecovery,
        format!(
            "the ledger {LEDGER_REF} on {} was rewound: this clone saw it at {seen}, and it is now {now}, which does not contain that commit; whatever was published since may have been removed",
            safe(url)
        ),
    )
    .with_details(serde_json::json!({"seen": seen.to_string(), "now": ledger.tip.map(|t| t.to_string())}))
    .with_hint(format!(
        "the remote does not protect the ledger (docs/remote.md \"Protecting the ledger\"): have its administrator restore {seen} and protect the branch"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_holds_every_file_ever_added_and_a_removal_changes_nothing() {
        let s = Scratch::new(vec![]).unwrap();
        let id = "a".repeat(64);
        let first = Ledger::default();
        let c1 = first
            .append(
                &s,
                &[(&format!("{ROOT}rejections/{id}/k"), "rejection.json", b"veto")],
            )
            .unwrap();
        // A commit whose tree holds nothing "removes" everything: it reads as adding nothing.
        let c2 = s.ledger_commit(Some(c1), &[], "empty").unwrap();
        let l = Ledger::read(&s, c2).unwrap();
        assert_eq!(l.entries.len(), 1);
        let e = &l.entries[0];
        assert_eq!(e.name, format!("{ROOT}rejections/{id}/k"));
        assert_eq!(
            (e.file.as_str(), e.commit, e.regular),
            ("rejection.json", c1, true)
        );
        assert_eq!(s.read_blob(e.blob, 100).unwrap(), b"veto");
        assert_eq!(l.first(&e.name), Some(e));
    }

    #[test]
    fn a_clone_that_saw_a_tip_refuses_a_ledger_without_it() {
        let s = Scratch::new(vec![]).unwrap();
        let state = tempfile::tempdir().unwrap();
        let c1 = s
            .ledger_commit(None, &[("plans/x/plan.json".into(), b"1".to_vec())], "1")
            .unwrap();
        let c2 = s
            .ledger_commit(Some(c1), &[("plans/y/plan.json".into(), b"2".to_vec())], "2")
            .unwrap();
        let url = "file:///remote";
        assert_eq!(seen(state.path(), url), None);
        record_seen(state.path(), url, c2).unwrap();
        assert_eq!(seen(state.path(), url), Some(c2));
        assert_eq!(seen(state.path(), "file:///other"), None);
        let at = |tip| Ledger::read(&s, tip).unwrap();
        check_seen(&s, &at(c2), c1, url, state.path()).unwrap();
        check_seen(&s, &at(c2), c2, url, state.path()).unwrap();
        let e = check_seen(&s, &at(c1), c2, url, state.path()).unwrap_err();
        assert_eq!(e.kind, Kind::NeedsRecovery);
        assert!(
            e.message.contains(&c2.to_string()) && e.message.contains(&c1.to_string()),
            "{}",
            e.message
        );
        let gone = check_seen(&s, &Ledger::default(), c2, url, state.path()).unwrap_err();
        assert!(gone.message.contains("the branch is gone"), "{}", gone.message);
        // Junk in the record is no record.
        std::fs::write(seen_path(state.path(), url), "junk").unwrap();
        assert_eq!(seen(state.path(), url), None);
    }
}
