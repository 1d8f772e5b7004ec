//! guardctl: a two-person, terraform-style plan/approve/apply gate in front of destructive
//! operations.
//!
//! # Architecture map
//!
//! The arrows point one way: (`cli`, `usage`, `mcp`) → `commands` → `engine` → (`gate`, `execute`,
//! `consume`, `evidence`, `ops`, `policy`, `render`, `review`, `shell`, `sign`, `store`, `planfile`,
//! `context`, `ui`, `trial`)
//! → (`plan`, `repo`) →
//! leaves (`error`, `text`, `duration`, `fsutil`, `process`, `sandbox`). docs/architecture.md has the layers and
//! where a new operation kind goes; `tests/cli/layers.rs` checks the code against it.
//!
//! - [`cli`]: global flags and the command enum; `cli::command()` feeds completions and man pages.
//! - [`context`]: `Ctx`, the run's one `now`, the repository, key and allowed-signers lookup.
//! - [`error`]: the one error type; the only place that maps failures to exit codes.
//! - [`ui`]: the only writer to stdout/stderr (`--json`, `--color`, `-q`).
//! - [`commands`]: one file per command: its arguments, a typed request to the engine, the
//!   outcome rendered.
//! - [`engine`]: the lifecycle every front end calls (plan, review, verify, apply, rollback,
//!   recover, gc) with typed requests and outcomes; a session owns the lock and recovery.
//! - [`plan`]: the plan as pure data: payload types, DSSE envelope, plan hash, derived parts.
//! - [`planfile`]: reading (verified, strict, bounded) and writing plan files.
//! - [`ops`]: one module per operation: observe (read-only) and decide (pure); `assemble`
//!   makes a plan of an observation (planner, executor, limits, review groups, derived parts).
//! - [`review`]: the decisions of `approve`/`reject` before signing: who decides, no
//!   self-approval, eligibility for the review groups, expiry, what a withdrawal lifts.
//! - [`policy`]: the policy in force and its hash.
//! - [`shell`]: which parts of a shell command line destroy something (a real bash parser,
//!   data-driven rules), for the agent-shell hook and `guard`. Pure.
//! - [`sign`]: keys, allowed signers, SSHSIG sign (ssh-keygen) and verify (in-process).
//! - [`gate`]: the checks `verify` and `apply` share: integrity, expiry, principal,
//!   approvals, policy, then drift — the plan re-derived from its inputs and the repository now.
//! - [`execute`]: the journaled, mutating sequences of `apply` and `rollback`, and `recover`.
//! - [`consume`]: exactly once across machines: a remote's plan consumed on that remote, the
//!   receipt published, and an apply made in another clone replayed from what it published.
//! - [`evidence`]: what `log --verify` checks the audit log against: the approvals behind each
//!   receipt, this clone's journals and backup refs, the receipts the team remote published.
//! - [`store`]: guardctl's own state in `.git/guardctl` (lock, journals, markers, audit log),
//!   every file of it untrusted input when read back; and what is published on the team
//!   remote under `refs/guardctl/` (`store::published`, docs/remote.md), untrusted likewise.
//! - [`repo`]: the only code that touches git (`repo::publish`: pushes and fetches through a
//!   private scratch repository, never the user's). A `&Repo` only reads; changing the repository
//!   takes a `repo::mutate::RepoMut`, which only exists while guardctl's lock is held
//!   (`store::Store::lock`, taken by `engine::session`): `execute`, and the engine's `gc` and
//!   `approve`/`reject` for their audit entries.
//! - [`render`]: view structs built from plans, human text from views, escaping.
//! - [`process`]: the one way to run a program (git, ssh-keygen, ssh-add, exec plans'
//!   commands, guardctl itself): the command line in every error, closed stdin, input
//!   written while both pipes are read, escaped stderr; `Running` for a child talked to
//!   while it runs.
//! - [`sandbox`]: the preview sandbox (user, mount and network namespaces, a new root of an
//!   allowlist, Landlock): exec previews and verify commands run there, without the user's
//!   keys, agent sockets, network or write access (docs/agents.md).
//! - [`trial`]: the effect trial: a line the agent-shell hook cannot prove harmless runs in the
//!   sandbox's overlay mode (a copy-on-write view of the machine) and is judged by what it
//!   changed; the manifest of what it would destroy.
//! - [`destination`]: where a new plan may be written (`plan -o`, the MCP tools' `out`): never
//!   guardctl's state or trust files; an agent only new files in its plan directory or the work tree.
//! - [`text`]: terminal-safe escaping of repository strings, JSON output, RFC 3339 times.
//! - [`fsutil`], [`duration`]: atomic writes, bounded reads; duration parsing.
//! - [`prompt`]: the approval prompt (raw keys: Ctrl-C, Esc and Ctrl-D are answers).
//! - [`usage`]: single-dash long flags refused, clap's errors as usage errors with hints.
//! - [`mcp`]: `guardctl mcp`, the plan/show/status/verify/apply tools over MCP (rmcp, tokio).
//!
//! Trust: a plan file is untrusted input even when its signature verifies ([`plan::validate`]
//! on every read, [`gate::drift`] at `verify`/`apply`); see docs/trust-model.md.

