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
        }
    }

    /// Whether a person may be asked a question: a terminal on stdin and not in CI.
    pub fn can_prompt() -> bool {
        io::stdin().is_terminal() && std::env::var_os("CI").is_none()
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

    /// The data stream. Render functions write here.
    pub fn out(&mut self) -> &mut dyn Write {
        &mut self.stdout
    }

    /// Print one JSON document on stdout.
    pub fn json_doc(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        let bytes = crate::render::escape::json_pretty(value).map_err(io::Error::other)?;
        self.stdout.write_all(&bytes)?;
        self.stdout.write_all(b"\n")?;
        self.stdout.flush()
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

    pub fn warn(&mut self, line: &str) {
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
        if let Some(hint) = &err.hint {
            let _ = writeln!(self.stderr, "{}: {hint}", self.paint_err("hint", "1;32"));
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()?;
        self.stderr.flush()
    }

    fn paint_err(&self, text: &str, sgr: &str) -> String {
        paint(self.err_color, sgr, text)
    }
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
    fn paint_is_identity_without_color() {
        assert_eq!(paint(false, "1", "x"), "x");
        assert_eq!(paint(true, "1", "x"), "\x1b[1mx\x1b[0m");
    }
}
