//! Attacks on issue 28's rules (git child environment, exec plans' PATH and work-tree
//! content pins): each test is an attack that once got a changed byte past approval.

use crate::fixtures::TestEnv;

use std::fs;

use std::path::Path;

/// A work tree with trash/{a,b} and scripts/run.sh, which sources whatever `extra` says and
/// then empties trash/.
fn setup(run: &str) -> TestEnv {
    let env = TestEnv::new();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("scripts/run.sh"), format!("{run}\nrm -f trash/*\n")).unwrap();
    for f in ["a", "b"] {
        fs::write(env.repo.join("trash").join(f), f).unwrap();
    }
    env
}

const PLAN: [&str; 7] = [
    "plan",
    "exec",
    "--preview",
    "ls trash",
    "--",
    "sh",
    "scripts/run.sh",
];

fn plan_approved(env: &TestEnv, dir: &Path) {
    plan_in(env, dir, &PLAN[2..]);
}

/// `plan exec -o <repo>/plan.json <args>` as alice, run in `dir`; it must succeed.
fn plan_in(env: &TestEnv, dir: &Path, args: &[&str]) {
    let mut c = env.command();
    c.current_dir(dir)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["plan", "exec", "-o"])
        .arg(env.repo.join("plan.json"))
        .args(args);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

fn approve(env: &TestEnv) {
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

fn apply_in(env: &TestEnv, dir: &Path) -> crate::fixtures::Run {
    let mut c = env.command();
    c.current_dir(dir)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("apply")
        .arg(env.repo.join("plan.json"));
    crate::fixtures::run(c)
}

/// Apply is refused (drift or an invalid plan) and nothing ran.
fn refused(env: &TestEnv, r: &crate::fixtures::Run) {
    assert!(r.code == 10 || r.code == 65, "{}", r.transcript());
    assert!(env.repo.join("trash/a").exists(), "the command ran");
    assert!(!env.repo.join("pwned").exists(), "the hostile edit ran");
}

fn pwn(env: &TestEnv, file: &str) {
    fs::write(env.repo.join(file), "touch pwned\n").unwrap();
}

/// A hostile planner re-signs the plan with `content: []`: apply must not read that as "a
/// plan made before the rule" and skip the check.
#[test]
fn a_re_signed_plan_with_no_content_does_not_skip_the_work_tree_check() {
    let env = setup(". scripts/lib.sh");
    fs::write(env.repo.join("scripts/lib.sh"), "echo helping\n").unwrap();
    plan_approved(&env, &env.repo);
    crate::hostile::forge(&env, |plan| {
        if let guardctl::plan::model::Operation::Exec(x) = &mut plan.operation {
            x.content = Default::default();
        }
    });
    approve(&env);
    pwn(&env, "scripts/lib.sh");
    refused(&env, &apply_in(&env, &env.repo));
}

/// A hostile planner re-signs the plan with no PATH directories (the reviewer is shown no
/// PATH): the recorded PATH is still checked against them.
#[test]
fn a_re_signed_plan_hiding_its_path_directories_is_refused() {
    let env = setup("true");
    plan_approved(&env, &env.repo);
    crate::hostile::forge(&env, |plan| {
        if let guardctl::plan::model::Operation::Exec(x) = &mut plan.operation {
            x.path_dirs = vec![];
        }
    });
    approve(&env);
    let r = apply_in(&env, &env.repo);
    assert_eq!(r.code, 65, "{}", r.transcript());
    refused(&env, &r);
}

/// A working directory with no file in it at planning time: a file put there after approval
/// is drift (an empty pinned list is not "nothing to check").
#[test]
fn a_file_added_to_an_empty_working_directory_is_drift() {
    let env = setup(". ./extra.sh 2>/dev/null; cd ..");
    let dir = env.repo.join("work");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        env.repo.join("scripts/run.sh"),
        "[ -f extra.sh ] && . ./extra.sh\nrm -f ../trash/*\n",
    )
    .unwrap();
    plan_in(
        &env,
        &dir,
        &["--preview", "ls ../trash", "--", "sh", "../scripts/run.sh"],
    );
    approve(&env);
    fs::write(dir.join("extra.sh"), "touch ../pwned\n").unwrap();
    refused(&env, &apply_in(&env, &dir));
}

