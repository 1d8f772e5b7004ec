//! Applying a plan that deletes a remote's branches or tags, and consuming a plan on its
//! remote: nothing can lock a remote's refs, so the drift check comes first, then the
//! before-image, `consumed`, the local backup ref (`backup-created`), and one atomic push whose
//! every deletion is leased on the planned id and which creates the plan's consumed marker on
//! the remote's ledger, create-only (docs/remote.md): of any number of clones applying the
//! plan, one push lands. Also the refusals of an apply that finds its plan consumed or its
//! name taken there, and the URL an image may be pushed to (never read from the image).

use super::{Executor, PUBLISHED_PLAN, crash_point};
use crate::error::{Error, Kind, Result};
use crate::plan::approval::Receipt;
use crate::repo::backups::BACKUPS_REF;
use crate::repo::mutate::{RefOp, RemoteOp, push_args};
use crate::repo::publish::RefOutcome;
use crate::sign::SigningKey;
use crate::store::ledger::LEDGER_REF;
use crate::store::published::{Item, ItemKind, Remote};
use crate::store::{BeforeImage, published};
use crate::text::safe;

impl Executor<'_> {
    /// A remote's branches: check drift, write the backup commit and the before-image, mark
    /// consumed, create the local backup ref, then one atomic push whose every deletion is
    /// leased on the planned id (the remote's own compare-and-swap: nothing locks a remote
    /// between our check and the push, the leases make a moved branch fail the whole push).
    /// `url` is the one URL the plan is bound to: pushed to by URL, never by remote name.
    pub(super) fn apply_remote(
        &self,
        id: &str,
        url: &str,
        mut image: BeforeImage,
        key: &SigningKey,
        drift_check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Receipt> {
        let ops: Vec<RemoteOp> = image
            .refs
            .iter()
            .map(|d| RemoteOp::Delete {
                refname: d.refname.clone(),
                old: d.oid.clone(),
            })
            .collect();
        push_args(&ops)?;
        drift_check()?;
        let commit = match image.backup_ref {
            Some(_) => Some(self.write_backup_commit(&image)?),
            None => None,
        };
        image.backup_commit = commit.as_ref().map(|c| c.oid.clone());
        self.store.write_before_image(id, &image)?;
        let journal = self.journal(id).before_image_written()?;
        self.consume(id, key)?;
        let journal = journal.consumed()?;
        // The consumed marker goes to the remote in the same atomic push as the deletions,
        // create-only: of any number of clones applying this plan, one push lands. Without it
        // (the policy's `[remote] consumed_marker = false`, recorded in the image), the leases
        // alone keep a second clone from deleting anything.
        let journal = match (image.backup_ref.clone(), commit) {
            (Some(refname), Some(commit)) => {
                let create = RefOp::Create {
                    refname,
                    oid: commit.oid,
                };
                if let Err(e) = self.transaction(id, &[create]) {
                    self.abort(journal, &e)?;
                    return Err(e);
                }
                journal.backup_created()?.pending()
            }
            _ => journal.pending(),
        };
        let backup = match (&image.backup_commit, with_marker(&image)) {
            (Some(c), true) => Some((crate::repo::Oid::from_str(c)?, image.created_at.unix_timestamp())),
            _ => None,
        };
        if let Err(e) = self.push_consuming(id, url, &ops, with_marker(&image), backup) {
            self.abort(journal, &e)?;
            return Err(e);
        }
        crash_point("pushed");
        let journal = journal.refs_committed()?;
        self.settle(journal, &image, key)
    }

    /// This plan's consumed marker as the item published on its remote (`consumed.json`:
    /// the bytes of the local marker).
    pub(super) fn marker_item(&self, id: &str) -> Result<Item> {
        let bytes = self
            .store
            .read_file(id, "consumed")?
            .ok_or_else(|| Error::internal("the consumed marker vanished before it was pushed"))?;
        Ok(Item {
            kind: ItemKind::Consumed,
            refname: published::consumed_ref(id),
            bytes,
        })
    }

    /// The plan as `apply` saved it to publish beside its marker (`PUBLISHED_PLAN`), if it did.
    pub(super) fn plan_item(&self, id: &str) -> Result<Option<Item>> {
        Ok(self.store.read_file(id, PUBLISHED_PLAN)?.map(|bytes| Item {
            kind: ItemKind::Plan,
            refname: published::plan_ref(id),
            bytes,
        }))
    }

    /// The repository at `url` as a remote to read and publish on, reached with this clone's
    /// transport settings.
    pub(super) fn remote_at(&self, url: &str) -> Result<Remote> {
        Ok(Remote {
            name: url.to_string(),
            url: url.to_string(),
            transport: self.repo.transport_settings()?,
        })
    }

    /// One atomic push of `ops` and, `with_marker`, of the ledger commit that adds this
    /// plan's consumed marker (`consumed/<id>`; none: see [`with_marker`]), built on the
    /// ledger's current tip and carried from a scratch repository named as an alternate
    /// object store. When git reports a failure, the remote's marker decides what it was:
    /// ours (the push landed: a lost answer), another's (applied elsewhere:
    /// [`applied_elsewhere`]), none (a real failure; retried when the remote only could not
    /// lock a ref that a concurrent push held, or another write moved the ledger's tip first,
    /// since every update is leased and a retry is the same compare-and-swap).
    ///
    /// `backup`: the apply's backup commit and the before-image's time. With a marker, the
    /// same push adds it to the remote's backups branch (`repo::backups`), so what the plan
    /// deletes stays on the remote for a rollback from any clone.
    pub(super) fn push_consuming(
        &self,
        id: &str,
        url: &str,
        ops: &[RemoteOp],
        with_marker: bool,
        backup: Option<(crate::repo::Oid, i64)>,
    ) -> Result<()> {
        let mut pause = std::time::Duration::from_millis(100);
        let mut attempts = 0;
        let marker = match with_marker {
            true => Some((self.remote_at(url)?, self.marker_item(id)?)),
            false => None,
        };
        // The plan goes with its marker, so that every later apply of the planner's other
        // plans counts it for the bulk class across plans, wherever this one was applied.
        let mut plan = match with_marker {
            true => self.plan_item(id)?,
            false => None,
        };
        loop {
            attempts += 1;
            let mut all = ops.to_vec();
            // The first attempt builds on the run's snapshot of this remote, if any; a
            // retry (the tip moved, or the answer was lost) reads the remote again.
            let known = self
                .published
                .as_deref()
                .filter(|s| attempts == 1 && s.remote.url == url);
            // A retry builds on what the remote holds then, which must still hold the tip
            // the snapshot saw (a rewind while this command ran: 16).
            let seen = self
                .published
                .as_deref()
                .filter(|s| s.remote.url == url)
                .and_then(|s| s.ledger_tip());
            let prepare = |remote: &Remote, items: &[Item]| match known {
                Some(s) => s.prepare(items),
                None => published::prepare_holding(remote, items, seen.filter(|_| attempts > 1)),
            };
            let prepared = match &marker {
                Some((remote, item)) => {
                    let mut items = vec![item.clone()];
                    items.extend(plan.clone());
                    let p = prepare(remote, &items)?;
                    match p.refs.get(1).map(|r| &r.1) {
                        // Another file of this id is published: the same plan with another
                        // signature counts already (the ledger keeps the first). Anything
                        // else there (junk pushed before the apply) is left out by every
                        // reader, and this plan with it: refused, or its planner's other
                        // plans would be counted without it in every other clone.
                        Some(RefOutcome::Stale) => {
                            if plan_name_held_by_other(remote, id)? {
                                return Err(plan_name_taken(id));
                            }
                            plan = None;
                            Some(prepare(remote, std::slice::from_ref(item))?)
                        }
                        _ => Some(p),
                    }
                }
                None => None,
            };
            if let Some(p) = &prepared {
                match &p.refs[0].1 {
                    // This clone's marker is there: an earlier push of this apply landed.
                    RefOutcome::AlreadyThere => return Ok(()),
                    RefOutcome::Stale => return Err(applied_elsewhere(id)),
                    _ => {}
                }
                if let Some(u) = &p.update {
                    all.push(RemoteOp::Update {
                        refname: u.refname.clone(),
                        old: u.expect.map(|o| o.to_string()),
                        new: u.new.map(|o| o.to_string()).unwrap_or_default(),
                    });
                }
                if let Some((commit, when)) = backup {
                    let tip = p.scratch.backups_tip(url, p.backups)?;
                    all.push(RemoteOp::Update {
                        refname: BACKUPS_REF.to_string(),
                        old: tip.map(|o| o.to_string()),
                        new: p.scratch.backups_commit(tip, commit, id, when)?.to_string(),
                    });
                }
            }
            let via = prepared.as_ref().map(|p| p.scratch.as_ref());
            let Err(e) = self.watched_git(id, |spawned| self.repo.push_atomic(url, &all, via, spawned))
            else {
                // The receipt that follows builds on the tip this push made.
                if let (Some(s), Some(p)) = (known, &prepared) {
                    s.landed(&p.scratch, p.after.as_ref());
                }
                return Ok(());
            };
            let Some((_, item)) = &marker else {
                if attempts < 6 && lock_contention(&e) {
                    std::thread::sleep(pause);
                    pause *= 2;
                    continue;
                }
                return Err(match e.kind {
                    Kind::Drift => e.with_hint(CONSUMED_HERE_ONLY_HINT),
                    _ => e,
                });
            };
            match self.remote_consumed(url, id) {
                Ok(Some(bytes)) if bytes == item.bytes => return Ok(()),
                Ok(Some(_)) => return Err(applied_elsewhere(id)),
                Ok(None) if attempts < 20 && (lock_contention(&e) || ledger_moved(&e)) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                _ if e.causes.iter().any(|c| c.contains("remote rejected")) => {
                    return Err(e.with_hint(format!(
                        "the remote refused the push, which adds {} to the ledger {LEDGER_REF} with the changes: guardctl consumes a remote's plan there, exactly once across clones; ask its administrator to allow pushing that branch, or, if the team accepts that the plan is then consumed in the applying clone only, set `[remote] consumed_marker = false` in the policy (docs/remote.md)",
                        published::consumed_ref(id)
                    )));
                }
                _ => return Err(e),
            }
        }
    }

    /// The consumed marker of plan `id` on the repository at `url` (its ledger, or its ref
    /// from before the ledger), if it has one: its bytes (empty when it cannot be read).
    pub(super) fn remote_consumed(&self, url: &str, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(crate::store::consumption::read(&self.remote_at(url)?, id)?
            .map(|c| c.consumed.bytes.unwrap_or_default()))
    }
}

