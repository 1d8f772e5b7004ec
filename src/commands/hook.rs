//! `guardctl hook claude-code`: Claude Code's `PreToolUse` hook in front of the agent's own
//! shell, and `guardctl hook install` to set it up. The hook reads one tool call on stdin; a
//! Bash command that destroys nothing passes at once (exit 0, no output: Claude Code's own
//! permissions then apply); one that does is planned (`engine::guard`) and denied (exit 2, the
//! reason on stderr, which Claude Code hands to the model): what was planned, and that a
//! person approves it before the agent runs `guardctl apply`.
//!
//! It fails closed. Claude Code blocks a call only on exit 2 (or a JSON "deny"); any other
//! exit — a crash, a usage error, a missing binary — lets the command run. So every failure
//! here (bad JSON, no key, a git error, a rules file that does not parse, a panic, running out
//! of time) is exit 2 with the reason, and `lib.rs` maps a command line that does not parse to
//! 2 as well.

use crate::context::Ctx;
use crate::engine::guard::GuardRequest;
use crate::error::{Error, Result};
use crate::render::guard::GuardView;
use crate::ui::Ui;
use serde::Deserialize;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// The harnesses' subcommand names (`guardctl hook <name>`): such a run blocks on every
/// failure, its command line's included (`lib.rs`).
pub const HARNESSES: [&str; 2] = [Harness::ClaudeCode.name(), Harness::GeminiCli.name()];

/// The exit code that makes Claude Code block the tool call.
pub const BLOCK: u8 = 2;

/// The classifier thread's stack (address space; only what is used is committed).
const WORKER_STACK: usize = 64 << 20;

/// The most a tool call's JSON may take: a command line is text, not a payload.
const MAX_PAYLOAD: u64 = 1 << 20;

/// Put guardctl in front of an AI agent's own shell (docs/agents.md).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub hook: Hook,
}

#[derive(Debug, clap::Subcommand)]
pub enum Hook {
    ClaudeCode(ClaudeCodeArgs),
    GeminiCli(GeminiCliArgs),
    Install(InstallArgs),
}

/// Gemini CLI's BeforeTool hook (matcher `run_shell_command`): as `hook claude-code`, for
/// Gemini CLI's payload. Allowed: exit 0 with `{}` on stdout; denied: exit 2, the reason on
/// stderr. Every failure is exit 2.
#[derive(Debug, clap::Args)]
pub struct GeminiCliArgs {
    #[command(flatten)]
    pub hook: ClaudeCodeArgs,
}

/// The agent harnesses guardctl hooks into, and how each speaks.
#[derive(Debug, Clone, Copy)]
enum Harness {
    ClaudeCode,
    GeminiCli,
}

impl Harness {
    fn event(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "PreToolUse",
            Harness::GeminiCli => "BeforeTool",
        }
    }

    fn shell_tool(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "Bash",
            Harness::GeminiCli => "run_shell_command",
        }
    }

    const fn name(self) -> &'static str {
        match self {
            Harness::ClaudeCode => "claude-code",
            Harness::GeminiCli => "gemini-cli",
        }
    }
}

/// Claude Code's PreToolUse hook: reads the tool call (JSON) on stdin. A Bash command that
/// destroys nothing: exit 0, no output. One that does: planned with the agent's key and
/// denied (exit 2; the reason, the plan and what to run next on stderr). Every failure is
/// exit 2 too: a hook that fails open is no gate.
#[derive(Debug, clap::Args)]
pub struct ClaudeCodeArgs {
    /// A rules file whose rules come before the built-in ones (repeatable; docs/agents.md)
    #[arg(long, value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Deny when no decision is made within DUR (set it below the hook's own `timeout` in
    /// Claude Code's settings, which otherwise lets the call through)
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub timeout: String,
}

/// Print (or, with --write, merge into the settings file) the Claude Code settings that run
/// `guardctl hook claude-code` before every Bash command, with this command's --key and
/// --allowed-signers.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The harness (only `claude-code` so far)
    #[arg(value_parser = ["claude-code"])]
    pub harness: String,
    /// `local` (.claude/settings.local.json in the repository: untracked, and ignored through
    /// .git/info/exclude, so no commit, checkout or clean of the project's files changes it),
    /// `project` (.claude/settings.json, committed) or `user` (~/.claude/settings.json)
    #[arg(long, value_parser = ["local", "project", "user"], default_value = "local")]
    pub scope: String,
    /// Merge the hook into that settings file (kept otherwise as it is) instead of printing it
    #[arg(long)]
    pub write: bool,
}

/// A PreToolUse (BeforeTool) payload: the fields guardctl reads (harnesses send more).
#[derive(Debug, Deserialize)]
struct Payload {
    hook_event_name: Option<String>,
    tool_name: String,
    #[serde(default)]
    tool_input: serde_json::Value,
    cwd: Option<PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    // A panic anywhere in a hook is a denial, not the 101 the harness would let through.
    let hook = |harness: Harness, a: ClaudeCodeArgs, ui: &mut Ui| {
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness_hook(harness, a, ctx, ui)));
        caught.unwrap_or_else(|_| {
            ui.reason("guardctl hook: denied, because guardctl failed while deciding. Nothing ran.\n");
            BLOCK
        })
    };
    match args.hook {
        Hook::ClaudeCode(a) => Ok(hook(Harness::ClaudeCode, a, ui)),
        Hook::GeminiCli(a) => Ok(hook(Harness::GeminiCli, a.hook, ui)),
        Hook::Install(a) => super::hook_install::run(a, ctx, ui),
    }
}

