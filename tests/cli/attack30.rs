//! Attacks on the plan published with its consumed marker (`execute::push_consuming`) and on
//! `log --verify`'s evidence (src/evidence.rs): a hostile planner, executor or teammate who
//! holds a valid key of their own and can write their own clone and push anything under
//! `refs/guardctl/` (or onto the ledger) of the team remote.

use crate::audit_evidence::{id_of, log_lines, rewrite_log};
use crate::fixtures::{Team, TestEnv, team_remote};
use crate::teams::plan_unpublished;
use crate::trust::resign;
use std::fs;
use std::path::PathBuf;

/// One approval from the reviewers; more than one branch at once is bulk and needs carol
/// (release) too (as tests/cli/teams.rs).
const BULK_POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\"]\nrelease = [\"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n\n[bulk]\nthreshold = 1\nrequired = 1\nfrom = [\"release\"]\n";

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

/// Create `refname` on the team's remote holding a parentless commit of the one file `name`
/// with `bytes` (what anyone with push access can do where only branches and tags are
/// protected).
fn push_item(env: &TestEnv, refname: &str, name: &str, bytes: &[u8]) {
    let dir = env.path().join(format!("pusher-{}", refname.replace('/', "-")));
    env.git_in(env.path(), &["init", "-q", dir.to_str().unwrap()]);
    fs::write(dir.join(name), bytes).unwrap();
    env.git_in(&dir, &["add", name]);
    env.git_in(&dir, &["commit", "-q", "-m", "pushed by hand"]);
    let url = format!("file://{}", env.origin().display());
    env.git_in(&dir, &["push", "-q", &url, &format!("HEAD:{refname}")]);
}

fn remote_branch_names(env: &TestEnv) -> Vec<String> {
    env.remote_branches()
        .lines()
        .map(|l| {
            l.split(' ')
                .next()
                .unwrap()
                .trim_start_matches("refs/heads/")
                .to_string()
        })
        .collect()
}

