//! The write side of a plan's journal, one type per place in it: a [`Journal`] standing at
//! place `S` (a marker type of [`at`], the places of `store::state::Position`) offers only
//! the steps that may follow `S`, each consuming the journal and returning it at the next
//! place. A sequence `store::state::check_sequence` would refuse does not compile: nothing
//! is committed before the plan is consumed, a command never starts twice, nothing but a
//! rollback follows `done`. The lines on disk are the same `store::state::Step`s as ever
//! (`Store::journal` appends them).
//!
//! Where a journal starts: a fresh apply at [`at::Idle`] ([`Journal::start`]: its caller
//! checked the plan is not consumed here), a rollback at [`at::Settled`]
//! ([`Journal::after_apply`]: the session recovered every interrupted plan first), and
//! `recover` where the journal it read stands ([`Journal::resume`], checked again against
//! the file). `recover` reads journals written by anyone at run time; only the code writing
//! them is checked by the compiler.
//!
//! A live sequence's steps are points where the crash tests can stop the process
//! (`crash_point`, test builds only); the steps recovery records from what it found, and
//! the refusals and abandonments that end a sequence, are not (as before the types).

use super::crash_point;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::state::{self, Position, Step};
use std::marker::PhantomData;
use time::OffsetDateTime;

/// The places a journal can stand at (`store::state::Position`), and the unions of them
/// that `recover` and the refusal of an apply act on.
pub mod at {
    /// Nothing journaled for this attempt (or only `refused`, `recovered-unstarted`).
    pub struct Idle;
    /// `before-image-written`.
    pub struct Written;
    /// `consumed`.
    pub struct Consumed;
    /// `backup-created` (a remote's refs: the local backup ref exists).
    pub struct BackupCreated;
    /// `command-started`.
    pub struct CommandStarted;
    /// `command-finished`.
    pub struct CommandFinished;
    /// `refs-committed`.
    pub struct Committed;
    /// `config-removed`.
    pub struct ConfigRemoved;
    /// `done`, `aborted`, `rolled-back` or `rollback-abandoned`.
    pub struct Settled;
    /// `rollback-started`.
    pub struct RollingBack;
    /// `rollback-refs-restored`.
    pub struct RefsRestored;
    /// Not consumed: `Idle` or `Written`, or unknown between them after appending
    /// `before-image-written` failed. Only `refused` may follow.
    pub struct Unconsumed;
    /// Consumed or about to be, nothing committed: `Written`, `Consumed` or `BackupCreated`
    /// (an apply about to push, or interrupted before its refs changed).
    pub struct Pending;
    /// The change made: `Committed`, `CommandFinished` or `ConfigRemoved` (an apply to finish).
    pub struct Finishing;
}

use at::*;

/// A place, or a union of places, a journal may be found at when read back.
pub trait At {
    const AT: &'static [Position];
}

macro_rules! places {
    ($($marker:ident => [$($p:ident),+];)+) => {
        $(impl At for $marker {
            const AT: &'static [Position] = &[$(Position::$p),+];
        })+
    };
}

places! {
    Idle => [Idle];
    Written => [Written];
    Consumed => [Consumed];
    BackupCreated => [BackupCreated];
    CommandStarted => [CommandStarted];
    CommandFinished => [CommandFinished];
    Committed => [Committed];
    ConfigRemoved => [ConfigRemoved];
    Settled => [Settled];
    RollingBack => [RollingBack];
    RefsRestored => [RefsRestored];
    Unconsumed => [Idle, Written];
    Pending => [Written, Consumed, BackupCreated];
    Finishing => [Committed, CommandFinished, ConfigRemoved];
}

/// Places `refused` may follow: the plan is not consumed.
pub trait MayRefuse {}
impl MayRefuse for Idle {}
impl MayRefuse for Written {}
impl MayRefuse for Unconsumed {}

/// Places `refs-committed` may follow.
pub trait MayCommit {}
impl MayCommit for Written {}
impl MayCommit for Consumed {}
impl MayCommit for BackupCreated {}
impl MayCommit for Pending {}

/// Places `aborted` may follow: nothing committed, no command finished.
pub trait MayAbort {}
impl MayAbort for Written {}
impl MayAbort for Consumed {}
impl MayAbort for BackupCreated {}
impl MayAbort for CommandStarted {}
impl MayAbort for Pending {}

/// Places `config-removed` may follow: the change is made (again after a crash after it).
pub trait MayRemoveConfig {}
impl MayRemoveConfig for Committed {}
impl MayRemoveConfig for CommandFinished {}
impl MayRemoveConfig for ConfigRemoved {}
impl MayRemoveConfig for Finishing {}

/// The places that are [`Pending`].
pub trait IsPending {}
impl IsPending for Written {}
impl IsPending for Consumed {}
impl IsPending for BackupCreated {}

