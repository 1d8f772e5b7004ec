//! The one fixtures helper: real temporary repositories built with the real `git` binary
//! (fixed dates, UTC, no global or system config, cleared environment), the labelled test
//! keys from `fixtures/keys`, and a runner for the real `guardctl` binary.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The clock every test runs at (the binary honours it only with the `test-hooks` feature).
pub const NOW: &str = "2026-06-01T12:00:00Z";
pub const NOW_UNIX: i64 = 1_780_315_200;
pub const DAY: i64 = 86_400;

pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub repo: PathBuf,
    pub home: PathBuf,
}

/// The outcome of one `guardctl` run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout, stderr and the exit status together, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.transcript()))
    }
}

/// Whether a heavy test (the crash soak, the plan-file fuzz, a 200 MB blob, thousands of refs)
/// is to be skipped: unless `GUARDCTL_HEAVY_TESTS=1` it returns at once, saying so. They live
/// in a `mod heavy` of their capability's file, so `cargo test --features test-hooks --test
/// cli ::heavy::` with the variable set runs exactly them (`.ci/run` does, as its own step).
#[allow(clippy::print_stderr)] // a skipped test says why
pub fn skip_heavy(name: &str) -> bool {
    if std::env::var_os("GUARDCTL_HEAVY_TESTS").is_some_and(|v| v == "1") {
        return false;
    }
    eprintln!("skipped {name}: a heavy test (GUARDCTL_HEAVY_TESTS=1 runs it)");
    true
}

fn assert_hooks() {
    assert!(
        guardctl::context::test_hooks_enabled(),
        "the CLI tests need the test clock: run `cargo test --features test-hooks`"
    );
}

/// The exact signed payload bytes of a plan file (or of an approval envelope).
pub fn payload_bytes(path: &Path) -> Vec<u8> {
    use base64::Engine;
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(v["payload"].as_str().unwrap())
        .unwrap()
}

/// The signed payload of a plan file (or of an approval envelope), as JSON.
pub fn payload_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&payload_bytes(path)).unwrap()
}

/// The `ref` of every affected resource of a plan file, in the plan's order.
pub fn affected_refs(path: &Path) -> Vec<String> {
    payload_of(path)["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ref"].as_str().unwrap().to_string())
        .collect()
}

/// The plan id (`sha256:<hex>` of the payload bytes) of a plan file.
pub fn plan_id_of(path: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(payload_bytes(path));
    format!(
        "sha256:{}",
        digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Every file, directory and link under `dir`: kind, mode, size, mtime and content digest.
pub fn file_tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            // The `mutating` marker says a guardctl holds (or died holding) the lock, as the
            // lock file does: bookkeeping of the lock, not state (repo/mutate/stale_locks.rs).
            if p == dir.join("mutating") {
                continue;
            }
            let m = fs::symlink_metadata(&p).unwrap();
            let digest = if m.is_file() {
                format!(
                    "{:x}",
                    <sha2::Sha256 as sha2::Digest>::digest(fs::read(&p).unwrap())
                )
            } else {
                String::new()
            };
            if m.is_dir() {
                stack.push(p.clone());
            }
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let line = format!(
                "{:o} {} {}.{} {digest}",
                std::os::unix::fs::MetadataExt::mode(&m),
                m.len(),
                std::os::unix::fs::MetadataExt::mtime(&m),
                std::os::unix::fs::MetadataExt::mtime_nsec(&m)
            );
            out.insert(rel, line);
        }
    }
    out
}

impl TestEnv {
    /// `text` with what differs on every run replaced by placeholders, for snapshots: the id
    /// of each plan file in the repository (every plan has a random nonce), and the
    /// repository's identity (made from its directory's inode) and the plan hash over it.
    pub fn stable(&self, text: &str) -> String {
        let mut plans: Vec<PathBuf> = fs::read_dir(&self.repo)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter(|p| fs::read_to_string(p).is_ok_and(|t| t.contains("vnd.guardctl.plan")))
            .collect();
        plans.sort();
        let mut out = text.to_string();
        for p in &plans {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let id = plan_id_of(p);
            let hex = id.trim_start_matches("sha256:");
            out = out
                .replace(hex, &format!("<id of {name}>"))
                .replace(&hex[..12], &format!("<id of {name}>"));
            let payload = payload_of(p);
            // The plan hash covers the repository's identity, so it differs per run too.
            for (field, label) in [
                ("repository", "<repository>"),
                ("nonce", "<nonce>"),
                ("plan_hash", "<plan hash>"),
            ] {
                if let Some(v) = payload[field].as_str() {
                    out = out.replace(v, label);
                }
            }
        }
        out
    }

