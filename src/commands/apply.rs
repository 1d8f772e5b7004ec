//! `guardctl apply PLAN`: apply exactly the approved plan (CONTRACT.md §4). Checks in the
//! contract's order, then under the repository lock: recover any interrupted apply, replay if
//! consumed, then the journaled sequence in `execute`: drift (checked while git locks the refs
//! of the one compare-and-swap transaction), before-image, consumed marker, commit, config
//! removal, observation, signed receipt, audit.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::execute::Executor;
use crate::plan::approval::DeletedRef;
use crate::plan::model::{BACKUP_NAMESPACE, Operation};
use crate::render::escape::safe;
use crate::store::{BeforeImage, SavedTag, Store};
use crate::ui::Ui;

/// Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or
/// changed policy; backs up before it deletes; idempotent on replay.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: crate::gate::Target,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let applied = execute(&args, ctx, ui)?;
    let store = Store::new(ctx.repo()?.state_dir());
    if applied.replayed {
        ui.notice("this plan was already applied; printing the recorded result (nothing was changed now)");
    }
    print_result(&store, &applied.id, ui)?;
    if applied.unverified {
        Err(unverified(&applied.plan_id))
    } else {
        Ok(0)
    }
}

/// What an apply did: applied the plan now, or found it applied before (a replay, which
/// changes nothing). Its result is recorded in the store (`recorded_result`).
pub struct Applied {
    /// The plan id's hex digits (the store's name for it).
    pub id: String,
    pub plan_id: String,
    pub replayed: bool,
    /// This run applied the plan and the observed effect differs from it (exit 15). A
    /// replay never is: it exits 0 whatever the recorded receipt says.
    pub unverified: bool,
}

/// The error of an apply whose observed effect differs from the plan.
pub fn unverified(plan_id: &str) -> Error {
    Error::new(
        Kind::Unverified,
        "applied, but the observed effect differs from the plan",
    )
    .with_hint(format!(
        "inspect the mismatches above; `guardctl rollback {plan_id}` restores the backups"
    ))
}

/// The recorded result of an applied plan: `result.json` (`{"receipt", "envelope"}`, what
/// `guardctl --json apply` prints) or the human `result.txt`.
pub fn recorded_result(store: &Store, id: &str, json: bool) -> Result<Vec<u8>> {
    let name = if json { "result.json" } else { "result.txt" };
    Ok(store.read_file(id, name)?.unwrap_or_default())
}

/// Everything `apply` does but printing: the checks, recovery, then the journaled apply, or
/// nothing when the plan was applied before.
pub fn execute(args: &Args, ctx: &Ctx, ui: &mut Ui) -> Result<Applied> {
    let key = ctx.signing_key(ui)?;
    let cleared = crate::gate::preflight(ctx, &args.target, Some(&key))
        .inspect_err(|e| refusal(ctx, e, &args.target.plan))?;
    let loaded = &cleared.loaded;
    let plan = &loaded.plan;
    let id = loaded.id_hex().to_string();
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let _lock = store.lock()?;
    let ex = Executor {
        repo,
        store: &store,
        now: ctx.now,
    };
    for (plan_id, outcome) in ex.recover(Some(&key))? {
        ui.notice(&format!("recovered plan sha256:{plan_id}: {outcome}"));
    }

    if crate::gate::consumed(&store, &id)? {
        return Ok(Applied {
            id,
            plan_id: loaded.plan_id.clone(),
            replayed: true,
            unverified: false,
        });
    }
    let image = BeforeImage {
        plan_id: loaded.plan_id.clone(),
        plan_hash: plan.plan_hash.clone(),
        repository: plan.repository.clone(),
        executor: cleared.executor.clone().unwrap_or_default(),
        approved_by: cleared.report.approved_by.clone(),
        created_at: ctx.now,
        retention_days: plan.before_image.retention_days,
        remote: plan.operation.remote().map(String::from),
        backup_ref: (!plan.affected.is_empty()).then(|| format!("{BACKUP_NAMESPACE}/{id}")),
        backup_commit: None,
        refs: plan
            .affected
            .iter()
            .map(|a| DeletedRef {
                refname: a.refname.clone(),
                oid: a.oid.clone(),
            })
            .collect(),
        config: plan
            .affected
            .iter()
            .filter(|a| !a.config.is_empty())
            .map(|a| {
                (
                    a.name().to_string(),
                    a.config
                        .iter()
                        .map(|c| (c.key.clone(), c.value.clone()))
                        .collect(),
                )
            })
            .collect(),
        tag_objects: saved_tags(repo, plan)?,
        command: match &plan.operation {
            Operation::Exec(e) => Some(e.command.clone()),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => None,
        },
    };
    let mut drift = || crate::gate::drift(ctx, loaded);
    let receipt = match &plan.operation {
        Operation::Exec(inputs) => ex.apply_exec(&id, image, &key, inputs, &repo.display_path(), &mut drift),
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
            ex.apply(&id, image, &key, &mut drift)
        }
    }
    .inspect_err(|e| record_refusal(&ex, e, &loaded.plan_id))?;
    Ok(Applied {
        id,
        plan_id: receipt.plan_id,
        replayed: false,
        unverified: !receipt.verified,
    })
}

/// The annotated tag objects the plan deletes, read now: the before-image keeps them.
fn saved_tags(repo: &crate::repo::Repo, plan: &crate::plan::model::Plan) -> Result<Vec<SavedTag>> {
    use base64::Engine;
    let mut out = Vec::new();
    for a in &plan.affected {
        let Some(t) = a.tag.as_ref().filter(|t| t.annotated) else {
            continue;
        };
        let oid = git2::Oid::from_str(&a.oid).map_err(Error::from)?;
        out.push(SavedTag {
            oid: a.oid.clone(),
            commit: t.commit.clone(),
            data: base64::engine::general_purpose::STANDARD.encode(repo.raw_object(oid).map_err(|e| {
                Error::usage(format!(
                    "the tag object of {} is not in this clone",
                    safe(&a.refname)
                ))
                .caused_by(e.message)
                .with_hint("fetch the tags (`git fetch --tags`), then apply again")
            })?),
        });
    }
    Ok(out)
}

fn print_result(store: &Store, id: &str, ui: &mut Ui) -> Result<()> {
    let bytes = recorded_result(store, id, ui.json)?;
    ui.out().write_all(&bytes)?;
    Ok(())
}

/// Record a refused apply in the audit log before the lock is taken, when there is a
/// repository to record it in.
fn refusal(ctx: &Ctx, e: &Error, plan_path: &std::path::Path) {
    let Ok(repo) = ctx.repo() else { return };
    let store = Store::new(repo.state_dir());
    if let Ok(_lock) = store.lock() {
        let plan_id = crate::planfile::load(plan_path)
            .ok()
            .map(|l| l.plan_id)
            .unwrap_or_default();
        record_refusal(
            &Executor {
                repo,
                store: &store,
                now: ctx.now,
            },
            e,
            &plan_id,
        );
    }
}

/// Append a refusal to the audit log; the caller holds the store lock.
fn record_refusal(ex: &Executor, e: &Error, plan_id: &str) {
    let detail = format!("{}: {}", e.kind.as_str(), e.message);
    let _ = ex.audit("refusal", Some(plan_id).filter(|p| !p.is_empty()), None, &detail);
}
