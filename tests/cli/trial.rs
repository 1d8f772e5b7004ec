//! The effect trial (`guardctl::trial`): real lines in real bash, on real repositories, in
//! the real overlay sandbox, judged by what they changed. The library runs the built
//! `guardctl` as the sandbox's launcher (this harness cannot dispatch it: the test hook
//! `sandbox::use_launcher_for_tests`). A kernel that cannot build the trial fails these
//! tests: nothing is skipped.
//!
//! Repositories live under the target directory, not `/tmp` (the trial exempts `/tmp`).
//! Trials run one at a time (a lock), so that "nothing is left in /dev/shm" is this
//! module's own claim (trials of other runs on the machine come and go: what stays is a leak).

use guardctl::trial::{ChangeKind, Effect, Outcome, Request};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct Fx {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@x"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository with two commits on `main`, a branch `x` (a commit of its own), tracked
/// `README`, `a.txt`, `tracked_clean.txt`, a `.gitignore` of `target/` and `.env`, and a
/// home directory with an ssh key.
fn fixture() -> Fx {
    let dir = tempfile::Builder::new()
        .prefix("trial-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let repo = std::fs::canonicalize(dir.path()).unwrap().join("repo");
    let home = std::fs::canonicalize(dir.path()).unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "readme\n").unwrap();
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    std::fs::write(repo.join("tracked_clean.txt"), "a line\n").unwrap();
    std::fs::write(repo.join(".gitignore"), "target/\n.env\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    std::fs::write(repo.join("README"), "readme, second\n").unwrap();
    git(&repo, &["commit", "-qam", "two"]);
    git(&repo, &["branch", "x", "HEAD~1"]);
    git(&repo, &["checkout", "-q", "x"]);
    std::fs::write(repo.join("x.txt"), "only on x\n").unwrap();
    git(&repo, &["add", "x.txt"]);
    git(&repo, &["commit", "-qm", "x"]);
    git(&repo, &["checkout", "-q", "main"]);
    Fx {
        _dir: dir,
        repo,
        home,
    }
}

fn request(fx: &Fx, line: &str) -> Request {
    let env: Vec<(String, OsString)> = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), fx.home.clone().into()),
        ("LANG".into(), "C".into()),
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
        ("GIT_AUTHOR_NAME".into(), "t".into()),
        ("GIT_AUTHOR_EMAIL".into(), "t@x".into()),
        ("GIT_COMMITTER_NAME".into(), "t".into()),
        ("GIT_COMMITTER_EMAIL".into(), "t@x".into()),
    ];
    Request {
        line: line.into(),
        cwd: fx.repo.clone(),
        env,
        timeout: Duration::from_secs(30),
        regenerable: guardctl::trial::DEFAULT_REGENERABLE.map(String::from).to_vec(),
        gate: Vec::new(),
        network: false,
    }
}

fn leftovers() -> Vec<PathBuf> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("guardctl-trial-")
        })
        .collect()
}

/// Run `req`, check the host's repository is untouched and nothing is left in /dev/shm.
fn try_line(fx: &Fx, req: &Request) -> Effect {
    guardctl::sandbox::use_launcher_for_tests(env!("CARGO_BIN_EXE_guardctl").into());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = git(&fx.repo, &["for-each-ref"]);
    let status_before = git(&fx.repo, &["status", "--porcelain", "--ignored"]);
    let already = leftovers();
    let effect = guardctl::trial::run(req).unwrap();
    assert_eq!(
        git(&fx.repo, &["for-each-ref"]),
        before,
        "the host's refs changed"
    );
    assert_eq!(
        git(&fx.repo, &["status", "--porcelain", "--ignored"]),
        status_before,
        "the host's work tree changed"
    );
    assert_no_leftovers(&already);
    effect
}

/// Nothing of a trial stays in /dev/shm (`already`: what was there before it). Other trials
/// on this machine (other test runs) come and go there; this one's uppers must be gone, so
/// whatever new stays for long is a leak.
fn assert_no_leftovers(already: &[PathBuf]) {
    let new = || -> Vec<PathBuf> { leftovers().into_iter().filter(|p| !already.contains(p)).collect() };
    let start = std::time::Instant::now();
    while !new().is_empty() && start.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(new(), Vec::<PathBuf>::new(), "the trial left its uppers behind");
}

fn run(fx: &Fx, line: &str) -> Effect {
    try_line(fx, &request(fx, line))
}

