//! `remote-branches` end to end, with a local bare repository as the remote (`file://`): one
//! atomic, leased push; drift when a remote branch moves (before the check, or between the
//! check and the push); rollback; recovery; the plan bound to the remote's URL.

use crate::fixtures::{TestEnv, backed_up, remote_repo};

fn plan(env: &TestEnv) -> serde_json::Value {
    let r = env.run(
        "alice",
        &["plan", "remote-branches", "--remote", "origin", "--json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    r.json()
}

fn planned_and_approved() -> TestEnv {
    let env = remote_repo();
    plan(&env);
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

/// `apply plan.json` as Alice with test hooks set: `GUARDCTL_TEST_<name>=<value>`.
fn apply_with_hooks(env: &TestEnv, hooks: &[(&str, String)]) -> crate::fixtures::Run {
    let vars: Vec<(String, &str)> = hooks
        .iter()
        .map(|(name, value)| (format!("GUARDCTL_TEST_{name}"), value.as_str()))
        .collect();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    env.run_env("alice", &vars, &["apply", "plan.json"])
}

/// A shell command that runs `git <args>` in the remote, for `GUARDCTL_TEST_EXEC`.
fn in_origin(env: &TestEnv, args: &str) -> String {
    format!("git --git-dir '{}' {args}", env.origin().display())
}

fn names(remote: &str) -> Vec<&str> {
    remote
        .lines()
        .map(|l| l.split(' ').next().unwrap().trim_start_matches("refs/heads/"))
        .collect()
}

#[test]
fn merged_remote_branches_are_planned_by_the_remotes_state_and_bound_to_its_url() {
    let env = remote_repo();
    let (local, remote) = (env.repository_state(), env.remote_branches());
    let view = plan(&env);
    // Planning only lists the remote: neither repository changes.
    assert_eq!(env.repository_state(), local);
    assert_eq!(env.remote_branches(), remote);
    assert_eq!(view["operation"], "remote-branches");
    assert_eq!(view["remote"], "origin");
    assert_eq!(view["repository"], format!("file://{}", env.origin().display()));
    assert_eq!(view["base"], "refs/heads/main");
    let planned: Vec<&str> = view["rows"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(planned, ["feature/done", "fix/old"]);
    let text = env.run("alice", &["show", "plan.json"]).stdout;
    assert!(text.contains("remote-branches on origin (file://"), "{text}");
    assert!(text.contains("close open pull requests"), "{text}");
    assert!(text.contains("next `git fetch --prune`"), "{text}");
    // Local branches are another operation's business: none of them is touched or planned.
    assert!(!text.contains("reflog"), "{text}");
}

#[test]
fn apply_deletes_the_remote_branches_in_one_push_after_a_local_backup() {
    let env = planned_and_approved();
    let local_before = env.git(&["for-each-ref", "refs/heads"]);
    let done = env.git(&["rev-parse", "feature/done"]);
    let old = env.git(&["rev-parse", "fix/old"]);
    let v = env.run("alice", &["verify", "plan.json"]);
    assert_eq!(v.code, 0, "{}", v.transcript());
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("deleted 2 branches; verified"), "{}", r.stdout);
    assert!(r.stdout.contains("repository file://"), "{}", r.stdout);
    assert_eq!(
        names(&env.remote_branches()),
        ["feature/live", "main", "release/1.0"]
    );
    assert_eq!(env.git(&["for-each-ref", "refs/heads"]), local_before);
    let kept = backed_up(&env.repo);
    assert!(kept.contains(&done) && kept.contains(&old), "{kept:?}");
    // Replay: the recorded result, nothing pushed.
    let again = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    let (said, recorded) = again.stdout.split_once('\n').unwrap();
    assert!(said.starts_with("Replayed: "), "{said}");
    assert_eq!(recorded, r.stdout);
}

#[test]
fn a_remote_branch_moved_after_planning_is_drift_and_nothing_is_deleted() {
    let env = planned_and_approved();
    let main = env.git(&["rev-parse", "main"]);
    env.git_in(&env.origin(), &["update-ref", "refs/heads/fix/old", &main]);
    let remote_before = env.remote_branches();
    let local_before = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("refs/heads/fix/old oid"), "{}", r.stderr);
    assert_eq!(env.remote_branches(), remote_before);
    assert_eq!(env.repository_state(), local_before);
}

#[test]
fn a_branch_moved_between_the_check_and_the_push_fails_the_whole_push_by_its_lease() {
    let env = planned_and_approved();
    let main = env.git(&["rev-parse", "main"]);
    let r = apply_with_hooks(
        &env,
        &[
            ("EXEC_AT", "backup-created".into()),
            (
                "EXEC",
                in_origin(&env, &format!("update-ref refs/heads/fix/old {main}")),
            ),
        ],
    );
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("stale info"), "{}", r.stderr);
    // Atomic: feature/done, whose lease held, is still there too.
    assert_eq!(
        names(&env.remote_branches()),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
    );
    let replay = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(replay.code, 10, "{}", replay.transcript());
    assert!(replay.stderr.contains("aborted"), "{}", replay.stderr);
}

#[test]
fn rollback_pushes_the_branches_back_and_is_harmless_twice() {
    let env = planned_and_approved();
    let before = env.remote_branches();
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    assert_ne!(env.remote_branches(), before);
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("restored 2 branches"), "{}", r.stdout);
    assert_eq!(env.remote_branches(), before);
    let again = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert!(
        again.stdout.contains("restored 0 branches (2 already present)"),
        "{}",
        again.stdout
    );
    assert_eq!(env.remote_branches(), before);
}

