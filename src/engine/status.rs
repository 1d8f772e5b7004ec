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

/// Where a plan stands, in one word: what `plan_status` reports and `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Approvals are missing.
    AwaitingApproval,
    /// Every review group is approved: apply would proceed (unless the repository drifted).
    Approved,
    /// A valid rejection vetoes it.
    Rejected,
    /// Past `expires_at`.
    Expired,
    /// Applied here.
    Applied,
    /// Its apply was refused under the lock (drift): the plan is used up.
    Aborted,
    /// Its apply was interrupted: `guardctl recover` first.
    Interrupted,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::AwaitingApproval => "awaiting_approval",
            Standing::Approved => "approved",
            Standing::Rejected => "rejected",
            Standing::Expired => "expired",
            Standing::Applied => "applied",
            Standing::Aborted => "aborted",
            Standing::Interrupted => "interrupted",
        }
    }
}

/// A plan's standing.
pub struct PlanStatus {
    pub plan_id: String,
    pub plan: Plan,
    pub approvals: ApprovalsView,
    /// `None`: not used here (or not run inside a repository).
    pub used: Option<Used>,
}

impl PlanStatus {
    /// Where it stands at `now`: a use recorded here first, then a rejection (which no
    /// approval outweighs), expiry, and approvals.
    pub fn standing(&self, now: time::OffsetDateTime) -> Standing {
        match self.used {
            Some(Used::Applied) => Standing::Applied,
            Some(Used::Aborted) => Standing::Aborted,
            Some(Used::Interrupted) => Standing::Interrupted,
            None if !self.approvals.rejected_by.is_empty() => Standing::Rejected,
            None if now >= self.plan.expires_at => Standing::Expired,
            None if self.approvals.groups.iter().all(|g| g.missing == 0) => Standing::Approved,
            None => Standing::AwaitingApproval,
        }
    }
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
