//! The agent-shell fixture: one repository in which the lines of an agent's shell mean
//! something (what `rm -rf build`, `git checkout -- .` or `git stash drop` would destroy), and
//! a runner that feeds lines to `guardctl hook claude-code` there as tests/cli/hook.rs does
//! (the agent's key, the allowed-signers file that names it, the recorded payload), in
//! parallel threads. Used by `hook_corpus` (our own lines) and `hook_peers` (the peers').
//!
//! Not a model of what the hook decides: only of the state it decides on. Invariant: the hook
//! changes nothing it judges. Each worker thread has its own fixture; after every line the
//! worker checks the state it can see cheaply (refs, stash, status with ignored files, work
//! tree and home files) and, if the hook changed it, records that and builds a fresh fixture
//! so the next line is judged on the documented state.
//!
//! The state, by path (`repo/`, its bare remote `origin.git/`, `home/` as `HOME`):
//! - `main` (checked out): `.gitignore`, `README.md`, `file.txt`, `src/main.rs`,
//!   `src/lib.rs`, `docs/guide.md`, `dist/app.js` (built output that is tracked),
//!   `scripts/cleanup.sh`; tag `v1.0` (annotated) on it
//! - `dev`: one commit, merged into `main`; `feature`: two commits not in `main`; all three
//!   pushed to `origin` (upstreams set), with the tag
//! - git-ignored: `build/`, `target/`, `node_modules/`, `__pycache__/`, `*.log` (`app.log`)
//!   and `.env` (a secret: ignored, not regenerable)
//! - untracked, not ignored: `notes.txt`
//! - uncommitted modifications of `file.txt` and `README.md`; a staged change of `src/lib.rs`
//! - one stash entry (a change of `docs/guide.md`)
//! - `HOME`: `.bashrc`, `.gitconfig`, `Documents/notes.md`, `projects/other/README.md`;
//!   guardctl's plans go to `HOME/.local/share/guardctl/plans` (not state)

use crate::fixtures::TestEnv;
use crate::hook::{AGENT, payload};
use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A hook run that takes longer than this is killed and counted as an error (a deny).
const TIMEOUT: Duration = Duration::from_secs(60);

/// What the hook said about one line.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The exit status (0 allow, 2 deny; -1 killed or no status).
    pub code: i32,
    /// The last lines of stderr: the reason given.
    pub reason: String,
    /// The state the line's run changed, when it did (a bug in the hook).
    pub changed: Option<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.code == 0
    }
}

fn write(root: &Path, file: &str, content: &str) {
    let path = root.join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// A fresh fixture (about 40 git processes).
pub fn hook_fixture() -> TestEnv {
    let env = TestEnv::new();
    env.allow_signer(AGENT, "mallory");
    let origin = env.path().join("origin.git");
    env.git_in(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()],
    );
    env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    let repo = &env.repo;
    write(
        repo,
        ".gitignore",
        "build/\ntarget/\nnode_modules/\n__pycache__/\n*.log\n.env\n",
    );
    write(repo, "README.md", "# Fixture\n\nAn agent's repository.\n");
    write(repo, "file.txt", "one\ntwo\n");
    write(repo, "src/main.rs", "fn main() {\n    app::run();\n}\n");
    write(repo, "src/lib.rs", "pub fn run() {}\n");
    write(repo, "docs/guide.md", "# Guide\n");
    write(repo, "dist/app.js", "console.log('built');\n");
    write(repo, "scripts/cleanup.sh", "#!/bin/sh\nrm -rf build\n");
    env.git_at(350, &["add", "-A"]);
    env.git_at(350, &["commit", "-q", "-m", "The project"]);
    env.git_at(340, &["tag", "-a", "v1.0", "-m", "Release 1.0"]);
    env.branch("dev", "main", 1, "Bob", 200);
    env.merge("dev", 199);
    env.branch("feature", "main", 2, "Carol", 5);
    env.git(&["push", "-q", "-u", "origin", "main", "dev", "feature", "--tags"]);
    // Ignored: regenerable build output, and a secret that is not.
    write(repo, "build/out.o", "object\n");
    write(repo, "target/debug/app", "binary\n");
    write(repo, "node_modules/left-pad/index.js", "module.exports = 1;\n");
    write(repo, "__pycache__/x.cpython-312.pyc", "pyc\n");
    write(repo, "app.log", "log\n");
    write(repo, ".env", "API_TOKEN=secret\n");
    // A stash, then the work in progress: staged, modified, untracked.
    write(repo, "docs/guide.md", "# Guide\n\nStashed work.\n");
    env.git(&["stash", "push", "-q", "-m", "wip on the guide"]);
    write(
        repo,
        "src/lib.rs",
        "pub fn run() {\n    println!(\"staged\");\n}\n",
    );
    env.git(&["add", "src/lib.rs"]);
    write(repo, "file.txt", "one\ntwo\nthree (not committed)\n");
    write(repo, "README.md", "# Fixture\n\nEdited, not committed.\n");
    write(repo, "notes.txt", "the agent's own notes\n");
    let home = &env.home;
    write(home, ".bashrc", "export EDITOR=vi\n");
    write(home, ".gitconfig", "[user]\n\tname = Agent\n");
    write(home, "Documents/notes.md", "personal notes\n");
    write(home, "projects/other/README.md", "another project\n");
    // guardctl's own data directory (its plans): made now, so that making it is no change.
    fs::create_dir_all(home.join(".local/share/guardctl")).unwrap();
    env
}

