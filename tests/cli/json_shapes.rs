//! Every subcommand with `--json`, on success and on its failure paths: exactly one JSON
//! document on stdout, with the top-level keys docs/json.md documents for it (an error
//! document on failure).

use crate::apply::{approve, planned};
use crate::fixtures::{Run, TestEnv};
use crate::json_contract::one_document;
use std::collections::{BTreeMap, BTreeSet};

/// The documented top-level keys: section name (a command, or `error`) -> (key, optional).
fn documented() -> BTreeMap<String, Vec<(String, bool)>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let mut out: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = if h.starts_with("Errors") {
                vec!["error".into()]
            } else {
                h.split('`').skip(1).step_by(2).map(String::from).collect()
            };
        } else if let Some(row) = line.strip_prefix("| `") {
            let key = row.split('`').next().unwrap().to_string();
            let optional = row.contains("*optional*");
            for c in &current {
                out.entry(c.clone()).or_default().push((key.clone(), optional));
            }
        }
    }
    out
}

struct Checker {
    docs: BTreeMap<String, Vec<(String, bool)>>,
    seen: BTreeSet<String>,
}

impl Checker {
    /// `r` exited `code` and printed one document with `section`'s documented keys.
    fn check(&mut self, what: &str, r: &Run, code: i32, section: &str) {
        let section = if code == 0 || code == 2 { section } else { "error" };
        self.check_as(what, r, code, section);
    }

    /// [`Checker::check`] of a command whose non-zero `code` still prints its own document
    /// (`guard` denying, `wait` ending on a rejection).
    fn check_as(&mut self, what: &str, r: &Run, code: i32, section: &str) {
        assert_eq!(r.code, code, "{what}: {}", r.transcript());
        let v = one_document(r);
        let shape = self
            .docs
            .get(section)
            .unwrap_or_else(|| panic!("docs/json.md has no `{section}` table"));
        let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        for k in &keys {
            assert!(
                shape.iter().any(|(d, _)| d == k),
                "{what}: `{k}` is not documented for {section} in docs/json.md"
            );
        }
        for (k, optional) in shape {
            assert!(
                *optional || keys.contains(k.as_str()),
                "{what}: documented `{k}` missing"
            );
        }
        if section == "error" {
            let hint = v["error"]["details"]["hint"].as_str().unwrap_or_default();
            assert!(!hint.is_empty(), "{what}: an error without a hint");
            assert!(v["error"]["kind"].is_string() && v["error"]["message"].is_string());
        }
        self.seen.insert(what.split(' ').next().unwrap().to_string());
    }
}

fn json(env: &TestEnv, user: &str, args: &[&str]) -> Run {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    env.run(user, &full)
}

