//! `guardctl whoami`: the signing key in use, its fingerprint, whether it can sign now (and
//! why not), the principal it maps to for each kind of signature guardctl makes, and the
//! exact allowed-signers line that gives it one, with the file that line belongs in
//! (`engine::whoami`). Never mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::ui::Ui;

/// Show the key in use, its fingerprint, and the principal it maps to.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let view = crate::engine::whoami::whoami(ctx, ui)?;
    if ui.json {
        ui.json_doc(&view)?;
    } else {
        let color = ui.color;
        crate::render::whoami::render(&view, color, ui.out().writer()).map_err(crate::ui::output_error)?;
    }
    Ok(0)
}
