//! `guardctl plan stale-branches`: classification, skip reasons, exit codes, read-only-ness,
//! signatures.

use crate::fixtures::{NOW, TestEnv, ssh_keygen_verify, standard_repo};
use serde_json::Value;
use std::collections::BTreeMap;

/// Planned branch name -> reasons, and skipped branch name -> reason, from `plan --json`.
fn classify(env: &TestEnv, args: &[&str]) -> (BTreeMap<String, Vec<String>>, BTreeMap<String, String>) {
    classify_op(env, "stale-branches", args)
}

/// `classify` for any operation: planned name (branch or tag) -> reasons, skipped -> reason.
pub fn classify_op(
    env: &TestEnv,
    operation: &str,
    args: &[&str],
) -> (BTreeMap<String, Vec<String>>, BTreeMap<String, String>) {
    let mut full = vec!["--json", "plan", operation];
    full.extend_from_slice(args);
    let run = env.run("alice", &full);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let plan = read_payload(env, "plan.json");
    let affected = plan["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let name = short(a["ref"].as_str().unwrap());
            let reasons = a["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect();
            (name, reasons)
        })
        .collect();
    let skipped = plan["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let name = short(s["ref"].as_str().unwrap());
            (name, s["reason"].as_str().unwrap().to_string())
        })
        .collect();
    (affected, skipped)
}

fn short(refname: &str) -> String {
    let name = refname.strip_prefix("refs/heads/");
    name.or_else(|| refname.strip_prefix("refs/tags/"))
        .unwrap_or(refname)
        .to_string()
}

/// The decoded payload of a plan file (trusting it: tests only read files they just wrote).
pub fn read_payload(env: &TestEnv, file: &str) -> Value {
    crate::fixtures::payload_of(&env.repo.join(file))
}

fn names(m: &BTreeMap<String, Vec<String>>) -> Vec<&str> {
    m.keys().map(String::as_str).collect()
}

#[test]
fn merged_is_the_default_criterion() {
    let env = standard_repo();
    let (affected, skipped) = classify(&env, &[]);
    assert_eq!(
        names(&affected),
        ["feature/done", "feature/gone-merged", "fix/old"]
    );
    assert_eq!(affected["feature/done"], ["merged"]);
    assert_eq!(skipped["feature/live"], "not_stale");
    assert_eq!(skipped["feature/squashed"], "not_stale");
    assert_eq!(skipped["main"], "base");
    assert_eq!(skipped["release/1.0"], "protected");
    assert_eq!(skipped["hotfix/wt"], "worktree");
}

#[test]
fn every_branch_is_either_planned_or_skipped_with_a_reason() {
    let env = standard_repo();
    let all = env.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
    let (affected, skipped) = classify(&env, &["--merged", "--gone", "--squash-merged"]);
    let mut seen: Vec<&str> = affected
        .keys()
        .chain(skipped.keys())
        .map(String::as_str)
        .collect();
    seen.sort();
    let mut expected: Vec<&str> = all.lines().collect();
    expected.sort();
    assert_eq!(seen, expected);
}

