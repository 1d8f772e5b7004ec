//! `guardctl show [PLAN]`: render a plan for a reviewer (or as JSON or Markdown). Never
//! mutates the repository.

use crate::context::Ctx;
use crate::engine::show::ShowRequest;
use crate::error::{Error, Result};
use crate::render::markdown;
use crate::ui::Ui;
use std::path::PathBuf;

/// Render a plan: summary, branches, extremes, side effects, skipped branches.
///
/// Plans with more than 50 branches are summarised (counts by reason, a sample, the
/// extremes); `--all` lists every branch, `--page N` shows 50 at a time. The signature is
/// verified before anything in the plan is shown.
///
/// `--format markdown` renders GitHub-flavoured Markdown for a pull-request comment (at most
/// 65,536 bytes), `--format summary` for a CI job summary (at most 1 MiB): the counts, risk
/// and approvals first, the riskiest rows in a table, the rest folded, every repository
/// string inert.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan file, or the id (or a unique prefix of 8+ hex digits) of a plan published on
    /// the team remote
    #[arg(default_value = "plan.json", value_hint = clap::ValueHint::FilePath)]
    pub plan: PathBuf,
    /// List every affected and skipped branch
    #[arg(long, conflicts_with = "page")]
    pub all: bool,
    /// Show page N (50 branches per page)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub page: Option<u32>,
    /// Show what changed against an earlier plan of the same operation
    #[arg(long, value_name = "OLD_PLAN")]
    pub since: Option<PathBuf>,
    /// How to render the plan: `text` (a terminal), `json` (as --json), `markdown` (a
    /// pull-request comment), `summary` (a CI job summary)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The most bytes `markdown` or `summary` output may take [default: 65536 for markdown,
    /// 1048576 for summary; at least 8192]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(markdown::MIN_BYTES as u64..))]
    pub max_bytes: Option<u64>,
    /// Append the summary to the file $GITHUB_STEP_SUMMARY names (GitHub Actions' job
    /// summary) instead of printing it; implies --format summary
    #[arg(long, conflicts_with_all = ["all", "page"])]
    pub step_summary: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Summary,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let format = match (args.format, args.step_summary, ui.json) {
        (_, true, true) => {
            return Err(
                Error::usage("--json and --step-summary ask for two outputs").with_hint("pass one of them")
            );
        }
        (Format::Text, true, false) => Format::Summary,
        (Format::Text | Format::Json, _, true) => Format::Json,
        (f, _, false) => f,
        (f, _, true) => {
            return Err(Error::usage(format!(
                "--json and --format {} ask for two outputs",
                format_name(f)
            ))
            .with_hint("pass one of them"));
        }
    };
    if args.step_summary && !matches!(format, Format::Summary | Format::Markdown) {
        return Err(Error::usage(
            "--step-summary writes Markdown: it goes with --format summary or markdown, not text or JSON",
        ));
    }
    let markdown = matches!(format, Format::Markdown | Format::Summary);
    if args.max_bytes.is_some() && !markdown {
        return Err(Error::usage(
            "--max-bytes limits Markdown output: pass --format markdown or summary",
        ));
    }
    if markdown && (args.all || args.page.is_some()) {
        return Err(Error::usage(
            "Markdown lists every row that fits in its byte budget: --all and --page are for the terminal",
        )
        .with_hint("raise --max-bytes to list more"));
    }
    let request = ShowRequest {
        plan: args.plan,
        // Markdown is given every row and keeps what fits, riskiest first.
        all: args.all || markdown,
        page: args.page,
        since: args.since,
    };
    if !markdown {
        ui.json = format == Format::Json;
        let v = crate::engine::show::show(ctx, ui, &request);
        return super::finish_view(ctx, ui, v, crate::render::human::render);
    }
    let default = if format == Format::Summary {
        markdown::SUMMARY_BYTES
    } else {
        markdown::COMMENT_BYTES
    };
    let max = args
        .max_bytes
        .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let summary_file = if args.step_summary {
        step_summary_file(ui)
    } else {
        None
    };
    let max = match &summary_file {
        Some(path) => room_in(path, max)?,
        None => max,
    };
    let v = crate::engine::show::show(ctx, ui, &request);
    ctx.report_published(ui);
    let text = markdown::render(&v?, max);
    match summary_file {
        Some(path) => append(&path, &text, ui),
        None => {
            ui.out().write_all(text.as_bytes())?;
            Ok(0)
        }
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Text => "text",
        Format::Json => "json",
        Format::Markdown => "markdown",
        Format::Summary => "summary",
    }
}

/// The job-summary file GitHub Actions names, or `None` (with a warning) outside a job: the
/// summary is then printed, as `--format summary` would.
fn step_summary_file(ui: &mut Ui) -> Option<PathBuf> {
    match std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            ui.warn(
                "GITHUB_STEP_SUMMARY is not set (not in a GitHub Actions step): printing the summary instead",
            );
            None
        }
    }
}

/// The most bytes put before the summary so that it starts a block of its own.
const SEPARATOR: usize = 2;

/// The last two bytes of the file at `path` (none when it is empty or cannot be read).
fn tail(path: &std::path::Path) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(2))).is_ok() {
        let _ = f.read_to_end(&mut buf);
    }
    buf
}

/// The bytes the summary may take: GitHub shows at most 1 MiB per step, and the step may have
/// written to its summary already.
fn room_in(path: &std::path::Path, max: usize) -> Result<usize> {
    let have = match std::fs::metadata(path) {
        Ok(m) => usize::try_from(m.len()).unwrap_or(usize::MAX),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(Error::io("cannot read the job summary file", path)(e)),
    };
    let room = markdown::SUMMARY_BYTES.saturating_sub(have + SEPARATOR).min(max);
    if room < markdown::MIN_BYTES {
        return Err(Error::usage(format!(
            "the job summary {} already holds {have} bytes: GitHub shows at most {} per step, and the plan needs at least {}",
            path.display(),
            markdown::SUMMARY_BYTES,
            markdown::MIN_BYTES
        ))
        .with_hint("write the summary in a step of its own"));
    }
    Ok(room)
}

fn append(path: &std::path::Path, text: &str, ui: &mut Ui) -> Result<u8> {
    use std::io::Write;
    // What the step wrote before may not end with a blank line: the heading would join its
    // last line. (`room_in` keeps `SEPARATOR` bytes for this.)
    let ends = tail(path);
    let text = if ends.is_empty() || ends.ends_with(b"\n\n") {
        text.to_string()
    } else if ends.ends_with(b"\n") {
        format!("\n{text}")
    } else {
        format!("\n\n{text}")
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(Error::io("cannot open the job summary file", path))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.flush())
        .map_err(Error::io("cannot write the job summary file", path))?;
    ui.status(&format!(
        "appended the plan's summary ({} bytes) to {}",
        text.len(),
        path.display()
    ));
    Ok(0)
}
