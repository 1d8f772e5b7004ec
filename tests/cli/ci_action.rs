//! The CI flow on the team remote (docs/ci/README.md): the composite action's steps
//! (`scripts/github-action.sh`, which action.yml runs) for real, each job in a clone of its
//! own against a `file://` team remote — a plan job publishes, two reviewers approve by id
//! in theirs, an apply job applies by id — and the action's refusals: a branch name for the
//! version, a cached binary that is not the recorded one.

use crate::fixtures::{NOW, Team, TestEnv};
use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/github-action.sh");
const VERSION: &str = "134997261af9f0c18922dbbd7d5832c08febf6ff";

/// Two approvals, from the `reviewers` group only.
const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n";

/// What one run of a step left: its exit code, output, and the files GitHub Actions reads.
struct Step {
    code: i32,
    stdout: String,
    stderr: String,
    outputs: String,
    summary: String,
}

impl Step {
    fn output(&self, name: &str) -> Option<&str> {
        self.outputs
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
    }
    fn transcript(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}--- outputs\n{}",
            self.code, self.stdout, self.stderr, self.outputs
        )
    }
}

/// Run `scripts/github-action.sh args` in `dir` as a job step would: the inputs in `vars`,
/// guardctl on PATH (with `user`'s key, the test's allowed signers and clock), and fresh
/// `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY` and `$RUNNER_TEMP`.
fn step(
    env: &TestEnv,
    dir: &Path,
    user: &str,
    args: &[&str],
    vars: &[(&str, &str)],
    path: Option<&Path>,
) -> Step {
    let job = tempfile::tempdir_in(env.path()).unwrap();
    let outputs = job.path().join("output");
    let summary = job.path().join("summary.md");
    let bin = Path::new(env!("CARGO_BIN_EXE_guardctl")).parent().unwrap();
    let system = std::env::var("PATH").unwrap_or_default();
    let path = match path {
        Some(p) => format!("{}:{}", p.display(), system),
        None => format!("{}:{system}", bin.display()),
    };
    let mut c = Command::new("bash");
    c.arg(SCRIPT)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", env.path().join("home"))
        .env("TZ", "UTC")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GUARDCTL_TEST_NOW", NOW)
        .env("GUARDCTL_KEY", env.key(user))
        .env("GUARDCTL_ALLOWED_SIGNERS", env.allowed_signers())
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("RUNNER_TEMP", job.path());
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    Step {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        outputs: std::fs::read_to_string(&outputs).unwrap_or_default(),
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
    }
}

fn remote_branch_names(env: &TestEnv) -> Vec<String> {
    env.remote_branches()
        .lines()
        .map(|l| {
            l.split(' ')
                .next()
                .unwrap()
                .trim_start_matches("refs/heads/")
                .to_string()
        })
        .collect()
}

