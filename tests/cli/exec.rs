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
    // Ignored, so the work tree's pinned content does not change (that is drift too, below):
    // only what the preview prints does. (By a .gitignore: .git/info/exclude is not read,
    // attack28.)
    fs::write(env.repo.join(".gitignore"), "trash/\n").unwrap();
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
        [
            "--before-image",
            "test -f .git/backup-ok && tar cf .git/trash.tar trash",
        ],
    );
    let r = env.run("alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        env.run("alice", &["show", "plan.json"])
            .stdout
            .contains("First runs test -f .git/backup-ok")
    );
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("before-image command failed"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"]);
    // In .git: outside the work tree's pinned content.
    fs::write(env.repo.join(".git/backup-ok"), "").unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
    assert!(env.repo.join(".git/trash.tar").is_file());
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
        assert_eq!(
            killed.code,
            -1,
            "killed (SIGKILL): {step}: {}",
            killed.transcript()
        );
        let r = env.run("alice", &["recover"]);
        assert_eq!(r.code, 0, "{step}: {}", r.transcript());
        let replay = env.run("alice", &["apply", "plan.json"]);
        if ran {
            assert!(r.stdout.contains("completed"), "{step}: {}", r.stdout);
            assert_eq!(replay.code, 0, "{step}: {}", replay.transcript());
            assert!(trash(&env).is_empty(), "{step}");
        } else {
            assert!(r.stdout.contains("not run"), "{step}: {}", r.stdout);
            assert_eq!(replay.code, 10, "{step}: {}", replay.transcript());
            assert_eq!(trash(&env), ["a", "b"], "{step}");
        }
    }
}

#[test]
fn a_command_result_rewritten_after_a_crash_is_refused_by_recover_and_signs_nothing() {
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
            "exit 3",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let killed = env.run_env(
        "alice",
        &[("GUARDCTL_TEST_CRASH_AFTER", "command-finished")],
        &["apply", "plan.json"],
    );
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());
    let dir = env
        .repo
        .join(".git/guardctl/plans")
        .join(crate::fixtures::plan_id_of(&env.repo.join("plan.json")).trim_start_matches("sha256:"));
    let result = dir.join("exec-result.json");
    let signed = fs::read_to_string(&result).unwrap();
    assert!(
        signed.contains("payloadType"),
        "the result is a signed envelope: {signed}"
    );
    // Someone with write access to the state turns the failure into a success.
    fs::write(
        &result,
        r#"{"command":["sh","-c","exit 3"],"status":0,"error":null,"stdout":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","stdout_bytes":0,"stderr":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","stderr_bytes":0,"verification":null}"#,
    )
    .unwrap();
    let before = crate::fixtures::file_tree(&env.repo.join(".git/guardctl"));
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("exec-result.json"), "{}", r.stderr);
    assert!(!dir.join("receipt.json").exists() && !dir.join("result.txt").exists());
    assert_eq!(
        before,
        crate::fixtures::file_tree(&env.repo.join(".git/guardctl"))
    );
    // Nor does removing it leave a receipt without the command's outcome.
    fs::remove_file(&result).unwrap();
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("exec-result.json"), "{}", r.stderr);
    // The genuine result, put back, is finished into a receipt that says the command failed.
    fs::write(&result, signed).unwrap();
    let r = env.run("alice", &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(
        r.json()["receipt"]["mismatches"][0],
        "the command exited with status 3"
    );
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

    // Bound to the planning clone: another clone is another repository. (`--force`: the
    // first plan, approved, is replaced.)
    let mut replan = PLAN.to_vec();
    replan.insert(2, "--force");
    assert_eq!(env.run("alice", &replan).code, 0);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["-C", other, "apply", plan.to_str().unwrap()]);
    assert_eq!(r.code, 65, "{}", r.transcript());
}

/// A file the tests' hostile edits create when they manage to run anything.
const PWNED: &str = "pwned";

fn pwned(env: &TestEnv) -> bool {
    env.repo.join(PWNED).exists()
}

