//! `guardctl show [PLAN]`: render a plan for a reviewer (or as JSON). Never mutates.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::render::view::{self, Paging, ViewInput};
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
    #[arg(default_value = "plan.json")]
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
    let v = view(&args, ctx, ui);
    super::finish_view(ctx, ui, v, crate::render::human::render)
}

/// The view `show` prints (also `show --json`'s document), built from the verified plan file.
pub fn view(args: &Args, ctx: &Ctx, ui: &mut Ui) -> Result<view::ShowView> {
    let loaded = crate::gate::load_plan(ctx, &args.plan)?;
    let plan = &loaded.plan;
    ctx.report_signers(ui, true)?;

    // The payload's planner principal is the planner's own claim: say so when the
    // allowed-signers file does not back it.
    if let Some(claimed) = &plan.planner.principal {
        let (signers, source) = ctx.allowed_signers()?;
        let backed = crate::gate::planner_principals(&signers, &loaded, ctx.now);
        if source.is_some() && !backed.contains(claimed) {
            ui.warn(&format!(
                "the trusted identities do not confirm that the plan's key belongs to {} (at the plan's time and now)",
                crate::text::safe(claimed)
            ));
        }
    }

    let paging = match (args.all, args.page) {
        (true, _) => Paging::All,
        (false, Some(p)) => Paging::Page(p as usize),
        _ => Paging::Auto,
    };
    let mut v = view::build(ViewInput {
        plan,
        plan_id: &loaded.plan_id,
        approvals: crate::gate::approval_status(ctx, &loaded)?,
        policy: crate::gate::policy_status(ctx, plan),
        now: ctx.now,
        paging,
        show_all_skipped: args.all,
    });
    v.consumed_on = crate::gate::consumed_on(ctx, plan);
    // A page past the end is a mistake, not a request for the last page.
    if let Some(p) = args.page {
        let pages = v
            .exec
            .as_ref()
            .map_or(v.rows.pages, |x| x.pages.max(v.rows.pages));
        if p as usize > pages {
            return Err(Error::usage(format!(
                "there is no page {p}: the plan has {pages} page{}",
                if pages == 1 { "" } else { "s" }
            ))
            .with_details(serde_json::json!({"page": p, "pages": pages}))
            .with_hint(format!("pass --page 1 to {pages}, or --all")));
        }
    }
    if let Some(old_path) = &args.since {
        let old = crate::gate::load_plan(ctx, old_path)?;
        if old.plan.repository != plan.repository || old.plan.operation.kind() != plan.operation.kind() {
            return Err(Error::usage(format!(
                "{} is not a plan of the same operation on the same repository",
                old_path.display()
            )));
        }
        v.since = Some(crate::render::since::build(&old.plan, &old.plan_id, plan));
    }
    Ok(v)
}
