//! The command line: global flags and one variant per command. Each command's own flags live
//! with its code in `commands/`. `command()` is what completions and man pages come from.

use crate::commands;
use crate::ui::ColorChoice;
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;

/// A two-person plan/approve/apply gate in front of destructive operations.
///
/// `guardctl plan` observes the repository and writes a signed plan that lists exactly what
/// would change; `guardctl show` renders it for a reviewer. Nothing is mutated by either.
///
/// Exit codes: 0 success, 1 failure, 2 plan has changes (with --detailed-exitcode),
/// 64 usage error, 65 invalid plan file, 10-16 refusals (see the README).
#[derive(Debug, Parser)]
#[command(name = "guardctl", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Run as if started in PATH (like `git -C`); default: discover from the working directory
    #[arg(short = 'C', long = "repo", value_name = "PATH", global = true)]
    pub repo: Option<PathBuf>,

    /// Print exactly one JSON document on stdout; text, hints and progress go to stderr
    #[arg(long, global = true)]
    pub json: bool,

    /// When to colour output (auto honours NO_COLOR and terminals)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", global = true)]
    pub color: ColorChoice,

    /// Only print data and errors, no status lines
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Signing key: a private key, or a public key whose private half is in ssh-agent
    /// [default: $GUARDCTL_KEY, git's user.signingKey with gpg.format=ssh, else the per-user key `whoami --generate` made]
    #[arg(long, value_name = "PATH", global = true)]
    pub key: Option<PathBuf>,

    /// Allowed-signers file mapping keys to principals (git's format)
    /// [default: $GUARDCTL_ALLOWED_SIGNERS, git's gpg.ssh.allowedSignersFile, else
    /// .guardctl/allowed_signers as committed on the team remote's default branch (never the
    /// work tree's copy)]
    #[arg(long, value_name = "PATH", global = true)]
    pub allowed_signers: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Plan(commands::plan::Args),
    Show(commands::show::Args),
    Approve(commands::approve::Args),
    Reject(commands::reject::Args),
    Verify(commands::verify::Args),
    Inbox(commands::inbox::Args),
    Wait(commands::wait::Args),
    Apply(commands::apply::Args),
    Rollback(commands::rollback::Args),
    Recover(commands::recover::Args),
    Log(commands::log::Args),
    Whoami(commands::whoami::Args),
    Gc(commands::gc::Args),
    Completions(commands::completions::Args),
    Demo(commands::demo::Args),
    Mcp(crate::mcp::Args),
    Hook(commands::hook::Args),
    Guard(commands::guard::Args),
    Doctor(commands::doctor::Args),
    Explain(commands::explain::Args),
}

/// The clap definition, for completions, man pages and their staleness test.
pub fn command() -> clap::Command {
    Cli::command()
}
