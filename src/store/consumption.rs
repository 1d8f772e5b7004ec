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

use super::published::{
    self, Item, ItemKind, MAX_MARKER_BYTES, Published, Remote, consumed_ref, receipt_ref,
};
use crate::error::{Error, Result};
use crate::repo::publish::{self as git, Scratch};
use crate::text::safe;
use git2::Oid;

/// A receipt of a 50,000-branch plan is tens of megabytes.
const MAX_RECEIPT_BYTES: u64 = crate::plan::envelope::MAX_FILE_BYTES;

/// One published item read back: its ref, its commit, and its one file (`Err`: why it is
/// not a one-file item guardctl could have published).
#[derive(Debug, Clone)]
pub struct RemoteItem {
    pub refname: String,
    pub oid: Oid,
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

/// The commit ids of plan `id_hex`'s consumed and receipt refs on `remote` (`git ls-remote`
/// only: nothing is fetched, nothing is stored).
pub fn list(remote: &Remote, id_hex: &str) -> Result<(Option<Oid>, Option<Oid>)> {
    let (consumed, receipt) = (consumed_ref(id_hex), receipt_ref(id_hex));
    let listed = git::ls_remote(
        remote.transport.clone(),
        &remote.url,
        &[consumed.clone(), receipt.clone()],
    )
    .map_err(|e| cannot_read(remote, e))?;
    let find = |name: &str| listed.iter().find(|(r, _)| r == name).map(|(_, o)| *o);
    Ok((find(&consumed), find(&receipt)))
}

/// The consumed marker and receipt of plan `id_hex` on `remote`, fetched into a private
/// scratch repository and read; `None` when the plan is not consumed there.
pub fn read(remote: &Remote, id_hex: &str) -> Result<Option<Consumption>> {
    let (Some(marker), receipt) = list(remote, id_hex)? else {
        return Ok(None);
    };
    let scratch = Scratch::new(remote.transport.clone())?;
    let mut wanted = vec![(consumed_ref(id_hex), marker)];
    if let Some(oid) = receipt {
        wanted.push((receipt_ref(id_hex), oid));
    }
    let names: Vec<String> = wanted.iter().map(|(r, _)| r.clone()).collect();
    let too_large = published::fetch_capped(&scratch, &remote.url, &wanted, &names)
        .map_err(|e| cannot_read(remote, e))?;
    let item = |refname: String, kind: ItemKind, limit: u64| -> Result<Option<RemoteItem>> {
        if let Some((refname, oid)) = too_large.iter().find(|(r, _)| *r == refname) {
            return Ok(Some(RemoteItem {
                bytes: Err(format!(
                    "its `{}` is larger than any published item can be: it was not fetched",
                    kind.file()
                )),
                refname: refname.clone(),
                oid: *oid,
            }));
        }
        Ok(scratch
            .refs(&refname)?
            .into_iter()
            .find(|(r, _)| *r == refname)
            .map(|(refname, oid)| RemoteItem {
                bytes: scratch.read_item(oid, kind.file(), limit),
                refname,
                oid,
            }))
    };
    let Some(consumed) = item(consumed_ref(id_hex), ItemKind::Consumed, MAX_MARKER_BYTES)? else {
        return Ok(None);
    };
    Ok(Some(Consumption {
        consumed,
        receipt: item(receipt_ref(id_hex), ItemKind::Receipt, MAX_RECEIPT_BYTES)?,
    }))
}

/// The id `consumed/<id>` has when it holds exactly the marker `bytes` (what an apply that
/// consumed the plan with that marker pushed).
pub fn marker_oid(bytes: &[u8]) -> Result<Oid> {
    Ok(git::item_objects(ItemKind::Consumed.file(), bytes)?.oid)
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
    published::publish(remote, &items, &[])
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
    .with_hint("check the remote's URL and your access to it (`git ls-remote <remote> 'refs/guardctl/*'`); guardctl needs it to know whether the plan was applied elsewhere")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::published::tests::bare;

    #[test]
    fn a_receipt_published_with_its_marker_is_read_back_and_the_marker_is_known_by_its_id() {
        let (_d, remote) = bare();
        let id = "e".repeat(64);
        assert!(read(&remote, &id).unwrap().is_none());
        let p = publish_receipt(&remote, &id, Some(b"marker"), b"receipt").unwrap();
        assert_eq!(p.created, vec![consumed_ref(&id), receipt_ref(&id)]);
        let c = read(&remote, &id).unwrap().unwrap();
        assert_eq!(c.consumed.bytes.as_deref().unwrap(), b"marker");
        assert_eq!(c.consumed.oid, marker_oid(b"marker").unwrap());
        let receipt = c.receipt.unwrap();
        assert_eq!(receipt.bytes.unwrap(), b"receipt");
        // Again: already there. Another receipt under the same name: refused, nothing lands.
        let again = publish_receipt(&remote, &id, None, b"receipt").unwrap();
        assert_eq!(again.already, vec![receipt_ref(&id)]);
        let e = publish_receipt(&remote, &id, None, b"forged").unwrap_err();
        assert_eq!(e.kind, crate::error::Kind::Policy);
        assert_eq!(
            list(&remote, &id).unwrap(),
            (Some(c.consumed.oid), Some(receipt.oid))
        );
    }

    #[test]
    fn a_consumed_marker_without_a_receipt_reads_as_consumed_and_waiting() {
        let (_d, remote) = bare();
        let id = "f".repeat(64);
        let s = Scratch::new(vec![]).unwrap();
        let oid = s.item(ItemKind::Consumed.file(), b"m").unwrap();
        s.push(&remote.url, &[git::RefUpdate::create(consumed_ref(&id), oid)])
            .unwrap();
        let c = read(&remote, &id).unwrap().unwrap();
        assert_eq!(c.consumed.oid, oid);
        assert!(c.receipt.is_none());
        assert_eq!(list(&remote, &id).unwrap(), (Some(oid), None));
    }

    #[test]
    fn junk_under_the_consumed_ref_is_read_as_unreadable_not_as_a_marker() {
        let (_d, remote) = bare();
        let id = "a".repeat(64);
        let s = Scratch::new(vec![]).unwrap();
        let junk = s.item("other.json", b"x").unwrap();
        s.push(&remote.url, &[git::RefUpdate::create(consumed_ref(&id), junk)])
            .unwrap();
        let c = read(&remote, &id).unwrap().unwrap();
        assert!(
            c.consumed.bytes.unwrap_err().contains("consumed.json"),
            "junk is named"
        );
    }
}
