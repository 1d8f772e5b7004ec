//! Rolling back an applied plan: restore what it removed, from its before-image: every
//! branch at its old object id (compare-and-swap: only where the name is free) and its
//! config. Running it twice is harmless. A remote's plan applied in another clone is
//! restored from the receipt that clone published (verified as an apply's replay is),
//! pushed back from this clone's objects.
//!
//! The one change a broken audit log does not stop (restoring what a plan deleted is how an
//! incident ends): it runs unrecorded, with a warning, and says so in its outcome.

use super::session::{AuditLog, Notices, Session, Signer};
use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::{DeletedRef, Receipt};
use crate::render::rollback::ElsewhereView;
use crate::store::Store;
use crate::text::safe;
use crate::ui::Ui;
use std::path::Path;

/// Roll back the plan `plan` names: its file, or its id (`sha256:<hex>`, or a unique hex
/// prefix of 8+ digits).
#[derive(Debug)]
pub struct RollbackRequest {
    pub plan: String,
}

/// What a rollback restored.
#[derive(Debug)]
pub struct RollbackOutcome {
    /// `sha256:<hex>`.
    pub plan_id: String,
    /// What the plan deleted (here: its before-image; elsewhere: its receipt).
    pub refs: Vec<DeletedRef>,
    pub restored: usize,
    pub already_present: usize,
    /// Recorded in the audit log (`false`: the log is broken, and this ran unrecorded).
    pub logged: bool,
    /// The apply made in another clone this restored from.
    pub elsewhere: Option<AppliedElsewhere>,
}

/// An apply made in another clone, as the team remote's verified receipt says.
#[derive(Debug)]
pub struct AppliedElsewhere {
    /// The team remote's name and URL.
    pub remote: String,
    pub url: String,
    pub receipt: Receipt,
}

/// Resolve the plan, then in a session (recovery first; a broken audit log tolerated):
/// restore from this clone's before-image, or from another clone's published receipt.
pub fn rollback(ctx: &Ctx, ui: &mut Ui, request: &RollbackRequest) -> Result<RollbackOutcome> {
    let store = super::session::store(ctx)?;
    let (id, found_elsewhere) = resolve(ctx, &store, &request.plan)?;
    // A broken audit log blocks every change but this one: restoring what a plan deleted.
    let checked = Session::lock(ctx, &store)?.check_log(ui, AuditLog::MayBeBroken)?;
    // The rollback's audit entry, and a receipt of an interrupted apply finished here, are
    // signed with the caller's key.
    let key = ctx.unlocked_signing_key(ui)?;
    let principal = ctx.require_principal(&key, crate::plan::approval::APPLY_NAMESPACE, "rollback")?;
    // An interrupted apply is still only recovered with a working log (recovery may finish
    // deleting): that refuses in the session as before.
    let mut session = checked.begin(
        ui,
        Signer {
            key: Some(&key),
            principal: Some(principal),
        },
        Notices::Print,
    )?;
    let logged = session.broken_log().is_none();
    if store.read_file(&id, "before-image.json")?.is_none() {
        let Some(elsewhere) = found_elsewhere.or_else(|| applied_elsewhere(ctx, &id)) else {
            return Err(Error::usage(format!(
                "plan sha256:{id} was never applied here: there is nothing to restore"
            )));
        };
        unrecorded(ui, &mut session);
        return restore_elsewhere(ctx, ui, &session, elsewhere, logged);
    }
    // Only what this repository's own apply recorded and its executor signed is restored.
    let (signers, _) = ctx.allowed_signers()?;
    let image = match crate::execute::trusted(&store, &id, &signers)? {
        (image, Some(_)) => image,
        (_, None) => {
            return Err(crate::store::state::inconsistent(
                &store.plan_dir(&id).join("consumed"),
                "the plan has a before-image but no consumed marker: it was never applied",
            ));
        }
    };
    unrecorded(ui, &mut session);
    let (restored, already_present) = session.executor().rollback(&id, &image)?;
    Ok(RollbackOutcome {
        plan_id: image.plan_id,
        refs: image.refs,
        restored,
        already_present,
        logged,
        elsewhere: None,
    })
}

