//! Second round of attacks on issue 35's lock clearing and recovery (a helper's review as a
//! hostile teammate who can write `.git`, a racing git and a confused user): a symlinked or
//! non-file `mutating` marker, a symlinked `refs` directory, a journal cut back with the
//! records beside it removed too (the signed audit log still says the plan was applied), a
//! forged `rollback-started` (the rollback record is signed), and a git in the main work
//! tree of a repository whose git dir is not named `.git`.

use crate::fixtures::{TestEnv, run, standard_repo};
use crate::recover::{alice, planned_and_approved};
use crate::recover_attacks::{backdate, cut_journal_to_consumed, end_live_git, live_git};
use std::time::Duration;

/// A teammate who can write `.git` replaces the `mutating` marker by a symbolic link to a
/// file of the next person's (here their shell profile). Taking the lock then "writes the
/// marker" through the link: the victim's file is truncated and replaced by a pid, under the
/// victim's identity. The marker must be created, never written through a link.
#[test]
fn taking_the_lock_never_writes_through_a_symlinked_mutating_marker() {
    let env = standard_repo();
    let victim = env.path().join("victim-home");
    std::fs::create_dir_all(&victim).unwrap();
    let profile = victim.join(".bashrc");
    std::fs::write(&profile, "export PRECIOUS=1\n").unwrap();
    let state = env.repo.join(".git/guardctl");
    std::fs::create_dir_all(&state).unwrap();
    std::os::unix::fs::symlink(&profile, state.join("mutating")).unwrap();
    let r = run(alice(&env, None, &["recover"]));
    assert_eq!(
        std::fs::read_to_string(&profile).unwrap(),
        "export PRECIOUS=1\n",
        "taking the lock wrote through the symlinked marker .git/guardctl/mutating:\n{}",
        r.transcript()
    );
}

/// The same link, dangling: taking the lock must not create a file where a teammate points it
/// (here one the victim's shell would source).
#[test]
fn taking_the_lock_never_creates_a_file_through_a_dangling_mutating_marker() {
    let env = standard_repo();
    let victim = env.path().join("victim-home");
    std::fs::create_dir_all(&victim).unwrap();
    let planted = victim.join(".bash_aliases");
    let state = env.repo.join(".git/guardctl");
    std::fs::create_dir_all(&state).unwrap();
    std::os::unix::fs::symlink(&planted, state.join("mutating")).unwrap();
    let r = run(alice(&env, None, &["recover"]));
    assert!(
        !planted.exists(),
        "taking the lock created {} through the dangling marker link:\n{}",
        planted.display(),
        r.transcript()
    );
}

/// The first review tested a symlink *inside* `refs/`; the walk starts by `read_dir` of
/// `<common>/refs` itself, which follows a link. A teammate who can write `.git` packs the
/// refs, moves `refs/` into a directory of the victim's (any directory whose subtree has a
/// `*.lock`: `Cargo.lock`, `yarn.lock`, `flake.lock`, …) and plants a backdated marker. git
/// and guardctl keep working (refs are read through the link); the next person's guardctl
/// deletes the victim's lock files under the victim's identity.
#[test]
fn taking_the_lock_never_removes_a_file_outside_the_repository_through_a_symlinked_refs_dir() {
    let env = standard_repo();
    env.git(&["pack-refs", "--all"]);
    let victim = env.path().join("victim-project");
    std::fs::create_dir_all(victim.join("sub")).unwrap();
    let precious = victim.join("Cargo.lock");
    let nested = victim.join("sub/yarn.lock");
    std::fs::write(&precious, "# precious\n").unwrap();
    std::fs::write(&nested, "# precious too\n").unwrap();
    let refs = env.repo.join(".git/refs");
    // What remains loose (none after pack-refs but the dirs) goes along, so git still works.
    for entry in std::fs::read_dir(&refs).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), victim.join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(&refs).unwrap();
    std::os::unix::fs::symlink(&victim, &refs).unwrap();
    assert!(!env.git(&["rev-parse", "HEAD"]).is_empty());
    let state = env.repo.join(".git/guardctl");
    std::fs::create_dir_all(&state).unwrap();
    let marker = state.join("mutating");
    std::fs::write(&marker, "999999999").unwrap();
    backdate(&marker, 3600);
    let r = run(alice(&env, None, &["recover"]));
    assert!(
        precious.exists() && nested.exists(),
        "guardctl deleted files outside the repository through the symlinked .git/refs \
         (Cargo.lock kept: {}, sub/yarn.lock kept: {}):\n{}",
        precious.exists(),
        nested.exists(),
        r.transcript()
    );
}

fn rev(env: &TestEnv, refname: &str) -> String {
    crate::fixtures::git_out(&env.repo, &["rev-parse", "--verify", "-q", refname])
        .trim()
        .to_string()
}

