//! `guardctl apply PLAN`: apply exactly the approved plan (CONTRACT.md §4). Checks in the
//! contract's order, then under the repository lock: replay if consumed, drift, before-image
//! and journal, consumed marker, one compare-and-swap ref transaction, config removal,
//! observation of the effect, a signed receipt, the audit log.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPLY_NAMESPACE, DeletedRef, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::repo::mutate::RefOp;
use crate::sign::dsse;
use crate::store::{BeforeImage, Store};
use crate::ui::Ui;
use std::path::PathBuf;

/// Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or
/// changed policy; backs up before it deletes; idempotent on replay.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file
    pub plan: PathBuf,
    /// A detached approval file (repeatable)
    #[arg(long = "approval", value_name = "FILE")]
    pub approvals: Vec<PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let key = ctx.signing_key(ui)?;
    let cleared = crate::gate::preflight(ctx, &args.plan, &args.approvals, Some(&key))
        .inspect_err(|e| refusal(ctx, e, &args.plan))?;
    let loaded = &cleared.loaded;
    let plan = &loaded.plan;
    let id = loaded.id_hex().to_string();
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let _lock = store.lock()?;

    if store.is_consumed(&id) {
        return replay(&store, &id, ui);
    }
    crate::gate::drift(ctx, loaded)
        .inspect_err(|e| record_refusal(&store, ctx.now, e, Some(&loaded.plan_id)))?;

    let now = ctx.now;
    let ns = &plan.before_image.namespace;
    let deleted: Vec<DeletedRef> = plan
        .affected
        .iter()
        .map(|a| DeletedRef {
            refname: a.refname.clone(),
            oid: a.oid.clone(),
            backup: format!("{ns}/{id}/{}", a.refname),
        })
        .collect();
    let config: Vec<(String, Vec<(String, String)>)> = plan
        .affected
        .iter()
        .filter(|a| !a.config.is_empty())
        .map(|a| {
            (
                a.name().to_string(),
                a.config
                    .iter()
                    .map(|c| (c.key.clone(), c.value.clone()))
                    .collect(),
            )
        })
        .collect();
    let image = BeforeImage {
        plan_id: loaded.plan_id.clone(),
        created_at: now,
        retention_days: plan.before_image.retention_days,
        refs: deleted.clone(),
        config: config.clone(),
    };
    store.write_before_image(&id, &image)?;
    store.journal(&id, "before-image-written", now)?;
    store.mark_consumed(&id)?;
    store.journal(&id, "consumed", now)?;

    // Backups are created in the same all-or-nothing transaction as the deletions.
    let mut ops: Vec<RefOp> = deleted
        .iter()
        .map(|d| RefOp::Create {
            refname: d.backup.clone(),
            oid: d.oid.clone(),
        })
        .collect();
    ops.extend(deleted.iter().map(|d| RefOp::Delete {
        refname: d.refname.clone(),
        old: d.oid.clone(),
    }));
    if let Err(e) = repo.ref_transaction(&ops) {
        store.journal(&id, "aborted", now)?;
        let record = serde_json::json!({"kind": e.kind.as_str(), "message": e.message, "causes": e.causes});
        store.write_file(&id, "aborted.json", record.to_string().as_bytes())?;
        record_refusal(&store, now, &e, Some(&loaded.plan_id));
        return Err(e);
    }
    store.journal(&id, "refs-committed", now)?;
    let names: Vec<String> = config.iter().map(|(n, _)| n.clone()).collect();
    repo.remove_branch_sections(&names)?;
    store.journal(&id, "config-removed", now)?;

    let mismatches = observe(repo, &deleted, &names)?;
    let receipt = Receipt {
        plan_id: loaded.plan_id.clone(),
        plan_hash: plan.plan_hash.clone(),
        repository: plan.repository.clone(),
        executor: cleared.executor.clone().unwrap_or_default(),
        key: crate::sign::sshsig::fingerprint(&key.public),
        approved_by: cleared.report.approved_by.clone(),
        applied_at: now,
        deleted,
        config_removed: names.len(),
        verified: mismatches.is_empty(),
        mismatches,
    };
    let payload = serde_json::to_vec(&receipt)
        .map_err(|e| Error::internal("cannot encode the receipt").caused_by(e))?;
    let envelope = dsse::sign(RECEIPT_PAYLOAD_TYPE, APPLY_NAMESPACE, &payload, &key)
        .map_err(|e| Error::internal("applied, but cannot sign the receipt").caused_by(e))?;
    store.write_file(
        &id,
        "receipt.json",
        &serde_json::to_vec_pretty(&envelope).unwrap_or_default(),
    )?;
    store.write_file(
        &id,
        "result.txt",
        crate::render::receipt::human(&receipt).as_bytes(),
    )?;
    store.write_file(
        &id,
        "result.json",
        crate::render::receipt::json(&receipt, &envelope).as_bytes(),
    )?;
    store.journal(&id, "done", now)?;
    let detail = format!(
        "deleted {} branches; verified: {}",
        receipt.deleted.len(),
        receipt.verified
    );
    crate::store::audit::append(
        &store.dir().join("audit.log"),
        now,
        "apply",
        Some(&receipt.plan_id),
        Some(&receipt.executor),
        &detail,
    )?;
    drop(_lock);
    print_result(&store, &id, ui)?;
    if receipt.verified {
        Ok(0)
    } else {
        Err(Error::new(
            Kind::Unverified,
            "applied, but the observed effect differs from the plan",
        )
        .with_hint(format!(
            "inspect the mismatches above; `guardctl rollback {}` restores the backups",
            receipt.plan_id
        )))
    }
}

