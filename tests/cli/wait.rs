//! `guardctl wait`: blocks until a person decides, then says how (0 approved, 12 rejected,
//! 11 expired, 75 when the time allowed runs out), for a plan file and for a plan published on
//! the team remote and approved from another clone.

use crate::fixtures::{Run, TestEnv, standard_repo};
use std::process::Stdio;

fn planned(env: &TestEnv) -> String {
    let r = env.run("alice", &["plan", "stale-branches", "-o", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    "plan.json".to_string()
}

fn state(r: &Run) -> String {
    r.json()["state"].as_str().unwrap().to_string()
}

#[test]
fn an_approved_plan_ends_the_wait_with_0() {
    let env = standard_repo();
    let plan = planned(&env);
    let r = env.run("alice", &["approve", &plan, "--yes"]);
    assert_eq!(r.code, 12, "self-approval is refused: {}", r.transcript());
    assert_eq!(env.run("bob", &["approve", &plan, "--yes"]).code, 0);
    let r = env.run("alice", &["--json", "wait", &plan, "--timeout", "60s"]);
    assert_eq!((r.code, state(&r)), (0, "approved".into()), "{}", r.transcript());
    assert_eq!(r.json()["approved_by"][0], "bob@example.com");
}

#[test]
fn a_rejection_ends_it_with_12_and_expiry_with_11() {
    let env = standard_repo();
    let plan = planned(&env);
    // An hour and a bit later, by the test clock: past the default expiry.
    let later = [("GUARDCTL_TEST_NOW", "2026-06-01T13:00:01Z")];
    let r = env.run_env("alice", &later, &["--json", "wait", &plan, "--timeout", "60s"]);
    assert_eq!((r.code, state(&r)), (11, "expired".into()), "{}", r.transcript());
    let r = env.run("bob", &["reject", &plan, "--comment", "keep them"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["--json", "wait", &plan, "--timeout", "60s"]);
    assert_eq!((r.code, state(&r)), (12, "rejected".into()), "{}", r.transcript());
    assert_eq!(r.json()["rejected_by"][0], "bob@example.com");
}

#[test]
fn running_out_of_time_is_75_with_what_is_still_missing() {
    let env = standard_repo();
    let plan = planned(&env);
    let r = env.run("alice", &["--json", "wait", &plan, "--timeout", "1s"]);
    assert_eq!(r.code, 75, "{}", r.transcript());
    let doc = r.json();
    assert_eq!(doc["state"], "awaiting_approval");
    assert_eq!(doc["timed_out"], true);
    assert_eq!(doc["missing"][0]["missing"], 1);
    let r = env.run("alice", &["wait", &plan, "--timeout", "1s"]);
    assert!(r.stdout.contains("still awaiting approval"), "{}", r.transcript());
}

#[test]
fn an_approval_given_while_it_waits_is_seen() {
    let env = standard_repo();
    let plan = planned(&env);
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["--json", "wait", &plan, "--timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let waiting = c.spawn().unwrap();
    // The waiter says it is waiting once it has looked; approve after that.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(env.run("bob", &["approve", &plan, "--yes"]).code, 0);
    let out = waiting.wait_with_output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), doc["state"].as_str()),
        (Some(0), Some("approved"))
    );
    assert!(doc["waited_secs"].as_u64().unwrap() < 60);
}

#[test]
fn a_published_plan_approved_from_another_clone_ends_the_wait() {
    let policy = "version = 1\n";
    let t = crate::fixtures::team(policy);
    let id = format!(
        "sha256:{}",
        crate::fixtures::publish(&t.env, &t.planner, "plan.json", &[])
    );
    // The planner's machine waits on the id; bob approves in his own clone and publishes.
    let r = t
        .env
        .run_in(&t.planner, "alice", &["--json", "wait", &id, "--timeout", "1s"]);
    assert_eq!(r.code, 75, "{}", r.transcript());
    let r = t
        .env
        .run_in(&t.bob, "bob", &["approve", &id, "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t
        .env
        .run_in(&t.planner, "alice", &["--json", "wait", &id, "--timeout", "60s"]);
    assert_eq!((r.code, state(&r)), (0, "approved".into()), "{}", r.transcript());
    assert_eq!(r.json()["approved_by"][0], "bob@example.com");
}