#[test]
fn rollback_refuses_where_the_name_was_taken_on_the_remote() {
    let env = planned_and_approved();
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    let main = env.git(&["rev-parse", "main"]);
    env.git_in(&env.origin(), &["update-ref", "refs/heads/fix/old", &main]);
    let before = env.remote_branches();
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert_eq!(env.remote_branches(), before);
}

#[test]
fn a_crash_before_the_push_is_recovered_as_nothing_deleted_and_after_it_as_applied() {
    // (crash after, branches deleted by hand meanwhile, the apply's push landed). `pushed` is
    // the moment after the push landed and before the journal says so: the consumed marker on
    // the remote, pushed in the same atomic push as the deletions, is what tells recovery.
    let cases = [
        ("consumed", false, false),
        ("backup-created", false, false),
        ("backup-created", true, false),
        ("pushed", false, true),
        ("refs-committed", false, true),
    ];
    for (step, by_hand, landed) in cases {
        let env = planned_and_approved();
        let before = env.remote_branches();
        let mut hooks = vec![("CRASH_AFTER", step.to_string())];
        if by_hand {
            let delete = |b: &str| in_origin(&env, &format!("update-ref -d refs/heads/{b}"));
            hooks.push(("EXEC_AT", step.to_string()));
            hooks.push((
                "EXEC",
                format!("{} && {}", delete("fix/old"), delete("feature/done")),
            ));
        }
        let killed = apply_with_hooks(&env, &hooks);
        assert_eq!(
            killed.code,
            -1,
            "killed (SIGKILL): {step}: {}",
            killed.transcript()
        );
        let r = env.run("alice", &["recover"]);
        assert_eq!(r.code, 0, "{step}: {}", r.transcript());
        let marker: Vec<String> = env
            .published_on(&env.origin())
            .lines()
            .filter(|l| l.starts_with("refs/guardctl/consumed/"))
            .map(String::from)
            .collect();
        if landed {
            assert!(r.stdout.contains("completed"), "{step}: {}", r.stdout);
            assert_eq!(
                names(&env.remote_branches()),
                ["feature/live", "main", "release/1.0"]
            );
            assert!(!marker.is_empty(), "{step}: the marker landed with the deletions");
            let receipt = env.run("alice", &["apply", "plan.json"]);
            assert_eq!(receipt.code, 0, "{step}: {}", receipt.transcript());
        } else {
            // Branches someone else deleted are not this apply's doing: it never pushed.
            assert!(r.stdout.contains("nothing was deleted"), "{step}: {}", r.stdout);
            assert!(marker.is_empty(), "{step}: {marker:?}");
            if !by_hand {
                assert_eq!(env.remote_branches(), before, "{step}");
            }
        }
    }
}