#[test]
fn squash_merged_detects_a_real_squash_merge() {
    let env = standard_repo();
    let (affected, skipped) = classify(&env, &["--squash-merged"]);
    assert_eq!(affected["feature/squashed"], ["squash-merged"]);
    assert_eq!(skipped["feature/live"], "not_stale");
    let plan = read_payload(&env, "plan.json");
    let squashed = plan["affected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["ref"] == "refs/heads/feature/squashed")
        .unwrap();
    assert_eq!(squashed["commits_not_in_base"], 3);
    assert_eq!(squashed["loses_work"], false);
}

#[test]
fn gone_plans_merged_branches_but_never_unmerged_work_without_include_unmerged() {
    let env = standard_repo();
    let (affected, skipped) = classify(&env, &["--gone"]);
    assert_eq!(names(&affected), ["feature/gone-merged"]);
    assert_eq!(affected["feature/gone-merged"], ["gone"]);
    assert_eq!(skipped["feature/gone-work"], "unmerged");

    let (affected, _) = classify(&env, &["--gone", "--include-unmerged"]);
    assert_eq!(names(&affected), ["feature/gone-merged", "feature/gone-work"]);
    let plan = read_payload(&env, "plan.json");
    let work = plan["affected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["ref"] == "refs/heads/feature/gone-work")
        .unwrap();
    assert_eq!(work["loses_work"], true);
    assert_eq!(work["commits_not_in_base"], 1);
    assert_eq!(work["upstream"]["gone"], true);
    assert_eq!(
        work["upstream"]["tracking_ref"],
        "refs/remotes/origin/feature/gone-work"
    );
    let keys: Vec<&str> = work["config"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "branch.feature/gone-work.remote",
            "branch.feature/gone-work.merge"
        ]
    );
    assert_eq!(plan["risk"]["level"], "medium");
}

#[test]
fn an_upstream_that_still_exists_is_not_gone_and_follows_the_remotes_fetch_refspec() {
    let env = standard_repo();
    // A non-default refspec: git maps refs/heads/* to refs/remotes/mirror/*, not origin/*.
    env.git(&[
        "config",
        "remote.origin.fetch",
        "+refs/heads/*:refs/remotes/mirror/*",
    ]);
    env.git(&["push", "-q", "-u", "origin", "feature/done"]);
    env.git(&["fetch", "-q", "origin"]);
    let (affected, _) = classify(&env, &["--merged"]);
    assert_eq!(affected["feature/done"], ["merged"]);
    let plan = read_payload(&env, "plan.json");
    let done = plan["affected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["ref"] == "refs/heads/feature/done")
        .unwrap();
    assert_eq!(done["upstream"]["remote"], "origin");
    assert_eq!(
        done["upstream"]["tracking_ref"],
        "refs/remotes/mirror/feature/done"
    );
    assert_eq!(done["upstream"]["gone"], false);
    // And --gone does not take it.
    let (affected, _) = classify(&env, &["--gone"]);
    assert!(!affected.contains_key("feature/done"));
}

#[test]
fn older_than_uses_the_last_commit_date() {
    let env = standard_repo();
    let (affected, skipped) = classify(&env, &["--older-than", "250d"]);
    assert_eq!(names(&affected), ["feature/done"]);
    assert_eq!(skipped["fix/old"], "not_stale");
    // Old but unmerged: weak criterion, so never planned without --include-unmerged.
    env.branch("old/unmerged", "main", 1, "Bob", 500);
    let (_, skipped) = classify(&env, &["--older-than", "250d"]);
    assert_eq!(skipped["old/unmerged"], "unmerged");
    let (affected, _) = classify(&env, &["--older-than", "250d", "--include-unmerged"]);
    assert_eq!(affected["old/unmerged"], ["older-than"]);
}

#[test]
fn match_exclude_and_protect_filter_by_glob() {
    let env = standard_repo();
    let (affected, skipped) = classify(&env, &["--match", "feature/*"]);
    assert_eq!(names(&affected), ["feature/done", "feature/gone-merged"]);
    assert_eq!(skipped["fix/old"], "not_matched");
    let (affected, skipped) = classify(&env, &["--exclude", "feature/gone-*"]);
    assert_eq!(names(&affected), ["feature/done", "fix/old"]);
    assert_eq!(skipped["feature/gone-merged"], "excluded");
    let (affected, skipped) = classify(&env, &["--protect", "fix/*"]);
    assert_eq!(names(&affected), ["feature/done", "feature/gone-merged"]);
    assert_eq!(skipped["fix/old"], "protected");
}

#[test]
fn never_plans_the_checked_out_branch_or_worktree_branches() {
    let env = standard_repo();
    env.git(&["checkout", "-q", "feature/done"]);
    let (affected, skipped) = classify(&env, &["--base", "main"]);
    assert!(!affected.contains_key("feature/done"));
    assert_eq!(skipped["feature/done"], "checked_out");
    assert_eq!(skipped["hotfix/wt"], "worktree");
    // Run from inside the linked worktree: the main work tree's branch is protected too.
    let wt = env.path().join("wt");
    let mut c = env.command();
    c.current_dir(&wt)
        .arg("--key")
        .arg(env.key("alice"))
        .args(["--json", "plan", "stale-branches", "--base", "main", "-o"])
        .arg(env.path().join("wt-plan.json"));
    let run = crate::fixtures::run(c);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let v = run.json();
    let skipped: Vec<(String, String)> = v["skipped"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        skipped.contains(&("hotfix/wt".into(), "checked_out".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&("feature/done".into(), "worktree".into())),
        "{skipped:?}"
    );
}

#[test]
fn crafted_packed_refs_name_is_never_planned() {
    let env = standard_repo();
    let merged = env.git(&["rev-parse", "feature/done"]);
    env.git(&["pack-refs", "--all"]);
    let packed = env.repo.join(".git/packed-refs");
    let mut text = std::fs::read_to_string(&packed).unwrap();
    text.push_str(&format!("{merged} refs/heads/../../evil\n"));
    text.push_str(&format!("{merged} refs/heads/esc\x1b[31mred\n"));
    std::fs::write(&packed, text).unwrap();
    let (affected, skipped) = classify(&env, &[]);
    assert!(
        affected.keys().all(|k| !k.contains("evil") && !k.contains("esc")),
        "{affected:?}"
    );
    assert_eq!(skipped["../../evil"], "invalid_name");
    assert_eq!(skipped["esc\x1b[31mred"], "invalid_name");
}

#[test]
fn detailed_exitcode_is_two_with_changes_and_zero_without() {
    let env = standard_repo();
    let run = env.run("alice", &["plan", "stale-branches", "--detailed-exitcode"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let run = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--detailed-exitcode",
            "--match",
            "nothing/*",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains("No changes"));
    let run = env.run("alice", &["plan", "stale-branches"]);
    assert_eq!(
        run.code, 0,
        "without --detailed-exitcode a plan with changes exits 0"
    );
}

#[test]
fn usage_errors_exit_64() {
    let env = standard_repo();
    for args in [
        &["plan", "delete-everything"][..],
        &["plan", "stale-branches", "--older-than", "soon"],
        &["plan", "stale-branches", "--expires-in", "30d"],
        &["plan", "stale-branches", "--base", "no-such-ref"],
        &["plan", "stale-branches", "--match", "[unclosed"],
        &["frobnicate"],
    ] {
        let run = env.run("alice", args);
        assert_eq!(run.code, 64, "{args:?}: {}", run.transcript());
        assert!(run.stderr.contains("error"), "{}", run.stderr);
    }
    let run = env.run("alice", &["--json", "plan", "delete-everything"]);
    assert_eq!(run.code, 64);
    assert_eq!(run.json()["error"]["kind"], "usage");
}

#[test]
fn outside_a_repository_is_a_clear_error() {
    let env = TestEnv::new();
    let mut c = env.command();
    c.current_dir(env.path())
        .arg("--key")
        .arg(env.key("alice"))
        .args(["plan", "stale-branches"]);
    let run = crate::fixtures::run(c);
    assert_eq!(run.code, 64, "{}", run.transcript());
    assert!(run.stderr.contains("not in a git repository"), "{}", run.stderr);
}

#[test]
fn plan_show_verify_log_and_whoami_leave_refs_config_reflogs_and_objects_identical() {
    let env = standard_repo();
    env.git(&["config", "branch.feature/done.description", "kept"]);
    let before = env.repository_state();
    for args in [
        &[
            "plan",
            "stale-branches",
            "--merged",
            "--gone",
            "--squash-merged",
            "--include-unmerged",
        ][..],
        &["plan", "stale-branches", "--older-than", "1d", "-o", "other.json"],
        &["show", "plan.json"],
        &["show", "--all", "plan.json", "--since", "other.json"],
        &["--json", "show", "plan.json"],
        &["whoami"],
        &["log"],
    ] {
        let run = env.run("alice", args);
        assert!(run.code == 0, "{args:?}: {}", run.transcript());
    }
    assert_eq!(before, env.repository_state());
    // verify runs every check of apply, drift included, and changes nothing either. (approve
    // records in the audit log, which moves guardctl's own ref refs/guardctl/audit.)
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let before = env.repository_state();
    let run = env.run("alice", &["verify", "plan.json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(before, env.repository_state());
}

#[test]
fn plan_hash_is_stable_for_the_same_state_and_changes_with_it() {
    let env = standard_repo();
    env.run("alice", &["plan", "stale-branches", "-o", "a.json"]);
    env.run("alice", &["plan", "stale-branches", "-o", "b.json"]);
    let (a, b) = (read_payload(&env, "a.json"), read_payload(&env, "b.json"));
    assert_eq!(a["plan_hash"], b["plan_hash"]);
    // Moving a planned branch changes the hash.
    env.git(&["branch", "-f", "fix/old", "feature/done"]);
    env.run("alice", &["plan", "stale-branches", "-o", "c.json"]);
    assert_ne!(a["plan_hash"], read_payload(&env, "c.json")["plan_hash"]);
}

#[test]
fn base_moving_forward_keeps_the_hash_rewinding_it_changes_it() {
    let env = standard_repo();
    env.run("alice", &["plan", "stale-branches", "-o", "a.json"]);
    let old_main = env.git(&["rev-parse", "main"]);
    env.commit("later.txt", "later", "Alice", 1);
    env.run("alice", &["plan", "stale-branches", "-o", "b.json"]);
    assert_eq!(
        read_payload(&env, "a.json")["plan_hash"],
        read_payload(&env, "b.json")["plan_hash"]
    );
    // Rewind main to before fix/old was merged: fix/old is no longer merged.
    let before_merge = env.git(&["rev-parse", &format!("{old_main}~3")]);
    env.git(&["update-ref", "refs/heads/main", &before_merge]);
    env.run("alice", &["plan", "stale-branches", "-o", "c.json"]);
    assert_ne!(
        read_payload(&env, "a.json")["plan_hash"],
        read_payload(&env, "c.json")["plan_hash"]
    );
}

#[test]
fn plan_records_expiry_planner_executor_and_repository() {
    let env = standard_repo();
    let run = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--expires-in",
            "2h",
            "--executor",
            "bob@example.com",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let p = read_payload(&env, "plan.json");
    assert_eq!(p["format_version"], 1);
    assert_eq!(p["created_at"], NOW);
    assert_eq!(p["expires_at"], "2026-06-01T14:00:00Z");
    assert_eq!(p["planner"]["principal"], "alice@example.com");
    assert_eq!(p["executor"]["principal"], "bob@example.com");
    assert_eq!(p["executor"]["key"], Value::Null);
    assert!(p["repository"].as_str().unwrap().starts_with("guardctl-repo:"));
    assert_eq!(p["nonce"].as_str().unwrap().len(), 32);
    assert_eq!(p["operation"]["kind"], "stale-branches");
    assert_eq!(p["operation"]["inputs"]["base"], "refs/heads/main");
    assert!(p["plan_hash"].as_str().unwrap().starts_with("sha256:"));
    assert!(p["policy_hash"].as_str().unwrap().starts_with("sha256:"));
    let diff = p["diff"].as_array().unwrap();
    assert!(
        diff.iter()
            .any(|d| d["resource"] == "refs/heads/fix/old" && d["field"] == "oid" && d["to"].is_null())
    );
}

#[test]
fn a_plans_lifetime_starts_when_it_is_written_not_when_observing_started() {
    let env = standard_repo();
    // Observing takes 20 minutes (test hook); the plan is valid 15 minutes from then.
    let slow = [("GUARDCTL_TEST_OBSERVING_SECS", "1200")];
    let run = env.run_env("alice", &slow, &["plan", "stale-branches", "--expires-in", "15m"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let p = read_payload(&env, "plan.json");
    assert_eq!(p["created_at"], "2026-06-01T12:20:00Z");
    assert_eq!(p["expires_at"], "2026-06-01T12:35:00Z");
    // Past planning start + 15m, not expired: the next check (approvals) refuses.
    let at = |now: &str| {
        env.run_env("alice", &[("GUARDCTL_TEST_NOW", now)], &["verify", "plan.json"])
            .code
    };
    assert_eq!(at("2026-06-01T12:30:00Z"), 12);
    assert_eq!(at("2026-06-01T12:36:00Z"), 11);
}

#[test]
fn repository_identity_survives_a_move_and_differs_between_clones() {
    let env = TestEnv::new();
    env.branch("done", "main", 1, "Bob", 10);
    env.merge("done", 9);
    assert_eq!(env.run("alice", &["plan", "stale-branches"]).code, 0);
    let first = read_payload(&env, "plan.json")["repository"].clone();

    let moved = env.path().join("moved");
    std::fs::rename(&env.repo, &moved).unwrap();
    let mut c = env.command();
    c.current_dir(&moved)
        .arg("--key")
        .arg(env.key("alice"))
        .args(["plan", "stale-branches"]);
    assert_eq!(crate::fixtures::run(c).code, 0);
    let p = crate::fixtures::payload_of(&moved.join("plan.json"));
    assert_eq!(p["repository"], first);

    let clone = env.path().join("clone");
    env.git_in(
        env.path(),
        &["clone", "-q", moved.to_str().unwrap(), clone.to_str().unwrap()],
    );
    let mut c = env.command();
    c.current_dir(&clone).arg("--key").arg(env.key("alice")).args([
        "plan",
        "stale-branches",
        "--base",
        "origin/main",
    ]);
    assert_eq!(crate::fixtures::run(c).code, 0);
    let p = crate::fixtures::payload_of(&clone.join("plan.json"));
    assert_ne!(p["repository"], first);
}

#[test]
fn plan_signature_verifies_with_plain_ssh_keygen() {
    let env = standard_repo();
    assert_eq!(env.run("alice", &["plan", "stale-branches"]).code, 0);
    let (sig, pae) = crate::plan_file::signature_and_pae(&env.repo.join("plan.json"));
    let (ok, out) = ssh_keygen_verify(
        &env.allowed_signers(),
        "alice@example.com",
        "guardctl-plan",
        &sig,
        &pae,
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("Good \"guardctl-plan\" signature for alice@example.com"),
        "{out}"
    );
    // The same signature does not verify in another namespace or for other bytes.
    let (ok, _) = ssh_keygen_verify(
        &env.allowed_signers(),
        "alice@example.com",
        "guardctl-approval",
        &sig,
        &pae,
    );
    assert!(!ok);
    let (ok, _) = ssh_keygen_verify(
        &env.allowed_signers(),
        "alice@example.com",
        "guardctl-plan",
        &sig,
        b"other",
    );
    assert!(!ok);
}

#[test]
fn ecdsa_keys_sign_plans_too() {
    let env = standard_repo();
    let run = env.run("carol", &["plan", "stale-branches"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        read_payload(&env, "plan.json")["planner"]["principal"],
        "carol@example.com"
    );
    assert_eq!(env.run("bob", &["show"]).code, 0);
}

#[test]
fn a_key_without_principal_can_plan_but_is_warned() {
    let env = standard_repo();
    let run = env.run("mallory", &["plan", "stale-branches"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stderr.contains("maps to no principal"), "{}", run.stderr);
    assert_eq!(
        read_payload(&env, "plan.json")["planner"]["principal"],
        Value::Null
    );
}

/// A shallow clone (CI's usual checkout) is judged as git judges it there: a branch merged
/// within the fetched history is planned, one merged before the boundary is not (git cannot
/// tell either), and the plan verifies and applies. Before, plan failed with "object not
/// found" at the first commit whose parents were never fetched.
#[test]
fn a_shallow_clone_is_planned_as_git_sees_it_and_applies() {
    let env = TestEnv::new();
    env.branch("merged-long-ago", "main", 1, "Bob", 300);
    env.merge("merged-long-ago", 299);
    for i in 0..5 {
        env.commit("log.txt", &format!("main {i}"), "Alice", 200 - i);
    }
    env.branch("merged-lately", "main", 2, "Carol", 20);
    env.merge("merged-lately", 10);
    env.branch("unmerged", "main", 1, "Dave", 5);
    let origin = format!("file://{}", env.repo.display());
    let shallow = env.path().join("shallow");
    env.git_in(
        env.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "3",
            "--no-single-branch",
            &origin,
            shallow.to_str().unwrap(),
        ],
    );
    for b in ["merged-long-ago", "merged-lately", "unmerged"] {
        env.git_in(&shallow, &["branch", "-q", b, &format!("origin/{b}")]);
    }
    assert!(shallow.join(".git/shallow").exists());
    let git_merged = env.git_in(
        &shallow,
        &[
            "for-each-ref",
            "--merged=main",
            "--format=%(refname:short)",
            "refs/heads",
        ],
    );
    assert_eq!(
        git_merged, "main\nmerged-lately",
        "git's own view of this shallow clone"
    );

    let plan = shallow.join("plan.json");
    let plan = plan.to_str().unwrap();
    let r = env.run_in(
        &shallow,
        "alice",
        &["--json", "plan", "stale-branches", "-o", plan],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let payload = crate::fixtures::payload_of(std::path::Path::new(plan));
    let planned: Vec<&str> = payload["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ref"].as_str().unwrap())
        .collect();
    assert_eq!(planned, ["refs/heads/merged-lately"]);
    let skipped: BTreeMap<&str, &str> = payload["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["ref"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(skipped.get("refs/heads/merged-long-ago"), Some(&"not_stale"));
    assert_eq!(skipped.get("refs/heads/unmerged"), Some(&"not_stale"));

    let r = env.run_in(&shallow, "bob", &["approve", plan, "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_in(&shallow, "alice", &["verify", plan]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_in(&shallow, "alice", &["apply", plan]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let left = env.git_in(
        &shallow,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    );
    assert_eq!(left, "main\nmerged-long-ago\nunmerged");
}

/// What planning never selects, whatever the planner asks (issue 12's review).
mod never_planned {
    use crate::fixtures::{payload_of, remote_repo, standard_repo};

    // ---------------------------------------------------------------------------------------
    // screens that honest plans miss too
    // ---------------------------------------------------------------------------------------

    /// A remote's HEAD is its "checked-out" branch (the default branch every clone starts on).
    /// Locally the checked-out branch is never planned; on a remote, only the base is skipped,
    /// so `--base main` plans the remote's default branch `trunk` (merged into main) and apply
    /// pushes its deletion.
    #[test]
    fn a_remote_plan_never_deletes_the_branch_the_remotes_head_names() {
        let env = remote_repo();
        let origin = env.origin();
        env.git_in(&origin, &["branch", "trunk", "main"]);
        env.git_in(&origin, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
        env.git(&["fetch", "-q", "origin"]);
        let r = env.run(
            "alice",
            &["plan", "remote-branches", "--remote", "origin", "--base", "main"],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let refs = crate::fixtures::affected_refs(&env.repo.join("plan.json"));
        assert!(
            !refs.contains(&"refs/heads/trunk".to_string()),
            "the remote's default branch is planned for deletion: {refs:?}"
        );
    }

    /// git refuses to delete a branch being bisected (`git branch -d`: "used by worktree"), as it
    /// does one being rebased: `git bisect reset` returns to it. guardctl screens rebases only.
    #[test]
    fn a_branch_being_bisected_is_never_planned() {
        let env = standard_repo();
        env.git(&["checkout", "-q", "feature/done"]);
        env.git(&["bisect", "start"]);
        env.git(&["checkout", "-q", "--detach"]);
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let p = payload_of(&env.repo.join("plan.json"));
        let refs: Vec<&str> = p["affected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["ref"].as_str().unwrap())
            .collect();
        assert!(
            !refs.contains(&"refs/heads/feature/done"),
            "a branch under bisection is planned: {refs:?}"
        );
    }

    /// "Never planned: the base". A base given as a revision (`feature/live^0`, or the raw id a
    /// script computed) is not recognised as the branch it is: the branch is "merged" into
    /// itself, planned with low risk and no lost work, and its commits end up only in the
    /// backup.
    #[test]
    fn a_base_given_as_a_revision_of_a_branch_never_plans_that_branch() {
        let env = standard_repo();
        let r = env.run(
            "alice",
            &["plan", "stale-branches", "--merged", "--base", "feature/live^0"],
        );
        if r.code == 64 {
            return; // refusing a base that is not a ref is a fine answer too
        }
        assert_eq!(r.code, 0, "{}", r.transcript());
        let p = payload_of(&env.repo.join("plan.json"));
        let planned: Vec<&str> = p["affected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["ref"].as_str().unwrap())
            .collect();
        assert!(
            !planned.contains(&"refs/heads/feature/live"),
            "feature/live is planned as merged into its own tip: {planned:?}"
        );
    }

    /// `--older-than` beyond i64 seconds wraps negative in `criteria_met` (`limit as i64`):
    /// "older than 300 billion years" then means every branch.
    #[test]
    fn an_absurd_older_than_plans_nothing_rather_than_everything() {
        let env = standard_repo();
        let r = env.run(
            "alice",
            &["plan", "stale-branches", "--older-than", "300000000000y"],
        );
        if r.code == 64 {
            return;
        }
        assert_eq!(r.code, 0, "{}", r.transcript());
        let p = payload_of(&env.repo.join("plan.json"));
        assert_eq!(
            p["affected"].as_array().unwrap().len(),
            0,
            "branches are 'older than 300 billion years': {}",
            p["summary"]
        );
    }
}

/// Issue 34 item 6: `--older-than 6m` was six minutes to guardctl and six months to the person
/// typing it. An age refuses the bare `m` (64, naming both readings); months and unit words
/// are understood, and `show` says the threshold in words.
#[test]
fn an_age_in_months_is_understood_and_a_bare_m_is_refused() {
    let env = crate::fixtures::standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--older-than", "6m"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("6min") && r.stderr.contains("6mo"),
        "{}",
        r.stderr
    );
    for (typed, words) in [
        ("6mo", "6 months"),
        ("3months", "3 months"),
        ("2 weeks", "2 weeks"),
    ] {
        let r = env.run(
            "alice",
            &["plan", "stale-branches", "--older-than", typed, "--force"],
        );
        assert_eq!(r.code, 0, "{typed}: {}", r.transcript());
        let r = env.run("alice", &["show", "plan.json"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert!(
            r.stdout.contains(&format!("inactive for more than {words}")),
            "{typed}: {}",
            r.stdout
        );
    }
}

/// The skipped entry of `refname` (short name) in the last plan: reason and detail.
fn skipped_detail(env: &TestEnv, name: &str) -> (String, String) {
    let plan = read_payload(env, "plan.json");
    let s = plan["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["ref"] == format!("refs/heads/{name}"))
        .unwrap_or_else(|| panic!("{name} not skipped"))
        .clone();
    (
        s["reason"].as_str().unwrap().to_string(),
        s["detail"].as_str().unwrap_or("").to_string(),
    )
}

/// Branches at one commit are read once (planning dedupes their tips), and each is still
/// judged and recorded as itself; an unmerged branch that no criterion selects is left
/// uncounted, one a criterion selects says how many commits it holds.
#[test]
fn branches_at_one_commit_are_each_judged_and_unmerged_work_is_counted_where_selected() {
    let env = standard_repo();
    env.git(&["branch", "copy/done", "feature/done"]);
    env.git(&["branch", "copy/old", "fix/old"]);
    env.branch("old/unmerged", "main", 3, "Bob", 500);
    env.git(&["branch", "copy/unmerged", "old/unmerged"]);

    let (affected, skipped) = classify(&env, &["--merged"]);
    assert_eq!(affected["copy/done"], affected["feature/done"]);
    for name in ["old/unmerged", "copy/unmerged"] {
        assert_eq!(skipped[name], "not_stale");
        assert_eq!(
            skipped_detail(&env, name),
            ("not_stale".into(), "not merged into base".into())
        );
    }
    let plan = read_payload(&env, "plan.json");
    let tip = |name: &str| {
        plan["affected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["ref"] == format!("refs/heads/{name}"))
            .map(|a| {
                (
                    a["oid"].clone(),
                    a["subject"].clone(),
                    a["last_commit_time"].clone(),
                )
            })
            .unwrap()
    };
    assert_eq!(tip("copy/done"), tip("feature/done"));

    let (_, skipped) = classify(&env, &["--older-than", "250d"]);
    for name in ["old/unmerged", "copy/unmerged"] {
        assert_eq!(skipped[name], "unmerged");
        assert_eq!(
            skipped_detail(&env, name),
            ("unmerged".into(), "3 commits not in base".into())
        );
    }
    let (affected, _) = classify(&env, &["--older-than", "250d", "--include-unmerged"]);
    assert_eq!(affected["copy/unmerged"], ["older-than"]);
    let plan = read_payload(&env, "plan.json");
    for name in ["old/unmerged", "copy/unmerged"] {
        let a = plan["affected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["ref"] == format!("refs/heads/{name}"))
            .unwrap();
        assert_eq!(a["commits_not_in_base"], 3, "{name}");
        assert_eq!(a["loses_work"], true, "{name}");
    }
}
