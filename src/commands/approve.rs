//! `guardctl approve PLAN`: a distinct principal signs an approval bound to exactly this plan
//! (its id and hash). Also the shared code of `reject`, which signs a veto.

use crate::context::Ctx;
use crate::error::{Error, Kind, Result};
use crate::gate::plans_repo;
use crate::plan::approval::{APPROVAL_NAMESPACE, Approval, Decision};
use crate::plan::envelope::APPROVAL_PAYLOAD_TYPE;
use crate::planfile::Loaded;
use crate::render::view::{self, Paging, ViewInput};
use crate::review;
use crate::sign::dsse;
use crate::text::safe;
use crate::ui::Ui;
use std::path::{Path, PathBuf};

/// Record a signed approval of exactly this plan, by a principal other than the planner.
///
/// The approval counts in every review group whose approvers include you, or only in the
/// groups named with --group (it is still bound to the whole plan). Shows the plan first. On a terminal it asks you to type the first 8 hex digits of the plan
/// id, so the approval binds to what was on screen; without a terminal (or with CI set) it
/// needs --yes, which skips only that prompt. The approval is appended to the plan file, or
/// written to --out as a detached approval file, and with --publish (the default for a
/// published plan named by its id, or when `guardctl.remote` is set) published on the team
/// remote (docs/remote.md).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
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
    /// Approve only this review group's part of the plan (repeatable; see `guardctl show`)
    #[arg(long = "group", value_name = "NAME")]
    pub groups: Vec<String>,
    #[command(flatten)]
    pub publish: PublishArgs,
}

/// `--publish[=REMOTE]` and `--no-publish` (docs/remote.md).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PublishArgs {
    /// Publish to the team remote (`guardctl.remote`, else origin), or to REMOTE, under
    /// refs/guardctl/ (docs/remote.md)
    #[arg(
        long,
        value_name = "REMOTE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub publish: Option<String>,
    /// Do not publish, even where `guardctl.remote` makes publishing the default
    #[arg(long, conflicts_with = "publish")]
    pub no_publish: bool,
}

impl PublishArgs {
    /// What the flags ask for, for the engine to settle.
    pub fn choice(&self) -> crate::engine::publish::Publish {
        use crate::engine::publish::Publish;
        match (&self.publish, self.no_publish) {
            (Some(name), _) => Publish::To(Some(name.clone()).filter(|n| !n.is_empty())),
            (None, true) => Publish::Never,
            (None, false) => Publish::Default,
        }
    }

    /// The remote to publish to: `--publish[=REMOTE]`; else, unless `--no-publish`, the team
    /// remote when `guardctl.remote` is set (system or global config) or `implied`.
    pub fn remote(&self, ctx: &Ctx, implied: bool) -> Result<Option<crate::store::published::Remote>> {
        match (&self.publish, self.no_publish) {
            (Some(name), _) => Ok(Some(
                ctx.publish_remote(Some(name.as_str()).filter(|n| !n.is_empty()))?,
            )),
            (None, true) => Ok(None),
            (None, false) if implied || ctx.publish_by_default()? => Ok(Some(ctx.publish_remote(None)?)),
            (None, false) => Ok(None),
        }
    }
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    ctx.record_ledger_tips();
    let r = record(
        ctx,
        ui,
        Record {
            plan_path: &args.plan,
            decision: Decision::Approve,
            comment: args.comment,
            out: args.out.as_deref(),
            yes: args.yes,
            groups: args.groups,
            publish: args.publish,
        },
    );
    ctx.report_published(ui);
    r
}

/// What to record: an approval (optionally scoped to review groups) or a rejection.
pub struct Record<'a> {
    pub plan_path: &'a Path,
    pub decision: Decision,
    pub comment: Option<String>,
    pub out: Option<&'a Path>,
    pub yes: bool,
    pub groups: Vec<String>,
    pub publish: PublishArgs,
}

