//! Exactly once across machines (docs/remote.md): where a plan's consumption is recorded
//! beyond this clone, its receipt published, and a plan consumed by an apply in another clone
//! replayed from what that apply published.
//!
//! - A plan bound to a remote (`remote-branches`, `tags --remote`, `exec --remote`) is consumed
//!   on that remote, at the one URL it is bound to ([`plan_remote`]): `execute` creates
//!   `refs/guardctl/consumed/<id>` create-only, in the same atomic push as the deletions or
//!   before the command runs.
//! - Its signed receipt is published at `refs/guardctl/receipts/<id>` once applied
//!   ([`publish_receipt`]); a local plan's marker and receipt go to the team remote when
//!   publishing is on. A failure to publish is a warning: the apply happened, and a replay in
//!   the clone that applied publishes it.
//! - An apply anywhere that finds another apply's marker there prints that apply's receipt as
//!   a replay ([`replay_from_remote`]): verified (`execute::records::remote_marker`,
//!   `execute::records::remote_result`), rendered exactly as a replay in the applying clone, waited for
//!   (bounded, with backoff) while the winner still runs.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::planfile::Loaded;
use crate::repo::Repo;
use crate::sign::AllowedSigners;
use crate::store::Store;
use crate::store::published::Remote;
use crate::text::safe;
use crate::ui::Ui;

/// The receipt of an apply made in another clone, verified, for a replay to print.
pub struct Replay {
    /// The remote it came from.
    pub remote: String,
    pub receipt: crate::plan::approval::Receipt,
    pub envelope: crate::plan::envelope::Envelope,
}

/// The remote a plan bound to remote `name` is consumed on: its one URL (preflight checked it
/// is the plan's repository), reached with this clone's transport settings.
pub fn plan_remote(repo: &Repo, name: &str) -> Result<Remote> {
    Ok(Remote {
        name: name.to_string(),
        url: repo.remote_url(name)?,
        transport: repo.transport_settings()?,
    })
}

/// The team remote a local plan's receipt is published to, when publishing is on: by
/// default (`guardctl.remote`, `Ctx::publish_by_default`), or because the plan was published
/// there (`plan --publish`).
fn team_remote(ctx: &Ctx, id: &str) -> Result<Option<Remote>> {
    let on = ctx.publish_by_default()? || ctx.published(id)?.is_some_and(|snapshot| snapshot.has_plan(id));
    Ok(if on { Some(ctx.publish_remote(None)?) } else { None })
}

/// Publish the outcome of the plan applied here — its signed receipt, or for an exec apply
/// `recover` abandoned after its marker landed (before or while its command ran), the signed
/// record of that
/// (`execute::ABANDONED`) — with its consumed marker, for a local plan, whose marker was never
/// pushed: to the plan's remote, or the team remote when publishing is on. `bound` is the
/// plan's remote, `None` for a local plan; a remote's plan consumed in this clone only (no
/// marker, as its before-image records) publishes nothing. The apply happened either way: a
/// failure is a warning saying how to publish later.
pub fn publish_receipt(
    ctx: &Ctx,
    ui: &mut Ui,
    store: &Store,
    id: &str,
    bound: Option<&Remote>,
) -> Result<()> {
    if bound.is_some() && !with_marker(store, id)? {
        return Ok(());
    }
    let (remote, with_marker) = match bound {
        Some(r) => (Some(r.clone()), false),
        None => match team_remote(ctx, id) {
            Ok(r) => (r, true),
            Err(e) => {
                ui.warn(&format!(
                    "the receipt was not published: {}; run `guardctl apply` with this plan again here to publish it",
                    e.message
                ));
                return Ok(());
            }
        },
    };
    let Some(remote) = remote else {
        return Ok(());
    };
    let (outcome, what) = match store.read_file(id, "receipt.json")? {
        Some(r) => (r, "applied, but the receipt"),
        None => match store.read_file(id, crate::execute::ABANDONED)? {
            Some(a) if bound.is_some() => (a, "the record that the apply was abandoned"),
            _ => return Ok(()),
        },
    };
    let marker = match with_marker {
        true => store.read_file(id, "consumed")?,
        false => None,
    };
    if let Err(e) = crate::store::consumption::publish_receipt(
        &remote,
        id,
        marker.as_deref(),
        &outcome,
        ctx.fetched_published().as_deref(),
    ) {
        ui.warn(&format!(
            "{what} was not published to remote `{}`: {}{}; run `guardctl apply` with this plan again here to publish it",
            safe(&remote.name),
            e.message,
            e.causes.iter().map(|c| format!(": {c}")).collect::<String>()
        ));
    }
    Ok(())
}

