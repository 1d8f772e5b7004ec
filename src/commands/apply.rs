//! `guardctl apply PLAN`: apply exactly the approved plan (docs/guide.md "Safety model";
//! `engine::apply`), then print its receipt, or the recorded one when the plan was applied
//! before, here or in another clone (a replay, which changes nothing).

use crate::context::Ctx;
use crate::engine::apply::{ApplyRequest, ConsumedOn, DEFAULT_WAIT, How, ReplayedFrom, parse_wait};
use crate::error::Result;
use crate::render::receipt::{AppliedDoc, applied};
use crate::text::safe;
use crate::ui::Ui;

/// Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or
/// changed policy; backs up before it deletes; idempotent on replay.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: crate::gate::Target,

    /// When another clone has consumed the plan and its receipt is not published yet: how
    /// long to wait for it, e.g. 30s, 10m (0: do not wait)
    #[arg(long, value_name = "DUR", value_parser = parse_wait, default_value = DEFAULT_WAIT)]
    pub wait: std::time::Duration,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let request = ApplyRequest {
        target: args.target,
        wait: args.wait,
    };
    let outcome = crate::engine::apply::apply(ctx, ui, &request);
    ctx.report_published(ui);
    let outcome = outcome?;
    match &outcome.how {
        How::Replayed(ReplayedFrom::Remote(remote)) => ui.notice(&format!(
            "this plan was applied in another clone (consumed on remote `{}`); printing its published receipt (nothing was changed here)",
            safe(remote)
        )),
        How::Replayed(ReplayedFrom::ThisClone) => {
            ui.notice("this plan was already applied; printing the recorded result (nothing was changed now)")
        }
        How::Applied | How::Unverified => {}
    }
    if ui.json {
        // The recorded document, and whether this run applied it or found it applied before.
        ui.json_doc(&AppliedDoc {
            consumed_on: outcome.consumed_on.map(ConsumedOn::as_str),
            envelope: &outcome.envelope,
            receipt: &outcome.receipt,
            replayed: outcome.replayed(),
        })?;
    } else {
        let text = applied(
            &outcome.receipt,
            &outcome.plan_id,
            outcome.replayed(),
            outcome.consumed_on == Some(ConsumedOn::Clone),
            outcome.command,
        );
        ui.out().write_all(text.as_bytes())?;
    }
    match outcome.unverified() {
        Some(e) => Err(e),
        None => Ok(0),
    }
}
