//! `guardctl show [PLAN]`: render a plan for a reviewer (or as JSON). Never mutates.

use crate::context::Ctx;
use crate::engine::show::ShowRequest;
use crate::error::Result;
use crate::ui::Ui;
use std::path::PathBuf;

/// Render a plan: summary, branches, extremes, side effects, skipped branches.
///
/// Plans with more than 50 branches are summarised (counts by reason, a sample, the
/// extremes); `--all` lists every branch, `--page N` shows 50 at a time. The signature is
/// verified before anything in the plan is shown.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
    #[arg(default_value = "plan.json", value_hint = clap::ValueHint::FilePath)]
    pub plan: PathBuf,
    /// List every affected and skipped branch
    #[arg(long, conflicts_with = "page")]
    pub all: bool,
    /// Show page N (50 branches per page)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Show what changed against an earlier plan of the same operation
    #[arg(long, value_name = "OLD_PLAN")]
    pub since: Option<PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let request = ShowRequest {
        plan: args.plan,
        all: args.all,
        page: args.page,
        since: args.since,
    };
    let v = crate::engine::show::show(ctx, ui, &request);
    super::finish_view(ctx, ui, v, crate::render::human::render)
}