fn manifest_has(e: &Effect, prefix: &str) -> bool {
    e.manifest().lines().any(|l| l.starts_with(prefix))
}

#[test]
fn a_line_that_only_reads_and_creates_destroys_nothing() {
    let fx = fixture();
    let e = run(&fx, "ls; git status; echo hi > new.txt");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(e.destroys_nothing(), "{}", e.manifest());
    assert_eq!(e.manifest(), "");
    assert!(e.created >= 1, "{e:?}");
}

#[test]
fn rm_of_a_tracked_file_deletes_it() {
    let fx = fixture();
    let e = run(&fx, "rm README");
    assert_eq!(e.destroyed.len(), 1, "{}", e.manifest());
    assert_eq!(e.destroyed[0].what, ChangeKind::Delete);
    // sha256 of "readme, second\n"
    assert!(manifest_has(&e, "delete file README sha256:"), "{}", e.manifest());
}

#[test]
fn a_deletion_by_another_program_is_seen_too() {
    let fx = fixture();
    let e = run(&fx, "python3 -c \"import os; os.remove('a.txt')\"");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(manifest_has(&e, "delete file a.txt sha256:"), "{}", e.manifest());
}

#[test]
fn an_alias_defined_on_the_same_line_deletes_a_branch_and_changes_the_gate() {
    let fx = fixture();
    let x = git(&fx.repo, &["rev-parse", "x"]);
    let e = run(&fx, "git config alias.zap 'branch -D'; git zap x");
    assert!(
        e.manifest()
            .contains(&format!("delete branch refs/heads/x {x}\n")),
        "{}",
        e.manifest()
    );
    assert!(
        e.manifest().contains("gate: change git config alias.zap\n"),
        "{}",
        e.manifest()
    );
}

#[test]
fn a_stash_drop_drops_reflog_entries() {
    let fx = fixture();
    std::fs::write(fx.repo.join("a.txt"), "dirty\n").unwrap();
    git(&fx.repo, &["stash", "-q"]);
    let e = run(&fx, "git stash drop");
    assert!(
        manifest_has(&e, "drop reflog refs/stash 1 entry"),
        "{}",
        e.manifest()
    );
}

#[test]
fn a_deleted_ref_and_a_pruning_gc_delete_the_branch_and_its_objects() {
    let fx = fixture();
    let e = run(&fx, "git update-ref -d refs/heads/x && git gc -q --prune=now");
    assert!(
        manifest_has(&e, "delete branch refs/heads/x "),
        "{}",
        e.manifest()
    );
    // HEAD's reflog still reaches x's commit: gc keeps it, in the new pack.
    assert_eq!(e.manifest().lines().count(), 1, "{}", e.manifest());
    let e = run(
        &fx,
        "git update-ref -d refs/heads/x && git reflog expire --expire=now --all && git gc -q --prune=now",
    );
    assert!(
        manifest_has(&e, "delete branch refs/heads/x "),
        "{}",
        e.manifest()
    );
    assert!(manifest_has(&e, "drop reflog HEAD "), "{}", e.manifest());
    // x's commit, its tree and x.txt's blob.
    assert!(e.manifest().contains("delete objects 3\n"), "{}", e.manifest());
}

#[test]
fn checkout_over_a_dirty_tree_overwrites_and_over_a_clean_one_does_not() {
    let fx = fixture();
    let e = run(&fx, "git checkout -- .");
    assert!(e.destroys_nothing(), "{}", e.manifest());
    std::fs::write(fx.repo.join("a.txt"), "uncommitted work\n").unwrap();
    let e = run(&fx, "git checkout -- .");
    assert!(
        manifest_has(&e, "overwrite file a.txt sha256:"),
        "{}",
        e.manifest()
    );
    assert_eq!(e.destroyed.len(), 1, "{}", e.manifest());
}

#[test]
fn ignored_regenerable_output_is_exempt_and_an_ignored_env_file_is_not() {
    let fx = fixture();
    std::fs::create_dir_all(fx.repo.join("target/debug")).unwrap();
    for i in 0..50 {
        std::fs::write(fx.repo.join(format!("target/debug/{i}.o")), "obj").unwrap();
    }
    std::fs::write(fx.repo.join(".env"), "SECRET=1\n").unwrap();
    let e = run(&fx, "rm -rf target/");
    assert!(e.destroys_nothing(), "{}", e.manifest());
    assert!(e.exempt >= 1, "{e:?}");
    let e = run(&fx, "rm -rf .env");
    assert!(manifest_has(&e, "delete file .env sha256:"), "{}", e.manifest());
}

