//! `guardctl recover`: finish or roll back an interrupted apply or rollback, deterministically,
//! from the journal and the repository's real state (`engine::recover`). `apply` and
//! `rollback` run it first.

use crate::context::Ctx;
use crate::engine::recover::RecoverRequest;
use crate::error::Result;
use crate::render::recovery::{RecoverView, human};
use crate::ui::Ui;

/// Finish or abandon an interrupted apply or rollback, from its journal and the real refs.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let done = crate::engine::recover::recover(ctx, ui, &RecoverRequest {})?;
    if ui.json {
        ui.json_doc(&RecoverView::of(&done))?;
    } else {
        ui.out().write_all(human(&done).as_bytes())?;
    }
    Ok(0)
}
