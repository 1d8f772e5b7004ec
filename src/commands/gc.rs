//! `guardctl gc`: remove the backups of applied plans whose retention has passed
//! (`engine::gc`). A backup younger than its retention is never touched.

use crate::context::Ctx;
use crate::engine::gc::GcRequest;
use crate::error::Result;
use crate::render::gc::{CollectedView, GcView, human};
use crate::ui::Ui;

/// Remove before-images (backup refs) past their retention.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let removed = crate::engine::gc::gc(ctx, ui, &GcRequest {})?;
    let view = GcView {
        collected: removed
            .into_iter()
            .map(|c| CollectedView {
                plan_id: c.plan_id,
                refs: c.refs,
            })
            .collect(),
    };
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        ui.out().write_all(human(&view).as_bytes())?;
    }
    Ok(0)
}