    /// An empty repository with one commit on `main`, made 400 days before `NOW`.
    pub fn new() -> TestEnv {
        TestEnv::new_in(tempfile::tempdir().expect("tempdir"))
    }

    /// [`TestEnv::new`] in the directory `root`.
    fn new_in(root: tempfile::TempDir) -> TestEnv {
        assert_hooks();
        let env = TestEnv::at(root);
        fs::create_dir_all(&env.home).unwrap();
        env.git_in(env.root.path(), &["init", "-q", "-b", "main", "repo"]);
        env.commit("README", "initial", "Alice", 400);
        env
    }

    /// The environment whose directory is `root` (its repository `root/repo`, home `root/home`).
    fn at(root: tempfile::TempDir) -> TestEnv {
        TestEnv {
            repo: root.path().join("repo"),
            home: root.path().join("home"),
            root,
        }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    fn git_command(&self, dir: &Path, days_ago: i64, author: &str) -> Command {
        let date = format!("@{} +0000", NOW_UNIX - days_ago * DAY);
        let email = format!("{}@example.com", author.to_lowercase().replace(' ', "."));
        let mut c = Command::new("git");
        c.current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", author)
            .env("GIT_AUTHOR_EMAIL", &email)
            .env("GIT_COMMITTER_NAME", author)
            .env("GIT_COMMITTER_EMAIL", &email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        c
    }

    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        self.git_full(dir, args, 0, "Alice")
    }

    pub fn git_full(&self, dir: &Path, args: &[&str], days_ago: i64, author: &str) -> String {
        let out = self
            .git_command(dir, days_ago, author)
            .args(args)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// git in the test repository, "now".
    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.repo, args)
    }

    /// git in the test repository at a date `days_ago` before `NOW`.
    pub fn git_at(&self, days_ago: i64, args: &[&str]) -> String {
        self.git_full(&self.repo, args, days_ago, "Alice")
    }

    /// Write `file`, commit it on the current branch as `author`, `days_ago` before `NOW`.
    pub fn commit(&self, file: &str, content: &str, author: &str, days_ago: i64) -> String {
        let path = self.repo.join(file);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(&path, format!("{content}\n")).unwrap();
        self.git_full(&self.repo, &["add", "--", file], days_ago, author);
        let msg = format!("Change {file}: {content}");
        self.git_full(&self.repo, &["commit", "-q", "-m", &msg], days_ago, author);
        self.git(&["rev-parse", "HEAD"])
    }

    /// A branch from `from` with `n` commits of its own, the last `days_ago` before `NOW`.
    pub fn branch(&self, name: &str, from: &str, n: usize, author: &str, days_ago: i64) -> String {
        self.git(&["checkout", "-q", "-b", name, from]);
        let slug = name.replace('/', "-");
        for i in 0..n {
            self.commit(
                &format!("{slug}.txt"),
                &format!("{name} {i}"),
                author,
                days_ago + (n - 1 - i) as i64,
            );
        }
        let tip = self.git(&["rev-parse", "HEAD"]);
        self.git(&["checkout", "-q", "main"]);
        tip
    }

    /// Merge `branch` into main with a merge commit.
    pub fn merge(&self, branch: &str, days_ago: i64) {
        self.git_at(
            days_ago,
            &["merge", "-q", "--no-ff", "-m", &format!("Merge {branch}"), branch],
        );
    }

    /// Squash-merge `branch` into main: one new commit with its whole change.
    pub fn squash_merge(&self, branch: &str, days_ago: i64) {
        self.git_at(days_ago, &["merge", "-q", "--squash", branch]);
        self.git_at(days_ago, &["commit", "-q", "-m", &format!("Squashed {branch}")]);
    }

