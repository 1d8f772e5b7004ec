//! `guardctl recover`: finish or roll back an interrupted apply or rollback, deterministically,
//! from the journal and the repository's real state. `apply` and `rollback` run it first.

use crate::context::Ctx;
use crate::error::Result;
use crate::execute::Executor;
use crate::store::Store;
use crate::ui::Ui;

/// Finish or abandon an interrupted apply or rollback, from its journal and the real refs.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let locked = store.lock(repo)?;
    store.audit_intact(repo, &ctx.allowed_signers()?.0)?;
    let key = ctx.signing_key(ui).ok();
    let principal = match &key {
        Some(k) => Some(ctx.require_principal(k, crate::plan::approval::APPLY_NAMESPACE, "recover")?),
        None => None,
    };
    let done = Executor {
        repo: locked,
        store: &store,
        now: ctx.now,
        key: key.as_ref(),
        principal,
        unlogged: false,
        published: ctx.fetched_published(),
    }
    .recover(key.as_ref(), &ctx.allowed_signers()?.0)?;
    let ids: Vec<String> = done.iter().map(|(id, _)| id.clone()).collect();
    crate::consume::publish_recovered(ctx, ui, &store, repo, &ids)?;
    if ui.json {
        let items: Vec<_> = done
            .iter()
            .map(|(id, o)| serde_json::json!({"plan_id": format!("sha256:{id}"), "outcome": o}))
            .collect();
        ui.json_doc(&serde_json::json!({"recovered": items}))?;
    } else if done.is_empty() {
        writeln!(
            ui.out(),
            "Nothing to recover: no apply or rollback was interrupted."
        )?;
    } else {
        for (id, outcome) in &done {
            writeln!(ui.out(), "Plan {}: {outcome}.", crate::render::view::short_id(id))?;
        }
    }
    Ok(0)
}
