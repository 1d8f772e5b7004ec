//! `plan exec` end to end: a destructive script gated by its preview. The preview's output
//! is the manifest; a changed script, environment or preview output at apply time is drift
//! and the script does not run; a failing command is exit 15 with its status in the receipt.

use crate::fixtures::TestEnv;
use std::fs;

const SCRIPT: &str = "#!/bin/sh\n# Removes every file in trash/; with --dry-run, says what it would remove.\nfor f in trash/*; do\n  if [ \"$1\" = --dry-run ]; then echo \"would remove $f\"; else rm \"$f\" && echo \"removed $f\"; fi\ndone\n";

/// A repository with scripts/prune.sh and two files in trash/.
fn with_script() -> TestEnv {
    let env = TestEnv::new();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("scripts/prune.sh"), SCRIPT).unwrap();
    for f in ["a", "b"] {
        fs::write(env.repo.join("trash").join(f), f).unwrap();
    }
    env
}

fn trash(env: &TestEnv) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(env.repo.join("trash"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const PLAN: [&str; 7] = [
    "plan",
    "exec",
    "--preview",
    "sh scripts/prune.sh --dry-run",
    "--",
    "sh",
    "scripts/prune.sh",
];

fn planned_and_approved(env: &TestEnv) {
    let r = env.run("alice", &PLAN);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn the_preview_is_the_manifest_and_apply_runs_the_command_once() {
    let env = with_script();
    let state = env.repository_state();
    let r = env.run("alice", &PLAN);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.repository_state(), state, "plan exec changed the repository");
    // (approve records in the audit log, moving guardctl's own ref refs/guardctl/audit)
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(trash(&env), ["a", "b"], "planning ran the command");
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout.contains("Command: sh scripts/prune.sh"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("Preview output (2 lines):"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("  would remove trash/a\n"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("scripts/prune.sh (sha256:"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("risk       high (command)"),
        "{}",
        show.stdout
    );

    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
    let receipt = &r.json()["receipt"];
    assert_eq!(receipt["exec"]["status"], 0);
    assert_eq!(receipt["exec"]["command"][1], "scripts/prune.sh");
    assert_eq!(receipt["verified"], true);
    // Replay prints the record; the command does not run again.
    fs::write(env.repo.join("trash/c"), "c").unwrap();
    let again = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(trash(&env), ["c"]);
    let rb = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(rb.code, 64, "{}", rb.transcript());
}

#[test]
fn show_since_diffs_two_previews_line_by_line() {
    let env = with_script();
    assert_eq!(env.run("alice", &PLAN).code, 0);
    fs::rename(env.repo.join("plan.json"), env.repo.join("old.json")).unwrap();
    fs::remove_file(env.repo.join("trash/a")).unwrap();
    fs::write(env.repo.join("trash/c"), "c").unwrap();
    assert_eq!(env.run("alice", &PLAN).code, 0);
    let r = env.run("alice", &["show", "plan.json", "--since", "old.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout.contains("2 preview lines changed since plan"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("1 added, 1 removed"), "{}", r.stdout);
    assert!(r.stdout.contains("+ would remove trash/c"), "{}", r.stdout);
    assert!(r.stdout.contains("- would remove trash/a"), "{}", r.stdout);
}

#[test]
fn a_script_changed_after_planning_is_drift_and_does_not_run() {
    let env = with_script();
    planned_and_approved(&env);
    fs::write(
        env.repo.join("scripts/prune.sh"),
        format!("{SCRIPT}rm -rf scripts\n"),
    )
    .unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("scripts/prune.sh content"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"]);
}

#[test]
fn a_preview_whose_output_changed_is_drift_and_the_command_does_not_run() {
    let env = with_script();
    planned_and_approved(&env);
    fs::write(env.repo.join("trash/c"), "c").unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("preview output"), "{}", r.stderr);
    assert!(r.stderr.contains("would remove trash/c"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b", "c"]);
}

#[test]
fn an_allowlisted_variable_with_another_value_is_drift() {
    let env = with_script();
    let mut args = PLAN.to_vec();
    args.splice(2..2, ["--env", "TARGET"]);
    let r = env.run_env("alice", &[("TARGET", "trash")], &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run_env("alice", &[("TARGET", "/")], &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("env TARGET value"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"]);
    let r = env.run_env("alice", &[("TARGET", "trash")], &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_failing_command_is_exit_15_with_its_status_in_the_receipt() {
    let env = with_script();
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "echo nothing to do",
            "--",
            "sh",
            "-c",
            "echo partial; exit 3",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 15, "{}", r.transcript());
    assert!(r.stdout.contains("exit status 3; NOT verified"), "{}", r.stdout);
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    let receipt = &r.json()["receipt"];
    assert_eq!(receipt["exec"]["status"], 3);
    assert_eq!(receipt["exec"]["stdout_bytes"], 8);
    assert_eq!(receipt["mismatches"][0], "the command exited with status 3");
}

#[test]
fn a_failing_before_image_stops_the_command_and_leaves_the_plan_usable() {
    let env = with_script();
    let mut args = PLAN.to_vec();
    args.splice(
        2..2,
        ["--before-image", "test -f backup-ok && tar cf trash.tar trash"],
    );
    let r = env.run("alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        env.run("alice", &["show", "plan.json"])
            .stdout
            .contains("First runs test -f backup-ok")
    );
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("before-image command failed"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"]);
    fs::write(env.repo.join("backup-ok"), "").unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
    assert!(env.repo.join("trash.tar").is_file());
}

#[test]
fn a_crash_around_the_command_is_recovered_without_running_it_twice() {
    for (step, ran) in [
        ("consumed", false),
        ("command-started", false),
        ("command-finished", true),
    ] {
        let env = with_script();
        planned_and_approved(&env);
        let killed = env.run_env(
            "alice",
            &[("GUARDCTL_TEST_CRASH_AFTER", step)],
            &["apply", "plan.json"],
        );
        assert_ne!(killed.code, 0, "{step}: {}", killed.transcript());
        let r = env.run("alice", &["recover"]);
        assert_eq!(r.code, 0, "{step}: {}", r.transcript());
        let replay = env.run("alice", &["apply", "plan.json"]);
        if ran {
            assert!(r.stdout.contains("completed"), "{step}: {}", r.stdout);
            assert_eq!(replay.code, 0, "{step}: {}", replay.transcript());
            assert!(trash(&env).is_empty(), "{step}");
        } else {
            assert!(r.stdout.contains("not run"), "{step}: {}", r.stdout);
            assert_ne!(replay.code, 0, "{step}: {}", replay.transcript());
            assert_eq!(trash(&env), ["a", "b"], "{step}");
        }
    }
}

/// For CI: a plan bound to the remote's URL is applied from another clone of it, where the
/// same script and the same preview output are checked again; one bound to its own clone is
/// refused there.
#[test]
fn an_exec_plan_bound_to_the_remote_applies_from_another_clone() {
    let env = crate::fixtures::remote_repo();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::write(env.repo.join("scripts/prune.sh"), SCRIPT).unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    for f in ["a", "b"] {
        fs::write(env.repo.join("trash").join(f), f).unwrap();
    }
    env.git(&["add", "scripts", "trash"]);
    env.git(&["commit", "-q", "-m", "prune script"]);
    env.git(&["push", "-q", "origin", "main"]);
    let other = env.path().join("apply-job");
    let url = format!("file://{}", env.origin().display());
    env.git_in(env.path(), &["clone", "-q", &url, other.to_str().unwrap()]);
    let other = other.to_str().unwrap();

    let mut bound = PLAN.to_vec();
    bound.splice(2..2, ["--remote", "origin"]);
    assert_eq!(env.run("alice", &bound).code, 0);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let plan = env.repo.join("plan.json");
    let r = env.run("alice", &["-C", other, "apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!std::path::Path::new(other).join("trash/a").exists());
    assert_eq!(trash(&env), ["a", "b"], "the planning clone is not where it ran");

    // Bound to the planning clone: another clone is another repository.
    assert_eq!(env.run("alice", &PLAN).code, 0);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["-C", other, "apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 65, "{}", r.transcript());
}
