//! `guardctl reject PLAN`: a signed veto. Any valid rejection blocks `apply`. Recorded in the
//! plan file and, run inside the plan's repository, in its guardctl state too, so removing it
//! from the file does not lift it. `reject --withdraw` lifts the caller's own rejections
//! (`engine::review`).

use crate::context::Ctx;
use crate::engine::review::DecisionRequest;
use crate::error::Result;
use crate::plan::approval::Decision;
use crate::ui::Ui;
use std::path::PathBuf;

/// Record a signed rejection of the plan; any valid rejection blocks apply.
///
/// The rejection goes into the plan file and, when run inside the plan's repository, into
/// guardctl's state there (so deleting it from the file does not lift it); with --publish
/// (the default for a published plan named by its id, or when `guardctl.remote` is set) on
/// the team remote too, where every clone's `apply` sees it. Only a signed
/// withdrawal by the same principal (`--withdraw`), or planning again, lifts it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
    #[arg(value_hint = clap::ValueHint::FilePath)]
    pub plan: PathBuf,
    /// Why the plan is rejected
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    /// Withdraw your own earlier rejection(s) of this plan instead (signed, like a rejection)
    #[arg(long)]
    pub withdraw: bool,
    #[command(flatten)]
    pub publish: super::approve::PublishArgs,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let request = DecisionRequest {
        plan: args.plan,
        decision: if args.withdraw {
            Decision::Withdraw
        } else {
            Decision::Reject
        },
        comment: args.comment,
        out: None,
        groups: Vec::new(),
        publish: args.publish.choice(),
    };
    // A veto is always safe to record: the plan is shown, no confirmation asked.
    let r = crate::engine::review::decide(ctx, ui, request, &mut |ui, presented| {
        super::approve::show(ui, presented)
    })
    .and_then(|d| super::approve::print(ui, &d));
    ctx.report_published(ui);
    r
}
