//! The gate end to end: `approve`, `reject`, `verify`, `apply`, `rollback`, `log`, `gc` over
//! real repositories and real keys. Every refusal is shown to leave the repository identical.

use crate::fixtures::{NOW, Run, TestEnv, run, ssh_keygen_verify, standard_repo};
use crate::plan_file::ssh_sign;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use std::fs;

/// A repository with a plan by Alice (merged + gone branches) in plan.json.
pub fn planned() -> TestEnv {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--gone"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

pub fn approve(env: &TestEnv, user: &str) -> Run {
    env.run(user, &["approve", "plan.json", "--yes"])
}

/// Apply as `user`, asserting the repository is untouched when it is refused.
pub fn refused_apply(env: &TestEnv, user: &str, args: &[&str], code: i32) -> Run {
    let before = env.repository_state();
    let mut full = vec!["apply", "plan.json"];
    full.extend_from_slice(args);
    let r = env.run(user, &full);
    assert_eq!(r.code, code, "{}", r.transcript());
    assert_eq!(
        before,
        env.repository_state(),
        "a refused apply changed the repository"
    );
    r
}

pub fn plan_value(env: &TestEnv) -> Value {
    serde_json::from_str(&fs::read_to_string(env.repo.join("plan.json")).unwrap()).unwrap()
}

pub fn payload(v: &Value) -> Value {
    serde_json::from_slice(&B64.decode(v["payload"].as_str().unwrap()).unwrap()).unwrap()
}

/// An approval envelope signed by hand with `key`, for approvals `guardctl approve` would
/// refuse to make.
pub fn forged_approval(env: &TestEnv, key: &str, body: Value) -> Value {
    forged_in(env, key, body, "guardctl-approval")
}

pub fn forged_in(env: &TestEnv, key: &str, body: Value, namespace: &str) -> Value {
    let ty = "application/vnd.guardctl.approval.v1+json";
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, bytes.len()).into_bytes();
    pae.extend_from_slice(&bytes);
    let sig = ssh_sign(&env.key(key), namespace, &pae);
    let keyid = fingerprint(env, key);
    json!({"payloadType": ty, "payload": B64.encode(&bytes), "signatures": [{"keyid": keyid, "sig": sig}]})
}

fn fingerprint(env: &TestEnv, key: &str) -> String {
    crate::plan_file::fingerprint(&env.key(key))
}

pub fn approval_body(env: &TestEnv, principal: &str, key: &str, decision: &str) -> Value {
    let plan = plan_value(env);
    let p = payload(&plan);
    let id = format!(
        "sha256:{}",
        hex_sha256(&B64.decode(plan["payload"].as_str().unwrap()).unwrap())
    );
    json!({"plan_id": id, "plan_hash": p["plan_hash"], "repository": p["repository"], "decision": decision,
           "principal": principal, "key": fingerprint(env, key), "created_at": NOW})
}

pub fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Attach an approval of the plan by `principal`, signed by hand with `key`.
pub fn attach_forged(env: &TestEnv, key: &str, principal: &str) {
    attach(
        env,
        forged_approval(env, key, approval_body(env, principal, key, "approve")),
    );
}

pub fn attach(env: &TestEnv, approval: Value) {
    let mut plan = plan_value(env);
    plan["approvals"].as_array_mut().unwrap().push(approval);
    fs::write(
        env.repo.join("plan.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
}

pub fn branches(env: &TestEnv) -> String {
    env.git(&["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"])
}

#[test]
fn unapproved_plan_is_refused_with_12() {
    let env = planned();
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(r.stderr.contains("0 of the 1 approvals"), "{}", r.stderr);
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 12);
}

#[test]
fn self_approval_is_refused_at_approve_and_at_apply_even_with_a_second_key() {
    let env = planned();
    let r = approve(&env, "alice");
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("cannot approve"), "{}", r.stderr);
    // Mallory's key is made a second key of Alice's; its approval must not count.
    env.allow_signer("alice@example.com", "mallory");
    assert_eq!(approve(&env, "mallory").code, 12);
    attach_forged(&env, "mallory", "alice@example.com");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(r.stderr.contains("cannot approve their own plan"), "{}", r.stderr);
}

