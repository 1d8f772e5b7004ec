//! `guardctl rollback PLAN_OR_ID`: restore what an applied plan removed, from its
//! before-image (`engine::rollback`): every branch at its old object id (compare-and-swap:
//! only where the name is free) and its config. Running it twice is harmless.

use crate::context::Ctx;
use crate::engine::rollback::RollbackRequest;
use crate::error::Result;
use crate::render::rollback::{ElsewhereView, RollbackView, human};
use crate::ui::Ui;

/// Restore the branches and config an applied plan deleted, from its backups.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The applied plan file, or its id (`sha256:<hex>`, or a unique hex prefix of 8+ digits)
    #[arg(value_name = "PLAN_OR_ID", value_hint = clap::ValueHint::FilePath)]
    pub plan: String,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let done = crate::engine::rollback::rollback(ctx, ui, &RollbackRequest { plan: args.plan })?;
    let view = RollbackView {
        already_present: done.already_present,
        applied_elsewhere: done
            .elsewhere
            .as_ref()
            .map(|e| ElsewhereView::of(&e.remote, &e.url, &e.receipt)),
        plan_id: &done.plan_id,
        recorded_in_log: done.logged,
        restored: done.restored,
        refs: &done.refs,
    };
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        ui.out().write_all(human(&view).as_bytes())?;
    }
    Ok(0)
}
