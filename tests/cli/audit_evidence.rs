//! `log --verify` against what others hold (issue 29, docs/trust-model.md "The audit log"):
//! whoever can write `.git` can rewrite the log consistently with their own key, but not the
//! approvers' signatures kept beside each receipt, nor the receipt the apply published on the
//! team remote. A receipt re-signed to name another executor or other approvers, and an apply
//! erased from the log (entry, anchor, reflog, receipt file, state), are 65 naming the entry.

use crate::fixtures::{Team, TestEnv, publish};
use crate::trust::resign;
use std::fs;
use std::path::Path;

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

/// Two of alice's plans, each approved by bob and applied by the executor in its clone, in
/// that order: its log holds the two receipts. Returns the two plan ids.
fn applied_twice(t: &Team) -> (String, String) {
    let mut ids = Vec::new();
    for (file, glob) in [("a.json", "feature/done"), ("b.json", "fix/old")] {
        let id = publish(&t.env, &t.planner, file, &["--match", glob]);
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        ids.push(id);
    }
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    (ids.remove(0), ids.remove(0))
}

pub fn log_lines(clone: &Path) -> Vec<String> {
    fs::read_to_string(clone.join(".git/guardctl/audit.log"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Write `lines` as the log and point its anchor at the last, as anyone who can write `.git`
/// can; the anchor's reflog goes too, so that nothing local remembers the old head.
pub fn rewrite_log(env: &TestEnv, clone: &Path, lines: &[String], last_id: &str) {
    fs::write(clone.join(".git/guardctl/audit.log"), lines.join("\n") + "\n").unwrap();
    let blob = clone.join(".git/anchor");
    fs::write(
        &blob,
        format!("guardctl audit anchor v1\nseq {}\nid {last_id}\n", lines.len()),
    )
    .unwrap();
    let oid = env.git_in(clone, &["hash-object", "-w", blob.to_str().unwrap()]);
    fs::remove_file(&blob).unwrap();
    env.git_in(clone, &["update-ref", "refs/guardctl/audit", &oid]);
    let _ = fs::remove_file(clone.join(".git/logs/refs/guardctl/audit"));
}

pub fn id_of(line: &str) -> String {
    use base64::Engine;
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v["payload"].as_str().unwrap())
        .unwrap();
    format!("sha256:{}", crate::apply::hex_sha256(&bytes))
}

/// `log --verify` in `clone`: 65, breaking at entry `line` for a reason containing `why`.
fn broken_at(t: &Team, clone: &Path, line: u64, why: &str) {
    let r = t.env.run_in(clone, "mallory", &["log"]);
    assert_eq!(r.code, 0, "the log by itself is intact: {}", r.transcript());
    let r = t.env.run_in(clone, "mallory", &["--json", "log", "--verify"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    let brk = &r.json()["error"]["details"]["break"];
    assert_eq!(brk["line"], line, "{brk}");
    assert!(brk["reason"].as_str().unwrap().contains(why), "{brk}");
    let r = t.env.run_in(clone, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains(why), "{}", r.stderr);
}

/// The executor re-signs the receipt of their last apply with `edit` (and its copy in the
/// state), keeping the chain and the anchor consistent.
fn re_sign_last_receipt(t: &Team, id: &str, edit: impl Fn(&mut serde_json::Value)) {
    let mut lines = log_lines(&t.executor);
    let (line, new_id) = resign(&t.env, lines.last().unwrap(), "mallory", edit);
    *lines.last_mut().unwrap() = line.clone();
    rewrite_log(&t.env, &t.executor, &lines, &new_id);
    let pretty: serde_json::Value = serde_json::from_str(&line).unwrap();
    fs::write(
        t.executor.join(format!(".git/guardctl/plans/{id}/receipt.json")),
        serde_json::to_vec_pretty(&pretty).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_receipt_re_signed_by_its_executor_to_name_another_executor_breaks_the_log_at_it() {
    let t = crate::fixtures::team(POLICY);
    let (_, b) = applied_twice(&t);
    re_sign_last_receipt(&t, &b, |r| r["executor"] = "carol@example.com".into());
    broken_at(
        &t,
        &t.executor,
        2,
        "claims carol@example.com but its key speaks for dave@example.com",
    );
}

#[test]
fn a_receipt_re_signed_to_name_other_approvers_or_none_breaks_the_log_at_it() {
    let t = crate::fixtures::team(POLICY);
    let (_, b) = applied_twice(&t);
    re_sign_last_receipt(&t, &b, |r| r["approved_by"] = serde_json::json!([]));
    broken_at(
        &t,
        &t.executor,
        2,
        "names no approver, but bob@example.com approved it",
    );

    let t = crate::fixtures::team(POLICY);
    let (_, b) = applied_twice(&t);
    re_sign_last_receipt(&t, &b, |r| {
        r["approved_by"] = serde_json::json!(["carol@example.com"])
    });
    broken_at(
        &t,
        &t.executor,
        2,
        "names carol@example.com as an approver, but no approval of that plan by a key of carol@example.com",
    );
    // The approvals kept beside the receipt removed with it: the receipt cannot be backed.
    fs::remove_file(t.executor.join(format!(".git/guardctl/plans/{b}/approvals.json"))).unwrap();
    broken_at(&t, &t.executor, 2, "approvals.json is missing");
}

#[test]
fn an_apply_erased_from_the_log_is_found_by_its_journal_its_backup_and_the_remotes_receipt() {
    let t = crate::fixtures::team(POLICY);
    let (a, b) = applied_twice(&t);
    let lines = log_lines(&t.executor);
    assert_eq!(lines.len(), 2, "two receipts: {lines:?}");
    let kept = vec![lines[0].clone()];
    let state = t.executor.join(format!(".git/guardctl/plans/{b}"));

    // The entry, the anchor, its reflog and the receipt file: the journal still says done.
    rewrite_log(&t.env, &t.executor, &kept, &id_of(&lines[0]));
    fs::remove_file(state.join("receipt.json")).unwrap();
    broken_at(
        &t,
        &t.executor,
        2,
        &format!("plan sha256:{b}'s journal says it was applied"),
    );

    // Its whole state too: the team remote's ledger still holds the receipt, which follows
    // entry 1 of this log.
    fs::remove_dir_all(&state).unwrap();
    for r in t
        .env
        .git_in(
            &t.executor,
            &["for-each-ref", "--format=%(refname)", "refs/guardctl/backup/"],
        )
        .lines()
    {
        if r.ends_with(&b) {
            t.env.git_in(&t.executor, &["update-ref", "-d", r]);
        }
    }
    broken_at(
        &t,
        &t.executor,
        2,
        &format!("the team remote holds the receipt of plan sha256:{b} as entry 2 of this log"),
    );
    // Another clone's log is not this one: bob's (his approvals only) verifies.
    let r = t.env.run_in(&t.bob, "bob", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let _ = a;
}

#[test]
fn logs_of_one_executor_in_two_clones_and_an_apply_interrupted_after_its_push_still_verify() {
    // The consumed markers on the remote name the log they were made in (its first entry):
    // one executor's markers from another clone, and the marker of an apply this clone has
    // not finished yet, are no erased entries of this log.
    let t = crate::fixtures::team(POLICY);
    for b in ["x/1", "x/2", "x/3", "x/4", "x/5"] {
        t.env.git_in(
            &t.planner,
            &["push", "-q", "origin", &format!("origin/main~1:refs/heads/{b}")],
        );
    }
    let [ci] = <[std::path::PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let apply = |clone: &Path, file: &str, glob: &str, env: &[(&str, &str)]| {
        let id = publish(&t.env, &t.planner, file, &["--match", glob]);
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = t.env.run_env(
            "mallory",
            env,
            &["-C", clone.to_str().unwrap(), "apply", &id[..12]],
        );
        (id, r)
    };
    for (clone, file, glob) in [
        (&t.executor, "1.json", "x/1"),
        (&t.executor, "2.json", "x/2"),
        (&ci, "3.json", "x/3"),
        (&ci, "4.json", "x/4"),
    ] {
        let (_, r) = apply(clone, file, glob, &[]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let (_, r) = apply(
        &t.executor,
        "5.json",
        "x/5",
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
    );
    assert_eq!(r.code, -1, "killed after its push: {}", r.transcript());
    for clone in [&t.executor, &ci] {
        let r = t.env.run_in(clone, "mallory", &["log", "--verify"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let r = t.env.run_in(&t.executor, "mallory", &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}
