//! The one way in for everything that changes the repository or guardctl's state: a
//! [`Session`] holds the repository lock, has checked the audit log, has recovered every
//! interrupted apply or rollback and published what it recovered, and only then hands out
//! the [`Executor`] that mutates (and the store).
//!
//! It is built in three steps, because the commands do their own work between them and
//! that order is part of their behaviour: [`Session::lock`] takes the lock (`apply` records
//! the plan as its planner's live plan there, under the lock, and judges the bulk class
//! again); [`Locked::check_log`] checks the audit log (`rollback` looks its key up after
//! it, and is the one command a broken log does not stop: [`AuditLog::MayBeBroken`]);
//! [`Checked::begin`] recovers and publishes, printing a notice per plan recovered unless
//! the caller shows them itself (`recover`). Only [`Checked::without_recovery`] skips
//! recovery: `gc`, which has never recovered (it touches only backups past their
//! retention, never an interrupted plan's state).
//!
//! Invariant: no `Session` exists without the lock held and the log checked; no `Executor`
//! exists outside a `Session`.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::execute::Executor;
use crate::repo::mutate::RepoMut;
use crate::sign::SigningKey;
use crate::store::Store;
use crate::store::recovered::Recovered;
use crate::ui::Ui;

/// The state directory of the run's repository: what a session locks and works in.
pub fn store(ctx: &Ctx) -> Result<Store> {
    Ok(Store::new(ctx.repo()?.state_dir()))
}

/// Whether a broken audit log stops the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditLog {
    /// What cannot be recorded is not done: a broken log refuses before any change.
    MustBeIntact,
    /// `rollback` only: restoring what a plan deleted is how an incident ends, and a damaged
    /// log must not stand in its way. The break is kept ([`Session::broken_log`]) for the
    /// caller to report and to run its restore unrecorded; a recovery still needs a working
    /// log (it may finish deleting), and refuses when it has anything to record.
    MayBeBroken,
}

/// Who signs what the session records: a recovered apply's receipt (only the key that
/// consumed the plan may), the audit entries of the recovery and of the request's own work.
pub struct Signer<'s> {
    pub key: Option<&'s SigningKey>,
    /// The principal `key` speaks for, named in every audit entry.
    pub principal: Option<String>,
}

/// Whether [`Checked::begin`] prints a notice per plan it recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notices {
    Print,
    /// The caller shows what was recovered itself ([`Session::recovered`]).
    Quiet,
}

/// The repository lock, held; the audit log not checked yet.
pub struct Locked<'s> {
    ctx: &'s Ctx,
    store: &'s Store,
    repo: RepoMut<'s>,
}

/// The lock held and the audit log checked.
pub struct Checked<'s> {
    ctx: &'s Ctx,
    store: &'s Store,
    repo: RepoMut<'s>,
    broken_log: Option<Error>,
}

/// The lock held, the audit log checked, interrupted plans recovered and published.
pub struct Session<'s> {
    store: &'s Store,
    executor: Executor<'s>,
    broken_log: Option<Error>,
    recovered: Vec<Recovered>,
}

impl<'s> Session<'s> {
    /// Take the repository's guardctl lock (waiting for another guardctl to finish).
    pub fn lock(ctx: &'s Ctx, store: &'s Store) -> Result<Locked<'s>> {
        let repo = store.lock(ctx.repo()?)?;
        Ok(Locked { ctx, store, repo })
    }

    pub fn store(&self) -> &'s Store {
        self.store
    }

    pub fn executor(&self) -> &Executor<'s> {
        &self.executor
    }

    /// The locked repository, for work that is not one of the executor's sequences (`gc`).
    pub fn repo(&self) -> &RepoMut<'s> {
        &self.executor.repo
    }

    /// How the audit log is broken, when [`AuditLog::MayBeBroken`] let the session begin
    /// anyway.
    pub fn broken_log(&self) -> Option<&Error> {
        self.broken_log.as_ref()
    }

    /// From here on, record nothing in the audit log: only for the restore of a `rollback`
    /// whose log is broken ([`AuditLog::MayBeBroken`]).
    pub fn record_nothing(&mut self) {
        self.executor.unlogged = true;
    }

    /// What the session recovered before the request's work, in order.
    pub fn recovered(&self) -> &[Recovered] {
        &self.recovered
    }

    /// Say which lock files a guardctl killed while holding the lock had left, and whether
    /// they were removed ([`say_stale_locks`]); record the removal in the audit log when the
    /// session can sign.
    fn report_stale_locks(&mut self, ui: &mut Ui) -> Result<()> {
        let Some(detail) = say_stale_locks(ui, self.executor.repo.stale_locks()) else {
            return Ok(());
        };
        if self.executor.key.is_some() && self.broken_log.is_none() {
            self.executor.audit("recover", None, None, &detail)?;
        }
        Ok(())
    }
}

