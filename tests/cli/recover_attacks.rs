//! Attacks on how a guardctl killed while changing the repository is cleaned up after
//! (issue 35; found by a helper attacking the change as a hostile teammate, a racing git and a
//! confused user): the lock files its git left are removed, but never one outside the refs
//! directory (a symlinked refs directory, a crafted `mutating` marker), never the live lock of
//! a git `/proc` shows working in the repository from elsewhere (another worktree, `--git-dir`,
//! recover run from a linked worktree, another user's git); and a journal cut back after a
//! rollback never makes recover apply the plan again.

use crate::fixtures::{TestEnv, run, standard_repo};
use crate::recover::{alice, planned_and_approved, wait_for_orphaned_git};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

pub(crate) fn backdate(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

/// A teammate who can write `.git` plants a symlink in the refs directory and a backdated
/// `mutating` marker (which says a guardctl died holding the lock): the next person's
/// guardctl removes stale locks under `refs/`, but never follows the link to delete a file
/// outside the repository (here a project's `Cargo.lock`).
#[test]
fn recover_never_removes_a_lock_outside_the_refs_dir_through_a_symlink() {
    let env = standard_repo();
    let victim = env.path().join("victim-project");
    std::fs::create_dir_all(&victim).unwrap();
    let precious = victim.join("Cargo.lock");
    std::fs::write(&precious, "# precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, env.repo.join(".git/refs/heads/evil")).unwrap();
    let state = env.repo.join(".git/guardctl");
    std::fs::create_dir_all(&state).unwrap();
    let marker = state.join("mutating");
    std::fs::write(&marker, "999999999").unwrap();
    backdate(&marker, 3600);
    let r = run(alice(&env, None, &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        precious.exists(),
        "recover deleted {} (outside the repository) through the symlink .git/refs/heads/evil:\n{}",
        precious.display(),
        r.transcript()
    );
}

/// A git that holds a ref transaction open (`prepare`d, not committed) with `cwd` as its
/// working directory and `args` before `update-ref`, locking what `commands` name.
pub(crate) fn live_git(env: &TestEnv, cwd: &Path, args: &[&str], commands: &str) -> Child {
    let mut c = Command::new("git");
    c.current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(args)
        .args(["update-ref", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("start\n{commands}prepare\n").as_bytes())
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the live git did not prepare"
        );
        if line.trim_end() == "prepare: ok" {
            break;
        }
    }
    // Keep stdin open (the transaction stays prepared) by leaking it into the child handle.
    child.stdin = Some(stdin);
    child
}

pub(crate) fn end_live_git(mut child: Child) {
    drop(child.stdin.take());
    let _ = child.wait();
}

/// An apply killed after it consumed the plan (its git aborted), then a git deleting an
/// unrelated, packed branch: that git holds `packed-refs.lock`, live. Returns the env and the
/// lock.
fn killed_apply_then_packed_refs_deletion_prepared() -> (TestEnv, std::path::PathBuf) {
    let (env, _) = planned_and_approved();
    let r = run(alice(&env, Some("consumed"), &["apply", "plan.json"]));
    assert_eq!(r.code, -1, "not killed: {}", r.transcript());
    wait_for_orphaned_git(&env);
    env.git(&["branch", "-q", "unrelated", "main"]);
    env.git(&["pack-refs", "--all"]);
    let lock = env.repo.join(".git/packed-refs.lock");
    (env, lock)
}

/// A git working in another linked worktree of the repository takes the same ref locks (refs
/// and packed-refs live in the common dir), but its working directory is neither this work
/// tree nor the git dir: recover must still leave its live lock alone.
#[test]
fn recover_never_removes_the_live_lock_of_a_git_in_another_worktree() {
    let (env, lock) = killed_apply_then_packed_refs_deletion_prepared();
    let wt = env.path().join("attack-wt");
    env.git(&["worktree", "add", "-q", "--detach", wt.to_str().unwrap(), "main"]);
    let oid = env.git(&["rev-parse", "unrelated"]);
    let git = live_git(&env, &wt, &[], &format!("delete refs/heads/unrelated {oid}\n"));
    assert!(lock.exists(), "the live git holds packed-refs.lock");
    let r = run(alice(&env, None, &["recover"]));
    let kept = lock.exists();
    end_live_git(git);
    assert!(
        kept,
        "recover removed the live packed-refs.lock of a git in another worktree:\n{}",
        r.transcript()
    );
}

/// A git run as `git --git-dir=<repo>/.git` (a script, a CI step, an IDE) works from anywhere:
/// recover must still leave its live lock alone.
#[test]
fn recover_never_removes_the_live_lock_of_a_git_run_with_git_dir_from_elsewhere() {
    let (env, lock) = killed_apply_then_packed_refs_deletion_prepared();
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let git_dir = format!("--git-dir={}", env.repo.join(".git").display());
    let oid = env.git(&["rev-parse", "unrelated"]);
    let git = live_git(
        &env,
        &elsewhere,
        &[&git_dir],
        &format!("delete refs/heads/unrelated {oid}\n"),
    );
    assert!(lock.exists(), "the live git holds packed-refs.lock");
    let r = run(alice(&env, None, &["recover"]));
    let kept = lock.exists();
    end_live_git(git);
    assert!(
        kept,
        "recover removed the live packed-refs.lock of a git run with --git-dir:\n{}",
        r.transcript()
    );
}

/// A person runs recover from a linked worktree while git works in the main work tree (which
/// is neither that worktree nor inside the common git dir): the live lock stays.
#[test]
fn recover_from_a_linked_worktree_never_removes_the_live_lock_of_a_git_in_the_main_worktree() {
    let (env, lock) = killed_apply_then_packed_refs_deletion_prepared();
    let wt = env.path().join("attack-wt");
    env.git(&["worktree", "add", "-q", "--detach", wt.to_str().unwrap(), "main"]);
    let oid = env.git(&["rev-parse", "unrelated"]);
    let git = live_git(
        &env,
        &env.repo,
        &[],
        &format!("delete refs/heads/unrelated {oid}\n"),
    );
    assert!(lock.exists(), "the live git holds packed-refs.lock");
    let mut c = alice(&env, None, &["recover"]);
    c.current_dir(&wt);
    let r = run(c);
    let kept = lock.exists();
    end_live_git(git);
    assert!(
        kept,
        "recover (from a linked worktree) removed the live packed-refs.lock of a git in the main work tree:\n{}",
        r.transcript()
    );
}

/// A repository shared by a group (`core.sharedRepository`, a shared CI box): a teammate's
/// git runs under another uid, so its `/proc/<pid>/cwd` cannot be read by the person running
/// recover, yet it can write the repository's locks. recover must not read "cannot tell" as
/// "no git runs" and remove that git's live lock. (Needs root to switch users; skipped
/// otherwise.)
#[test]
fn recover_never_removes_the_live_lock_of_another_users_git_in_a_shared_repository() {
    if !std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
    {
        eprintln!("skipped: needs root to run git and guardctl as two other users");
        return;
    }
    let (env, lock) = killed_apply_then_packed_refs_deletion_prepared();
    let oid = env.git(&["rev-parse", "unrelated"]);
    let sh = |args: &[&str]| {
        assert!(
            Command::new(args[0]).args(&args[1..]).status().unwrap().success(),
            "{args:?}"
        )
    };
    let root = env.path().to_str().unwrap();
    // The person running recover is `nobody` (65534) and owns the repository; the teammate (`daemon`, uid 1)
    // writes it through the shared group 65534.
    sh(&["chown", "-R", "65534:65534", root]);
    sh(&["chmod", "-R", "g+rwX", root]);
    sh(&["chmod", "o+x", root]);
    let keys = env.path().join("keys");
    for k in std::fs::read_dir(&keys).unwrap() {
        let k = k.unwrap().path();
        if k.extension().is_none() {
            sh(&["chmod", "600", k.to_str().unwrap()]);
        }
    }
    let mut c = Command::new("setpriv");
    c.current_dir(&env.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "--reuid=1",
            "--regid=65534",
            "--clear-groups",
            "git",
            "-c",
            "safe.directory=*",
            "update-ref",
            "--stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut git = c.spawn().unwrap();
    let mut stdin = git.stdin.take().unwrap();
    stdin
        .write_all(format!("start\ndelete refs/heads/unrelated {oid}\nprepare\n").as_bytes())
        .unwrap();
    let mut out = BufReader::new(git.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim_end() != "prepare: ok" {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            let mut err = String::new();
            std::io::Read::read_to_string(git.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the teammate's git did not prepare: {err}");
        }
    }
    git.stdin = Some(stdin);
    assert!(lock.exists(), "the teammate's live git holds packed-refs.lock");
    let mut c = Command::new("setpriv");
    let inner = alice(&env, None, &["recover"]);
    c.current_dir(&env.repo)
        .env_clear()
        .envs(inner.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(inner.get_program())
        .args(inner.get_args());
    let r = run(c);
    let kept = lock.exists();
    end_live_git(git);
    assert!(
        kept,
        "recover removed the live packed-refs.lock of another user's git:\n{}",
        r.transcript()
    );
}

/// Control: the same live git, working in the repository recover runs in, is seen and its
/// lock left, with a warning saying why. The tests above differ from this one only in where
/// that git works.
#[test]
fn control_recover_leaves_the_live_lock_of_a_git_in_its_own_work_tree() {
    let (env, lock) = killed_apply_then_packed_refs_deletion_prepared();
    let oid = env.git(&["rev-parse", "unrelated"]);
    let git = live_git(
        &env,
        &env.repo,
        &[],
        &format!("delete refs/heads/unrelated {oid}\n"),
    );
    let r = run(alice(&env, None, &["recover"]));
    let kept = lock.exists();
    end_live_git(git);
    assert!(kept, "{}", r.transcript());
    assert!(
        r.stderr.contains("were not removed: a git process (pid"),
        "{}",
        r.stderr
    );
}

/// A plan applied, then rolled back: its branches are back at their planned ids and its
/// backup ref stays. A teammate who can write `.git/guardctl` cuts its journal back to
/// `before-image-written`, `consumed` (the before-image and consumed marker still verify:
/// they are the genuine ones). Before e1165a4 recover called "backup made, nothing deleted"
/// not a state guardctl leaves; now `decide` reads it as a commit that began and finishes it:
/// the executor's own recover deletes every rolled-back branch again and signs a receipt for
/// a second application of a consumed plan. A plan is applied once.
#[test]
fn recover_never_reapplies_a_plan_that_was_rolled_back_when_its_journal_is_cut_back() {
    let (env, oids) = planned_and_approved();
    assert_eq!(run(alice(&env, None, &["apply", "plan.json"])).code, 0);
    let r = run(alice(&env, None, &["rollback", "plan.json"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let dir = cut_journal_to_consumed(&env);
    // What the plan's directory still holds (its signed receipt among them) is in the message.
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let r = run(alice(&env, None, &["recover"]));
    for (refname, oid) in &oids {
        let now = crate::fixtures::git_out(&env.repo, &["rev-parse", "--verify", "-q", refname]);
        assert_eq!(
            now.trim(),
            oid,
            "{refname}, rolled back, was deleted again by recover (the plan's directory held {files:?}):\n{}",
            r.transcript()
        );
    }
}

/// Cut the journal of `plan.json`'s plan in `env` back to its first two steps
/// (`before-image-written`, `consumed`), as a teammate who can write `.git` might after the
/// plan was applied; returns the plan's state directory.
pub(crate) fn cut_journal_to_consumed(env: &TestEnv) -> std::path::PathBuf {
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let dir = env
        .repo
        .join(".git/guardctl/plans")
        .join(id.trim_start_matches("sha256:"));
    let journal = dir.join("journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    assert!(cut.contains("consumed") && !cut.contains("committed"), "{text}");
    std::fs::write(&journal, cut).unwrap();
    dir
}