/// The hook: exit 0 (allow) or 2 (deny, the reason on stderr), whatever happens.
fn harness_hook(harness: Harness, args: ClaudeCodeArgs, ctx: &Ctx, ui: &mut Ui) -> u8 {
    let allow = |ui: &mut Ui| {
        // Gemini CLI parses stdout as JSON on exit 0: an empty object decides nothing.
        if matches!(harness, Harness::GeminiCli) {
            let _ = ui.out().write_all(b"{}\n");
        }
        0
    };
    let deny = |ui: &mut Ui, text: &str| {
        ui.reason(text);
        BLOCK
    };
    let timeout = match crate::duration::parse(&args.timeout) {
        Ok(t) => t,
        Err(e) => return deny(ui, &format!("guardctl hook: denied: --timeout: {e}\n")),
    };
    let request = match request(harness, &args, ctx, timeout) {
        Ok(Some(r)) => r,
        Ok(None) => return allow(ui),
        Err(e) => return deny(ui, &failure_text(&e)),
    };
    match decide(request, timeout) {
        Ok((true, _)) => allow(ui),
        Ok((false, view)) => deny(ui, &crate::render::guard::text(&view)),
        Err(e) => deny(ui, &failure_text(&e)),
    }
}

fn failure_text(e: &Error) -> String {
    let mut s = format!(
        "guardctl hook: denied, because guardctl could not decide: {}\n",
        e.message
    );
    if let Some(h) = &e.hint {
        s.push_str(&format!("hint: {h}\n"));
    }
    s.push_str("Nothing ran. Do not run the command another way; ask the person you work for.\n");
    s
}

/// The guard request for the payload on stdin; `None` for a tool call that is not a shell
/// command (not guardctl's to judge).
fn request(
    harness: Harness,
    args: &ClaudeCodeArgs,
    ctx: &Ctx,
    timeout: Duration,
) -> Result<Option<GuardRequest>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::usage("cannot read the tool call on stdin").caused_by(e))?;
    if bytes.len() as u64 > MAX_PAYLOAD {
        return Err(Error::usage(format!(
            "the tool call is larger than {MAX_PAYLOAD} bytes"
        )));
    }
    let (event, tool, name) = (harness.event(), harness.shell_tool(), harness.name());
    let payload: Payload = serde_json::from_slice(&bytes).map_err(|e| {
        Error::usage(format!("the tool call on stdin is not a {event} payload: {e}")).with_hint(format!(
            "configure `guardctl hook {name}` as a {event} hook (docs/agents.md)"
        ))
    })?;
    if let Some(given) = &payload.hook_event_name
        && given != event
    {
        return Err(Error::usage(format!(
            "guardctl hook {name} runs as a {event} hook, not {}",
            crate::text::safe(given)
        )));
    }
    if payload.tool_name != tool {
        return Ok(None);
    }
    let Some(line) = payload.tool_input.get("command").and_then(|c| c.as_str()) else {
        return Err(Error::usage(format!(
            "the {tool} tool call has no `tool_input.command` string"
        )));
    };
    let Some(mut cwd) = payload.cwd.filter(|c| c.is_absolute()) else {
        return Err(Error::usage(
            "the tool call has no absolute `cwd`: guardctl cannot tell where the command runs",
        ));
    };
    // Gemini CLI's shell tool may name the directory it runs in.
    if let Some(dir) = ["dir_path", "directory"]
        .iter()
        .find_map(|k| payload.tool_input.get(*k).and_then(|d| d.as_str()))
    {
        cwd = cwd.join(dir);
    }
    let (_, key, allowed_signers) = ctx.flags();
    Ok(Some(GuardRequest {
        line: line.to_string(),
        cwd,
        rules: super::guard::load_rules(&args.rules)?,
        key,
        allowed_signers,
        plans_dir: crate::context::default_plans_dir(),
        // The line runs with the harness's environment, which is the hook's.
        env: std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect(),
        // A denied line is tried twice (to decide, then to plan), within the hook's time.
        trial_timeout: (timeout.saturating_sub(Duration::from_secs(2)) / 2).max(Duration::from_secs(1)),
    }))
}

/// The verdict, on another thread so that a classification or a plan that does not end in
/// time is a denial, not a hook Claude Code times out (and lets through). A panic there is a
/// denial too.
fn decide(request: GuardRequest, timeout: Duration) -> Result<(bool, GuardView)> {
    let (tx, rx) = std::sync::mpsc::channel();
    // A stack far beyond what the nesting limits need (shell::words::MAX_NESTING): a stack
    // overflow aborts the process, which the harness takes for "no objection".
    let spawned = std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let result = std::panic::catch_unwind(|| {
                stall_for_tests();
                // Status lines would mix with the reason on stderr: only warnings are said.
                let mut ui = Ui::without_stdout(true, crate::ui::ColorChoice::Never);
                let verdict = crate::engine::guard::guard(&mut ui, &request);
                // The decision is the engine's verdict, never a string of the view.
                let allowed = matches!(verdict, crate::engine::guard::Verdict::Allow(_));
                (allowed, super::guard::view(&verdict))
            });
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(Error::internal("cannot start the classifier's thread").caused_by(e));
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(decided)) => Ok(decided),
        Ok(Err(_)) => Err(Error::internal("guardctl failed while classifying the command")),
        Err(_) => Err(Error::internal(format!(
            "no decision within {} (--timeout)",
            crate::duration::words(timeout.as_secs().max(1))
        ))),
    }
}

/// Tests make the classification hang, to see the timeout deny (absent from release builds).
#[cfg(feature = "test-hooks")]
fn stall_for_tests() {
    if std::env::var_os("GUARDCTL_TEST_HOOK_STALL").is_some() {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(not(feature = "test-hooks"))]
fn stall_for_tests() {}