#[test]
fn approval_copied_from_another_plan_does_not_count() {
    let env = planned();
    let r = env.run("bob", &["approve", "plan.json", "--yes", "--out", "bob.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // A new plan of different branches: Bob's approval of the first one must not carry over.
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0);
    let r = refused_apply(&env, "alice", &["--approval", "bob.json"], 12);
    assert!(r.stderr.contains("approves another plan"), "{}", r.stderr);
}

#[test]
fn a_rejection_vetoes_the_plan() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let r = env.run("carol", &["reject", "plan.json", "--comment", "keep fix/old"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(r.stderr.contains("rejected by carol@example.com"), "{}", r.stderr);
}

#[test]
fn approval_by_a_key_not_in_allowed_signers_does_not_count() {
    let env = planned();
    let r = approve(&env, "mallory");
    assert_eq!(r.code, 12, "{}", r.transcript());
    // Mallory signs an approval claiming to be Bob.
    attach_forged(&env, "mallory", "bob@example.com");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(r.stderr.contains("not allowed to approve"), "{}", r.stderr);
}

#[test]
fn only_the_executor_may_apply() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let r = refused_apply(&env, "bob", &[], 13);
    assert!(
        r.stderr.contains("only alice@example.com may apply"),
        "{}",
        r.stderr
    );
    refused_apply(&env, "mallory", &[], 13);
    // A plan made for Bob as executor is his to apply.
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--merged",
            "--gone",
            "--executor",
            "bob@example.com",
            // Replaces the approved plan above.
            "--force",
        ],
    );
    assert_eq!(r.code, 0);
    assert_eq!(approve(&env, "carol").code, 0);
    refused_apply(&env, "alice", &[], 13);
    let r = env.run("bob", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_branch_moved_after_approval_is_drift_and_nothing_is_deleted() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    env.git(&["branch", "-f", "fix/old", "feature/live"]);
    let r = refused_apply(&env, "alice", &[], 10);
    assert!(
        r.stderr.contains("refs/heads/fix/old oid: planned"),
        "{}",
        r.stderr
    );
    let v = env.run("alice", &["--json", "apply", "plan.json"]).json();
    assert_eq!(v["error"]["kind"], "drift");
    assert_eq!(v["error"]["details"]["drift"][0]["ref"], "refs/heads/fix/old");
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 10);
}

#[test]
fn base_rewound_past_a_merged_branch_is_drift() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let main = env.git(&["rev-parse", "main"]);
    env.git(&["update-ref", "refs/heads/main", &format!("{main}~4")]);
    let r = refused_apply(&env, "alice", &[], 10);
    assert!(
        r.stderr.contains("reasons: planned merged, now (none)"),
        "{}",
        r.stderr
    );
}

#[test]
fn base_moving_forward_is_not_drift() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    env.commit("later.txt", "later", "Alice", 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn an_expired_plan_is_refused_with_11() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let before = env.repository_state();
    let mut c = env.command();
    c.env("GUARDCTL_TEST_NOW", "2026-06-01T13:00:00Z")
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["apply", "plan.json"]);
    let r = run(c);
    assert_eq!(r.code, 11, "{}", r.transcript());
    assert_eq!(before, env.repository_state());
}

#[test]
fn tampered_plan_or_approval_is_refused_with_65() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let mut plan = plan_value(&env);
    let mut p = payload(&plan);
    p["affected"][0]["ref"] = json!("refs/heads/main");
    plan["payload"] = json!(B64.encode(serde_json::to_vec(&p).unwrap()));
    fs::write(env.repo.join("tampered.json"), plan.to_string()).unwrap();
    let r = env.run("alice", &["apply", "tampered.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());

    let mut plan = plan_value(&env);
    let mut a = payload(&plan["approvals"][0]);
    a["plan_hash"] = json!("sha256:forged");
    plan["approvals"][0]["payload"] = json!(B64.encode(serde_json::to_vec(&a).unwrap()));
    fs::write(env.repo.join("plan.json"), plan.to_string()).unwrap();
    let r = refused_apply(&env, "alice", &[], 65);
    assert!(r.stderr.contains("approval #1"), "{}", r.stderr);
}

#[test]
fn a_plan_made_in_another_clone_is_refused_with_65() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let clone = env.path().join("clone");
    env.git_in(
        env.path(),
        &["clone", "-q", env.repo.to_str().unwrap(), clone.to_str().unwrap()],
    );
    let mut c = env.command();
    c.current_dir(&clone)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("apply")
        .arg(env.repo.join("plan.json"));
    let r = run(c);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("another repository"), "{}", r.stderr);
}