/// Plan `id`'s journal standing at `S`. Not `Clone`: each step consumes it, so one place is
/// left at most once.
pub struct Journal<'a, S> {
    store: &'a Store,
    id: &'a str,
    now: OffsetDateTime,
    at: PhantomData<S>,
}

/// Appending `before-image-written` failed: the line may be there or not, and either way
/// only `refused` may follow. As an [`Error`] (`?`) for a caller that refuses nothing.
pub struct NotWritten<'a> {
    pub error: Box<Error>,
    pub journal: Journal<'a, Unconsumed>,
}

impl From<NotWritten<'_>> for Error {
    fn from(n: NotWritten<'_>) -> Error {
        *n.error
    }
}

impl<'a, S> Journal<'a, S> {
    fn at<N>(store: &'a Store, id: &'a str, now: OffsetDateTime) -> Journal<'a, N> {
        Journal {
            store,
            id,
            now,
            at: PhantomData,
        }
    }

    /// The plan's id (hex), the name of its state directory.
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// A live sequence's step: appended, then a point where the crash tests stop.
    fn step<N>(self, step: Step) -> Result<Journal<'a, N>> {
        self.store.journal(self.id, step, self.now)?;
        crash_point(step.as_str());
        Ok(Self::at(self.store, self.id, self.now))
    }

    /// A step recorded without a crash point: one that ends a sequence, or one recovery
    /// records from what it found.
    fn record<N>(self, step: Step) -> Result<Journal<'a, N>> {
        self.store.journal(self.id, step, self.now)?;
        Ok(Self::at(self.store, self.id, self.now))
    }

    /// The same journal, seen as one of a union of places it belongs to.
    fn widen<N>(self) -> Journal<'a, N> {
        Self::at(self.store, self.id, self.now)
    }
}

impl<'a, S: At> Journal<'a, S> {
    /// Plan `id`'s journal as `recover` finds it, which must stand at `S`: read again and
    /// placed by `store::state::position` (a journal that does not is inconsistent, 16).
    pub fn resume(store: &'a Store, id: &'a str, now: OffsetDateTime) -> Result<Self> {
        let steps = store.journal_steps(id)?;
        let path = store.plan_dir(id).join("journal");
        let here = state::position(&steps).map_err(|why| state::inconsistent(&path, why))?;
        if !S::AT.contains(&here) {
            return Err(state::inconsistent(
                &path,
                format!(
                    "it stands at {here:?}, where recovery expected one of {:?}",
                    S::AT
                ),
            ));
        }
        Ok(Self::at(store, id, now))
    }
}

impl<'a> Journal<'a, Idle> {
    /// The journal of an apply about to start: its caller checked the plan is not consumed
    /// here (its journal is empty, or ends `refused` or `recovered-unstarted`).
    pub fn start(store: &'a Store, id: &'a str, now: OffsetDateTime) -> Self {
        Self::at(store, id, now)
    }

    /// The before-image is durable.
    pub fn before_image_written(self) -> std::result::Result<Journal<'a, Written>, NotWritten<'a>> {
        let (store, id, now) = (self.store, self.id, self.now);
        self.step(Step::BeforeImageWritten).map_err(|error| NotWritten {
            error: Box::new(error),
            journal: Self::at(store, id, now),
        })
    }
}

impl<'a, S: MayRefuse> Journal<'a, S> {
    /// A check refused the apply before the plan was consumed: it may be applied again.
    pub fn refused(self) -> Result<()> {
        self.record::<Idle>(Step::Refused).map(drop)
    }

    /// Seen as not consumed, whichever side of `before-image-written` it is.
    pub fn unconsumed(self) -> Journal<'a, Unconsumed> {
        self.widen()
    }
}

impl<'a> Journal<'a, Written> {
    /// The plan is marked consumed (its signed marker is written).
    pub fn consumed(self) -> Result<Journal<'a, Consumed>> {
        self.step(Step::Consumed)
    }

    /// Recovery forgot an apply interrupted before it consumed the plan.
    pub fn recovered_unstarted(self) -> Result<()> {
        self.record::<Idle>(Step::RecoveredUnstarted).map(drop)
    }
}

impl<'a> Journal<'a, Consumed> {
    /// A remote's refs: the local backup ref is created.
    pub fn backup_created(self) -> Result<Journal<'a, BackupCreated>> {
        self.step(Step::BackupCreated)
    }

    /// An exec plan's command is about to run (it never runs again after this).
    pub fn command_started(self) -> Result<Journal<'a, CommandStarted>> {
        self.step(Step::CommandStarted)
    }
}

impl<'a, S: IsPending> Journal<'a, S> {
    /// Seen as [`Pending`]: about to change the refs, or abort.
    pub fn pending(self) -> Journal<'a, Pending> {
        self.widen()
    }
}