#[test]
fn temporary_files_are_exempt() {
    let fx = fixture();
    let tmp = tempfile::Builder::new()
        .prefix("guardctl-trial-test-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::write(tmp.path().join("f"), "x").unwrap();
    let e = run(&fx, &format!("rm -rf {}", tmp.path().display()));
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(e.destroys_nothing(), "{}", e.manifest());
    assert!(e.exempt >= 1, "{e:?}");
    assert!(tmp.path().join("f").exists());
}

#[test]
fn truncating_an_untracked_file_overwrites_it_and_sed_on_a_clean_tracked_file_does_not() {
    let fx = fixture();
    std::fs::write(fx.repo.join("untracked.txt"), "notes\n").unwrap();
    let e = run(&fx, "> untracked.txt");
    assert!(
        manifest_has(&e, "overwrite file untracked.txt sha256:"),
        "{}",
        e.manifest()
    );
    let e = run(&fx, "sed -i s/a/b/ tracked_clean.txt");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(e.destroys_nothing(), "{}", e.manifest());
}

#[test]
fn a_hard_reset_rewrites_the_branch_and_overwrites_uncommitted_work() {
    let fx = fixture();
    std::fs::write(fx.repo.join("a.txt"), "uncommitted\n").unwrap();
    let e = run(&fx, "git reset -q --hard HEAD~1");
    assert!(
        manifest_has(&e, "rewrite branch refs/heads/main "),
        "{}",
        e.manifest()
    );
    assert!(manifest_has(&e, "overwrite file a.txt "), "{}", e.manifest());
}

#[test]
fn a_forced_local_fetch_rewrites_a_branch() {
    let fx = fixture();
    git(&fx.repo, &["branch", "b", "main"]);
    let e = run(&fx, "git fetch -q . +x:b");
    assert!(
        manifest_has(&e, "rewrite branch refs/heads/b "),
        "{}",
        e.manifest()
    );
}

#[test]
fn writing_the_agent_settings_changes_the_gate() {
    let fx = fixture();
    let e = run(&fx, "mkdir -p .claude && echo '{}' > .claude/settings.json");
    assert_eq!(e.manifest(), "gate: create .claude/settings.json\n");
    assert!(!e.destroys_nothing());
}

#[test]
fn a_line_past_its_limit_is_killed_with_everything_it_started() {
    let fx = fixture();
    let mut req = request(&fx, "sleep 100.4242 & sleep 100.4243");
    req.timeout = Duration::from_secs(1);
    let start = std::time::Instant::now();
    let e = try_line(&fx, &req);
    assert_eq!(e.outcome, Outcome::TimedOut);
    assert!(start.elapsed() < Duration::from_secs(20));
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("100.424"))
        .collect();
    assert!(alive.is_empty(), "left running: {alive:?}");
}

#[test]
fn the_line_cannot_reach_a_unix_socket() {
    let fx = fixture();
    let socket = fx.repo.join("agent.sock");
    let mut server = Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); \
             print('ready', flush=True); c,_=s.accept(); print('CONNECTED', flush=True)",
        ])
        .arg(&socket)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line, "ready\n");
    let e = run(
        &fx,
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('agent.sock')\"",
    );
    let _ = server.kill();
    let _ = server.wait();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(!rest.contains("CONNECTED"), "the line reached the socket");
    assert_ne!(e.outcome, Outcome::Finished { status: 0 });
    assert!(e.stderr_tail.contains("Permission denied"), "{}", e.stderr_tail);
    assert_eq!(
        e.blocked.as_deref(),
        Some("a UNIX socket (the trial allows none)"),
        "{e:?}"
    );
}

#[test]
fn the_users_keys_are_hidden() {
    let fx = fixture();
    let e = run(&fx, "cat ~/.ssh/id_ed25519");
    assert_ne!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(!e.stderr_tail.contains("PRIVATE"));
    let e = run(&fx, "cat ~/.ssh/id_ed25519 | grep -c PRIVATE");
    assert_eq!(e.outcome, Outcome::Finished { status: 1 }, "{}", e.stderr_tail);
}

#[test]
fn the_manifest_is_stable() {
    let fx = fixture();
    let line = "rm README a.txt; git branch -D x";
    let a = run(&fx, line);
    let b = run(&fx, line);
    assert_eq!(a.manifest(), b.manifest());
    let manifest = a.manifest();
    let lines: Vec<&str> = manifest.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert_eq!(lines.len(), 3, "{}", a.manifest());
}