/// The documented flow, end to end: the plan job publishes and summarises the plan (the
/// summary names the id and how to approve it); reviewers find it in their inbox and approve
/// it by id, publishing their approvals; the apply job, given only the id, is refused while
/// one approval is missing and applies once both are on the remote. No file passes between
/// the jobs and the reviewers.
#[test]
fn the_ci_flow_plans_publishes_and_applies_by_id_through_the_team_remote() {
    let t: Team = crate::fixtures::team(POLICY);
    let [plan_job, apply_job] = <[PathBuf; 2]>::try_from(t.env.clones(&["plan-job", "apply-job"])).unwrap();

    let s = step(
        &t.env,
        &plan_job,
        "alice",
        &["plan"],
        &[
            ("COMMAND", "plan"),
            ("PLAN_ARGS", "remote-branches --remote origin --merged"),
        ],
        None,
    );
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("changes"), Some("true"), "{}", s.transcript());
    assert_eq!(
        s.output("exit-code"),
        Some("2"),
        "plan's detailed exit code: {}",
        s.transcript()
    );
    let id = s.output("plan-id").unwrap().to_string();
    assert_eq!(id.len(), 64, "{}", s.transcript());
    let short = &id[..12];
    // The job summary is the plan's Markdown: what it deletes and how to approve it, by id.
    assert!(
        s.summary.starts_with(&format!("## guardctl plan `{short}`")),
        "{}",
        s.summary
    );
    assert!(
        s.summary.contains("**Deletes 2 branches** on the remote"),
        "{}",
        s.summary
    );
    assert!(
        s.summary.contains(&format!("guardctl approve {short} --publish")),
        "{}",
        s.summary
    );

    // The reviewers find it on the team remote, not in a file.
    let r = t.env.run_in(&t.bob, "bob", &["--json", "inbox"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["plans"][0]["plan_id"], format!("sha256:{id}").as_str());
    let r = t
        .env
        .run_in(&t.bob, "bob", &["approve", short, "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());

    // One approval of the two the policy asks for: the apply job is refused, nothing deleted.
    let apply = |t: &Team| {
        step(
            &t.env,
            &apply_job,
            "alice",
            &["apply"],
            &[("COMMAND", "apply"), ("PLAN", short)],
            None,
        )
    };
    let s = apply(&t);
    assert_eq!(s.code, 12, "{}", s.transcript());
    assert_eq!(s.output("exit-code"), Some("12"));
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
    );

    let r = t
        .env
        .run_in(&t.carol, "carol", &["approve", short, "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let s = apply(&t);
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("exit-code"), Some("0"));
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/live", "main", "release/1.0"]
    );
    assert!(
        s.summary.starts_with(&format!("## guardctl plan `{short}`")),
        "{}",
        s.summary
    );

    // A re-run of the apply job (a retried workflow) replays, changing nothing.
    let s = apply(&t);
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert!(s.stdout.contains("Replayed"), "{}", s.transcript());
}

/// A plan that deletes nothing is not published: the job says so and succeeds.
#[test]
fn a_plan_job_with_nothing_to_delete_publishes_nothing_and_succeeds() {
    let t: Team = crate::fixtures::team(POLICY);
    let [plan_job] = <[PathBuf; 1]>::try_from(t.env.clones(&["plan-job"])).unwrap();
    let s = step(
        &t.env,
        &plan_job,
        "alice",
        &["plan"],
        &[
            ("COMMAND", "plan"),
            (
                "PLAN_ARGS",
                "remote-branches --remote origin --merged --match nothing-*",
            ),
        ],
        None,
    );
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("changes"), Some("false"), "{}", s.transcript());
    assert!(s.summary.contains("**No changes.**"), "{}", s.summary);
    let r = t.env.run_in(&t.bob, "bob", &["--json", "inbox"]);
    assert_eq!(r.json()["plans"], serde_json::json!([]));
}

/// An exec plan through the action: its arguments end with `-- COMMAND...`, and the action's
/// own flags (`--publish`, `-o`, `--detailed-exitcode`) once went after them, becoming the
/// command's arguments (nothing published, a plan of another command). The command planned
/// is exactly the one written, and the plan is published.
#[test]
fn an_exec_plan_through_the_action_plans_exactly_the_command_written() {
    let t: Team = crate::fixtures::team(POLICY);
    let [plan_job] = <[PathBuf; 1]>::try_from(t.env.clones(&["plan-job"])).unwrap();
    // plan-args is split on blanks: the preview is one word, a script.
    write_exec(&plan_job.join("list.sh"), "#!/bin/sh\necho one\n");
    let s = step(
        &t.env,
        &plan_job,
        "alice",
        &["plan"],
        &[
            ("COMMAND", "plan"),
            ("PLAN_ARGS", "exec --preview ./list.sh -- sh list.sh"),
        ],
        None,
    );
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("changes"), Some("true"), "{}", s.transcript());
    let id = s.output("plan-id").unwrap().to_string();
    let r = t.env.run_in(&t.bob, "bob", &["--json", "show", &id]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["exec"]["command"], "sh list.sh", "{}", r.stdout);
}