/// Whether the remote publishes something at `plans/<id>` and none of it reads as plan `id`
/// (a file that verifies as a plan file with that id), as every clone counting the bulk class
/// reads it.
pub fn plan_name_held_by_other(remote: &Remote, id: &str) -> Result<bool> {
    let there = published::Snapshot::fetch(remote, published::Scope::Plan(id.to_string()))?;
    Ok(holds_other_than_plan(&there, id))
}

/// [`plan_name_held_by_other`] in a snapshot already fetched (the run's, of that remote):
/// nothing published is taken away, so what it saw there is still there.
pub fn holds_other_than_plan(there: &published::Snapshot, id: &str) -> bool {
    there.has_plan(id) && !matches!(there.plan(id), Ok(Some(_)))
}

/// The refusal (14, a published name that holds other content) of an apply whose plan's name
/// on its remote holds something that is not the plan: applied, the plan could not be
/// published with its marker, and no other clone would count it for the bulk class across
/// its planner's plans.
pub fn plan_name_taken(id: &str) -> Error {
    Error::new(
        Kind::Policy,
        format!(
            "{} on the plan's remote holds something that is not plan sha256:{id}: applied, the plan could not be published with its consumed marker and the bulk class across plans in other clones would not count it; nothing was deleted",
            published::plan_ref(id)
        ),
    )
    .with_hint("someone pushed that name before the apply: ask the remote's administrator who did; re-run `guardctl plan` (a new plan has a new id) and have the new plan approved")
}

