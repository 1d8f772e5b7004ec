//! `guardctl gc`: remove the backups of applied plans whose retention has passed. A backup
//! younger than its retention is never touched.

use crate::context::Ctx;
use crate::error::Result;
use crate::repo::mutate::RefOp;
use crate::store::Store;
use crate::ui::Ui;

/// Remove before-images (backup refs) past their retention.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let _lock = store.lock()?;
    store.audit_intact(repo, &ctx.allowed_signers()?.0)?;
    let mut removed = Vec::new();
    // Each removal is recorded in the audit log, signed by the caller's key (looked up when
    // there is something to remove).
    let mut key = None;
    for id in store.plan_ids()? {
        // One unreadable before-image (damaged, or from an older guardctl) must not stop the
        // collection of the others; it is never collected, since its backup cannot be named.
        let image = match store.before_image(&id) {
            Ok(Some(image)) => image,
            Ok(None) => continue,
            Err(e) => {
                ui.warn(&format!(
                    "skipping plan sha256:{id}: its before-image cannot be read ({}); nothing of it is removed",
                    e.message
                ));
                continue;
            }
        };
        let expires = image.created_at + time::Duration::days(i64::from(image.retention_days));
        if ctx.now < expires || store.read_file(&id, "collected")?.is_some() {
            continue;
        }
        // Compare-and-swap: a backup ref that someone moved is left alone.
        let ops: Vec<RefOp> = image
            .backup_ref
            .as_ref()
            .zip(image.backup_commit.as_ref())
            .filter(|(r, commit)| repo.ref_target(r).map(|o| o.to_string()).as_ref() == Some(*commit))
            .map(|(r, commit)| RefOp::Delete {
                refname: r.clone(),
                old: commit.clone(),
            })
            .into_iter()
            .collect();
        if key.is_none() {
            let k = ctx.signing_key(ui)?;
            ctx.require_principal(&k, crate::plan::approval::APPLY_NAMESPACE, "gc")?;
            key = Some(k);
        }
        repo.ref_transaction(&ops)?;
        store.write_file(&id, "collected", b"collected\n")?;
        let detail = format!(
            "removed the backup of {} branches past {} days",
            image.refs.len(),
            image.retention_days
        );
        if let Some(key) = &key {
            store.audit(
                repo,
                key,
                crate::store::audit::Event {
                    now: ctx.now,
                    event: "gc",
                    plan_id: Some(&image.plan_id),
                    principal: None,
                    detail: &detail,
                },
            )?;
        }
        removed.push((image.plan_id, image.refs.len()));
    }
    if ui.json {
        let items: Vec<_> = removed
            .iter()
            .map(|(p, n)| serde_json::json!({"plan_id": p, "refs": n}))
            .collect();
        ui.json_doc(&serde_json::json!({"collected": items}))?;
    } else if removed.is_empty() {
        writeln!(
            ui.out(),
            "Nothing to collect: every backup is within its retention."
        )?;
    } else {
        for (p, n) in &removed {
            writeln!(
                ui.out(),
                "Removed the backup of {n} branches of plan {}.",
                crate::render::view::short_id(p)
            )?;
        }
    }
    Ok(0)
}