/// The action refuses what must not be trusted before anything runs: a branch, tag or
/// short SHA for the guardctl version (a name can be moved to other code), a digest that is
/// not one, and an apply whose plan id is not hex.
#[test]
fn the_action_refuses_a_moveable_version_and_malformed_inputs() {
    let env = TestEnv::new();
    for (vars, says) in [
        (
            &[("VERSION", "main"), ("COMMAND", "install")][..],
            "full 40-hex commit SHA",
        ),
        (
            &[("VERSION", "v1.2.0"), ("COMMAND", "install")],
            "full 40-hex commit SHA",
        ),
        (
            &[("VERSION", &VERSION[..12]), ("COMMAND", "install")],
            "full 40-hex commit SHA",
        ),
        (
            &[("VERSION", VERSION), ("SHA256", "abc"), ("COMMAND", "install")],
            "64 hex digits",
        ),
        (
            &[("VERSION", VERSION), ("COMMAND", "destroy")],
            "build, install, plan or apply",
        ),
        // The build job restores a cache: never with the key.
        (
            &[("VERSION", VERSION), ("COMMAND", "build"), ("HAS_KEY", "true")],
            "without the key",
        ),
        (
            &[
                ("VERSION", VERSION),
                ("COMMAND", "plan"),
                ("PLAN_ARGS", "remote-branches"),
                ("ARTIFACT", "../x"),
            ],
            "artifact must be an artifact name",
        ),
        (
            &[
                ("VERSION", VERSION),
                ("COMMAND", "apply"),
                ("PLAN", "abc; rm -rf /"),
            ],
            "8 to 64 hex digits",
        ),
        (
            &[("VERSION", VERSION), ("COMMAND", "plan")],
            "plan needs plan-args",
        ),
        (
            &[("VERSION", VERSION), ("COMMAND", "plan"), ("PLAN_ARGS", "  \t ")],
            "plan needs plan-args",
        ),
        // Split on blanks, not by a shell: quotes would stay in the pattern, a second line
        // would be dropped.
        (
            &[
                ("VERSION", VERSION),
                ("COMMAND", "plan"),
                ("PLAN_ARGS", "remote-branches --merged --protect 'hotfix/*'"),
            ],
            "without quotes",
        ),
        (
            &[
                ("VERSION", VERSION),
                ("COMMAND", "plan"),
                ("PLAN_ARGS", "remote-branches --merged --protect \"hotfix/*\""),
            ],
            "without quotes",
        ),
        (
            &[
                ("VERSION", VERSION),
                ("COMMAND", "plan"),
                ("PLAN_ARGS", "remote-branches --merged\n--protect hotfix/*"),
            ],
            "one line",
        ),
    ] {
        let s = step(&env, &env.repo, "alice", &["check"], vars, None);
        assert_eq!(s.code, 1, "{vars:?}: {}", s.transcript());
        assert!(
            s.stderr.contains("::error title=guardctl::") && s.stderr.contains(says),
            "{vars:?}: {}",
            s.transcript()
        );
    }
    let s = step(
        &env,
        &env.repo,
        "alice",
        &["check"],
        &[("VERSION", VERSION), ("COMMAND", "install")],
        None,
    );
    assert_eq!(s.code, 0, "{}", s.transcript());
}

/// An input echoed back in an error is one workflow command's message: a newline (or CR) in
/// it is encoded as the runner decodes it, so it cannot start a command of its own (an
/// `::add-mask::`, a forged annotation).
#[test]
fn an_input_echoed_in_an_error_cannot_start_a_workflow_command() {
    let env = TestEnv::new();
    for hostile in [
        "main\n::warning title=x::injected",
        "main\r::add-mask::secret",
        "main%0A::warning::pre-encoded",
    ] {
        let s = step(
            &env,
            &env.repo,
            "alice",
            &["check"],
            &[("VERSION", hostile), ("COMMAND", "install")],
            None,
        );
        assert_eq!(s.code, 1, "{}", s.transcript());
        let commands: Vec<&str> = s
            .stderr
            .split(['\n', '\r'])
            .filter(|l| l.trim_start().starts_with("::"))
            .collect();
        assert_eq!(commands.len(), 1, "{hostile:?}: {}", s.transcript());
        assert!(
            commands[0].starts_with("::error title=guardctl::"),
            "{}",
            s.transcript()
        );
        // A `%` in the input is encoded too, so the runner decodes it back to `%0A`, not to a
        // newline.
        if hostile.contains('%') {
            assert!(commands[0].contains("main%250A::warning"), "{}", s.transcript());
        }
    }
}

