//! `guardctl inbox`: the plans published on the team remote that still wait, what each needs
//! from which review group, and which of them the key in use may approve (`engine::inbox`).

use crate::context::Ctx;
use crate::error::Result;
use crate::ui::Ui;

/// List the plans published on the team remote that are neither applied nor expired: what
/// each still needs from which review group, and whether your key may approve it.
///
/// The team remote is the one `guardctl.remote` names in system or global git config, else
/// origin. Published approvals and rejections count as they would in `apply`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let v = crate::engine::inbox::inbox(ctx, ui);
    super::finish_view(ctx, ui, v, crate::render::human::render_inbox)
}
