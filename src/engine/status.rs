//! Where a plan stands (the MCP server's `plan_status`): the verified plan, its approvals as
//! `apply` would count them, and whether this clone has used it up. Never mutates and does
//! not check the repository for drift (`verify` does).

use crate::context::Ctx;
use crate::error::{Kind, Result};
use crate::plan::model::Plan;
use crate::render::view::ApprovalsView;
use std::path::Path;

/// What this clone's state says of the plan's one use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Used {
    /// Applied.
    Applied,
    /// Its apply was refused under the lock (drift): the plan is used up.
    Aborted,
    /// Its apply was interrupted: `recover` first.
    Interrupted,
}

/// A plan's standing.
pub struct PlanStatus {
    pub plan_id: String,
    pub plan: Plan,
    pub approvals: ApprovalsView,
    /// `None`: not used here (or not run inside a repository).
    pub used: Option<Used>,
}

/// The standing of the plan at `plan` (a file, or a published plan's id or prefix).
pub fn status(ctx: &Ctx, plan: &Path) -> Result<PlanStatus> {
    let loaded = crate::gate::load_plan(ctx, plan)?;
    let approvals = crate::gate::approval_status(ctx, &loaded)?;
    let used = match ctx.repo() {
        Ok(repo) => {
            let store = crate::store::Store::new(repo.state_dir());
            match crate::gate::consumed(&store, loaded.id_hex()) {
                Ok(true) => Some(Used::Applied),
                Ok(false) => None,
                Err(e) if e.kind == Kind::Drift => Some(Used::Aborted),
                Err(e) if e.kind == Kind::NeedsRecovery => Some(Used::Interrupted),
                Err(e) => return Err(e),
            }
        }
        Err(_) => None,
    };
    Ok(PlanStatus {
        plan_id: loaded.plan_id,
        plan: loaded.plan,
        approvals,
        used,
    })
}
