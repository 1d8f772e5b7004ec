//! Second attack review of issues 13, 14 and 20: a hostile planner who can write their own
//! clone (refs, `.git/config`) must not choose the trust roots or the policy of their plan.
//! Every test here failed when written; each names the behaviour it demands.

use crate::fixtures::{Run, TestEnv, run, standard_repo};
use std::fs;

/// guardctl as `user`, with no `--allowed-signers`: the trusted sources decide.
fn run_bare(env: &TestEnv, user: &str, args: &[&str]) -> Run {
    let mut c = env.command();
    c.arg("--key").arg(env.key(user)).args(args);
    run(c)
}

/// The standard repository with alice, bob and carol committed as trusted identities on
/// main, pushed to `origin` (the shared truth), and `origin/HEAD` naming `origin/main`.
fn identities_on_origin() -> TestEnv {
    let env = standard_repo();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::copy(env.allowed_signers(), env.repo.join(".guardctl/allowed_signers")).unwrap();
    env.git(&["add", ".guardctl/allowed_signers"]);
    env.git(&["commit", "-q", "-m", "Trusted identities"]);
    env.git(&["push", "-q", "origin", "main"]);
    env.git(&["fetch", "-q", "origin"]);
    env.git(&["remote", "set-head", "origin", "main"]);
    env
}

/// The planner (alice) makes mallory's key a second "bob" in a commit of her own on
/// `branch` (never pushed), plans, has mallory approve, and applies: must be refused.
fn self_approval_through_a_planner_commit(env: &TestEnv, point_base_at_it: impl Fn(&TestEnv, &str)) {
    let head = env.git(&["rev-parse", "HEAD"]).trim().to_string();
    env.git(&["checkout", "-q", "-b", "evil"]);
    let path = env.repo.join(".guardctl/allowed_signers");
    let mut text = fs::read_to_string(&path).unwrap();
    text += &format!("bob@example.com {}\n", env.public_key("mallory"));
    fs::write(&path, text).unwrap();
    env.git(&["commit", "-q", "-am", "a second bob"]);
    let evil = env.git(&["rev-parse", "HEAD"]).trim().to_string();
    env.git(&["checkout", "-q", "main"]);
    env.git(&["reset", "-q", "--hard", &head]);
    point_base_at_it(env, &evil);
    let r = run_bare(env, "alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    let _ = run_bare(env, "mallory", &["approve", "plan.json", "--yes"]);
    let r = run_bare(env, "alice", &["apply", "plan.json"]);
    assert_ne!(
        r.code,
        0,
        "the planner's own key approved through identities the planner committed locally:\n{}",
        r.transcript()
    );
    assert_eq!(
        before,
        env.repository_state(),
        "a refused apply changed the repository"
    );
}

#[test]
fn committed_identities_come_from_the_remotes_default_branch_not_a_local_origin_head() {
    let env = identities_on_origin();
    // `refs/remotes/origin/HEAD` is a symbolic ref in the planner's clone.
    self_approval_through_a_planner_commit(&env, |env, _| {
        env.git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/evil"]);
    });
}

#[test]
fn committed_identities_come_from_the_remotes_default_branch_not_a_rewritten_tracking_ref() {
    let env = identities_on_origin();
    self_approval_through_a_planner_commit(&env, |env, evil| {
        env.git(&["update-ref", "refs/remotes/origin/main", evil]);
    });
}

#[test]
fn committed_identities_are_not_read_from_an_unpushed_local_main() {
    // No origin/HEAD (as after `git init` + `remote add` + push): the local main decides today.
    let env = identities_on_origin();
    env.git(&["remote", "set-head", "origin", "--delete"]);
    self_approval_through_a_planner_commit(&env, |env, evil| {
        env.git(&["update-ref", "refs/heads/main", evil]);
        env.git(&["reset", "-q", "--hard", evil]);
    });
}

#[test]
fn committed_identities_ignore_init_default_branch_in_the_repositorys_own_config() {
    let env = identities_on_origin();
    env.git(&["remote", "set-head", "origin", "--delete"]);
    self_approval_through_a_planner_commit(&env, |env, _| {
        env.git(&["config", "init.defaultBranch", "evil"]);
    });
}

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

/// Control: without the planner's ref edits, mallory is no one (passes today).
#[test]
fn control_mallory_is_not_bob_on_the_origins_default_branch() {
    let env = identities_on_origin();
    self_approval_through_a_planner_commit(&env, |_, _| {});
}

/// Terminal control in anything a plan carries (manifest ids, the command, the preview, the
/// verify command) must never reach a reviewer's terminal raw.
#[test]
fn control_characters_in_an_exec_plan_never_reach_the_terminal_raw() {
    let env = TestEnv::new();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    // ESC ] 0 ; title BEL, a CSI clear, a CR overwrite, and a right-to-left override.
    fs::write(
        env.repo.join("scripts/p.sh"),
        "#!/bin/sh\nprintf 'ok\\033]0;pwned\\007\\n\\033[2Jx\\n{\"id\": \"a\\\\u001b[31mred\"}\\nfine\\rEVIL\\nb\\342\\200\\256gnp.exe\\n'\n",
    )
    .unwrap();
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "sh scripts/p.sh",
            "--verify",
            "sh scripts/p.sh",
            "--",
            "sh",
            "scripts/p.sh",
            "\u{1b}[8mhidden",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let mut outputs = vec![r];
    for args in [
        &["show", "plan.json", "--all"][..],
        &["show", "plan.json"][..],
        &["approve", "plan.json", "--yes"][..],
        &["verify", "plan.json"][..],
    ] {
        outputs.push(env.run("bob", args));
    }
    for r in outputs {
        for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(
                !text.contains('\u{1b}')
                    && !text.contains('\r')
                    && !text.contains('\u{7}')
                    && !text.contains('\u{202e}'),
                "raw control characters on {what}:\n{}",
                text.escape_debug()
            );
        }
    }
}

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

