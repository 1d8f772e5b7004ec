//! Consume-once across machines (docs/remote.md): `refs/guardctl/consumed/<id>`, the signed
//! consumed marker, created create-only by the one apply that consumes the plan (in the same
//! atomic push as a remote's deletions, before a command runs, or with the receipt after a
//! local operation), and `refs/guardctl/receipts/<id>`, the signed receipt published once
//! the apply is done. A second applier anywhere reads both back from here.
//!
//! Everything read here is untrusted: a hostile pusher can create either ref with anything
//! in it. This module only fetches and reads the one file of each; who signed them, and
//! whether that key speaks for the plan's executor, is `execute::remote_result`'s business,
//! exactly as for the marker and receipt in `.git/guardctl`.

use super::published::{self, Item, ItemKind, Published, Remote, consumed_ref, receipt_ref};
use crate::error::{Error, Result};
use crate::text::safe;

/// One published item read back: its name, and its one file (`Err`: why it is not a
/// one-file item guardctl could have published).
#[derive(Debug, Clone)]
pub struct RemoteItem {
    pub refname: String,
    pub bytes: std::result::Result<Vec<u8>, String>,
}

/// What the remote says about a plan's consumption.
#[derive(Debug, Clone)]
pub struct Consumption {
    pub consumed: RemoteItem,
    /// `None`: the plan is consumed, but its receipt is not published yet (the apply that
    /// consumed it is still running, or was interrupted).
    pub receipt: Option<RemoteItem>,
}

/// The consumed marker and receipt of plan `id_hex` on `remote` (its ledger, and its refs
/// from before the ledger), fetched into a private scratch repository and read; `None` when
/// the plan is not consumed there.
pub fn read(remote: &Remote, id_hex: &str) -> Result<Option<Consumption>> {
    let snapshot = published::Snapshot::fetch(remote, published::Scope::Plan(id_hex.to_string()))
        .map_err(|e| cannot_read(remote, e))?;
    of(&snapshot, id_hex)
}

/// [`read`] in a snapshot already fetched (the run's, when it is of the same remote).
pub fn of(snapshot: &published::Snapshot, id_hex: &str) -> Result<Option<Consumption>> {
    let item = |c: published::ConsumedItem| RemoteItem {
        refname: c.refname,
        bytes: c.marker,
    };
    let Some(consumed) = snapshot.consumed(id_hex)? else {
        return Ok(None);
    };
    Ok(Some(Consumption {
        consumed: item(consumed),
        receipt: snapshot.receipt(id_hex)?.map(item),
    }))
}

/// Publish plan `id_hex`'s signed receipt (`receipt.json`'s bytes) to `remote`, with its
/// consumed marker when `marker` is given (a local operation, whose marker was never pushed
/// before): create-only and atomic, so publishing again is "already published", and a ref
/// holding something else refuses the push (`policy`, 14, naming it).
pub fn publish_receipt(
    remote: &Remote,
    id_hex: &str,
    marker: Option<&[u8]>,
    receipt: &[u8],
    known: Option<&published::Snapshot>,
) -> Result<Published> {
    let mut items = Vec::new();
    if let Some(m) = marker {
        items.push(Item {
            kind: ItemKind::Consumed,
            refname: consumed_ref(id_hex),
            bytes: m.to_vec(),
        });
    }
    items.push(Item {
        kind: ItemKind::Receipt,
        refname: receipt_ref(id_hex),
        bytes: receipt.to_vec(),
    });
    published::publish_on(remote, &items, &[], known)
}

fn cannot_read(remote: &Remote, e: Error) -> Error {
    Error::new(
        e.kind,
        format!(
            "cannot read refs/guardctl/consumed/ on remote `{}` ({})",
            safe(&remote.name),
            safe(&remote.url)
        ),
    )
    .caused_by(e.message)
    .with_hint("check the remote's URL and your access to it (`git ls-remote <remote> guardctl/ledger`); guardctl needs it to know whether the plan was applied elsewhere")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::publish::{RefUpdate, Scratch};
    use crate::store::published::tests::bare;

    #[test]
    fn a_receipt_published_with_its_marker_is_read_back_from_the_ledger() {
        let (_d, remote) = bare();
        let id = "e".repeat(64);
        assert!(read(&remote, &id).unwrap().is_none());
        let p = publish_receipt(&remote, &id, Some(b"marker"), b"receipt", None).unwrap();
        assert_eq!(p.created, vec![consumed_ref(&id), receipt_ref(&id)]);
        let c = read(&remote, &id).unwrap().unwrap();
        assert_eq!(c.consumed.bytes.as_deref().unwrap(), b"marker");
        assert_eq!(c.receipt.unwrap().bytes.unwrap(), b"receipt");
        // Again: already there. Another receipt under the same name: refused, nothing lands.
        let again = publish_receipt(&remote, &id, None, b"receipt", None).unwrap();
        assert_eq!(again.already, vec![receipt_ref(&id)]);
        let e = publish_receipt(&remote, &id, None, b"forged", None).unwrap_err();
        assert_eq!(e.kind, crate::error::Kind::Policy);
        let refs = git2::Repository::open(&remote.url).unwrap();
        assert!(
            refs.find_reference(crate::store::ledger::LEDGER_REF).is_ok()
                && refs.find_reference(&consumed_ref(&id)).is_err(),
            "published on the ledger, not as refs of their own"
        );
    }

    #[test]
    fn a_consumed_marker_published_before_the_ledger_reads_as_consumed_and_waiting() {
        let (_d, remote) = bare();
        let id = "f".repeat(64);
        let s = Scratch::new(vec![]).unwrap();
        let oid = s.item(ItemKind::Consumed.file(), b"m").unwrap();
        s.push(&remote.url, &[RefUpdate::create(consumed_ref(&id), oid)])
            .unwrap();
        let c = read(&remote, &id).unwrap().unwrap();
        assert_eq!(c.consumed.bytes.unwrap(), b"m");
        assert!(c.receipt.is_none());
        // Its name is taken: the ledger does not take another marker there.
        let e = publish_receipt(&remote, &id, Some(b"other"), b"r", None).unwrap_err();
        assert_eq!(e.kind, crate::error::Kind::Policy);
    }

    #[test]
    fn junk_under_the_consumed_ref_is_read_as_unreadable_not_as_a_marker() {
        let (_d, remote) = bare();
        let id = "a".repeat(64);
        let s = Scratch::new(vec![]).unwrap();
        let junk = s.item("other.json", b"x").unwrap();
        s.push(&remote.url, &[RefUpdate::create(consumed_ref(&id), junk)])
            .unwrap();
        let c = read(&remote, &id).unwrap().unwrap();
        assert!(
            c.consumed.bytes.unwrap_err().contains("consumed.json"),
            "junk is named"
        );
    }
}