/// After approval, a new file is hidden from the listing by .git/info/exclude (or a
/// core.excludesFile the repository's config names): still drift.
#[test]
fn a_file_hidden_by_info_exclude_after_approval_is_drift() {
    for how in ["info/exclude", "core.excludesFile"] {
        let env = setup("[ -f scripts/extra.sh ] && . scripts/extra.sh");
        plan_approved(&env, &env.repo);
        approve(&env);
        match how {
            "info/exclude" => {
                fs::create_dir_all(env.repo.join(".git/info")).unwrap();
                fs::write(env.repo.join(".git/info/exclude"), "extra.sh\n").unwrap();
            }
            _ => {
                fs::write(env.path().join("ignored"), "extra.sh\n").unwrap();
                let p = env.path().join("ignored");
                env.git(&["config", "core.excludesFile", p.to_str().unwrap()]);
            }
        }
        pwn(&env, "scripts/extra.sh");
        refused(&env, &apply_in(&env, &env.repo));
    }
}

/// A .gitignore above the working directory (outside the pinned set) edited after approval
/// to hide a new file in it: drift.
#[test]
fn a_parent_gitignore_edited_after_approval_is_drift() {
    let env = setup("true");
    let dir = env.repo.join("scripts");
    fs::write(
        dir.join("run.sh"),
        "[ -f extra.sh ] && . ./extra.sh\nrm -f ../trash/*\n",
    )
    .unwrap();
    plan_in(&env, &dir, &["--preview", "ls ../trash", "--", "sh", "run.sh"]);
    approve(&env);
    fs::write(env.repo.join(".gitignore"), "extra.sh\n").unwrap();
    fs::write(dir.join("extra.sh"), "touch ../pwned\n").unwrap();
    refused(&env, &apply_in(&env, &dir));
}

/// A nested repository (or submodule) under the working directory: git lists it as one
/// entry, and the files inside it are pinned all the same.
#[test]
fn a_file_inside_a_nested_repository_is_pinned() {
    let env = setup(". scripts/vendor/lib.sh");
    let vendor = env.repo.join("scripts/vendor");
    fs::create_dir_all(&vendor).unwrap();
    env.git_in(&vendor, &["init", "-q"]);
    fs::write(vendor.join("lib.sh"), "echo helping\n").unwrap();
    plan_approved(&env, &env.repo);
    approve(&env);
    pwn(&env, "scripts/vendor/lib.sh");
    refused(&env, &apply_in(&env, &env.repo));
}

/// A tracked (or untracked) symbolic link retargeted after approval: drift, though neither
/// the old nor the new link is a regular file.
#[test]
fn a_link_retargeted_after_approval_is_drift() {
    let env = setup(". scripts/lib.sh");
    fs::write(env.path().join("good.sh"), "echo helping\n").unwrap();
    fs::write(env.path().join("evil.sh"), "touch pwned\n").unwrap();
    std::os::unix::fs::symlink(env.path().join("good.sh"), env.repo.join("scripts/lib.sh")).unwrap();
    plan_approved(&env, &env.repo);
    approve(&env);
    fs::remove_file(env.repo.join("scripts/lib.sh")).unwrap();
    std::os::unix::fs::symlink(env.path().join("evil.sh"), env.repo.join("scripts/lib.sh")).unwrap();
    refused(&env, &apply_in(&env, &env.repo));
}

/// A file shaped like a plan envelope is left out of the pinned set; one whose strings a
/// shell would expand (`$(…)`) is not a plan file, however it parses.
#[test]
fn an_envelope_shaped_file_a_script_sources_is_pinned() {
    let env = setup(". scripts/conf.json 2>/dev/null");
    let conf = |t: &str| format!("{{\"payloadType\":\"{t}\",\"payload\":\"\",\"signatures\":[]}}\n");
    fs::write(env.repo.join("scripts/conf.json"), conf("x")).unwrap();
    plan_approved(&env, &env.repo);
    approve(&env);
    fs::write(env.repo.join("scripts/conf.json"), conf("$(touch pwned)")).unwrap();
    refused(&env, &apply_in(&env, &env.repo));
}

/// A .gitignore that ignores itself (so git never lists it) is pinned all the same: a line
/// added to it after approval, hiding a new file, is drift.
#[test]
fn a_gitignore_that_ignores_itself_is_pinned() {
    let env = setup("[ -f scripts/extra.sh ] && . scripts/extra.sh");
    fs::write(env.repo.join("scripts/.gitignore"), ".gitignore\n").unwrap();
    plan_approved(&env, &env.repo);
    approve(&env);
    fs::write(env.repo.join("scripts/.gitignore"), ".gitignore\nextra.sh\n").unwrap();
    pwn(&env, "scripts/extra.sh");
    let r = apply_in(&env, &env.repo);
    assert!(r.stderr.contains("scripts/.gitignore content"), "{}", r.stderr);
    refused(&env, &r);
}

/// Scripts an interpreter runs, pinned however they are reached (second review of issue 20's
/// exec plans).
mod interpreters {
    use crate::fixtures::{TestEnv, run};
    use std::fs;

