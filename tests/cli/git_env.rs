//! Nothing outside the plan steers guardctl's git: location variables in the environment are
//! refused by every command (git and guardctl's readers would see different repositories),
//! every other `GIT_*` variable is dropped before git runs, and no program the repository's
//! own config names (hooks, fsmonitor, credential helpers, askpass, proxies, the ssh command)
//! runs for a reviewer's command. Each program-running key is tried against a canary, with a
//! control showing plain git runs it.

use crate::fixtures::{TestEnv, backed_up, standard_repo};
use guardctl::repo::gitenv::SPLITTING;
use std::fs;
use std::path::{Path, PathBuf};

fn planned_and_approved() -> TestEnv {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--gone"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

#[test]
fn every_location_variable_is_refused_by_every_command_and_nothing_changes() {
    let env = planned_and_approved();
    // Somewhere plausible for each variable to point: another repository's git dir.
    let other = env.path().join("other.git");
    env.git_in(env.path(), &["init", "-q", "--bare", other.to_str().unwrap()]);
    let elsewhere = other.join("objects");
    let before = env.repository_state();
    let plan_before = fs::read(env.repo.join("plan.json")).unwrap();
    let commands: [(&str, &[&str]); 9] = [
        ("alice", &["plan", "stale-branches", "-o", "p2.json"]),
        ("alice", &["show", "plan.json"]),
        ("carol", &["approve", "plan.json", "--yes"]),
        ("alice", &["verify", "plan.json"]),
        ("alice", &["apply", "plan.json"]),
        ("alice", &["rollback", "plan.json"]),
        ("alice", &["recover"]),
        ("alice", &["gc"]),
        ("alice", &["log"]),
    ];
    for var in SPLITTING {
        let value = match var {
            "GIT_OBJECT_DIRECTORY" | "GIT_ALTERNATE_OBJECT_DIRECTORIES" => elsewhere.to_str().unwrap(),
            "GIT_NAMESPACE" | "GIT_REPLACE_REF_BASE" => "ns",
            _ => other.to_str().unwrap(),
        };
        for (user, args) in commands {
            let r = env.run_env(user, &[(var, value)], args);
            assert_eq!(r.code, 64, "{var} {args:?}: {}", r.transcript());
            assert!(
                r.stderr.contains(&format!("{var} is set")),
                "{var} {args:?}: {}",
                r.stderr
            );
        }
    }
    assert_eq!(
        env.repository_state(),
        before,
        "a refused command changed the repository"
    );
    assert_eq!(fs::read(env.repo.join("plan.json")).unwrap(), plan_before);
    assert!(!env.repo.join("p2.json").exists());
    assert_eq!(
        env.git_in(&other, &["for-each-ref"]),
        "",
        "something was written into the other repository"
    );
}

/// A hook directory whose every hook appends its name to `canary`.
fn canary_hooks(env: &TestEnv, canary: &Path) -> PathBuf {
    let hooks = env.path().join("evil-hooks");
    fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "reference-transaction",
        "pre-push",
        "post-checkout",
        "post-merge",
        "pre-commit",
        "post-index-change",
        "push-to-checkout",
        "pre-receive",
        "update",
        "post-update",
    ] {
        write_script(
            &hooks.join(hook),
            &format!("#!/bin/sh\necho hook-{hook} >> '{}'\n", canary.display()),
        );
    }
    hooks
}

fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn other_git_variables_are_dropped_so_apply_and_rollback_act_on_this_repository() {
    let env = planned_and_approved();
    let canary = env.path().join("canary");
    let hooks = canary_hooks(&env, &canary);
    let exec_path = env.path().join("exec-path");
    fs::create_dir_all(&exec_path).unwrap();
    let hooks_s = hooks.to_str().unwrap();
    let injected = format!("'core.hookspath'='{hooks_s}'");
    let vars = [
        ("GIT_CONFIG_PARAMETERS", injected.as_str()),
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "core.hooksPath"),
        ("GIT_CONFIG_VALUE_0", hooks_s),
        // An exec path without git's own programs: git would fail to run its sub-commands.
        ("GIT_EXEC_PATH", exec_path.to_str().unwrap()),
        ("GIT_TRACE", canary.to_str().unwrap()),
    ];
    let branches_before = env.git(&["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]);
    let r = env.run_env("alice", &vars, &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        !canary.exists(),
        "a GIT_* variable reached git: {:?}",
        fs::read_to_string(&canary)
    );
    // The backup is in this repository's object store, where rollback finds it.
    assert!(!backed_up(&env.repo).is_empty());
    let r = env.run_env("alice", &vars, &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        env.git(&["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]),
        branches_before,
        "rollback did not restore every branch"
    );
    assert!(!canary.exists());
    let r = env.run("alice", &["--json", "log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn reviewer_commands_run_no_program_the_repositorys_config_names() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--gone"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let canary = env.path().join("canary");
    let hooks = canary_hooks(&env, &canary);
    let program = env.path().join("program.sh");
    write_script(
        &program,
        &format!("#!/bin/sh\necho \"program $*\" >> '{}'\n", canary.display()),
    );
    let p = program.to_str().unwrap();
    let helper = format!("!{p}");
    for (key, value) in [
        ("core.hooksPath", hooks.to_str().unwrap()),
        ("core.fsmonitor", p),
        ("credential.helper", helper.as_str()),
        ("core.askPass", p),
        ("core.gitProxy", p),
        ("core.pager", p),
        ("diff.external", p),
        ("filter.evil.clean", p),
        ("filter.evil.smudge", p),
        ("diff.evil.textconv", p),
    ] {
        env.git(&["config", key, value]);
    }
    fs::write(env.repo.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    let reviewer: [(&str, &[&str]); 6] = [
        ("bob", &["show", "plan.json"]),
        ("bob", &["verify", "plan.json"]),
        ("bob", &["inbox"]),
        ("bob", &["log"]),
        ("bob", &["whoami"]),
        ("bob", &["approve", "plan.json", "--yes"]),
    ];
    for (user, args) in reviewer {
        env.run(user, args);
        assert!(
            !canary.exists(),
            "{args:?} ran a program the repository's config names: {}",
            fs::read_to_string(&canary).unwrap_or_default()
        );
    }
    // The approval went through: the audit ref moved, with the hooks off.
    let r = env.run("alice", &["--json", "verify", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!canary.exists());

    // The ssh command: the remote is now reached over ssh (nothing listens; it fails).
    env.git(&["config", "core.sshCommand", p]);
    env.git(&["remote", "set-url", "origin", "ssh://git@127.0.0.1:9/nowhere.git"]);
    for (user, args) in reviewer {
        env.run(user, args);
        assert!(
            !canary.exists(),
            "{args:?} ran the repository's core.sshCommand: {}",
            fs::read_to_string(&canary).unwrap_or_default()
        );
    }

    // Controls: plain git runs them (ls-remote fails after running the ssh command).
    let _ = std::process::Command::new("git")
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["ls-remote", "origin"])
        .output()
        .unwrap();
    let ran = fs::read_to_string(&canary).unwrap_or_default();
    assert!(
        ran.contains("program"),
        "the control's ssh command did not run: {ran}"
    );
    fs::remove_file(&canary).unwrap();
    env.git(&["update-ref", "refs/heads/canary-control", "HEAD"]);
    let ran = fs::read_to_string(&canary).unwrap_or_default();
    assert!(
        ran.contains("hook-reference-transaction"),
        "the control's hook did not run: {ran}"
    );
}

/// A clone's configured upload/receive-pack programs (issue 28's review).
mod clone_programs {
    use crate::fixtures::TestEnv;

    fn approve(env: &TestEnv) {
        let r = env.run("bob", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }

    /// The clone's own config names the programs git runs for its remote's URL
    /// (`remote.<url>.uploadpack`, `remote.<url>.receivepack`: git looks a URL up as a remote's
    /// name): for a local or `file://` remote git runs them here, with the executor's rights.
    /// guardctl always asks for git's own.
    #[test]
    fn the_clones_upload_and_receive_pack_programs_never_run() {
        let env = crate::fixtures::remote_repo();
        let url = format!("file://{}", env.origin().display());
        let mark = env.path().join("pwned-pack");
        for key in ["uploadpack", "receivepack"] {
            let prog = if key == "uploadpack" {
                "git-upload-pack"
            } else {
                "git-receive-pack"
            };
            env.git(&[
                "config",
                &format!("remote.{url}.{key}"),
                &format!("touch {}; {prog}", mark.display()),
            ]);
        }
        let r = env.run("alice", &["plan", "remote-branches", "--remote", "origin"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        approve(&env);
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert!(!mark.exists(), "the clone's pack program ran");
    }
}