    /// A copy of a labelled test key from `fixtures/keys`, with the mode ssh-keygen insists on.
    pub fn key(&self, name: &str) -> PathBuf {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
        let file = if name == "carol" {
            "carol_ecdsa".to_string()
        } else {
            format!("{name}_ed25519")
        };
        let dir = self.path().join("keys");
        fs::create_dir_all(&dir).unwrap();
        let dst = dir.join(&file);
        if !dst.exists() {
            fs::copy(src.join(&file), &dst).unwrap();
            fs::copy(src.join(format!("{file}.pub")), dir.join(format!("{file}.pub"))).unwrap();
            fs::set_permissions(&dst, fs::Permissions::from_mode(0o600)).unwrap();
        }
        dst
    }

    pub fn public_key(&self, name: &str) -> String {
        let p = self.key(name);
        fs::read_to_string(format!("{}.pub", p.display()))
            .unwrap()
            .trim()
            .to_string()
    }

    /// alice, bob and carol mapped to `<name>@example.com`; mallory is unknown.
    pub fn allowed_signers(&self) -> PathBuf {
        let path = self.path().join("allowed_signers");
        if !path.exists() {
            let lines: Vec<String> = ["alice", "bob", "carol"]
                .iter()
                .map(|n| format!("{n}@example.com {}", self.public_key(n)))
                .collect();
            fs::write(&path, lines.join("\n") + "\n").unwrap();
        }
        path
    }

    /// A fresh key `name` with a user certificate for `principal` (valid all of 2026) from the
    /// test's certificate authority, which the allowed-signers file trusts for `principal`;
    /// returns the certificate's path (the private key beside it), as `--key` takes it.
    pub fn certified_key(&self, name: &str, principal: &str) -> PathBuf {
        let dir = self.path().join("certs");
        fs::create_dir_all(&dir).unwrap();
        let keygen = |args: &[&str]| {
            let out = Command::new("ssh-keygen")
                .current_dir(&dir)
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "ssh-keygen {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        if !dir.join("ca").exists() {
            keygen(&["-q", "-t", "ed25519", "-N", "", "-C", "ca", "-f", "ca"]);
        }
        let ca = fs::read_to_string(dir.join("ca.pub")).unwrap();
        let line = format!("{principal} cert-authority {}\n", ca.trim());
        let signers = self.allowed_signers();
        let text = fs::read_to_string(&signers).unwrap();
        if !text.contains(&line) {
            fs::write(&signers, text + &line).unwrap();
        }
        keygen(&["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", name]);
        let public = format!("{name}.pub");
        keygen(&[
            "-q",
            "-s",
            "ca",
            "-I",
            name,
            "-n",
            principal,
            "-V",
            "20260101:20270101",
            &public,
        ]);
        dir.join(format!("{name}-cert.pub"))
    }

    /// Append `<principal and options> <public key of key_name>` to the allowed-signers file.
    pub fn allow_signer(&self, principal_and_options: &str, key_name: &str) {
        let path = self.allowed_signers();
        let mut text = fs::read_to_string(&path).unwrap();
        text += &format!("{principal_and_options} {}\n", self.public_key(key_name));
        fs::write(&path, text).unwrap();
    }

    /// The binary with a cleared environment, the test clock, in the repository.
    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_guardctl"));
        c.current_dir(&self.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GUARDCTL_TEST_NOW", NOW);
        c
    }

    /// [`Self::run`], started by `sh` after `prelude` (a `ulimit`, say): limits set there
    /// hold for guardctl and every child it starts, and for nothing else in the test.
    pub fn run_after(&self, prelude: &str, user: &str, args: &[&str]) -> Run {
        let mut c = self.command();
        let bin = env!("CARGO_BIN_EXE_guardctl");
        let mut sh = Command::new("sh");
        sh.current_dir(&self.repo).env_clear();
        for (k, v) in c.get_envs() {
            if let Some(v) = v {
                sh.env(k, v);
            }
        }
        sh.arg("-c")
            .arg(format!("{prelude} && exec \"$0\" \"$@\""))
            .arg(bin)
            .arg("--key")
            .arg(self.key(user))
            .arg("--allowed-signers")
            .arg(self.allowed_signers())
            .args(args);
        c = sh;
        run(c)
    }

