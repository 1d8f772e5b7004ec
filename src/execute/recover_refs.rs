//! `recover` for an apply or rollback of refs interrupted around git's transaction or push:
//! what is on disk (and on the remote) decides, through `decide` for this repository's
//! commit, the consumed marker for a remote's push, and the refs for a rollback. Split from
//! `recover` (the journal's dispatch, commands, keys), which calls these.

use super::Executor;
use super::apply_remote::with_marker;
use super::decide::{BackupNow, Decision, RefNow, decide};
use super::journal::Journal;
use super::journal::at::{Pending, RollingBack};
use crate::error::{Error, Kind, Result};
use crate::plan::approval::DeletedRef;
use crate::repo::mutate::{RefOp, RemoteOp};
use crate::sign::{AllowedSigners, SigningKey};
use crate::store::recovered::{Abandoned, Completed, RecoveryOutcome};
use crate::store::state::Consumed;
use crate::store::{BeforeImage, state};
use crate::text::safe;

impl Executor<'_> {
    /// An apply interrupted before or during its ref transaction: decide from the refs
    /// (`decide`).
    pub(super) fn recover_apply(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let journal = self.resume::<Pending>(id)?;
        // The journal is not signed: one cut back to before the commit, for a plan whose apply
        // finished (and perhaps was rolled back), must not make recover apply it again. Its
        // records beside it say so, and so does the audit log, whose entries are signed and
        // chained (checked intact before any recovery): removing the files is not enough.
        let journal_path = self.store.plan_dir(id).join("journal");
        for done in ["receipt.json", "result.json", "rollback.json"] {
            if self.store.read_file(id, done)?.is_some() {
                return Err(state::inconsistent(
                    &journal_path,
                    format!("it says the apply never finished, but {done} exists"),
                ));
            }
        }
        let log = crate::store::audit::read(&self.repo, &self.store.audit_path())?;
        let plan = format!("sha256:{id}");
        let logged = log.records.iter().find_map(|r| {
            match (r.plan_id.as_deref() == Some(plan.as_str()), r.receipt_payload()) {
                (true, Some(_)) => Some("receipt"),
                (true, None) if r.event == "rollback" => Some("rollback"),
                _ => None,
            }
        });
        if let Some(what) = logged {
            return Err(state::inconsistent(
                &journal_path,
                format!("it says the apply never finished, but the audit log holds its {what}"),
            ));
        }
        // A git started by the dead apply may still hold the refs' locks (it aborts once it
        // sees the end of its input, or completes a commit it was sent): wait for it first.
        self.wait_for_orphaned_git(id)?;
        if image.command.is_some() {
            return self.recover_unstarted_command(journal, image, marker, key);
        }
        // A remote's deletions and the consumed marker were one atomic push: the marker on
        // the remote, exactly as this clone signed it, says the push landed; its absence (or
        // another's marker) that it did not, whatever the branches look like now. Without the
        // marker (as the image records), the refs decide.
        if let Some(url) = self.remote_target(image)? {
            if !with_marker(image) {
                return self.recover_unmarked_push(journal, image, marker, key);
            }
            if self.remote_consumed(&url, id)? == Some(self.our_marker(id)?) {
                let key = self.receipt_key(id, image, marker, key)?;
                let deleted = self.finish_remote_deletions(id, &url, image)?;
                self.settle(journal.refs_found_committed()?, image, key)?;
                return Ok(RecoveryOutcome::Completed(match deleted {
                    0 => Completed::PushLanded,
                    deleted => Completed::PushFinished { deleted },
                }));
            }
            let e = Error::new(
                Kind::Drift,
                "the apply was interrupted before its push landed on the remote",
            );
            self.abort(journal, &e)?;
            return Ok(RecoveryOutcome::Abandoned(Abandoned::PushNotLanded));
        }
        self.recover_local_commit(journal, image, marker, key)
    }

    /// This repository's deletions, interrupted around git's commit of them: what is on
    /// disk decides (`decide`, where the cases are).
    fn recover_local_commit(
        &self,
        journal: Journal<'_, Pending>,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let id = journal.id();
        let now = self.ref_states(image, &image.refs)?;
        let backup_at = match &image.backup_ref {
            Some(name) => self
                .repo
                .ref_targets(std::iter::once(name.as_str()))?
                .remove(name),
            None => None,
        };
        let kept = self.kept(image);
        let backup = match backup_at {
            None => BackupNow::Absent,
            Some(_) if image.refs.iter().all(|r| kept.contains(image.backup_tip(r))) => BackupNow::Made,
            Some(_) => BackupNow::Foreign,
        };
        match decide(&now, backup) {
            Decision::Committed => {
                let key = self.receipt_key(id, image, marker, key)?;
                self.settle(journal.refs_found_committed()?, image, key)?;
                Ok(RecoveryOutcome::Completed(Completed::DeletionsCommitted))
            }
            Decision::Abandon if backup == BackupNow::Absent => {
                let e = Error::new(
                    Kind::Drift,
                    "the apply was interrupted before any branch was deleted",
                );
                self.abort(journal, &e)?;
                Ok(RecoveryOutcome::Abandoned(Abandoned::DeletionsNotCommitted))
            }
            Decision::Abandon => {
                let e = Error::new(
                    Kind::Drift,
                    "the apply was interrupted before any branch was deleted, and a planned branch moved since",
                );
                self.abort(journal, &e)?;
                Ok(RecoveryOutcome::Abandoned(Abandoned::CommitAbandoned))
            }
            Decision::Finish { delete } => {
                // The receipt's key is checked before anything changes: a recover that could
                // not finish the apply leaves the refs as the kill did.
                let key = self.receipt_key(id, image, marker, key)?;
                let ops: Vec<RefOp> = delete
                    .iter()
                    .map(|&i| RefOp::Delete {
                        refname: image.refs[i].refname.clone(),
                        old: image.refs[i].oid.clone(),
                    })
                    .collect();
                self.transaction(id, &ops)?;
                self.settle(journal.refs_found_committed()?, image, key)?;
                Ok(RecoveryOutcome::Completed(Completed::CommitFinished {
                    deleted: delete.len(),
                }))
            }
            Decision::Person { moved } if moved.is_empty() => Err(person(
                id,
                &format!(
                    "its backup ref {} points at a commit that does not keep every planned branch",
                    safe(image.backup_ref.as_deref().unwrap_or_default())
                ),
            )),
            Decision::Person { moved } => {
                let names: Vec<String> = moved
                    .iter()
                    .map(|&i| {
                        format!(
                            "{} (planned at {})",
                            safe(&image.refs[i].refname),
                            image.refs[i].oid
                        )
                    })
                    .collect();
                Err(person(
                    id,
                    &format!(
                        "some planned branches are deleted, and these moved to a commit nobody planned: {}",
                        names.join(", ")
                    ),
                ))
            }
        }
    }

    /// The push with this clone's marker landed, but a remote whose `git receive-pack` was
    /// killed with us (a `file://` remote runs it in our process group) can hold the marker
    /// with some deletions not yet made: push those, each leased on its planned id, in one
    /// atomic push. A planned ref at another id is for a person (16, naming it). Returns how
    /// many it deleted.
    fn finish_remote_deletions(&self, id: &str, url: &str, image: &BeforeImage) -> Result<usize> {
        let now = self.ref_states(image, &image.refs)?;
        let (mut ops, mut moved) = (Vec::new(), Vec::new());
        for (r, state) in image.refs.iter().zip(now) {
            match state {
                RefNow::Deleted => {}
                RefNow::Planned => ops.push(RemoteOp::Delete {
                    refname: r.refname.clone(),
                    old: r.oid.clone(),
                }),
                RefNow::Moved => moved.push(format!("{} (planned at {})", safe(&r.refname), r.oid)),
            }
        }
        if !moved.is_empty() {
            return Err(person(
                id,
                &format!(
                    "its push landed on the remote, yet these refs there are at a commit nobody planned: {}",
                    moved.join(", ")
                ),
            ));
        }
        if !ops.is_empty() {
            self.watched_git(id, |spawned| self.repo.push_atomic(url, &ops, None, spawned))?;
        }
        Ok(ops.len())
    }

    /// Where each of `refs` is now, in this repository or on the image's remote: at the id the
    /// plan recorded, gone, or at another id.
    fn ref_states(&self, image: &BeforeImage, refs: &[DeletedRef]) -> Result<Vec<RefNow>> {
        let targets = self.targets(image, refs)?;
        Ok(refs
            .iter()
            .map(|r| match targets.get(&r.refname) {
                None => RefNow::Deleted,
                Some(oid) if oid.to_string() == r.oid => RefNow::Planned,
                Some(_) => RefNow::Moved,
            })
            .collect())
    }

    /// A remote's plan applied without the consumed marker, interrupted around its push: the
    /// refs decide. The push was atomic and made only after the local backup ref, so every
    /// planned ref gone with its backup here means it landed, none gone that it did not;
    /// anything else is no state the push leaves (16, naming the refs). Without a marker,
    /// branches another clone deleted at their planned ids after this apply made its backup
    /// look the same: either way they are gone and kept here.
    pub(super) fn recover_unmarked_push(
        &self,
        journal: Journal<'_, Pending>,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let id = journal.id();
        let now = self.targets(image, &image.refs)?;
        let kept = self.kept(image);
        let gone: Vec<&DeletedRef> = image
            .refs
            .iter()
            .filter(|r| !now.contains_key(&r.refname))
            .collect();
        let backed = image
            .refs
            .iter()
            .filter(|r| kept.contains(image.backup_tip(r)))
            .count();
        if gone.len() == image.refs.len() && backed == image.refs.len() {
            let key = self.receipt_key(id, image, marker, key)?;
            self.settle(journal.refs_found_committed()?, image, key)?;
            return Ok(RecoveryOutcome::Completed(Completed::UnmarkedPushLanded));
        }
        if gone.is_empty() || backed < image.refs.len() {
            // None gone: the push did not land. Gone without this apply's backup: it never
            // pushed (the backup ref comes first), someone else deleted them.
            let e = Error::new(
                Kind::Drift,
                "the apply was interrupted before its push landed on the remote",
            );
            self.abort(journal, &e)?;
            return Ok(RecoveryOutcome::Abandoned(if gone.is_empty() {
                Abandoned::UnmarkedPushNotLanded
            } else {
                Abandoned::UnmarkedNotPushed
            }));
        }
        let names = |refs: Vec<&DeletedRef>| {
            refs.iter()
                .map(|r| safe(&r.refname))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let left: Vec<&DeletedRef> = image
            .refs
            .iter()
            .filter(|r| now.contains_key(&r.refname))
            .collect();
        Err(Error::new(
            Kind::NeedsRecovery,
            format!(
                "plan sha256:{id} was applied without a consumed marker and interrupted around its atomic push, but the remote shows {} of its {} refs gone (gone: {}; still there: {}): an atomic push leaves all or none; nothing was changed",
                gone.len(),
                image.refs.len(),
                names(gone),
                names(left)
            ),
        )
        .with_hint("someone changed the remote's branches since: compare them with the plan and the backup refs/guardctl/backup/<id> here, then move this plan's directory out of .git/guardctl/plans"))
    }

    /// A rollback interrupted around its restore is finished: each ref still missing is
    /// created at its old id, leased on its absence (in this repository, or by one atomic
    /// push to the remote, whose `receive-pack` may have died with us midway). A name taken
    /// by another commit meanwhile is for a person (16, naming it).
    pub(super) fn recover_rollback(
        &self,
        id: &str,
        image: &BeforeImage,
        signers: &AllowedSigners,
    ) -> Result<RecoveryOutcome> {
        let journal = self.resume::<RollingBack>(id)?;
        self.wait_for_orphaned_git(id)?;
        let path = self.store.plan_dir(id).join("rollback.json");
        let Some(bytes) = self.store.read_file(id, "rollback.json")? else {
            return Err(state::inconsistent(&path, "a rollback was started without it"));
        };
        // Signed by whoever started the rollback, who must be allowed to apply: the journal's
        // `rollback-started` is not signed, and recover restores under its runner's identity.
        let (record, verified, envelope) = super::records::open::<state::RollbackRecord>(
            &bytes,
            state::ROLLBACK_PAYLOAD_TYPE,
            "rollback record",
        )
        .map_err(|why| state::inconsistent(&path, why))?;
        let principals = super::records::apply_principals(signers, &verified, &envelope, record.started_at);
        if principals.is_empty() {
            return Err(state::inconsistent(
                &path,
                format!(
                    "it is signed by {}, a key not allowed to apply",
                    verified.fingerprint
                ),
            ));
        }
        if record.plan_id != image.plan_id {
            return Err(state::inconsistent(
                &path,
                format!("it names another plan ({})", safe(&record.plan_id)),
            ));
        }
        let missing = record.refs;
        if let Some(r) = missing.iter().find(|r| !image.refs.contains(r)) {
            return Err(state::inconsistent(
                &path,
                format!("it restores {}, which the plan did not delete", r.refname),
            ));
        }
        let now = self.ref_states(image, &missing)?;
        let taken: Vec<String> = missing
            .iter()
            .zip(&now)
            .filter(|(_, state)| **state == RefNow::Moved)
            .map(|(r, _)| safe(&r.refname))
            .collect();
        let still: Vec<&DeletedRef> = missing
            .iter()
            .zip(&now)
            .filter(|(_, state)| **state == RefNow::Deleted)
            .map(|(r, _)| r)
            .collect();
        if still.is_empty() && taken.is_empty() {
            self.config_restored(journal.rollback_refs_found_restored()?, image)?;
            return Ok(RecoveryOutcome::RolledBack { config_only: false });
        }
        if !taken.is_empty() {
            return Err(Error::new(
                Kind::NeedsRecovery,
                format!(
                    "plan sha256:{id}'s rollback was interrupted, and these branches it restores are now at other commits: {}; nothing was changed",
                    taken.join(", ")
                ),
            )
            .with_hint(format!("the commits they had are kept by refs/guardctl/backup/{id}")));
        }
        // Tag objects first (idempotent), then every name still missing, created leased on
        // its absence: a name someone takes meanwhile fails the whole transaction.
        let still: Vec<DeletedRef> = still.into_iter().cloned().collect();
        self.restore_tag_objects(image, &still)?;
        match self.remote_target(image)? {
            None => {
                let ops: Vec<RefOp> = still
                    .iter()
                    .map(|r| RefOp::Create {
                        refname: r.refname.clone(),
                        oid: r.oid.clone(),
                    })
                    .collect();
                self.transaction(id, &ops)?;
            }
            Some(url) => {
                let ops = super::rollback::remote_creates(&still);
                self.watched_git(id, |spawned| self.repo.push_atomic(&url, &ops, None, spawned))?;
            }
        }
        self.config_restored(journal.rollback_refs_found_restored()?, image)?;
        Ok(RecoveryOutcome::RollbackFinished {
            restored: still.len(),
        })
    }
}

/// A state only a person can settle (16): what recover found, for plan `id`.
fn person(id: &str, what: &str) -> Error {
    Error::new(Kind::NeedsRecovery, format!("plan sha256:{id} was interrupted around its deletions and {what}; nothing was changed"))
        .with_hint(format!("compare the branches with the plan and its backup refs/guardctl/backup/{id}, then move this plan's directory out of .git/guardctl/plans"))
}