#[test]
fn every_subcommand_prints_one_documented_json_document_on_success_and_failure() {
    let mut c = Checker {
        docs: documented(),
        seen: BTreeSet::new(),
    };
    let env = planned();
    std::fs::write(env.repo.join("tampered.json"), "{\"payloadType\": 1}").unwrap();

    c.check(
        "plan",
        &json(
            &env,
            "alice",
            &["plan", "stale-branches", "--merged", "-o", "p2.json"],
        ),
        0,
        "plan",
    );
    c.check(
        "plan bad base",
        &json(&env, "alice", &["plan", "stale-branches", "--base", "nope"]),
        64,
        "plan",
    );
    c.check("plan no operation", &json(&env, "alice", &["plan"]), 64, "plan");
    c.check(
        "plan one-dash flag",
        &json(&env, "alice", &["plan", "stale-branches", "-out=x"]),
        64,
        "plan",
    );
    c.check("show", &json(&env, "bob", &["show", "plan.json"]), 0, "show");
    c.check(
        "show missing",
        &json(&env, "bob", &["show", "missing.json"]),
        66,
        "show",
    );
    c.check(
        "show tampered",
        &json(&env, "bob", &["show", "tampered.json"]),
        65,
        "show",
    );
    c.check(
        "show page past the end",
        &json(&env, "bob", &["show", "plan.json", "--page", "9"]),
        64,
        "show",
    );
    c.check(
        "verify unapproved",
        &json(&env, "alice", &["verify", "plan.json"]),
        12,
        "verify",
    );
    c.check(
        "apply unapproved",
        &json(&env, "alice", &["apply", "plan.json"]),
        12,
        "apply",
    );
    c.check(
        "approve self",
        &json(&env, "alice", &["approve", "plan.json", "--yes"]),
        12,
        "approve",
    );
    c.check(
        "approve missing",
        &json(&env, "bob", &["approve", "missing.json", "--yes"]),
        66,
        "approve",
    );
    c.check(
        "reject",
        &json(&env, "carol", &["reject", "p2.json", "--comment", "no"]),
        0,
        "reject",
    );
    c.check(
        "reject missing",
        &json(&env, "carol", &["reject", "missing.json"]),
        66,
        "reject",
    );
    c.check(
        "approve",
        &json(&env, "bob", &["approve", "plan.json", "--yes"]),
        0,
        "approve",
    );
    c.check(
        "verify",
        &json(&env, "alice", &["verify", "plan.json"]),
        0,
        "verify",
    );
    c.check(
        "verify wrong principal",
        &json(&env, "carol", &["verify", "plan.json"]),
        13,
        "verify",
    );
    let later = [("GUARDCTL_TEST_NOW", "2026-06-02T12:00:00Z")];
    let expired = env.run_env("alice", &later, &["--json", "apply", "plan.json"]);
    c.check("apply expired", &expired, 11, "apply");
    c.check(
        "apply wrong principal",
        &json(&env, "carol", &["apply", "plan.json"]),
        13,
        "apply",
    );
    c.check("apply", &json(&env, "alice", &["apply", "plan.json"]), 0, "apply");
    c.check(
        "apply replayed",
        &json(&env, "alice", &["apply", "plan.json"]),
        0,
        "apply",
    );
    c.check(
        "apply rejected",
        &json(&env, "alice", &["apply", "p2.json"]),
        12,
        "apply",
    );
    c.check("log", &json(&env, "alice", &["log"]), 0, "log");
    c.check("whoami", &json(&env, "alice", &["whoami"]), 0, "whoami");
    c.check("gc", &json(&env, "alice", &["gc"]), 0, "gc");
    c.check("recover", &json(&env, "alice", &["recover"]), 0, "recover");
    c.check(
        "rollback",
        &json(&env, "alice", &["rollback", "plan.json"]),
        0,
        "rollback",
    );
    c.check(
        "rollback missing",
        &json(&env, "alice", &["rollback", "missing.json"]),
        66,
        "rollback",
    );
    c.check(
        "completions",
        &json(&env, "alice", &["completions", "bash"]),
        0,
        "completions",
    );
    c.check(
        "completions bad shell",
        &json(&env, "alice", &["completions", "nosh"]),
        64,
        "completions",
    );

    // Drift: a planned branch moved after approval.
    let env2 = planned();
    assert_eq!(approve(&env2, "bob").code, 0);
    env2.git(&["branch", "-f", "feature/done", "feature/live"]);
    c.check(
        "verify drift",
        &json(&env2, "alice", &["verify", "plan.json"]),
        10,
        "verify",
    );
    c.check(
        "apply drift",
        &json(&env2, "alice", &["apply", "plan.json"]),
        10,
        "apply",
    );
    // A broken audit log.
    let path = env.repo.join(".git/guardctl/audit.log");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"payload\":\"ey", "\"payload\":\"eZ", 1)).unwrap();
    c.check("log broken", &json(&env, "alice", &["log"]), 65, "log");
    // Outside any repository.
    let mut outside = env.command();
    outside.current_dir(env.path()).args(["--json", "log"]);
    c.check(
        "log outside a repository",
        &crate::fixtures::run(outside),
        64,
        "log",
    );

    // inbox: the plans published on origin (one, approvable by bob); outside a remote, usage.
    let r = json(
        &env2,
        "alice",
        &["plan", "stale-branches", "--merged", "-o", "p3.json", "--publish"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    c.check("inbox", &json(&env2, "bob", &["inbox"]), 0, "inbox");
    env2.git(&["remote", "remove", "origin"]);
    c.check(
        "inbox without a remote",
        &json(&env2, "bob", &["inbox"]),
        64,
        "inbox",
    );

    // guard: allowed (0) and denied with a plan (3); wait: approved (0), timed out (75).
    c.check(
        "guard",
        &json(&env2, "alice", &["guard", "--", "git", "status"]),
        0,
        "guard",
    );
    c.check_as(
        "guard denied",
        &json(&env2, "alice", &["guard", "--", "git branch -D feature/live"]),
        3,
        "guard",
    );
    c.check(
        "guard bad rules",
        &json(&env2, "alice", &["guard", "--rules", "missing.toml", "--", "ls"]),
        64,
        "guard",
    );
    // explain: a line the reader clears (0), one it sends to the trial that deletes (3).
    c.check(
        "explain",
        &json(&env2, "alice", &["explain", "--", "git status"]),
        0,
        "explain",
    );
    c.check_as(
        "explain tried",
        &json(
            &env2,
            "alice",
            &["explain", "--", "git update-ref -d refs/heads/feature/live"],
        ),
        3,
        "explain",
    );
    // doctor: nothing installed here, so a problem (1) with its document.
    c.check_as("doctor", &json(&env2, "alice", &["doctor"]), 1, "doctor");
    let waited = planned();
    assert_eq!(approve(&waited, "bob").code, 0);
    c.check("wait", &json(&waited, "alice", &["wait", "plan.json"]), 0, "wait");
    let pending = planned();
    c.check_as(
        "wait timed out",
        &json(&pending, "alice", &["wait", "plan.json", "--timeout", "1s"]),
        75,
        "wait",
    );
    c.check(
        "wait missing",
        &json(&pending, "alice", &["wait", "missing.json"]),
        66,
        "wait",
    );

    let mut demo = env.command();
    demo.args(["--json", "demo"]);
    c.check("demo", &crate::fixtures::run(demo), 0, "demo");

    let all: BTreeSet<String> = guardctl::cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        // Protocol front ends: their output is their harness's protocol, not guardctl's JSON.
        .filter(|n| n != "mcp" && n != "help" && n != "hook")
        .collect();
    let missing: Vec<&String> = all.difference(&c.seen).collect();
    assert!(
        missing.is_empty(),
        "subcommands never run with --json here: {missing:?}"
    );
}