/// A directory holding a fake `cargo` that "builds" a guardctl whose bytes are `built`
/// (and logs each call), for the install step's cache logic without a real build.
fn fake_cargo(env: &TestEnv, built: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.path().join(format!("fake-cargo-{}", built.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let cargo = dir.join("cargo");
    let log = dir.join("calls");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nwhile [ \"$1\" != --root ]; do shift; done\nmkdir -p \"$2/bin\" && printf '%s' '{built}' > \"$2/bin/guardctl\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Executables named `tools` in `dir` that only say they ran: what a poisoned cache or an
/// earlier step could leave where PATH will point.
fn plant(dir: &Path, tools: &[&str]) {
    for tool in tools {
        write_exec(&dir.join(tool), "#!/bin/sh\necho planted\n");
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// guardctl is built from the pinned commit into a folder emptied first (it goes on PATH),
/// which then holds the build alone; a build without the recorded digest fails and leaves
/// nothing to run; with no digest recorded the summary gives the build's.
#[test]
fn the_install_step_builds_the_pinned_commit_alone_onto_path() {
    let env = TestEnv::new();
    let bin_dir = env.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    // What an earlier step (or anything else on the runner) left where PATH will point.
    plant(&bin_dir, &["git", "ssh-keygen", "ssh-add"]);
    let installed = bin_dir.join("guardctl");
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    let install = |sha: &str| {
        step(
            &env,
            &env.repo,
            "alice",
            &["install", bin_dir.to_str().unwrap()],
            &[
                ("VERSION", VERSION),
                ("SHA256", sha),
                ("REPOSITORY", "file:///nowhere"),
            ],
            Some(&cargo),
        )
    };
    let calls = || std::fs::read_to_string(cargo.join("calls")).unwrap_or_default();

    let s = install(&sha256(good.as_bytes()));
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), good);
    assert_eq!(names_in(&bin_dir), ["guardctl"]);
    assert_eq!(s.output("sha256"), Some(sha256(good.as_bytes()).as_str()));
    assert!(calls().contains(&format!("--rev {VERSION} ")), "{}", calls());

    // A build that is not the recorded binary (another toolchain): fails, nothing to run.
    let s = install(&sha256(b"another digest"));
    assert_eq!(s.code, 1, "{}", s.transcript());
    assert!(s.stderr.contains("not the recorded"), "{}", s.transcript());
    assert!(!installed.exists());

    // No digest recorded: built; the summary gives the digest to record.
    let s = install("");
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("sha256"), Some(sha256(good.as_bytes()).as_str()));
    assert!(s.summary.contains(&sha256(good.as_bytes())), "{}", s.summary);
}

/// The build job (`install-cached`): the cache holds a binary anyone able to write the cache
/// could have put there; it is used only if it has the recorded digest, otherwise guardctl is
/// built from the pinned commit, and a build that does not have the recorded digest fails
/// without leaving a binary. The cache is restored into a staging folder; the folder that is
/// uploaded and put on PATH holds the checked copy alone.
#[test]
fn a_cached_binary_runs_only_with_the_recorded_digest() {
    let env = TestEnv::new();
    let stage = env.path().join("cache");
    let bin_dir = env.path().join("bin");
    std::fs::create_dir_all(&stage).unwrap();
    let cached = stage.join("guardctl");
    let installed = bin_dir.join("guardctl");
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    let install = |sha: &str| {
        step(
            &env,
            &env.repo,
            "alice",
            &[
                "install-cached",
                stage.to_str().unwrap(),
                bin_dir.to_str().unwrap(),
            ],
            &[
                ("VERSION", VERSION),
                ("SHA256", sha),
                ("REPOSITORY", "file:///nowhere"),
            ],
            Some(&cargo),
        )
    };
    let calls = || std::fs::read_to_string(cargo.join("calls")).unwrap_or_default();

    // The recorded binary: used, not rebuilt.
    std::fs::write(&cached, good).unwrap();
    let s = install(&sha256(good.as_bytes()));
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("built"), Some("false"));
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), good);
    assert_eq!(calls(), "");

    // A poisoned cache: not run, rebuilt from the pinned commit, which has the digest; the
    // build is what the cache saves.
    std::fs::write(&cached, "a binary someone else put in the cache").unwrap();
    let s = install(&sha256(good.as_bytes()));
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("built"), Some("true"));
    assert!(s.stderr.contains("is not the recorded"), "{}", s.transcript());
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), good);
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), good);
    assert!(calls().contains(&format!("--rev {VERSION} ")), "{}", calls());

    // A build that is not the recorded binary (another toolchain): fails, nothing left to run
    // or to save.
    let s = install(&sha256(b"another digest"));
    assert_eq!(s.code, 1, "{}", s.transcript());
    assert!(s.stderr.contains("not the recorded"), "{}", s.transcript());
    assert!(!installed.exists());
    assert!(!cached.exists());

    // No digest recorded: built, never taken from a cache nor saved to one; the summary gives
    // the digest.
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(&cached, good).unwrap();
    let before = calls().len();
    let s = install("");
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("built"), Some("true"));
    assert!(calls().len() > before, "{}", calls());
    assert!(!cached.exists(), "nothing to save without a digest");
    assert_eq!(s.output("sha256"), Some(sha256(good.as_bytes()).as_str()));
    assert!(s.summary.contains(&sha256(good.as_bytes())), "{}", s.summary);
}

