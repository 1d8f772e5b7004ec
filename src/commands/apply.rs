//! `guardctl apply PLAN`: apply exactly the approved plan (docs/guide.md "Safety model"). Checks in the
//! contract's order, then under the repository lock: recover any interrupted apply, replay if
//! consumed, then the journaled sequence in `execute`: drift (checked while git locks the refs
//! of the one compare-and-swap transaction), before-image, consumed marker, commit, config
//! removal, observation, signed receipt, audit.
//!
//! Across machines (docs/remote.md): a plan bound to a remote is consumed on that remote too
//! (`refs/guardctl/consumed/<id>`, create-only, pushed by `execute`), and its receipt is
//! published there once applied (`refs/guardctl/receipts/<id>`); a local plan's receipt and
//! marker are published to the team remote when publishing is on. An apply that finds the
//! plan consumed on the remote by another apply prints that apply's receipt as a replay
//! (waiting for it, `--wait`), exactly as a replay in the clone that applied it would.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::execute::Executor;
use crate::plan::approval::DeletedRef;
use crate::plan::model::{BACKUP_NAMESPACE, Operation, ResourceFacts};
use crate::store::{BeforeImage, RemoteConsumption, SavedTag, Store};
use crate::text::safe;
use crate::ui::Ui;

/// Apply exactly the plan: refuses on drift, expiry, missing approvals, wrong principal or
/// changed policy; backs up before it deletes; idempotent on replay.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: crate::gate::Target,

    /// When another clone has consumed the plan and its receipt is not published yet: how
    /// long to wait for it, e.g. 30s, 10m (0: do not wait)
    #[arg(long, value_name = "DUR", value_parser = parse_wait, default_value = DEFAULT_WAIT)]
    pub wait: std::time::Duration,
}

/// How long `apply` waits, unless told otherwise, for the receipt of an apply of the same plan
/// that consumed it in another clone.
pub const DEFAULT_WAIT: &str = "10m";

/// A `--wait` value: a duration (`30s`, `10m`), or `0` for not waiting (also for `mcp`'s
/// `wait`).
pub fn parse_wait(s: &str) -> std::result::Result<std::time::Duration, String> {
    if s.trim() == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    crate::duration::parse(s)
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let applied = execute(&args, ctx, ui);
    ctx.report_published(ui);
    let applied = applied?;
    match (&applied.replayed, &applied.from_remote) {
        (true, Some(remote)) => ui.notice(&format!(
            "this plan was applied in another clone (consumed on remote `{}`); printing its published receipt (nothing was changed here)",
            safe(remote)
        )),
        (true, None) => {
            ui.notice("this plan was already applied; printing the recorded result (nothing was changed now)")
        }
        (false, _) => {}
    }
    if ui.json {
        // The recorded document, and whether this run applied it or found it applied before.
        let mut doc: serde_json::Value = serde_json::from_str(&applied.json)
            .map_err(|e| Error::internal("the recorded result is not JSON").caused_by(e))?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("replayed".into(), applied.replayed.into());
            if let Some(on) = applied.consumed_on {
                map.insert("consumed_on".into(), on.into());
            }
        }
        ui.json_doc(&doc)?;
    } else {
        if applied.replayed {
            writeln!(
                ui.out(),
                "Replayed: plan {} was applied before; nothing was changed now. Its recorded result:",
                applied.plan_id
            )?;
        }
        if applied.consumed_on == Some("clone") {
            writeln!(
                ui.out(),
                "Consumed in this clone only: the policy sets `[remote] consumed_marker = false`, so no other clone is told this plan was applied{}",
                if applied.command {
                    "; another clone could run its command again"
                } else {
                    "; another clone's apply finds the refs gone (drift) and deletes nothing"
                }
            )?;
        }
        ui.out().write_all(applied.human.as_bytes())?;
    }
    if applied.unverified {
        Err(unverified(&applied.plan_id, applied.command))
    } else {
        Ok(0)
    }
}

/// What an apply did: applied the plan now, or found it applied before (a replay, which
/// changes nothing), with its result as `apply` prints it.
pub struct Applied {
    /// The plan id's hex digits (the store's name for it).
    pub id: String,
    pub plan_id: String,
    pub replayed: bool,
    /// This run applied the plan and the observed effect differs from it (exit 15). A
    /// replay never is: it exits 0 whatever the recorded receipt says.
    pub unverified: bool,
    /// The plan ran a command (it has no rollback).
    pub command: bool,
    /// A replay of an apply made in another clone: the remote its receipt came from.
    pub from_remote: Option<String>,
    /// For a plan bound to a remote: `remote` when it is consumed there (the marker), `clone`
    /// when in the applying clone only (`[remote] consumed_marker = false`), as the apply
    /// recorded it. `apply --json` prints it as `consumed_on`.
    pub consumed_on: Option<&'static str>,
    /// The human result.
    pub human: String,
    /// `{"receipt", "envelope"}`: what `guardctl --json apply` prints.
    pub json: String,
}

