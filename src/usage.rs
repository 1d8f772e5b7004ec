//! Usage errors before a command runs: the single-dash long flags guardctl refuses, and the
//! mapping of clap's parse failures to the contract's `usage` error (exit 64) with a message
//! of its own and a hint, so that `--json` callers get `details.hint` on these too.
//!
//! Not here: usage errors a command finds itself (they are ordinary [`Error`]s).

use crate::error::Error;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use std::ffi::OsString;

/// Every long flag name of the command line, any subcommand.
fn long_flags(cmd: &clap::Command, out: &mut Vec<String>) {
    for a in cmd.get_arguments() {
        if let Some(l) = a.get_long() {
            out.push(l.to_string());
        }
    }
    for sub in cmd.get_subcommands() {
        long_flags(sub, out);
    }
}

/// terraform's single-dash flags that guardctl has no flag of the same name for, with what to
/// type instead: a terraform habit gets an answer, not clap's generic error.
const TERRAFORM_FLAGS: &[(&str, &str)] = &[
    (
        "auto-approve",
        "guardctl apply never asks: the approval is another person's `guardctl approve` (whose own prompt `--yes` skips); drop -auto-approve",
    ),
    ("no-color", "use --color never"),
    ("target", "name what to plan with --match GLOB (repeatable)"),
    (
        "input",
        "guardctl never prompts without a terminal (`approve` needs --yes there); drop -input",
    ),
];

/// A long flag written with one dash (`-out=x`, `-json`, terraform's habit). clap reads
/// `-out=x` as `-o ut=x` and writes a file named `ut=x`, so it is refused before parsing.
/// Arguments after `--` (an exec plan's command) are never looked at.
pub fn single_dash_long_flag(args: &[OsString], cmd: &clap::Command) -> Option<Error> {
    let mut names = Vec::new();
    long_flags(cmd, &mut names);
    for arg in args.iter().skip(1) {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        let Some(rest) = arg.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
            continue;
        };
        let name = rest.split('=').next().unwrap_or_default();
        if let Some((_, instead)) = TERRAFORM_FLAGS.iter().find(|(f, _)| *f == name) {
            let shown = crate::text::safe(arg);
            return Some(
                Error::usage(format!("`{shown}` is terraform's flag, not guardctl's")).with_hint(*instead),
            );
        }
        if name.len() > 1 && names.iter().any(|n| n == name) {
            let shown = crate::text::safe(arg);
            return Some(
                Error::usage(format!("`{shown}` is a long flag written with one dash"))
                    .with_hint(format!("did you mean --{}?", crate::text::safe(rest))),
            );
        }
    }
    None
}

/// The contract's usage error for a clap parse failure: clap's first line as the message
/// (never a command's about text), and a hint saying what to type instead.
pub fn from_clap(e: &clap::Error, args: &[OsString]) -> Error {
    let rendered = e.to_string();
    let first = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    let suggested = match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let invalid_arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let valid = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    };
    match e.kind() {
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let (path, subs) = missing_subcommand(args);
            Error::usage(format!("`{path}` needs one of: {}", subs.join(", "))).with_hint(format!(
                "e.g. `{path} {}`; see `{path} --help`",
                subs.first().map_or("", String::as_str)
            ))
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if invalid_arg.contains("<DUR>") => {
            Error::usage(first)
                .with_hint("a duration is a number and a unit: 30s, 15min, 2h, 1d, 2w, 6mo, 1y (for an age, m alone is ambiguous)")
        }
        _ => {
            let hint = if let Some(s) = suggested {
                format!("did you mean {s}?")
            } else if !valid.is_empty() {
                format!("use one of: {}", valid.join(", "))
            } else {
                "see `guardctl --help`, or `guardctl <command> --help`".to_string()
            };
            Error::usage(first).with_hint(hint)
        }
    }
}

/// The command whose subcommand is missing (`guardctl plan`) and its subcommands' names:
/// the deepest command the arguments name.
fn missing_subcommand(args: &[OsString]) -> (String, Vec<String>) {
    let mut cmd = crate::cli::command();
    let mut path = vec!["guardctl".to_string()];
    for arg in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = cmd.find_subcommand(arg).cloned() {
            path.push(arg.to_string());
            cmd = sub;
        }
    }
    let subs = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect();
    (path.join(" "), subs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Option<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        single_dash_long_flag(&args, &crate::cli::command()).and_then(|e| e.hint)
    }

    #[test]
    fn single_dash_long_flags_are_refused_with_the_double_dash_spelling() {
        assert_eq!(
            check(&["guardctl", "plan", "stale-branches", "-out=tf.json"]).as_deref(),
            Some("did you mean --out=tf.json?")
        );
        assert_eq!(
            check(&["guardctl", "show", "-json"]).as_deref(),
            Some("did you mean --json?")
        );
    }

    /// Issue 34 item 13: terraform's other single-dash flags get an answer too.
    #[test]
    fn terraforms_single_dash_flags_say_what_guardctl_does_instead() {
        let hint = check(&["guardctl", "apply", "plan.json", "-auto-approve"]).unwrap();
        assert!(hint.contains("approve"), "{hint}");
        assert!(
            check(&["guardctl", "show", "plan.json", "-no-color"])
                .unwrap()
                .contains("--color never")
        );
        // After `--`, an exec plan's command keeps its own flags.
        assert_eq!(
            check(&[
                "guardctl",
                "plan",
                "exec",
                "--",
                "terraform",
                "apply",
                "-auto-approve"
            ]),
            None
        );
    }

    #[test]
    fn short_flags_with_attached_values_and_exec_commands_are_left_alone() {
        assert_eq!(
            check(&["guardctl", "plan", "stale-branches", "-oplan.json", "-q"]),
            None
        );
        assert_eq!(check(&["guardctl", "-C", "repo", "show"]), None);
        assert_eq!(
            check(&[
                "guardctl",
                "plan",
                "exec",
                "--preview",
                "ls",
                "--",
                "rm",
                "-verify"
            ]),
            None
        );
    }
}