/// Whether plan `id_hex`'s apply here consumed it on its remote with the marker, as its
/// before-image records (`true` without one, or from before the record existed).
pub fn with_marker(store: &Store, id_hex: &str) -> Result<bool> {
    Ok(store
        .before_image(id_hex)?
        .and_then(|i| i.consumed_on)
        .is_none_or(|c| c.marker))
}

/// After `recover` completed or abandoned interrupted applies (`ids`): publish each one's
/// outcome where `apply` would have (its receipt; an exec apply abandoned after its marker
/// landed, the record of that). A plan bound to a remote publishes to the remote its
/// before-image names, at the URL this clone's config resolves that name to now, which must
/// still be the recorded repository (`execute::consumed_url`). Failures are warnings.
pub fn publish_recovered(ctx: &Ctx, ui: &mut Ui, store: &Store, repo: &Repo, ids: &[String]) -> Result<()> {
    for id in ids {
        let done = store.read_file(id, "receipt.json")?.is_some()
            || store.read_file(id, crate::execute::ABANDONED)?.is_some();
        if !done {
            continue;
        }
        let Some(image) = store.before_image(id)? else {
            continue;
        };
        let bound = match (&image.consumed_on, &image.remote, &image.command) {
            (Some(at), _, _) => recorded_remote(repo, &image, &at.remote),
            (None, Some(name), _) => plan_remote(repo, name).map(Some),
            // An exec plan applied before its remote was recorded: its replay here publishes.
            (None, None, Some(_)) => continue,
            (None, None, None) => Ok(None),
        };
        let bound = match bound {
            Ok(b) => b,
            Err(e) => {
                ui.warn(&format!(
                    "the outcome of plan sha256:{id} was not published: {}; run `guardctl apply` with this plan here to publish it",
                    e.message
                ));
                continue;
            }
        };
        publish_receipt(ctx, ui, store, id, bound.as_ref())?;
    }
    Ok(())
}

/// The remote an apply recorded it consumed `image`'s plan on (`name`), at the URL this
/// clone's config resolves it to now, refused unless that is still the recorded repository
/// (`execute::consumed_url`).
fn recorded_remote(repo: &Repo, image: &crate::store::BeforeImage, name: &str) -> Result<Option<Remote>> {
    let Some(url) = crate::execute::consumed_url(repo, image)? else {
        return Ok(None);
    };
    Ok(Some(Remote {
        name: name.to_string(),
        url,
        transport: repo.transport_settings()?,
    }))
}