#[test]
fn approved_plan_applies_with_backups_and_a_replay_says_so_then_prints_the_same_result() {
    let env = planned();
    let before = branches(&env);
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 0);
    let first = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let after = branches(&env);
    for gone in ["feature/done", "fix/old", "feature/gone-merged"] {
        assert!(
            !after.contains(&format!("refs/heads/{gone} ")),
            "{gone} still exists"
        );
    }
    assert!(after.contains("refs/heads/feature/live "));
    let backups = crate::fixtures::backed_up(&env.repo);
    for line in before
        .lines()
        .filter(|l| l.starts_with("refs/heads/feature/done ") || l.starts_with("refs/heads/fix/old "))
    {
        let (name, oid) = line.split_once(' ').unwrap();
        assert!(backups.contains(oid), "no backup of {name}: {backups:?}");
    }
    assert!(
        env.git(&["config", "--get-regexp", "^branch\\."])
            .lines()
            .all(|l| !l.contains("gone-merged"))
    );

    let state = env.repository_state();
    let second = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(second.code, 0, "{}", second.transcript());
    let (said, recorded) = second.stdout.split_once('\n').unwrap();
    assert!(
        said.starts_with("Replayed: ") && said.contains("nothing was changed now"),
        "{said}"
    );
    assert_eq!(first.stdout, recorded, "a replay prints the recorded result");
    assert!(second.stderr.contains("already applied"));
    assert_eq!(
        state,
        env.repository_state(),
        "a replay must not touch the repository"
    );
    let json_replay = env.run("alice", &["--json", "apply", "plan.json"]).json();
    assert_eq!(json_replay["receipt"]["verified"], true);
    assert_eq!(json_replay["replayed"], true, "a replay says so in JSON");
}

#[test]
fn approval_and_receipt_signatures_verify_with_ssh_keygen() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let plan = plan_value(&env);
    let approval = &plan["approvals"][0];
    let check = |env_json: &Value, ns: &str, who: &str| {
        let ty = env_json["payloadType"].as_str().unwrap();
        let body = B64.decode(env_json["payload"].as_str().unwrap()).unwrap();
        let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
        pae.extend_from_slice(&body);
        let (ok, out) = ssh_keygen_verify(
            &env.allowed_signers(),
            who,
            ns,
            env_json["signatures"][0]["sig"].as_str().unwrap(),
            &pae,
        );
        assert!(ok, "{ns}: {out}");
    };
    check(approval, "guardctl-approval", "bob@example.com");
    let receipt = env.run("alice", &["--json", "apply", "plan.json"]).json();
    check(&receipt["envelope"], "guardctl-apply", "alice@example.com");
}

#[test]
fn rollback_restores_every_branch_and_its_upstream_config_and_is_harmless_twice() {
    let env = planned();
    let refs_before = branches(&env);
    let config_before = env.git(&["config", "--get-regexp", "^branch\\."]);
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    assert_ne!(refs_before, branches(&env));
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(refs_before, branches(&env));
    let mut a: Vec<&str> = config_before.lines().collect();
    let restored = env.git(&["config", "--get-regexp", "^branch\\."]);
    let mut b: Vec<&str> = restored.lines().collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout.contains("restored 0 branches (3 already present)"),
        "{}",
        r.stdout
    );
}

#[test]
fn rollback_refuses_where_a_name_is_taken_by_another_commit() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    env.git(&["branch", "fix/old", "feature/live"]);
    let before = env.repository_state();
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(
        r.stderr.contains("refs/heads/fix/old is now taken"),
        "{}",
        r.stderr
    );
    assert_eq!(before, env.repository_state());
}

#[test]
fn log_records_the_loop_and_detects_a_hand_edited_entry() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let v = env.run("alice", &["--json", "log"]).json();
    assert_eq!(v["intact"], true);
    let events: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["approve", "apply"]);
    // Edit the second entry's first character of payload: its signature no longer holds.
    let path = env.repo.join(".git/guardctl/audit.log");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1] = lines[1].replacen("\"payload\":\"ey", "\"payload\":\"eZ", 1);
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = env.run("alice", &["log"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("broken at entry 2"), "{}", r.stderr);
}

#[test]
fn gc_removes_only_backups_past_their_retention() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let backups = || env.git(&["for-each-ref", "--format=%(refname)", "refs/guardctl/backup"]);
    assert_eq!(backups().lines().count(), 1, "one backup ref per plan");
    assert_eq!(
        crate::fixtures::backed_up(&env.repo).len(),
        3,
        "keeping the three deleted tips"
    );
    let gc_at = |now: &str| env.run_env("alice", &[("GUARDCTL_TEST_NOW", now)], &["gc"]);
    let r = gc_at("2026-06-30T12:00:00Z");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(backups().lines().count(), 1, "29 days: within retention");
    // A damaged before-image of another plan stops gc before it removes anything (16,
    // naming the file): state files are untrusted input.
    let damaged = env.repo.join(format!(
        ".git/guardctl/plans/{}/before-image.json",
        "0f".repeat(32)
    ));
    std::fs::create_dir_all(damaged.parent().unwrap()).unwrap();
    std::fs::write(&damaged, "{not json").unwrap();
    let r = gc_at("2026-07-01T12:00:00Z");
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains(&damaged.display().to_string()), "{}", r.stderr);
    assert_eq!(backups().lines().count(), 1, "nothing removed");
    std::fs::remove_dir_all(damaged.parent().unwrap()).unwrap();
    let r = gc_at("2026-07-01T12:00:00Z");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(backups().lines().count(), 0, "30 days: collected");
}

