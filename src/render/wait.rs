//! What `guardctl wait` prints of the decision it waited for: `wait --json`'s document and,
//! from the same view, the line a person (or agent) reads.

use serde::Serialize;
use std::io::{self, Write};

#[derive(Debug, Serialize)]
pub struct WaitView {
    pub plan_id: String,
    /// `approved`, `rejected`, `expired`, `applied`, `aborted`, `interrupted`, or
    /// `awaiting_approval` when the time allowed ran out.
    pub state: &'static str,
    pub timed_out: bool,
    pub approved_by: Vec<String>,
    pub rejected_by: Vec<String>,
    /// Review groups still missing approvals, and how many.
    pub missing: Vec<MissingView>,
    pub expires_at: String,
    pub waited_secs: u64,
}

#[derive(Debug, Serialize)]
pub struct MissingView {
    pub group: String,
    pub missing: u32,
}

/// `wait`'s exit code when the time allowed ran out (sysexits EX_TEMPFAIL: try again later).
pub const TIMED_OUT: u8 = 75;

pub fn render(v: &WaitView, _color: bool, out: &mut dyn Write) -> io::Result<()> {
    let who = |list: &[String]| {
        list.iter()
            .map(|p| crate::text::safe(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match v.state {
        "approved" => writeln!(
            out,
            "Plan {} is approved (by {}): apply it.",
            v.plan_id,
            who(&v.approved_by)
        ),
        "applied" => writeln!(out, "Plan {} is already applied.", v.plan_id),
        "rejected" => writeln!(
            out,
            "Plan {} is rejected (by {}): do not apply it; plan again only if the change is still wanted.",
            v.plan_id,
            who(&v.rejected_by)
        ),
        "expired" => writeln!(out, "Plan {} expired at {}: plan again.", v.plan_id, v.expires_at),
        "aborted" => writeln!(
            out,
            "Plan {} is used up (its apply was refused on drift): plan again.",
            v.plan_id
        ),
        "interrupted" => writeln!(
            out,
            "Plan {}'s apply was interrupted: a person runs `guardctl recover`.",
            v.plan_id
        ),
        _ => {
            let missing = v
                .missing
                .iter()
                .map(|m| format!("{} more from {}", m.missing, crate::text::safe(&m.group)))
                .collect::<Vec<_>>()
                .join(", ");
            writeln!(
                out,
                "Plan {} is still awaiting approval after {} ({missing}); run `guardctl wait` again.",
                v.plan_id,
                crate::duration::words(v.waited_secs)
            )
        }
    }
}
