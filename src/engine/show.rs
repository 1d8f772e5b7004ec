//! Showing a plan to a reviewer: the verified plan file (or published plan) as the view
//! `show` prints, with its approvals, its policy's standing and, when asked, what changed
//! since an earlier plan of the same operation. Never mutates.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::render::view::{self, Paging, ViewInput};
use crate::ui::Ui;
use std::path::PathBuf;

/// Which plan, and which part of it.
#[derive(Debug, Clone, Default)]
pub struct ShowRequest {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a published plan.
    pub plan: PathBuf,
    /// Every affected and skipped resource.
    pub all: bool,
    /// Page N (from 1; a page past the end is a usage error).
    pub page: Option<u32>,
    /// An earlier plan of the same operation on the same repository.
    pub since: Option<PathBuf>,
}

/// The view `show` prints (also `show --json`'s document), built from the verified plan
/// file; warns when the trusted identities do not back the plan's planner.
pub fn show(ctx: &Ctx, ui: &mut Ui, request: &ShowRequest) -> Result<view::ShowView> {
    let loaded = crate::gate::load_plan(ctx, &request.plan)?;
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

    let paging = match (request.all, request.page) {
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
        show_all_skipped: request.all,
    });
    v.consumed_on = crate::gate::consumed_on(ctx, plan);
    // A page past the end is a mistake, not a request for the last page.
    if let Some(p) = request.page {
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
    if let Some(old_path) = &request.since {
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