/// What is there now, compared with the planned effect.
fn observe(repo: &crate::repo::Repo, deleted: &[DeletedRef], config_names: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for d in deleted {
        if repo.ref_target(&d.refname).is_some() {
            out.push(format!("{} still exists", d.refname));
        }
        if repo.ref_target(&d.backup).map(|o| o.to_string()) != Some(d.oid.clone()) {
            out.push(format!("backup {} is not at {}", d.backup, d.oid));
        }
    }
    let config = repo.branch_config()?;
    out.extend(
        config_names
            .iter()
            .filter(|n| config.contains_key(*n))
            .map(|n| format!("config of branch {n} remains")),
    );
    Ok(out)
}

/// A consumed plan: print the recorded result byte for byte, or say why there is none.
fn replay(store: &Store, id: &str, ui: &mut Ui) -> Result<u8> {
    if store.read_file(id, "result.txt")?.is_some() {
        ui.notice("this plan was already applied; printing the recorded result (nothing was changed now)");
        print_result(store, id, ui)?;
        return Ok(0);
    }
    if let Some(bytes) = store.read_file(id, "aborted.json")? {
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        return Err(Error::new(
            Kind::Drift,
            format!(
                "this plan's apply was aborted and nothing was deleted: {}",
                v["message"].as_str().unwrap_or("")
            ),
        )
        .with_hint("a plan is applied at most once: re-run `guardctl plan`"));
    }
    Err(
        Error::new(Kind::NeedsRecovery, "an apply of this plan was interrupted")
            .with_hint("run `guardctl recover`"),
    )
}

fn print_result(store: &Store, id: &str, ui: &mut Ui) -> Result<()> {
    let name = if ui.json { "result.json" } else { "result.txt" };
    let bytes = store.read_file(id, name)?.unwrap_or_default();
    ui.out().write_all(&bytes)?;
    Ok(())
}

/// Record a refused apply in the audit log (before the lock is taken), when there is a
/// repository to record it in.
fn refusal(ctx: &Ctx, e: &Error, plan_path: &std::path::Path) {
    let Ok(repo) = ctx.repo() else { return };
    if repo.existing_identity().is_none() {
        return;
    }
    let store = Store::new(repo.state_dir());
    if let Ok(_lock) = store.lock() {
        let plan_id = crate::planfile::load(plan_path).ok().map(|l| l.plan_id);
        record_refusal(&store, ctx.now, e, plan_id.as_deref());
    }
}

/// Append a refusal to the audit log; the caller holds the store lock.
fn record_refusal(store: &Store, now: time::OffsetDateTime, e: &Error, plan_id: Option<&str>) {
    let detail = format!("{}: {}", e.kind.as_str(), e.message);
    let _ = crate::store::audit::append(
        &store.dir().join("audit.log"),
        now,
        "refusal",
        plan_id,
        None,
        &detail,
    );
}