// The test hooks (a clock override, fault injection) would let anyone revive an expired plan:
// a build without debug assertions (a release profile) must not contain them, whatever
// features were asked for (`--all-features` included).
#[cfg(all(feature = "test-hooks", not(debug_assertions)))]
compile_error!("the `test-hooks` feature is for tests only; it cannot be built without debug assertions");

pub mod cli;
pub mod commands;
pub mod consume;
pub mod context;
pub mod destination;
pub mod duration;
pub mod engine;
pub mod error;
pub mod evidence;
pub mod execute;
pub mod fsutil;
pub mod gate;
pub mod mcp;
pub mod ops;
pub mod plan;
pub mod planfile;
pub mod policy;
pub mod process;
pub mod prompt;
pub mod render;
pub mod repo;
pub mod review;
pub mod sandbox;
pub mod shell;
pub mod sign;
pub mod store;
pub mod text;
pub mod trial;
pub mod ui;
pub mod usage;

use clap::Parser;
use cli::{Cli, Command};
use error::{Error, Kind};
use std::process::ExitCode;
use ui::Ui;

/// Parse arguments, run the command, map the outcome to the contract's exit code.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = args.iter().any(|a| a == "--json" || a == "-json");
    if let Some(e) = usage::single_dash_long_flag(&args, &cli::command()) {
        return usage_failure(&e, json);
    }
    let hook = is_harness_hook(&args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if hook => return hook_failure(&e.to_string()),
        Err(e) => return clap_failure(e, &args, json),
    };
    // git's location variables would make git act on another repository than the one
    // guardctl checks (src/repo/gitenv.rs): refused before any command runs.
    if !matches!(cli.command, Command::Completions(_))
        && let Err(e) = repo::gitenv::refuse_splitting()
    {
        if hook {
            return hook_failure(&e.message);
        }
        let mut ui = Ui::new(cli.json, cli.quiet, cli.color);
        ui.error(&e);
        let _ = ui.flush();
        return ExitCode::from(e.exit_code());
    }
    let mut ui = if matches!(cli.command, Command::Mcp(_)) {
        // stdout carries the protocol: the Ui must neither hold its lock nor write to it.
        Ui::without_stdout(cli.quiet, cli.color)
    } else {
        Ui::new(cli.json, cli.quiet, cli.color)
    };
    let ctx = context::Ctx::new(cli.repo, cli.key, cli.allowed_signers);
    let result = match cli.command {
        Command::Plan(a) => {
            // This process only plans (`repo::settings`); the MCP server's plan tool does not.
            repo::settings::planning_only_process();
            commands::plan::run(a, &ctx, &mut ui)
        }
        Command::Show(a) => commands::show::run(a, &ctx, &mut ui),
        Command::Approve(a) => commands::approve::run(a, &ctx, &mut ui),
        Command::Reject(a) => commands::reject::run(a, &ctx, &mut ui),
        Command::Verify(a) => commands::verify::run(a, &ctx, &mut ui),
        Command::Inbox(a) => commands::inbox::run(a, &ctx, &mut ui),
        Command::Apply(a) => commands::apply::run(a, &ctx, &mut ui),
        Command::Rollback(a) => commands::rollback::run(a, &ctx, &mut ui),
        Command::Recover(a) => commands::recover::run(a, &ctx, &mut ui),
        Command::Log(a) => commands::log::run(a, &ctx, &mut ui),
        Command::Gc(a) => commands::gc::run(a, &ctx, &mut ui),
        Command::Whoami(a) => commands::whoami::run(a, &ctx, &mut ui),
        Command::Completions(a) => commands::completions::run(a, cli::command(), &mut ui),
        Command::Demo(a) => commands::demo::run(a, &mut ui),
        Command::Mcp(a) => mcp::run(a, &ctx, &mut ui),
        Command::Wait(a) => commands::wait::run(a, &ctx, &mut ui),
        Command::Guard(a) => commands::guard::run(a, &ctx, &mut ui),
        Command::Hook(a) => commands::hook::run(a, &ctx, &mut ui),
        Command::Doctor(a) => commands::doctor::run(a, &ctx, &mut ui),
        Command::Explain(a) => commands::explain::run(a, &ctx, &mut ui),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            ui.error(&e);
            e.exit_code()
        }
    };
    let _ = ui.flush();
    ExitCode::from(code)
}

