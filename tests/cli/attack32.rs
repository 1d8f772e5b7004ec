//! Attacks on the remote's backups branch (`refs/heads/guardctl/backups`, `repo::backups`)
//! and on `rollback` from a clone that did not apply the plan: a hostile teammate who can
//! push to the team remote (whose host protects only `refs/heads/*` and `refs/tags/*` from
//! deletion and force pushes, so fast-forwards by anyone remain allowed), and a hostile
//! executor who holds a valid key and re-signs what they like.

use crate::fixtures::{Team, protect_refs, publish};
use std::fs;
use std::path::PathBuf;

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

/// The team, its remote protecting guardctl's branches as docs/remote.md says (no deletion,
/// no rewind): fast-forwards by anyone with push access remain allowed.
fn team() -> Team {
    let t = crate::fixtures::team(POLICY);
    protect_refs(&t.env.origin(), "refs/heads/guardctl/*");
    t
}

/// Alice publishes a plan of `extra`'s remote branches and bob approves it: its id's hex.
fn approved(t: &Team, name: &str, extra: &[&str]) -> String {
    let id = publish(&t.env, &t.planner, name, extra);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    id
}

#[test]
fn a_receipt_re_signed_by_its_executor_to_list_an_unplanned_ref_restores_nothing_from_another_clone() {
    // Attack (hostile executor): dave applies the plan from a CI clone, which dies after
    // the receipt was signed and before it was published; the first receipt at a ledger
    // name is the one every clone reads, so dave publishes his own first: the genuine one
    // re-signed with his (valid) key, listing one more "deleted" ref the plan never
    // planned. A rollback from another clone would create that ref on the remote.
    let t = team();
    let id = approved(&t, "plan.json", &[]);
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_env(
        "mallory",
        &[("GUARDCTL_TEST_CRASH_AFTER", "done")],
        &["-C", ci.to_str().unwrap(), "apply", &id[..12]],
    );
    assert_eq!(r.code, -1, "killed: {}", r.transcript());
    let before = t.env.remote_branches();
    assert!(
        !before.contains("refs/heads/fix/old "),
        "the push landed: {before}"
    );
    let genuine = fs::read_to_string(ci.join(format!(".git/guardctl/plans/{id}/receipt.json"))).unwrap();
    let main = t.env.git(&["rev-parse", "origin/main"]).trim().to_string();
    let (forged, _) = crate::trust::resign(&t.env, &genuine, "mallory", |b| {
        b["deleted"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"ref": "refs/heads/release", "oid": main}));
    });
    t.env
        .push_to_ledger(&t.carol, &[(&format!("receipts/{id}/receipt.json"), &forged)]);

    let r = t.env.run_in(&t.planner, "alice", &["rollback", &id[..12]]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(
        r.stderr.contains("its receipt lists refs/heads/release")
            && r.stderr.contains("which the plan did not plan to delete"),
        "{}",
        r.stderr
    );
    assert_eq!(t.env.remote_branches(), before, "nothing was restored");
}

#[test]
fn a_published_local_plan_applied_in_another_clone_is_not_rolled_back_here() {
    // A local plan's refs were in the clone that applied it: its receipt is published (so
    // every inbox stops listing it), and a rollback elsewhere refuses (64), restoring
    // nothing on the remote.
    let env = crate::fixtures::standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let hex = id.trim_start_matches("sha256:");
    assert!(
        !env.published_under(&env.origin(), &format!("refs/guardctl/receipts/{hex}"))
            .is_empty(),
        "the receipt is published"
    );
    let [other] = <[PathBuf; 1]>::try_from(env.clones(&["other"])).unwrap();
    let before = env.remote_branches();
    let r = env.run_in(&other, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("was applied in another clone")
            && r.stderr.contains("it is a local plan of that clone"),
        "{}",
        r.stderr
    );
    assert_eq!(env.remote_branches(), before);
}

#[test]
fn an_exec_plan_applied_from_another_clone_has_no_rollback_here() {
    let env = crate::fixtures::remote_repo();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::write(
        env.repo.join("scripts/prune.sh"),
        "#!/bin/sh\nfor f in trash/*; do\n  if [ \"$1\" = --dry-run ]; then echo \"would remove $f\"; else rm \"$f\"; fi\ndone\n",
    )
    .unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("trash/a"), "a").unwrap();
    env.git(&["add", "scripts", "trash"]);
    env.git(&["commit", "-q", "-m", "prune script"]);
    env.git(&["push", "-q", "origin", "main"]);
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--remote",
            "origin",
            "--publish",
            "--preview",
            "sh scripts/prune.sh --dry-run",
            "--",
            "sh",
            "scripts/prune.sh",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let hex = id.trim_start_matches("sha256:").to_string();
    let [ci, other] = <[PathBuf; 2]>::try_from(env.clones(&["ci", "other"])).unwrap();
    let plan = env.repo.join("plan.json");
    let r = env.run_in(&ci, "alice", &["apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.remote_branches();
    let r = env.run_in(&other, "alice", &["rollback", &hex[..12]]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("was applied in another clone")
            && r.stderr.contains("an exec plan has no rollback"),
        "{}",
        r.stderr
    );
    assert_eq!(env.remote_branches(), before);
}
