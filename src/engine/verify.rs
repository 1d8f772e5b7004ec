//! Verifying a plan: every check `apply` makes, in the same order (`gate`), with the key in
//! use as the one applying, without mutating anything; the same refusal `apply` would give.

use crate::context::{Ctx, SignersSource};
use crate::error::Result;
use crate::gate::{Cleared, Target};
use crate::ui::Ui;

/// The plan and its detached approvals.
#[derive(Debug)]
pub struct VerifyRequest {
    pub target: Target,
}

/// A plan that passed every check `apply` makes.
pub struct Verified {
    pub cleared: Cleared,
    /// Already applied: `apply` would print its recorded result.
    pub consumed: bool,
    /// Where the trusted identities were read from (none configured: `None`).
    pub signers: Option<SignersSource>,
}

/// Every check `apply` makes, with the key in use as the one applying; prints only what the
/// checks warn about.
pub fn verify(ctx: &Ctx, ui: &mut Ui, request: &VerifyRequest) -> Result<Verified> {
    let key = ctx.signing_key(ui)?;
    ctx.report_signers(ui, !ui.json)?;
    let mut cleared = crate::gate::preflight(ctx, &request.target, Some(&key))?;
    cleared.forget_payload();
    let store = crate::store::Store::new(ctx.repo()?.state_dir());
    // apply refuses to act where its audit log is broken: so does verify (reading only).
    let retired = store.audit_intact(ctx.repo()?, &ctx.allowed_signers()?.0)?;
    super::session::say_retired(ctx, ui, &retired)?;
    let consumed = crate::gate::consumed(&store, cleared.loaded.id_hex())?;
    if consumed {
        // What apply would print must verify here too (a forged record is 16 for both).
        crate::execute::recorded(&store, cleared.loaded.id_hex(), &ctx.allowed_signers()?.0)?;
    } else {
        crate::gate::drift(ctx, &cleared.loaded)?;
    }
    Ok(Verified {
        cleared,
        consumed,
        signers: ctx.allowed_signers_source()?,
    })
}
