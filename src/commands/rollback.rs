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
fn resolve(store: &Store, arg: &str) -> Result<String> {
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
        [] => {
            Err(Error::usage(format!("no applied plan has id {}", safe(arg))).with_hint("see `guardctl log`"))
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
    let id = resolve(&store, &args.plan)?;
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
        return Err(Error::usage(format!(
            "plan sha256:{id} was never applied here: there is nothing to restore"
        )));
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