    /// Run guardctl as `user` (their test key, the test allowed-signers file).
    pub fn run(&self, user: &str, args: &[&str]) -> Run {
        let key = self.key(user);
        let signers = self.allowed_signers();
        let mut c = self.command();
        c.arg("--key")
            .arg(key)
            .arg("--allowed-signers")
            .arg(signers)
            .args(args);
        run(c)
    }

    /// `run`, with extra environment variables (test hooks, allowlisted variables).
    pub fn run_env(&self, user: &str, vars: &[(&str, &str)], args: &[&str]) -> Run {
        let mut c = self.command();
        for (k, v) in vars {
            c.env(k, v);
        }
        c.arg("--key")
            .arg(self.key(user))
            .arg("--allowed-signers")
            .arg(self.allowed_signers())
            .args(args);
        run(c)
    }

    /// Everything `plan`/`show` must leave untouched: refs, config, reflogs, object count.
    pub fn repository_state(&self) -> String {
        let git_dir = self.repo.join(".git");
        let mut s = String::new();
        s += &self.git(&["for-each-ref", "--format=%(refname) %(objectname) %(symref)"]);
        s += "\n--- HEAD\n";
        s += &fs::read_to_string(git_dir.join("HEAD")).unwrap();
        s += "--- config\n";
        s += &fs::read_to_string(git_dir.join("config")).unwrap();
        s += "--- packed-refs\n";
        s += &fs::read_to_string(git_dir.join("packed-refs")).unwrap_or_default();
        s += "--- reflogs\n";
        let mut logs = Vec::new();
        collect_files(&git_dir.join("logs"), &mut logs);
        logs.sort();
        for f in logs {
            s += &format!("{}\n{}", f.display(), fs::read_to_string(&f).unwrap());
        }
        s += "--- objects\n";
        s += &self.git(&["count-objects", "-v"]);
        s
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                collect_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

pub fn run(mut c: Command) -> Run {
    let out: Output = c.stdin(Stdio::null()).output().expect("run guardctl");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run `ssh-keygen -Y verify` on `data` with a signature, returning (success, output).
pub fn ssh_keygen_verify(
    signers: &Path,
    principal: &str,
    namespace: &str,
    sig: &str,
    data: &[u8],
) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let sig_path = dir.path().join("sig");
    fs::write(&sig_path, sig).unwrap();
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", namespace, "-I", principal, "-f"])
        .arg(signers)
        .arg("-s")
        .arg(&sig_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The repository most tests start from (dates are days before `NOW`):
/// - `feature/done` merged (300d), `fix/old` merged (200d)
/// - `feature/squashed`: 3 commits squash-merged into main (30d)
/// - `feature/live`: 2 commits not in main (2d)
/// - `feature/gone-merged`: merged, upstream configured, remote branch deleted
/// - `feature/gone-work`: 1 commit not in main, upstream configured, remote branch deleted
/// - `release/1.0` protected, `hotfix/wt` checked out in a worktree
///
/// Built once per test binary (`standard_template`, about 60 git processes) and copied into
/// each test's own directory.
pub fn standard_repo() -> TestEnv {
    assert_hooks();
    let template = standard_template();
    let env = TestEnv::at(tempfile::tempdir().expect("tempdir"));
    copy_fixture(&env, template);
    env
}

/// The one copy of `standard_repo` built in this process, in a directory that lives as long
/// as the process: `guardctl-fixture-<pid>-*` in the temporary directory (one left by a test
/// binary that has exited is removed when the next one builds its own).
fn standard_template() -> &'static Path {
    static TEMPLATE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        remove_stale_templates();
        let root = tempfile::Builder::new()
            .prefix(&format!("guardctl-fixture-{}-", std::process::id()))
            .tempdir()
            .expect("tempdir");
        build_standard_repo(TestEnv::new_in(root)).root.keep()
    })
}

fn remove_stale_templates() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("guardctl-fixture-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Copy the template directory `from` into `env`'s directory `to` (modes, links and times kept: `cp -a`), then
/// make the copy stand on its own: the absolute paths git wrote into it (origin's URL, the
/// worktree's links both ways) name `to`, and each work tree's index is refreshed for the
/// copied files' new inodes and change times, as git would on its first look.
fn copy_fixture(env: &TestEnv, from: &Path) {
    let to = env.path();
    let out = Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .output()
        .expect("run cp");
    assert!(
        out.status.success(),
        "cp -a: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (old, new) = (
        from.to_string_lossy().into_owned(),
        to.to_string_lossy().into_owned(),
    );
    let mut files = Vec::new();
    collect_files(to, &mut files);
    for f in files {
        // Git objects are compressed and never hold the path; everything else is small.
        if f.components().any(|c| c.as_os_str() == "objects")
            || fs::symlink_metadata(&f).unwrap().is_symlink()
        {
            continue;
        }
        let bytes = fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        if text.contains(&old) && std::str::from_utf8(&bytes).is_ok() {
            fs::write(&f, text.replace(&old, &new)).unwrap();
        }
    }
    for dir in [to.join("repo"), to.join("wt")] {
        env.git_in(&dir, &["update-index", "-q", "--refresh"]);
    }
}

/// The commits, branches, remote and worktree of `standard_repo`, made in `env`.
fn build_standard_repo(env: TestEnv) -> TestEnv {
    // Dates follow the topology (no commit older than its parent), as in real history.
    let origin = env.path().join("origin.git");
    env.git_in(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()],
    );
    env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    env.branch("feature/done", "main", 1, "Bob", 300);
    env.merge("feature/done", 299);
    env.branch("fix/old", "main", 2, "Carol", 200);
    env.merge("fix/old", 199);
    env.branch("feature/gone-merged", "main", 1, "Bob", 100);
    env.merge("feature/gone-merged", 99);
    env.branch("feature/gone-work", "main", 1, "Bob", 90);
    for b in ["feature/gone-merged", "feature/gone-work"] {
        env.git(&["push", "-q", "-u", "origin", b]);
        env.git(&["push", "-q", "origin", "--delete", b]);
    }
    env.branch("feature/squashed", "main", 3, "Dave", 32);
    env.squash_merge("feature/squashed", 30);
    env.branch("feature/live", "main", 2, "Erin", 2);
    env.git(&["push", "-q", "-u", "origin", "main"]);
    env.git(&["branch", "release/1.0", "main"]);
    env.git(&["branch", "hotfix/wt", "main"]);
    let wt = env.path().join("wt");
    env.git(&["worktree", "add", "-q", wt.to_str().unwrap(), "hotfix/wt"]);
    env
}

/// `standard_repo` whose remote `origin` (a bare repository, reached by a `file://` URL)
/// holds `main`, `feature/done` and `fix/old` (merged), `feature/live` (2 commits not in
/// main) and `release/1.0` (protected); this clone has fetched all of it.
pub fn remote_repo() -> TestEnv {
    let env = standard_repo();
    let url = format!("file://{}", env.origin().display());
    env.git(&["remote", "set-url", "origin", &url]);
    env.git(&[
        "push",
        "-q",
        "origin",
        "feature/done",
        "fix/old",
        "feature/live",
        "release/1.0",
    ]);
    env.git(&["fetch", "-q", "origin"]);
    env
}

/// `remote_repo` with `policy` committed on the remote's default branch and dave (the mallory
/// test key) trusted as an executor: a team's remote, before anyone clones it.
pub fn team_remote(policy: &str) -> TestEnv {
    let env = remote_repo();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::write(env.repo.join(".guardctl/policy.toml"), policy).unwrap();
    env.git(&["add", ".guardctl/policy.toml"]);
    env.git(&["commit", "-q", "-m", "the team's policy"]);
    env.git(&["push", "-q", "origin", "main"]);
    env.allow_signer("dave@example.com", "mallory");
    env
}

/// A team around a `team_remote(policy)`: four clones made after the policy was pushed —
/// the planner (alice), two reviewers (bob, carol) and the executor (dave, the mallory key).
pub struct Team {
    pub env: TestEnv,
    pub planner: PathBuf,
    pub bob: PathBuf,
    pub carol: PathBuf,
    pub executor: PathBuf,
}

pub fn team(policy: &str) -> Team {
    let env = team_remote(policy);
    let clones = env.clones(&["planner", "bob", "carol", "executor"]);
    let [planner, bob, carol, executor] = <[PathBuf; 4]>::try_from(clones).unwrap();
    Team {
        env,
        planner,
        bob,
        carol,
        executor,
    }
}

/// A `pre-receive` hook in the bare `remote` refusing, for every ref matching the shell
/// `case` pattern `protected`, deletions and updates that do not fast-forward: a host's
/// branch protection (no deletion, no force-push); any other ref may change.
pub fn protect_refs(remote: &Path, protected: &str) {
    use std::os::unix::fs::PermissionsExt;
    let hook = remote.join("hooks/pre-receive");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            r#"#!/bin/sh
zero=0000000000000000000000000000000000000000
while read old new ref; do
  case "$ref" in
    {protected})
      if [ "$new" = "$zero" ]; then echo "protected: $ref cannot be deleted"; exit 1; fi
      if [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
        echo "protected: $ref cannot be rewound"; exit 1
      fi ;;
  esac
done
"#
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Alice publishes, from her clone `planner`, a plan of the remote's merged branches for
/// dave to apply (`--remote origin --executor dave@example.com`, plus `extra`), saved there as
/// `name`; its id's hex digits.
pub fn publish(env: &TestEnv, planner: &Path, name: &str, extra: &[&str]) -> String {
    let out = planner.join(name);
    let mut args = vec![
        "--json",
        "plan",
        "remote-branches",
        "--remote",
        "origin",
        "--executor",
        "dave@example.com",
        "-o",
        out.to_str().unwrap(),
        "--publish",
    ];
    args.extend_from_slice(extra);
    let r = env.run_in(planner, "alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    r.json()["plan_id"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string()
}

impl TestEnv {
    /// A fresh clone of the bare remote `origin` (its `file://` URL) for each of `names`,
    /// under the test's directory: the machines of a team, each with a clone of its own.
    pub fn clones(&self, names: &[&str]) -> Vec<PathBuf> {
        let url = format!("file://{}", self.origin().display());
        names
            .iter()
            .map(|name| {
                let path = self.path().join(name);
                self.git_in(self.path(), &["clone", "-q", &url, path.to_str().unwrap()]);
                path
            })
            .collect()
    }

    /// `run` in the clone at `dir` (`-C dir`).
    pub fn run_in(&self, dir: &Path, user: &str, args: &[&str]) -> Run {
        let mut full = vec!["-C", dir.to_str().unwrap()];
        full.extend_from_slice(args);
        self.run(user, &full)
    }

    /// The bare repository `standard_repo` uses as `origin`.
    pub fn origin(&self) -> PathBuf {
        self.path().join("origin.git")
    }

    /// Everything published on the bare repository `remote`, one `<name> <oid>` line each,
    /// sorted: the refs under `refs/guardctl/` (as published before the ledger: the item's
    /// commit) and every file of the ledger `refs/heads/guardctl/ledger` under its item's
    /// name (`refs/guardctl/<dir of the file>`: the file's blob).
    pub fn published_on(&self, remote: &Path) -> String {
        let mut lines: Vec<String> = self
            .git_in(
                remote,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    "refs/guardctl",
                ],
            )
            .lines()
            .map(String::from)
            .collect();
        let has_ledger = !self
            .git_in(remote, &["for-each-ref", "refs/heads/guardctl/ledger"])
            .is_empty();
        let chain = match has_ledger {
            true => self.git_in(
                remote,
                &[
                    "log",
                    "--first-parent",
                    "--format=%H",
                    "refs/heads/guardctl/ledger",
                    "--",
                ],
            ),
            false => String::new(),
        };
        for commit in chain.lines() {
            for entry in self.git_in(remote, &["ls-tree", "-r", commit]).lines() {
                if let Some((meta, path)) = entry.split_once('\t') {
                    let blob = meta.split(' ').nth(2).unwrap_or_default();
                    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                    lines.push(format!("refs/guardctl/{dir} {blob}"));
                }
            }
        }
        lines.sort();
        lines.join("\n")
    }

    /// The commit the remote's ledger (`refs/heads/guardctl/ledger`) is at.
    pub fn ledger_tip(&self) -> String {
        self.git_in(&self.origin(), &["rev-parse", "refs/heads/guardctl/ledger"])
    }

    /// The lines of [`TestEnv::published_on`] whose name starts with `prefix`.
    pub fn published_under(&self, remote: &Path, prefix: &str) -> String {
        self.published_on(remote)
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The file of the item published as `name` on `remote` (the first the ledger holds,
    /// else the one file of the ref's commit).
    pub fn published_bytes(&self, remote: &Path, name: &str) -> String {
        let line = self
            .published_on(remote)
            .lines()
            .find(|l| l.split(' ').next() == Some(name))
            .map(String::from)
            .unwrap_or_else(|| panic!("nothing is published as {name}"));
        let oid = line.split(' ').nth(1).unwrap().to_string();
        match self.git_in(remote, &["cat-file", "-t", &oid]).as_str() {
            "blob" => self.git_in(remote, &["cat-file", "blob", &oid]),
            _ => {
                let listing = self.git_in(remote, &["ls-tree", &oid]);
                let blob = listing.split_whitespace().nth(2).unwrap().to_string();
                self.git_in(remote, &["cat-file", "blob", &blob])
            }
        }
    }

    /// A one-file item commit (as published under `refs/guardctl/` before the ledger) holding
    /// the file of the item published as `name`, written into `remote`: what someone with
    /// push access copies under another name.
    pub fn published_commit(&self, remote: &Path, name: &str, file: &str) -> String {
        let bytes = self.published_bytes(remote, name);
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), &bytes).unwrap();
        let blob = self.git_in(remote, &["hash-object", "-w", tmp.path().to_str().unwrap()]);
        let tree = {
            use std::io::Write;
            let mut c = self
                .git_command(remote, 0, "Alice")
                .args(["mktree"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            writeln!(c.stdin.take().unwrap(), "100644 blob {blob}\t{file}").unwrap();
            let out = c.wait_with_output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        self.git_in(remote, &["commit-tree", &tree, "-m", "copied"])
    }

    /// Add `files` (`(path in the ledger, bytes)`) to the ledger of the bare repository
    /// `remote` by a commit made in `clone` and pushed as anyone with push access could.
    pub fn push_to_ledger(&self, clone: &Path, files: &[(&str, &str)]) {
        self.git_in(
            clone,
            &[
                "fetch",
                "-q",
                "origin",
                "+refs/heads/guardctl/ledger:refs/forged/ledger",
            ],
        );
        let index = clone.join(".git/forged-index");
        let _ = std::fs::remove_file(&index);
        let with_index = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(clone)
                .env("GIT_INDEX_FILE", &index)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        for (path, bytes) in files {
            let tmp = clone.join(".git/forged-blob");
            std::fs::write(&tmp, bytes).unwrap();
            let blob = self.git_in(clone, &["hash-object", "-w", tmp.to_str().unwrap()]);
            with_index(&[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},{path}"),
            ]);
        }
        let tree = with_index(&["write-tree"]);
        let parent = self.git_in(clone, &["rev-parse", "refs/forged/ledger"]);
        let commit = self.git_in(clone, &["commit-tree", &tree, "-p", &parent, "-m", "forged"]);
        self.git_in(
            clone,
            &[
                "push",
                "-q",
                "origin",
                &format!("{commit}:refs/heads/guardctl/ledger"),
            ],
        );
    }

    /// `<ref> <oid>` for every branch the remote holds now, sorted, but guardctl's own
    /// ledger and backups (`refs/heads/guardctl/ledger` and `…/backups`, which publishing
    /// and applying add to).
    pub fn remote_branches(&self) -> String {
        self.git_in(
            &self.origin(),
            &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"],
        )
        .lines()
        .filter(|l| {
            !l.starts_with("refs/heads/guardctl/ledger ") && !l.starts_with("refs/heads/guardctl/backups ")
        })
        .collect::<Vec<_>>()
        .join("\n")
    }
}

/// `standard_repo` with tags (dates are days before `NOW`):
/// - `v0.1` lightweight on main's first commit (400d)
/// - `v0.2` annotated (350d), `v0.3` annotated and SSH-signed by Alice (340d)
/// - `lost/1` annotated (320d) on a commit no branch reaches
/// - `rc/1` lightweight on main (its tip is 2d old)
pub fn tagged_repo() -> TestEnv {
    let env = standard_repo();
    let first = env.git(&["rev-list", "--max-parents=0", "main"]);
    env.git_at(400, &["tag", "v0.1", &first]);
    env.git_at(350, &["tag", "-a", "v0.2", "-m", "Release 0.2", &first]);
    let key = env.key("alice");
    env.git_at(
        340,
        &[
            "-c",
            "gpg.format=ssh",
            "-c",
            &format!("user.signingKey={}", key.display()),
            "tag",
            "-s",
            "v0.3",
            "-m",
            "Release 0.3",
            &first,
        ],
    );
    let lost = env.git_at(
        320,
        &[
            "commit-tree",
            "-p",
            &first,
            "-m",
            "on no branch",
            &format!("{first}^{{tree}}"),
        ],
    );
    env.git_at(320, &["tag", "-a", "lost/1", "-m", "Lost", &lost]);
    env.git(&["tag", "rc/1", "main"]);
    env
}

/// `git ARGS` in `repo` (no global config), its standard output as text; a repository that
/// is not a `TestEnv` (a copy) is read with this.
pub fn git_out(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every commit the backup refs keep: each plan's backup ref points at one commit whose
/// parents are the deleted tips.
pub fn backed_up(repo: &Path) -> std::collections::HashSet<String> {
    let git = |args: &[&str]| git_out(repo, args);
    let tips = git(&["for-each-ref", "--format=%(objectname)", "refs/guardctl/backup"]);
    let mut out = std::collections::HashSet::new();
    for t in tips.lines() {
        out.extend(
            git(&["log", "--no-walk", "--format=%P", t])
                .split_whitespace()
                .map(String::from),
        );
    }
    out
}

/// A copy of the standard repository names only its own directory: no file outside git's
/// objects mentions the template's (origin's URL, the worktree's links), and git agrees.
#[test]
fn a_copied_standard_repo_names_only_its_own_directory() {
    let env = standard_repo();
    let template = standard_template().to_string_lossy().into_owned();
    let mut files = Vec::new();
    collect_files(env.path(), &mut files);
    for f in files {
        if f.components().any(|c| c.as_os_str() == "objects") {
            continue;
        }
        let text = String::from_utf8_lossy(&fs::read(&f).unwrap()).into_owned();
        assert!(
            !text.contains(&template),
            "{} names the template: {text}",
            f.display()
        );
    }
    let origin = env.origin().to_string_lossy().into_owned();
    assert_eq!(env.git(&["remote", "get-url", "origin"]), origin);
    let wt = env.path().join("wt");
    assert!(env.git(&["worktree", "list"]).contains(&*wt.to_string_lossy()));
    assert_eq!(
        env.git_in(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "hotfix/wt"
    );
    assert_eq!(env.git_in(&wt, &["status", "--porcelain"]), "");
    assert_eq!(env.git(&["status", "--porcelain"]), "");
}

/// A tiny deterministic generator (no dependency needed for test randomness).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An ssh-agent of the test's own, listening on `socket` (in the foreground, `-D`: the test
/// kills and reaps the child), returned once its socket exists.
pub fn ssh_agent(socket: &Path) -> std::process::Child {
    let agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(socket)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ssh-agent");
    for _ in 0..200 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    agent
}

/// `n` merged branches `topic/NNN`, one commit each on main, a day apart, via fast-import.
pub fn many_branches(n: usize) -> TestEnv {
    let env = TestEnv::new();
    let mut stream = String::new();
    for i in 0..n {
        let when = NOW_UNIX - (n - i) as i64 * DAY;
        let msg = format!("Work item {i}");
        stream += &format!(
            "commit refs/heads/main\nmark :{m}\nauthor Dev{a} <dev{a}@example.com> {when} +0000\ncommitter Dev{a} <dev{a}@example.com> {when} +0000\ndata {len}\n{msg}\n",
            m = i + 1,
            a = i % 7,
            len = msg.len()
        );
        if i == 0 {
            stream += "from refs/heads/main^0\n";
        }
        stream += &format!(
            "M 644 inline file{i}.txt\ndata {}\n{i}\n\n",
            i.to_string().len() + 1
        );
        stream += &format!("reset refs/heads/topic/{i:03}\nfrom :{}\n\n", i + 1);
    }
    let mut child = Command::new("git")
        .current_dir(&env.repo)
        .args(["fast-import", "--quiet"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    env.git(&["reset", "-q", "--hard", "main"]);
    env
}
