//! The JSON contract agents program against (issue 15): one document per run, `not_found`
//! apart from `invalid_plan`, `replayed`, `warnings`, a hint on every error (usage errors
//! too), single-dash long flags refused, and a plan that matches nothing needing no approval.

use crate::apply::{approve, planned};
use crate::fixtures::{Run, TestEnv, standard_repo};

/// stdout holds exactly one JSON document (and nothing else).
pub fn one_document(r: &Run) -> serde_json::Value {
    let mut docs = serde_json::Deserializer::from_str(&r.stdout).into_iter::<serde_json::Value>();
    let first = docs
        .next()
        .unwrap_or_else(|| panic!("no JSON document on stdout:\n{}", r.transcript()))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", r.transcript()));
    assert!(
        docs.next().is_none(),
        "more than one document:\n{}",
        r.transcript()
    );
    first
}

/// A usage error with a hint, as one JSON document.
fn usage_error_with_hint(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    usage_error_as(env, "alice", args)
}

fn usage_error_as(env: &TestEnv, user: &str, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let r = env.run(user, &full);
    assert_eq!(r.code, 64, "{}", r.transcript());
    let v = one_document(&r);
    assert_eq!(v["error"]["kind"], "usage", "{}", r.transcript());
    let hint = v["error"]["details"]["hint"].as_str().unwrap_or_default();
    assert!(!hint.is_empty(), "no hint: {}", r.transcript());
    // The one error document (issue 34 item 8): what MCP tool errors carry, the CLI too.
    assert_eq!(v["error"]["exit_code"], 64, "{}", r.transcript());
    assert_eq!(v["error"]["hint"], hint);
    assert!(
        v["error"]["meaning"]
            .as_str()
            .is_some_and(|m| m.starts_with("usage error")),
        "{}",
        r.transcript()
    );
    v
}

#[test]
fn a_missing_plan_file_is_not_found_66_not_invalid() {
    let env = standard_repo();
    for cmd in ["show", "verify", "apply", "approve"] {
        let r = env.run("bob", &["--json", cmd, "no-such-plan.json"]);
        assert_eq!(r.code, 66, "{cmd}: {}", r.transcript());
        let v = one_document(&r);
        assert_eq!(v["error"]["kind"], "not_found", "{cmd}");
        assert_eq!(v["error"]["exit_code"], 66, "{cmd}");
        assert!(v["error"]["details"]["hint"].is_string());
    }
    // A tampered file is still 65.
    std::fs::write(env.repo.join("bad.json"), "{}").unwrap();
    let r = env.run("bob", &["--json", "show", "bad.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert_eq!(one_document(&r)["error"]["kind"], "invalid_plan");
}

#[test]
fn a_replayed_apply_says_replayed_in_json_and_a_fresh_one_does_not() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let fresh = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(fresh.code, 0, "{}", fresh.transcript());
    assert_eq!(one_document(&fresh)["replayed"], false);
    let again = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    let v = one_document(&again);
    assert_eq!(v["replayed"], true);
    assert_eq!(
        v["receipt"],
        one_document(&fresh)["receipt"],
        "the same recorded receipt"
    );
}

#[test]
fn an_executor_no_one_holds_is_a_warning_in_json() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &[
            "--json",
            "plan",
            "stale-branches",
            "--executor",
            "nobody@example.com",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let warnings = one_document(&r)["warnings"].clone();
    assert!(
        warnings.as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("executor nobody@example.com is in no allowed-signers line")),
        "{warnings}"
    );
    // A planner the allowed signers know, with its own executor: no warnings.
    let r = env.run("alice", &["--json", "plan", "stale-branches"]);
    assert_eq!(one_document(&r)["warnings"], serde_json::json!([]));
}

