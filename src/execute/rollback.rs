//! Rolling back: restoring what a plan deleted (refs, annotated tag objects, branch config)
//! from its backup, compare-and-swap on each name's absence, journaled `rollback-started`,
//! `rollback-refs-restored`, `rolled-back` (or `rollback-abandoned`); and restoring from
//! another clone than the one that applied, from the receipt its team remote publishes.

use super::Executor;
use super::journal::Journal;
use super::journal::at::RefsRestored;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::DeletedRef;
use crate::repo::backups::BACKUPS_REF;
use crate::repo::mutate::{RefOp, RemoteOp};
use crate::store::{BeforeImage, state};
use crate::text::safe;

impl Executor<'_> {
    /// Roll back, from another clone than the one that applied it, a remote's plan whose
    /// receipt the team remote publishes (verified by the caller: `deleted` is what that
    /// receipt lists and the plan planned): push each deleted ref that is missing at `url`
    /// back at its old id, in one atomic push, each create leased on the name's absence, from
    /// this clone's objects. Returns (restored, already present). Refuses, changing nothing,
    /// where a name is taken by another commit, or where this clone lacks a commit (the
    /// applying clone's backup ref keeps it). No journal: the push is all or nothing, and a
    /// second run finds what the first restored already present.
    pub fn restore_published(&self, id: &str, url: &str, deleted: &[DeletedRef]) -> Result<(usize, usize)> {
        // After the recovery this run may have pushed: never an earlier listing.
        let now = self.repo.ls_remote_now(url)?;
        let missing = to_restore(deleted, |_| Ok(()), |name| now.target(name), true)?;
        let absent = |repo: &crate::repo::Repo| -> Vec<String> {
            missing
                .iter()
                .filter(|r| crate::repo::Oid::from_str(&r.oid).map_or(true, |o| !repo.has_object(o)))
                .map(|r| format!("{} ({})", safe(&r.refname), safe(&r.oid)))
                .collect()
        };
        // What this clone lacks, the remote's backups branch keeps (the applying clone's
        // push added it there): fetched by id (only those commits and their history), then
        // looked for again.
        let mut kept_there = None;
        if !absent(&self.repo).is_empty() {
            let wanted: Vec<crate::repo::Oid> = missing
                .iter()
                .filter_map(|r| crate::repo::Oid::from_str(&r.oid).ok())
                .filter(|o| !self.repo.has_object(*o))
                .collect();
            kept_there = Some(self.repo.fetch_remote_backups(url, &wanted)?);
        }
        let absent = absent(&self.repo);
        if !absent.is_empty() {
            let whence = match kept_there {
                Some(true) => format!("nor does the remote's backups branch {BACKUPS_REF}"),
                _ => format!("and the remote has no backups branch {BACKUPS_REF}"),
            };
            return Err(Error::new(
                Kind::NotFound,
                format!(
                    "this clone does not have what plan sha256:{id} deleted, {whence}: {}; nothing was restored",
                    absent.join(", ")
                ),
            )
            .with_hint(format!(
                "run `guardctl rollback sha256:{id}` in the clone that applied it (its backup ref refs/guardctl/backup/{id} keeps them), or fetch the commits into this clone"
            )));
        }
        let ops = remote_creates(&missing);
        if !ops.is_empty() {
            self.repo.push_atomic(url, &ops, None, &mut |_| Ok(()))?;
        }
        self.audit(
            "rollback",
            Some(&format!("sha256:{id}")),
            None,
            &format!(
                "restored {} refs ({} already present) from the receipt published on the team remote (applied in another clone)",
                ops.len(),
                deleted.len() - ops.len()
            ),
        )?;
        Ok((ops.len(), deleted.len() - ops.len()))
    }

    /// Restore every branch of `image` that is missing (compare-and-swap create) and its config.
    /// Returns (restored, already present). Refuses, changing nothing, where a name is taken.
    pub fn rollback(&self, id: &str, image: &BeforeImage) -> Result<(usize, usize)> {
        if image.command.is_some() {
            return Err(
                Error::usage("an exec plan has no rollback: guardctl cannot undo a command").with_hint(
                    format!(
                        "its --before-image output, if any, is in {}",
                        self.store.plan_dir(id).join("before-image-output").display()
                    ),
                ),
            );
        }
        let kept = self.kept(image);
        let targets = self.targets(image, &image.refs)?;
        let backed = |r: &DeletedRef| match kept.contains(image.backup_tip(r)) {
            true => Ok(()),
            false => Err(Error::internal(format!(
                "the backup {} is missing or moved",
                image.backup_ref.as_deref().unwrap_or("(none)")
            ))
            .with_hint("it may have been removed by `guardctl gc` after its retention")),
        };
        let missing = to_restore(
            &image.refs,
            backed,
            |name| targets.get(name).copied(),
            image.remote.is_some(),
        )?;
        self.restore_tag_objects(image, &missing)?;
        // Signed, so a recovery finishes only a rollback someone allowed to apply started.
        let key = self
            .key
            .ok_or_else(|| Error::usage("a rollback signs what it restores: a signing key is needed"))?;
        let record = state::RollbackRecord {
            plan_id: image.plan_id.clone(),
            refs: missing.clone(),
            started_at: self.now,
        };
        let bytes =
            super::records::signed_state(state::ROLLBACK_PAYLOAD_TYPE, &record, key, "rollback.json")?;
        self.store.write_file(id, "rollback.json", &bytes)?;
        let journal = Journal::after_apply(self.store, id, self.now).rollback_started()?;
        let restored = match self.remote_target(image)? {
            None => {
                let ops: Vec<RefOp> = missing
                    .iter()
                    .map(|r| RefOp::Create {
                        refname: r.refname.clone(),
                        oid: r.oid.clone(),
                    })
                    .collect();
                self.transaction(id, &ops)
            }
            // Pushed back from the backup's objects, each create leased on absence.
            Some(url) => {
                let ops = remote_creates(&missing);
                if ops.is_empty() {
                    Ok(())
                } else {
                    self.watched_git(id, |spawned| self.repo.push_atomic(&url, &ops, None, spawned))
                }
            }
        };
        if let Err(e) = restored {
            journal.rollback_abandoned()?;
            return Err(e);
        }
        let journal = journal.rollback_refs_restored()?;
        self.config_restored(journal, image)?;
        let detail = format!(
            "restored {} branches ({} already present)",
            missing.len(),
            image.refs.len() - missing.len()
        );
        self.audit("rollback", Some(&image.plan_id), None, &detail)?;
        Ok((missing.len(), image.refs.len() - missing.len()))
    }

    /// Write back the annotated tag objects of `refs` (idempotent: an object's id is its
    /// content), checking each comes back under its old id.
    pub(super) fn restore_tag_objects(&self, image: &BeforeImage, refs: &[DeletedRef]) -> Result<()> {
        use base64::Engine;
        for t in image
            .tag_objects
            .iter()
            .filter(|t| refs.iter().any(|r| r.oid == t.oid))
        {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&t.data)
                .map_err(|e| Error::internal("the before-image holds a garbled tag object").caused_by(e))?;
            let oid = self.repo.write_object("tag", &bytes)?;
            if oid != t.oid {
                return Err(Error::internal(format!(
                    "the saved tag object {} came back as {oid}; nothing was restored",
                    t.oid
                )));
            }
        }
        Ok(())
    }

    /// Add back each saved config entry that is not there now (idempotent). Only
    /// `branch.<name>.<variable>` keys of a branch the plan deleted are ever written.
    /// For `recover`, which completes a rollback from where its journal stands.
    pub(super) fn restore_config(&self, id: &str, image: &BeforeImage) -> Result<()> {
        let journal = self.resume::<RefsRestored>(id)?;
        self.config_restored(journal, image)
    }

    /// [`Executor::restore_config`] once the rollback's refs are restored.
    pub(super) fn config_restored(
        &self,
        journal: Journal<'_, RefsRestored>,
        image: &BeforeImage,
    ) -> Result<()> {
        let id = journal.id();
        let foreign = image.config.iter().find_map(|(name, entries)| {
            let deleted = image
                .refs
                .iter()
                .any(|r| r.refname == format!("refs/heads/{name}"));
            entries
                .iter()
                .find(|(k, _)| !deleted || !state::is_branch_key(k, name))
                .map(|(k, _)| k.clone())
        });
        if let Some(key) = foreign {
            return Err(state::inconsistent(
                &self.store.plan_dir(id).join("before-image.json"),
                format!("it would restore config key `{key}`, which is not a deleted branch's"),
            ));
        }
        let present = self.repo.branch_config()?;
        let mut add = Vec::new();
        for (name, entries) in &image.config {
            let mut now: Vec<(String, String)> = present.get(name).cloned().unwrap_or_default();
            for e in entries {
                match now.iter().position(|n| n == e) {
                    Some(i) => {
                        now.remove(i);
                    }
                    None => add.push(e.clone()),
                }
            }
        }
        self.repo.add_config(&add)?;
        journal.rolled_back().map(drop)
    }
}

