//! `guardctl approve PLAN`: a distinct principal signs an approval bound to exactly this plan
//! (its id and hash), after seeing it and, on a terminal, confirming it (`engine::review`).
//! Also what `reject` shares: the plan shown, the decision printed, `--publish`.

use crate::context::Ctx;
use crate::engine::publish::Publish;
use crate::engine::review::{DecisionRequest, Presented};
use crate::error::{Error, Kind, Result};
use crate::plan::approval::Decision;
use crate::render::review::DecisionView;
use crate::render::view;
use crate::ui::Ui;
use std::path::PathBuf;

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
    #[arg(value_hint = clap::ValueHint::FilePath)]
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
    pub fn choice(&self) -> Publish {
        match (&self.publish, self.no_publish) {
            (Some(name), _) => Publish::To(Some(name.clone()).filter(|n| !n.is_empty())),
            (None, true) => Publish::Never,
            (None, false) => Publish::Default,
        }
    }
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let yes = args.yes;
    let request = DecisionRequest {
        plan: args.plan,
        decision: Decision::Approve,
        comment: args.comment,
        out: args.out,
        groups: args.groups,
        publish: args.publish.choice(),
    };
    let r = crate::engine::review::decide(ctx, ui, request, &mut |ui, presented| {
        show(ui, presented)?;
        if !yes {
            confirm(&presented.id_hex, &presented.view.plan_id, ui.may_prompt())?;
        }
        Ok(())
    })
    .and_then(|d| print(ui, &d));
    ctx.report_published(ui);
    r
}

/// The plan as the reviewer must see it before deciding; on stderr with `--json` (stdout is
/// the result); then the plan's policy, when it is not the one in force, as a warning.
pub fn show(ui: &mut Ui, presented: &Presented) -> Result<()> {
    let v = &presented.view;
    if ui.json {
        let mut buf = Vec::new();
        crate::render::human::render(v, false, &mut buf).map_err(crate::ui::output_error)?;
        ui.status(String::from_utf8_lossy(&buf).trim_end());
    } else {
        let color = ui.color;
        crate::render::human::render(v, color, ui.out().writer()).map_err(crate::ui::output_error)?;
        ui.out().flush()?;
    }
    if let Some(w) = crate::render::review::policy_warning(&v.policy) {
        ui.warn(&w);
    }
    Ok(())
}

/// The decision recorded: the JSON document under `--json`; what was decided and where the
/// plan stands now, as status lines.
pub fn print(ui: &mut Ui, d: &DecisionView) -> Result<u8> {
    if ui.json {
        ui.json_doc(d)?;
    }
    ui.status(&crate::render::review::decision_line(d));
    ui.status(&crate::render::review::standing_line(&d.approvals));
    Ok(0)
}

/// Ask for the first 8 hex digits of the plan id; never prompt without a terminal, in CI or
/// under `--json` (an agent reading JSON cannot answer).
fn confirm(id_hex: &str, plan_id: &str, may_prompt: bool) -> Result<()> {
    if !may_prompt {
        return Err(Error::usage(
            "refusing to prompt: stdin is not a terminal, CI is set, or --json was given",
        )
        .with_hint("review the plan above, then pass --yes to approve it"));
    }
    let expected: String = id_hex.chars().take(8).collect();
    let answer = crate::prompt::ask(&format!(
        "To approve plan {}, type the first 8 hex digits of its id",
        view::short_id(plan_id)
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
