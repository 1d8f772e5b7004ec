//! `guardctl verify PLAN`: every check `apply` makes, in the same order, without mutating
//! anything; the same exit code `apply` would give (`engine::verify`).

use crate::context::Ctx;
use crate::engine::verify::VerifyRequest;
use crate::error::Result;
use crate::render::verify::VerifyView;
use crate::ui::Ui;

/// Run every check apply runs (integrity, expiry, principal, approvals, policy, drift)
/// without changing anything; exits with the code apply would give.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: crate::gate::Target,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let request = VerifyRequest { target: args.target };
    let view = crate::engine::verify::verify(ctx, ui, &request).map(|v| {
        VerifyView::new(
            &v.cleared.loaded.plan,
            &v.cleared.loaded.plan_id,
            &v.cleared.report,
            v.consumed,
            v.signers.map(|s| (s.location, s.how)),
        )
    });
    super::finish_view(ctx, ui, view, crate::render::verify::render)
}