/// The plan consumed on `remote` by another apply (not this clone's own marker), read first
/// in `fetched` (the run's snapshot) when it is of `remote`: its receipt
/// as a replay once it is published and verifies (`execute::records::remote_marker`,
/// `execute::records::remote_result`), waiting up to `wait` for it. `None`: not consumed there by
/// anyone else. A marker or receipt that does not verify is 16 naming its ref; no receipt
/// within `wait` is 16 naming who consumed the plan and when.
pub fn replay_from_remote(
    ui: &mut Ui,
    store: &Store,
    loaded: &Loaded,
    (remote, fetched): (&Remote, Option<&crate::store::published::Snapshot>),
    wait: std::time::Duration,
    signers: &AllowedSigners,
    skew_secs: u64,
) -> Result<Option<Replay>> {
    use crate::store::consumption;
    let id = loaded.id_hex();
    let ours = store.read_file(id, "consumed")?;
    // First from the run's snapshot of this remote, when it has one (no second connection);
    // each wait for the receipt reads the remote again.
    let first = match fetched.filter(|s| s.remote.url == remote.url) {
        Some(s) => consumption::of(s, id)?,
        None => consumption::read(remote, id)?,
    };
    let Some(mut found) = first else {
        return Ok(None);
    };
    if ours.is_some() && found.consumed.bytes.as_ref().ok() == ours.as_ref() {
        return Ok(None);
    }
    let executor = loaded.plan.executor.principal.as_deref();
    // A genuine marker is made while the plan can be applied (execute::remote_marker).
    let skew = time::Duration::seconds(skew_secs as i64);
    let made_within = (loaded.plan.created_at - skew)..=(loaded.plan.expires_at + skew);
    let marker = crate::execute::records::remote_marker(
        &found.consumed,
        &loaded.plan_id,
        executor,
        made_within,
        signers,
    )?;
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(200);
    let mut told = false;
    let receipt = loop {
        if let Some(r) = found.receipt.take() {
            break r;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(Error::new(
                Kind::NeedsRecovery,
                format!(
                    "{}, and its receipt is not published{}; nothing was changed here",
                    consumed_on_remote(loaded, remote, &marker),
                    if wait.is_zero() {
                        String::new()
                    } else {
                        format!(" after waiting {}", crate::duration::humanize(wait.as_secs() as i64))
                    }
                ),
            )
            .with_details(serde_json::json!({
                "consumed_by": consumed_by(loaded, &marker),
                "ref": found.consumed.refname,
            }))
            .with_hint(format!(
                "the apply that consumed it may still be running, or was interrupted: wait longer (`--wait`), or ask {} to run `guardctl recover` and then `guardctl apply` with this plan in the clone that applied it, which publishes the receipt",
                safe(executor.unwrap_or("its executor"))
            )));
        }
        if !told {
            ui.notice(&format!(
                "plan {} was consumed on remote `{}` by key {} at {}; waiting up to {} for its receipt",
                loaded.plan_id,
                safe(&remote.name),
                marker.key,
                crate::text::rfc3339(marker.created_at),
                crate::duration::humanize(wait.as_secs() as i64)
            ));
            told = true;
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(std::time::Duration::from_secs(5));
        found = consumption::read(remote, id)?.unwrap_or(found);
    };
    if let Some(abandoned) =
        crate::execute::records::remote_abandoned(&receipt, &marker, &loaded.plan.plan_hash)?
    {
        return Err(abandoned_elsewhere(
            loaded,
            remote,
            &marker,
            &abandoned,
            &receipt.refname,
        ));
    }
    let (receipt, envelope) = crate::execute::remote_result(&receipt, &marker, &loaded.plan.plan_hash)?;
    Ok(Some(Replay {
        remote: remote.name.clone(),
        receipt,
        envelope,
    }))
}

/// "plan … was consumed on remote `…` by key … (executor) at …": who consumed the plan where,
/// as every refusal of an apply that found it consumed on its remote begins.
fn consumed_on_remote(loaded: &Loaded, remote: &Remote, marker: &crate::store::state::Consumed) -> String {
    format!(
        "plan {} was consumed on remote `{}` by key {} ({}) at {}",
        loaded.plan_id,
        safe(&remote.name),
        marker.key,
        safe(loaded.plan.executor.principal.as_deref().unwrap_or("(none)")),
        crate::text::rfc3339(marker.created_at),
    )
}

/// The `consumed_by` details of those refusals: the marker's key, the plan's executor, when.
fn consumed_by(loaded: &Loaded, marker: &crate::store::state::Consumed) -> serde_json::Value {
    serde_json::json!({
        "key": marker.key,
        "principal": loaded.plan.executor.principal,
        "at": crate::text::rfc3339(marker.created_at),
    })
}

/// The refusal of an apply that found the plan consumed on its remote by an apply that was
/// then abandoned (a verified record at `receipts/<id>`); the plan is spent either way.
/// Abandoned before its command ran: the command was never run, `drift` (10), as an apply
/// aborted in this clone is. Abandoned while its command ran: it may have partly run and must
/// be checked by hand, `needs_recovery` (16). `details.stage` says which.
fn abandoned_elsewhere(
    loaded: &Loaded,
    remote: &Remote,
    marker: &crate::store::state::Consumed,
    abandoned: &crate::store::state::Abandoned,
    refname: &str,
) -> Error {
    use crate::store::state::Stage;
    let executor = loaded.plan.executor.principal.as_deref();
    let who = consumed_on_remote(loaded, remote, marker);
    let at = crate::text::rfc3339(abandoned.abandoned_at);
    let (kind, message, hint) = match abandoned.stage {
        Stage::BeforeCommand => (
            Kind::Drift,
            format!(
                "{who}, and that apply was abandoned at {at} before its command ran: the command was never run; nothing was changed here"
            ),
            "a plan is applied at most once: re-run `guardctl plan` and have the new plan approved"
                .to_string(),
        ),
        Stage::CommandStarted => (
            Kind::NeedsRecovery,
            format!(
                "{who}, and that apply was interrupted while its command ran (abandoned at {at}): the command may have partly run and must be checked by hand; it is not run again; nothing was changed here"
            ),
            format!(
                "check by hand what the command did (ask {}, who applied it); a plan is applied at most once: to run the command again, re-run `guardctl plan` and have the new plan approved",
                safe(executor.unwrap_or("its executor"))
            ),
        ),
    };
    Error::new(kind, message)
        .with_details(serde_json::json!({
            "consumed_by": consumed_by(loaded, marker),
            "abandoned_at": at,
            "stage": abandoned.stage.as_str(),
            "ref": refname,
        }))
        .with_hint(hint)
}