/// A poisoned cache archive may hold more than guardctl, and may have been extracted into the
/// folder that goes on PATH: a `git` or `ssh-keygen` there would run with the signing key in
/// reach. After the install step that folder holds guardctl alone, and a cached guardctl that
/// is a symlink (to the recorded bytes, or to anything) is never followed.
#[test]
fn the_build_jobs_folder_holds_only_the_checked_guardctl() {
    let env = TestEnv::new();
    let stage = env.path().join("cache");
    let bin_dir = env.path().join("bin");
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::create_dir_all(&bin_dir).unwrap();
    for dir in [&stage, &bin_dir] {
        plant(dir, &["git", "ssh-keygen", "ssh-add"]);
    }
    std::fs::write(stage.join("guardctl"), good).unwrap();
    let install = || {
        step(
            &env,
            &env.repo,
            "alice",
            &[
                "install-cached",
                stage.to_str().unwrap(),
                bin_dir.to_str().unwrap(),
            ],
            &[
                ("VERSION", VERSION),
                ("SHA256", &sha256(good.as_bytes())),
                ("REPOSITORY", "file:///nowhere"),
            ],
            Some(&cargo),
        )
    };
    let s = install();
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("built"), Some("false"));
    assert_eq!(names_in(&bin_dir), ["guardctl"]);

    // A symlink with the recorded digest behind it: not followed, guardctl is built instead.
    let elsewhere = env.path().join("elsewhere");
    std::fs::write(&elsewhere, good).unwrap();
    std::fs::remove_file(stage.join("guardctl")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, stage.join("guardctl")).unwrap();
    let s = install();
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(s.output("built"), Some("true"));
    assert!(s.stderr.contains("not a regular file"), "{}", s.transcript());
    assert_eq!(names_in(&bin_dir), ["guardctl"]);
    assert!(!bin_dir.join("guardctl").is_symlink());
    // What the cache saves next is the build, one regular file.
    assert_eq!(names_in(&stage), ["guardctl"]);
    assert!(!stage.join("guardctl").is_symlink());
}

