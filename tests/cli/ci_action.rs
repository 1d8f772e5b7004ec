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
        s.summary.starts_with(&format!("## guardctl plan {short}")),
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
        s.summary.starts_with(&format!("## guardctl plan {short}")),
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
            "install, plan or apply",
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

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The cache holds a binary anyone able to write the cache could have put there: it runs
/// only if it has the recorded digest; otherwise guardctl is built from the pinned commit,
/// and a build that does not have the recorded digest fails without leaving a binary. The
/// cache is restored into a staging folder; the folder on PATH holds the checked copy alone.
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
            &["install", stage.to_str().unwrap(), bin_dir.to_str().unwrap()],
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
fn the_folder_put_on_path_holds_only_the_checked_guardctl() {
    let env = TestEnv::new();
    let stage = env.path().join("cache");
    let bin_dir = env.path().join("bin");
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::create_dir_all(&bin_dir).unwrap();
    for dir in [&stage, &bin_dir] {
        for tool in ["git", "ssh-keygen", "ssh-add"] {
            write_exec(&dir.join(tool), "#!/bin/sh\necho planted\n");
        }
    }
    std::fs::write(stage.join("guardctl"), good).unwrap();
    let install = || {
        step(
            &env,
            &env.repo,
            "alice",
            &["install", stage.to_str().unwrap(), bin_dir.to_str().unwrap()],
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

/// The GitLab example's install, run for real in a clone (a fake cargo builds): what its
/// cache restored (a planted `git` beside guardctl) never resolves on PATH; the cache is read only when a digest
/// is recorded and only a regular file; a build is left for the cache only with a digest.
#[test]
fn the_gitlab_job_puts_only_a_checked_guardctl_on_path() {
    let env = crate::fixtures::remote_repo();
    let [job] = <[PathBuf; 1]>::try_from(env.clones(&["gitlab-job"])).unwrap();
    let good = "the reviewed build";
    let cargo = fake_cargo(&env, good);
    let calls = || std::fs::read_to_string(cargo.join("calls")).unwrap_or_default();
    let script = format!(
        "set -e\n{}\nprintf '%s\\n' \"$(command -v git)\" \"$(command -v ssh-keygen)\" \"$(command -v guardctl)\" \"$(cat \"$(command -v guardctl)\")\"\n",
        gitlab_before_script()
    );
    let plant = || {
        let d = job.join(".guardctl-cache");
        std::fs::create_dir_all(&d).unwrap();
        for tool in ["git", "ssh-keygen"] {
            write_exec(&d.join(tool), "#!/bin/sh\necho planted\n");
        }
    };
    let run = |sha: &str| {
        let home = tempfile::tempdir_in(env.path()).unwrap();
        let system = std::env::var("PATH").unwrap_or_default();
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&job)
            .env_clear()
            .env("PATH", format!("{}:{system}", cargo.display()))
            .env("HOME", home.path())
            .env("GIT_CONFIG_GLOBAL", home.path().join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GUARDCTL_VERSION", VERSION)
            .env("GUARDCTL_SHA256", sha)
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
        assert!(out.status.success(), "{transcript}");
        let lines: Vec<String> = stdout.lines().rev().take(4).map(str::to_string).collect();
        // git, ssh-keygen, guardctl's path, guardctl's bytes (the last four lines).
        let (git, keygen, guardctl, bytes) = (&lines[3], &lines[2], &lines[1], &lines[0]);
        assert!(!git.contains(".guardctl") && !git.is_empty(), "{transcript}");
        assert!(!keygen.contains(".guardctl"), "{transcript}");
        assert!(!guardctl.contains(&job.display().to_string()), "{transcript}");
        assert_eq!(bytes, good, "{transcript}");
        assert_eq!(
            names_in(Path::new(guardctl).parent().unwrap()),
            ["guardctl"],
            "{transcript}"
        );
    };
    let recorded = sha256(good.as_bytes());

    // The recorded binary in the cache, planted tools beside it: used, nothing built.
    plant();
    std::fs::write(job.join(".guardctl-cache/guardctl"), good).unwrap();
    run(&recorded);
    assert_eq!(calls(), "");
    assert_eq!(names_in(&job.join(".guardctl-cache")), ["guardctl"]);

    // A symlink to the recorded bytes: not followed, built instead.
    plant();
    let elsewhere = env.path().join("elsewhere");
    std::fs::write(&elsewhere, good).unwrap();
    let _ = std::fs::remove_file(job.join(".guardctl-cache/guardctl"));
    std::os::unix::fs::symlink(&elsewhere, job.join(".guardctl-cache/guardctl")).unwrap();
    run(&recorded);
    assert!(calls().contains(&format!("--rev {VERSION} ")), "{}", calls());
    assert!(!job.join(".guardctl-cache/guardctl").is_symlink());

    // No digest recorded: the cache is not read (built again) and nothing is left to save.
    plant();
    std::fs::write(job.join(".guardctl-cache/guardctl"), good).unwrap();
    let before = calls().len();
    run("");
    assert!(calls().len() > before, "{}", calls());
    assert!(!job.join(".guardctl-cache").exists());
}
