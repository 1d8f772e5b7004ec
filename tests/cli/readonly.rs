//! The preview path writes nothing (issue 12): `plan`, `show`, `verify` and `whoami` work for
//! someone who can read the repository but not write it, and leave every file under it as it
//! was. The repository is made read-only (`chmod -R a-w`); when the tests run as root (who
//! ignores file modes), the commands run as `nobody` through `setpriv`, so the kernel, not
//! guardctl's good manners, is what refuses a write.

use crate::fixtures::{NOW, TestEnv, file_tree as tree, run, standard_repo};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

fn chmod_tree(dir: &Path, writable: bool) {
    let status = Command::new("chmod")
        .args(["-R", if writable { "u+w" } else { "a-w,a+rX" }])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Gives write permission back when the test ends, however it ends (so the temporary
/// directory can be removed).
struct Writable<'a>(&'a Path);

impl Drop for Writable<'_> {
    fn drop(&mut self) {
        chmod_tree(self.0, true);
    }
}

fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A place `nobody` (or this user) may write: the plan output, HOME, the keys.
fn scratch(env: &TestEnv) -> PathBuf {
    let dir = env.path().join("scratch");
    fs::create_dir_all(dir.join("home")).unwrap();
    for user in ["alice", "bob"] {
        let key = env.key(user);
        fs::copy(&key, dir.join(user)).unwrap();
        fs::set_permissions(dir.join(user), fs::Permissions::from_mode(0o644)).unwrap();
    }
    fs::copy(env.allowed_signers(), dir.join("allowed_signers")).unwrap();
    // Git (and libgit2) refuse a repository another user owns unless it is declared safe.
    fs::write(dir.join("home/.gitconfig"), "[safe]\n\tdirectory = *\n").unwrap();
    if is_root() {
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(dir.join("home"), Some(65534), Some(65534)).unwrap();
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    // Every directory above the repository must be searchable by `nobody`.
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// guardctl as someone who cannot write the repository.
fn reader(env: &TestEnv, scratch: &Path, user: &str, args: &[&str]) -> crate::fixtures::Run {
    let mut c = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_guardctl"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_guardctl"))
    };
    let home = scratch.join("home");
    c.current_dir(&env.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TZ", "UTC")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GUARDCTL_TEST_NOW", NOW)
        .arg("--key")
        .arg(scratch.join(user))
        .arg("--allowed-signers")
        .arg(scratch.join("allowed_signers"))
        .args(args);
    run(c)
}

/// Root without `setpriv` cannot drop to a user the read-only modes stop.
#[allow(clippy::print_stderr)] // a skipped test says why, as the tests' own prints do
fn read_only_cannot_be_enforced() -> bool {
    let cannot = is_root() && Command::new("setpriv").arg("--version").output().is_err();
    if cannot {
        eprintln!("skipped: running as root without setpriv, a read-only repository cannot be enforced");
    }
    cannot
}

/// A plan of `stale-branches` with `criteria`, approved by bob, kept outside the repository
/// and readable by the read-only user.
fn approved_plan(env: &TestEnv, scratch: &Path, criteria: &[&str]) -> PathBuf {
    let approved = scratch.join("approved.json");
    let mut args = vec!["plan", "stale-branches"];
    args.extend_from_slice(criteria);
    args.extend(["-o", approved.to_str().unwrap()]);
    let r = env.run("alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", approved.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::set_permissions(&approved, fs::Permissions::from_mode(0o644)).unwrap();
    approved
}

/// Each command, run by the read-only user, exits 0 and leaves every file under the
/// repository as `frozen` recorded it.
fn each_succeeds_and_writes_nothing(
    env: &TestEnv,
    scratch: &Path,
    frozen: &BTreeMap<PathBuf, String>,
    commands: &[(&str, Vec<&str>)],
) {
    for (user, args) in commands {
        let r = reader(env, scratch, user, args);
        assert_eq!(
            r.code,
            0,
            "{args:?} on a read-only repository:\n{}",
            r.transcript()
        );
        assert_eq!(
            frozen,
            &tree(&env.repo),
            "{args:?} changed something under the repository"
        );
    }
}

#[test]
fn plan_show_verify_and_whoami_work_on_a_repository_nobody_can_write() {
    if read_only_cannot_be_enforced() {
        return;
    }
    let env = standard_repo();
    let scratch = scratch(&env);
    // An approved plan to verify, kept outside the repository.
    let approved = approved_plan(&env, &scratch, &[]);

    let before = tree(&env.repo);
    chmod_tree(&env.repo, false);
    let _restore = Writable(&env.repo);
    let frozen = tree(&env.repo);
    if is_root() {
        // The sandbox is real: `nobody` cannot write there.
        let touch = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "touch"])
            .arg(env.repo.join(".git/probe"))
            .output()
            .unwrap();
        assert!(!touch.status.success(), "nobody could write the repository");
    }

    let out = scratch.join("plan.json");
    let out = out.to_str().unwrap();
    let commands = [
        ("alice", vec!["whoami"]),
        (
            "alice",
            vec!["plan", "stale-branches", "--merged", "--gone", "-o", out],
        ),
        ("bob", vec!["show", out]),
        ("bob", vec!["--json", "show", out]),
        ("alice", vec!["verify", approved.to_str().unwrap()]),
        ("alice", vec!["--json", "verify", approved.to_str().unwrap()]),
    ];
    each_succeeds_and_writes_nothing(&env, &scratch, &frozen, &commands);
    drop(_restore);
    // Only the modes differ from before the chmod: no file was added, removed or changed.
    let strip_mode = |t: &BTreeMap<PathBuf, String>| -> Vec<(PathBuf, String)> {
        t.iter()
            .map(|(p, l)| (p.clone(), l.split_once(' ').unwrap().1.to_string()))
            .collect()
    };
    assert_eq!(strip_mode(&before), strip_mode(&tree(&env.repo)));
}

