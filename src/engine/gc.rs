//! Collecting the backups of applied plans whose retention has passed. A backup younger
//! than its retention is never touched.
//!
//! The before-images are untrusted input (anyone who can write `.git/guardctl` can craft
//! one): `gc` deletes only `refs/guardctl/backup/<id>` of the directory's own plan id, only
//! while it points at the commit the before-image recorded, and only when that commit (an
//! object, which a file in `.git/guardctl` cannot backdate) is a guardctl backup of that plan
//! whose date and recorded retention have passed. Every before-image is checked before any
//! backup is removed: one inconsistent file stops gc (exit 16, naming it) with nothing changed.
//!
//! It runs in a session without recovery ([`super::session::Checked::without_recovery`]), as it always has:
//! it never touches an interrupted plan's state.

use super::session::{AuditLog, Session, Signer};
use crate::context::Ctx;
use crate::error::Result;
use crate::repo::mutate::RefOp;
use crate::store::{BeforeImage, state};
use crate::ui::Ui;

/// Collect every backup past its retention (there is nothing to choose).
#[derive(Debug, Default)]
pub struct GcRequest {}

/// A backup collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// `sha256:<hex>`.
    pub plan_id: String,
    /// How many deleted refs the backup kept.
    pub refs: usize,
}

/// Remove the backups past their retention, each recorded in the audit log; what was removed.
pub fn gc(ctx: &Ctx, ui: &mut Ui, _request: &GcRequest) -> Result<Vec<Collected>> {
    let repo = ctx.repo()?;
    let store = super::session::store(ctx)?;
    let session = Session::lock(ctx, &store)?
        .check_log(ui, AuditLog::MustBeIntact)?
        .without_recovery(Signer {
            key: None,
            principal: None,
        });
    let locked = session.repo();
    // (plan id hex, image, the backup ref to delete at its commit, if it is still there)
    let mut due: Vec<(String, BeforeImage, Option<RefOp>)> = Vec::new();
    for id in store.plan_ids()? {
        if state::is_plan_id_hex(&id) && store.read_file(&id, "collected")?.is_some() {
            continue;
        }
        let Some((image, _)) = store.checked_before_image(&id)? else {
            continue;
        };
        // A state file is untrusted: a date past the calendar's end means "never", not a panic.
        let past = |from: time::OffsetDateTime, days: u32| {
            from.checked_add(time::Duration::days(i64::from(days)))
                .is_some_and(|end| ctx.now >= end)
        };
        let (Some(r), Some(commit)) = (&image.backup_ref, &image.backup_commit) else {
            if past(image.created_at, image.retention_days) {
                due.push((id, image, None));
            }
            continue;
        };
        // Compare-and-swap: a backup ref that someone moved is left alone.
        if repo.ref_target(r).map(|o| o.to_string()).as_ref() != Some(commit) {
            if past(image.created_at, image.retention_days) {
                due.push((id, image, None));
            }
            continue;
        }
        let path = store.plan_dir(&id).join("before-image.json");
        let oid = crate::repo::Oid::from_str(commit).map_err(|e| state::inconsistent(&path, e))?;
        let (when, message) = repo.commit_time_and_message(oid)?;
        let (subject, body) = message.split_once('\n').unwrap_or((message.as_str(), ""));
        if subject != format!("guardctl backup of plan {}", image.plan_id) {
            return Err(state::inconsistent(
                &path,
                format!("its backup commit {commit} is not guardctl's backup of this plan"),
            ));
        }
        let recorded = body
            .lines()
            .find_map(|l| l.strip_prefix("retention-days: "))
            .and_then(|d| d.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let days = image.retention_days.max(recorded);
        let created = time::OffsetDateTime::from_unix_timestamp(when).unwrap_or(image.created_at);
        if !past(created.max(image.created_at), days) {
            continue;
        }
        let op = RefOp::Delete {
            refname: r.clone(),
            old: commit.clone(),
        };
        due.push((id, image, Some(op)));
    }
    let mut removed = Vec::new();
    // Each removal is recorded in the audit log, signed by the caller's key (looked up only
    // when there is something to remove).
    let key = if due.is_empty() {
        None
    } else {
        let k = ctx.unlocked_signing_key(ui)?;
        let principal = ctx.require_principal(&k, crate::plan::approval::APPLY_NAMESPACE, "gc")?;
        Some((k, principal))
    };
    for (id, image, op) in due {
        locked.ref_transaction(op.as_slice())?;
        store.write_file(&id, "collected", b"collected\n")?;
        let detail = format!(
            "removed the backup of {} branches past {} days",
            image.refs.len(),
            image.retention_days
        );
        if let Some((key, principal)) = &key {
            store.audit(
                locked,
                key,
                crate::store::audit::Event {
                    now: ctx.now,
                    event: "gc",
                    plan_id: Some(&image.plan_id),
                    principal: Some(principal),
                    detail: &detail,
                },
            )?;
        }
        removed.push(Collected {
            plan_id: image.plan_id,
            refs: image.refs.len(),
        });
    }
    Ok(removed)
}
