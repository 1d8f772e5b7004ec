//! `guardctl wait PLAN`: block until a person decides on the plan (`engine::wait`), for an
//! agent that planned and must not apply before the approval, nor run the command itself.

use crate::context::Ctx;
use crate::engine::status::Standing;
use crate::engine::wait::WaitRequest;
use crate::engine::wait::Waited;
use crate::error::{Error, Kind, Result};
use crate::render::view::rfc3339;
use crate::render::wait::{MissingView, TIMED_OUT, WaitView};
use crate::ui::Ui;
use std::path::PathBuf;

/// Wait until the plan is approved (exit 0), rejected (12) or expired (11), or the time
/// allowed runs out (75).
///
/// Reads the plan's standing as `verify` counts approvals and rejections — on the plan file,
/// and on the team remote for a published plan (named by id or prefix) — again and again,
/// pausing longer between looks (up to 2s for a file, 15s for a published plan). Also final:
/// already applied (0), used up by an apply refused on drift (10), an interrupted apply
/// (16). Read-only. `--json` prints the final standing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
    #[arg(value_hint = clap::ValueHint::FilePath)]
    pub plan: PathBuf,
    /// How long to wait before giving up (exit 75), e.g. 30s, 10m, 2h
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub timeout: String,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let timeout =
        crate::duration::parse(&args.timeout).map_err(|e| Error::usage(format!("--timeout: {e}")))?;
    let (repo, key, signers) = ctx.flags();
    let fresh = || Ctx::new(repo.clone(), key.clone(), signers.clone());
    let request = WaitRequest {
        plan: args.plan,
        timeout,
    };
    let waited = crate::engine::wait::wait(&fresh, ui, &request)?;
    let view = view(&waited);
    let code = exit_code(waited.standing);
    super::finish_view(ctx, ui, Ok(view), crate::render::wait::render)?;
    Ok(code)
}

fn view(w: &Waited) -> WaitView {
    let a = &w.status.approvals;
    WaitView {
        plan_id: w.status.plan_id.clone(),
        state: w.standing.as_str(),
        timed_out: w.timed_out,
        approved_by: a.approved_by.clone(),
        rejected_by: a.rejected_by.clone(),
        missing: a
            .groups
            .iter()
            .filter(|g| g.missing > 0)
            .map(|g| MissingView {
                group: g.name.clone(),
                missing: g.missing,
            })
            .collect(),
        expires_at: rfc3339(w.status.plan.expires_at),
        waited_secs: w.waited.as_secs(),
    }
}

/// The exit code: 0 approved (or already applied), 12 rejected, 11 expired, 10 used up by an
/// apply refused on drift, 16 interrupted, 75 (EX_TEMPFAIL) still awaiting approval when the
/// time ran out (docs/exit-codes.md).
fn exit_code(standing: Standing) -> u8 {
    match standing {
        Standing::Approved | Standing::Applied => 0,
        Standing::Rejected => Kind::Unapproved.exit_code(),
        Standing::Expired => Kind::Expired.exit_code(),
        Standing::Aborted => Kind::Drift.exit_code(),
        Standing::Interrupted => Kind::NeedsRecovery.exit_code(),
        Standing::AwaitingApproval => TIMED_OUT,
    }
}