/// A `file://` remote runs `git receive-pack` in the applying process's group: a kill of the
/// group can stop it after it wrote the marker and before it deleted every branch (files
/// backend: updates first, deletions after). Simulated by putting a planned branch back at
/// its planned commit after the push landed: recover finishes the deletions, leased on the
/// planned ids; a branch put back at another commit is for a person (issue 35 item 2).
#[test]
fn recover_finishes_a_push_that_landed_with_its_marker_but_not_every_deletion() {
    for moved in [false, true] {
        let env = planned_and_approved();
        let planned = env.git_in(&env.origin(), &["rev-parse", "refs/heads/fix/old"]);
        let main = env.git_in(&env.origin(), &["rev-parse", "refs/heads/main"]);
        let back = if moved { &main } else { &planned };
        let hooks = [
            ("CRASH_AFTER", "pushed".to_string()),
            ("EXEC_AT", "pushed".to_string()),
            (
                "EXEC",
                in_origin(&env, &format!("update-ref refs/heads/fix/old {back}")),
            ),
        ];
        let killed = apply_with_hooks(&env, &hooks);
        assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
        let r = env.run("alice", &["recover"]);
        if moved {
            assert_eq!(r.code, 16, "{}", r.transcript());
            assert!(r.stderr.contains("refs/heads/fix/old"), "{}", r.stderr);
            assert!(names(&env.remote_branches()).contains(&"fix/old"));
            continue;
        }
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert!(
            r.stdout
                .contains("the push had landed with 1 of its deletions not yet made"),
            "{}",
            r.stdout
        );
        assert_eq!(
            names(&env.remote_branches()),
            ["feature/live", "main", "release/1.0"]
        );
        let receipt = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(receipt.code, 0, "{}", receipt.transcript());
    }
}