/// The refusal of an apply that found the plan consumed on its remote by another apply (its
/// marker there is `oid`): nothing was changed here. `apply` then prints that apply's
/// receipt as a replay, once it is published.
pub(super) fn applied_elsewhere(id: &str) -> Error {
    Error::new(
        Kind::NeedsRecovery,
        format!(
            "plan sha256:{id} was applied elsewhere first ({} on its remote holds another apply's marker); nothing was changed here",
            crate::store::published::consumed_ref(id)
        ),
    )
    .with_hint("run `guardctl apply` again to print the receipt of the apply that consumed it")
}

/// The URL an exec apply consumed its plan at (`consumed_on`), as this clone's config for that
/// remote resolves it **now**: the before-image is untrusted input and never names where
/// guardctl pushes. Refused (64, naming both) when that is no longer the same repository as
/// the one recorded (or as the plan's). `None`: the image records no remote consumption.
pub fn consumed_url(repo: &crate::repo::Repo, image: &BeforeImage) -> Result<Option<String>> {
    let Some(at) = &image.consumed_on else {
        return Ok(None);
    };
    let url = repo.remote_url(&at.remote)?;
    if crate::repo::url::same_repository(&url, &at.url)
        && crate::repo::url::same_repository(&url, &image.repository)
    {
        return Ok(Some(url));
    }
    Err(Error::usage(format!(
        "remote `{}` is now {}, but plan {} was consumed at {}; nothing was done there",
        safe(&at.remote),
        safe(&url),
        image.plan_id,
        safe(&at.url)
    ))
    .with_hint(format!(
        "point `{}` back at {} (`git remote set-url`), then run guardctl again",
        safe(&at.remote),
        safe(&at.url)
    )))
}

/// Whether an apply of a remote's plan creates `refs/guardctl/consumed/<id>` with its push, as
/// its before-image records (an image from before the record existed: it did).
pub(super) fn with_marker(image: &BeforeImage) -> bool {
    image.consumed_on.as_ref().is_none_or(|c| c.marker)
}

/// The hint of a remote's plan, consumed without the marker, whose push found a ref moved.
pub const CONSUMED_HERE_ONLY_HINT: &str = "this plan is consumed in the applying clone only (the policy sets `[remote] consumed_marker = false`, docs/remote.md): if another clone applied it first, its branches or tags are gone and its receipt is in that clone; nothing was deleted here. Otherwise re-run `guardctl plan`";

/// Whether a push failed only because the tip of the ledger or of the backups branch moved
/// (another write landed first):
/// the commit is built again on the new tip.
pub(super) fn ledger_moved(e: &Error) -> bool {
    e.kind == Kind::Drift
        && !e.causes.is_empty()
        && e.causes
            .iter()
            .all(|c| c.contains(LEDGER_REF) || c.contains(BACKUPS_REF))
}

/// Whether a failed push failed only because the remote could not lock a ref (another push
/// held it at that moment).
pub(super) fn lock_contention(e: &Error) -> bool {
    std::iter::once(&e.message).chain(&e.causes).any(|m| {
        m.contains("cannot lock ref") || m.contains("Unable to create") || m.contains("failed to lock")
    })
}