/// The error of an apply whose observed effect differs from the plan.
pub fn unverified(plan_id: &str, command: bool) -> Error {
    Error::new(
        Kind::Unverified,
        "applied, but the observed effect differs from the plan",
    )
    .with_hint(if command {
        // A command has no rollback: its --before-image is the way back.
        "inspect the mismatches above; a command cannot be rolled back (see its --before-image output)"
            .to_string()
    } else {
        format!("inspect the mismatches above; `guardctl rollback {plan_id}` restores the backups")
    })
}

/// Everything `apply` does but printing: the checks, recovery, then the journaled apply, or
/// nothing when the plan was applied before.
pub fn execute(args: &Args, ctx: &Ctx, ui: &mut Ui) -> Result<Applied> {
    let key = ctx.signing_key(ui)?;
    ctx.report_signers(ui, false)?;
    let mut cleared = crate::gate::preflight(ctx, &args.target, Some(&key))?;
    let repo = ctx.repo()?;
    let store = Store::new(repo.state_dir());
    let locked = store.lock(repo)?;
    // An applied plan stays one of its planner's live plans here, for the bulk class of their
    // other plans (`bulk.across_plans`): until it expires, and at least the policy's default
    // plan lifetime from now, since its expiry is the planner's choice. Recorded under the
    // lock and judged again: two parts applied at the same moment each passed the checks
    // before the other was recorded, and the second to get the lock must see the first.
    let policy = &ctx
        .policy_for(cleared.loaded.plan.operation.bound_to_remote())?
        .policy;
    let until = ctx.now.saturating_add(time::Duration::seconds(
        policy.default_expiry_secs.min(i64::MAX as u64) as i64,
    ));
    crate::store::seen::record(&repo.state_dir(), &cleared.loaded, Some(until), ctx.now)?;
    if !cleared.bulk_across
        && crate::gate::part_of(ctx, &cleared.loaded, &ctx.allowed_signers()?.0, policy)?
            .is_some_and(|p| p.group.is_some())
    {
        cleared = crate::gate::preflight(ctx, &args.target, Some(&key))?;
    }
    // Published with the consumed marker (`execute::PUBLISHED_PLAN`), made while the
    // payload is still held.
    let to_publish = match cleared.loaded.plan.operation.bound_to_remote() {
        Some(_) => Some(crate::store::published::Item::plan(
            cleared.loaded.id_hex(),
            &cleared.loaded.file,
        )?),
        None => None,
    };
    cleared.forget_payload();
    let loaded = &cleared.loaded;
    let plan = &loaded.plan;
    let id = loaded.id_hex().to_string();
    let is_exec = matches!(plan.operation, Operation::Exec(_));
    // What cannot be recorded is not done: a broken audit log refuses before any change.
    store.audit_intact(repo, &ctx.allowed_signers()?.0)?;
    let ex = Executor {
        repo: locked,
        store: &store,
        now: ctx.now,
        key: Some(&key),
        principal: cleared.executor.clone(),
        unlogged: false,
        published: ctx.fetched_published(),
    };
    let (signers, _) = ctx.allowed_signers()?;
    let recovered = ex.recover(Some(&key), &signers)?;
    for (plan_id, outcome) in &recovered {
        ui.notice(&format!("recovered plan sha256:{plan_id}: {outcome}"));
    }
    let ids: Vec<String> = recovered.into_iter().map(|(id, _)| id).collect();
    crate::consume::publish_recovered(ctx, ui, &store, repo, &ids)?;

    // Where this plan's consumption and receipt are published, if anywhere.
    let bound = match plan.operation.bound_to_remote() {
        Some(name) => Some(crate::consume::plan_remote(repo, name)?),
        None => None,
    };
    let local = crate::gate::consumed(&store, &id);
    if let Ok(true) = local {
        // A replay here also publishes a receipt an earlier run could not.
        crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
        return Ok(Applied {
            id: id.clone(),
            plan_id: loaded.plan_id.clone(),
            replayed: true,
            unverified: false,
            command: is_exec,
            from_remote: None,
            consumed_on: consumed_on(&store, &id, bound.is_some())?,
            human: crate::execute::recorded_result(&store, &id, &signers, false)?,
            json: crate::execute::recorded_result(&store, &id, &signers, true)?,
        });
    }
    // Consumed on its remote by another apply, anywhere: that apply's receipt, before any
    // check that could tell this clone's state apart (a replay reports no drift).
    let replay = |r: crate::consume::Replay| Applied {
        id: id.clone(),
        plan_id: loaded.plan_id.clone(),
        replayed: true,
        unverified: false,
        command: is_exec,
        from_remote: Some(r.remote),
        consumed_on: Some("remote"),
        human: r.human,
        json: r.json,
    };
    if let Some(remote) = &bound
        && let Some(r) = crate::consume::replay_from_remote(
            ui,
            &store,
            loaded,
            (remote, ctx.fetched_published().as_deref()),
            args.wait,
            &signers,
            crate::gate::clock_skew(ctx),
        )?
    {
        return Ok(replay(r));
    }
    if local.is_err() && store.read_file(&id, crate::execute::ABANDONED)?.is_some() {
        // Abandoned here after its marker landed: other clones learn it from the record a
        // recovery could not publish then.
        crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
    }
    local?;
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
            .filter(|a| !a.config().is_empty())
            .map(|a| {
                (
                    a.name().to_string(),
                    a.config()
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
        // How this apply consumes the plan beyond this clone, as the policy in force says
        // now: recorded, so that a recovery never reads a later policy to interpret it.
        consumed_on: bound.as_ref().map(|r| RemoteConsumption {
            remote: r.name.clone(),
            url: r.url.clone(),
            marker: policy.consumed_marker,
        }),
    };
    if let Some(item) = &to_publish
        && let Some(remote) = &bound
        && policy.consumed_marker
    {
        // Before anything is consumed: a name taken by something else than this plan would
        // keep it out of every other clone's bulk count (`execute::plan_name_taken`; the
        // push checks again, for a name taken since).
        let taken = match ctx.fetched_published().filter(|s| s.remote.url == remote.url) {
            Some(s) => crate::execute::holds_other_than_plan(&s, &id),
            None => crate::execute::plan_name_held_by_other(remote, &id)?,
        };
        if taken {
            return Err(crate::execute::plan_name_taken(&id));
        }
        store.write_file(&id, crate::execute::PUBLISHED_PLAN, &item.bytes)?;
    }
    // The approvals the receipt will name, kept for `log --verify` (`evidence`).
    let approvals = serde_json::to_vec_pretty(&cleared.approvals)
        .map_err(|e| Error::internal("cannot encode the approvals").caused_by(e))?;
    store.write_file(&id, crate::evidence::APPROVALS, &approvals)?;
    let mut drift = || crate::gate::drift(ctx, loaded);
    let result = match &plan.operation {
        Operation::Exec(inputs) => ex.apply_exec(
            &id,
            image,
            &key,
            crate::execute::Run {
                inputs,
                top: &repo.display_path(),
                sandbox: &ctx.preview_sandbox(inputs.remote.as_deref())?,
            },
            &mut drift,
        ),
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
            ex.apply(&id, image, &key, &mut drift)
        }
    };
    let receipt = match result {
        Ok(r) => r,
        // Refused (drift: the branches are gone; the consumed ref is taken) because another
        // apply consumed the plan meanwhile: that apply's receipt, as a replay.
        Err(e) => match &bound {
            Some(remote) => {
                match crate::consume::replay_from_remote(
                    ui,
                    &store,
                    loaded,
                    // After a refused apply: what the remote holds now, not the snapshot.
                    (remote, None),
                    args.wait,
                    &signers,
                    crate::gate::clock_skew(ctx),
                )? {
                    Some(r) => return Ok(replay(r)),
                    // Consumed in each applying clone only: the refs another clone deleted
                    // first are drift here, with no receipt to print.
                    None if e.kind == Kind::Drift && !policy.consumed_marker && !is_exec => {
                        return Err(e.with_hint(crate::execute::CONSUMED_HERE_ONLY_HINT));
                    }
                    None => return Err(e),
                }
            }
            None => return Err(e),
        },
    };
    crate::consume::publish_receipt(ctx, ui, &store, &id, bound.as_ref())?;
    // Written by this run under the lock; a replay rebuilds them from the verified receipt.
    let recorded = |name: &str| -> Result<String> {
        let bytes = store.read_file(&id, name)?.ok_or_else(|| {
            crate::store::state::inconsistent(
                &store.plan_dir(&id).join(name),
                "the run that applied the plan did not record it",
            )
        })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    let consumed_on = consumed_on(&store, &id, bound.is_some())?;
    Ok(Applied {
        human: recorded("result.txt")?,
        json: recorded("result.json")?,
        id,
        plan_id: receipt.plan_id,
        replayed: false,
        unverified: !receipt.verified,
        command: receipt.exec.is_some(),
        from_remote: None,
        consumed_on,
    })
}

/// Where plan `id` is consumed, for `Applied::consumed_on`: `None` for a local plan.
fn consumed_on(store: &Store, id: &str, bound: bool) -> Result<Option<&'static str>> {
    Ok(match bound {
        false => None,
        true if crate::consume::with_marker(store, id)? => Some("remote"),
        true => Some("clone"),
    })
}

/// The annotated tag objects the plan deletes, read now: the before-image keeps them.
fn saved_tags(repo: &crate::repo::Repo, plan: &crate::plan::model::Plan) -> Result<Vec<SavedTag>> {
    use base64::Engine;
    let mut out = Vec::new();
    for a in &plan.affected {
        let t = match &a.facts {
            ResourceFacts::Tag(t) if t.object.annotated => &t.object,
            // A lightweight tag is its commit (the backup commit keeps it); a branch has none.
            ResourceFacts::Tag(_) | ResourceFacts::Branch(_) => continue,
        };
        let oid = crate::repo::Oid::from_str(&a.oid).map_err(Error::from)?;
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
