//! End-to-end tests of the `guardctl` binary over real temporary repositories.
//! One module per capability (a command, or what it must hold against: trust roots, the
//! ledger, the sandbox…), each with the attacks on it; `fixtures` is the one helper that
//! builds repositories and keys. Heavy tests sit in a `mod heavy` of their file and run only
//! with `GUARDCTL_HEAVY_TESTS=1` (`fixtures::skip_heavy`).

// Tests and their helpers may panic: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply;
mod attack_findings;
mod attack_signing;
mod audit_evidence;
mod bulk;
mod ci_action;
mod consumed;
mod docs;
mod docs_commands;
mod exec;
mod exec_pins;
mod fixtures;
mod git_env;
mod hook;
mod hook_corpus;
mod hook_effect;
mod hook_fixture;
mod hook_peers;
mod hostile;
mod identity;
mod json_contract;
mod json_shapes;
mod kill_soak;
mod layers;
mod ledger;
mod mcp;
mod mcp_official;
mod plan;
mod plan_file;
mod policy;
mod prompt;
mod readme_walkthrough;
mod readonly;
mod recover;
mod recover_attacks;
mod recover_attacks2;
mod remote;
mod remote_untrusted;
mod remote_url;
mod review;
mod rollback;
mod sandbox;
mod show;
mod show_markdown;
mod show_markdown_attacks;
mod squash;
mod state;
mod tags;
mod teams;
mod teams_race;
// The trial runs from the test harness through the built guardctl (a test hook).
#[cfg(feature = "test-hooks")]
mod trial;
mod trust;
mod wait;
mod whoami;
