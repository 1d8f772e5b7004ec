//! `recover` on its own: the session's recovery (finish or roll back every interrupted apply
//! or rollback, from its journal and the repository's real state), with what it did returned
//! instead of announced. `apply` and `rollback` run the same recovery first
//! ([`super::session`]).

use super::session::{AuditLog, Notices, Session, Signer};
use crate::context::Ctx;
use crate::error::Result;
use crate::store::recovered::Recovered;
use crate::ui::Ui;

/// Recover whatever was interrupted (there is nothing to choose).
#[derive(Debug, Default)]
pub struct RecoverRequest {}

/// Recover, and publish what was recovered; the plans settled, in order.
pub fn recover(ctx: &Ctx, ui: &mut Ui, _request: &RecoverRequest) -> Result<Vec<Recovered>> {
    let store = super::session::store(ctx)?;
    let checked = Session::lock(ctx, &store)?.check_log(ui, AuditLog::MustBeIntact)?;
    // Without a key, what needs none is still recovered (an apply abandoned, a rollback
    // finished); a receipt needs the key that consumed the plan.
    let key = ctx.unlocked_signing_key(ui).ok();
    let principal = match &key {
        Some(k) => Some(ctx.require_principal(k, crate::plan::approval::APPLY_NAMESPACE, "recover")?),
        None => None,
    };
    let session = checked.begin(
        ui,
        Signer {
            key: key.as_ref(),
            principal,
        },
        Notices::Quiet,
    )?;
    Ok(session.recovered().to_vec())
}