fn write_exec(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Plan `args` as alice (with `vars`), approve as bob.
fn plan_approved(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) {
    let r = env.run_env("alice", vars, args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Apply as alice (with `vars`): refused as drift, with `expect` in the message, nothing run.
fn refused_as_drift(env: &TestEnv, vars: &[(&str, &str)], expect: &str) {
    let r = env.run_env("alice", vars, &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains(expect), "{}", r.stderr);
    assert_eq!(trash(env), ["a", "b"], "the command ran");
    assert!(!pwned(env), "a hostile edit ran");
}

/// The edited file prints the approved preview, then does something else: it must not run.
const EVIL: &str = "#!/bin/sh\nif [ \"$1\" = --dry-run ]; then echo 'would remove trash/a'; echo 'would remove trash/b'; exit 0; fi\ntouch pwned\n";

#[test]
fn a_re_pointed_symlink_is_drift_and_nothing_runs() {
    let env = with_script();
    std::os::unix::fs::symlink("prune.sh", env.repo.join("scripts/run")).unwrap();
    plan_approved(
        &env,
        &[],
        &[
            "plan",
            "exec",
            "--preview",
            "sh scripts/run --dry-run",
            "--",
            "sh",
            "scripts/run",
        ],
    );
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout
            .contains("scripts/run -> prune.sh (= scripts/prune.sh) sha256:"),
        "{}",
        show.stdout
    );
    write_exec(&env.repo.join("scripts/evil.sh"), EVIL);
    fs::remove_file(env.repo.join("scripts/run")).unwrap();
    std::os::unix::fs::symlink("evil.sh", env.repo.join("scripts/run")).unwrap();
    refused_as_drift(
        &env,
        &[],
        "pinned scripts/run link: planned prune.sh, now evil.sh",
    );
}

#[test]
fn a_program_on_path_replaced_after_approval_is_drift_and_nothing_runs() {
    let env = with_script();
    let bin = env.home.join("bin");
    fs::create_dir_all(&bin).unwrap();
    write_exec(&bin.join("prune-tool"), SCRIPT);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let vars = [("PATH", path.as_str())];
    plan_approved(
        &env,
        &vars,
        &[
            "plan",
            "exec",
            "--preview",
            "prune-tool --dry-run",
            "--",
            "prune-tool",
        ],
    );
    let show = env.run("alice", &["show", "plan.json"]);
    let tool = format!("prune-tool -> {}", bin.join("prune-tool").display());
    assert!(show.stdout.contains(&tool), "{}", show.stdout);
    assert!(
        show.stdout
            .contains("not pinned: anything the command calls by name or reads outside these files"),
        "{}",
        show.stdout
    );
    let json = env.run("alice", &["--json", "show", "plan.json"]).json();
    assert!(
        json["exec"]["on_path"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().starts_with("prune-tool -> ")),
        "{json}"
    );
    write_exec(&bin.join("prune-tool"), EVIL);
    refused_as_drift(&env, &vars, "pinned prune-tool content");
    // The approved program, back in place, runs (from its private copy).
    write_exec(&bin.join("prune-tool"), SCRIPT);
    let r = env.run_env("alice", &vars, &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
}

#[test]
fn a_preview_script_edited_to_rewrite_the_command_is_drift_and_nothing_runs() {
    let env = with_script();
    fs::write(
        env.repo.join("scripts/preview.sh"),
        "sh scripts/prune.sh --dry-run\n",
    )
    .unwrap();
    plan_approved(
        &env,
        &[],
        &[
            "plan",
            "exec",
            "--preview",
            "sh scripts/preview.sh",
            "--",
            "sh",
            "scripts/prune.sh",
        ],
    );
    // Prints the approved manifest, then rewrites the (pinned) command before it runs.
    fs::write(
        env.repo.join("scripts/preview.sh"),
        "sh scripts/prune.sh --dry-run\necho 'touch pwned' >> scripts/prune.sh\n",
    )
    .unwrap();
    refused_as_drift(&env, &[], "pinned scripts/preview.sh content");
    assert_eq!(
        fs::read_to_string(env.repo.join("scripts/prune.sh")).unwrap(),
        SCRIPT,
        "the edited preview ran"
    );
}

#[test]
fn an_edited_before_image_script_is_drift_and_nothing_runs() {
    let env = with_script();
    fs::write(env.repo.join("scripts/dump.sh"), "tar cf trash.tar trash\n").unwrap();
    let mut args = PLAN.to_vec();
    args.splice(2..2, ["--before-image", "sh scripts/dump.sh"]);
    plan_approved(&env, &[], &args);
    fs::write(env.repo.join("scripts/dump.sh"), "touch pwned\n").unwrap();
    refused_as_drift(&env, &[], "pinned scripts/dump.sh content");
    assert!(!env.repo.join("trash.tar").exists());
}

/// The script sources a helper next to it; the helper is pinned with --pin and sourced from
/// the private copy.
#[test]
fn an_edited_pinned_helper_is_drift_and_the_approved_one_is_sourced_from_the_copy() {
    let env = with_script();
    fs::create_dir_all(env.repo.join("scripts/lib")).unwrap();
    fs::write(
        env.repo.join("scripts/lib/helpers.sh"),
        "remove() { if [ \"$DRY\" = 1 ]; then echo \"would remove $1\"; else rm \"$1\" && echo \"removed $1\"; fi; }\n",
    )
    .unwrap();
    fs::write(
        env.repo.join("scripts/prune.sh"),
        ". \"$(dirname \"$0\")/lib/helpers.sh\"\n[ \"$1\" = --dry-run ] && DRY=1\nfor f in trash/*; do remove \"$f\"; done\n",
    )
    .unwrap();
    let mut args = PLAN.to_vec();
    args.splice(2..2, ["--pin", "scripts/lib"]);
    plan_approved(&env, &[], &args);
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout.contains("scripts/lib/helpers.sh sha256:"),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("[--pin]"), "{}", show.stdout);
    let approved = fs::read_to_string(env.repo.join("scripts/lib/helpers.sh")).unwrap();
    fs::write(
        env.repo.join("scripts/lib/helpers.sh"),
        format!("{approved}remove() {{ touch pwned; }}\n"),
    )
    .unwrap();
    refused_as_drift(&env, &[], "pinned scripts/lib content");
    fs::write(env.repo.join("scripts/lib/helpers.sh"), approved).unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
}

/// A writer racing the apply rewrites the script in the repository after it was checked and
/// copied: the approved bytes still run, from the private copy.
#[test]
fn a_racing_writer_during_apply_cannot_change_what_runs() {
    let env = with_script();
    planned_and_approved(&env);
    let r = env.run_env(
        "alice",
        &[
            ("GUARDCTL_TEST_EXEC_AT", "consumed"),
            ("GUARDCTL_TEST_EXEC", "printf 'touch pwned\\n' > scripts/prune.sh"),
        ],
        &["--json", "apply", "plan.json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        fs::read_to_string(env.repo.join("scripts/prune.sh")).unwrap(),
        "touch pwned\n",
        "the racing write did not happen"
    );
    assert!(trash(&env).is_empty(), "the approved script did not run");
    assert!(!pwned(&env), "the racing write ran");
    assert_eq!(r.json()["receipt"]["verified"], true);
}

/// A policy with a bulk class approved by `leads` (carol) and a protected pattern.
/// A route by pattern covers some of the ids.
const BULK_POLICY: &str = "version = 1\nprotected = [\"main\", \"keep/*\"]\n[groups]\nleads = [\"carol@example.com\"]\ndevs = [\"bob@example.com\"]\n[bulk]\nthreshold = 50\nrequired = 1\nfrom = [\"leads\"]\n[[route]]\nname = \"sixes\"\nrefs = [\"artifacts/build-6*\"]\nrequired = 1\nfrom = [\"devs\"]";

#[test]
fn a_manifest_of_600_ids_above_the_bulk_threshold_needs_the_bulk_approvers() {
    let env = with_script();
    env.commit(".guardctl/policy.toml", BULK_POLICY, "Alice", 1);
    let r = env.run(
        "alice",
        &[
            "--json",
            "plan",
            "exec",
            "--preview",
            "seq 600 | sed 's/^/artifacts\\/build-/'",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let j = r.json();
    assert_eq!(j["exec"]["resources"], 600);
    assert_eq!(j["risk"]["reasons"], serde_json::json!(["command", "bulk"]));
    let groups: Vec<(&str, u64)> = j["approvals"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap(), g["resources"].as_u64().unwrap()))
        .collect();
    assert_eq!(groups, [("sixes", 12), ("default", 588), ("bulk", 600)]);
    assert_eq!(j["approvals"]["groups"][0]["resources"], 12);
    let show = env.run("alice", &["show", "plan.json", "--page", "12"]);
    assert!(show.stdout.contains("page 12 of 12"), "{}", show.stdout);
    assert!(show.stdout.contains("  artifacts/build-600\n"), "{}", show.stdout);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert_eq!(env.run("carol", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_protected_id_in_the_manifest_makes_the_plan_invalid() {
    let env = with_script();
    env.commit(".guardctl/policy.toml", BULK_POLICY, "Alice", 1);
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "printf 'old/a\\nkeep/b\\n'",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr.contains("keep/b, which the policy protects"),
        "{}",
        r.stderr
    );
    assert!(!env.repo.join("plan.json").exists());
}

#[test]
fn verify_finding_half_the_manifest_left_is_exit_15_with_the_remaining_ids() {
    let env = with_script();
    for f in ["c", "d"] {
        fs::write(env.repo.join("trash").join(f), f).unwrap();
    }
    let plan = |command: &str| {
        plan_approved(
            &env,
            &[],
            &[
                "plan",
                "exec",
                "--preview",
                "ls trash",
                "--verify",
                "ls trash",
                // The second plan replaces the first, approved one.
                "--force",
                "--",
                "sh",
                "-c",
                command,
            ],
        )
    };
    plan("rm trash/a trash/b");
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 15, "{}", r.transcript());
    assert!(r.stdout.contains("exit status 0; NOT verified"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("verify     ls trash: 4 expected, 2 observed, 2 still present"),
        "{}",
        r.stdout
    );
    assert_eq!(trash(&env), ["c", "d"]);
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    let receipt = &r.json()["receipt"];
    assert_eq!(receipt["verified"], false);
    assert_eq!(receipt["exec"]["status"], 0);
    let v = &receipt["exec"]["verification"];
    assert_eq!(v["expected"], serde_json::json!(["a", "b", "c", "d"]));
    assert_eq!(v["observed"], serde_json::json!(["c", "d"]));
    assert_eq!(v["remaining"], serde_json::json!(["c", "d"]));
    assert!(
        receipt["mismatches"][0]
            .as_str()
            .unwrap()
            .contains("2 of 4 manifest resources are still present: c, d"),
        "{receipt}"
    );
    // The same check passes when the command does all it said.
    plan("rm trash/c trash/d");
    let r = env.run("alice", &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        r.json()["receipt"]["exec"]["verification"]["remaining"],
        serde_json::json!([])
    );
}

/// An approved preview that tries to rewrite the command while apply re-runs it cannot: the
/// preview runs sandboxed, the work tree read-only to it, so the approved command runs as
/// approved and the preview's edit never lands. (Were it to land, the pinned files are
/// derived again after the preview and the edit would be drift.)
#[test]
fn a_preview_cannot_rewrite_the_command_during_apply() {
    let env = with_script();
    fs::write(
        env.repo.join("scripts/preview.sh"),
        "sh scripts/prune.sh --dry-run\n[ -f .git/armed ] && echo 'touch pwned' >> scripts/prune.sh\nexit 0\n",
    )
    .unwrap();
    plan_approved(
        &env,
        &[],
        &[
            "plan",
            "exec",
            "--preview",
            "sh scripts/preview.sh",
            "--",
            "sh",
            "scripts/prune.sh",
        ],
    );
    fs::write(env.repo.join(".git/armed"), "").unwrap();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        fs::read_to_string(env.repo.join("scripts/prune.sh")).unwrap(),
        SCRIPT
    );
    assert!(trash(&env).is_empty(), "the approved command did not run");
    assert!(!pwned(&env), "the preview's edit ran");
}

/// A PATH directory someone else can write is where a program would be dropped after
/// approval: refused at plan (64, naming it) and at apply (drift, nothing run); `show`
/// lists every directory of the recorded PATH.
#[test]
fn path_directories_others_can_write_are_refused_at_plan_and_at_apply() {
    use std::os::unix::fs::PermissionsExt;
    let env = with_script();
    let bin = env.path().join("tools");
    fs::create_dir_all(&bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let vars = [("PATH", path.as_str())];
    for (mode, who) in [(0o777, "anyone"), (0o775, "its group")] {
        fs::set_permissions(&bin, fs::Permissions::from_mode(mode)).unwrap();
        let r = env.run_env("alice", &vars, &PLAN);
        assert_eq!(r.code, 64, "{}", r.transcript());
        assert!(
            r.stderr
                .contains(&format!("{} is writable by {who}", bin.display())),
            "{}",
            r.stderr
        );
        assert!(!env.repo.join("plan.json").exists());
    }
    let r = env.run_env("alice", &[("PATH", "relative/bin:/usr/bin:/bin")], &PLAN);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("relative/bin is relative"), "{}", r.stderr);

    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    plan_approved(&env, &vars, &PLAN);
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout.contains(&format!("  PATH        {path}\n")),
        "{}",
        show.stdout
    );
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o777)).unwrap();
    let r = env.run_env("alice", &vars, &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(
        r.stderr.contains(&format!("PATH directory {}", bin.display())),
        "{}",
        r.stderr
    );
    assert_eq!(trash(&env), ["a", "b"], "the command ran");
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let r = env.run_env("alice", &vars, &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// A planner who re-signs the plan to show the reviewer other PATH directories than the PATH
/// it recorded is caught: the directories must make the recorded PATH.
#[test]
fn a_re_signed_plan_showing_other_path_directories_is_refused() {
    let env = with_script();
    let r = env.run_env("alice", &[("PATH", "/usr/bin:/bin")], &PLAN);
    assert_eq!(r.code, 0, "{}", r.transcript());
    crate::hostile::forge(&env, |plan| {
        if let guardctl::plan::model::Operation::Exec(x) = &mut plan.operation {
            x.path_dirs = vec!["/usr/bin".into()];
        }
    });
    let show = env.run("bob", &["show", "plan.json"]);
    assert!(
        show.stdout.contains("  PATH        /usr/bin\n"),
        "{}",
        show.transcript()
    );
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run_env("alice", &[("PATH", "/usr/bin:/bin")], &["apply", "plan.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("not the PATH it recorded"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"], "the command ran");
}

/// Every byte the command can load from the work tree is the approved byte: whatever the
/// interpreter finds by itself (a helper a script sources, a `python3 -m` module, a file read
/// by `$(cat …)` in any command string) is pinned by content with the rest of the work tree
/// under the working directory. Each edit after approval is drift naming the file, and
/// nothing runs; the same plan with nothing changed applies.
#[test]
fn code_an_interpreter_loads_by_itself_is_pinned_with_the_work_tree() {
    let setup = || {
        let env = with_script();
        fs::write(env.repo.join("scripts/lib.sh"), "helper() { echo helping; }\n").unwrap();
        fs::write(
            env.repo.join("scripts/run.sh"),
            ". scripts/lib.sh\nhelper\nsh scripts/prune.sh\n",
        )
        .unwrap();
        fs::create_dir_all(env.repo.join("mods")).unwrap();
        fs::write(env.repo.join("mods/prune.py"), "print('pruning')\n").unwrap();
        for f in ["extra", "before", "after"] {
            fs::write(env.repo.join("scripts").join(f), format!("echo {f}\n")).unwrap();
        }
        env
    };
    // A `$(cat …)` in each of the three command strings.
    let args = &[
        "plan",
        "exec",
        "--preview",
        "eval \"$(cat scripts/extra)\" >/dev/null; ls trash",
        "--before-image",
        "eval \"$(cat scripts/before)\"",
        "--verify",
        "eval \"$(cat scripts/after)\" >/dev/null; ls trash",
        "--",
        "sh",
        "scripts/run.sh",
    ];
    // Control: nothing changed, it applies.
    let env = setup();
    plan_approved(&env, &[], args);
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(show.stdout.contains("  work tree   "), "{}", show.stdout);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(trash(&env).is_empty());
    for (file, edit) in [
        ("scripts/lib.sh", "helper() { touch pwned; }\n"),
        ("mods/prune.py", "import os; open('pwned', 'w')\n"),
        ("scripts/extra", "touch pwned\n"),
        ("scripts/before", "touch pwned\n"),
        ("scripts/after", "touch pwned\n"),
        ("scripts/new-helper.sh", "touch pwned\n"),
    ] {
        let env = setup();
        plan_approved(&env, &[], args);
        fs::write(env.repo.join(file), edit).unwrap();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(r.code, 10, "{file}: {}", r.transcript());
        assert!(
            r.stderr.contains(&format!("{file} content")),
            "{file}: {}",
            r.stderr
        );
        assert_eq!(trash(&env), ["a", "b"], "{file}: the command ran");
        assert!(!pwned(&env));
    }
}

/// A planner who re-signs the plan with an empty work-tree content (as if the working
/// directory were empty) skips nothing: the empty list is compared like any other, and the
/// files now there are drift. (No list at all is refused, 65: tests/cli/attack28.rs.)
#[test]
fn a_re_signed_plan_without_its_content_is_drift() {
    let env = with_script();
    let r = env.run("alice", &PLAN);
    assert_eq!(r.code, 0, "{}", r.transcript());
    crate::hostile::forge(&env, |plan| {
        if let guardctl::plan::model::Operation::Exec(x) = &mut plan.operation {
            assert!(x.content.as_ref().is_some_and(|c| !c.is_empty()));
            x.content = Some(Vec::new());
        }
    });
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("scripts/prune.sh content"), "{}", r.stderr);
    assert_eq!(trash(&env), ["a", "b"], "the command ran");
}

/// Exec plans re-signed by a hostile planner (issue 12's review): apply trusts nothing the
/// planner wrote.
mod forged_exec_plans {
    use crate::fixtures::TestEnv;
    use crate::hostile::forge;
    use guardctl::plan::Operation;
    use std::fs;

    // ---------------------------------------------------------------------------------------
    // exec plans
    // ---------------------------------------------------------------------------------------

    const SCRIPT: &str = "#!/bin/sh\nfor f in trash/*; do\n  if [ \"$1\" = --dry-run ]; then echo \"would remove $f\"; else rm \"$f\" && echo \"removed $f\"; fi\ndone\n";

    /// A repository with scripts/prune.sh, scripts/dump.sh and two files in trash/.
    fn with_script() -> TestEnv {
        let env = TestEnv::new();
        fs::create_dir_all(env.repo.join("scripts")).unwrap();
        fs::create_dir_all(env.repo.join("trash")).unwrap();
        fs::write(env.repo.join("scripts/prune.sh"), SCRIPT).unwrap();
        fs::write(env.repo.join("scripts/dump.sh"), "#!/bin/sh\necho dumped\n").unwrap();
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

    fn plan_exec(env: &TestEnv, extra: &[&str]) {
        let mut args = vec!["plan", "exec", "--preview", "sh scripts/prune.sh --dry-run"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "scripts/prune.sh"]);
        let r = env.run("alice", &args);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }

    fn exec_inputs(p: &mut guardctl::plan::Plan) -> &mut guardctl::plan::ExecInputs {
        match &mut p.operation {
            Operation::Exec(x) => x,
            _ => panic!("not an exec plan"),
        }
    }

    /// The reviewer reads `preview_output.text`; apply compares only `preview_output.sha256`. A
    /// planner who keeps the real digest and rewrites the text shows the approver a harmless
    /// manifest while the command does what the real preview said.
    #[test]
    fn a_forged_exec_preview_text_that_is_not_the_previews_output_is_refused() {
        let env = with_script();
        plan_exec(&env, &[]);
        forge(&env, |p| {
            exec_inputs(p).preview_output.text = "would remove trash/a\n".into();
        });
        let show = env.run("bob", &["show", "plan.json"]);
        assert_eq!(
            show.code,
            65,
            "show displayed a preview that is not the preview's output:\n{}",
            show.transcript()
        );
        let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
        let before = env.repository_state();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(r.code, 65, "{}", r.transcript());
        assert_eq!(trash(&env), ["a", "b"], "the command ran");
        assert_eq!(
            before,
            env.repository_state(),
            "a refused apply changed the repository"
        );
    }

    /// `files` (the digests of the repository files the command names) is planner-written and
    /// never re-derived from `command`: a plan without the script's digest lets the script be
    /// swapped after approval, as long as its dry run prints the same.
    #[test]
    fn a_forged_exec_plan_that_drops_the_scripts_digest_is_refused() {
        let env = with_script();
        plan_exec(&env, &[]);
        forge(&env, |p| exec_inputs(p).files.clear());
        let r = env.run("bob", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        // After approval: the same dry run, a different deed.
        fs::write(
            env.repo.join("scripts/prune.sh"),
            SCRIPT.replace("else rm \"$f\"", "else touch pwned; rm \"$f\""),
        )
        .unwrap();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert!(
            !env.repo.join("pwned").exists(),
            "a script changed after approval ran (exit {}):\n{}",
            r.code,
            r.transcript()
        );
        assert_eq!(
            r.code,
            10,
            "a script changed after approval is drift: {}",
            r.transcript()
        );
    }

    /// The before-image command is a shell string: the files it runs are never digested, so a
    /// script it names can be changed after approval (by anyone who can write the work tree) and
    /// runs at apply — before the command, with the command's environment.
    #[test]
    fn an_exec_before_image_script_changed_after_approval_is_drift() {
        let env = with_script();
        plan_exec(&env, &["--before-image", "sh scripts/dump.sh"]);
        let r = env.run("bob", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        fs::write(
            env.repo.join("scripts/dump.sh"),
            "#!/bin/sh\ntouch pwned\necho dumped\n",
        )
        .unwrap();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert!(
            !env.repo.join("pwned").exists(),
            "a before-image script changed after approval ran (exit {}):\n{}",
            r.code,
            r.transcript()
        );
        assert_eq!(r.code, 10, "{}", r.transcript());
        assert_eq!(trash(&env), ["a", "b"]);
    }

    /// Digests are never checked to be digests; `show` cuts them at byte 12, which panics
    /// inside a multi-byte character (exit 101) instead of refusing the plan (65).
    #[test]
    fn a_forged_exec_plan_with_a_non_hex_digest_is_refused_not_a_panic() {
        let env = with_script();
        plan_exec(&env, &["--env", "HOME"]);
        forge(&env, |p| {
            let x = exec_inputs(p);
            x.files[0].sha256 = format!("a{}", "é".repeat(7));
            x.env[0].sha256 = Some(format!("a{}", "é".repeat(7)));
            x.preview_output.sha256 = "not a digest".into();
        });
        for (who, args) in [
            ("bob", &["show", "plan.json"][..]),
            ("bob", &["approve", "plan.json", "--yes"][..]),
            ("alice", &["verify", "plan.json"][..]),
        ] {
            let r = env.run(who, args);
            assert_eq!(r.code, 65, "{args:?}: {}", r.transcript());
        }
    }

    /// `files[].path` is planner-written and only joined to the work tree: an absolute path or
    /// `../` reads any file the applier (a CI job) can read — `/dev/zero` exhausts memory, a FIFO
    /// blocks forever — and the drift message prints 48 bits of that file's sha256, enough to
    /// confirm a guessed low-entropy secret. A path guardctl would record is relative, inside the
    /// work tree, outside `.git`.
    #[test]
    fn a_forged_exec_file_path_outside_the_work_tree_is_refused() {
        let env = with_script();
        let secret = env.path().join("secret");
        fs::write(&secret, "1234\n").unwrap();
        let digest = {
            use sha2::Digest;
            let d = sha2::Sha256::digest(b"1234\n");
            d.iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        plan_exec(&env, &[]);
        forge(&env, |p| {
            exec_inputs(p).files.push(guardctl::plan::FileDigest {
                path: "../secret".into(),
                sha256: "0".repeat(64),
            })
        });
        let show = env.run("bob", &["show", "plan.json"]);
        assert_eq!(show.code, 65, "{}", show.transcript());
        let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
        let r = env.run("alice", &["verify", "plan.json"]);
        assert!(
            !r.stderr.contains(&digest[..12]),
            "verify printed the digest of a file outside the repository:\n{}",
            r.transcript()
        );
        assert_eq!(r.code, 65, "{}", r.transcript());
    }
}
