//! End-to-end tests of the `guardctl` binary over real temporary repositories.
//! One module per command; `fixtures` is the one helper that builds repositories and keys.

// Tests and their helpers may panic: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply;
mod attack;
mod attack16;
mod attack2;
mod attack27;
mod attack28;
mod attack29;
mod attack3;
mod attack30;
mod attack31;
mod attack32;
mod attack33;
mod audit_evidence;
mod consumed;
mod docs;
mod exec;
mod fixtures;
mod git_env;
mod hostile;
mod identity;
mod json_contract;
mod json_shapes;
mod layers;
mod ledger;
mod mcp;
mod plan;
mod plan_file;
mod policy;
mod prompt;
mod readonly;
mod recover;
mod remote;
mod remote_url;
mod review;
mod sandbox;
mod show;
mod squash;
mod state;
mod tags;
mod teams;
mod teams_race;
mod trust;
mod whoami;
