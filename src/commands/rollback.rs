//! `guardctl rollback PLAN_OR_ID`: restore what an applied plan removed, from its
//! before-image: every branch at its old object id (compare-and-swap: only where the name is
//! free) and its config. Running it twice is harmless.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::render::escape::safe;
use crate::repo::mutate::RefOp;
use crate::store::Store;
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
        return Err(Error::usage(format!(
            "`{}` is neither a plan file nor a plan id",
            safe(arg)
        )));
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
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let id = resolve(&store, &args.plan)?;
    let _lock = store.lock()?;
    let Some(image) = store.before_image(&id)? else {
        return Err(Error::usage(format!(
            "plan sha256:{id} was never applied here: there is nothing to restore"
        )));
    };
    let mut ops = Vec::new();
    let mut already = 0;
    for r in &image.refs {
        if repo.ref_target(&r.backup).map(|o| o.to_string()) != Some(r.oid.clone()) {
            return Err(
                Error::internal(format!("the backup {} is missing or moved", safe(&r.backup)))
                    .with_hint("it may have been removed by `guardctl gc` after its retention"),
            );
        }
        match repo.ref_target(&r.refname) {
            None => ops.push(RefOp::Create {
                refname: r.refname.clone(),
                oid: r.oid.clone(),
            }),
            Some(now) if now.to_string() == r.oid => already += 1,
            Some(now) => {
                return Err(Error::new(
                    Kind::Drift,
                    format!(
                        "{} is now taken by another commit ({now}); nothing was restored",
                        safe(&r.refname)
                    ),
                )
                .with_hint("rename or delete that branch first, then run rollback again"));
            }
        }
    }
    repo.ref_transaction(&ops)?;
    let present = repo.branch_config()?;
    let restore: Vec<(String, String)> = image
        .config
        .iter()
        .filter(|(name, _)| !present.contains_key(name))
        .flat_map(|(_, entries)| entries.iter().cloned())
        .collect();
    repo.add_config(&restore)?;
    store.journal(&id, "rolled-back", ctx.now)?;
    let detail = format!("restored {} branches ({} already present)", ops.len(), already);
    crate::store::audit::append(
        &store.dir().join("audit.log"),
        ctx.now,
        "rollback",
        Some(&image.plan_id),
        None,
        &detail,
    )?;
    if ui.json {
        ui.json_doc(
            &serde_json::json!({"plan_id": image.plan_id, "restored": ops.len(), "already_present": already}),
        )?;
    } else {
        writeln!(
            ui.out(),
            "Rolled back plan {}: {detail}.",
            crate::render::view::short_id(&image.plan_id)
        )?;
        for op in &ops {
            if let RefOp::Create { refname, oid } = op {
                writeln!(ui.out(), "  + {} at {}", safe(refname), &oid[..12.min(oid.len())])?;
            }
        }
    }
    Ok(0)
}
