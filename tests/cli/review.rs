//! The review loop (issue 15): comments on approvals and rejections reach `show`, `verify`,
//! `log` and JSON; a veto says who and why; `show` has a plan id row; every log entry names a
//! principal; a broken audit log does not block `rollback`, and the documented archive
//! procedure gets the rest going again.

use crate::apply::{approve, planned};
use crate::fixtures::TestEnv;
use crate::json_contract::one_document;
use std::fs;

fn break_the_log(env: &TestEnv) {
    let path = env.repo.join(".git/guardctl/audit.log");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("\"payload\":\"ey", "\"payload\":\"eZ", 1)).unwrap();
}

#[test]
fn a_rejection_with_a_comment_is_shown_and_apply_says_rejected_by_who_and_why() {
    let env = planned();
    let r = env.run("bob", &["reject", "plan.json", "--comment", "keep feature/done"]);
    assert_eq!(r.code, 0, "{}", r.transcript());

    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("error: rejected by bob@example.com: keep feature/done; plan again"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("ask an approver"),
        "a veto is not a missing approval: {}",
        r.stderr
    );

    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout
            .contains("comment    bob@example.com (reject): keep feature/done"),
        "{}",
        show.stdout
    );
    let v = one_document(&env.run("alice", &["--json", "show", "plan.json"]));
    assert_eq!(
        v["approvals"]["comments"],
        serde_json::json!([{"principal": "bob@example.com", "decision": "reject", "comment": "keep feature/done"}])
    );
    let v = one_document(&env.run("alice", &["--json", "verify", "plan.json"]));
    assert_eq!(
        v["error"]["details"]["comments"][0]["comment"],
        "keep feature/done"
    );
    let log = env.run("alice", &["log"]);
    assert!(
        log.stdout.contains("comment: keep feature/done"),
        "{}",
        log.stdout
    );
}

#[test]
fn an_approval_comment_is_shown_by_verify() {
    let env = planned();
    let r = env.run(
        "bob",
        &[
            "approve",
            "plan.json",
            "--yes",
            "--comment",
            "checked each branch",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["verify", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout
            .contains("bob@example.com (approve): checked each branch"),
        "{}",
        r.stdout
    );
    let v = one_document(&env.run("alice", &["--json", "verify", "plan.json"]));
    assert_eq!(v["comments"][0]["principal"], "bob@example.com");
}

#[test]
fn show_has_a_plan_id_row_and_json_tips_are_full_ids() {
    let env = planned();
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let show = env.run("bob", &["show"]);
    assert!(
        show.stdout.contains(&format!("  plan id    {id}\n")),
        "{}",
        show.stdout
    );
    let v = one_document(&env.run("bob", &["--json", "show"]));
    for row in v["rows"]["items"].as_array().unwrap() {
        let tip = row["tip"].as_str().unwrap();
        let name = row["name"].as_str().unwrap();
        assert_eq!(tip, env.git(&["rev-parse", &format!("refs/heads/{name}")]));
    }
}

#[test]
fn show_refuses_a_page_past_the_last() {
    let env = planned();
    let r = env.run("bob", &["--json", "show", "--page", "2"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    let v = one_document(&r);
    assert_eq!(v["error"]["message"], "there is no page 2: the plan has 1 page");
    assert_eq!(v["error"]["details"]["pages"], 1);
    assert_eq!(env.run("bob", &["show", "--page", "1"]).code, 0);
}

#[test]
fn every_log_entry_names_a_principal_rollback_included() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    assert_eq!(env.run("alice", &["rollback", "plan.json"]).code, 0);
    let v = one_document(&env.run("alice", &["--json", "log"]));
    let entries: Vec<(String, String)> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().into(), e["principal"].to_string()))
        .collect();
    assert_eq!(
        entries,
        [
            ("approve".to_string(), "\"bob@example.com\"".to_string()),
            ("apply".into(), "\"alice@example.com\"".into()),
            ("rollback".into(), "\"alice@example.com\"".into()),
        ]
    );
    assert_eq!(env.run("alice", &["log", "--verify"]).code, 0);
}

#[test]
fn rollback_works_with_a_broken_audit_log_and_the_archive_procedure_restores_the_rest() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let heads = || env.git(&["for-each-ref", "refs/heads"]);
    let before = heads();
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    break_the_log(&env);

    let r = env.run("alice", &["--json", "rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = one_document(&r);
    assert_eq!(v["recorded_in_log"], false);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("NOT recorded in the audit log"),
        "{v:#}"
    );
    assert_eq!(heads(), before, "every deleted branch is back");

    // Deleting still refuses on the broken log.
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "-o", "p2.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "p2.json", "--yes"]).code, 65);

    // README "The audit log: when it is broken": archive, drop the anchor, start again.
    let state = env.repo.join(".git/guardctl");
    fs::rename(state.join("audit.log"), state.join("audit.log.broken-1")).unwrap();
    env.git(&["update-ref", "-d", "refs/guardctl/audit"]);
    let r = env.run("alice", &["log"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(approve_file(&env, "p2.json"), 0);
    assert_eq!(env.run("alice", &["apply", "p2.json"]).code, 0);
    let v = one_document(&env.run("alice", &["--json", "log"]));
    assert_eq!(
        v["entries"].as_array().unwrap().len(),
        2,
        "a new log: approve, apply"
    );
}

fn approve_file(env: &TestEnv, file: &str) -> i32 {
    env.run("bob", &["approve", file, "--yes"]).code
}

/// Issue 34 item 2: a teammate retired by removing their line from the allowed-signers file
/// is not tampering. Their audit entries stay, signed and chained; the next approval goes
/// through with a warning naming the key and the file, and so does `log --verify`. An entry
/// whose key is still listed but speaks for another principal remains a break.
#[test]
fn a_retired_teammates_audit_entries_warn_and_block_nothing() {
    let env = crate::fixtures::standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The team file without Bob's line.
    let bobs = fs::read_to_string(format!("{}.pub", env.key("bob").display())).unwrap();
    let bobs_key: String = bobs.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let all = fs::read_to_string(env.allowed_signers()).unwrap();
    let without: String = all
        .lines()
        .filter(|l| !l.contains(&bobs_key))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, all, "Bob's line is in the file");
    let retired = env.path().join("allowed_signers.without-bob");
    fs::write(&retired, &without).unwrap();
    let as_carol = |args: &[&str]| {
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key("carol"))
            .arg("--allowed-signers")
            .arg(&retired)
            .args(args);
        crate::fixtures::run(c)
    };
    let r = as_carol(&["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("signed by a key no longer trusted") && r.stderr.contains("removed from"),
        "{}",
        r.stderr
    );
    let r = as_carol(&["log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("no longer trusted"), "{}", r.stderr);
}

/// Issue 34 item 13: "1 entries" reads "1 entry".
#[test]
fn log_counts_one_entry_in_the_singular() {
    let env = crate::fixtures::standard_repo();
    assert_eq!(env.run("alice", &["plan", "stale-branches", "--merged"]).code, 0);
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["log"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("1 entry, signed, chained"), "{}", r.stdout);
    assert!(!r.stdout.contains("1 entries"), "{}", r.stdout);
}
