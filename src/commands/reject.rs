//! `guardctl reject PLAN`: a signed veto. Any valid rejection blocks `apply`.

use crate::context::Ctx;
use crate::error::Result;
use crate::plan::approval::Decision;
use crate::ui::Ui;
use std::path::PathBuf;

/// Record a signed rejection of the plan; any valid rejection blocks apply.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file
    pub plan: PathBuf,
    /// Why the plan is rejected
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    // A veto is always safe to record: no confirmation prompt.
    let record = super::approve::Record {
        plan_path: &args.plan,
        decision: Decision::Reject,
        comment: args.comment,
        out: None,
        yes: true,
        groups: Vec::new(),
    };
    super::approve::record(ctx, ui, record)
}
