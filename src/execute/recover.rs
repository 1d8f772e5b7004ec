//! `recover`: reads each plan's journal and the repository's real state (its refs, the
//! remote's marker) and finishes or abandons an interrupted apply or rollback without
//! guesswork. Every state file it acts on is verified first (`records`), and a receipt is
//! signed only with the key that consumed the plan.

use super::apply_remote::consumed_url;
use super::journal::Journal;
use super::journal::at::{CommandStarted, Pending, Written};
use super::records::{consumed, signed_state, trusted};
use super::{ABANDONED, Executor};
use crate::error::{Error, Kind, Result};
use crate::render::recovery::describe;
use crate::sign::{AllowedSigners, SigningKey};
use crate::store::recovered::{Abandoned, Completed, Recovered, RecoveryOutcome};
use crate::store::state::{Consumed, Step, StepOf};
use crate::store::{BeforeImage, state};
use crate::text::safe;

impl Executor<'_> {
    /// Finish or abandon every interrupted apply or rollback. Returns what was done, per plan
    /// (its words, `render::recovery`, are the detail of the audit entry recording it).
    /// Every state file it acts on is checked first (`trusted`): an inconsistent one stops it
    /// with `needs_recovery` before anything changes. It signs a receipt only with the key
    /// that consumed the plan (see `receipt_key`).
    pub fn recover(&self, key: Option<&SigningKey>, signers: &AllowedSigners) -> Result<Vec<Recovered>> {
        let mut done = Vec::new();
        for id in self.store.plan_ids()? {
            let steps = self.store.journal_steps(&id)?;
            let Some(&last) = steps.last() else {
                // Killed while git held the refs for a transaction never committed: let that
                // git finish aborting before anyone touches those refs again (the locks of a
                // git killed too were removed when the lock was taken: `mutate::stale_locks`).
                self.wait_for_orphaned_git(&id)?;
                continue;
            };
            // Every step answers (no wildcard): a new step must say what recovery does after it.
            let settled = match last {
                Step::Done
                | Step::Refused
                | Step::Aborted
                | Step::RecoveredUnstarted
                | Step::RolledBack
                | Step::RollbackAbandoned => true,
                Step::BeforeImageWritten
                | Step::Consumed
                | Step::BackupCreated
                | Step::CommandStarted
                | Step::CommandFinished
                | Step::RefsCommitted
                | Step::ConfigRemoved
                | Step::RollbackStarted
                | Step::RollbackRefsRestored => false,
            };
            if settled {
                continue;
            }
            if last == Step::BeforeImageWritten && !self.store.is_consumed(&id) {
                trusted(self.store, &id, signers)?;
                let outcome = self.recover_unstarted(&id)?;
                self.audit(
                    "recover",
                    Some(&format!("sha256:{id}")),
                    None,
                    &describe(&outcome),
                )?;
                done.push(Recovered { id, outcome });
                continue;
            }
            let (image, marker) = consumed(self.store, &id, signers)?;
            self.check_kind(&id, &image, &steps)?;
            let outcome = match last {
                Step::BeforeImageWritten | Step::Consumed | Step::BackupCreated => {
                    self.recover_apply(&id, &image, &marker, key)?
                }
                Step::CommandStarted => self.recover_started_command(&id, &image, &marker, key)?,
                Step::CommandFinished => {
                    let key = self.receipt_key(&id, &image, &marker, key)?;
                    self.finish(&id, &image, key)?;
                    RecoveryOutcome::Completed(Completed::CommandFinished)
                }
                Step::RefsCommitted | Step::ConfigRemoved => {
                    let key = self.receipt_key(&id, &image, &marker, key)?;
                    let (deleted, backed) = self.committed(&image)?;
                    if deleted != image.refs.len() || backed != image.refs.len() {
                        return Err(state::inconsistent(
                            &self.store.plan_dir(&id).join("journal"),
                            format!(
                                "it says the deletions were committed, but {deleted} of {} refs are deleted and {backed} backed up",
                                image.refs.len()
                            ),
                        ));
                    }
                    self.finish(&id, &image, key)?;
                    RecoveryOutcome::Completed(Completed::Committed)
                }
                Step::RollbackStarted => self.recover_rollback(&id, &image, signers)?,
                Step::RollbackRefsRestored => {
                    self.restore_config(&id, &image)?;
                    RecoveryOutcome::RolledBack { config_only: true }
                }
                Step::Done
                | Step::Refused
                | Step::Aborted
                | Step::RecoveredUnstarted
                | Step::RolledBack
                | Step::RollbackAbandoned => continue,
            };
            self.audit(
                "recover",
                Some(&format!("sha256:{id}")),
                None,
                &describe(&outcome),
            )?;
            done.push(Recovered { id, outcome });
        }
        Ok(done)
    }

    /// An exec plan's journal has command steps and no ref steps; a ref plan's the reverse.
    pub(super) fn check_kind(&self, id: &str, image: &BeforeImage, steps: &[Step]) -> Result<()> {
        let foreign = match image.command {
            Some(_) => StepOf::Refs,
            None => StepOf::Command,
        };
        let wrong = steps.iter().find(|s| s.belongs_to() == foreign);
        match wrong {
            Some(step) => Err(state::inconsistent(
                &self.store.plan_dir(id).join("journal"),
                format!("step `{step}` does not belong to this plan's operation"),
            )),
            None => Ok(()),
        }
    }

    /// The key that may sign the receipt of an interrupted apply: the very key that consumed
    /// the plan (and so made the change). Anyone else's recover leaves it for that key.
    pub(super) fn receipt_key<'k>(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&'k SigningKey>,
    ) -> Result<&'k SigningKey> {
        let key = need_key(key)?;
        if crate::sign::sshsig::fingerprint(&key.public) == marker.key {
            return Ok(key);
        }
        Err(Error::new(
            Kind::NeedsRecovery,
            format!(
                "plan sha256:{id} was interrupted after its changes were made; only the key that applied it ({}, {}) may sign its receipt",
                marker.key,
                safe(&image.executor)
            ),
        )
        .with_hint(format!(
            "ask {} to run `guardctl recover` in this repository",
            safe(&image.executor)
        )))
    }

    /// How many of the image's refs are deleted now, and how many its backup keeps.
    pub(super) fn committed(&self, image: &BeforeImage) -> Result<(usize, usize)> {
        let targets = self.targets(image, &image.refs)?;
        let deleted = image
            .refs
            .iter()
            .filter(|r| !targets.contains_key(&r.refname))
            .count();
        let kept = self.kept(image);
        let backed = image
            .refs
            .iter()
            .filter(|r| kept.contains(image.backup_tip(r)))
            .count();
        Ok((deleted, backed))
    }

    /// An apply interrupted before it consumed the plan: nothing changed; forget its image.
    pub(super) fn recover_unstarted(&self, id: &str) -> Result<RecoveryOutcome> {
        let journal = self.resume::<Written>(id)?;
        self.wait_for_orphaned_git(id)?;
        self.store.remove_file(id, "before-image.json")?;
        journal.recovered_unstarted()?;
        Ok(RecoveryOutcome::Forgotten)
    }

    /// What `consumed/<id>` holds on the remote when it is this clone's marker.
    pub(super) fn our_marker(&self, id: &str) -> Result<Vec<u8>> {
        Ok(self.store.read_file(id, "consumed")?.unwrap_or_default())
    }

    /// An exec apply interrupted after it consumed the plan and before its command started:
    /// the command was not run, the apply is abandoned, with a record for other clones when
    /// its marker had landed on the plan's remote ([`Executor::record_abandonment`]).
    pub(super) fn recover_unstarted_command(
        &self,
        journal: Journal<'_, Pending>,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let id = journal.id();
        let published_on = self.record_abandonment(id, image, marker, key, state::Stage::BeforeCommand)?;
        let e = Error::new(Kind::Drift, "the apply was interrupted before the command ran");
        self.abort(journal, &e)?;
        Ok(RecoveryOutcome::Abandoned(Abandoned::CommandNotStarted {
            published_on,
        }))
    }

    /// An exec apply interrupted while its command ran: it may have run to the end, partly,
    /// or not at all, and is never run twice. The apply is abandoned, with a record for other
    /// clones (who must check the command's effects by hand) when its marker had landed on
    /// the plan's remote ([`Executor::record_abandonment`]).
    pub(super) fn recover_started_command(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let journal = self.resume::<CommandStarted>(id)?;
        let published_on = self.record_abandonment(id, image, marker, key, state::Stage::CommandStarted)?;
        let e = Error::new(
            Kind::NeedsRecovery,
            "the command was interrupted while it ran (it may have partly run); it is not run again",
        );
        self.abort(journal, &e)?;
        Ok(RecoveryOutcome::Abandoned(Abandoned::CommandInterrupted {
            published_on,
        }))
    }

    /// When the exec apply `recover` abandons at `stage` had its consumed marker land on the
    /// plan's remote (its before-image says it consumed there with the marker, this clone's
    /// config still resolves that remote to the recorded repository, and the remote holds this
    /// clone's marker), every other clone would wait for a receipt that never comes: a signed
    /// record of the abandonment (`abandoned.json`, signed by the key that consumed the plan,
    /// anyone else's recover is 16) is written for `consume::publish_recovered` to publish in
    /// its place. Returns the remote's name when it wrote one.
    pub(super) fn record_abandonment(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
        stage: state::Stage,
    ) -> Result<Option<String>> {
        let Some(at) = image.consumed_on.as_ref().filter(|c| c.marker) else {
            return Ok(None);
        };
        let Some(url) = consumed_url(&self.repo, image)? else {
            return Ok(None);
        };
        if self.remote_consumed(&url, id)? != Some(self.our_marker(id)?) {
            return Ok(None);
        }
        let (when, tells) = match stage {
            state::Stage::BeforeCommand => ("before its command ran", "the command was never run"),
            state::Stage::CommandStarted => ("while its command ran", "the command may have partly run"),
        };
        let key = match key {
            Some(k) if crate::sign::sshsig::fingerprint(&k.public) == marker.key => k,
            _ => {
                return Err(Error::new(
                    Kind::NeedsRecovery,
                    format!(
                        "plan sha256:{id} was consumed on remote `{}` and interrupted {when}; only the key that consumed it ({}, {}) may sign the record that tells other clones {tells}",
                        safe(&at.remote),
                        marker.key,
                        safe(&image.executor)
                    ),
                )
                .with_hint(format!(
                    "ask {} to run `guardctl recover` in this repository",
                    safe(&image.executor)
                )));
            }
        };
        let reason = match stage {
            state::Stage::BeforeCommand => {
                "the apply was interrupted after it consumed the plan and before its command started; recover abandoned it"
            }
            state::Stage::CommandStarted => {
                "the apply was interrupted while its command ran (it may have partly run); recover abandoned it without running it again"
            }
        };
        let record = state::Abandoned {
            plan_id: image.plan_id.clone(),
            plan_hash: image.plan_hash.clone(),
            executor: image.executor.clone(),
            key: marker.key.clone(),
            consumed_at: marker.created_at,
            abandoned_at: self.now,
            stage,
            reason: reason.into(),
        };
        let bytes = signed_state(state::ABANDONED_PAYLOAD_TYPE, &record, key, ABANDONED)?;
        self.store.write_file(id, ABANDONED, &bytes)?;
        Ok(Some(at.remote.clone()))
    }
}

pub(super) fn need_key(key: Option<&SigningKey>) -> Result<&SigningKey> {
    key.ok_or_else(|| {
        Error::usage("finishing an interrupted apply signs its receipt: a signing key is needed")
    })
}
