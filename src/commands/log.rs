//! `guardctl log`: the audit trail, with its hash chain verified; names the first broken link.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::render::escape::safe;
use crate::ui::Ui;

/// Show the audit trail and verify its hash chain.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let repo = ctx.repo()?;
    let path = repo.state_dir().join("audit.log");
    let (entries, brk) = crate::store::audit::read(&path)?;
    if ui.json {
        ui.json_doc(&serde_json::json!({"entries": entries, "intact": brk.is_none(), "break": brk}))?;
    } else {
        for e in &entries {
            let plan = e
                .plan_id
                .as_deref()
                .map(crate::render::view::short_id)
                .unwrap_or_default();
            let who = e.principal.as_deref().map(safe).unwrap_or_default();
            writeln!(
                ui.out(),
                "{:>4} {} {:<8} {plan} {who} {}",
                e.seq,
                e.time,
                e.event,
                safe(&e.detail)
            )?;
        }
        if brk.is_none() {
            writeln!(ui.out(), "{} entries; the hash chain is intact.", entries.len())?;
        }
    }
    match brk {
        None => Ok(0),
        Some(b) => Err(Error::internal(format!(
            "the audit log is broken at line {}: {}",
            b.line, b.reason
        ))
        .with_hint(format!(
            "{} has been altered; entries from line {} on cannot be trusted",
            path.display(),
            b.line
        ))),
    }
}
