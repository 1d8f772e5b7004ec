//! Attacks on the ledger branch (issue 29): a planner with push access to a remote that
//! protects branches only against deletion and non-fast-forward pushes.

use crate::fixtures::{Team, TestEnv, protect_refs, publish};
use std::path::Path;

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

const LEDGER: &str = "refs/heads/guardctl/ledger";

/// What a host does for the ledger branch as docs/remote.md "Protecting the ledger" asks: no
/// deletion and no force-push (the team's other branches stay deletable: plans delete them).
fn protect_the_ledger(remote: &Path) {
    protect_refs(remote, LEDGER);
}

fn team() -> Team {
    crate::fixtures::team(POLICY)
}

/// The first-parent commit of the remote's ledger that added a file under `dir` (a path in
/// the ledger, e.g. `rejections/<id>`).
fn commit_adding(env: &TestEnv, dir: &str) -> String {
    let origin = env.origin();
    let chain = env.git_in(&origin, &["log", "--first-parent", "--format=%H", LEDGER, "--"]);
    chain
        .lines()
        .find(|c| {
            env.git_in(&origin, &["ls-tree", "-r", "--name-only", c])
                .lines()
                .any(|p| p.starts_with(dir))
        })
        .unwrap_or_else(|| panic!("no ledger commit adds {dir}"))
        .to_string()
}

/// Push onto the ledger, from `clone`, a merge commit whose first parent is `first` and whose
/// second is the ledger's current tip: a fast-forward (the tip is an ancestor), so a host
/// that only refuses rewinds takes it.
fn push_merge_skipping(env: &TestEnv, clone: &Path, first: &str) {
    env.git_in(
        clone,
        &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/forged/ledger")],
    );
    let tip = env.git_in(clone, &["rev-parse", "refs/forged/ledger"]);
    let empty = env.git_in(clone, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let merge = env.git_in(
        clone,
        &["commit-tree", &empty, "-p", first, "-p", &tip, "-m", "merge"],
    );
    env.git_in(clone, &["push", "-q", "origin", &format!("{merge}:{LEDGER}")]);
    assert_eq!(
        env.ledger_tip(),
        merge,
        "the host took the merge as a fast-forward"
    );
}

#[test]
fn a_merge_commit_whose_first_parent_skips_a_rejection_does_not_lift_the_veto() {
    let t = team();
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t
        .env
        .run_in(&t.carol, "carol", &["reject", &id[..12], "--comment", "not now"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    protect_the_ledger(&t.env.origin());
    // The executor's clone sees the veto (and records the tip).
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let rejection = commit_adding(&t.env, &format!("rejections/{id}"));
    // t.planner has the objects after a fetch; the rejection's parent is the approved plan.
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
    );
    let before = t
        .env
        .git_in(&t.planner, &["rev-parse", &format!("{rejection}~1")]);
    push_merge_skipping(&t.env, &t.planner, &before);
    let fresh = t.env.clones(&["fresh"]).remove(0);
    for dir in [&fresh, &t.executor] {
        let r = t.env.run_in(dir, "mallory", &["apply", &id[..12]]);
        assert_ne!(r.code, 0, "the veto was lifted: {}", r.transcript());
        assert!(
            r.stderr.contains("rejected by carol@example.com: not now"),
            "{}",
            r.transcript()
        );
    }
}

#[test]
fn a_merge_commit_whose_first_parent_skips_the_consumed_marker_does_not_let_a_plan_apply_twice() {
    let t = team();
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    protect_the_ledger(&t.env.origin());
    let branches = t.env.remote_branches();
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_ne!(
        t.env.remote_branches(),
        branches,
        "the first apply deleted branches"
    );
    let consumed = commit_adding(&t.env, &format!("consumed/{id}"));
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
    );
    let before = t.env.git_in(&t.planner, &["rev-parse", &format!("{consumed}~1")]);
    push_merge_skipping(&t.env, &t.planner, &before);
    // The planner puts the deleted branches back at the tips the plan names.
    for line in branches.lines() {
        let (name, oid) = line.split_once(' ').unwrap();
        t.env.git_in(&t.env.origin(), &["update-ref", name, oid]);
    }
    assert_eq!(t.env.remote_branches(), branches);
    let fresh = t.env.clones(&["fresh"]).remove(0);
    for dir in [&fresh, &t.executor] {
        let r = t.env.run_in(dir, "mallory", &["apply", &id[..12]]);
        // Refused, or a replay of the first apply: either way nothing is deleted again.
        assert!(
            r.code != 0 || r.stdout.contains("nothing was changed now"),
            "{}",
            r.transcript()
        );
        assert_eq!(
            t.env.remote_branches(),
            branches,
            "the plan applied twice: {}",
            r.transcript()
        );
    }
}
