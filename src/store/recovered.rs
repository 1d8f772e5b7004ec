//! What `recover` did to one interrupted apply or rollback, as typed data: which journal
//! state it found and how it settled it (completed or abandoned). `execute` produces it,
//! `render::recovery` words it (the same words for the notice, `recover`'s output and the
//! audit entry's detail), the engine hands it on.
//!
//! Here, beside the journal it settles, because both `execute` (which decides) and `render`
//! (which words it) read it, and `render` may not import `execute` (`execute` imports
//! `render`).

/// One plan `recover` settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The plan id's hex digits (the store's name for it).
    pub id: String,
    pub outcome: RecoveryOutcome,
}

/// How an interrupted sequence was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryOutcome {
    /// An apply interrupted before it consumed the plan: nothing had changed, its
    /// before-image is forgotten and the plan stays usable.
    Forgotten,
    /// An apply finished: its changes had been made, and its receipt is signed now.
    Completed(Completed),
    /// An apply abandoned: nothing was deleted, or its command is never run (again).
    Abandoned(Abandoned),
    /// A rollback finished: its refs had been restored (`config_only`: the journal said so
    /// and only the config was left to restore).
    RolledBack { config_only: bool },
    /// A rollback interrupted before it restored `restored` of its refs: recover restored
    /// them (each created at its old id, leased on the name's absence) and the config.
    RollbackFinished { restored: usize },
}

/// What a completed apply was found to have done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    /// The journal said the deletions were committed (and the refs agree).
    Committed,
    /// The journal said the command had finished.
    CommandFinished,
    /// A remote's deletions: this clone's consumed marker is on the remote, so the one
    /// atomic push landed.
    PushLanded,
    /// This repository's deletions were all committed, with their backups.
    DeletionsCommitted,
    /// A remote's deletions pushed without a consumed marker: every planned ref is gone from
    /// the remote and backed up here.
    UnmarkedPushLanded,
    /// A remote's deletions: this clone's marker landed, but the remote had not made
    /// `deleted` of the deletions (its `git receive-pack` was killed midway): recover pushed
    /// them, each leased on its planned id.
    PushFinished { deleted: usize },
    /// This repository's deletions: git's commit was killed midway (the backup ref made,
    /// `deleted` planned refs not yet deleted, each still at its planned id): recover deleted
    /// them, leased on that id.
    CommitFinished { deleted: usize },
}

/// Why an apply was abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abandoned {
    /// A remote's deletions: the push (with this clone's marker) had not landed.
    PushNotLanded,
    /// This repository's deletions had not been committed.
    DeletionsNotCommitted,
    /// This repository's deletions: git's commit began (the backup ref was made) but deleted
    /// nothing, and a planned ref has moved since, so it cannot be finished; the backup ref
    /// stays (it may keep a moved ref's old commit) until gc.
    CommitAbandoned,
    /// A remote's deletions pushed without a marker: no planned ref is gone.
    UnmarkedPushNotLanded,
    /// A remote's deletions pushed without a marker: the apply had not made its backup, so it
    /// had not pushed (someone else deleted what is gone).
    UnmarkedNotPushed,
    /// A command that had not started: it was not run. `published_on`: the remote its
    /// consumed marker is on, where the abandonment is published for other clones.
    CommandNotStarted { published_on: Option<String> },
    /// A command interrupted while it ran: it is not run again (its effects are for a human
    /// to check). `published_on` as above.
    CommandInterrupted { published_on: Option<String> },
}
