//! `guardctl reject PLAN`: a signed veto. Any valid rejection blocks `apply`. Recorded in the
//! plan file and, run inside the plan's repository, in its guardctl state too, so removing it
//! from the file does not lift it. `reject --withdraw` lifts the caller's own rejections.

use crate::context::Ctx;
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
    ctx.record_ledger_tips();
    // A veto is always safe to record: no confirmation prompt.
    let record = super::approve::Record {
        plan_path: &args.plan,
        decision: if args.withdraw {
            Decision::Withdraw
        } else {
            Decision::Reject
        },
        comment: args.comment,
        out: None,
        yes: true,
        groups: Vec::new(),
        publish: args.publish,
    };
    let r = super::approve::record(ctx, ui, record);
    ctx.report_published(ui);
    r
}