/// Whether this run is an agent harness's hook (`guardctl … hook claude-code|gemini-cli`): such a run
/// must block (exit 2) on every failure, its command line's included, since the harness lets
/// a command through on any other status.
fn is_harness_hook(args: &[std::ffi::OsString]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "hook" && commands::hook::HARNESSES.iter().any(|h| w[1] == *h))
}

/// A hook run that failed before its command ran: denied, the reason on stderr.
fn hook_failure(message: &str) -> ExitCode {
    let mut ui = Ui::new(false, false, ui::ColorChoice::Never);
    ui.reason(&format!(
        "guardctl hook: denied, because guardctl could not decide: {}\nNothing ran. Do not run the command another way; ask the person you work for.\n",
        message.trim_end()
    ));
    let _ = ui.flush();
    ExitCode::from(commands::hook::BLOCK)
}

/// Help and version go to stdout with status 0; every other parse failure is a usage
/// error (64), as JSON on stdout too with `--json`.
fn clap_failure(e: clap::Error, args: &[std::ffi::OsString], json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let err = usage::from_clap(&e, args);
    if matches!(
        e.kind(),
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // clap would print the whole help, headed by the about text, as the error; a bare
        // `guardctl` still gets the help, then the error.
        if args.len() <= 1 && !json {
            let _ = e.print();
        }
        return usage_failure(&err, json);
    }
    if json {
        let mut ui = Ui::new(true, false, ui::ColorChoice::Never);
        let _ = ui.json_doc(&err.to_json());
    }
    let _ = e.print();
    if let Some(hint) = &err.hint {
        eprintln_hint(hint);
    }
    ExitCode::from(Kind::Usage.exit_code())
}

/// A usage error found before any command ran (no Ui exists yet).
fn usage_failure(err: &Error, json: bool) -> ExitCode {
    let mut ui = Ui::new(json, false, ui::ColorChoice::Auto);
    ui.error(err);
    let _ = ui.flush();
    ExitCode::from(err.exit_code())
}

fn eprintln_hint(hint: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("hint: {hint}\n").as_bytes());
}
