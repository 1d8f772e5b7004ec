//! `guardctl approve PLAN`: a distinct principal signs an approval bound to exactly this plan
//! (its id and hash). Also the shared code of `reject`, which signs a veto.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPROVAL_NAMESPACE, Approval, Decision};
use crate::plan::envelope::APPROVAL_PAYLOAD_TYPE;
use crate::planfile::Loaded;
use crate::render::escape::safe;
use crate::render::view::{self, Paging, ViewInput};
use crate::sign::dsse;
use crate::ui::Ui;
use std::path::{Path, PathBuf};

/// Record a signed approval of exactly this plan, by a principal other than the planner.
///
/// Shows the plan first. On a terminal it asks you to type the first 8 hex digits of the plan
/// id, so the approval binds to what was on screen; without a terminal (or with CI set) it
/// needs --yes, which skips only that prompt. The approval is appended to the plan file, or
/// written to --out as a detached approval file.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file
    pub plan: PathBuf,
    /// Do not ask for confirmation (required when stdin is not a terminal)
    #[arg(long)]
    pub yes: bool,
    /// A comment recorded in the approval
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    /// Write a detached approval file instead of appending to the plan
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    record(
        ctx,
        ui,
        &args.plan,
        Decision::Approve,
        args.comment,
        args.out.as_deref(),
        args.yes,
    )
}

/// Sign an approval or rejection of the plan at `plan_path` and store it.
pub fn record(
    ctx: &Ctx,
    ui: &mut Ui,
    plan_path: &Path,
    decision: Decision,
    comment: Option<String>,
    out: Option<&Path>,
    yes: bool,
) -> Result<u8> {
    let loaded = crate::planfile::load(plan_path)?;
    let plan = &loaded.plan;
    let key = ctx.signing_key(ui)?;
    let fingerprint = crate::sign::sshsig::fingerprint(&key.public);
    let (signers, _) = ctx.allowed_signers()?;
    let principal = match signers
        .principals_for(&key.public, APPROVAL_NAMESPACE, ctx.now)
        .as_slice()
    {
        [one] => one.clone(),
        [] => {
            return Err(Error::new(
                Kind::Unapproved,
                format!("key {fingerprint} may not sign approvals: it maps to no principal for {APPROVAL_NAMESPACE}"),
            )
            .with_hint("use a key listed in the allowed-signers file without a namespaces= restriction excluding approvals"));
        }
        many => {
            return Err(Error::usage(format!(
                "key {fingerprint} maps to several principals: {}",
                many.join(", ")
            )));
        }
    };
    if decision == Decision::Approve && plan.planner.principal.as_ref() == Some(&principal) {
        return Err(Error::new(
            Kind::Unapproved,
            format!("{} planned this plan and cannot approve it", safe(&principal)),
        )
        .with_hint("a different principal must approve; that is the point of the gate"));
    }
    if ctx.now >= plan.expires_at {
        return Err(Error::new(
            Kind::Expired,
            format!("the plan expired at {}", view::rfc3339(plan.expires_at)),
        )
        .with_hint("ask the planner to re-run `guardctl plan`"));
    }

    show_plan(ui, &loaded, ctx)?;
    if decision == Decision::Approve && !yes {
        confirm(&loaded)?;
    }

    let approval = Approval {
        plan_id: loaded.plan_id.clone(),
        plan_hash: plan.plan_hash.clone(),
        repository: plan.repository.clone(),
        decision,
        principal: principal.clone(),
        key: fingerprint,
        created_at: ctx.now,
        comment,
    };
    let payload =
        serde_json::to_vec(&approval).map_err(|e| Error::internal("cannot encode approval").caused_by(e))?;
    let env = dsse::sign(APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE, &payload, &key)
        .map_err(|e| Error::internal("cannot sign the approval").caused_by(e))?;
    let written = match out {
        Some(path) => {
            crate::planfile::write_json(path, &env)?;
            path.to_path_buf()
        }
        None => {
            crate::planfile::append_approval(plan_path, &loaded.plan_id, env)?;
            plan_path.to_path_buf()
        }
    };
    let event = match decision {
        Decision::Approve => "approve",
        Decision::Reject => "reject",
    };
    audit(ctx, &loaded, event, &principal)?;
    if ui.json {
        ui.json_doc(&serde_json::json!({
            "decision": event,
            "plan_id": loaded.plan_id,
            "principal": principal,
            "written_to": written.display().to_string(),
        }))?;
    }
    ui.status(&format!(
        "{} {} plan {} as {}; recorded in {}.",
        if decision == Decision::Approve {
            "Approved"
        } else {
            "Rejected"
        },
        plan.operation.kind(),
        view::short_id(&loaded.plan_id),
        safe(&principal),
        written.display()
    ));
    Ok(0)
}

/// The plan as the approver must see it; on stderr with `--json` (stdout is the result).
fn show_plan(ui: &mut Ui, loaded: &Loaded, ctx: &Ctx) -> Result<()> {
    let v = view::build(ViewInput {
        plan: &loaded.plan,
        plan_id: &loaded.plan_id,
        approvals: crate::gate::approval_status(ctx, loaded)?,
        now: ctx.now,
        paging: Paging::Auto,
        show_all_skipped: false,
    });
    if ui.json {
        let mut buf = Vec::new();
        crate::render::human::render(&v, false, &mut buf)?;
        ui.status(String::from_utf8_lossy(&buf).trim_end());
    } else {
        let color = ui.color;
        crate::render::human::render(&v, color, ui.out())?;
        ui.out().flush()?;
    }
    Ok(())
}

/// Ask for the first 8 hex digits of the plan id; never prompt without a terminal.
fn confirm(loaded: &Loaded) -> Result<()> {
    if !Ui::can_prompt() {
        return Err(
            Error::usage("refusing to prompt: stdin is not a terminal or CI is set")
                .with_hint("review the plan above, then pass --yes to approve it"),
        );
    }
    let expected: String = loaded.id_hex().chars().take(8).collect();
    let typed: String = dialoguer::Input::new()
        .with_prompt(format!(
            "To approve plan {}, type the first 8 hex digits of its id",
            view::short_id(&loaded.plan_id)
        ))
        .allow_empty(true)
        .interact_text()
        .map_err(|e| Error::internal("cannot read the confirmation").caused_by(e))?;
    if typed.trim() != expected {
        return Err(Error::new(
            Kind::Declined,
            "approval declined: the digits did not match the plan id",
        )
        .with_hint("nothing was recorded; run `guardctl approve` again to retry"));
    }
    Ok(())
}

/// Record an event in this repository's audit log when run inside the plan's repository.
pub fn audit(ctx: &Ctx, loaded: &Loaded, event: &str, principal: &str) -> Result<()> {
    let Ok(repo) = ctx.repo() else { return Ok(()) };
    if repo.existing_identity().as_deref() != Some(loaded.plan.repository.as_str()) {
        return Ok(());
    }
    let store = crate::store::Store::new(repo.state_dir());
    let _lock = store.lock()?;
    store.audit(
        ctx.now,
        event,
        Some(&loaded.plan_id),
        Some(principal),
        &loaded.plan.summary,
    )
}
