//! Applying a plan that deletes this repository's own branches and tags: one ref
//! transaction whose every deletion is a compare-and-swap on the planned id and whose backup
//! ref is created in the same all-or-nothing commit. git locks the refs while the drift check
//! runs and commits only after the plan is consumed; a check that fails before then is
//! `refused` and leaves nothing behind (no before-image, no backup commit).

use super::Executor;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::Receipt;
use crate::repo::mutate::RefOp;
use crate::sign::SigningKey;
use crate::store::BeforeImage;
use crate::text::safe;

impl Executor<'_> {
    /// Back up, check drift while git locks the refs, write the before-image, mark consumed,
    /// commit the one compare-and-swap transaction, then finish.
    pub fn apply(
        &self,
        id: &str,
        mut image: BeforeImage,
        key: &SigningKey,
        drift_check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Receipt> {
        if let Some(url) = self.remote_target(&image)? {
            return self.apply_remote(id, &url, image, key, drift_check);
        }
        let ops: Vec<RefOp> = image
            .refs
            .iter()
            .map(|d| RefOp::Delete {
                refname: d.refname.clone(),
                old: d.oid.clone(),
            })
            .collect();
        // git locks every ref and checks its planned id while we check drift: the slow halves
        // overlap, and the refs stay locked from the drift check until the commit. Until
        // `commit` is sent, dropping the transaction (or dying) aborts it: nothing changes.
        // The backup ref is created in the same all-or-nothing transaction; its commit object
        // is written while git reads the deletions, and its `create` goes in last.
        let (sender, backup_op) = std::sync::mpsc::channel();
        let pending = self.repo.begin_ref_transaction(
            &ops,
            image.backup_ref.is_some().then_some(backup_op),
            &mut |pid| self.record_git(id, pid),
        )?;
        // Bound after `pending`, so it drops first should anything below unwind: git's feeder
        // then ends its input (an abort) before `pending`'s drop waits for git to exit.
        let last = sender;
        let mut backup = None;
        if let Some(refname) = image.backup_ref.clone() {
            let written = self.write_backup_commit(&image);
            let op = written.as_ref().ok().map(|c| RefOp::Create {
                refname,
                oid: c.oid.clone(),
            });
            // Sent before anything else can fail: git's feeder waits for exactly this message
            // (`None` makes it end git's input, which aborts the transaction).
            let _ = last.send(op);
            let commit = written?;
            image.backup_commit = Some(commit.oid.clone());
            backup = Some(commit);
        }
        // The before-image is written while git still works on the locks; it is only a
        // promise until the plan is marked consumed, and is taken back on a refusal (from
        // either side of `before-image-written`, the journal then `Unconsumed`).
        let journal = self.journal(id);
        let written = match drift_check().and_then(|()| self.store.write_before_image(id, &image)) {
            Ok(()) => journal.before_image_written().map_err(|n| (*n.error, n.journal)),
            Err(e) => Err((e, journal.unconsumed())),
        };
        let prepared = match written {
            Ok(journal) => match pending
                .prepared()
                .and_then(|p| self.still_not_checked_out(&image).map(|()| p))
            {
                Ok(p) => Ok((journal, p)),
                Err(e) => Err((e, journal.unconsumed())),
            },
            Err(refused) => {
                // git aborts the transaction (and is waited for) before anything is cleaned up.
                drop(pending);
                Err(refused)
            }
        };
        let (journal, prepared) = match prepared {
            Ok(p) => p,
            Err((e, journal)) => {
                // Refused before anything durable: the transaction was aborted (and waited
                // for), so nothing refers to the backup commit, and neither git's process id
                // nor a before-image is of use to a recovery (which ignores a refused step).
                self.store.remove_file(id, "git.pid")?;
                self.store.remove_file(id, "before-image.json")?;
                journal.refused()?;
                if let Some(b) = &backup {
                    self.repo.discard_backup_commit(b)?;
                }
                return Err(e);
            }
        };
        self.consume(id, key)?;
        let journal = journal.consumed()?;
        if let Err(e) = self.git_exited(id, prepared.commit()) {
            self.abort(journal, &e)?;
            return Err(e);
        }
        let journal = journal.refs_committed()?;
        self.settle(journal, &image, key)
    }

    /// The last look before the plan is consumed: the refs are locked now, but HEAD is not (git
    /// locks no other worktree's HEAD in a ref transaction), so a `git checkout` of a planned
    /// branch since the drift check would leave a HEAD on a deleted branch. What remains is the
    /// moment between this check and the commit.
    pub(super) fn still_not_checked_out(&self, image: &BeforeImage) -> Result<()> {
        let co = self.repo.checked_out()?;
        let taken: Vec<String> = image
            .refs
            .iter()
            .filter(|r| {
                co.here.as_deref() == Some(r.refname.as_str()) || co.elsewhere.contains_key(&r.refname)
            })
            .map(|r| safe(&r.refname))
            .collect();
        if taken.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            Kind::Drift,
            format!(
                "checked out since the drift check: {}; nothing was changed",
                taken.join(", ")
            ),
        )
        .with_hint("re-run `guardctl plan` and have the new plan approved"))
    }
}