/// A job with the key takes guardctl from the build job's artifact (`install-from`) only as a
/// regular file with the recorded digest, alone in a folder emptied first; anything else
/// fails, with no fallback to what is there.
#[test]
fn a_job_with_the_key_takes_only_the_recorded_binary_from_the_artifact() {
    let env = TestEnv::new();
    let download = env.path().join("download");
    let bin_dir = env.path().join("bin");
    let good = "the reviewed build";
    std::fs::create_dir_all(&download).unwrap();
    std::fs::create_dir_all(&bin_dir).unwrap();
    for dir in [&download, &bin_dir] {
        plant(dir, &["git", "ssh-keygen"]);
    }
    let install_from = |sha: &str| {
        step(
            &env,
            &env.repo,
            "alice",
            &[
                "install-from",
                download.to_str().unwrap(),
                bin_dir.to_str().unwrap(),
            ],
            &[("VERSION", VERSION), ("SHA256", sha)],
            None,
        )
    };
    let recorded = sha256(good.as_bytes());

    std::fs::write(download.join("guardctl"), good).unwrap();
    let s = install_from(&recorded);
    assert_eq!(s.code, 0, "{}", s.transcript());
    assert_eq!(names_in(&bin_dir), ["guardctl"]);
    assert_eq!(std::fs::read_to_string(bin_dir.join("guardctl")).unwrap(), good);
    assert_eq!(s.output("sha256"), Some(recorded.as_str()));

    // Another binary, a symbolic link to the recorded bytes, no digest recorded: refused,
    // nothing left to run.
    std::fs::write(download.join("guardctl"), "another build").unwrap();
    let s = install_from(&recorded);
    assert_eq!(s.code, 1, "{}", s.transcript());
    assert!(
        s.stderr.contains("not a regular file with the recorded sha256"),
        "{}",
        s.transcript()
    );
    assert!(names_in(&bin_dir).is_empty());

    let elsewhere = env.path().join("elsewhere");
    std::fs::write(&elsewhere, good).unwrap();
    std::fs::remove_file(download.join("guardctl")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, download.join("guardctl")).unwrap();
    let s = install_from(&recorded);
    assert_eq!(s.code, 1, "{}", s.transcript());
    assert!(names_in(&bin_dir).is_empty());

    std::fs::remove_file(download.join("guardctl")).unwrap();
    std::fs::write(download.join("guardctl"), good).unwrap();
    let s = install_from("");
    assert_eq!(s.code, 1, "{}", s.transcript());
    assert!(names_in(&bin_dir).is_empty());
}

/// Only the build job restores a cache (actions/cache extracts its archive with absolute and
/// `../` paths allowed, so a seeded entry could write anywhere on its runner), and it holds no
/// key and no token: the action restores the cache only for `build`, which refuses a key; in
/// the example workflow the build job asks for no permission and no secret, and the jobs with
/// the key take the binary from its artifact. The GitLab example caches nothing.
#[test]
fn only_a_job_without_the_key_restores_a_cache() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    let action = read("action.yml");
    let steps: Vec<&str> = action.split("\n    - name: ").skip(1).collect();
    let cache_steps: Vec<&&str> = steps.iter().filter(|s| s.contains("actions/cache/")).collect();
    assert_eq!(cache_steps.len(), 2, "restore and save");
    for step in cache_steps {
        let condition = step.lines().find(|l| l.trim_start().starts_with("if:")).unwrap();
        assert!(condition.contains("inputs.command == 'build'"), "{step}");
    }
    let key_step = steps.iter().find(|s| s.starts_with("Signing key")).unwrap();
    assert!(key_step.contains("inputs.command != 'build'"), "{key_step}");

    let workflow = read("docs/ci/remote-branch-cleanup.yml");
    // Each job: from its `  name:` line to the next.
    let mut jobs: Vec<String> = Vec::new();
    for line in workflow.lines() {
        let header = line.starts_with("  ") && !line.starts_with("   ") && line.ends_with(':');
        match jobs.last_mut() {
            Some(job) if !header => *job += &format!("{line}\n"),
            _ if header => jobs.push(format!("{line}\n")),
            _ => {}
        }
    }
    let jobs: Vec<&str> = jobs
        .iter()
        .map(String::as_str)
        .filter(|j| j.contains("uses: guardctl/guardctl@"))
        .collect();
    let (build, others): (Vec<&str>, Vec<&str>) =
        jobs.into_iter().partition(|j| j.contains("command: build"));
    assert_eq!(build.len(), 1, "one build job");
    assert!(build[0].contains("permissions: {}"), "{}", build[0]);
    assert!(
        !build[0].contains("key:") && !build[0].contains("secrets."),
        "{}",
        build[0]
    );
    assert!(!others.is_empty());
    for job in others {
        if job.contains("key:") {
            assert!(
                job.contains("needs: build") && job.contains("artifact: guardctl"),
                "{job}"
            );
        }
    }

    let gitlab = read("docs/ci/gitlab/remote-branch-cleanup.gitlab-ci.yml");
    assert!(
        !gitlab
            .lines()
            .any(|l| !l.trim_start().starts_with('#') && l.trim_start().starts_with("cache:")),
        "the GitLab example caches"
    );
}

