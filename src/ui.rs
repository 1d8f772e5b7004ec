//! The only writer to stdout and stderr.
//!
//! Data (a rendered plan, one JSON document with `--json`) goes to stdout; status, hints,
//! notices and progress go to stderr, so `guardctl show --json | jq` always gets exactly one
//! document. Colour is decided once, here, from `--color`, `NO_COLOR` and whether the stream
//! is a terminal. `-q` silences status lines, never data or errors.

use crate::error::Error;
use std::io::{self, IsTerminal, Write};

/// `--color` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// The colour rule: `always`/`never` win; `auto` is on only for a terminal without `NO_COLOR`.
pub fn decide_color(choice: ColorChoice, no_color: Option<&str>, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => no_color.is_none_or(str::is_empty) && is_terminal,
    }
}

pub struct Ui {
    pub json: bool,
    pub quiet: bool,
    /// Colour for what goes to stdout.
    pub color: bool,
    /// Colour for what goes to stderr.
    pub err_color: bool,
    stdout: PipeSafe,
    stderr: Box<dyn Write>,
    /// Every warning of this run, in order: the `warnings` array of the JSON document.
    warnings: Vec<String>,
}

/// A JSON document with the run's warnings beside its own fields.
#[derive(serde::Serialize)]
struct WithWarnings<'a, T: serde::Serialize> {
    #[serde(flatten)]
    doc: &'a T,
    warnings: &'a [String],
}

/// stdout that treats a closed pipe (`guardctl show | head`) as the reader being done:
/// further output is dropped and the run still exits 0.
struct PipeSafe {
    inner: Box<dyn Write>,
    broken: bool,
}

impl Write for PipeSafe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.broken {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.broken = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.broken {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.broken = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl Ui {
    pub fn new(json: bool, quiet: bool, choice: ColorChoice) -> Self {
        let no_color = std::env::var("NO_COLOR").ok();
        Ui {
            json,
            quiet,
            color: !json && decide_color(choice, no_color.as_deref(), io::stdout().is_terminal()),
            err_color: decide_color(choice, no_color.as_deref(), io::stderr().is_terminal()),
            stdout: PipeSafe {
                inner: Box::new(io::stdout().lock()),
                broken: false,
            },
            // Not locked for the whole run: the spinner draws from its own thread.
            stderr: Box::new(io::stderr()),
            warnings: Vec::new(),
        }
    }

    /// A Ui for a process whose stdout carries a protocol (`guardctl mcp`): status, notices
    /// and warnings go to stderr as usual; anything written as data is discarded, so nothing
    /// but protocol messages ever reaches stdout.
    pub fn without_stdout(quiet: bool, choice: ColorChoice) -> Self {
        let no_color = std::env::var("NO_COLOR").ok();
        Ui {
            json: false,
            quiet,
            color: false,
            err_color: decide_color(choice, no_color.as_deref(), io::stderr().is_terminal()),
            stdout: PipeSafe {
                inner: Box::new(io::sink()),
                broken: false,
            },
            stderr: Box::new(io::stderr()),
            warnings: Vec::new(),
        }
    }

    /// Whether a person may be asked a question: a terminal on stdin and not in CI.
    pub fn can_prompt() -> bool {
        io::stdin().is_terminal() && !in_ci(std::env::var("CI").ok().as_deref())
    }

    /// Whether this run may ask a person anything: a terminal, not CI, and not `--json` (an
    /// agent reading JSON cannot answer a prompt).
    pub fn may_prompt(&self) -> bool {
        !self.json && Self::can_prompt()
    }

    /// Whether progress indicators may be drawn.
    pub fn stderr_is_terminal(&self) -> bool {
        !self.quiet && io::stderr().is_terminal()
    }