/// `plan` reads commits through gix's object database (memory-mapped packs, a multi-pack
/// index, loose objects) as well as libgit2's: on a read-only repository with every kind of
/// object store git writes, neither opens anything for writing, takes a lock or leaves a
/// file behind, and the answers are those of the loose-object repository.
#[test]
fn plan_and_verify_over_packs_a_multi_pack_index_and_a_commit_graph_write_nothing() {
    if read_only_cannot_be_enforced() {
        return;
    }
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--gone", "-o", "loose.json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let loose = crate::fixtures::payload_of(&env.repo.join("loose.json"))["affected"].clone();
    env.git(&["gc", "-q"]);
    // One commit loose after the pack, one more pack on top, an index over both, a graph.
    env.branch("feature/late", "main", 1, "Bob", 1);
    env.merge("feature/late", 1);
    env.git(&["repack", "-q"]);
    env.branch("feature/loose", "main", 1, "Bob", 0);
    env.git(&["multi-pack-index", "write"]);
    env.git(&["commit-graph", "write", "--reachable"]);
    let objects = env.repo.join(".git/objects");
    assert!(objects.join("pack/multi-pack-index").exists());
    assert!(objects.join("info/commit-graph").exists());
    let packs = fs::read_dir(objects.join("pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "pack")
        })
        .count();
    assert!(packs >= 2, "{packs} packs");
    let scratch = scratch(&env);
    let approved = approved_plan(&env, &scratch, &["--merged", "--gone"]);

    chmod_tree(&env.repo, false);
    let _restore = Writable(&env.repo);
    let frozen = tree(&env.repo);
    let out = scratch.join("plan.json");
    let out = out.to_str().unwrap();
    let commands = [
        (
            "alice",
            vec![
                "plan",
                "stale-branches",
                "--merged",
                "--gone",
                "--squash-merged",
                "-o",
                out,
            ],
        ),
        (
            "alice",
            vec!["plan", "stale-branches", "--merged", "--gone", "-o", out],
        ),
        ("bob", vec!["show", out]),
        ("alice", vec!["verify", approved.to_str().unwrap()]),
    ];
    each_succeeds_and_writes_nothing(&env, &scratch, &frozen, &commands);
    drop(_restore);
    // The packed repository's plan states what the loose one's did, plus the merged newcomer.
    let mut packed = crate::fixtures::payload_of(Path::new(out))["affected"].clone();
    let packed = packed.as_array_mut().unwrap();
    packed.retain(|a| a["ref"] != "refs/heads/feature/late");
    assert_eq!(&loose, &serde_json::Value::Array(packed.clone()));
}

#[test]
fn a_plan_made_in_one_clone_is_refused_in_a_copy_of_it() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let copy = env.path().join("copy");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&env.repo)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let mut c = env.command();
    c.current_dir(&copy)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["apply", "plan.json"]);
    let r = run(c);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("plan for another repository"), "{}", r.stderr);
    // In the repository it was made in, it applies.
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
}

#[test]
fn show_and_inbox_of_a_published_plan_write_nothing_in_the_repository() {
    if read_only_cannot_be_enforced() {
        return;
    }
    let env = standard_repo();
    let scratch = scratch(&env);
    let r = env.run(
        "alice",
        &[
            "--json",
            "plan",
            "stale-branches",
            "--merged",
            "-o",
            scratch.join("p.json").to_str().unwrap(),
            "--publish",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = r.json()["plan_id"].as_str().unwrap().to_string();
    let refs_before = env.git(&["for-each-ref"]);
    let state_before = env.repository_state();
    chmod_tree(&env.repo, false);
    let _restore = Writable(&env.repo);
    let frozen = tree(&env.repo);
    let commands = [
        ("bob", vec!["show", &id[7..19]]),
        ("bob", vec!["--json", "show", &id]),
        ("bob", vec!["inbox"]),
        ("bob", vec!["--json", "inbox"]),
    ];
    each_succeeds_and_writes_nothing(&env, &scratch, &frozen, &commands);
    drop(_restore);
    // Refs, config, reflogs and the object store are as they were: the published plan was
    // read through a private scratch repository, never fetched into this one.
    assert_eq!(env.repository_state(), state_before);
    assert_eq!(env.git(&["for-each-ref"]), refs_before);
}
