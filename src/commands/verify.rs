//! `guardctl verify PLAN`: every check `apply` makes, in the same order, without mutating
//! anything; the same exit code `apply` would give.

use crate::context::Ctx;
use crate::error::Result;
use crate::render::view::short_id;
use crate::text::safe;
use crate::ui::Ui;

/// Run every check apply runs (integrity, expiry, principal, approvals, policy, drift)
/// without changing anything; exits with the code apply would give.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: crate::gate::Target,
}

/// A plan that passed every check `apply` makes.
pub struct Verified {
    pub cleared: crate::gate::Cleared,
    /// Already applied: `apply` would print its recorded result.
    pub consumed: bool,
}

/// Every check `apply` makes, with the key in use as the one applying; nothing is printed.
pub fn check(args: &Args, ctx: &Ctx, ui: &mut Ui) -> Result<Verified> {
    let key = ctx.signing_key(ui)?;
    ctx.report_signers(ui, !ui.json)?;
    let mut cleared = crate::gate::preflight(ctx, &args.target, Some(&key))?;
    cleared.forget_payload();
    let store = crate::store::Store::new(ctx.repo()?.state_dir());
    // apply refuses to act where its audit log is broken: so does verify (reading only).
    store.audit_intact(ctx.repo()?, &ctx.allowed_signers()?.0)?;
    let consumed = crate::gate::consumed(&store, cleared.loaded.id_hex())?;
    if consumed {
        // What apply would print must verify here too (a forged record is 16 for both).
        crate::execute::recorded(&store, cleared.loaded.id_hex(), &ctx.allowed_signers()?.0)?;
    } else {
        crate::gate::drift(ctx, &cleared.loaded)?;
    }
    Ok(Verified { cleared, consumed })
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let checked = check(&args, ctx, ui);
    super::finish(ctx, ui, checked, |v, ui| ui.json_doc(&json(v, ctx)?), human)
}

/// `verify --json`'s document.
fn json(v: &Verified, ctx: &Ctx) -> Result<serde_json::Value> {
    let cleared = &v.cleared;
    Ok(serde_json::json!({
        "plan_id": cleared.loaded.plan_id,
        "ok": true,
        "already_applied": v.consumed,
        "allowed_signers": ctx.allowed_signers_source()?.map(|s| serde_json::json!({"location": s.location, "source": s.how})),
        "approved_by": cleared.report.approved_by,
        "groups": cleared.report.groups,
        "comments": cleared.report.comments,
    }))
}

/// What `verify` tells a person.
fn human(v: &Verified, ui: &mut Ui) -> Result<()> {
    let Verified { cleared, consumed } = v;
    let id = &cleared.loaded.plan_id;
    let what = if *consumed {
        "already applied; `apply` would print its receipt"
    } else {
        "`apply` would proceed"
    };
    writeln!(
        ui.out(),
        "Plan {} passes every check (approved by {}): {what}.",
        short_id(id),
        cleared
            .report
            .approved_by
            .iter()
            .map(|p| safe(p))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if cleared.report.groups.len() > 1 || cleared.loaded.plan.review.iter().any(|g| !g.from.is_empty()) {
        for g in &cleared.report.groups {
            writeln!(
                ui.out(),
                "  {:<16} {} of {} approved: {}",
                safe(&g.name),
                g.approved_by.len(),
                g.required,
                g.approved_by
                    .iter()
                    .map(|p| safe(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
    }
    for c in &cleared.report.comments {
        writeln!(
            ui.out(),
            "  {} ({}): {}",
            safe(&c.principal),
            c.decision,
            safe(&c.comment)
        )?;
    }
    Ok(())
}