    /// A spinner on stderr for work that may take a while; only on a terminal, never with
    /// `-q`. Cleared when dropped or finished.
    pub fn spinner(&self, message: &str) -> Option<indicatif::ProgressBar> {
        if !self.stderr_is_terminal() {
            return None;
        }
        // Hidden for the first second: most runs end before, and a flash of spinner is noise.
        let pb = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden())
            .with_style(indicatif::ProgressStyle::default_spinner())
            .with_message(message.to_string());
        let later = pb.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            if !later.is_finished() {
                later.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                later.enable_steady_tick(std::time::Duration::from_millis(120));
            }
        });
        Some(pb)
    }

    /// Progress with counts on stderr (`observed branches 4,120/11,935, rate, ETA`): only on
    /// a terminal, never with `--json` or `-q`, and hidden for the first second like the
    /// spinner. Until a step begins it spins with `message`.
    pub fn progress(&self, message: &str) -> Counter {
        Counter(if self.json { None } else { self.spinner(message) })
    }

    /// The data stream. `writeln!(ui.out(), ...)?` fails with an error naming standard
    /// output; render functions get the plain writer from [`Out::writer`].
    pub fn out(&mut self) -> Out<'_> {
        Out(&mut self.stdout)
    }

    /// Where human text goes: stdout, or stderr under `--json` (stdout then carries only the
    /// one JSON document). Writes fail with an error naming the stream.
    pub fn text_out(&mut self) -> Out<'_> {
        if self.json {
            Out(&mut self.stderr)
        } else {
            Out(&mut self.stdout)
        }
    }

    /// Print one JSON document on stdout: `value` (an object) with the run's `warnings`
    /// added, so a plan that can never apply is visible to an agent, not only on stderr.
    pub fn json_doc(&mut self, value: &impl serde::Serialize) -> Result<(), Error> {
        let doc = WithWarnings {
            doc: value,
            warnings: &self.warnings,
        };
        let bytes = crate::text::json_pretty(&doc)
            .map_err(|e| Error::internal("cannot serialise the JSON output").caused_by(e))?;
        let mut out = Out(&mut self.stdout);
        out.write_all(&bytes)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// A status line on stderr (silenced by `-q`).
    pub fn status(&mut self, line: &str) {
        if !self.quiet {
            let _ = writeln!(self.stderr, "{line}");
        }
    }

    /// A notice that must be seen even with `-q` (e.g. a key was generated).
    pub fn notice(&mut self, line: &str) {
        let _ = writeln!(self.stderr, "{}: {line}", self.paint_err("note", "1;36"));
    }

    /// Text for whoever reads stderr, as it is and whatever `-q` says: an agent-harness
    /// hook's reason for a denial (the harness hands stderr to the model).
    pub fn reason(&mut self, text: &str) {
        let _ = self.stderr.write_all(text.as_bytes());
    }

    /// A warning on stderr, kept for the JSON document's `warnings`.
    pub fn warn(&mut self, line: &str) {
        self.warnings.push(line.to_string());
        let _ = writeln!(self.stderr, "{}: {line}", self.paint_err("warning", "1;33"));
    }

    /// Report a failure: JSON on stdout with `--json`, and always the human form on stderr.
    pub fn error(&mut self, err: &Error) {
        if self.json {
            let _ = self.json_doc(&err.to_json());
        }
        let _ = writeln!(
            self.stderr,
            "{}: {}",
            self.paint_err("error", "1;31"),
            err.message
        );
        for cause in &err.causes {
            let _ = writeln!(self.stderr, "caused by: {cause}");
        }
        let _ = writeln!(self.stderr, "{}: {}", self.paint_err("hint", "1;32"), err.hint());
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()?;
        self.stderr.flush()
    }

    fn paint_err(&self, text: &str, sgr: &str) -> String {
        paint(self.err_color, sgr, text)
    }
}

/// Standard output as commands write to it. Its inherent `write_fmt` makes `writeln!` return
/// guardctl's [`Error`], naming standard output, rather than a bare I/O error that would not
/// say what failed.
pub struct Out<'a>(&'a mut dyn Write);

/// A failed write of the command's output.
pub fn output_error(e: io::Error) -> Error {
    Error::internal("cannot write to standard output").caused_by(e)
}

impl Out<'_> {
    pub fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> Result<(), Error> {
        self.0.write_fmt(args).map_err(output_error)
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.0.write_all(bytes).map_err(output_error)
    }

    pub fn flush(&mut self) -> Result<(), Error> {
        self.0.flush().map_err(output_error)
    }

    /// The plain writer, for render functions that write to `&mut dyn Write`; map their
    /// errors with [`output_error`].
    pub fn writer(&mut self) -> &mut dyn Write {
        self.0
    }
}

/// Whether `CI` says this is a CI job: set to anything but empty, `0` or `false` (`CI=false`
/// is how a person says it is not).
pub fn in_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no"))
}

/// Wrap `text` in an SGR sequence when colour is on. `text` must already be safe.
pub fn paint(color: bool, sgr: &str, text: &str) -> String {
    if color {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A progress bar the operations drive through [`crate::ops::progress::Progress`]; shared by
/// worker threads (an `indicatif` bar is `Sync`). Cleared when dropped.
pub struct Counter(Option<indicatif::ProgressBar>);

impl crate::ops::progress::Progress for Counter {
    fn begin(&self, what: &str, total: u64) {
        let Some(pb) = &self.0 else { return };
        let style =
            indicatif::ProgressStyle::with_template("{msg} {human_pos}/{human_len} ({per_sec}, {eta} left)")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        pb.set_style(style);
        pb.set_message(what.to_string());
        pb.set_length(total);
        pb.set_position(0);
        pb.reset_eta();
    }

    fn advance(&self, n: u64) {
        if let Some(pb) = &self.0 {
            pb.inc(n);
        }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_rule_honours_flag_no_color_and_terminal() {
        use ColorChoice::*;
        assert!(decide_color(Always, Some("1"), false));
        assert!(!decide_color(Never, None, true));
        assert!(decide_color(Auto, None, true));
        assert!(!decide_color(Auto, None, false));
        assert!(!decide_color(Auto, Some("1"), true));
        // NO_COLOR set but empty does not disable colour (no-color.org).
        assert!(decide_color(Auto, Some(""), true));
    }

    #[test]
    fn ci_false_is_not_ci() {
        assert!(in_ci(Some("true")) && in_ci(Some("1")) && in_ci(Some("github")));
        assert!(!in_ci(None) && !in_ci(Some("false")) && !in_ci(Some("0")) && !in_ci(Some("")));
    }

    #[test]
    fn paint_is_identity_without_color() {
        assert_eq!(paint(false, "1", "x"), "x");
        assert_eq!(paint(true, "1", "x"), "\x1b[1mx\x1b[0m");
    }
}
