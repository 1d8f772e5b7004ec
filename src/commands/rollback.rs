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
fn resolve(ctx: &Ctx, store: &Store, arg: &str) -> Result<String> {
    if Path::new(arg).is_file() {
        return Ok(crate::planfile::load(Path::new(arg))?.id_hex().to_string());
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
        [one] => Ok(one.clone()),
        [] => Err(applied_elsewhere(ctx, &hex).unwrap_or_else(|| {
            Error::usage(format!("no applied plan has id {}", safe(arg))).with_hint("see `guardctl log`")
        })),
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
    let id = resolve(ctx, &store, &args.plan)?;
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
        return Err(applied_elsewhere(ctx, &id).unwrap_or_else(|| {
            Error::usage(format!(
                "plan sha256:{id} was never applied here: there is nothing to restore"
            ))
        }));
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
    let (restored, already) = ex.rollback(&id, &image)?;
    if ui.json {
        ui.json_doc(&serde_json::json!({
            "plan_id": image.plan_id,
            "restored": restored,
            "already_present": already,
            "recorded_in_log": broken_log.is_none(),
        }))?;
    } else {
        let short = crate::render::view::short_id(&image.plan_id);
        writeln!(
            ui.out(),
            "Rolled back plan {short}: restored {restored} branches ({already} already present)."
        )?;
        if broken_log.is_some() {
            writeln!(ui.out(), "  not recorded in the audit log: the log is broken")?;
        }
        for r in &image.refs {
            writeln!(
                ui.out(),
                "  {} at {}",
                safe(&r.refname),
                &r.oid[..12.min(r.oid.len())]
            )?;
        }
    }
    Ok(0)
}

/// The refusal (64) of a rollback of a plan applied in another clone, when the team remote
/// holds its receipt: verified as an apply's replay is (the plan published there, its
/// consumed marker signed by a key of its executor, the receipt signed by that key), it says
/// who applied it, when, and which refs at which ids, so that whoever has to undo it knows
/// where to run `rollback` or what to push back. `None` when the remote cannot be read or
/// holds no receipt that verifies: the caller's own error stands.
fn applied_elsewhere(ctx: &Ctx, hex: &str) -> Option<Error> {
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
    let receipt: crate::plan::approval::Receipt = serde_json::from_value(doc.get("receipt")?.clone()).ok()?;
    let remote = &snapshot.remote;
    Some(
        Error::usage(format!(
            "plan sha256:{id} was applied in another clone, not here: its receipt on remote `{}` ({}) says {} applied it at {} with key {}, deleting {} refs",
            safe(&remote.name),
            safe(&remote.url),
            safe(&receipt.executor),
            crate::text::rfc3339(receipt.applied_at),
            safe(&receipt.key),
            receipt.deleted.len()
        ))
        .with_hint(format!(
            "run `guardctl rollback sha256:{id}` in the clone that applied it (its before-image and backup ref are there); if that clone is gone, the deleted refs and their ids are in this error's details (`guardctl --json rollback ...`): push each back with `git push <remote> <id>:<ref>` from a clone that still has the commit"
        ))
        .with_details(serde_json::json!({
            "applied_elsewhere": {
                "remote": remote.name,
                "url": remote.url,
                "executor": receipt.executor,
                "key": receipt.key,
                "applied_at": crate::text::rfc3339(receipt.applied_at),
                "deleted": receipt.deleted,
            }
        })),
    )
}
