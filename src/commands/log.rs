//! `guardctl log [--verify]`: the audit trail, checked (`engine::log`). Names the first bad
//! entry and exits 65 (the contract's code for tampered input) when the log is broken. Never
//! mutates.

use crate::context::Ctx;
use crate::engine::log::LogRequest;
use crate::error::{Error, Result};
use crate::render::log::{BrokenLog, LogView};
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
    let trail = crate::engine::log::log(ctx, ui, &LogRequest { verify: args.verify })?;
    if let (true, Some(b), Some(e)) = (ui.json, &trail.brk, trail.broken()) {
        // One JSON document: the error, with the entries that can be trusted.
        let details = BrokenLog {
            brk: b,
            entries: &trail.records,
        };
        let details = serde_json::to_value(&details)
            .map_err(|e| Error::internal("cannot serialise the JSON output").caused_by(e))?;
        return Err(e.with_details(details));
    }
    let view = LogView {
        brk: trail.brk.as_ref(),
        entries: &trail.records,
        intact: trail.brk.is_none(),
        pending: trail.pending,
        verified: trail.verify && trail.brk.is_none(),
        verify: trail.verify,
    };
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        crate::render::log::render(&view, ui.out().writer()).map_err(crate::ui::output_error)?;
    }
    if trail.pending && trail.brk.is_none() {
        ui.notice(
            "the last entry's append was interrupted before its anchor moved; the next entry completes it",
        );
    }
    match trail.broken() {
        None => Ok(0),
        Some(e) => Err(e),
    }
}
