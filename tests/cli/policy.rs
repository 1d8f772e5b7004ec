//! Policy files and review routing end to end: where the policy is read from (committed on the
//! default branch or named by admin git config, never the work tree), routed approvals, the
//! bulk class, executors, limits, and the refusals when the policy changes or is malformed.

use crate::fixtures::{Run, TestEnv, run};
use std::fs;
use std::path::Path;

const TEAMS_POLICY: &str = r#"version = 1

[groups]
team-a = ["bob@example.com"]
team-b = ["carol@example.com"]
team-c = ["carol@example.com"]

[[route]]
name = "team-a"
authors = ["*.teama@example.com"]
required = 1
from = ["team-a"]

[[route]]
name = "team-b"
authors = ["*.teamb@example.com"]
required = 1
from = ["team-b"]

[[route]]
name = "team-c"
authors = ["*.teamc@example.com"]
required = 1
from = ["team-c"]
"#;

/// Commit `policy` as `.guardctl/policy.toml` on main.
fn commit_policy(env: &TestEnv, policy: &str) {
    env.commit(".guardctl/policy.toml", policy.trim_end(), "Alice", 1);
}

/// Merged branches by authors of three teams, and the teams policy committed on main.
fn teams_repo() -> TestEnv {
    let env = TestEnv::new();
    for (name, author) in [
        ("a/one", "Dev TeamA"),
        ("a/two", "Lead TeamA"),
        ("b/one", "Dev TeamB"),
        ("c/one", "Dev TeamC"),
    ] {
        env.branch(name, "main", 1, author, 20);
        env.merge(name, 19);
    }
    commit_policy(&env, TEAMS_POLICY);
    env
}