#[test]
fn a_stash_keeps_what_it_takes_and_a_hard_reset_of_a_staged_change_loses_it() {
    let fx = fixture();
    std::fs::write(fx.repo.join("a.txt"), "staged work\n").unwrap();
    git(&fx.repo, &["add", "a.txt"]);
    std::fs::write(fx.repo.join("README"), "unstaged work\n").unwrap();
    let e = run(&fx, "git stash -q");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(e.destroys_nothing(), "{}", e.manifest());
    let e = run(&fx, "git reset -q --hard");
    assert!(
        manifest_has(&e, "discard staged change a.txt "),
        "{}",
        e.manifest()
    );
    assert!(
        manifest_has(&e, "overwrite file README sha256:"),
        "{}",
        e.manifest()
    );
}

#[test]
fn a_moved_file_is_not_destroyed() {
    let fx = fixture();
    std::fs::write(fx.repo.join("untracked.txt"), "notes\n").unwrap();
    let e = run(&fx, "mkdir -p keep && mv untracked.txt keep/notes.txt");
    assert!(e.destroys_nothing(), "{}", e.manifest());
    assert_eq!(e.moved, 1, "{e:?}");
    let e = run(&fx, "mv untracked.txt /tmp/");
    assert!(manifest_has(&e, "delete file untracked.txt "), "{}", e.manifest());
}

#[test]
fn the_users_agent_settings_and_the_callers_gate_paths_are_the_gate() {
    let fx = fixture();
    let guard = fx.home.join("bin/guardctl");
    std::fs::create_dir_all(guard.parent().unwrap()).unwrap();
    std::fs::write(&guard, "binary").unwrap();
    let mut req = request(
        &fx,
        &format!(
            "mkdir -p ~/.claude && echo '{{}}' > ~/.claude/settings.local.json; chmod +x {}",
            guard.display()
        ),
    );
    req.gate = vec![guard.clone()];
    let e = try_line(&fx, &req);
    assert_eq!(
        e.manifest(),
        format!(
            "gate: chmod {}\ngate: create {}\n",
            guard.display(),
            fx.home.join(".claude/settings.local.json").display()
        )
    );
}

#[test]
fn the_network_is_off_and_the_line_says_it_needed_it() {
    let fx = fixture();
    let e = run(
        &fx,
        "python3 -c \"import socket; socket.create_connection(('192.0.2.1', 80), timeout=3)\"",
    );
    assert_ne!(e.outcome, Outcome::Finished { status: 0 });
    assert!(
        e.blocked.as_deref().unwrap_or("").starts_with("the network"),
        "{e:?}"
    );
}

#[test]
fn a_reftable_repository_is_refused_before_anything_runs() {
    let fx = fixture();
    let rt = fx.repo.parent().unwrap().join("reftable");
    std::fs::create_dir_all(&rt).unwrap();
    git(&rt, &["init", "-q", "--ref-format=reftable"]);
    let mut req = request(&fx, "touch ran");
    req.cwd = rt.clone();
    guardctl::sandbox::use_launcher_for_tests(env!("CARGO_BIN_EXE_guardctl").into());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let already = leftovers();
    let e = guardctl::trial::run(&req).unwrap_err();
    assert!(e.message.contains("reftable"), "{e:?}");
    assert!(!rt.join("ran").exists());
    assert_no_leftovers(&already);
}

#[test]
fn a_relative_working_directory_is_refused() {
    let fx = fixture();
    let mut req = request(&fx, "true");
    req.cwd = PathBuf::from("repo");
    assert!(guardctl::trial::run(&req).is_err());
}

#[test]
fn a_global_git_alias_is_a_gate_change_and_stdin_is_empty() {
    let fx = fixture();
    std::fs::write(fx.home.join(".gitconfig"), "[user]\n\tname = t\n").unwrap();
    let e = run(&fx, "cat; git config --global alias.zap 'branch -D'");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert_eq!(
        e.manifest(),
        format!("gate: change {}\n", fx.home.join(".gitconfig").display())
    );
}