impl<'a, S: MayCommit> Journal<'a, S> {
    /// The ref transaction or the push committed.
    pub fn refs_committed(self) -> Result<Journal<'a, Committed>> {
        self.step(Step::RefsCommitted)
    }

    /// Recovery found the refs committed (the journal did not say so yet).
    pub fn refs_found_committed(self) -> Result<Journal<'a, Committed>> {
        self.record(Step::RefsCommitted)
    }
}

impl<'a, S: MayAbort> Journal<'a, S> {
    /// The apply ended without changing anything; the plan stays consumed.
    pub fn aborted(self) -> Result<()> {
        self.record::<Settled>(Step::Aborted).map(drop)
    }
}

impl<'a> Journal<'a, CommandStarted> {
    /// The command and its verification ended; their signed result is written.
    pub fn command_finished(self) -> Result<Journal<'a, CommandFinished>> {
        self.step(Step::CommandFinished)
    }
}

impl<'a, S: MayRemoveConfig> Journal<'a, S> {
    /// The deleted branches' config is removed.
    pub fn config_removed(self) -> Result<Journal<'a, ConfigRemoved>> {
        self.step(Step::ConfigRemoved)
    }
}

impl<'a> Journal<'a, ConfigRemoved> {
    /// The receipt is signed, logged and stored.
    pub fn done(self) -> Result<Journal<'a, Settled>> {
        self.step(Step::Done)
    }
}

impl<'a> Journal<'a, Settled> {
    /// The journal of a rollback: the session recovered every interrupted plan before it,
    /// so the apply's journal is settled.
    pub fn after_apply(store: &'a Store, id: &'a str, now: OffsetDateTime) -> Self {
        Self::at(store, id, now)
    }

    /// What the rollback restores is written (`rollback.json`).
    pub fn rollback_started(self) -> Result<Journal<'a, RollingBack>> {
        self.step(Step::RollbackStarted)
    }
}

impl<'a> Journal<'a, RollingBack> {
    /// The refs are restored.
    pub fn rollback_refs_restored(self) -> Result<Journal<'a, RefsRestored>> {
        self.step(Step::RollbackRefsRestored)
    }

    /// Recovery found the refs restored.
    pub fn rollback_refs_found_restored(self) -> Result<Journal<'a, RefsRestored>> {
        self.record(Step::RollbackRefsRestored)
    }

    /// The restore failed or was never made: nothing changed; rollback may run again.
    pub fn rollback_abandoned(self) -> Result<()> {
        self.record::<Settled>(Step::RollbackAbandoned).map(drop)
    }
}

impl<'a> Journal<'a, RefsRestored> {
    /// The config is restored too.
    pub fn rolled_back(self) -> Result<Journal<'a, Settled>> {
        self.step(Step::RolledBack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "a7262397b490c23eb1be94eeed151a0a8138abd2271934356445be590b777f14";

    /// Every protocol's sequence, written through the types, reads back as the journal it is.
    #[test]
    fn what_the_types_write_reads_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf());
        let now = OffsetDateTime::UNIX_EPOCH;
        let fresh = || Journal::start(&store, ID, now);
        let go = || -> Result<()> {
            fresh().refused()?;
            fresh()
                .before_image_written()
                .map_err(Error::from)?
                .unconsumed()
                .refused()?;
            // A local apply, and its rollback.
            let j = fresh().before_image_written()?.consumed()?.refs_committed()?;
            j.config_removed()?.done()?;
            let j = Journal::after_apply(&store, ID, now).rollback_started()?;
            j.rollback_refs_restored()?.rolled_back()?;
            Ok(())
        };
        go().unwrap();
        let steps = store.journal_steps(ID).unwrap();
        assert_eq!(state::position(&steps), Ok(Position::Settled));
        // Recovery resumes where the journal stands, and nowhere else.
        assert!(Journal::<Settled>::resume(&store, ID, now).is_ok());
        assert!(Journal::<Pending>::resume(&store, ID, now).is_err());
        let remote = || -> Result<()> {
            let j = Journal::after_apply(&store, ID, now).rollback_started()?;
            j.rollback_abandoned()
        };
        remote().unwrap();
        let other = "b".repeat(64);
        let exec = || -> Result<()> {
            let j = Journal::start(&store, &other, now)
                .before_image_written()?
                .consumed()?;
            let j = j.command_started()?.command_finished()?;
            Journal::<Finishing>::resume(&store, &other, now)?;
            j.config_removed()?.config_removed()?.done()?;
            Ok(())
        };
        exec().unwrap();
        assert_eq!(
            state::position(&store.journal_steps(&other).unwrap()),
            Ok(Position::Settled)
        );
    }
}