#[test]
fn approve_without_a_terminal_needs_yes() {
    let env = planned();
    let r = env.run("bob", &["approve", "plan.json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("pass --yes"), "{}", r.stderr);
    assert!(plan_value(&env)["approvals"].as_array().unwrap().is_empty());
}

#[test]
fn concurrent_approvers_keep_each_others_approvals() {
    let env = planned();
    let mut children = Vec::new();
    for user in ["bob", "carol"] {
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key(user))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args(["-q", "approve", "plan.json", "--yes"])
            .stdout(std::process::Stdio::null());
        children.push(c.spawn().unwrap());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(plan_value(&env)["approvals"].as_array().unwrap().len(), 2);
}

#[test]
fn approvals_signed_in_another_namespace_are_refused_with_65() {
    for namespace in ["guardctl-plan", "git", "guardctl-apply"] {
        let env = planned();
        attach(
            &env,
            forged_in(
                &env,
                "bob",
                approval_body(&env, "bob@example.com", "bob", "approve"),
                namespace,
            ),
        );
        let r = refused_apply(&env, "alice", &[], 65);
        assert!(r.stderr.contains("namespace"), "{namespace}: {}", r.stderr);
    }
}

#[test]
fn a_key_limited_to_planning_cannot_approve() {
    let env = planned();
    env.allow_signer("agent@ci namespaces=\"guardctl-plan\"", "mallory");
    let r = approve(&env, "mallory");
    assert_eq!(r.code, 12, "{}", r.transcript());
    attach_forged(&env, "mallory", "agent@ci");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(
        r.stderr.contains("agent@ci (key not allowed to approve"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_key_outside_its_validity_window_cannot_approve() {
    let env = planned();
    let signers = env.allowed_signers();
    let text = fs::read_to_string(&signers)
        .unwrap()
        .replace(
            "bob@example.com ssh-",
            "bob@example.com valid-before=\"20260501\" ssh-",
        )
        .replace(
            "carol@example.com ecdsa-",
            "carol@example.com valid-after=\"20260701Z\" ecdsa-",
        );
    fs::write(&signers, text).unwrap();
    assert_eq!(approve(&env, "bob").code, 12);
    assert_eq!(approve(&env, "carol").code, 12);
    attach_forged(&env, "bob", "bob@example.com");
    refused_apply(&env, "alice", &[], 12);
}

#[test]
fn a_plan_dated_in_the_future_is_refused_with_65() {
    let env = standard_repo();
    let mut c = env.command();
    c.env("GUARDCTL_TEST_NOW", "2026-06-01T14:00:00Z")
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["plan", "stale-branches", "--expires-in", "1d"]);
    assert_eq!(run(c).code, 0);
    let mut c = env.command();
    c.env("GUARDCTL_TEST_NOW", "2026-06-01T14:00:00Z")
        .arg("--key")
        .arg(env.key("bob"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["approve", "plan.json", "--yes"]);
    assert_eq!(run(c).code, 0);
    let r = refused_apply(&env, "alice", &[], 65);
    assert!(r.stderr.contains("dated in the future"), "{}", r.stderr);
}

/// A checkout racing apply (issue 12's review).
mod racing_checkout {
    use crate::hostile::planned;

    // ---------------------------------------------------------------------------------------
    // races
    // ---------------------------------------------------------------------------------------

    /// The drift check and the deletion are atomic for the refs (git holds their locks), but not
    /// for HEAD: a `git checkout` of a planned branch after the check and before the commit
    /// succeeds, and apply then deletes the branch HEAD is on (the work tree is left on an unborn
    /// branch). git ≥ 2.45's `symref-verify` in the same transaction (for every worktree's HEAD)
    /// would hold HEAD's lock too.
    #[test]
    fn a_checkout_racing_apply_never_leaves_head_on_a_deleted_branch() {
        let env = planned();
        assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
        let checkout = format!(
            "git -C '{}' checkout -q feature/done 2>/dev/null; true",
            env.repo.display()
        );
        let r = env.run_env(
            "alice",
            &[
                ("GUARDCTL_TEST_EXEC_AT", "before-image-written"),
                ("GUARDCTL_TEST_EXEC", &checkout),
            ],
            &["apply", "plan.json"],
        );
        let head = env.git(&["symbolic-ref", "HEAD"]);
        let exists = !env.git(&["branch", "--list", "feature/done"]).is_empty();
        assert!(
            head != "refs/heads/feature/done" || exists,
            "apply (exit {}) deleted the branch a racing checkout put HEAD on:\n{}",
            r.code,
            r.transcript()
        );
    }
}
