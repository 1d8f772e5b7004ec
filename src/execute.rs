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

use crate::error::{Error, Kind, Result};
use crate::ops::exec;
use crate::ops::pin::Script;
use crate::plan::approval::{APPLY_NAMESPACE, DeletedRef, ExecResult, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::plan::envelope::Envelope;
use crate::plan::model::ExecInputs;
use crate::render::recovery::describe;
use crate::repo::backups::BACKUPS_REF;
use crate::repo::mutate::{BackupCommit, RefOp, RemoteOp, RepoMut, push_args};
use crate::repo::publish::RefOutcome;
use crate::sign::AllowedSigners;
use crate::sign::{SigningKey, dsse};
use crate::store::ledger::LEDGER_REF;
use crate::store::published::{self, Item, ItemKind, Remote};
use crate::store::recovered::{Abandoned, Completed, Recovered, RecoveryOutcome};
use crate::store::state::{self, CONSUMED_PAYLOAD_TYPE, Consumed, Step, StepOf};
use crate::store::{BeforeImage, Store};
use crate::text::safe;
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

impl Executor<'_> {
    fn step(&self, id: &str, step: Step) -> Result<()> {
        self.store.journal(id, step, self.now)?;
        crash_point(step.as_str());
        Ok(())
    }

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
        // promise until the plan is marked consumed, and is taken back on a refusal.
        let prepared = drift_check()
            .and_then(|()| {
                self.store.write_before_image(id, &image)?;
                self.step(id, Step::BeforeImageWritten)
            })
            .and_then(|()| pending.prepared())
            .and_then(|p| self.still_not_checked_out(&image).map(|()| p));
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                // Refused before anything durable: the transaction was aborted (and waited
                // for), so nothing refers to the backup commit, and neither git's process id
                // nor a before-image is of use to a recovery (which ignores a refused step).
                self.store.remove_file(id, "git.pid")?;
                self.store.remove_file(id, "before-image.json")?;
                self.store.journal(id, Step::Refused, self.now)?;
                if let Some(b) = &backup {
                    self.repo.discard_backup_commit(b)?;
                }
                return Err(e);
            }
        };
        self.consume(id, key)?;
        self.step(id, Step::Consumed)?;
        if let Err(e) = prepared.commit() {
            self.abort(id, &e)?;
            return Err(e);
        }
        self.step(id, Step::RefsCommitted)?;
        self.finish(id, &image, key)
    }

    /// The last look before the plan is consumed: the refs are locked now, but HEAD is not (git
    /// locks no other worktree's HEAD in a ref transaction), so a `git checkout` of a planned
    /// branch since the drift check would leave a HEAD on a deleted branch. What remains is the
    /// moment between this check and the commit.
    fn still_not_checked_out(&self, image: &BeforeImage) -> Result<()> {
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

    /// A remote's branches: check drift, write the backup commit and the before-image, mark
    /// consumed, create the local backup ref, then one atomic push whose every deletion is
    /// leased on the planned id (the remote's own compare-and-swap: nothing locks a remote
    /// between our check and the push, the leases make a moved branch fail the whole push).
    /// `url` is the one URL the plan is bound to: pushed to by URL, never by remote name.
    fn apply_remote(
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
        self.step(id, Step::BeforeImageWritten)?;
        self.consume(id, key)?;
        self.step(id, Step::Consumed)?;
        // The consumed marker goes to the remote in the same atomic push as the deletions,
        // create-only: of any number of clones applying this plan, one push lands. Without it
        // (the policy's `[remote] consumed_marker = false`, recorded in the image), the leases
        // alone keep a second clone from deleting anything.
        if let (Some(refname), Some(commit)) = (image.backup_ref.clone(), commit) {
            let create = RefOp::Create {
                refname,
                oid: commit.oid,
            };
            if let Err(e) = self.transaction(id, &[create]) {
                self.abort(id, &e)?;
                return Err(e);
            }
            self.step(id, Step::BackupCreated)?;
        }
        let backup = match (&image.backup_commit, with_marker(&image)) {
            (Some(c), true) => Some((crate::repo::Oid::from_str(c)?, image.created_at.unix_timestamp())),
            _ => None,
        };
        if let Err(e) = self.push_consuming(id, url, &ops, with_marker(&image), backup) {
            self.abort(id, &e)?;
            return Err(e);
        }
        crash_point("pushed");
        self.step(id, Step::RefsCommitted)?;
        self.finish(id, &image, key)
    }

    /// This plan's consumed marker as the item published on its remote (`consumed.json`:
    /// the bytes of the local marker).
    fn marker_item(&self, id: &str) -> Result<Item> {
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
    fn plan_item(&self, id: &str) -> Result<Option<Item>> {
        Ok(self.store.read_file(id, PUBLISHED_PLAN)?.map(|bytes| Item {
            kind: ItemKind::Plan,
            refname: published::plan_ref(id),
            bytes,
        }))
    }

    /// The repository at `url` as a remote to read and publish on, reached with this clone's
    /// transport settings.
    fn remote_at(&self, url: &str) -> Result<Remote> {
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
    fn push_consuming(
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
            let Err(e) = self
                .repo
                .push_atomic(url, &all, via, &mut |pid| self.record_git(id, pid))
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
    fn remote_consumed(&self, url: &str, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(crate::store::consumption::read(&self.remote_at(url)?, id)?
            .map(|c| c.consumed.bytes.unwrap_or_default()))
    }

    /// A command (exec): check drift (the preview re-run), copy the pinned files into a
    /// private directory (each copy checked against the plan), run the before-image command
    /// from it, which must succeed, check the copies again, write the before-image, mark
    /// consumed, then run the command from the copy exactly once, run the verify command, and
    /// record how both ended. A failing command or verification is a receipt that says so
    /// (exit 15). Whatever happens to the repository's files once they are copied, what runs
    /// is the approved content.
    pub fn apply_exec(
        &self,
        id: &str,
        image: BeforeImage,
        key: &SigningKey,
        run: Run<'_>,
        drift_check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Receipt> {
        let Run { inputs, top, sandbox } = run;
        drift_check()?;
        let names: Vec<String> = inputs.env.iter().map(|e| e.name.clone()).collect();
        let env = exec::environment(&names);
        let dir = exec::workdir(top, inputs)?;
        let staged = exec::prepare(top, inputs)?.map_err(|d| {
            crate::ops::stale_branches::drift_error(&d).with_hint(
                "the command was not run; re-run `guardctl plan exec` and have the new plan approved",
            )
        })?;
        // Once more now that the private copy exists: nothing the command can load from the
        // work tree changed since the drift check.
        let d = exec::content_changes(top, inputs, &|rel| self.repo.work_tree_files(rel))?;
        if !d.is_empty() {
            return Err(crate::ops::stale_branches::drift_error(&d).with_hint(
                "the command was not run; re-run `guardctl plan exec` and have the new plan approved",
            ));
        }
        if let Some(script) = &inputs.before_image {
            let out = exec::run_script(&staged, Script::BeforeImage, script, &dir, &env)?;
            self.store.write_file(id, "before-image-output", &out.stdout)?;
            if !out.status.success() {
                // Nothing destructive ran and the plan is not used: it can be applied again.
                self.store.journal(id, Step::Refused, self.now)?;
                return Err(Error::internal(format!(
                    "the before-image command failed ({}); the command was not run",
                    out.status
                ))
                .caused_by(safe(String::from_utf8_lossy(&out.stderr).trim()))
                .with_hint("fix what it needs and apply again: the plan was not used"));
            }
            let changed: Vec<exec::Drift> = staged
                .recheck()
                .into_iter()
                .map(|(refname, field, planned, now)| exec::Drift {
                    refname,
                    field,
                    planned,
                    now,
                })
                .collect();
            if !changed.is_empty() {
                self.store.journal(id, Step::Refused, self.now)?;
                return Err(crate::ops::stale_branches::drift_error(&changed).with_hint(
                    "the before-image command changed the private copy; the command was not run",
                ));
            }
        }
        self.store.write_before_image(id, &image)?;
        self.step(id, Step::BeforeImageWritten)?;
        self.consume(id, key)?;
        self.step(id, Step::Consumed)?;
        // Bound to a remote: the consumed marker is created there (create-only) before the
        // command runs; a clone that finds it taken runs nothing. Without the marker (the
        // policy's `[remote] consumed_marker = false`), the plan is consumed here only.
        if let Some(at) = image.consumed_on.as_ref().filter(|c| c.marker) {
            if let Err(e) = self.push_consuming(id, &at.url, &[], true, None) {
                self.abort(id, &e)?;
                return Err(e);
            }
            crash_point("pushed");
        }
        self.step(id, Step::CommandStarted)?;
        let mut result = match exec::run_command(&staged, &inputs.command, &dir, &env) {
            Ok(out) => {
                self.store.write_file(id, "command-stdout", &out.stdout)?;
                self.store.write_file(id, "command-stderr", &out.stderr)?;
                ExecResult {
                    command: inputs.command.clone(),
                    status: out.status.code(),
                    error: None,
                    stdout: exec::digest(&out.stdout),
                    stdout_bytes: out.stdout.len() as u64,
                    stderr: exec::digest(&out.stderr),
                    stderr_bytes: out.stderr.len() as u64,
                    verification: None,
                }
            }
            Err(e) => ExecResult {
                command: inputs.command.clone(),
                status: None,
                error: Some(e.message),
                stdout: exec::digest(b""),
                stdout_bytes: 0,
                stderr: exec::digest(b""),
                stderr_bytes: 0,
                verification: None,
            },
        };
        result.verification = exec::verify(sandbox, &staged, inputs, &dir, &env)?;
        // Signed like the consumed marker: a recovery that finishes this apply puts the
        // result into a receipt signed with this key, so it must be this run's own, not a
        // file someone wrote into the state directory ("status 0") after a crash.
        let bytes = signed_state(EXEC_RESULT_PAYLOAD_TYPE, &result, key, EXEC_RESULT)?;
        self.store.write_file(id, EXEC_RESULT, &bytes)?;
        self.step(id, Step::CommandFinished)?;
        self.finish(id, &image, key)
    }

    /// The command's result as the applying run recorded it: an envelope signed by `key`
    /// (the key this apply or recovery signs the receipt with, the consumed marker's). A
    /// result that does not verify is 16, naming the file: it decides what the receipt says.
    fn signed_exec_result(&self, id: &str, bytes: &[u8], key: &SigningKey) -> Result<ExecResult> {
        let path = self.store.plan_dir(id).join(EXEC_RESULT);
        let (result, v, _) = verified_state(&path, bytes, EXEC_RESULT_PAYLOAD_TYPE, "result")?;
        if v.fingerprint != crate::sign::sshsig::fingerprint(&key.public) {
            return Err(state::inconsistent(
                &path,
                format!(
                    "signed by {}, not by the key that consumed the plan",
                    v.fingerprint
                ),
            ));
        }
        Ok(result)
    }

    /// Mark the plan consumed with a marker signed by the applying key, binding the plan id to
    /// the before-image exactly as written: a recovery later acts only on a marker it can
    /// verify, and signs a receipt only with this same key.
    fn consume(&self, id: &str, key: &SigningKey) -> Result<()> {
        let image = self
            .store
            .read_file(id, "before-image.json")?
            .ok_or_else(|| Error::internal("the before-image vanished before the plan was consumed"))?;
        let marker = Consumed {
            plan_id: format!("sha256:{id}"),
            before_image: crate::plan::envelope::sha256_id(&image),
            key: crate::sign::sshsig::fingerprint(&key.public),
            created_at: self.now,
            nonce: Some(crate::plan::envelope::hex(&crate::fsutil::random_bytes::<16>()?)),
            audit: Some(crate::store::audit::read(&self.repo, &self.store.audit_path())?.next()),
        };
        let bytes = signed_state(CONSUMED_PAYLOAD_TYPE, &marker, key, "consumed")?;
        self.store.mark_consumed(id, &bytes)
    }

    /// Write the one commit whose parents are every commit `image` must keep.
    fn write_backup_commit(&self, image: &BeforeImage) -> Result<BackupCommit> {
        let tips: Vec<String> = image
            .refs
            .iter()
            .map(|r| image.backup_tip(r).to_string())
            .collect();
        // The retention is recorded in the commit too: `gc` trusts the object, not a file
        // in .git/guardctl that anyone with write access there could backdate.
        let message = format!(
            "guardctl backup of plan {}\n\nretention-days: {}",
            image.plan_id, image.retention_days
        );
        self.repo
            .write_backup_commit(&tips, &message, image.created_at.unix_timestamp())
    }

    /// Where each of `refs` points now (absent: deleted): in this repository, or on the
    /// image's remote as `git ls-remote` lists it.
    fn targets(
        &self,
        image: &BeforeImage,
        refs: &[DeletedRef],
    ) -> Result<std::collections::HashMap<String, crate::repo::Oid>> {
        match self.remote_target(image)? {
            None => self.repo.ref_targets(refs.iter().map(|r| r.refname.as_str())),
            Some(url) => {
                // After the push, or after an interrupted one: never an earlier listing.
                let now = self.repo.ls_remote_now(&url)?;
                Ok(refs
                    .iter()
                    .filter_map(|r| Some((r.refname.clone(), now.target(&r.refname)?)))
                    .collect())
            }
        }
    }

    /// The one URL a remote image's refs live at: the URL its plan was bound to, which must
    /// still be its remote's one URL (a before-image is a file anyone with write access to
    /// `.git/guardctl` could edit; it never names where guardctl pushes). `None`: local refs.
    fn remote_target(&self, image: &BeforeImage) -> Result<Option<String>> {
        let Some(remote) = &image.remote else {
            return Ok(None);
        };
        let url = self.repo.remote_url(remote)?;
        if !crate::repo::url::same_repository(&url, &image.repository) {
            return Err(Error::usage(format!(
                "remote `{}` is now {}, but plan {} changed {}; nothing was done",
                safe(remote),
                safe(&url),
                image.plan_id,
                safe(&image.repository)
            ))
            .with_hint(format!(
                "point `{}` back at {} (`git remote set-url`), then run guardctl again",
                safe(remote),
                safe(&image.repository)
            )));
        }
        Ok(Some(url))
    }

    /// The deleted tips the plan's backup ref keeps reachable.
    fn kept(&self, image: &BeforeImage) -> std::collections::HashSet<String> {
        image
            .backup_ref
            .as_deref()
            .map(|r| self.repo.backed_up(r))
            .unwrap_or_default()
    }

    /// Run a ref transaction, recording git's process id durably first: if we are killed,
    /// git may still be committing, and recovery must wait for it rather than guess.
    fn transaction(&self, id: &str, ops: &[RefOp]) -> Result<()> {
        self.repo
            .ref_transaction_watched(ops, &mut |pid| self.record_git(id, pid))
    }

    fn record_git(&self, id: &str, pid: u32) -> Result<()> {
        self.store.write_file(id, "git.pid", pid.to_string().as_bytes())
    }

    /// Wait (bounded) for a git transaction started by a process that died: until it exits,
    /// the refs are not in their final state.
    fn wait_for_orphaned_git(&self, id: &str) -> Result<()> {
        let Some(pid) = self.store.read_file(id, "git.pid")? else {
            return Ok(());
        };
        let cmdline = format!("/proc/{}/cmdline", String::from_utf8_lossy(&pid).trim());
        for _ in 0..300 {
            match std::fs::read(&cmdline) {
                Ok(c) if c.split(|b| *b == 0).any(|a| a == b"update-ref" || a == b"push") => {
                    std::thread::sleep(std::time::Duration::from_millis(100))
                }
                _ => return Ok(()),
            }
        }
        Err(Error::new(
            Kind::NeedsRecovery,
            "a git update-ref or push started by an interrupted apply is still running",
        )
        .with_hint("wait for it to finish, then run `guardctl recover` again"))
    }

    /// Record that an apply ended without deleting anything; the plan stays consumed so it is
    /// never silently retried.
    fn abort(&self, id: &str, e: &Error) -> Result<()> {
        let record = serde_json::json!({"kind": e.kind.as_str(), "message": e.message, "causes": e.causes});
        self.store
            .write_file(id, "aborted.json", record.to_string().as_bytes())?;
        self.store.journal(id, Step::Aborted, self.now)
    }

    /// After the refs are committed: remove config, observe, sign and store the receipt.
    pub fn finish(&self, id: &str, image: &BeforeImage, key: &SigningKey) -> Result<Receipt> {
        // Checked before anything else is done or journaled: a result that does not verify
        // leaves the state exactly as the crash did.
        let exec: Option<ExecResult> = match self.store.read_file(id, EXEC_RESULT)? {
            Some(bytes) => Some(self.signed_exec_result(id, &bytes, key)?),
            None if image.command.is_some() => {
                return Err(state::inconsistent(
                    &self.store.plan_dir(id).join(EXEC_RESULT),
                    "the command finished but its result is missing",
                ));
            }
            None => None,
        };
        let names: Vec<String> = image.config.iter().map(|(n, _)| n.clone()).collect();
        self.repo.remove_branch_sections(&names)?;
        self.step(id, Step::ConfigRemoved)?;
        let mut mismatches = self.observe(image, &names)?;
        if let Some(r) = &exec {
            match (r.status, &r.error) {
                (Some(0), _) => {}
                (Some(code), _) => mismatches.push(format!("the command exited with status {code}")),
                (None, Some(why)) => mismatches.push(format!("the command did not finish: {why}")),
                (None, None) => mismatches.push("the command was killed by a signal".into()),
            }
            if let Some(v) = &r.verification {
                mismatches.extend(exec::verification_mismatches(v));
            }
        }
        let receipt = Receipt {
            plan_id: image.plan_id.clone(),
            plan_hash: image.plan_hash.clone(),
            repository: image.repository.clone(),
            executor: image.executor.clone(),
            key: crate::sign::sshsig::fingerprint(&key.public),
            approved_by: image.approved_by.clone(),
            applied_at: image.created_at,
            backup: image.backup_ref.clone(),
            deleted: image.refs.clone(),
            config_removed: names.len(),
            verified: mismatches.is_empty(),
            mismatches,
            exec,
            audit: None,
        };
        // The receipt is the apply's audit entry: it names its place in the log, and its
        // signature is the entry's.
        let log = crate::store::audit::open_for_append(&self.repo, &self.store.audit_path())?;
        let receipt = Receipt {
            audit: Some(log.next()),
            ..receipt
        };
        let payload = serde_json::to_vec(&receipt)
            .map_err(|e| Error::internal("cannot encode the receipt").caused_by(e))?;
        // ssh-keygen signs while the human result, which needs no signature, is written.
        let (signed, human) = std::thread::scope(|s| {
            let human = s.spawn(|| {
                let text = crate::render::receipt::human(&receipt);
                self.store.write_file(id, "result.txt", text.as_bytes())
            });
            let signed = dsse::sign(RECEIPT_PAYLOAD_TYPE, APPLY_NAMESPACE, &payload, key);
            (signed, human.join())
        });
        let envelope =
            signed.map_err(|e| Error::internal("applied, but cannot sign the receipt").caused_by(e))?;
        human.map_err(|_| Error::internal("cannot write the result"))??;
        crate::store::audit::append_envelope(&self.repo, &self.store.audit_path(), &log, &envelope)?;
        let pretty = serde_json::to_vec_pretty(&envelope).map_err(|e| encode_failed("receipt.json", e))?;
        self.store.write_file(id, "receipt.json", &pretty)?;
        self.store.write_file(
            id,
            "result.json",
            crate::render::receipt::json(&receipt, &envelope)
                .map_err(|e| encode_failed("result.json", e))?
                .as_bytes(),
        )?;
        self.step(id, Step::Done)?;
        Ok(receipt)
    }

    /// What is there now, compared with the planned effect.
    fn observe(&self, image: &BeforeImage, config_names: &[String]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let kept = self.kept(image);
        let now = self.targets(image, &image.refs)?;
        for d in &image.refs {
            if now.contains_key(&d.refname) {
                out.push(format!("{} still exists", d.refname));
            }
            if !kept.contains(image.backup_tip(d)) {
                out.push(format!(
                    "backup {} does not keep {}",
                    image.backup_ref.as_deref().unwrap_or("(none)"),
                    d.oid
                ));
            }
        }
        if config_names.is_empty() {
            return Ok(out);
        }
        let config = self.repo.branch_config()?;
        out.extend(
            config_names
                .iter()
                .filter(|n| config.contains_key(*n))
                .map(|n| format!("config of branch {n} remains")),
        );
        Ok(out)
    }

    /// Sign (with `self.key`) and append an audit entry; the caller holds the store lock.
    pub fn audit(
        &self,
        event: &str,
        plan_id: Option<&str>,
        principal: Option<&str>,
        detail: &str,
    ) -> Result<()> {
        if self.unlogged {
            return Ok(());
        }
        let key = self.key.ok_or_else(|| {
            Error::usage(format!(
                "recording the {event} in the audit log needs a signing key"
            ))
            .with_hint("pass --key <path>, set GUARDCTL_KEY, or configure git's user.signingKey")
        })?;
        self.store.audit(
            &self.repo,
            key,
            crate::store::audit::Event {
                now: self.now,
                event,
                plan_id,
                principal: principal.or(self.principal.as_deref()),
                detail,
            },
        )
    }

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
        let bytes = serde_json::to_vec(&missing).map_err(|e| encode_failed("rollback.json", e))?;
        self.store.write_file(id, "rollback.json", &bytes)?;
        self.step(id, Step::RollbackStarted)?;
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
                    self.repo
                        .push_atomic(&url, &ops, None, &mut |pid| self.record_git(id, pid))
                }
            }
        };
        if let Err(e) = restored {
            self.store.journal(id, Step::RollbackAbandoned, self.now)?;
            return Err(e);
        }
        self.step(id, Step::RollbackRefsRestored)?;
        self.restore_config(id, image)?;
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
    fn restore_tag_objects(&self, image: &BeforeImage, refs: &[DeletedRef]) -> Result<()> {
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
    fn restore_config(&self, id: &str, image: &BeforeImage) -> Result<()> {
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
        self.step(id, Step::RolledBack)
    }

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
                // git finish aborting before anyone touches those refs again.
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
                Step::RollbackStarted => self.recover_rollback(&id, &image)?,
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
    fn check_kind(&self, id: &str, image: &BeforeImage, steps: &[Step]) -> Result<()> {
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
    fn receipt_key<'k>(
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
    fn committed(&self, image: &BeforeImage) -> Result<(usize, usize)> {
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
    fn recover_unstarted(&self, id: &str) -> Result<RecoveryOutcome> {
        self.wait_for_orphaned_git(id)?;
        self.store.remove_file(id, "before-image.json")?;
        self.store.journal(id, Step::RecoveredUnstarted, self.now)?;
        Ok(RecoveryOutcome::Forgotten)
    }

    /// An apply interrupted before or during its ref transaction: decide from the refs.
    fn recover_apply(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        // A git started by the dead apply may still hold the refs' locks (it aborts once it
        // sees the end of its input, or completes a commit it was sent): wait for it first.
        self.wait_for_orphaned_git(id)?;
        if image.command.is_some() {
            return self.recover_unstarted_command(id, image, marker, key);
        }
        self.check_locks(image)?;
        // A remote's deletions and the consumed marker were one atomic push: the marker on
        // the remote, exactly as this clone signed it, says the push landed; its absence (or
        // another's marker) that it did not, whatever the branches look like now. Without the
        // marker (as the image records), the refs decide.
        if let Some(url) = self.remote_target(image)? {
            if !with_marker(image) {
                return self.recover_unmarked_push(id, image, marker, key);
            }
            if self.remote_consumed(&url, id)? == Some(self.our_marker(id)?) {
                let key = self.receipt_key(id, image, marker, key)?;
                self.store.journal(id, Step::RefsCommitted, self.now)?;
                self.finish(id, image, key)?;
                return Ok(RecoveryOutcome::Completed(Completed::PushLanded));
            }
            let e = Error::new(
                Kind::Drift,
                "the apply was interrupted before its push landed on the remote",
            );
            self.abort(id, &e)?;
            return Ok(RecoveryOutcome::Abandoned(Abandoned::PushNotLanded));
        }
        let (deleted, backed) = self.committed(image)?;
        if deleted == image.refs.len() && backed == image.refs.len() {
            let key = self.receipt_key(id, image, marker, key)?;
            self.store.journal(id, Step::RefsCommitted, self.now)?;
            self.finish(id, image, key)?;
            return Ok(RecoveryOutcome::Completed(Completed::DeletionsCommitted));
        }
        // Locally the backup ref is created in the deletions' transaction (a remote's plan was
        // decided above, by its consumed marker).
        if deleted == 0 && backed == 0 {
            let e = Error::new(
                Kind::Drift,
                "the apply was interrupted before any branch was deleted",
            );
            self.abort(id, &e)?;
            return Ok(RecoveryOutcome::Abandoned(Abandoned::DeletionsNotCommitted));
        }
        Err(Error::new(Kind::NeedsRecovery, format!(
            "plan {id}: {deleted} of {} branches are deleted and {backed} backups exist; this is not a state guardctl leaves",
            image.refs.len()
        ))
        .with_hint("inspect refs/guardctl/backup and the journal in .git/guardctl/plans by hand"))
    }

    /// What `consumed/<id>` holds on the remote when it is this clone's marker.
    fn our_marker(&self, id: &str) -> Result<Vec<u8>> {
        Ok(self.store.read_file(id, "consumed")?.unwrap_or_default())
    }

    /// A remote's plan applied without the consumed marker, interrupted around its push: the
    /// refs decide. The push was atomic and made only after the local backup ref, so every
    /// planned ref gone with its backup here means it landed, none gone that it did not;
    /// anything else is no state the push leaves (16, naming the refs). Without a marker,
    /// branches another clone deleted at their planned ids after this apply made its backup
    /// look the same: either way they are gone and kept here.
    fn recover_unmarked_push(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
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
            self.store.journal(id, Step::RefsCommitted, self.now)?;
            self.finish(id, image, key)?;
            return Ok(RecoveryOutcome::Completed(Completed::UnmarkedPushLanded));
        }
        if gone.is_empty() || backed < image.refs.len() {
            // None gone: the push did not land. Gone without this apply's backup: it never
            // pushed (the backup ref comes first), someone else deleted them.
            let e = Error::new(
                Kind::Drift,
                "the apply was interrupted before its push landed on the remote",
            );
            self.abort(id, &e)?;
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

    /// An exec apply interrupted after it consumed the plan and before its command started:
    /// the command was not run, the apply is abandoned, with a record for other clones when
    /// its marker had landed on the plan's remote ([`Executor::record_abandonment`]).
    fn recover_unstarted_command(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let published_on = self.record_abandonment(id, image, marker, key, state::Stage::BeforeCommand)?;
        let e = Error::new(Kind::Drift, "the apply was interrupted before the command ran");
        self.abort(id, &e)?;
        Ok(RecoveryOutcome::Abandoned(Abandoned::CommandNotStarted {
            published_on,
        }))
    }

    /// An exec apply interrupted while its command ran: it may have run to the end, partly,
    /// or not at all, and is never run twice. The apply is abandoned, with a record for other
    /// clones (who must check the command's effects by hand) when its marker had landed on
    /// the plan's remote ([`Executor::record_abandonment`]).
    fn recover_started_command(
        &self,
        id: &str,
        image: &BeforeImage,
        marker: &Consumed,
        key: Option<&SigningKey>,
    ) -> Result<RecoveryOutcome> {
        let published_on = self.record_abandonment(id, image, marker, key, state::Stage::CommandStarted)?;
        let e = Error::new(
            Kind::NeedsRecovery,
            "the command was interrupted while it ran (it may have partly run); it is not run again",
        );
        self.abort(id, &e)?;
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
    fn record_abandonment(
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

    fn recover_rollback(&self, id: &str, image: &BeforeImage) -> Result<RecoveryOutcome> {
        self.wait_for_orphaned_git(id)?;
        let path = self.store.plan_dir(id).join("rollback.json");
        let missing: Vec<DeletedRef> = match self.store.read_file(id, "rollback.json")? {
            Some(b) => serde_json::from_slice(&b).map_err(|e| state::inconsistent(&path, e))?,
            None => return Err(state::inconsistent(&path, "a rollback was started without it")),
        };
        if let Some(r) = missing.iter().find(|r| !image.refs.contains(r)) {
            return Err(state::inconsistent(
                &path,
                format!("it restores {}, which the plan did not delete", r.refname),
            ));
        }
        let targets = self.targets(image, &missing)?;
        let restored = missing
            .iter()
            .filter(|r| targets.contains_key(&r.refname))
            .count();
        if restored == missing.len() {
            self.store.journal(id, Step::RollbackRefsRestored, self.now)?;
            self.restore_config(id, image)?;
            return Ok(RecoveryOutcome::RolledBack { config_only: false });
        }
        self.store.journal(id, Step::RollbackAbandoned, self.now)?;
        Ok(RecoveryOutcome::RollbackAbandoned)
    }

    /// A `.lock` left by a killed git blocks every ref change: report it, never remove it.
    fn check_locks(&self, image: &BeforeImage) -> Result<()> {
        let common = self.repo.common_dir();
        let mut candidates = vec![common.join("packed-refs.lock")];
        if image.remote.is_none() {
            for r in &image.refs {
                candidates.push(common.join(format!("{}.lock", r.refname)));
            }
        }
        candidates.extend(image.backup_ref.iter().map(|r| common.join(format!("{r}.lock"))));
        if let Some(lock) = candidates.into_iter().find(|p| p.exists()) {
            return Err(Error::new(
                Kind::NeedsRecovery,
                format!("a stale lock file blocks recovery: {}", lock.display()),
            )
            .with_hint(
                "make sure no git process is running, remove that file by hand, then run `guardctl recover`",
            ));
        }
        Ok(())
    }
}

/// Of `refs` (what a plan deleted), those to create again: missing now (`now` names each
/// ref's current target), each first passing `check` (its backup still keeps it). One taken
/// by another commit since is drift: nothing is restored.
fn to_restore(
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
fn remote_creates(refs: &[DeletedRef]) -> Vec<RemoteOp> {
    refs.iter()
        .map(|r| RemoteOp::Create {
            refname: r.refname.clone(),
            oid: r.oid.clone(),
        })
        .collect()
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
fn applied_elsewhere(id: &str) -> Error {
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
fn with_marker(image: &BeforeImage) -> bool {
    image.consumed_on.as_ref().is_none_or(|c| c.marker)
}

/// The hint of a remote's plan, consumed without the marker, whose push found a ref moved.
pub const CONSUMED_HERE_ONLY_HINT: &str = "this plan is consumed in the applying clone only (the policy sets `[remote] consumed_marker = false`, docs/remote.md): if another clone applied it first, its branches or tags are gone and its receipt is in that clone; nothing was deleted here. Otherwise re-run `guardctl plan`";

/// Whether a push failed only because the tip of the ledger or of the backups branch moved
/// (another write landed first):
/// the commit is built again on the new tip.
fn ledger_moved(e: &Error) -> bool {
    e.kind == Kind::Drift
        && !e.causes.is_empty()
        && e.causes
            .iter()
            .all(|c| c.contains(LEDGER_REF) || c.contains(BACKUPS_REF))
}

/// Whether a failed push failed only because the remote could not lock a ref (another push
/// held it at that moment).
fn lock_contention(e: &Error) -> bool {
    std::iter::once(&e.message).chain(&e.causes).any(|m| {
        m.contains("cannot lock ref") || m.contains("Unable to create") || m.contains("failed to lock")
    })
}

/// The before-image of `id` and its consumed marker, each cross-checked (see
/// `store::state`): the image names this plan and only what guardctl writes; the marker,
/// if any, is signed by a key of the image's executor and binds this image's bytes.
/// Anything else is `needs_recovery` naming the file; nothing has been changed.
pub fn trusted(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(BeforeImage, Option<Consumed>)> {
    let dir = store.plan_dir(id);
    let Some((image, digest)) = store.checked_before_image(id)? else {
        return Err(state::inconsistent(
            &dir,
            "it has a journal but no before-image.json",
        ));
    };
    let path = dir.join("consumed");
    let Some(bytes) = store.read_file(id, "consumed")? else {
        return Ok((image, None));
    };
    let bad = |why: String| state::inconsistent(&path, why);
    let (marker, verified, envelope): (Consumed, _, _) =
        verified_state(&path, &bytes, CONSUMED_PAYLOAD_TYPE, "marker")?;
    if marker.plan_id != image.plan_id || marker.before_image != digest {
        return Err(bad(format!(
            "it consumes {} with before-image {}, but the before-image of this plan is {digest}",
            marker.plan_id, marker.before_image
        )));
    }
    if marker.key != verified.fingerprint {
        return Err(bad("it names another key than the one that signed it".into()));
    }
    let principals = apply_principals(signers, &verified, &envelope, marker.created_at);
    if !principals.contains(&image.executor) {
        return Err(bad(format!(
            "it is signed by {} ({}), not by the plan's executor {}",
            verified.fingerprint,
            if principals.is_empty() {
                "no principal".to_string()
            } else {
                principals.join(", ")
            },
            image.executor
        )));
    }
    Ok((image, Some(marker)))
}

/// The recorded receipt of an applied plan and its envelope, verified once: signed by the key
/// the consumed marker names, for this plan. What `apply` prints is rendered from it
/// (`render::receipt`), never the bytes of a result file, which anyone who can write
/// `.git/guardctl` could have written.
pub fn recorded(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(Receipt, Envelope)> {
    let (image, marker) = consumed(store, id, signers)?;
    let path = store.plan_dir(id).join("receipt.json");
    let bad = |why: String| state::inconsistent(&path, why);
    let bytes = store
        .read_file(id, "receipt.json")?
        .ok_or_else(|| bad("the plan is recorded as applied but has no receipt".into()))?;
    let (receipt, verified, envelope): (Receipt, _, _) =
        verified_state(&path, &bytes, RECEIPT_PAYLOAD_TYPE, "receipt")?;
    if verified.fingerprint != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if receipt.plan_id != image.plan_id {
        return Err(bad(format!("it is the receipt of {}", safe(&receipt.plan_id))));
    }
    Ok((receipt, envelope))
}

/// A plan's consumed marker as published on its remote (`consumed/<id>`), verified as the
/// local marker is, except for the before-image it binds (which lives in the clone that
/// applied): signed in `guardctl-apply` by the key it names, that key speaking for the
/// plan's `executor` when the marker says it was made, about this plan. Anything else is
/// `needs_recovery` (16) naming the ref: whoever can push there can block the plan, never
/// make an apply report it applied.
pub fn remote_marker(
    item: &crate::store::consumption::RemoteItem,
    plan_id: &str,
    executor: Option<&str>,
    made_within: std::ops::RangeInclusive<time::OffsetDateTime>,
    signers: &AllowedSigners,
) -> Result<Consumed> {
    let bad = |why: String| unverifiable(&item.refname, why);
    let bytes = item.bytes.as_ref().map_err(|why| bad(why.clone()))?;
    let (marker, verified, envelope): (Consumed, _, _) =
        verified_with(bytes, CONSUMED_PAYLOAD_TYPE, "marker", &bad)?;
    if marker.plan_id != plan_id {
        return Err(bad(format!("it consumes {}", safe(&marker.plan_id))));
    }
    // The key is judged at the time the marker claims: without this bound, an executor key
    // retired since (`valid-before`) could back-date a marker and receipt to before its
    // retirement and make every clone print "replayed" for a plan never applied. A genuine
    // marker is made while the plan can be applied (from its creation to its expiry, give
    // or take the clock skew), so a key retired before the plan was made cannot sign one.
    if !made_within.contains(&marker.created_at) {
        return Err(bad(format!(
            "it claims to be made at {}, outside the plan's life ({} to {}, with the clock skew)",
            crate::text::rfc3339(marker.created_at),
            crate::text::rfc3339(*made_within.start()),
            crate::text::rfc3339(*made_within.end()),
        )));
    }
    if marker.key != verified.fingerprint {
        return Err(bad("it names another key than the one that signed it".into()));
    }
    let principals = apply_principals(signers, &verified, &envelope, marker.created_at);
    match executor {
        Some(e) if principals.iter().any(|p| p == e) => Ok(marker),
        _ => Err(bad(format!(
            "it is signed by {} ({}), not by the plan's executor {}",
            verified.fingerprint,
            if principals.is_empty() {
                "no principal".to_string()
            } else {
                principals.join(", ")
            },
            safe(executor.unwrap_or("(none)"))
        ))),
    }
}

/// Who the signer of a verified marker speaks for in `guardctl-apply` at `at`: its plain key,
/// or the certificate its signature carries (a `cert-authority` line naming a principal the
/// certificate lists, both valid at `at`), judged exactly as the gate judges the applying key.
/// Not the bare key alone: an executor applying with a certificate of the day signs with a key
/// no line lists, and its marker would read as nobody's.
fn apply_principals(
    signers: &AllowedSigners,
    verified: &dsse::Verified,
    envelope: &crate::plan::envelope::Envelope,
    at: OffsetDateTime,
) -> Vec<String> {
    let certificate = envelope
        .signatures
        .first()
        .and_then(|s| crate::sign::sshsig::certificate_of(&s.sig));
    let signer = crate::sign::allowed_signers::Signer {
        key: &verified.signer,
        certificate: certificate.as_ref(),
    };
    signers.principals_at(signer, APPLY_NAMESPACE, &[at])
}

/// The receipt of a plan applied elsewhere and its envelope, verified once (a replay renders
/// it as [`recorded`]'s, so every clone prints the same bytes): the receipt published at
/// `receipts/<id>`, signed by the key of `marker` (a marker [`remote_marker`] verified), for
/// this plan.
pub fn remote_result(
    item: &crate::store::consumption::RemoteItem,
    marker: &Consumed,
    plan_hash: &str,
) -> Result<(Receipt, Envelope)> {
    let bad = |why: String| unverifiable(&item.refname, why);
    let bytes = item.bytes.as_ref().map_err(|why| bad(why.clone()))?;
    let (receipt, verified, envelope): (Receipt, _, _) =
        verified_with(bytes, RECEIPT_PAYLOAD_TYPE, "receipt", &bad)?;
    if verified.fingerprint != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if receipt.plan_id != marker.plan_id || receipt.plan_hash != plan_hash {
        return Err(bad(format!("it is the receipt of {}", safe(&receipt.plan_id))));
    }
    Ok((receipt, envelope))
}

/// The record that the apply which consumed a plan on its remote was abandoned (before or
/// while its command ran: `stage`), when that is what `receipts/<id>` holds (its payload type says so; `None`:
/// it claims to be something else, for [`remote_result`] to judge). Verified as a receipt is:
/// signed in `guardctl-apply` by the key of `marker` (a marker [`remote_marker`] verified),
/// naming that key and that consumption, for this plan and plan hash. Anything else is 16
/// naming the ref: junk or a foreign signature never reads as "abandoned".
pub fn remote_abandoned(
    item: &crate::store::consumption::RemoteItem,
    marker: &Consumed,
    plan_hash: &str,
) -> Result<Option<state::Abandoned>> {
    let Ok(bytes) = item.bytes.as_ref() else {
        return Ok(None);
    };
    let claims = serde_json::from_slice::<crate::plan::envelope::Envelope>(bytes)
        .is_ok_and(|e| e.payload_type == state::ABANDONED_PAYLOAD_TYPE);
    if !claims {
        return Ok(None);
    }
    let bad = |why: String| unverifiable(&item.refname, why);
    let (record, verified, _): (state::Abandoned, _, _) =
        verified_with(bytes, state::ABANDONED_PAYLOAD_TYPE, "record", &bad)?;
    if verified.fingerprint != marker.key || record.key != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if record.plan_id != marker.plan_id || record.plan_hash != plan_hash {
        return Err(bad(format!("it is the record of {}", safe(&record.plan_id))));
    }
    if record.consumed_at != marker.created_at {
        return Err(bad("it abandons another consumption than the marker's".into()));
    }
    Ok(Some(record))
}

/// The failure for a published marker or receipt that does not verify: 16, naming the ref.
fn unverifiable(refname: &str, why: String) -> Error {
    Error::new(
        Kind::NeedsRecovery,
        format!(
            "{} on the remote is not a marker or receipt guardctl can verify; nothing was changed",
            safe(refname)
        ),
    )
    .caused_by(safe(&why))
    .with_hint(format!(
        "someone pushed it by hand or it was damaged: inspect it (`git fetch <remote> {0} && git show FETCH_HEAD --stat`); the plan cannot be applied while it is there: ask whoever administers the remote to remove it, or plan again",
        safe(refname)
    ))
}

/// A consumed plan's image and marker, for a step that comes after consumption.
fn consumed(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(BeforeImage, Consumed)> {
    match trusted(store, id, signers)? {
        (image, Some(marker)) => Ok((image, marker)),
        (_, None) => Err(state::inconsistent(
            &store.plan_dir(id).join("journal"),
            "it records steps after consumption, but the plan has no consumed marker",
        )),
    }
}

fn need_key(key: Option<&SigningKey>) -> Result<&SigningKey> {
    key.ok_or_else(|| {
        Error::usage("finishing an interrupted apply signs its receipt: a signing key is needed")
    })
}

/// A state file that cannot be encoded is an error: an empty file in its place would read
/// back as "nothing recorded".
/// A state file guardctl signs (consumed marker, command result): `value` in a DSSE envelope
/// of `payload_type`, signed by `key` in `guardctl-apply`, as the bytes to write as `file`.
fn signed_state(
    payload_type: &str,
    value: &impl serde::Serialize,
    key: &SigningKey,
    file: &str,
) -> Result<Vec<u8>> {
    let payload = serde_json::to_vec(value).map_err(|e| encode_failed(file, e))?;
    let envelope = dsse::sign(payload_type, APPLY_NAMESPACE, &payload, key)
        .map_err(|e| Error::internal(format!("cannot sign guardctl's state file {file}")).caused_by(e))?;
    serde_json::to_vec_pretty(&envelope).map_err(|e| encode_failed(file, e))
}

/// A signed state file read back (consumed marker, receipt, command result): its envelope
/// verified as `payload_type` in `guardctl-apply` and its payload parsed; anything else is
/// 16 naming `path`. Who signed it is the caller's to check. Returns the envelope too (a
/// replay prints the receipt's).
fn verified_state<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    bytes: &[u8],
    payload_type: &str,
    what: &str,
) -> Result<(T, dsse::Verified, crate::plan::envelope::Envelope)> {
    verified_with(bytes, payload_type, what, &|why| state::inconsistent(path, why))
}

/// [`verified_state`] for bytes from anywhere: `bad` makes the error.
fn verified_with<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    payload_type: &str,
    what: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<(T, dsse::Verified, crate::plan::envelope::Envelope)> {
    let envelope: crate::plan::envelope::Envelope =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not a signed {what} ({e})")))?;
    let verified = dsse::verify(&envelope, payload_type, APPLY_NAMESPACE).map_err(|e| bad(e.to_string()))?;
    let value =
        serde_json::from_slice(&verified.payload).map_err(|e| bad(format!("malformed {what} ({e})")))?;
    Ok((value, verified, envelope))
}

fn encode_failed(file: &str, e: serde_json::Error) -> Error {
    Error::internal(format!("cannot encode guardctl's state file {file}")).caused_by(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::approval::DeletedRef;
    use crate::repo::Repo;
    use crate::sign::key::{KeySource, load};
    use std::path::Path;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);
    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// A real repository: `main` with one commit, `topic` one commit ahead of it; alice's
    /// key (the executor's) and bob's.
    struct Fixture {
        /// Holds the repository and the keys' copies until the test ends.
        _dir: tempfile::TempDir,
        repo: Repo,
        store: Store,
        topic: String,
        alice: SigningKey,
        bob: SigningKey,
    }

    impl Fixture {
        /// alice may apply; bob is listed too.
        fn signers(&self) -> AllowedSigners {
            let line = |who: &str, k: &SigningKey| format!("{who} {}\n", k.public.to_openssh().unwrap());
            AllowedSigners::parse(&(line("alice", &self.alice) + &line("bob", &self.bob))).unwrap()
        }
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path().join("r")).unwrap();
        let sig = git2::Signature::new("A", "a@x", &git2::Time::new(1_780_000_000, 0)).unwrap();
        let tree = git.find_tree(git.index().unwrap().write_tree().unwrap()).unwrap();
        let base = git
            .commit(Some("refs/heads/main"), &sig, &sig, "base", &tree, &[])
            .unwrap();
        let parent = git.find_commit(base).unwrap();
        let topic = git
            .commit(Some("refs/heads/topic"), &sig, &sig, "topic", &tree, &[&parent])
            .unwrap();
        let repo = Repo::open(Some(&dir.path().join("r"))).unwrap();
        let store = Store::new(repo.state_dir());
        let (alice, bob) = (key(dir.path(), "alice_ed25519"), key(dir.path(), "bob_ed25519"));
        Fixture {
            _dir: dir,
            repo,
            store,
            topic: topic.to_string(),
            alice,
            bob,
        }
    }

    /// A fixture key copied where ssh-keygen accepts it (owner-only).
    fn key(dir: &Path, name: &str) -> SigningKey {
        use std::os::unix::fs::PermissionsExt;
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/keys")
            .join(name);
        let dst = dir.join(name);
        std::fs::copy(&src, &dst).unwrap();
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o600)).unwrap();
        load(&dst, KeySource::Flag).unwrap()
    }

    /// What `apply` writes for a plan deleting `topic`, applied by alice.
    fn image(f: &Fixture) -> BeforeImage {
        BeforeImage {
            plan_id: format!("sha256:{ID}"),
            plan_hash: "sha256:h".into(),
            repository: "r".into(),
            executor: "alice".into(),
            approved_by: vec!["bob".into()],
            created_at: NOW,
            retention_days: 30,
            remote: None,
            refs: vec![DeletedRef {
                refname: "refs/heads/topic".into(),
                oid: f.topic.clone(),
            }],
            backup_ref: Some(format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE)),
            backup_commit: None,
            config: vec![],
            tag_objects: vec![],
            command: None,
            consumed_on: None,
        }
    }

    fn executor<'a>(f: &'a Fixture, key: &'a SigningKey) -> Executor<'a> {
        Executor {
            repo: f.store.lock(&f.repo).unwrap(),
            store: &f.store,
            now: NOW,
            key: Some(key),
            principal: Some("alice".into()),
            unlogged: false,
            published: None,
        }
    }

    fn backup(f: &Fixture) -> Option<git2::Oid> {
        f.repo
            .ref_target(&format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE))
    }

    #[test]
    fn apply_journals_each_step_in_order_and_deletes_with_a_backup() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        let receipt = ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
        assert_eq!(
            f.store.journal_steps(ID).unwrap(),
            [
                Step::BeforeImageWritten,
                Step::Consumed,
                Step::RefsCommitted,
                Step::ConfigRemoved,
                Step::Done
            ]
        );
        assert!(receipt.verified, "{:?}", receipt.mismatches);
        assert_eq!(f.repo.ref_target("refs/heads/topic"), None);
        assert!(backup(&f).is_some());
        assert!(f.store.is_consumed(ID));
        // What a replay prints is rebuilt from the signed receipt.
        let (replay, _) = recorded(&f.store, ID, &f.signers()).unwrap();
        assert_eq!(replay, receipt);
    }

    #[test]
    fn a_refused_drift_check_changes_nothing_and_is_journaled_as_refused() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        let e = ex
            .apply(ID, image(&f), alice, &mut || {
                Err(Error::new(Kind::Drift, "moved"))
            })
            .unwrap_err();
        assert_eq!(e.kind, Kind::Drift);
        assert_eq!(f.store.journal_steps(ID).unwrap(), [Step::Refused]);
        assert_eq!(
            f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
            Some(f.topic.clone())
        );
        assert_eq!(backup(&f), None);
        assert!(!f.store.is_consumed(ID));
        assert_eq!(f.store.read_file(ID, "before-image.json").unwrap(), None);
    }

    /// The state a crash right after `steps` leaves: the before-image, the journal, and
    /// (from `Consumed` on) alice's consumed marker.
    fn crashed_after(ex: &Executor, f: &Fixture, steps: &[Step], alice: &SigningKey) {
        f.store.write_before_image(ID, &image(f)).unwrap();
        for step in steps {
            if *step == Step::Consumed {
                ex.consume(ID, alice).unwrap();
            }
            f.store.journal(ID, *step, NOW).unwrap();
        }
    }

    #[test]
    fn recover_forgets_an_apply_interrupted_before_it_consumed_the_plan() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        crashed_after(&ex, &f, &[Step::BeforeImageWritten], alice);
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        assert_eq!(done.len(), 1);
        assert!(
            describe(&done[0].outcome).contains("nothing had changed"),
            "{:?}",
            done
        );
        assert_eq!(
            f.store.journal_steps(ID).unwrap(),
            [Step::BeforeImageWritten, Step::RecoveredUnstarted]
        );
        assert_eq!(f.store.read_file(ID, "before-image.json").unwrap(), None);
        assert!(f.repo.ref_target("refs/heads/topic").is_some());
    }

    #[test]
    fn recover_abandons_a_consumed_apply_whose_refs_were_never_committed() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        assert!(
            describe(&done[0].outcome).contains("nothing was deleted"),
            "{:?}",
            done
        );
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Aborted));
        assert!(f.repo.ref_target("refs/heads/topic").is_some());
        // The plan stays spent: it is never silently retried.
        assert!(f.store.is_consumed(ID));
        assert!(f.store.read_file(ID, "aborted.json").unwrap().is_some());
    }

    /// Delete topic and create the backup, as the committed transaction does.
    fn commit_refs(ex: &Executor, f: &Fixture) {
        let commit = ex.write_backup_commit(&image(f)).unwrap();
        ex.repo
            .ref_transaction(&[
                RefOp::Delete {
                    refname: "refs/heads/topic".into(),
                    old: f.topic.clone(),
                },
                RefOp::Create {
                    refname: format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE),
                    oid: commit.oid,
                },
            ])
            .unwrap();
    }

    #[test]
    fn recover_completes_an_apply_whose_refs_were_committed_before_it_said_so() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
        commit_refs(&ex, &f);
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        assert!(
            describe(&done[0].outcome).contains("completed the apply"),
            "{:?}",
            done
        );
        assert_eq!(
            f.store.journal_steps(ID).unwrap()[2..],
            [Step::RefsCommitted, Step::ConfigRemoved, Step::Done]
        );
        assert!(f.store.read_file(ID, "receipt.json").unwrap().is_some());
    }

    #[test]
    fn recover_finishes_after_refs_committed_only_with_the_key_that_consumed() {
        let f = fixture();
        let (alice, bob) = (&f.alice, &f.bob);
        let ex = executor(&f, alice);
        let steps = [Step::BeforeImageWritten, Step::Consumed, Step::RefsCommitted];
        crashed_after(&ex, &f, &steps, alice);
        commit_refs(&ex, &f);
        let e = ex.recover(Some(bob), &f.signers()).unwrap_err();
        assert_eq!(e.kind, Kind::NeedsRecovery);
        assert!(
            e.message.contains("only the key that applied it"),
            "{}",
            e.message
        );
        assert_eq!(f.store.journal_steps(ID).unwrap(), steps, "nothing journaled");
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        assert_eq!(done[0].outcome, RecoveryOutcome::Completed(Completed::Committed));
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Done));
        // Settled: a second recover has nothing to do.
        assert!(ex.recover(Some(alice), &f.signers()).unwrap().is_empty());
    }

    #[test]
    fn recover_refuses_a_journal_that_claims_a_commit_the_refs_do_not_show() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        crashed_after(
            &ex,
            &f,
            &[Step::BeforeImageWritten, Step::Consumed, Step::RefsCommitted],
            alice,
        );
        let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
        needs_recovery_because(&e, "0 of 1 refs are deleted");
        assert!(f.repo.ref_target("refs/heads/topic").is_some());
    }

    #[test]
    fn recover_never_runs_an_interrupted_command_again() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        let image = BeforeImage {
            refs: vec![],
            backup_ref: None,
            command: Some(vec!["rm".into(), "-r".into(), "build".into()]),
            ..image(&f)
        };
        f.store.write_before_image(ID, &image).unwrap();
        f.store.journal(ID, Step::BeforeImageWritten, NOW).unwrap();
        ex.consume(ID, alice).unwrap();
        for step in [Step::Consumed, Step::CommandStarted] {
            f.store.journal(ID, step, NOW).unwrap();
        }
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        assert!(
            describe(&done[0].outcome).contains("it was not run again"),
            "{:?}",
            done
        );
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Aborted));
    }

    #[test]
    fn a_damaged_journal_stops_recover_before_anything_changes() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
        let journal = f.store.plan_dir(ID).join("journal");
        let good = std::fs::read(&journal).unwrap();
        // A step guardctl never writes; then steps out of order (done before any commit).
        let unknown = format!(
            "{{\"plan\":\"sha256:{ID}\",\"step\":\"teleported\",\"time\":\"2026-06-01T12:00:00Z\"}}\n"
        );
        let early = String::from_utf8(good.clone())
            .unwrap()
            .replace("\"consumed\"", "\"done\"");
        for damaged in [[good.clone(), unknown.into_bytes()].concat(), early.into_bytes()] {
            std::fs::write(&journal, &damaged).unwrap();
            let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
            assert_eq!((e.kind, e.exit_code()), (Kind::NeedsRecovery, 16));
            assert!(e.message.contains("journal"), "{}", e.message);
            assert!(
                e.causes
                    .iter()
                    .any(|c| c.contains("teleported") || c.contains("cannot follow")),
                "{e:?}"
            );
            assert_eq!(
                std::fs::read(&journal).unwrap(),
                damaged,
                "the journal is left as found"
            );
            assert!(f.repo.ref_target("refs/heads/topic").is_some());
        }
    }

    #[test]
    fn a_before_image_whose_consumption_record_was_changed_after_consuming_stops_recover() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        let consumed_on = |marker| {
            Some(crate::store::RemoteConsumption {
                remote: "origin".into(),
                url: "file:///nowhere.git".into(),
                marker,
            })
        };
        let image = BeforeImage {
            remote: Some("origin".into()),
            consumed_on: consumed_on(true),
            ..image(&f)
        };
        f.store.write_before_image(ID, &image).unwrap();
        f.store.journal(ID, Step::BeforeImageWritten, NOW).unwrap();
        ex.consume(ID, alice).unwrap();
        f.store.journal(ID, Step::Consumed, NOW).unwrap();
        // Flipped to "no marker", recover would decide by the refs, which anyone could have
        // deleted: the signed marker binds the image as written, so it stops before looking.
        let tampered = BeforeImage {
            consumed_on: consumed_on(false),
            ..image
        };
        f.store.write_before_image(ID, &tampered).unwrap();
        let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
        needs_recovery_because(&e, "the before-image of this plan is");
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Consumed));
    }

    /// `e` stops recovery (16) and says why in one of its causes.
    fn needs_recovery_because(e: &Error, why: &str) {
        assert_eq!(e.kind, Kind::NeedsRecovery, "{e:?}");
        assert!(e.causes.iter().any(|c| c.contains(why)), "{e:?}");
    }

    #[test]
    fn a_consumed_marker_signed_by_another_key_stops_recover() {
        let f = fixture();
        let (alice, bob) = (&f.alice, &f.bob);
        let ex = executor(&f, alice);
        // bob consumed a plan alice is the executor of.
        crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], bob);
        let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
        needs_recovery_because(&e, "not by the plan's executor alice");
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Consumed));
    }

    #[test]
    fn rollback_journals_its_steps_and_restores_the_branch() {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
        let image = f.store.before_image(ID).unwrap().unwrap();
        assert_eq!(ex.rollback(ID, &image).unwrap(), (1, 0));
        assert_eq!(
            f.store.journal_steps(ID).unwrap()[5..],
            [
                Step::RollbackStarted,
                Step::RollbackRefsRestored,
                Step::RolledBack
            ]
        );
        assert_eq!(
            f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
            Some(f.topic.clone())
        );
    }

    #[test]
    fn recover_after_rollback_started_decides_from_the_refs() {
        for restored_before_the_crash in [false, true] {
            let f = fixture();
            let alice = &f.alice;
            let ex = executor(&f, alice);
            ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
            let image = f.store.before_image(ID).unwrap().unwrap();
            f.store
                .write_file(ID, "rollback.json", &serde_json::to_vec(&image.refs).unwrap())
                .unwrap();
            f.store.journal(ID, Step::RollbackStarted, NOW).unwrap();
            if restored_before_the_crash {
                ex.repo
                    .ref_transaction(&[RefOp::Create {
                        refname: "refs/heads/topic".into(),
                        oid: f.topic.clone(),
                    }])
                    .unwrap();
            }
            let done = ex.recover(Some(alice), &f.signers()).unwrap();
            let (outcome, last) = if restored_before_the_crash {
                (
                    "the branches had been restored: completed the rollback",
                    Step::RolledBack,
                )
            } else {
                (
                    "the rollback had not restored anything yet: abandoned it; run rollback again",
                    Step::RollbackAbandoned,
                )
            };
            assert_eq!(describe(&done[0].outcome), outcome);
            assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&last));
        }
    }

    /// An abandonment record as `receipts/<id>` would hold it, signed by `signer`, claiming
    /// `stage` for the consumption of `marker`.
    fn abandonment_item(
        marker: &Consumed,
        stage: state::Stage,
        signer: &SigningKey,
    ) -> crate::store::consumption::RemoteItem {
        let record = state::Abandoned {
            plan_id: marker.plan_id.clone(),
            plan_hash: "sha256:h".into(),
            executor: "alice".into(),
            key: marker.key.clone(),
            consumed_at: marker.created_at,
            abandoned_at: NOW,
            stage,
            reason: "test".into(),
        };
        receipts_item(&record, signer)
    }

    /// `value` signed by `signer` as an abandonment record, as `receipts/<id>` would hold it.
    fn receipts_item(
        value: &impl serde::Serialize,
        signer: &SigningKey,
    ) -> crate::store::consumption::RemoteItem {
        let bytes = signed_state(state::ABANDONED_PAYLOAD_TYPE, value, signer, ABANDONED).unwrap();
        crate::store::consumption::RemoteItem {
            refname: format!("refs/guardctl/receipts/{ID}"),
            bytes: Ok(bytes),
        }
    }

    #[test]
    fn an_abandonment_record_is_believed_only_when_signed_by_the_key_that_consumed_the_plan() {
        let f = fixture();
        let marker = Consumed {
            plan_id: format!("sha256:{ID}"),
            before_image: "sha256:b".into(),
            key: crate::sign::sshsig::fingerprint(&f.alice.public),
            created_at: NOW,
            nonce: None,
            audit: None,
        };
        for stage in [state::Stage::BeforeCommand, state::Stage::CommandStarted] {
            let genuine = remote_abandoned(&abandonment_item(&marker, stage, &f.alice), &marker, "sha256:h")
                .unwrap()
                .unwrap();
            assert_eq!(genuine.stage, stage);
        }
        // Bob claims alice's apply never ran its command (10, "spent, nothing ran"), which
        // would hide that it may have partly run (16, "check by hand"): refused, naming the ref.
        let forged = abandonment_item(&marker, state::Stage::BeforeCommand, &f.bob);
        let e = remote_abandoned(&forged, &marker, "sha256:h").unwrap_err();
        assert_eq!(e.kind, Kind::NeedsRecovery);
        assert!(e.message.contains(&forged.refname), "{}", e.message);
        assert!(
            e.causes
                .iter()
                .any(|c| c.contains("not by") && c.contains(&marker.key)),
            "{:?}",
            e.causes
        );
        // A record without its stage is no record guardctl writes.
        let genuine = abandonment_item(&marker, state::Stage::BeforeCommand, &f.alice);
        let envelope: crate::plan::envelope::Envelope =
            serde_json::from_slice(genuine.bytes.as_ref().unwrap()).unwrap();
        let payload = dsse::verify(&envelope, state::ABANDONED_PAYLOAD_TYPE, APPLY_NAMESPACE)
            .unwrap()
            .payload;
        let mut value: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert!(value.as_object_mut().unwrap().remove("stage").is_some());
        let stageless = receipts_item(&value, &f.alice);
        let e = remote_abandoned(&stageless, &marker, "sha256:h").unwrap_err();
        assert_eq!(e.kind, Kind::NeedsRecovery);
    }
}