/// Warn, once per key, about audit entries signed by a key the trusted identities no longer
/// list at all (`store::audit::retired`): a teammate retired by removing their line. Their
/// entries stay in the log, signed and chained; they are not tampering, and trusted no more.
pub fn say_retired(ctx: &Ctx, ui: &mut Ui, retired: &[(String, usize)]) -> Result<()> {
    if retired.is_empty() {
        return Ok(());
    }
    let (_, source) = ctx.allowed_signers()?;
    let from = source.map_or_else(
        || "the trusted identities".to_string(),
        |s| crate::text::safe(&s.location),
    );
    for (key, n) in retired {
        ui.warn(&format!(
            "{n} audit entr{} signed by a key no longer trusted ({key}: removed from {from}); kept in the log, trusted no more",
            if *n == 1 { "y is" } else { "ies are" }
        ));
    }
    Ok(())
}

/// Tell the user what taking the lock did with the lock files a guardctl killed while
/// holding it had left (`repo::mutate::stale_locks`): a notice naming those removed, a warning
/// saying why others were left. Returns the notice's words (for the audit log).
pub fn say_stale_locks(ui: &mut Ui, cleared: &crate::repo::mutate::Cleared) -> Option<String> {
    if let Some(why) = &cleared.left {
        ui.warn(&format!(
            "a guardctl was killed while changing this repository, and lock files it may have left were not removed: {}",
            crate::text::safe(why)
        ));
    }
    if cleared.removed.is_empty() {
        return None;
    }
    let names: Vec<String> = cleared
        .removed
        .iter()
        .map(|p| crate::text::safe(&p.display().to_string()))
        .collect();
    let detail = format!(
        "removed {} lock file{} a killed guardctl's git had left: {}",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    ui.notice(&detail);
    Some(detail)
}

impl<'s> Locked<'s> {
    /// The store, for work the caller does under the lock before the checks.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// Check the audit log: intact, every entry's key speaking for its principal.
    pub fn check_log(self, ui: &mut Ui, log: AuditLog) -> Result<Checked<'s>> {
        let Locked { ctx, store, repo } = self;
        let broken_log = match store.audit_intact(&repo, &ctx.allowed_signers()?.0) {
            Ok(retired) => {
                say_retired(ctx, ui, &retired)?;
                None
            }
            Err(e) if log == AuditLog::MayBeBroken && e.kind == Kind::InvalidPlan => Some(e),
            Err(e) => return Err(e),
        };
        Ok(Checked {
            ctx,
            store,
            repo,
            broken_log,
        })
    }
}

impl<'s> Checked<'s> {
    /// Recover every interrupted apply or rollback (signed by `signer`), print a notice per
    /// plan recovered (`notices`), publish what was recovered where its apply would have, and
    /// hand out the session.
    pub fn begin(self, ui: &mut Ui, signer: Signer<'s>, notices: Notices) -> Result<Session<'s>> {
        let ctx = self.ctx;
        let mut session = self.without_recovery(signer);
        session.report_stale_locks(ui)?;
        let (signers, _) = ctx.allowed_signers()?;
        let recovered = session.executor.recover(session.executor.key, &signers)?;
        if notices == Notices::Print {
            for r in &recovered {
                ui.notice(&crate::render::recovery::notice(r));
            }
        }
        let ids: Vec<String> = recovered.iter().map(|r| r.id.clone()).collect();
        crate::consume::publish_recovered(ctx, ui, session.store, ctx.repo()?, &ids)?;
        session.recovered = recovered;
        Ok(session)
    }

    /// The session without recovering anything: `gc` only (see the module doc).
    pub fn without_recovery(self, signer: Signer<'s>) -> Session<'s> {
        let Checked {
            ctx,
            store,
            repo,
            broken_log,
        } = self;
        Session {
            store,
            executor: Executor {
                repo,
                store,
                now: ctx.now,
                key: signer.key,
                principal: signer.principal,
                // Only a rollback's restore runs unrecorded, and says so itself
                // ([`Session::record_nothing`]): a recovery needs a working log.
                unlogged: false,
                published: ctx.fetched_published(),
            },
            broken_log,
            recovered: Vec::new(),
        }
    }
}