/// Of `refs` (what a plan deleted), those to create again: missing now (`now` names each
/// ref's current target), each first passing `check` (its backup still keeps it). One taken
/// by another commit since is drift: nothing is restored.
pub(super) fn to_restore(
    refs: &[DeletedRef],
    check: impl Fn(&DeletedRef) -> Result<()>,
    now: impl Fn(&str) -> Option<crate::repo::Oid>,
    on_remote: bool,
) -> Result<Vec<DeletedRef>> {
    let mut missing = Vec::new();
    for r in refs {
        check(r)?;
        match now(&r.refname) {
            None => missing.push(r.clone()),
            Some(oid) if oid.to_string() == r.oid => {}
            Some(oid) => {
                return Err(Error::new(
                    Kind::Drift,
                    format!(
                        "{} is now taken by another commit ({oid}); nothing was restored",
                        safe(&r.refname)
                    ),
                )
                .with_hint(if on_remote {
                    "rename or delete that branch on the remote first, then run rollback again"
                } else {
                    "rename or delete that branch first, then run rollback again"
                }));
            }
        }
    }
    Ok(missing)
}

/// One create per ref, each leased on the name's absence (`RemoteOp::Create`).
pub(super) fn remote_creates(refs: &[DeletedRef]) -> Vec<RemoteOp> {
    refs.iter()
        .map(|r| RemoteOp::Create {
            refname: r.refname.clone(),
            oid: r.oid.clone(),
        })
        .collect()
}