#[test]
fn a_hook_is_a_gate_change_and_a_moved_tag_is_destroyed() {
    let fx = fixture();
    git(&fx.repo, &["tag", "v1", "HEAD~1"]);
    let old = git(&fx.repo, &["rev-parse", "HEAD~1"]);
    let new = git(&fx.repo, &["rev-parse", "HEAD"]);
    let e = run(
        &fx,
        "printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; git tag -f v1 HEAD",
    );
    assert_eq!(
        e.manifest(),
        format!("gate: install git hook pre-commit\nmove tag refs/tags/v1 {old} -> {new}\n")
    );
}

#[test]
fn a_line_sees_its_own_proc_and_stdio_links_and_acts_as_for_real() {
    let fx = fixture();
    // The inner bash sources its stdin (through /dev/stdin -> /proc/self/fd/0): for real
    // it deletes README, so the trial must too.
    let e = run(&fx, "BASH_ENV=/dev/stdin bash -c true <<< 'rm -f README'");
    assert!(manifest_has(&e, "delete file README "), "{e:?}");
    let e = run(
        &fx,
        "grep -q '^Pid:' /proc/self/status && ls /dev/fd/ >/dev/null && echo x > /dev/stderr",
    );
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
}

#[test]
fn the_lines_proc_shows_only_its_own_processes() {
    let fx = fixture();
    let host = std::process::id();
    // Its first process is bash, with the line's own environment; a host process (this
    // test) is not there; only a few processes are.
    let line = format!(
        "tr '\\0' '\\n' < /proc/1/environ | grep -qx LANG=C || exit 11; \
         test -e /proc/{host} && exit 12; \
         tr '\\0' ' ' < /proc/1/cmdline | grep -q '^bash -c' || exit 13; \
         n=$(ls /proc | grep -c '^[0-9]*$'); test \"$n\" -le 5 || exit 14"
    );
    let e = run(&fx, &line);
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert!(e.destroys_nothing(), "{}", e.manifest());
    // /proc cannot be written.
    let e = run(&fx, "echo 1 > /proc/sys/kernel/domainname");
    assert_ne!(e.outcome, Outcome::Finished { status: 0 });
}

#[test]
fn a_dns_lookup_is_the_network_however_the_line_ends() {
    let fx = fixture();
    let e = run(&fx, "curl -s http://example.com || true");
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert_eq!(
        e.blocked.as_deref(),
        Some("the network (it looked up example.com)"),
        "{e:?}"
    );
    assert!(e.incomplete().is_some());
    let e = run(&fx, "getent hosts example.com");
    assert!(
        e.blocked.as_deref().unwrap_or("").contains("example.com"),
        "{e:?}"
    );
    // The first names, then how many more.
    let e = run(
        &fx,
        "getent hosts a.example b.example c.example d.example e.example; true",
    );
    assert_eq!(
        e.blocked.as_deref(),
        Some("the network (it looked up a.example, b.example, c.example and 2 more)"),
        "{e:?}"
    );
    // A query sent by hand; its name's odd bytes escaped.
    let e = run(
        &fx,
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(\
         b'\\x12\\x34\\x01\\x00\\x00\\x01' + bytes(6) + b'\\x04a\\x1b[b\\x02io\\x00\\x00\\x01\\x00\\x01', \
         ('127.0.0.1', 53))\"",
    );
    assert_eq!(
        e.blocked.as_deref(),
        Some("the network (it looked up a\\x1b\\x5bb.io)"),
        "{e:?}"
    );
    let e = run(&fx, "cat README > /dev/null; git status -s");
    assert_eq!(e.blocked, None, "{e:?}");
}

#[test]
fn a_connection_to_an_address_that_hides_its_failure_is_not_seen() {
    let fx = fixture();
    // A known gap: a connection to an address (no DNS query) fails in the trial (Landlock
    // refuses TCP connections; there is no route) and nothing records the attempt; a line
    // that hides the failure is therefore not `blocked`. Only its stderr can say it (see
    // `the_network_is_off_and_the_line_says_it_needed_it`).
    let e = run(
        &fx,
        "python3 -c \"import socket; socket.create_connection(('203.0.113.1', 80), 1)\" || true",
    );
    assert_eq!(e.outcome, Outcome::Finished { status: 0 }, "{}", e.stderr_tail);
    assert_eq!(e.blocked, None, "{e:?}");
}

#[test]
fn with_the_network_allowed_a_lookup_is_not_blocked() {
    let fx = fixture();
    let mut req = request(&fx, "getent hosts localhost");
    req.network = true;
    let e = try_line(&fx, &req);
    assert_eq!(e.blocked, None, "{e:?}");
}
