//! A remote plan's repository compared by meaning (issue 15): a plan bound to the remote's
//! path applies in a clone that spells it `file://…/` without `.git`; a relative remote URL
//! works as git resolves it; ssh never prompts (BatchMode=yes).

use crate::fixtures::{TestEnv, remote_repo};
use std::os::unix::fs::PermissionsExt;

/// A clone of `origin` at `name` whose remote URL is then spelled `url`.
fn clone_spelled(env: &TestEnv, name: &str, url: &str) -> String {
    let path = env.path().join(name);
    let origin = env.origin();
    env.git_in(
        env.path(),
        &["clone", "-q", origin.to_str().unwrap(), path.to_str().unwrap()],
    );
    env.git_in(&path, &["remote", "set-url", "origin", url]);
    path.to_str().unwrap().to_string()
}

#[test]
fn a_plan_bound_to_the_remotes_path_applies_in_a_clone_that_spells_it_as_a_file_url() {
    let env = remote_repo();
    let origin = env.origin().display().to_string();
    let planner = clone_spelled(&env, "plan-job", &origin);
    let other = format!("file://{}/", origin.trim_end_matches(".git"));
    let applier = clone_spelled(&env, "apply-job", &other);
    let plan = env.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let r = env.run(
        "alice",
        &[
            "-C",
            &planner,
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "-o",
            plan,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        env.run("bob", &["-C", &applier, "approve", plan, "--yes"]).code,
        0
    );
    let r = env.run("alice", &["-C", &applier, "apply", plan]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let left: Vec<String> = env
        .remote_branches()
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(
        left,
        [
            "refs/heads/feature/live",
            "refs/heads/main",
            "refs/heads/release/1.0"
        ]
    );

    // Another repository is still another repository.
    let fork = env.path().join("fork.git");
    env.git_in(
        env.path(),
        &["clone", "-q", "--bare", &origin, fork.to_str().unwrap()],
    );
    let stranger = clone_spelled(&env, "stranger", fork.to_str().unwrap());
    let r = env.run("alice", &["-C", &stranger, "verify", plan]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("plan for another repository"), "{}", r.stderr);
}

#[test]
fn a_relative_remote_url_is_resolved_as_git_resolves_it() {
    let env = remote_repo();
    // origin.git sits next to the work tree: `../origin.git` from its top.
    env.git(&["remote", "set-url", "origin", "../origin.git"]);
    let r = env.run(
        "alice",
        &["--json", "plan", "remote-branches", "--remote", "origin"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["repository"], env.origin().display().to_string());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn ssh_remotes_are_reached_in_batch_mode_and_the_failure_is_one_readable_line() {
    let env = remote_repo();
    // A stand-in `ssh` that records how git ran it, then fails like an unreachable host.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path().join("ssh-args");
    let ssh = bin.join("ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\necho 'ssh: connect to host example.invalid: refused' >&2\necho 'second line' >&2\nexit 255\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.git(&["remote", "set-url", "origin", "git@example.invalid:org/repo.git"]);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let r = env.run_env(
        "alice",
        &[("PATH", path.as_str())],
        &["plan", "remote-branches", "--remote", "origin"],
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(args.contains("BatchMode=yes"), "ssh ran as: {args}");
    assert!(!r.stderr.contains("\\n"), "no literal \\n: {}", r.stderr);
    assert!(r.stderr.contains("refused; second line"), "{}", r.stderr);
}

/// Remote URLs a hostile clone configures (issue 16's review).
mod hostile_urls {
    use crate::fixtures::{TestEnv, publish, remote_repo, team_remote};
    use std::path::PathBuf;

    const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n";

    /// The policy committed on the remote's default branch, dave (the mallory test key) trusted
    /// as the executor, and a clone for alice (planner), bob, carol and dave.
    fn team() -> (TestEnv, [PathBuf; 4]) {
        let env = team_remote(POLICY);
        let clones = env.clones(&["planner", "bob", "carol", "executor"]);
        (env, <[PathBuf; 4]>::try_from(clones).unwrap())
    }

    #[test]
    fn a_url_rewrite_in_a_file_the_repositorys_config_includes_is_refused_like_one_in_the_config() {
        let (env, [planner, _bob, _carol, executor]) = team();
        let id = publish(&env, &planner, "plan.json", &[]);
        // Whoever can write the executor's clone moves an insteadOf rule into an included file:
        // `git config --local` follows no includes, `git remote get-url` does. The executor
        // would then read published plans and rejections from a repository without them.
        let empty = env.path().join("empty.git");
        env.git_in(env.path(), &["init", "-q", "--bare", empty.to_str().unwrap()]);
        let included = env.path().join("included.cfg");
        std::fs::write(
            &included,
            format!(
                "[url \"file://{}\"]\n\tinsteadOf = file://{}\n",
                empty.display(),
                env.origin().display()
            ),
        )
        .unwrap();
        env.git_in(&executor, &["config", "include.path", included.to_str().unwrap()]);
        for args in [vec!["verify", &id[..12]], vec!["inbox"]] {
            let r = env.run_in(&executor, "mallory", &args);
            assert_eq!(r.code, 14, "{args:?}: {}", r.transcript());
            assert!(r.stderr.contains("insteadOf"), "{}", r.stderr);
        }
    }

    #[test]
    fn a_remote_url_naming_a_program_transport_runs_nothing_even_where_the_clone_allows_it() {
        let env = remote_repo();
        let ran = env.path().join("ran");
        // The clone's own config allows `ext::` and origin's URL is a command: reading the
        // policy from the remote's default branch must not run it.
        env.git(&["config", "protocol.ext.allow", "always"]);
        env.git(&[
            "remote",
            "set-url",
            "origin",
            &format!("ext::sh -c touch% {}", ran.display()),
        ]);
        let out = env.path().join("plan.json");
        let r = env.run("alice", &["plan", "stale-branches", "-o", out.to_str().unwrap()]);
        assert!(!ran.exists(), "the ext:: URL ran its command: {}", r.transcript());
        assert_eq!(r.code, 64, "{}", r.transcript());
        let r = env.run("alice", &["whoami"]);
        assert!(!ran.exists(), "{}", r.transcript());
    }
}

/// Issue 33, attack round 2, finding 5. A remote URL with a secret in its user part (GitLab
/// CI clones with `https://gitlab-ci-token:<token>@…`; hosts take a token as the user name)
/// was recorded in the plan, published with it and shown in the Markdown and in errors. It
/// is refused (64) before anything is planned, and the error names the remote without the
/// secret; an ssh user name is not a secret and still works.
#[test]
fn a_remote_url_carrying_credentials_is_refused_and_never_repeated() {
    for url in [
        "https://gitlab-ci-token:s3cr3t-t0ken@gitlab.example/g/r.git",
        "https://s3cr3t-t0ken@github.example/org/repo.git",
        "http://user:s3cr3t-t0ken@127.0.0.1:9/r.git",
        // Round 3: git's `<transport>::<address>` form, the address carrying the secret.
        "http::http://s3cr3t-t0ken@127.0.0.1:9/r.git",
    ] {
        let env = remote_repo();
        env.git(&["remote", "set-url", "origin", url]);
        for args in [
            &[
                "plan",
                "remote-branches",
                "--remote",
                "origin",
                "--merged",
                "-o",
                "r.json",
            ][..],
            &["plan", "stale-branches", "--merged", "-o", "l.json"],
        ] {
            let r = env.run("alice", args);
            assert_eq!(r.code, 64, "{url} {args:?}: {}", r.transcript());
            assert!(r.stderr.contains("carries credentials"), "{}", r.transcript());
            assert!(r.stderr.contains("***@"), "{}", r.transcript());
            assert!(
                !r.stderr.contains("s3cr3t") && !r.stdout.contains("s3cr3t"),
                "{}",
                r.transcript()
            );
            assert!(r.stderr.contains("credential helper"), "{}", r.transcript());
        }
        assert!(!env.repo.join("r.json").exists() && !env.repo.join("l.json").exists());
    }
}