    /// A pinned "file" whose size says 0 but which reads without end (`/proc/self/pagemap` reads
    /// as 8 bytes per page of the whole address space: hundreds of GiB) must be refused by the
    /// pinning budget on the bytes read, not exhaust memory. Run under a 1.5 GB address-space
    /// limit so that today's unbounded read dies quickly instead of taking the machine with it.
    #[test]
    fn a_pinned_file_that_reads_without_end_is_refused_by_the_budget() {
        let env = TestEnv::new();
        let mut c = std::process::Command::new("prlimit");
        c.arg("--as=1500000000")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_guardctl"))
            .current_dir(&env.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &env.home)
            .env("TZ", "UTC")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GUARDCTL_TEST_NOW", crate::fixtures::NOW)
            .arg("--key")
            .arg(env.key("alice"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args([
                "plan",
                "exec",
                "--preview",
                "echo x",
                "--pin",
                "/proc/self/pagemap",
                "--",
                "true",
            ]);
        let r = run(c);
        assert!(
            r.code == 64 && r.stderr.contains("goes over"),
            "pinning an endless file must stop at the budget (usage error), not run out of memory:\n{}",
            r.transcript()
        );
    }

    /// `sh -e script` is errexit, not code on the command line: the script is what runs and must
    /// be pinned like `sh script` (the README: "the script an interpreter is given"). Today `-e`
    /// is taken for perl's `-e CODE` for every interpreter, so the before-image script is neither
    /// pinned nor checked: edited after approval, it runs as edited and apply calls it verified.
    #[test]
    fn a_script_run_with_sh_dash_e_is_pinned() {
        let env = TestEnv::new();
        fs::create_dir_all(env.repo.join("scripts")).unwrap();
        fs::write(env.repo.join("scripts/p.sh"), "echo item\n").unwrap();
        fs::write(env.repo.join("scripts/b.sh"), "echo saved\n").unwrap();
        fs::write(env.repo.join("scripts/x.sh"), "echo done\n").unwrap();
        let r = env.run(
            "alice",
            &[
                "plan",
                "exec",
                "--preview",
                "sh scripts/p.sh",
                "--before-image",
                "sh -e scripts/b.sh",
                "--",
                "sh",
                "-e",
                "scripts/x.sh",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = env.run("bob", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        // After approval (a teammate's push, a `git pull`, the planner): the script changes.
        fs::write(
            env.repo.join("scripts/b.sh"),
            "echo unreviewed > pwned\necho saved\n",
        )
        .unwrap();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert!(
            !env.repo.join("pwned").exists(),
            "unreviewed code ran at apply (exit {}):\n{}",
            r.code,
            r.transcript()
        );
        assert_eq!(r.code, 10, "{}", r.transcript());
    }

    /// The same through a program or builtin that runs another (`exec`, `command`, `env`,
    /// `timeout`, `nice`): the script the wrapped interpreter runs must be pinned, or the plan
    /// refused; never run unpinned from the work tree.
    #[test]
    fn a_script_run_through_a_wrapper_is_pinned() {
        for wrapper in ["exec sh", "command sh", "env sh", "timeout 60 sh", "nice sh"] {
            let env = TestEnv::new();
            fs::create_dir_all(env.repo.join("scripts")).unwrap();
            fs::write(env.repo.join("scripts/p.sh"), "echo item\n").unwrap();
            fs::write(env.repo.join("scripts/b.sh"), "echo saved\n").unwrap();
            fs::write(env.repo.join("scripts/x.sh"), "echo done\n").unwrap();
            let before_image = format!("{wrapper} scripts/b.sh");
            let r = env.run(
                "alice",
                &[
                    "plan",
                    "exec",
                    "--preview",
                    "sh scripts/p.sh",
                    "--before-image",
                    &before_image,
                    "--",
                    "sh",
                    "scripts/x.sh",
                ],
            );
            if r.code != 0 {
                continue; // refusing to plan what cannot be pinned is also an answer
            }
            let r = env.run("bob", &["approve", "plan.json", "--yes"]);
            assert_eq!(r.code, 0, "{}", r.transcript());
            fs::write(
                env.repo.join("scripts/b.sh"),
                "echo unreviewed > pwned\necho saved\n",
            )
            .unwrap();
            let r = env.run("alice", &["apply", "plan.json"]);
            assert!(
                !env.repo.join("pwned").exists(),
                "`{before_image}`: unreviewed code ran at apply (exit {}):\n{}",
                r.code,
                r.transcript()
            );
            assert_eq!(
                r.code,
                10,
                "`{before_image}`: the edited script is drift: {}",
                r.transcript()
            );
        }
    }
}