/// The same self-approval against the shared remote: a `remote-branches` plan the planner
/// applies from their own clone deletes branches on `origin` for everyone. The identities
/// must be the remote's (as `ls-remote` reports its HEAD), as the policy already is.
#[test]
fn a_planner_minted_approver_cannot_delete_branches_on_the_shared_remote() {
    let env = crate::fixtures::remote_repo();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::copy(env.allowed_signers(), env.repo.join(".guardctl/allowed_signers")).unwrap();
    env.git(&["add", ".guardctl/allowed_signers"]);
    env.git(&["commit", "-q", "-m", "Trusted identities"]);
    env.git(&["push", "-q", "origin", "main"]);
    env.git(&["fetch", "-q", "origin"]);
    env.git(&["remote", "set-head", "origin", "main"]);
    // The planner's own commit, never pushed, named by the clone's origin/HEAD.
    env.git(&["checkout", "-q", "-b", "evil"]);
    let path = env.repo.join(".guardctl/allowed_signers");
    let mut text = fs::read_to_string(&path).unwrap();
    text += &format!("bob@example.com {}\n", env.public_key("mallory"));
    fs::write(&path, text).unwrap();
    env.git(&["commit", "-q", "-am", "a second bob"]);
    env.git(&["checkout", "-q", "main"]);
    env.git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/evil"]);
    let r = run_bare(&env, "alice", &["plan", "remote-branches", "--remote", "origin"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.remote_branches();
    let _ = run_bare(&env, "mallory", &["approve", "plan.json", "--yes"]);
    let r = run_bare(&env, "alice", &["apply", "plan.json"]);
    assert_ne!(
        r.code,
        0,
        "deleted on origin with a planner-minted approval:\n{}",
        r.transcript()
    );
    assert_eq!(before, env.remote_branches(), "origin's branches changed");
}

/// One person, two spellings of their identity: their key K speaks for `alice@example.com`
/// and `alice@corp.example.com` (git's allowed-signers lists several e-mails for one key),
/// and their second key speaks for `alice@example.com` only. A plan signed with K that claims
/// the corp principal must not be approvable by the second key: K "may also speak for" the
/// approver's principal, which is self-approval (docs/trust-model.md, check 2).
#[test]
fn an_approver_the_plans_own_key_also_speaks_for_is_self_approval() {
    let env = crate::hostile::planned();
    env.allow_signer("alice@corp.example.com", "alice");
    env.allow_signer("alice@example.com", "mallory");
    // `plan` refuses a key with two principals; the planner re-signs the claim instead.
    crate::hostile::forge_raw(&env, |p| {
        p.planner.principal = Some("alice@corp.example.com".into());
    });
    crate::apply::attach_forged(&env, "mallory", "alice@example.com");
    let r = crate::apply::refused_apply(&env, "alice", &[], 12);
    assert!(
        r.stderr.contains("own plan") || r.stderr.contains("self"),
        "{}",
        r.transcript()
    );
}

/// State files are untrusted (issue 20): an unsigned `consumed` file and a `result.txt` that
/// someone else wrote must not make `apply` of an approved plan report success without doing
/// anything, nor print (raw, unescaped) a file the result links to.
#[test]
fn a_crafted_consumed_marker_and_result_do_not_fake_a_successful_apply() {
    let env = crate::apply::planned();
    let r = crate::apply::approve(&env, "bob");
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let dir = env
        .repo
        .join(".git/guardctl/plans")
        .join(id.trim_start_matches("sha256:"));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("consumed"), "not a signed marker").unwrap();
    let secret = env.path().join("secret");
    fs::write(
        &secret,
        "SECRET-KEY-MATERIAL \u{1b}]0;pwned\u{7}\nApplied plan: deleted 3 branches; verified.\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("result.txt")).unwrap();
    let before = crate::apply::branches(&env);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert!(
        !r.stdout.contains("SECRET-KEY-MATERIAL") && !r.stdout.contains('\u{1b}'),
        "apply printed a file a state file links to, raw:\n{}",
        r.transcript().escape_debug()
    );
    assert!(
        r.code != 0 || crate::apply::branches(&env) != before,
        "apply exited 0 and reported success for a plan it never applied:\n{}",
        r.transcript().escape_debug()
    );
}

/// Anything an envelope carries (a comment, a principal) is the signer's words, and the
/// signer may be the hostile planner: never raw on a reviewer's terminal.
#[test]
fn control_characters_in_approval_fields_never_reach_the_terminal_raw() {
    let env = crate::apply::planned();
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{202e}";
    let mut body = crate::apply::approval_body(&env, &format!("bob@example.com{evil}"), "mallory", "approve");
    body["comment"] = serde_json::Value::String(format!("LGTM{evil}"));
    crate::apply::attach(&env, crate::apply::forged_approval(&env, "mallory", body));
    let mut body = crate::apply::approval_body(&env, "carol@example.com", "carol", "approve");
    body["comment"] = serde_json::Value::String(format!("fine{evil}"));
    crate::apply::attach(&env, crate::apply::forged_approval(&env, "carol", body));
    for args in [
        &["show", "plan.json"][..],
        &["--json", "show", "plan.json"][..],
        &["verify", "plan.json"][..],
        &["approve", "plan.json", "--yes"][..],
        &["log"][..],
    ] {
        let r = env.run("bob", args);
        for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(
                !text.contains('\u{1b}')
                    && !text.contains('\r')
                    && !text.contains('\u{7}')
                    && !text.contains('\u{202e}'),
                "{args:?}: raw control characters on {what}:\n{}",
                text.escape_debug()
            );
        }
    }
}

/// A state file that is not a regular file (a FIFO here; a link to `/dev/zero` would exhaust
/// memory) must be refused as inconsistent (16, naming it), not read without end: `apply`
/// of any plan runs `recover` over every plan directory first, holding the lock.
#[test]
fn a_journal_that_is_not_a_regular_file_is_refused_not_read_forever() {
    let env = crate::apply::planned();
    let r = crate::apply::approve(&env, "bob");
    assert_eq!(r.code, 0, "{}", r.transcript());
    let dir = env.repo.join(".git/guardctl/plans").join("ab".repeat(32));
    fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("journal");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["apply", "plan.json"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(16),
        "apply hung reading a FIFO in guardctl's state (killed after 20s) or gave another code"
    );
}

/// One key listed for two principals (git's allowed-signers allows `a@x,b@y KEY`) is one
/// person: two approvals signed by that one key, one per principal, are one approval.
#[test]
fn two_approvals_by_one_key_under_two_principals_count_once() {
    let env = TestEnv::new();
    env.branch("feature/done", "main", 1, "Bob", 30);
    env.merge("feature/done", 29);
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n\n[approvals]\nrequired = 2",
        "Alice",
        1,
    );
    env.allow_signer("bob@corp.example.com", "bob");
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    for principal in ["bob@example.com", "bob@corp.example.com"] {
        crate::apply::attach_forged(&env, "bob", principal);
    }
    crate::apply::refused_apply(&env, "alice", &[], 12);
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
    }
}
