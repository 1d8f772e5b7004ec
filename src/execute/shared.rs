//! What every protocol uses: marking the plan consumed, the backup commit, where a plan's
//! refs point now (here or on its remote), git's process id recorded before a ref change,
//! an aborted apply's record, and the audit entries of rollback and recover.

use super::Executor;
use super::journal::at::Idle;
use super::journal::{At, Journal, MayAbort};
use super::records::signed_state;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::DeletedRef;
use crate::repo::mutate::{BackupCommit, RefOp};
use crate::sign::SigningKey;
use crate::store::BeforeImage;
use crate::store::state::{CONSUMED_PAYLOAD_TYPE, Consumed};
use crate::text::safe;

impl Executor<'_> {
    /// Mark the plan consumed with a marker signed by the applying key, binding the plan id to
    /// the before-image exactly as written: a recovery later acts only on a marker it can
    /// verify, and signs a receipt only with this same key.
    pub(super) fn consume(&self, id: &str, key: &SigningKey) -> Result<()> {
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
    pub(super) fn write_backup_commit(&self, image: &BeforeImage) -> Result<BackupCommit> {
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
    pub(super) fn targets(
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
    pub(super) fn remote_target(&self, image: &BeforeImage) -> Result<Option<String>> {
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
    pub(super) fn kept(&self, image: &BeforeImage) -> std::collections::HashSet<String> {
        image
            .backup_ref
            .as_deref()
            .map(|r| self.repo.backed_up(r))
            .unwrap_or_default()
    }

    /// Run a ref transaction, recording git's process id durably first: if we are killed,
    /// git may still be committing, and recovery must wait for it rather than guess.
    pub(super) fn transaction(&self, id: &str, ops: &[RefOp]) -> Result<()> {
        self.watched_git(id, |spawned| self.repo.ref_transaction_watched(ops, spawned))
    }

    /// Run a git that `run` starts through the callback it is given (`record_git`), and forget
    /// its process id once `run` has returned: git has exited then (whatever it did), and a
    /// stale id would only make a later recovery wait on whatever process reuses it.
    pub(super) fn watched_git<T>(
        &self,
        id: &str,
        run: impl FnOnce(&mut dyn FnMut(u32) -> Result<()>) -> Result<T>,
    ) -> Result<T> {
        let out = run(&mut |pid| self.record_git(id, pid));
        self.git_exited(id, out)
    }

    /// `out`, once the git recorded for plan `id` has exited: its process id is removed (a
    /// failure to remove it is the result's only when the git itself succeeded).
    pub(super) fn git_exited<T>(&self, id: &str, out: Result<T>) -> Result<T> {
        let removed = self.store.remove_file(id, "git.pid");
        match (out, removed) {
            (Ok(v), Ok(())) => Ok(v),
            (Ok(_), Err(e)) | (Err(e), _) => Err(e),
        }
    }

    pub(super) fn record_git(&self, id: &str, pid: u32) -> Result<()> {
        self.store.write_file(id, "git.pid", pid.to_string().as_bytes())
    }

    /// Wait (bounded) for a git transaction started by a process that died: until it exits,
    /// the refs are not in their final state.
    pub(super) fn wait_for_orphaned_git(&self, id: &str) -> Result<()> {
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
    pub(super) fn abort<S: MayAbort>(&self, journal: Journal<'_, S>, e: &Error) -> Result<()> {
        let record = serde_json::json!({"kind": e.kind.as_str(), "message": e.message, "causes": e.causes});
        self.store
            .write_file(journal.id(), "aborted.json", record.to_string().as_bytes())?;
        journal.aborted()
    }

    /// The journal of an apply of plan `id` about to start (see [`Journal::start`]).
    pub(super) fn journal<'j>(&'j self, id: &'j str) -> Journal<'j, Idle> {
        Journal::start(self.store, id, self.now)
    }

    /// Plan `id`'s journal where `recover` finds it, which must be at `S` ([`Journal::resume`]).
    pub(super) fn resume<'j, S: At>(&'j self, id: &'j str) -> Result<Journal<'j, S>> {
        Journal::resume(self.store, id, self.now)
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
}

pub(super) fn encode_failed(file: &str, e: serde_json::Error) -> Error {
    Error::internal(format!("cannot encode guardctl's state file {file}")).caused_by(e)
}