fn plan(env: &TestEnv, user: &str) -> Run {
    let r = env.run(user, &["plan", "stale-branches"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    r
}

fn approve(env: &TestEnv, user: &str, extra: &[&str]) -> Run {
    let mut args = vec!["approve", "plan.json", "--yes"];
    args.extend_from_slice(extra);
    env.run(user, &args)
}

fn heads(env: &TestEnv) -> String {
    env.git(&["for-each-ref", "--format=%(refname)", "refs/heads"])
}

/// Apply plan.json as alice and expect `code`.
fn apply_expect(env: &TestEnv, code: i32) -> Run {
    apply_file(env, "plan.json", code)
}

/// Apply `file` as alice and expect `code`; a refusal must leave the repository as it was.
fn apply_file(env: &TestEnv, file: &str, code: i32) -> Run {
    let before = env.repository_state();
    let r = env.run("alice", &["apply", file]);
    assert_eq!(r.code, code, "{}", r.transcript());
    if code != 0 {
        assert_eq!(
            before,
            env.repository_state(),
            "a refused apply changed the repository"
        );
    }
    r
}

#[test]
fn a_plan_routed_across_three_author_groups_applies_once_every_group_is_approved() {
    let env = teams_repo();
    plan(&env, "alice");
    // bob covers team-a; carol, a member of team-b and team-c, covers both with one approval.
    let r = approve(&env, "bob", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains(
            "Still needed: team-b needs 1 more (from carol@example.com); team-c needs 1 more (from carol@example.com)."
        ),
        "{}",
        r.stderr
    );
    let r = approve(&env, "carol", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("Every approval the plan needs is in place."),
        "{}",
        r.stderr
    );
    let r = env.run("alice", &["verify", "plan.json", "--json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let groups = r.json()["groups"].clone();
    assert_eq!(groups.as_array().unwrap().len(), 3);
    assert_eq!(groups[1]["approved_by"], serde_json::json!(["carol@example.com"]));
    apply_expect(&env, 0);
    assert_eq!(heads(&env), "refs/heads/main");
}

#[test]
fn a_missing_group_is_refused_with_12_naming_the_unmet_groups() {
    let env = teams_repo();
    plan(&env, "alice");
    assert_eq!(approve(&env, "bob", &[]).code, 0);
    // carol approves team-b only: team-c is still open.
    let r = approve(&env, "carol", &["--group", "team-b"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("(review group team-b)"), "{}", r.stderr);
    let r = apply_expect(&env, 12);
    assert!(
        r.stderr.contains("1 of 3 review groups lack approvals"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("team-c needs 1 more (from carol@example.com)"),
        "{}",
        r.stderr
    );
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 12);
    assert_eq!(
        r.json()["error"]["details"]["unmet_groups"],
        serde_json::json!(["team-c"])
    );
    assert_eq!(heads(&env).lines().count(), 5);
}

#[test]
fn approve_refuses_groups_the_approver_may_not_approve_and_unknown_groups() {
    let env = teams_repo();
    plan(&env, "alice");
    let r = approve(&env, "bob", &["--group", "team-b"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("does not let bob@example.com approve review group team-b"),
        "{}",
        r.stderr
    );
    let r = approve(&env, "bob", &["--group", "nope"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("its groups: team-a, team-b, team-c"),
        "{}",
        r.stderr
    );
}

#[test]
fn show_lists_review_groups_and_their_status() {
    let env = teams_repo();
    plan(&env, "alice");
    approve(&env, "bob", &[]);
    let r = env.run("bob", &["show", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("show_routed", env.stable(&r.transcript()));
    let j = env.run("bob", &["--json", "show", "plan.json"]).json();
    // A repository without a remote: its policy is local, and show says who controls it.
    assert_eq!(
        j["policy"]["source"],
        "refs/heads/main:.guardctl/policy.toml (local policy: the planner controls it)"
    );
    assert_eq!(j["approvals"]["groups"][0]["missing"], 0);
    assert_eq!(j["approvals"]["groups"][1]["missing"], 1);
}

fn bulk_repo(branches: usize) -> TestEnv {
    let env = TestEnv::new();
    for i in 0..branches {
        let name = format!("topic/{i}");
        env.branch(&name, "main", 1, "Dev", 20);
        env.merge(&name, 19);
    }
    commit_policy(
        &env,
        "version = 1\n[approvals]\nrequired = 1\n[bulk]\nthreshold = 3\nrequired = 2\n",
    );
    env
}

#[test]
fn a_bulk_plan_needs_the_bulk_count_of_approvals() {
    let env = bulk_repo(4);
    let r = plan(&env, "alice");
    assert!(r.stdout.contains("risk       medium (bulk)"), "{}", r.stdout);
    assert_eq!(approve(&env, "bob", &[]).code, 0);
    let r = apply_expect(&env, 12);
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert_eq!(approve(&env, "carol", &[]).code, 0);
    apply_expect(&env, 0);
}

/// alice plans `topic/[ab]`-style halves of a bulk deletion as separate plans.
fn plan_part(env: &TestEnv, user: &str, glob: &str, out: &str) {
    let r = env.run(user, &["plan", "stale-branches", "--match", glob, "-o", out]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_bulk_deletion_split_into_two_plans_still_needs_the_bulk_approvals() {
    // Threshold 3, bulk needs 2: four branches as 2 + 2 are one bulk deletion.
    let env = bulk_repo(4);
    plan_part(&env, "alice", "topic/[01]", "a.json");
    plan_part(&env, "alice", "topic/[23]", "b.json");
    for f in ["a.json", "b.json"] {
        let r = env.run("bob", &["approve", f, "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // Each is under the threshold; together they are not.
    let r = env.run("bob", &["show", "a.json"]);
    assert!(
        r.stdout
            .contains("part of    2 plans by alice@example.com totalling 4 branches"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("together they are bulk"), "{}", r.stdout);
    let j = env.run("bob", &["--json", "show", "a.json"]).json();
    assert_eq!(j["approvals"]["part_of"]["plans"], 2);
    assert_eq!(j["approvals"]["part_of"]["needs_bulk"], true);
    let r = apply_file(&env, "a.json", 12);
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("part of 2 plans by alice@example.com totalling 4"),
        "{}",
        r.stderr
    );
    assert_eq!(env.run("carol", &["approve", "a.json", "--yes"]).code, 0);
    apply_file(&env, "a.json", 0);
    // Applying one part does not free the other: it was part of the same deletion.
    let r = apply_file(&env, "b.json", 12);
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert_eq!(env.run("carol", &["approve", "b.json", "--yes"]).code, 0);
    apply_file(&env, "b.json", 0);
    assert_eq!(heads(&env), "refs/heads/main");
    // The first part's replay is its recorded result, not a new judgement.
    assert_eq!(env.run("alice", &["apply", "a.json"]).code, 0);
}

#[test]
fn plans_by_different_planners_or_already_expired_do_not_add_up() {
    let env = bulk_repo(4);
    plan_part(&env, "alice", "topic/[01]", "a.json");
    plan_part(&env, "carol", "topic/[23]", "c.json");
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--match",
            "topic/[23]",
            "--expires-in",
            "1m",
            "-o",
            "old.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    for f in ["a.json", "c.json", "old.json"] {
        assert_eq!(env.run("bob", &["approve", f, "--yes"]).code, 0);
    }
    // Two minutes on, alice's other plan has expired; carol's is not alice's.
    let later = [("GUARDCTL_TEST_NOW", "2026-06-01T12:02:00Z")];
    let r = env.run_env("bob", &later, &["show", "a.json"]);
    assert!(!r.stdout.contains("part of"), "{}", r.stdout);
    let r = env.run_env("alice", &later, &["apply", "a.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_policy_that_counts_plans_one_by_one_lets_each_part_pass() {
    let env = TestEnv::new();
    for i in 0..4 {
        let name = format!("topic/{i}");
        env.branch(&name, "main", 1, "Dev", 20);
        env.merge(&name, 19);
    }
    commit_policy(
        &env,
        "version = 1\n[bulk]\nthreshold = 3\nrequired = 2\nacross_plans = false\n",
    );
    plan_part(&env, "alice", "topic/[01]", "a.json");
    plan_part(&env, "alice", "topic/[23]", "b.json");
    for f in ["a.json", "b.json"] {
        assert_eq!(env.run("bob", &["approve", f, "--yes"]).code, 0);
    }
    let r = env.run("bob", &["show", "a.json"]);
    assert!(r.stdout.contains("part of    2 plans"), "{}", r.stdout);
    assert!(!r.stdout.contains("together they are bulk"), "{}", r.stdout);
    apply_file(&env, "a.json", 0);
    apply_file(&env, "b.json", 0);
}

#[test]
fn a_plan_at_the_bulk_threshold_is_not_bulk() {
    let env = bulk_repo(3);
    plan(&env, "alice");
    assert_eq!(approve(&env, "bob", &[]).code, 0);
    apply_expect(&env, 0);
}

#[test]
fn an_agent_key_limited_to_planning_plans_but_cannot_approve() {
    let env = teams_repo();
    env.allow_signer("agent@ci namespaces=\"guardctl-plan\"", "mallory");
    let r = env.run("mallory", &["plan", "stale-branches", "-o", "agent-plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let show = env.run("bob", &["--json", "show", "agent-plan.json"]).json();
    assert_eq!(show["planner"]["principal"], "agent@ci");
    plan(&env, "alice");
    let r = approve(&env, "mallory", &[]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("may not sign approvals"), "{}", r.stderr);
}

#[test]
fn an_uncommitted_policy_edit_changes_nothing_apply_requires() {
    let env = teams_repo();
    // The work tree now says one approval from anyone is enough; main still routes by team.
    fs::write(env.repo.join(".guardctl/policy.toml"), "version = 1\n").unwrap();
    let r = plan(&env, "alice");
    assert!(
        r.stderr.contains("differs from the policy in force"),
        "{}",
        r.stderr
    );
    assert_eq!(approve(&env, "bob", &[]).code, 0);
    let r = apply_expect(&env, 12);
    assert!(
        r.stderr.contains("2 of 3 review groups lack approvals"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_policy_changed_on_the_base_branch_after_planning_is_refused_with_14() {
    let env = teams_repo();
    plan(&env, "alice");
    approve(&env, "bob", &[]);
    approve(&env, "carol", &[]);
    commit_policy(&env, &format!("{TEAMS_POLICY}\n[expiry]\nmax = \"1d\"\n"));
    let r = apply_expect(&env, 14);
    assert!(
        r.stderr.contains("the policy changed since the plan was made"),
        "{}",
        r.stderr
    );
    let r = env.run("bob", &["show", "plan.json"]);
    assert!(
        r.stdout.contains("CHANGED (the policy in force differs"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_comment_only_policy_edit_is_not_a_policy_change() {
    let env = teams_repo();
    plan(&env, "alice");
    approve(&env, "bob", &[]);
    approve(&env, "carol", &[]);
    commit_policy(&env, &format!("# reviewed by the platform team\n{TEAMS_POLICY}"));
    apply_expect(&env, 0);
}

#[test]
fn a_malformed_policy_is_refused_naming_the_line() {
    let env = teams_repo();
    commit_policy(
        &env,
        "version = 1\n\n[approvals]\nrequired = 1\nfrom = [\"nobody\"]\n",
    );
    let r = env.run("alice", &["plan", "stale-branches"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("invalid policy refs/heads/main:.guardctl/policy.toml"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("line 5: unknown group `nobody`"),
        "{}",
        r.stderr
    );
    commit_policy(&env, "version = 1\nrequierd_approvals = 2\n");
    let r = env.run("alice", &["--json", "plan", "stale-branches"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    let err = r.json()["error"].clone();
    assert_eq!(err["kind"], "policy");
    assert!(
        err.to_string()
            .contains("line 2: unknown field `requierd_approvals`"),
        "{err}"
    );
    assert!(!env.repo.join("plan.json").exists());
}

/// guardctl with extra environment variables (git config files).
fn run_with_env(env: &TestEnv, user: &str, vars: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut c = env.command();
    for (k, v) in vars {
        c.env(k, v);
    }
    c.arg("--key")
        .arg(env.key(user))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(args);
    run(c)
}

#[test]
fn an_admin_policy_in_system_git_config_wins_and_global_or_repository_config_is_ignored() {
    let env = teams_repo();
    let admin = env.path().join("admin-policy.toml");
    fs::write(&admin, "version = 1\nmax_affected = 2\n").unwrap();
    let config = env.path().join("gitconfig");
    fs::write(&config, format!("[guardctl]\n\tpolicy = {}\n", admin.display())).unwrap();
    // The system git config (the file git was built to read; this test build reads the
    // file GUARDCTL_TEST_SYSTEM_GITCONFIG names instead) is what an administrator writes.
    let system = [("GUARDCTL_TEST_SYSTEM_GITCONFIG", config.as_path())];
    let r = run_with_env(&env, "alice", &system, &["plan", "stale-branches"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr.contains("the policy allows at most 2 per plan"),
        "{}",
        r.stderr
    );
    let r = run_with_env(
        &env,
        "alice",
        &system,
        &["plan", "stale-branches", "--match", "a/*"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout
            .contains("admin-policy.toml (git config guardctl.policy)"),
        "{}",
        r.stdout
    );

    // Whoever runs guardctl (maybe the planner, applying their own plan) controls their
    // global config and environment, and the repository's config: none of them counts.
    env.git(&["config", "guardctl.policy", admin.to_str().unwrap()]);
    for vars in [
        [("GIT_CONFIG_GLOBAL", config.as_path())],
        [("GIT_CONFIG_SYSTEM", config.as_path())],
    ] {
        let r = run_with_env(&env, "alice", &vars, &["plan", "stale-branches"]);
        assert_eq!(r.code, 0, "{vars:?}: {}", r.transcript());
        assert!(
            r.stdout
                .contains("refs/heads/main:.guardctl/policy.toml (local policy"),
            "{vars:?}: {}",
            r.stdout
        );
    }
}

#[test]
fn the_policy_decides_who_may_execute() {
    let env = teams_repo();
    let policy = TEAMS_POLICY.replacen("version = 1\n", "version = 1\nexecutors = [\"team-a\"]\n", 1);
    commit_policy(&env, &policy);
    let r = env.run("alice", &["plan", "stale-branches"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("does not allow alice@example.com as an executor"),
        "{}",
        r.stderr
    );
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--executor", "bob@example.com"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Re-sign plan.json as alice after `edit`: a planner forging their own plan.
fn forge(env: &TestEnv, edit: impl Fn(&mut serde_json::Value)) {
    let path = env.repo.join("plan.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, crate::plan_file::re_signed(env, &text, "alice", edit)).unwrap();
}

#[test]
fn a_planner_cannot_drop_a_review_group_from_their_own_plan() {
    let env = teams_repo();
    plan(&env, "alice");
    forge(&env, |p| {
        p["review"]
            .as_array_mut()
            .unwrap()
            .retain(|g| g["name"] != "team-c");
    });
    approve(&env, "bob", &[]);
    approve(&env, "carol", &["--group", "team-b"]);
    let r = apply_expect(&env, 14);
    assert!(
        r.stderr
            .contains("review groups do not follow the policy in force"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_planner_cannot_reroute_a_branch_by_misstating_its_author() {
    let env = teams_repo();
    plan(&env, "alice");
    // c/one is claimed to be team A's, and the groups are made to match the claim.
    forge(&env, |p| {
        let affected = p["affected"].as_array_mut().unwrap();
        let c = affected
            .iter_mut()
            .find(|a| a["ref"] == "refs/heads/c/one")
            .unwrap();
        c["author"]["email"] = "dev.teama@example.com".into();
        let review = p["review"].as_array_mut().unwrap();
        review.retain(|g| g["name"] != "team-c");
        review[0]["refs"]
            .as_array_mut()
            .unwrap()
            .push("refs/heads/c/one".into());
        review[0]["resources"] = 3.into();
    });
    approve(&env, "bob", &[]);
    approve(&env, "carol", &[]);
    let r = apply_expect(&env, 10);
    assert!(
        r.stderr
            .contains("refs/heads/c/one author: planned dev.teama@example.com, now dev.teamc@example.com"),
        "{}",
        r.stderr
    );
}

const STRICT: &str = "version = 1\n\n[approvals]\nrequired = 2\n";
const WEAK: &str = "version = 1\n\n[approvals]\nrequired = 1\n";

/// `remote_repo` whose origin has a strict policy (2 approvals) committed on its main, fetched.
fn strict_remote() -> TestEnv {
    let env = crate::fixtures::remote_repo();
    commit_policy(&env, STRICT);
    env.git(&["push", "-q", "origin", "main"]);
    env.git(&["fetch", "-q", "origin"]);
    env
}

/// This clone's refs, config, reflogs and objects, and the remote's branches.
fn everywhere(env: &TestEnv) -> String {
    format!(
        "{}\n--- origin\n{}",
        env.repository_state(),
        env.remote_branches()
    )
}

#[test]
fn a_tracking_ref_moved_to_a_weaker_policy_is_ignored_and_nothing_is_deleted() {
    let env = strict_remote();
    // The planner points their clone's idea of origin's main at a commit with a weaker policy.
    env.git(&["checkout", "-q", "-b", "weak"]);
    commit_policy(&env, WEAK);
    let weak = env.git(&["rev-parse", "HEAD"]);
    env.git(&["checkout", "-q", "main"]);
    env.git(&["update-ref", "refs/remotes/origin/main", &weak]);
    env.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    let url = format!("file://{}", env.origin().display());
    for op in [
        &["remote-branches", "--remote", "origin"][..],
        &["stale-branches"],
    ] {
        // `--force`: each plan replaces the last, which was approved.
        let mut args = vec!["--json", "plan", "--force"];
        args.extend(op);
        let r = env.run("alice", &args);
        assert_eq!(r.code, 0, "{op:?}: {}", r.transcript());
        assert_eq!(
            r.json()["policy"]["source"],
            format!("{url} refs/heads/main:.guardctl/policy.toml (committed)"),
            "{op:?}"
        );
        assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
        let before = everywhere(&env);
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(r.code, 12, "{op:?}: {}", r.transcript());
        assert!(r.stderr.contains("1 of the 2 approvals"), "{}", r.stderr);
        assert_eq!(everywhere(&env), before, "{op:?}");
    }
}

#[test]
fn a_weaker_policy_committed_on_local_main_does_not_bind_a_clone_of_a_remote() {
    let env = strict_remote();
    commit_policy(&env, WEAK);
    let r = env.run("alice", &["--json", "plan", "stale-branches"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Committed, but not where the policy is read: the warning says pushing is what counts.
    assert!(
        r.stderr.contains("differs from the policy in force")
            && r.stderr.contains("pushed to its default branch"),
        "{}",
        r.stderr
    );
    assert!(
        r.json()["policy"]["source"]
            .as_str()
            .unwrap()
            .starts_with("file://"),
        "{}",
        r.stdout
    );
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let before = everywhere(&env);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 12);
    assert_eq!(everywhere(&env), before);
    // Once a second principal approves, the remote's policy is met.
    assert_eq!(env.run("carol", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_policy_on_the_remote_this_clone_has_not_fetched_is_refused_with_a_fetch_hint() {
    let env = strict_remote();
    let other = env.path().join("other");
    let url = format!("file://{}", env.origin().display());
    env.git_in(env.path(), &["clone", "-q", &url, other.to_str().unwrap()]);
    env.git_in(&other, &["commit", "-q", "--allow-empty", "-m", "newer"]);
    env.git_in(&other, &["push", "-q", "origin", "HEAD:main"]);
    let before = env.repository_state();
    let r = env.run("alice", &["plan", "stale-branches"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("git fetch origin"), "{}", r.stderr);
    assert_eq!(env.repository_state(), before);
}

#[test]
fn show_and_approve_say_plainly_when_the_policy_changed() {
    let env = strict_remote();
    let r = env.run("alice", &["plan", "stale-branches"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The remote's policy changes after planning.
    commit_policy(&env, WEAK);
    env.git(&["push", "-q", "origin", "main"]);
    let r = env.run("bob", &["show", "plan.json"]);
    assert!(
        r.stdout.contains("CHANGED (the policy in force differs"),
        "{}",
        r.stdout
    );
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert!(r.stderr.contains("is CHANGED"), "{}", r.stderr);
    let before = everywhere(&env);
    assert_eq!(env.run("carol", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert_eq!(
        everywhere(&env)
            .lines()
            .filter(|l| l.starts_with("refs/heads"))
            .collect::<Vec<_>>(),
        before
            .lines()
            .filter(|l| l.starts_with("refs/heads"))
            .collect::<Vec<_>>()
    );
}

/// `teams_repo` plus `c/work`: two unmerged commits by team C, then one by someone else on
/// top (back-dated; any git user can set any author).
fn carols_work_under_another_tip() -> TestEnv {
    let env = teams_repo();
    env.git(&["checkout", "-q", "-b", "c/work", "main"]);
    env.commit("c-work.txt", "one", "Dev TeamC", 40);
    env.commit("c-work.txt", "two", "Dev TeamC", 39);
    env.commit("c-work.txt", "three", "Someone Else", 38);
    env.git(&["checkout", "-q", "main"]);
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--match",
            "c/work",
            "--older-than",
            "30d",
            "--include-unmerged",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

#[test]
fn one_commit_by_another_author_on_top_of_team_cs_work_still_needs_team_c() {
    let env = carols_work_under_another_tip();
    let plan = env.run("bob", &["--json", "show", "plan.json"]).json();
    let groups: Vec<&str> = plan["approvals"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["team-c"], "{plan}");
    // bob (not team C) approving is not enough: carol's work is at stake.
    approve(&env, "bob", &[]);
    let r = apply_expect(&env, 12);
    assert!(r.stderr.contains("team-c needs 1 more"), "{}", r.stderr);
    assert!(heads(&env).contains("refs/heads/c/work"));
    approve(&env, "carol", &[]);
    apply_expect(&env, 0);
}

#[test]
fn a_planner_cannot_hide_whose_work_is_at_stake() {
    let env = carols_work_under_another_tip();
    forge(&env, |p| {
        let affected = p["affected"].as_array_mut().unwrap();
        affected[0]["people_not_in_base"] = serde_json::json!(["someone.else@example.com"]);
        let review = p["review"].as_array_mut().unwrap();
        review[0]["name"] = "default".into();
        review[0]["kind"] = "default".into();
        review[0]["from"] = serde_json::json!([]);
        review[0]["approvers"] = serde_json::json!([]);
        review[0]["refs"] = serde_json::json!([]);
    });
    approve(&env, "bob", &[]);
    let r = apply_expect(&env, 10);
    assert!(r.stderr.contains("people_not_in_base"), "{}", r.stderr);
    assert!(heads(&env).contains("refs/heads/c/work"));
}

#[test]
fn a_local_plan_in_a_fork_set_up_reads_the_policy_from_the_fetch_url() {
    let env = strict_remote();
    let fork = env.path().join("fork.git");
    env.git_in(env.path(), &["init", "-q", "--bare", fork.to_str().unwrap()]);
    env.git(&["remote", "set-url", "--push", "origin", fork.to_str().unwrap()]);
    let r = env.run("alice", &["--json", "plan", "stale-branches"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        r.json()["policy"]["source"],
        format!(
            "file://{} refs/heads/main:.guardctl/policy.toml (committed)",
            env.origin().display()
        )
    );
}

/// A hostile planner who can write their own clone must not choose the policy of their plan
/// (issue 14's second review).
mod policy_on_the_remote {
    use crate::fixtures::TestEnv;

    const TWO_APPROVALS: &str = "version = 1\n\n[approvals]\nrequired = 2\n";

    /// `remote_repo` whose origin's main holds a policy requiring two approvals, and a bare
    /// `mine.git` the planner controls whose main is the commit before that policy.
    fn strict_origin_and_a_lax_remote() -> (TestEnv, String) {
        let env = crate::fixtures::remote_repo();
        let lax = env.git(&["rev-parse", "HEAD"]).trim().to_string();
        env.commit(".guardctl/policy.toml", TWO_APPROVALS.trim_end(), "Alice", 1);
        env.git(&["push", "-q", "origin", "main"]);
        env.git(&["fetch", "-q", "origin"]);
        let mine = env.path().join("mine.git");
        env.git_in(
            env.path(),
            &["init", "-q", "--bare", "-b", "main", mine.to_str().unwrap()],
        );
        let url = format!("file://{}", mine.display());
        env.git(&["push", "-q", &url, &format!("{lax}:refs/heads/main")]);
        (env, url)
    }

    /// Plan as alice, one approval by bob, apply as alice: the origin's policy wants two.
    fn one_approval_must_not_be_enough(env: &TestEnv) {
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        if r.code == 14 {
            // Refusing to read the policy through the planner's rewrite is a fine answer too.
            return;
        }
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = env.run("bob", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let before = env.repository_state();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert!(
            r.code == 12 || r.code == 14,
            "the origin's policy requires two approvals; the planner's config picked another:\n{}",
            r.transcript()
        );
        assert_eq!(
            before,
            env.repository_state(),
            "a refused apply changed the repository"
        );
    }

    #[test]
    fn guardctl_remote_in_the_repositorys_own_config_does_not_choose_the_policy() {
        let (env, url) = strict_origin_and_a_lax_remote();
        env.git(&["remote", "add", "mine", &url]);
        env.git(&["config", "guardctl.remote", "mine"]);
        one_approval_must_not_be_enough(&env);
    }

    #[test]
    fn an_insteadof_in_the_repositorys_own_config_does_not_choose_the_policy() {
        let (env, url) = strict_origin_and_a_lax_remote();
        let origin_url = format!("file://{}", env.origin().display());
        env.git(&["config", &format!("url.{url}.insteadOf"), &origin_url]);
        one_approval_must_not_be_enough(&env);
    }

    /// Control: without the planner's config edits, the origin's policy holds (passes today).
    #[test]
    fn control_the_origins_policy_requires_two_approvals() {
        let (env, _) = strict_origin_and_a_lax_remote();
        one_approval_must_not_be_enough(&env);
    }
}