/// The fix for the first review's "journal cut back after rollback" looks for
/// `receipt.json`, `result.json` and `rollback.json` beside the journal. They are files in
/// the same untrusted directory: a teammate who can cut the journal can remove them too. The
/// executor's own recover then finishes "the interrupted commit" again: deletes every
/// rolled-back branch and signs a receipt and an audit entry for a second application of a
/// consumed plan. A plan that was applied (its signed audit entry says so) is never applied
/// again.
#[test]
fn recover_never_reapplies_a_rolled_back_plan_whose_receipt_and_rollback_record_were_removed() {
    let (env, oids) = planned_and_approved();
    assert_eq!(run(alice(&env, None, &["apply", "plan.json"])).code, 0);
    let r = run(alice(&env, None, &["rollback", "plan.json"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let dir = cut_journal_to_consumed(&env);
    for done in ["receipt.json", "result.json", "rollback.json"] {
        let _ = std::fs::remove_file(dir.join(done));
    }
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let r = run(alice(&env, None, &["recover"]));
    for (refname, oid) in &oids {
        assert_eq!(
            &rev(&env, refname),
            oid,
            "{refname}, rolled back, was deleted again by recover (the plan's directory held {files:?}):\n{}",
            r.transcript()
        );
    }
}

/// `git clone --separate-git-dir` (or `git init --separate-git-dir`): the git dir is not named
/// `.git`, and nothing in it names the main work tree (its `.git` *file* points at the git
/// dir, not the reverse). A person runs guardctl from a linked worktree while git works in the
/// main work tree: `/proc` shows that git's cwd, but `repository_dirs` never lists the main
/// work tree, so its live `packed-refs.lock` is removed.
#[test]
fn taking_the_lock_never_removes_the_live_lock_of_a_git_in_the_main_work_tree_of_a_separate_git_dir() {
    let (env, _) = planned_and_approved();
    let store = env.path().join("store.git");
    env.git(&["init", "-q", &format!("--separate-git-dir={}", store.display())]);
    assert!(env.repo.join(".git").is_file());
    let r = run(alice(&env, Some("consumed"), &["apply", "plan.json"]));
    assert_eq!(r.code, -1, "not killed: {}", r.transcript());
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        store.join("guardctl/mutating").exists(),
        "the killed apply left its marker"
    );
    env.git(&["branch", "-q", "unrelated", "main"]);
    env.git(&["pack-refs", "--all"]);
    let wt = env.path().join("linked-wt");
    env.git(&["worktree", "add", "-q", "--detach", wt.to_str().unwrap(), "main"]);
    let lock = store.join("packed-refs.lock");
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
        "guardctl (run from a linked worktree of a separate git dir) removed the live packed-refs.lock of a git in the main work tree:\n{}",
        r.transcript()
    );
}

/// The same cut on a remote's plan, in a clone a teammate can write (a shared CI checkout, a
/// shared server) but whose remote they cannot push to: after apply and rollback, the remote
/// still holds this clone's consumed marker, so recover reads the cut journal as "the push
/// landed with deletions not yet made" and pushes the deletions of every rolled-back branch
/// with the victim's credentials, signing a receipt for it.
#[test]
fn recover_never_pushes_again_the_deletions_of_a_rolled_back_remote_plan_whose_records_were_removed() {
    let env = approved_remote_plan();
    let before = env.remote_branches();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.remote_branches(), before);
    let dir = cut_journal_to_consumed(&env);
    for done in ["receipt.json", "result.json", "rollback.json"] {
        let _ = std::fs::remove_file(dir.join(done));
    }
    let r = env.run("alice", &["recover"]);
    assert_eq!(
        env.remote_branches(),
        before,
        "recover pushed the deletions of a rolled-back plan again:\n{}",
        r.transcript()
    );
}

/// Before fe05c93 a journal ending at `rollback-started` was abandoned ("running it again is
/// safe"); now recover finishes it, pushing every ref `rollback.json` lists back to the
/// remote. Neither the journal line nor `rollback.json` is signed, and recover checks no key
/// for it: a teammate who can write the clone's `.git` (but may not roll back, or cannot push)
/// appends `rollback-started`, writes `rollback.json` from the before-image's refs, and the
/// next guardctl run in that clone (any mutating command recovers first) rolls the plan back
/// on the remote under the victim's identity and signs an audit entry saying a rollback was
/// finished. Only a rollback a principal started is finished.
#[test]
fn recover_never_finishes_a_rollback_nobody_started() {
    let env = approved_remote_plan();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let applied = env.remote_branches();
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"));
    let dir = env
        .repo
        .join(".git/guardctl/plans")
        .join(id.trim_start_matches("sha256:"));
    // The before-image is plain JSON (the signed consumed marker pins its digest).
    let image: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("before-image.json")).unwrap()).unwrap();
    let refs = image["refs"].clone();
    assert!(refs.as_array().is_some_and(|a| !a.is_empty()), "{image}");
    std::fs::write(dir.join("rollback.json"), serde_json::to_vec(&refs).unwrap()).unwrap();
    let journal = dir.join("journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut forged = last.clone();
    forged["step"] = "rollback-started".into();
    std::fs::write(&journal, format!("{text}{forged}\n")).unwrap();
    let r = env.run("alice", &["recover"]);
    assert_eq!(
        env.remote_branches(),
        applied,
        "recover rolled the plan back on the remote from a forged journal line and rollback.json:\n{}",
        r.transcript()
    );
}

/// A directory (or FIFO) where the marker goes: taking the lock fails for every mutating
/// command ("cannot write …/mutating"), until a person finds and removes it. Shown as a
/// control of what a non-file marker does today; a marker that is not a regular file should be
/// replaced (or reported by name), not make guardctl unusable.
#[test]
fn a_marker_that_is_not_a_regular_file_does_not_stop_every_mutating_command() {
    let env = standard_repo();
    let state = env.repo.join(".git/guardctl");
    std::fs::create_dir_all(state.join("mutating")).unwrap();
    let r = run(alice(&env, None, &["recover"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// A remote's plan (`plan.json`, the merged branches of `origin`) planned by Alice and
/// approved by Bob.
fn approved_remote_plan() -> TestEnv {
    let env = crate::fixtures::remote_repo();
    let r = env.run(
        "alice",
        &["plan", "remote-branches", "--remote", "origin", "--json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}