#[test]
fn junk_published_at_a_plans_id_before_its_apply_does_not_keep_it_out_of_the_bulk_count() {
    // Attack (hostile planner): alice splits a bulk deletion into two plans, each under the
    // threshold and approved by bob alone, for two fresh CI clones. An apply publishes its
    // plan with its marker, so the second clone would count the first; but before anything
    // is applied she pushes junk at refs/guardctl/plans/<A>. The apply of A took the name as
    // "the same plan with another signature" and published its marker only; the second
    // clone leaves the junk out with a warning and counts B alone: both halves deleted with
    // bob's approval only.
    let env = team_remote(BULK_POLICY);
    let [laptop, bob] = <[PathBuf; 2]>::try_from(env.clones(&["laptop", "bob"])).unwrap();
    let a = plan_unpublished(&env, &laptop, "a.json", "feature/done");
    let b = plan_unpublished(&env, &laptop, "b.json", "fix/old");
    for f in [&a, &b] {
        let r = env.run_in(&bob, "bob", &["approve", f.to_str().unwrap(), "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let a_hex = crate::fixtures::plan_id_of(&a)
        .trim_start_matches("sha256:")
        .to_string();
    let taken = format!("refs/guardctl/plans/{a_hex}");
    push_item(&env, &taken, "plan.json", b"{\"not\": \"a plan\"}\n");

    let [ci1] = <[PathBuf; 1]>::try_from(env.clones(&["ci1"])).unwrap();
    let r = env.run_in(&ci1, "mallory", &["apply", a.to_str().unwrap()]);
    // The apply refuses rather than consume a plan no other clone could count: 14 (a
    // publication whose name holds other content), naming the ref; nothing deleted.
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains(&taken), "{}", r.stderr);
    assert!(
        remote_branch_names(&env).contains(&"feature/done".to_string()),
        "nothing was deleted"
    );
    let [ci2] = <[PathBuf; 1]>::try_from(env.clones(&["ci2"])).unwrap();
    let _ = env.run_in(&ci2, "mallory", &["apply", b.to_str().unwrap()]);
    let left = remote_branch_names(&env);
    assert!(
        left.contains(&"feature/done".to_string()) || left.contains(&"fix/old".to_string()),
        "both halves of a bulk deletion applied without the bulk group: {left:?}"
    );
}

/// Alice publishes a plan of one merged branch (`glob`) for dave; its id's hex digits.
fn publish_one(t: &Team, file: &str, glob: &str) -> String {
    crate::fixtures::publish(&t.env, &t.planner, file, &["--match", glob])
}

#[test]
fn a_receipt_forged_by_an_approver_whose_key_signed_entries_here_does_not_break_an_honest_log() {
    // Attack (hostile teammate, a denial of service): bob approved a plan in the executor's
    // shared clone, so his key signed an entry of its log. Published receipts reveal entry
    // ids (`audit.prev`, and each receipt's own payload digest), so bob signs a receipt of a
    // plan that never existed "following" the log's last entry, and pushes it under
    // refs/guardctl/receipts/. The honest log's `log --verify` said an apply was erased (65).
    let t = crate::fixtures::team(POLICY);
    let id = publish_one(&t, "a.json", "feature/done");
    let r = t.env.run_in(&t.executor, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let lines = log_lines(&t.executor);
    assert_eq!(lines.len(), 2, "bob's approval, then the receipt: {lines:?}");
    let last = id_of(&lines[1]);
    // Claiming bob as the executor (his key speaks for him) and claiming dave (it does not).
    for (n, executor) in [("ab", "bob@example.com"), ("cd", "dave@example.com")] {
        let fake = n.repeat(32);
        let (forged, _) = resign(&t.env, &lines[1], "bob", |r| {
            r["plan_id"] = format!("sha256:{fake}").into();
            r["executor"] = executor.into();
            r["audit"] = serde_json::json!({"seq": 3, "prev": last});
        });
        push_item(
            &t.env,
            &format!("refs/guardctl/receipts/{fake}"),
            "receipt.json",
            forged.as_bytes(),
        );
    }
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Erase plan `hex`'s apply from the executor's clone: its state and its backup ref (the
/// log itself is rewritten by the caller).
fn erase_state(t: &Team, hex: &str) {
    fs::remove_dir_all(t.executor.join(format!(".git/guardctl/plans/{hex}"))).unwrap();
    for r in t
        .env
        .git_in(
            &t.executor,
            &["for-each-ref", "--format=%(refname)", "refs/guardctl/backup/"],
        )
        .lines()
    {
        if r.ends_with(hex) {
            t.env.git_in(&t.executor, &["update-ref", "-d", r]);
        }
    }
}

#[test]
fn an_apply_whose_receipt_the_executor_kept_off_the_remote_is_still_found_when_erased() {
    // Attack (hostile executor): before applying B, dave pushes junk at
    // refs/guardctl/receipts/<B> (or kills guardctl right after its push lands): the apply
    // deletes the branches and only warns that the receipt was not published. Then he
    // erases the apply (entry, anchor, reflog, state, backup ref): the remote holds B's
    // consumed marker but no receipt following this log, and `log --verify` passes.
    let t = crate::fixtures::team(POLICY);
    let a = publish_one(&t, "a.json", "feature/done");
    let b = publish_one(&t, "b.json", "fix/old");
    for id in [&a, &b] {
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &a[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    push_item(
        &t.env,
        &format!("refs/guardctl/receipts/{b}"),
        "receipt.json",
        b"taken\n",
    );
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &b[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!remote_branch_names(&t.env).contains(&"fix/old".to_string()));
    let lines = log_lines(&t.executor);
    assert_eq!(lines.len(), 2, "{lines:?}");
    rewrite_log(&t.env, &t.executor, &lines[..1], &id_of(&lines[0]));
    erase_state(&t, &b);
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(
        r.code,
        65,
        "the erased apply of B went unnoticed: {}",
        r.transcript()
    );
}

#[test]
fn an_apply_erased_after_re_signing_the_executors_own_entry_before_it_is_still_found() {
    // Attack (hostile executor): dave rolls back plan A (an entry he signs, published
    // nowhere), applies B, then erases B's apply and re-signs the rollback entry with another
    // time: B's published receipt follows an entry id this log no longer has, so it is taken
    // for another clone's, and `log --verify` passes.
    let t = crate::fixtures::team(POLICY);
    let a = publish_one(&t, "a.json", "feature/done");
    let b = publish_one(&t, "b.json", "fix/old");
    for id in [&a, &b] {
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &a[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t
        .env
        .run_in(&t.executor, "mallory", &["rollback", &format!("sha256:{a}")]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &b[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let lines = log_lines(&t.executor);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let (rollback, new_id) = resign(&t.env, &lines[1], "mallory", |e| {
        e["time"] = "2026-01-01T00:00:01Z".into();
    });
    rewrite_log(&t.env, &t.executor, &[lines[0].clone(), rollback], &new_id);
    erase_state(&t, &b);
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(
        r.code,
        65,
        "the erased apply of B went unnoticed: {}",
        r.transcript()
    );
}

#[test]
fn an_apply_killed_after_its_push_and_recovered_verifies_and_so_does_the_replay_elsewhere() {
    // Honest use (no false positive): the executor's apply dies right after its push landed;
    // `recover` finishes it with the receipt, whose approvers are backed by the approvals
    // the apply kept before it started; a fresh clone replays the apply and its log (empty)
    // verifies too.
    let t = crate::fixtures::team(POLICY);
    let a = publish_one(&t, "a.json", "feature/done");
    let r = t.env.run_in(&t.bob, "bob", &["approve", &a[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let dir = t.executor.to_str().unwrap();
    let r = t.env.run_env(
        "mallory",
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["-C", dir, "apply", &a[..12]],
    );
    assert_ne!(r.code, 0, "killed: {}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_in(&ci, "mallory", &["--json", "apply", &a[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["replayed"], true);
    for dir in [&ci, &t.executor, &t.bob] {
        let r = t.env.run_in(dir, "mallory", &["log", "--verify"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
}