#[test]
fn a_planner_key_with_no_principal_is_a_warning_in_json() {
    let env = standard_repo();
    let r = env.run("mallory", &["--json", "plan", "stale-branches"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = one_document(&r);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("maps to no principal"),
        "{}",
        r.transcript()
    );
}

#[test]
fn usage_errors_carry_a_hint() {
    let env = standard_repo();
    let v = usage_error_with_hint(&env, &["plan", "stale-branches", "--base", "no-such-ref"]);
    assert!(v["error"]["details"]["hint"].as_str().unwrap().contains("--base"));
    let v = usage_error_with_hint(&env, &["plan", "stale-branches", "--older-than", "5x"]);
    assert!(v["error"]["details"]["hint"].as_str().unwrap().contains("15m"));
    let v = usage_error_with_hint(&env, &["plan", "stale-branches", "--exclde", "x"]);
    assert_eq!(v["error"]["details"]["hint"], "did you mean --exclude?");
}

#[test]
fn plan_without_an_operation_names_the_operations_not_the_about_text() {
    let env = standard_repo();
    let v = usage_error_with_hint(&env, &["plan"]);
    let message = v["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "`guardctl plan` needs one of: stale-branches, remote-branches, tags, exec"
    );
    assert!(!message.contains("Observe and write"));
    let r = env.run("alice", &["plan"]);
    assert!(
        r.stderr.contains("hint: e.g. `guardctl plan stale-branches`"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_unknown_review_group_is_a_usage_error_with_a_hint() {
    let env = planned();
    let v = usage_error_as(&env, "bob", &["approve", "plan.json", "--yes", "--group", "nope"]);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no review group `nope`")
    );
}

/// Issue 34 item 13: terraform's `-auto-approve` (which guardctl has no flag for) gets an
/// answer saying what guardctl does instead, 64, not clap's generic error.
#[test]
fn terraforms_auto_approve_is_answered_with_what_guardctl_does_instead() {
    let env = standard_repo();
    let r = env.run("alice", &["apply", "plan.json", "-auto-approve"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("terraform's flag"), "{}", r.stderr);
    assert!(r.stderr.contains("guardctl approve"), "{}", r.stderr);
}

#[test]
fn single_dash_long_flags_are_refused_with_the_double_dash_spelling() {
    let env = standard_repo();
    let v = usage_error_with_hint(&env, &["plan", "stale-branches", "-out=tf.json"]);
    assert_eq!(v["error"]["details"]["hint"], "did you mean --out=tf.json?");
    assert!(
        !env.repo.join("ut=tf.json").exists(),
        "no file named after the mangled flag"
    );
    assert!(!env.repo.join("tf.json").exists());
    // `-json` asked for JSON: the refusal is one JSON document, and the hint is on stderr.
    let r = env.run("alice", &["show", "-json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("hint: did you mean --json?"), "{}", r.stderr);
    assert_eq!(one_document(&r)["error"]["kind"], "usage");
    // Nothing else is mistaken for one: a short flag with its value attached still works.
    let r = env.run("alice", &["plan", "stale-branches", "-omine.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(env.repo.join("mine.json").exists());
}

#[test]
fn a_plan_that_matches_nothing_applies_with_no_approval() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--match", "no-such-branch-*"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // show says what apply will do: no approval is needed.
    let shown = env.run("bob", &["show", "plan.json"]);
    assert!(
        shown
            .stdout
            .contains("approvals  none needed (the plan changes nothing)"),
        "{}",
        shown.stdout
    );
    assert_eq!(
        env.run("bob", &["--json", "show", "plan.json"]).json()["approvals"]["not_needed"],
        true
    );
    let heads = || env.git(&["for-each-ref", "refs/heads"]);
    let before = heads();
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = one_document(&r);
    assert_eq!(v["receipt"]["deleted"], serde_json::json!([]), "{v:#}");
    assert!(
        before == heads(),
        "nothing to do, nothing done (the apply is only audited)"
    );
    // A veto still stands, even on a plan that changes nothing.
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--match",
            "no-such-branch-*",
            "-o",
            "p2.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let human = env.run("alice", &["apply", "p2.json"]);
    assert!(human.stdout.contains("nothing to do"), "{}", human.transcript());
    assert!(!human.stdout.contains("rollback"), "nothing to undo");
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--match",
            "no-such-branch-*",
            "-o",
            "p2.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["reject", "p2.json"]).code, 0);
    assert_eq!(env.run("alice", &["apply", "p2.json"]).code, 12);
}

#[test]
fn log_on_a_broken_chain_prints_one_json_document() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let path = env.repo.join(".git/guardctl/audit.log");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1] = lines[1].replacen("\"payload\":\"ey", "\"payload\":\"eZ", 1);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = env.run("alice", &["--json", "log"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    let v = one_document(&r);
    assert_eq!(v["error"]["kind"], "invalid_plan");
    assert_eq!(v["error"]["details"]["break"]["line"], 2, "{v:#}");
}

#[test]
fn demo_json_prints_one_document_with_every_step() {
    let env = TestEnv::new();
    let mut c = env.command();
    c.args(["--json", "demo"]);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = one_document(&r);
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() > 10, "{v:#}");
    assert!(steps.iter().all(|s| s["exit"] == s["expected"]), "{v:#}");
    assert!(
        r.stderr.contains("$ guardctl whoami"),
        "the narrative goes to stderr"
    );
}