/// With a broken audit log: warn, and record nothing from here on.
fn unrecorded(ui: &mut Ui, session: &mut Session) {
    let Some(e) = session.broken_log() else {
        return;
    };
    ui.warn(&format!(
        "{}; rolling back anyway, and this rollback is NOT recorded in the audit log (to repair or archive the log: docs/trust-model.md \"The audit log: when it is broken\")",
        e.message
    ));
    session.record_nothing();
}

/// The plan id hex a user named, by file or (a prefix of) its id.
/// With it, the apply made in another clone when that is how it was found (read once).
fn resolve(ctx: &Ctx, store: &Store, arg: &str) -> Result<(String, Option<Elsewhere>)> {
    if Path::new(arg).is_file() {
        return Ok((crate::planfile::load(Path::new(arg))?.id_hex().to_string(), None));
    }
    let hex = arg.trim_start_matches("sha256:").to_ascii_lowercase();
    if hex.len() < 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        // Not an id, so it was meant as a path: a missing file, not a malformed argument.
        return Err(Error::new(
            Kind::NotFound,
            format!("`{}` is neither an existing plan file nor a plan id", safe(arg)),
        )
        .with_hint("pass the plan file `guardctl apply` applied, or its id from `guardctl log`"));
    }
    let matches: Vec<String> = store
        .plan_ids()?
        .into_iter()
        .filter(|id| id.starts_with(&hex))
        .collect();
    match matches.as_slice() {
        [one] => Ok((one.clone(), None)),
        [] => {
            match applied_elsewhere(ctx, &hex) {
                Some(e) => Ok((e.id.clone(), Some(e))),
                None => Err(Error::usage(format!("no applied plan has id {}", safe(arg)))
                    .with_hint("see `guardctl log`")),
            }
        }
        _ => {
            Err(Error::usage(format!("plan id prefix {} is ambiguous", safe(arg)))
                .with_hint("give more digits"))
        }
    }
}

/// A plan applied in another clone, as the team remote's ledger says: its receipt verified
/// as an apply's replay is (the plan published there, its consumed marker signed by a key of
/// its executor, the receipt signed by that key).
struct Elsewhere {
    id: String,
    remote: crate::store::published::Remote,
    loaded: crate::planfile::Loaded,
    receipt: Receipt,
}

impl Elsewhere {
    fn describe(&self) -> String {
        format!(
            "plan sha256:{} was applied in another clone: its receipt on remote `{}` ({}) says {} applied it at {} with key {}, deleting {} refs",
            self.id,
            safe(&self.remote.name),
            safe(&self.remote.url),
            safe(&self.receipt.executor),
            crate::text::rfc3339(self.receipt.applied_at),
            safe(&self.receipt.key),
            self.receipt.deleted.len()
        )
    }

    /// The details of a refusal: `{"applied_elsewhere": …}`, as `rollback --json` names it.
    fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "applied_elsewhere": ElsewhereView::of(&self.remote.name, &self.remote.url, &self.receipt)
        })
    }
}

/// The apply of the plan whose id starts with `hex` made in another clone, if the team
/// remote holds a receipt of exactly one such plan that verifies. `None` when the remote
/// cannot be read or holds none: the caller's own error stands.
fn applied_elsewhere(ctx: &Ctx, hex: &str) -> Option<Elsewhere> {
    let snapshot = ctx.published_all().ok()??;
    let ids: Vec<String> = snapshot
        .receipt_ids()
        .ok()?
        .into_iter()
        .filter(|id| id.starts_with(hex))
        .collect();
    let [id] = ids.as_slice() else {
        return None;
    };
    let loaded = snapshot.plan(id).ok()??;
    let found = crate::store::consumption::of(&snapshot, id).ok()??;
    let (signers, _) = ctx.allowed_signers().ok()?;
    let skew = time::Duration::seconds(crate::gate::clock_skew(ctx).min(i64::MAX as u64) as i64);
    let made_within =
        loaded.plan.created_at.saturating_sub(skew)..=loaded.plan.expires_at.saturating_add(skew);
    let executor = loaded.plan.executor.principal.as_deref();
    let marker =
        crate::execute::remote_marker(&found.consumed, &loaded.plan_id, executor, made_within, &signers)
            .ok()?;
    let (receipt, _) =
        crate::execute::remote_result(found.receipt.as_ref()?, &marker, &loaded.plan.plan_hash).ok()?;
    Some(Elsewhere {
        id: id.clone(),
        remote: snapshot.remote.clone(),
        loaded,
        receipt,
    })
}