/// Sign an approval or rejection of the plan at `plan_path` and store it.
pub fn record(ctx: &Ctx, ui: &mut Ui, r: Record) -> Result<u8> {
    let Record {
        plan_path,
        decision,
        comment,
        out,
        yes,
        groups,
        publish,
    } = r;
    let loaded = crate::gate::load_plan(ctx, plan_path)?;
    // A plan named by its id was read from the remote: that is where its decisions go too,
    // unless written to a file.
    let from_file = std::fs::symlink_metadata(plan_path).is_ok();
    let publish_to = publish.remote(ctx, !from_file && out.is_none())?;
    if !from_file && out.is_none() && publish_to.is_none() {
        return Err(Error::usage(
            "nowhere to record this: the plan was read from the remote and --no-publish was given",
        )
        .with_hint("pass --out FILE for a detached file, or leave --no-publish out"));
    }
    let plan = &loaded.plan;
    let key = ctx.signing_key(ui)?;
    let fingerprint = crate::sign::sshsig::fingerprint(&key.public);
    let (signers, _) = ctx.allowed_signers()?;
    ctx.report_signers(ui, false)?;
    let principal = review::decider(
        &signers.principals_at(key.signer(), APPROVAL_NAMESPACE, &[ctx.now]),
        &fingerprint,
    )?;
    if decision == Decision::Approve {
        review::refuse_self_approval(plan, &principal, &fingerprint, &signers)?;
        // Eligible for the groups `apply` will count: with the bulk group when the planner's
        // other live plans (seen here or published) make this one bulk.
        let part_of = match (
            plans_repo(ctx, plan),
            ctx.policy_for(plan.operation.bound_to_remote()),
        ) {
            (Some(_), Ok(p)) => crate::gate::part_of_known(ctx, &loaded, &signers, &p.policy)?,
            _ => None,
        };
        let in_review = crate::policy::across::in_review(plan, part_of.as_ref());
        review::check_eligible(in_review.as_ref().unwrap_or(plan), &principal, &groups)?;
    }
    let withdraws = match decision {
        Decision::Withdraw => {
            let mut recorded = crate::gate::recorded_decisions(ctx, &loaded)?;
            recorded.extend(crate::gate::published_decisions(ctx, &loaded)?.envelopes);
            let envelopes = loaded
                .file
                .approvals
                .iter()
                .chain(recorded.iter().map(|(_, e)| e));
            review::own_rejections(envelopes, &loaded.plan_id, &signers, &principal)?
        }
        _ => Vec::new(),
    };
    review::check_not_expired(plan, ctx.now)?;

    // Nothing is recorded where the audit log could not record it.
    if let Some(repo) = plans_repo(ctx, plan) {
        crate::store::Store::new(repo.state_dir()).audit_intact(repo, &signers)?;
    }

    show_plan(ui, &loaded, ctx)?;
    if decision == Decision::Approve && !yes {
        confirm(&loaded, ui.may_prompt())?;
    }

    // A reviewed plan is one of its planner's live plans here: the bulk class of their
    // other plans counts it (`bulk.across_plans`).
    if let Some(repo) = plans_repo(ctx, plan) {
        crate::store::seen::record(&repo.state_dir(), &loaded, None, ctx.now)?;
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
        groups,
        withdraws,
    };
    let groups_recorded = approval.groups.clone();
    let payload =
        serde_json::to_vec(&approval).map_err(|e| Error::internal("cannot encode approval").caused_by(e))?;
    let env = dsse::sign(APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE, &payload, &key)
        .map_err(|e| Error::internal("cannot sign the approval").caused_by(e))?;
    let env_copy = env.clone();
    let standing = crate::gate::approval_status_with(ctx, &loaded, std::slice::from_ref(&env))?;
    // Published first: what the remote refuses is recorded nowhere, so a retry starts clean.
    let published = match &publish_to {
        Some(remote) => {
            let p = publish_decision(ctx, remote, &loaded, &env)?;
            if let Some(taken) = &p.taken {
                ui.warn(&format!(
                    "{} on remote `{}` was taken by something that is not your decision: yours is published as {} instead (ask whoever administers the remote to inspect and delete the other)",
                    safe(taken),
                    safe(&remote.name),
                    safe(&p.refname)
                ));
            }
            if let Some(before) = &p.before_ledger {
                ui.notice(&format!(
                    "your earlier decision at {} on remote `{}` was published before the ledger, as a ref anyone who can push can delete: this one is on the ledger as {}",
                    safe(before),
                    safe(&remote.name),
                    safe(&p.refname)
                ));
            }
            Some((p.refname, p.published))
        }
        None => None,
    };
    let written: Option<PathBuf> = match out {
        Some(path) => {
            crate::planfile::write_json(path, &env)?;
            Some(path.to_path_buf())
        }
        None if from_file => {
            crate::planfile::append_approval(plan_path, &loaded.plan_id, env)?;
            Some(plan_path.to_path_buf())
        }
        None => None,
    };
    let event = match decision {
        Decision::Approve => "approve",
        Decision::Reject => "reject",
        Decision::Withdraw => "withdraw",
    };
    // A veto (or its withdrawal) also goes into the repository's state, where stripping it
    // from the plan file cannot reach it.
    if decision != Decision::Approve {
        match plans_repo(ctx, plan) {
            Some(repo) => {
                crate::store::decisions::record(&repo.state_dir(), loaded.id_hex(), &crate::plan::envelope::sha256_id(&payload), &env_copy)?;
            }
            // Published, it is on the remote every clone's `apply` reads.
            None if published.is_some() => {}
            None => ui.warn(
                "not run in the plan's repository: this decision is only in the plan file; run it inside the repository too so that it cannot be stripped from the file",
            ),
        }
    }
    let scope = if groups_recorded.is_empty() {
        String::new()
    } else {
        format!(
            " (review group{} {})",
            if groups_recorded.len() == 1 { "" } else { "s" },
            groups_recorded
                .iter()
                .map(|g| safe(g))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    audit(ctx, &loaded, &key, event, &principal, approval.comment.as_deref())?;
    let decision_ref = published.as_ref().map(|(r, _)| r.clone());
    let mut places: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    if let (Some(remote), Some(r)) = (&publish_to, &decision_ref) {
        places.push(format!("{} on remote `{}`", r, safe(&remote.name)));
    }
    if ui.json {
        let mut doc = serde_json::json!({
            "decision": event,
            "plan_id": loaded.plan_id,
            "principal": principal,
            "groups": groups_recorded,
            "written_to": written.as_ref().map(|p| p.display().to_string()),
            "approvals": standing,
        });
        if let (Some(remote), Some((r, p))) = (&publish_to, &published) {
            doc["published"] = serde_json::json!({
                "remote": remote.name,
                "url": remote.url,
                "ref": r,
                "created": p.created,
                "already": p.already,
            });
        }
        ui.json_doc(&doc)?;
    }
    ui.status(&format!(
        "{} {} plan {}{scope} as {}; recorded in {}.",
        match decision {
            Decision::Approve => "Approved",
            Decision::Reject => "Rejected",
            Decision::Withdraw => "Withdrew the rejection of",
        },
        plan.operation.kind(),
        view::short_id(&loaded.plan_id),
        safe(&principal),
        places.join(" and ")
    ));
    ui.status(&standing_line(&standing));
    Ok(0)
}

/// Publish a signed decision on `remote`, with the plan itself when the remote does not
/// have it yet, in one atomic push (under its fallback name when someone else took its own:
/// `published::publish_decision`).
///
/// What the run already read of that remote (its snapshot) answers whether the plan is
/// there and is what the push builds on: one connection to read, one to push.
pub fn publish_decision(
    ctx: &Ctx,
    remote: &crate::store::published::Remote,
    loaded: &Loaded,
    env: &crate::plan::envelope::Envelope,
) -> Result<crate::store::published::PublishedDecision> {
    use crate::store::published::{self, Item};
    let known = ctx.fetched_published().filter(|s| s.remote.url == remote.url);
    let there = match &known {
        Some(s) => s.has_plan(loaded.id_hex()),
        None => published::has_plan(remote, loaded.id_hex())?,
    };
    let plan = match there {
        true => None,
        false => Some(Item::plan(loaded.id_hex(), &loaded.file)?),
    };
    published::publish_decision(remote, loaded.id_hex(), env, plan, known.as_deref())
}

/// The plan as the approver must see it; on stderr with `--json` (stdout is the result).
fn show_plan(ui: &mut Ui, loaded: &Loaded, ctx: &Ctx) -> Result<()> {
    let policy = crate::gate::policy_status(ctx, &loaded.plan);
    // Said plainly, apart from the table: the approver signs under this policy.
    let policy_warning = (policy.status != "in_force").then(|| {
        format!(
            "the plan's policy ({}) is {}: {}",
            policy.source,
            policy.status.replace('_', " ").to_uppercase(),
            policy.detail.clone().unwrap_or_default()
        )
    });
    let v = view::build(ViewInput {
        plan: &loaded.plan,
        plan_id: &loaded.plan_id,
        approvals: crate::gate::approval_status(ctx, loaded)?,
        policy,
        now: ctx.now,
        paging: Paging::Auto,
        show_all_skipped: false,
    });
    if ui.json {
        let mut buf = Vec::new();
        crate::render::human::render(&v, false, &mut buf).map_err(crate::ui::output_error)?;
        ui.status(String::from_utf8_lossy(&buf).trim_end());
    } else {
        let color = ui.color;
        crate::render::human::render(&v, color, ui.out().writer()).map_err(crate::ui::output_error)?;
        ui.out().flush()?;
    }
    if let Some(w) = policy_warning {
        ui.warn(&w);
    }
    Ok(())
}

/// Where the plan stands once this approval or rejection counts: what is still missing.
fn standing_line(a: &view::ApprovalsView) -> String {
    if !a.rejected_by.is_empty() {
        return format!(
            "The plan is rejected (by {}): apply will refuse it.",
            a.rejected_by.join(", ")
        );
    }
    if !a.blocked_by.is_empty() {
        return format!(
            "The plan is blocked by {}, taken for a veto: apply will refuse it.",
            a.blocked_by.join("; ")
        );
    }
    let open: Vec<String> = a
        .groups
        .iter()
        .filter(|g| g.missing > 0)
        .map(|g| {
            let who = match g.open_approvers() {
                None => "any principal but the planner".to_string(),
                Some(open) => open.join(", "),
            };
            format!("{} needs {} more (from {who})", g.name, g.missing)
        })
        .collect();
    if open.is_empty() {
        "Every approval the plan needs is in place.".to_string()
    } else {
        format!("Still needed: {}.", open.join("; "))
    }
}

/// Ask for the first 8 hex digits of the plan id; never prompt without a terminal, in CI or
/// under `--json` (an agent reading JSON cannot answer).
fn confirm(loaded: &Loaded, may_prompt: bool) -> Result<()> {
    if !may_prompt {
        return Err(Error::usage(
            "refusing to prompt: stdin is not a terminal, CI is set, or --json was given",
        )
        .with_hint("review the plan above, then pass --yes to approve it"));
    }
    let expected: String = loaded.id_hex().chars().take(8).collect();
    let answer = crate::prompt::ask(&format!(
        "To approve plan {}, type the first 8 hex digits of its id",
        view::short_id(&loaded.plan_id)
    ))
    .map_err(|e| Error::internal("cannot read the confirmation").caused_by(e))?;
    let why = match answer {
        crate::prompt::Answer::Typed(t) if t.trim() == expected => return Ok(()),
        crate::prompt::Answer::Typed(_) => "approval declined: the digits did not match the plan id",
        crate::prompt::Answer::Cancelled => "approval cancelled",
        crate::prompt::Answer::EndOfInput => "approval declined: no answer (end of input)",
    };
    Err(Error::new(Kind::Declined, why)
        .with_hint("nothing was recorded; run `guardctl approve` again to retry"))
}

/// Record an event in this repository's audit log, signed with `key`, when run inside the
/// plan's repository.
pub fn audit(
    ctx: &Ctx,
    loaded: &Loaded,
    key: &crate::sign::SigningKey,
    event: &str,
    principal: &str,
    comment: Option<&str>,
) -> Result<()> {
    let Some(repo) = plans_repo(ctx, &loaded.plan) else {
        return Ok(());
    };
    // The log keeps why, not only who: a veto's reason is part of the record.
    let detail = match comment.filter(|c| !c.trim().is_empty()) {
        Some(c) => format!("{}; comment: {c}", loaded.plan.summary),
        None => loaded.plan.summary.clone(),
    };
    let store = crate::store::Store::new(repo.state_dir());
    let locked = store.lock(repo)?;
    store.audit(
        &locked,
        key,
        crate::store::audit::Event {
            now: ctx.now,
            event,
            plan_id: Some(&loaded.plan_id),
            principal: Some(principal),
            detail: &detail,
        },
    )
}