/// What the hook must leave as it found it: refs, stash, index and work tree status (ignored
/// files included), and every file of the work tree and of `HOME` but guardctl's own data.
pub fn state(env: &TestEnv) -> String {
    let mut s = env.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    s += "\n--- status\n";
    s += &env.git(&[
        "status",
        "--porcelain=v2",
        "--branch",
        "--ignored",
        "--untracked-files=all",
    ]);
    s += "\n--- files\n";
    for (root, skip) in [(&env.repo, ".git"), (&env.home, ".local/share/guardctl")] {
        for (path, line) in crate::fixtures::file_tree(root) {
            if !path.starts_with(skip) {
                s += &format!("{} {line}\n", path.display());
            }
        }
    }
    s
}

/// Feed `line` to the hook in `env` as Claude Code would.
pub fn judge(env: &TestEnv, line: &str) -> Verdict {
    let mut c = env.command();
    // guardctl on the agent's PATH, as an installed one is: a line can name it by name.
    let bin = Path::new(env!("CARGO_BIN_EXE_guardctl")).parent().unwrap();
    c.env(
        "PATH",
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
    );
    c.arg("--key")
        .arg(env.key("mallory"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let input = payload(line, &env.repo);
    // The hook may decide before reading all of it: a closed pipe is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break -1;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let err = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let reason: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    let reason = if code == -1 {
        format!("killed after {}s", TIMEOUT.as_secs())
    } else {
        reason[..reason.len().min(6)].join(" / ")
    };
    Verdict {
        code,
        reason,
        changed: None,
    }
}

/// Judge every line of `lines` on `threads` workers, each with its own fixture; the verdicts in
/// the order of `lines`. A line whose run changed its fixture gets `changed` set, and the
/// worker builds a fresh fixture before its next line.
pub fn judge_all(lines: &[String], threads: usize) -> Vec<Verdict> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Verdict>>> = Mutex::new(vec![None; lines.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let mut env = hook_fixture();
                let mut before = state(&env);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(line) = lines.get(i) else { break };
                    let mut v = judge(&env, line);
                    let after = state(&env);
                    if after != before {
                        v.changed = Some(first_difference(&before, &after));
                        env = hook_fixture();
                        before = state(&env);
                    }
                    out.lock().unwrap()[i] = Some(v);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|v| v.unwrap())
        .collect()
}

fn first_difference(before: &str, after: &str) -> String {
    let b: std::collections::BTreeSet<&str> = before.lines().collect();
    let a: std::collections::BTreeSet<&str> = after.lines().collect();
    let gone: Vec<&&str> = b.difference(&a).take(3).collect();
    let new: Vec<&&str> = a.difference(&b).take(3).collect();
    format!("before {gone:?}, after {new:?}")
}

/// The worker count: the machine's cores (the hook is one short process per line).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