/// The before_script of the GitLab example, as a shell script: the `- |` block under
/// `before_script:` in the `.guardctl` template.
fn gitlab_before_script() -> String {
    let yml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/ci/gitlab/remote-branch-cleanup.gitlab-ci.yml"
    ))
    .unwrap();
    let (_, rest) = yml.split_once("  before_script:\n    - |\n").unwrap();
    rest.lines()
        .take_while(|l| l.is_empty() || l.starts_with("      "))
        .map(|l| format!("{}\n", l.strip_prefix("      ").unwrap_or("")))
        .collect()
}

/// The GitLab example's install, run for real in a clone (a fake cargo builds): PATH gets a
/// fresh folder holding the build alone, whatever the build directory holds (a planted `git`
/// in the folders an earlier version cached and put on PATH); a build without the recorded
/// digest fails.
#[test]
fn the_gitlab_job_puts_only_the_build_on_path() {
    let env = crate::fixtures::remote_repo();
    let [job] = <[PathBuf; 1]>::try_from(env.clones(&["gitlab-job"])).unwrap();
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    let calls = || std::fs::read_to_string(cargo.join("calls")).unwrap_or_default();
    let before = gitlab_before_script();
    // The digest is a literal in the script (a variable could be overridden): the test writes
    // each one it tries there, as a maintainer would record it.
    assert!(before.contains("\nGUARDCTL_SHA256=\n"), "{before}");
    let script = |sha: &str| {
        format!(
            "set -e\n{}\nprintf '%s\\n' \"$(command -v git)\" \"$(command -v ssh-keygen)\" \"$(command -v guardctl)\" \"$(cat \"$(command -v guardctl)\")\"\n",
            before.replace("\nGUARDCTL_SHA256=\n", &format!("\nGUARDCTL_SHA256={sha}\n"))
        )
    };
    for dir in [".guardctl-cache", ".guardctl-bin"] {
        let d = job.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        plant(&d, &["git", "ssh-keygen", "guardctl"]);
    }
    let run = |sha: &str| {
        let home = tempfile::tempdir_in(env.path()).unwrap();
        let system = std::env::var("PATH").unwrap_or_default();
        let out = Command::new("bash")
            .arg("-c")
            .arg(script(sha))
            .current_dir(&job)
            .env_clear()
            .env("PATH", format!("{}:{system}", cargo.display()))
            .env("HOME", home.path())
            .env("GIT_CONFIG_GLOBAL", home.path().join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // Overrides a pipeline could pass: the literals win.
            .env("GUARDCTL_VERSION", "main")
            .env("GUARDCTL_SHA256", "")
            .env("GUARDCTL_CI_KEY", env.key("alice"))
            .env("GUARDCTL_PUSH_TOKEN", "not-a-token")
            .env("CI_SERVER_URL", "https://gitlab.example")
            .env("CI_PROJECT_PATH", "team/repo")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let transcript = format!(
            "exit {:?}\n--- stdout\n{stdout}--- stderr\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), stdout, transcript)
    };

    let (ok, stdout, transcript) = run(&sha256(good.as_bytes()));
    assert!(ok, "{transcript}");
    let lines: Vec<&str> = stdout.lines().rev().take(4).collect();
    // git, ssh-keygen, guardctl's path, guardctl's bytes (the last four lines).
    let (git, keygen, guardctl, bytes) = (lines[3], lines[2], lines[1], lines[0]);
    assert!(!git.is_empty() && !git.contains(".guardctl"), "{transcript}");
    assert!(!keygen.contains(".guardctl"), "{transcript}");
    assert!(!guardctl.contains(&job.display().to_string()), "{transcript}");
    assert_eq!(bytes, good, "{transcript}");
    assert_eq!(
        names_in(Path::new(guardctl).parent().unwrap()),
        ["guardctl"],
        "{transcript}"
    );
    assert!(calls().contains(&format!("--rev {VERSION} ")), "{}", calls());

    let (ok, _, transcript) = run(&sha256(b"another digest"));
    assert!(!ok, "{transcript}");
    assert!(transcript.contains("not the recorded"), "{transcript}");
}

/// The key step writes a new file only the runner's user reads, whatever was at its name: a
/// symbolic link planted there (to a file others read) is replaced, never written through.
#[test]
fn the_key_step_never_writes_through_what_is_at_its_name() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let temp = env.path().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let elsewhere = env.path().join("world-readable");
    std::fs::write(&elsewhere, "").unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, temp.join("guardctl_key")).unwrap();
    let out = Command::new("bash")
        .arg(SCRIPT)
        .arg("key")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_ENV", env.path().join("github-env"))
        .env("KEY", "-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    let key = temp.join("guardctl_key");
    let meta = std::fs::symlink_metadata(&key).unwrap();
    assert!(meta.is_file(), "{meta:?}");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&key).unwrap().contains("test"));
    let github_env = std::fs::read_to_string(env.path().join("github-env")).unwrap();
    assert_eq!(github_env, format!("GUARDCTL_KEY={}\n", key.display()));
}