/// A rollback of a remote's plan killed after it recorded what to restore and before its
/// push landed (or with one branch already back, as a `receive-pack` killed midway leaves
/// it): recover pushes what is still missing, each create leased on the name's absence, and
/// the remote is as before the apply (issue 35 item 2).
#[test]
fn recover_finishes_an_interrupted_rollback_on_the_remote() {
    for one_back in [false, true] {
        let env = planned_and_approved();
        let before = env.remote_branches();
        let planned = env.git_in(&env.origin(), &["rev-parse", "refs/heads/fix/old"]);
        assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
        let mut hooks = vec![("GUARDCTL_TEST_CRASH_AFTER", "rollback-started".to_string())];
        if one_back {
            hooks.push(("GUARDCTL_TEST_EXEC_AT", "rollback-started".to_string()));
            hooks.push((
                "GUARDCTL_TEST_EXEC",
                in_origin(&env, &format!("update-ref refs/heads/fix/old {planned}")),
            ));
        }
        let vars: Vec<(&str, &str)> = hooks.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let killed = env.run_env("alice", &vars, &["rollback", "plan.json"]);
        assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
        let r = env.run("alice", &["recover"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let restored = if one_back {
            "1 branch: restored it"
        } else {
            "2 branches: restored them"
        };
        assert!(r.stdout.contains(restored), "{}", r.stdout);
        assert_eq!(env.remote_branches(), before);
    }
}

/// Issue 34 item 4: `--remote` defaults to the team remote (`guardctl.remote`, else origin),
/// as git's commands default to origin: the docs' `plan remote-branches --merged --publish`
/// works as written. Without any remote to default to, 64 says to name one.
#[test]
fn remote_branches_default_to_the_team_remote() {
    let env = remote_repo();
    let named = plan(&env);
    let r = env.run("alice", &["plan", "remote-branches", "--json", "--force"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let defaulted = r.json();
    for field in ["operation", "repository", "remote", "total_affected"] {
        assert!(!named[field].is_null(), "{field}: {named}");
        assert_eq!(
            defaulted[field], named[field],
            "{field}: the same remote, the same plan"
        );
    }
    assert_eq!(defaulted["remote"], "origin");
    env.git(&["remote", "rename", "origin", "upstream"]);
    let r = env.run("alice", &["plan", "remote-branches", "--force"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("--remote NAME"), "{}", r.stderr);
}

#[test]
fn a_plan_needs_the_remotes_tips_fetched_and_applies_only_to_that_url() {
    let env = remote_repo();
    // Someone else pushes a branch this clone has never fetched.
    let other = env.path().join("other");
    env.git_in(
        env.path(),
        &[
            "clone",
            "-q",
            env.origin().to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    env.git_in(&other, &["commit", "-q", "--allow-empty", "-m", "theirs"]);
    env.git_in(&other, &["push", "-q", "origin", "HEAD:refs/heads/theirs"]);
    let r = env.run("alice", &["plan", "remote-branches", "--remote", "origin"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("git fetch --tags origin"), "{}", r.stderr);

    env.git(&["fetch", "-q", "origin"]);
    plan(&env);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let elsewhere = env.path().join("elsewhere.git");
    env.git_in(env.path(), &["init", "-q", "--bare", elsewhere.to_str().unwrap()]);
    env.git(&["remote", "set-url", "origin", elsewhere.to_str().unwrap()]);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("another repository"), "{}", r.stderr);
}

#[test]
fn gone_is_refused_for_remote_branches() {
    let env = remote_repo();
    let r = env.run(
        "alice",
        &["plan", "remote-branches", "--remote", "origin", "--gone"],
    );
    assert_eq!(r.code, 64, "{}", r.transcript());
}

/// The CI flow of docs/ci: a plan job plans in its own clone, a human approves the
/// downloaded plan on their laptop into a detached approval file, and an apply job in a third
/// clone verifies and applies with the plan and that approval. The plan is bound to the
/// remote's URL, so no clone's local state has to travel.
#[test]
fn a_plan_made_in_one_clone_is_approved_detached_and_applied_from_another() {
    let env = remote_repo();
    let url = format!("file://{}", env.origin().display());
    let clone = |name: &str| {
        let path = env.path().join(name);
        env.git_in(env.path(), &["clone", "-q", &url, path.to_str().unwrap()]);
        path.to_str().unwrap().to_string()
    };
    let (plan_job, laptop, apply_job) = (clone("plan-job"), clone("laptop"), clone("apply-job"));
    let plan = env.path().join("artifact-plan.json");
    let approval = env.path().join("approval.json");
    let (plan, approval) = (plan.to_str().unwrap(), approval.to_str().unwrap());

    let r = env.run(
        "alice",
        &[
            "-C",
            &plan_job,
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "-o",
            plan,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run(
        "bob",
        &["-C", &laptop, "approve", plan, "--yes", "--out", approval],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Without the approval the apply job is refused; with it, it verifies and applies.
    let r = env.run("alice", &["-C", &apply_job, "apply", plan]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let r = env.run(
        "alice",
        &["-C", &apply_job, "verify", plan, "--approval", approval],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run(
        "alice",
        &["-C", &apply_job, "apply", plan, "--approval", approval],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        names(&env.remote_branches()),
        ["feature/live", "main", "release/1.0"]
    );
}

/// A bare copy of `origin` holding the same branch ids: a fork or mirror.
fn fork(env: &TestEnv) -> std::path::PathBuf {
    let fork = env.path().join("fork.git");
    env.git_in(
        env.path(),
        &[
            "clone",
            "-q",
            "--bare",
            env.origin().to_str().unwrap(),
            fork.to_str().unwrap(),
        ],
    );
    fork
}

/// The refs of every repository involved: this clone (refs, config, reflogs, objects), the
/// remote, and the fork.
fn everywhere(env: &TestEnv, fork: &std::path::Path) -> String {
    let refs =
        |dir: &std::path::Path| env.git_in(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    format!(
        "{}\n--- origin\n{}\n--- fork\n{}",
        env.repository_state(),
        refs(&env.origin()),
        refs(fork)
    )
}

#[test]
fn a_remote_that_pushes_elsewhere_or_to_several_urls_is_refused_and_nothing_is_deleted_anywhere() {
    // (how the remote is pointed elsewhere, the config key the refusal names)
    type PointElsewhere = fn(&TestEnv, &str);
    let setups: [(&str, PointElsewhere); 3] = [
        ("remote.origin.pushurl", |env, fork| {
            env.git(&["remote", "set-url", "--push", "origin", fork]);
        }),
        (".pushinsteadof", |env, fork| {
            let origin = format!("file://{}", env.origin().display());
            env.git(&["config", &format!("url.{fork}.pushInsteadOf"), &origin]);
        }),
        ("remote.origin.url", |env, fork| {
            env.git(&["remote", "set-url", "--add", "origin", fork]);
        }),
    ];
    for (key, point_elsewhere) in setups {
        let env = planned_and_approved();
        let fork = fork(&env);
        point_elsewhere(&env, &format!("file://{}", fork.display()));
        let before = everywhere(&env, &fork);
        for args in [
            &[
                "plan",
                "remote-branches",
                "--remote",
                "origin",
                "-o",
                "again.json",
            ][..],
            &["verify", "plan.json"],
            &["apply", "plan.json"],
        ] {
            let r = env.run("alice", args);
            assert_eq!(r.code, 64, "{key} {args:?}: {}", r.transcript());
            assert!(r.stderr.contains(key), "{key} {args:?}: {}", r.stderr);
            assert_eq!(everywhere(&env, &fork), before, "{key} {args:?}");
        }
        assert!(!env.repo.join("again.json").exists());
    }
}

#[test]
fn a_plan_is_bound_to_the_url_after_insteadof_and_show_names_it() {
    // The rewrite comes from the user's global config (one in the repository's own config,
    // which the planner writes, is refused: it could point the policy elsewhere).
    let env = remote_repo();
    let global = env.path().join("gitconfig");
    std::fs::write(
        &global,
        format!(
            "[url \"file://{}/\"]\n\tinsteadOf = example:\n",
            env.path().display()
        ),
    )
    .unwrap();
    let global = global.to_str().unwrap().to_string();
    let with_global = [("GIT_CONFIG_GLOBAL", global.as_str())];
    env.git(&["remote", "set-url", "origin", "example:origin.git"]);
    let url = format!("file://{}", env.origin().display());
    let r = env.run_env(
        "alice",
        &with_global,
        &["plan", "remote-branches", "--remote", "origin", "--json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["repository"], url);
    let text = env.run_env("bob", &with_global, &["show", "plan.json"]).stdout;
    assert!(
        text.contains(&format!(
            "changes    {url} (the one URL apply observes and pushes to)"
        )),
        "{text}"
    );
    let r = env.run_env("bob", &with_global, &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_env("alice", &with_global, &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        names(&env.remote_branches()),
        ["feature/live", "main", "release/1.0"]
    );
}

#[test]
fn an_insteadof_in_the_repositorys_own_config_never_chooses_the_policy_remote() {
    let env = remote_repo();
    env.git(&[
        "config",
        &format!("url.file://{}/.insteadOf", env.path().display()),
        "example:",
    ]);
    env.git(&["remote", "set-url", "origin", "example:origin.git"]);
    let r = env.run("alice", &["plan", "remote-branches", "--remote", "origin"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("insteadOf"), "{}", r.stderr);
}
