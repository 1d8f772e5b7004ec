//! `guardctl log [--verify]`: the audit trail, checked. Names the first bad entry and exits 65
//! (the contract's code for tampered input) when the log is broken. Never mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::store::Store;
use crate::store::audit::{self, Break, Record};
use crate::text::safe;
use crate::ui::Ui;

/// Show the audit trail and check it.
///
/// Always checked: every entry is signed by the key that acted, chains to the one before, and
/// the last is the entry refs/guardctl/audit names (so truncating, deleting or rewriting the
/// log shows). With --verify, also: each entry's key speaks for the principal it names (a
/// receipt's for its executor), per the trusted identity sources; each receipt's approvers
/// are backed by their approvals; and every apply that guardctl's state, a backup ref or a
/// receipt published on the team remote knows of is in the log.
/// A broken log exits 65, naming the first bad entry.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also check each entry's key against the trusted identities, each receipt's approvers,
    /// and that every apply the state, the backups and the team remote know of is in the log
    #[arg(long)]
    pub verify: bool,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let path = store.audit_path();
    let log = audit::read(repo, &path)?;
    let mut brk = log.brk.clone();
    if args.verify && brk.is_none() {
        let (signers, _) = ctx.allowed_signers()?;
        ctx.report_signers(ui, true)?;
        brk = audit::check_trust(&log.records, &signers);
        for other in [
            missing_receipt(&store, &log.records)?,
            crate::evidence::check_local(&log.records, &store, repo, &signers)?,
            published_receipts(ctx, ui, &store, &log.records, &signers)?,
        ] {
            brk = crate::evidence::earliest(brk, other);
        }
    }
    if let (true, Some(b)) = (ui.json, &brk) {
        // One JSON document: the error, with the entries that can be trusted.
        return Err(
            audit::broken(&path, b).with_details(serde_json::json!({"break": b, "entries": log.records}))
        );
    }
    if ui.json {
        ui.json_doc(&serde_json::json!({
            "entries": log.records,
            "intact": brk.is_none(),
            "verified": args.verify && brk.is_none(),
            "break": brk,
            "pending": log.pending,
        }))?;
    } else {
        for e in &log.records {
            let plan = e
                .plan_id
                .as_deref()
                .map(crate::render::view::short_id)
                .unwrap_or_default();
            let who = e.principal.as_deref().map(safe).unwrap_or_default();
            writeln!(
                ui.out(),
                "{:>4} {} {:<8} {plan} {who} {}",
                e.seq,
                e.time,
                e.event,
                safe(&e.detail)
            )?;
        }
        if brk.is_none() {
            let what = if args.verify {
                "; every key speaks for its principal and every receipt is in the log"
            } else {
                ""
            };
            writeln!(
                ui.out(),
                "{} entries, signed, chained and anchored by {}{what}.",
                log.records.len(),
                audit::ANCHOR_REF
            )?;
        }
    }
    if log.pending && brk.is_none() {
        ui.notice(
            "the last entry's append was interrupted before its anchor moved; the next entry completes it",
        );
    }
    match brk {
        None => Ok(0),
        Some(b) => Err(audit::broken(&path, &b)),
    }
}

/// The first receipt the team remote published as an entry of this log that the log does
/// not have (`evidence::unlogged_published`). A remote that cannot be read is said, not a
/// break: the local checks still stand.
fn published_receipts(
    ctx: &Ctx,
    ui: &mut Ui,
    store: &Store,
    records: &[Record],
    signers: &crate::sign::AllowedSigners,
) -> Result<Option<Break>> {
    match ctx.published_all() {
        Ok(None) => Ok(None),
        Ok(Some(snapshot)) => {
            let last_step = |id: &str| store.journal_steps(id).unwrap_or_default().last().copied();
            Ok(crate::evidence::earliest(
                crate::evidence::unlogged_published(records, &snapshot, signers)?,
                crate::evidence::unlogged_consumed(records, &snapshot, signers, &last_step)?,
            ))
        }
        Err(e) => {
            ui.warn(&format!(
                "the log was not compared with the receipts published on the team remote: {}",
                e.chain()
            ));
            Ok(None)
        }
    }
}

/// The first receipt in guardctl's state that is not an entry of the log (an apply whose
/// record was removed), at the place the receipt names.
fn missing_receipt(store: &Store, records: &[Record]) -> Result<Option<Break>> {
    let logged: std::collections::HashSet<&str> = records.iter().map(|r| r.payload.as_str()).collect();
    let mut first: Option<Break> = None;
    for id in store.plan_ids()? {
        let Some(bytes) = store.read_file(&id, "receipt.json")? else {
            continue;
        };
        let (payload, place) = match serde_json::from_slice::<crate::plan::envelope::Envelope>(&bytes) {
            Ok(env) => {
                let place = crate::plan::envelope::decode_payload(&env.payload)
                    .ok()
                    .and_then(|p| serde_json::from_slice::<crate::plan::approval::Receipt>(&p).ok())
                    .and_then(|r| r.audit)
                    .map(|a| a.seq);
                (env.payload, place)
            }
            Err(_) => (String::new(), None),
        };
        if logged.contains(payload.as_str()) {
            continue;
        }
        let b = Break {
            line: place.unwrap_or(records.len() as u64 + 1),
            reason: format!(
                "the receipt of plan sha256:{id} is not in the log (its entry was removed or replaced)"
            ),
        };
        if first.as_ref().is_none_or(|f| b.line < f.line) {
            first = Some(b);
        }
    }
    Ok(first)
}