/// Round 5. `check` saw only its own step's key: two steps of the action in one job, `build`
/// then `plan` with the key (or the key first, then `build`), both passed, so a poisoned cache
/// restore and the key shared a runner. The build step leaves a mark the key and plan steps
/// refuse, and refuses a key already written.
#[test]
fn build_and_the_key_never_share_a_job_in_either_order() {
    let env = TestEnv::new();
    let temp = env.path().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let run = |vars: &[(&str, &str)], args: &[&str]| {
        let mut c = Command::new("bash");
        c.arg(SCRIPT)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUNNER_TEMP", &temp)
            .env("GITHUB_ENV", env.path().join("github-env"));
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let build = [("VERSION", VERSION), ("COMMAND", "build"), ("HAS_KEY", "false")];
    let plan = [
        ("VERSION", VERSION),
        ("COMMAND", "plan"),
        ("PLAN_ARGS", "remote-branches --merged"),
        ("HAS_KEY", "true"),
    ];

    // build, then plan with the key in the same job: refused at plan's check and at the key.
    assert_eq!(run(&build, &["check"]).0, 0);
    let (code, err) = run(&plan, &["check"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("this job ran command build"), "{err}");
    let (code, err) = run(&[("KEY", "secret")], &["key"]);
    assert_eq!(code, 1, "{err}");
    assert!(!temp.join("guardctl_key").exists());

    // The key first, then build: refused at build's check.
    std::fs::remove_dir_all(&temp).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    assert_eq!(run(&plan, &["check"]).0, 0);
    assert_eq!(run(&[("KEY", "secret")], &["key"]).0, 0);
    let (code, err) = run(&build, &["check"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("without the key"), "{err}");
}

/// Round 5. The build job's condition compared the branch with the event's default branch
/// before looking at the event: a schedule's event carries no repository, so the build job,
/// and the plan job that needs it, never ran on the schedule. Both let a schedule through
/// first.
#[test]
fn the_scheduled_run_reaches_the_build_and_plan_jobs() {
    let workflow = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci/remote-branch-cleanup.yml"),
    )
    .unwrap();
    for job in ["build", "plan"] {
        let (_, rest) = workflow.split_once(&format!("\n  {job}:\n")).unwrap();
        let (_, condition) = rest.split_once("if: >-\n").unwrap();
        assert!(
            condition
                .trim_start()
                .starts_with("github.event_name == 'schedule' ||"),
            "{job}: {condition}"
        );
    }
}
