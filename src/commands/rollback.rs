//! `guardctl rollback PLAN_OR_ID`: restore what an applied plan removed, from its
//! before-image: every branch at its old object id (compare-and-swap: only where the name is
//! free) and its config. Running it twice is harmless.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::execute::Executor;
use crate::store::Store;
use crate::text::safe;
use crate::ui::Ui;
use std::path::Path;

/// Restore the branches and config an applied plan deleted, from its backups.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The applied plan file, or its id (`sha256:<hex>`, or a unique hex prefix of 8+ digits)
    #[arg(value_name = "PLAN_OR_ID")]
    pub plan: String,
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

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let (id, found_elsewhere) = resolve(ctx, &store, &args.plan)?;
    let locked = store.lock(repo)?;
    // A broken audit log blocks every change but this one: restoring what a plan deleted.
    let broken_log = match store.audit_intact(repo, &ctx.allowed_signers()?.0) {
        Ok(()) => None,
        Err(e) if e.kind == Kind::InvalidPlan => Some(e),
        Err(e) => return Err(e),
    };
    // The rollback's audit entry, and a receipt of an interrupted apply finished here, are
    // signed with the caller's key.
    let key = ctx.signing_key(ui)?;
    let principal = ctx.require_principal(&key, crate::plan::approval::APPLY_NAMESPACE, "rollback")?;
    let mut ex = Executor {
        repo: locked,
        store: &store,
        now: ctx.now,
        key: Some(&key),
        principal: Some(principal),
        // An interrupted apply is still only recovered with a working log (recovery may
        // finish deleting): that refuses below as before.
        unlogged: false,
        published: None,
    };
    let (signers, _) = ctx.allowed_signers()?;
    let recovered = ex.recover(Some(&key), &signers)?;
    for (plan_id, outcome) in &recovered {
        ui.notice(&format!("recovered plan sha256:{plan_id}: {outcome}"));
    }
    let ids: Vec<String> = recovered.into_iter().map(|(id, _)| id).collect();
    crate::consume::publish_recovered(ctx, ui, &store, repo, &ids)?;
    if store.read_file(&id, "before-image.json")?.is_none() {
        let Some(elsewhere) = found_elsewhere.or_else(|| applied_elsewhere(ctx, &id)) else {
            return Err(Error::usage(format!(
                "plan sha256:{id} was never applied here: there is nothing to restore"
            )));
        };
        if let Some(e) = &broken_log {
            ui.warn(&format!(
                "{}; rolling back anyway, and this rollback is NOT recorded in the audit log (to repair or archive the log: README \"The audit log\")",
                e.message
            ));
            ex.unlogged = true;
        }
        return restore_elsewhere(ctx, ui, &ex, &elsewhere, broken_log.is_none());
    }
    // Only what this repository's own apply recorded and its executor signed is restored.
    let image = match crate::execute::trusted(&store, &id, &signers)? {
        (image, Some(_)) => image,
        (_, None) => {
            return Err(crate::store::state::inconsistent(
                &store.plan_dir(&id).join("consumed"),
                "the plan has a before-image but no consumed marker: it was never applied",
            ));
        }
    };
    if let Some(e) = &broken_log {
        ui.warn(&format!(
            "{}; rolling back anyway, and this rollback is NOT recorded in the audit log (to repair or archive the log: README \"The audit log\")",
            e.message
        ));
        ex.unlogged = true;
    }
    let restored = ex.rollback(&id, &image)?;
    report(
        ui,
        &image.plan_id,
        &image.refs,
        restored,
        broken_log.is_none(),
        None,
    )
}

/// What a rollback did, as `rollback` prints it: (restored, already present) of `refs`;
/// `elsewhere`, the apply made in another clone it restored from (`Elsewhere::details`).
fn report(
    ui: &mut Ui,
    plan_id: &str,
    refs: &[crate::plan::approval::DeletedRef],
    (restored, already): (usize, usize),
    logged: bool,
    elsewhere: Option<serde_json::Value>,
) -> Result<u8> {
    if ui.json {
        let mut doc = serde_json::json!({
            "plan_id": plan_id,
            "restored": restored,
            "already_present": already,
            "recorded_in_log": logged,
        });
        if let Some(e) = elsewhere {
            doc["applied_elsewhere"] = e;
        }
        ui.json_doc(&doc)?;
        return Ok(0);
    }
    let short = crate::render::view::short_id(plan_id);
    let how = match elsewhere {
        Some(_) => " (applied in another clone)",
        None => "",
    };
    writeln!(
        ui.out(),
        "Rolled back plan {short}{how}: restored {restored} branches ({already} already present)."
    )?;
    if !logged {
        writeln!(ui.out(), "  not recorded in the audit log: the log is broken")?;
    }
    for r in refs {
        writeln!(
            ui.out(),
            "  {} at {}",
            safe(&r.refname),
            &r.oid[..12.min(r.oid.len())]
        )?;
    }
    Ok(0)
}

/// A plan applied in another clone, as the team remote's ledger says: its receipt verified
/// as an apply's replay is (the plan published there, its consumed marker signed by a key of
/// its executor, the receipt signed by that key).
struct Elsewhere {
    id: String,
    remote: crate::store::published::Remote,
    loaded: crate::planfile::Loaded,
    receipt: crate::plan::approval::Receipt,
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

    fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "remote": self.remote.name,
            "url": self.remote.url,
            "executor": self.receipt.executor,
            "key": self.receipt.key,
            "applied_at": crate::text::rfc3339(self.receipt.applied_at),
            "deleted": self.receipt.deleted,
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
    let result =
        crate::execute::remote_result(found.receipt.as_ref()?, &marker, &loaded.plan.plan_hash, true).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&result).ok()?;
    let receipt = serde_json::from_value(doc.get("receipt")?.clone()).ok()?;
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
fn restore_elsewhere(ctx: &Ctx, ui: &mut Ui, ex: &Executor, e: &Elsewhere, logged: bool) -> Result<u8> {
    let details = serde_json::json!({ "applied_elsewhere": e.details() });
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
    let planned = |r: &crate::plan::approval::DeletedRef| {
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
    let restored = ex
        .restore_published(&e.id, &url, &e.receipt.deleted)
        .map_err(|err| err.with_details(details.clone()))?;
    report(
        ui,
        &e.loaded.plan_id,
        &e.receipt.deleted,
        restored,
        logged,
        Some(e.details()),
    )
}
