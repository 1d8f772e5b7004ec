//! The mutating sequences of `apply` and `rollback`, one journaled step at a time, and
//! `recover`, which reads a plan's journal and the repository's real state and finishes or
//! abandons an interrupted sequence without guesswork.
//!
//! Invariants: the before-image is durable before the plan is marked consumed, and the plan is
//! consumed before any ref changes; the backup ref (one commit whose parents are every deleted
//! tip) is created in the same all-or-nothing ref transaction as the deletions, so no deleted
//! branch is ever without its backup. git locks the refs of that transaction while the drift
//! check runs, and commits only after the plan is consumed. The caller holds the store lock
//! throughout.
//!
//! A remote's branches (remote-branches): nothing can lock a remote's refs, so the drift check
//! comes first, then the before-image, `consumed`, the local backup ref (`backup-created`),
//! and one atomic `git push` whose every deletion is leased on the planned id: a branch that
//! moved after the check fails the whole push. The same push creates the plan's consumed
//! marker on the remote, create-only (`refs/guardctl/consumed/<id>`, docs/remote.md): of any
//! number of clones applying the plan, one push lands. Recovery asks the remote whether this
//! clone's marker is there (`git ls-remote`): it is exactly when the push landed.
//!
//! A command (exec): drift (the pinned files re-derived, the preview re-run from a private
//! copy), a second private copy checked against the plan, the before-image command and the
//! command run from it, the before-image, `consumed`, `command-started`, the command, the
//! verify command, `command-finished`; a crash between the last two is recorded as
//! interrupted and the command is never run again. Bound to a remote, the consumed marker is
//! created there (create-only) between `consumed` and `command-started`: a clone whose push is
//! refused runs nothing.
//!
//! Apply journal: `before-image-written`, `consumed`, (`backup-created`,) then `refs-committed`
//! or `aborted`, `config-removed`, `done`; or `refused` when a check failed before anything was
//! committed.
//! Rollback journal: `rollback-started`, `rollback-refs-restored`, `rolled-back`. Recovery
//! adds `recovered-*` steps.
//!
//! One file per protocol: `apply_local` (this repository's refs), `apply_remote` (a
//! remote's refs, and consuming a plan on its remote), `apply_exec` (a command), the
//! `finish` they share, `rollback`, `recover` (the journal's dispatch) with `recover_refs`
//! (refs interrupted around git's transaction or push) and `decide` (what a killed local
//! commit left, as a pure function); [`records`] reads back and verifies the
//! signed records they write; `shared` holds what all of them use. Every step is written
//! through `journal`, whose types let each protocol append only a step that may follow
//! where its journal stands (the order `store::state::check_sequence` checks on read).

mod apply_exec;
mod apply_local;
mod apply_remote;
mod decide;
mod finish;
mod journal;
pub mod records;
mod recover;
mod recover_refs;
mod rollback;
mod shared;

pub use apply_remote::{
    CONSUMED_HERE_ONLY_HINT, consumed_url, holds_other_than_plan, plan_name_held_by_other, plan_name_taken,
};
pub use records::{recorded, remote_abandoned, remote_marker, remote_result, trusted};

use crate::plan::model::ExecInputs;
use crate::repo::mutate::RepoMut;
use crate::sign::SigningKey;
use crate::store::Store;
use time::OffsetDateTime;

/// Where apply records how a command ended, for the receipt (and a recovery).
const EXEC_RESULT: &str = "exec-result.json";
/// Where recover records, signed, that an exec apply whose marker is on the remote was
/// abandoned before its command ran (published in place of its receipt).
pub const ABANDONED: &str = "abandoned.json";
/// The plan file (without approvals) an apply of a plan bound to a remote publishes with
/// its consumed marker, saved by `apply` before it starts.
pub const PUBLISHED_PLAN: &str = "published-plan.json";
/// The payload type of the signed command result.
const EXEC_RESULT_PAYLOAD_TYPE: &str = "application/vnd.guardctl.exec-result.v1+json";

/// What an exec plan runs, and where: its inputs and the work tree it runs in. Where it is
/// consumed beyond this clone is in its before-image (`consumed_on`).
pub struct Run<'a> {
    pub inputs: &'a ExecInputs,
    pub top: &'a std::path::Path,
    /// Where the verify command runs (the preview's sandbox).
    pub sandbox: &'a crate::sandbox::Sandbox,
}

pub struct Executor<'a> {
    /// The repository, under guardctl's lock: only an executor may change it.
    pub repo: RepoMut<'a>,
    pub store: &'a Store,
    pub now: OffsetDateTime,
    /// The key that signs the audit entries of what this run does (rollback, recover).
    pub key: Option<&'a SigningKey>,
    /// Who `key` speaks for: the principal every audit entry of this run names.
    pub principal: Option<String>,
    /// The audit log is broken and this run records nothing in it. Only `rollback` sets it,
    /// and only for the restore itself: putting back what a plan deleted is how an incident
    /// ends, and a damaged log must not stand in its way. Deleting never runs unrecorded.
    pub unlogged: bool,
    /// The run's snapshot of the team remote, if it read one: the first push that consumes
    /// a plan on that remote builds on it instead of fetching the ledger again.
    pub published: Option<std::rc::Rc<crate::store::published::Snapshot>>,
}

/// Test-only fault injection, absent from release builds. After journaling `<step>`:
/// `GUARDCTL_TEST_EXEC_AT=<step>` runs `sh -c "$GUARDCTL_TEST_EXEC"` (another process racing
/// us), and `GUARDCTL_TEST_CRASH_AFTER=<step>` makes the process SIGKILL itself.
#[cfg(feature = "test-hooks")]
fn crash_point(step: &str) {
    if std::env::var("GUARDCTL_TEST_EXEC_AT").as_deref() == Ok(step) {
        let cmd = std::env::var("GUARDCTL_TEST_EXEC").unwrap_or_default();
        let _ = crate::process::Process::new("sh").args(["-c", &cmd]).status();
    }
    if std::env::var("GUARDCTL_TEST_CRASH_AFTER").as_deref() == Ok(step) {
        let pid = std::process::id().to_string();
        let _ = crate::process::Process::new("kill").args(["-9", &pid]).status();
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

#[cfg(not(feature = "test-hooks"))]
fn crash_point(_step: &str) {}

#[cfg(test)]
mod tests;
