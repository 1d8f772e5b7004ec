//! Waiting for a person's decision on a plan (`guardctl wait`, the MCP `wait_plan` tool): the
//! plan's standing is read again and again, as `plan_status` reads it (every approval and
//! rejection verified, local or published on the team remote), until it is final — approved,
//! rejected, expired, applied or used up — or the time allowed runs out. Read-only.
//!
//! Each look is a fresh run's view (a new `Ctx`: a new `now`, the team remote fetched again);
//! the pause between looks grows (a published plan's look is a fetch; a local file's is
//! cheap) and never passes the plan's expiry or the deadline.

use super::status::{PlanStatus, Standing};
use crate::context::Ctx;
use crate::error::{Kind, Result};
use crate::ui::Ui;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct WaitRequest {
    /// A plan file, or a published plan's id or prefix (as `show` takes it).
    pub plan: PathBuf,
    pub timeout: Duration,
}

pub struct Waited {
    pub status: PlanStatus,
    pub standing: Standing,
    /// The time allowed ran out with the plan still awaiting approval.
    pub timed_out: bool,
    pub waited: Duration,
    /// How many times the standing was read.
    pub looks: u32,
}

/// The first pause, and the longest for a local file and for a published plan.
const FIRST: Duration = Duration::from_millis(250);
const MAX_LOCAL: Duration = Duration::from_secs(2);
const MAX_PUBLISHED: Duration = Duration::from_secs(15);

/// Wait for `request.plan` to be decided. `ctx` makes each look's context.
pub fn wait(ctx: &dyn Fn() -> Ctx, ui: &mut Ui, request: &WaitRequest) -> Result<Waited> {
    let started = Instant::now();
    let deadline = started + request.timeout;
    let published = std::fs::symlink_metadata(&request.plan).is_err();
    let max = if published { MAX_PUBLISHED } else { MAX_LOCAL };
    let mut pause = FIRST;
    let mut looks = 0;
    let mut said = false;
    loop {
        let now_ctx = ctx();
        looks += 1;
        let status = match crate::engine::status::status(&now_ctx, &request.plan) {
            Ok(s) => s,
            // A look that fails for the network's or the disk's sake (not for the plan's) is
            // tried again while there is time; the first look's failure is the answer.
            Err(e) if e.kind == Kind::Internal && looks > 1 && Instant::now() < deadline => {
                ui.warn(&format!(
                    "could not read the plan's standing ({}); trying again",
                    e.message
                ));
                sleep_until(deadline, pause);
                pause = (pause * 2).min(max);
                continue;
            }
            Err(e) => return Err(e),
        };
        let standing = status.standing(now_ctx.now);
        let now = Instant::now();
        if standing != Standing::AwaitingApproval || now >= deadline {
            return Ok(Waited {
                timed_out: standing == Standing::AwaitingApproval,
                status,
                standing,
                waited: now - started,
                looks,
            });
        }
        if !said {
            ui.status(&format!(
                "Waiting for a decision on plan {} (expires {}; giving up after {}).",
                status.plan_id,
                crate::render::view::rfc3339(status.plan.expires_at),
                crate::duration::words(request.timeout.as_secs())
            ));
            said = true;
        }
        // Wake at expiry too: it is a final answer.
        let to_expiry = (status.plan.expires_at - now_ctx.now)
            .try_into()
            .unwrap_or(Duration::ZERO);
        sleep_until(deadline, pause.min(to_expiry + Duration::from_millis(100)));
        pause = (pause * 2).min(max);
    }
}

fn sleep_until(deadline: Instant, pause: Duration) {
    let left = deadline.saturating_duration_since(Instant::now());
    std::thread::sleep(pause.min(left));
}
