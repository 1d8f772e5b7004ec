//! One meaning of "consumed" (issue 12): after an apply that completed, was rolled back, was
//! refused or was aborted, `verify` answers what `apply` then does, with the same exit code.

use crate::fixtures::{TestEnv, standard_repo};

/// An approved plan of the merged branches in `standard_repo`.
fn approved() -> TestEnv {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    env
}

fn completed(env: &TestEnv) {
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
}

fn rolled_back(env: &TestEnv) {
    completed(env);
    assert_eq!(env.run("alice", &["rollback", "plan.json"]).code, 0);
}

/// Refused for drift (a planned branch moved), then the branch put back where it was.
fn refused_then_undone(env: &TestEnv) {
    let tip = env.git(&["rev-parse", "fix/old"]).trim().to_string();
    env.git(&["update-ref", "refs/heads/fix/old", "main"]);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 10);
    env.git(&["update-ref", "refs/heads/fix/old", &tip]);
}

/// Refused for drift, and still drifted.
fn refused(env: &TestEnv) {
    env.git(&["update-ref", "refs/heads/fix/old", "main"]);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 10);
}

/// Killed once the plan was consumed, then recovered: recovery abandons it (nothing deleted).
fn aborted(env: &TestEnv) {
    let r = env.run_env(
        "alice",
        &[("GUARDCTL_TEST_CRASH_AFTER", "consumed")],
        &["apply", "plan.json"],
    );
    assert_eq!(r.code, -1, "killed (SIGKILL): {}", r.transcript());
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// A state an earlier apply left, how it is made, and the exit code both must give.
type State = (&'static str, fn(&TestEnv), i32);

#[test]
fn verify_and_apply_agree_on_every_consumed_state() {
    let table: [State; 5] = [
        ("completed", completed, 0),
        ("rolled back", rolled_back, 0),
        ("refused, drift undone", refused_then_undone, 0),
        ("refused, still drifted", refused, 10),
        ("aborted", aborted, 10),
    ];
    for (state, setup, code) in table {
        let env = approved();
        setup(&env);
        let verify = env.run("alice", &["verify", "plan.json"]);
        assert_eq!(verify.code, code, "verify after {state}: {}", verify.transcript());
        let apply = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(apply.code, code, "apply after {state}: {}", apply.transcript());
        let json = env.run("alice", &["--json", "verify", "plan.json"]);
        assert_eq!(json.code, code, "verify --json after {state}");
    }
}