/// Roll back here a remote's plan applied in another clone: what its verified receipt says
/// was deleted, each ref and id also one the plan planned (the receipt is the executor's
/// word, the plan the reviewers'), pushed back to the plan's remote from this clone's
/// objects (`Executor::restore_published`). An exec plan has no rollback; a local plan's
/// refs were in the other clone.
fn restore_elsewhere(
    ctx: &Ctx,
    ui: &mut Ui,
    session: &Session,
    e: Elsewhere,
    logged: bool,
) -> Result<RollbackOutcome> {
    let details = e.details();
    let refuse = |why: &str| Error::usage(format!("{}: {why}", e.describe())).with_details(details.clone());
    let plan = &e.loaded.plan;
    let Some(name) = plan.operation.bound_to_remote() else {
        return Err(refuse(
            "it is a local plan of that clone, whose refs only that clone has: run `guardctl rollback` there",
        ));
    };
    if matches!(plan.operation, crate::plan::model::Operation::Exec(_)) {
        return Err(refuse(
            "an exec plan has no rollback: guardctl cannot undo a command",
        ));
    }
    let repo = ctx.repo()?;
    let url = repo.remote_url(name)?;
    if !crate::repo::url::same_repository(&url, &plan.repository) {
        return Err(refuse(&format!(
            "it is a plan for {}, and this clone's remote `{}` is {}",
            safe(&plan.repository),
            safe(name),
            safe(&url)
        )));
    }
    let planned = |r: &DeletedRef| {
        plan.affected
            .iter()
            .any(|a| a.refname == r.refname && a.oid == r.oid)
    };
    if let Some(r) = e.receipt.deleted.iter().find(|r| !planned(r)) {
        return Err(Error::new(
            Kind::NeedsRecovery,
            format!(
                "{}: its receipt lists {} at {}, which the plan did not plan to delete; nothing was restored",
                e.describe(),
                safe(&r.refname),
                safe(&r.oid)
            ),
        )
        .with_details(details));
    }
    // The other way too: the push that consumed a remote's plan deleted every ref it
    // planned, all or nothing, so a receipt that leaves one out (re-signed by its executor)
    // would have the rollback restore less than was deleted and call it done.
    let listed = |a: &crate::plan::model::Resource| {
        e.receipt
            .deleted
            .iter()
            .any(|r| a.refname == r.refname && a.oid == r.oid)
    };
    if let Some(a) = plan.affected.iter().find(|a| !listed(a)) {
        return Err(Error::new(
            Kind::NeedsRecovery,
            format!(
                "{}: its receipt leaves out {} at {}, which the plan deleted with the rest; nothing was restored",
                e.describe(),
                safe(&a.refname),
                safe(&a.oid)
            ),
        )
        .with_details(details));
    }
    ui.notice(&format!("{}; restoring them from this clone", e.describe()));
    let (restored, already_present) = session
        .executor()
        .restore_published(&e.id, &url, &e.receipt.deleted)
        .map_err(|err| err.with_details(details.clone()))?;
    Ok(RollbackOutcome {
        plan_id: e.loaded.plan_id,
        refs: e.receipt.deleted.clone(),
        restored,
        already_present,
        logged,
        elsewhere: Some(AppliedElsewhere {
            remote: e.remote.name,
            url: e.remote.url,
            receipt: e.receipt,
        }),
    })
}
