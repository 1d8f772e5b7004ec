//! The audit trail, read and checked: every entry signed, chained and anchored; with
//! `verify`, also each entry's key against the trusted identities, each receipt's approvers
//! against their approvals, and every apply this clone's state, its backups and the team
//! remote know of against the log (`evidence`). Never mutates.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::audit::{self, Break, Record};
use crate::ui::Ui;
use std::path::PathBuf;

/// How far to check.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogRequest {
    /// Also the trust, approval and completeness checks of `log --verify`.
    pub verify: bool,
}

/// The log as read and checked.
pub struct AuditTrail {
    /// The entries that can be trusted (every one up to the first break).
    pub records: Vec<Record>,
    /// Where and why the log breaks, when it does.
    pub brk: Option<Break>,
    /// The last entry's append was interrupted before its anchor moved.
    pub pending: bool,
    /// Whether the `verify` checks ran.
    pub verify: bool,
    path: PathBuf,
}

impl AuditTrail {
    /// The error a broken log is (65, naming the first bad entry).
    pub fn broken(&self) -> Option<Error> {
        self.brk.as_ref().map(|b| audit::broken(&self.path, b))
    }
}

/// Read the audit log and check it; a break is in the outcome, not an error (the entries
/// before it are still shown).
pub fn log(ctx: &Ctx, ui: &mut Ui, request: &LogRequest) -> Result<AuditTrail> {
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let path = store.audit_path();
    let log = audit::read(repo, &path)?;
    let mut brk = log.brk.clone();
    if request.verify && brk.is_none() {
        let (signers, _) = ctx.allowed_signers()?;
        ctx.report_signers(ui, true)?;
        brk = audit::check_trust(&log.records, &signers);
        super::session::say_retired(ctx, ui, &audit::retired(&log.records, &signers))?;
        for other in [
            missing_receipt(&store, &log.records)?,
            crate::evidence::check_local(&log.records, &store, repo, &signers)?,
            published_receipts(ctx, ui, &store, &log.records, &signers)?,
        ] {
            brk = crate::evidence::earliest(brk, other);
        }
    }
    Ok(AuditTrail {
        records: log.records,
        brk,
        pending: log.pending,
        verify: request.verify,
        path,
    })
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
