//! The `.lock` files a killed git leaves, and when `recover` may remove them.
//!
//! A SIGKILL of an apply's whole process group (a CI timeout, a closed terminal) stops git
//! between locking a ref and committing or unlocking it: `refs/heads/<name>.lock` and
//! `packed-refs.lock` stay, and every later git command on those refs fails until a person
//! deletes them. git never removes another process's lock, because it cannot tell a dead
//! process's from a live one's. guardctl can, for the locks of the one git it started: it
//! records that git's process id and the refs it hands it (`git.pid`, written before git
//! sees a command), and removes a lock only when all of these hold:
//! - it is `packed-refs.lock` or the lock of a ref that git was given;
//! - it was made after that git started (its mtime is not older than `git.pid`'s);
//! - that git is no longer running (`wait_for_orphaned_git` came first);
//! - no git process works in this repository now (`/proc`: any `git` whose working
//!   directory is in the work tree or the git dir), so no live lock is taken away.
//!
//! Anything else (a lock older than our git, a git still running, no `/proc`) is reported
//! and left, as before. `git.pid` is a state file, so input: its ref names are checked as
//! ref names before any path is made of them.

use super::Executor;
use crate::error::{Error, Kind, Result};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The file recording the git a transaction runs in.
pub(super) const GIT_PID: &str = "git.pid";

/// What `git.pid` says: the process id on its first line, then one ref name per line.
pub(super) fn record(pid: u32, refs: &[&str]) -> Vec<u8> {
    let mut out = pid.to_string();
    for r in refs {
        out.push('\n');
        out.push_str(r);
    }
    out.into_bytes()
}

/// The ref names `git.pid` lists (after its first line), keeping only valid ones.
fn recorded_refs(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .skip(1)
        .filter(|r| r.starts_with("refs/") && crate::repo::is_valid_refname(r))
        .map(String::from)
        .collect()
}

impl Executor<'_> {
    /// Remove the locks the git of plan `id`'s transaction left when it was killed (see the
    /// module's rules), also of `refs` (the before-image's, for a `git.pid` of an older
    /// version, which listed none). Returns how many it removed. Call after
    /// `wait_for_orphaned_git`.
    pub(super) fn clear_abandoned_locks(&self, id: &str, refs: &[String]) -> Result<usize> {
        let common = self.repo.common_dir();
        let pid_file = self.store.plan_dir(id).join(GIT_PID);
        let mut names = refs.to_vec();
        let started = match self.store.read_file(id, GIT_PID)? {
            Some(bytes) => {
                names.extend(recorded_refs(&bytes));
                std::fs::symlink_metadata(&pid_file)
                    .and_then(|m| m.modified())
                    .ok()
            }
            None => None,
        };
        let mut candidates = vec![common.join("packed-refs.lock")];
        candidates.extend(
            names
                .iter()
                .filter(|r| crate::repo::is_valid_refname(r))
                .map(|r| common.join(format!("{r}.lock"))),
        );
        candidates.sort();
        candidates.dedup();
        let left: Vec<(PathBuf, Option<SystemTime>)> = candidates
            .into_iter()
            .filter_map(|p| {
                let meta = std::fs::symlink_metadata(&p).ok()?;
                Some((p, meta.modified().ok().filter(|_| meta.is_file())))
            })
            .collect();
        if left.is_empty() {
            return Ok(0);
        }
        let stale = |at: &Option<SystemTime>| matches!((at, started), (Some(at), Some(s)) if *at >= s);
        if let Some((lock, _)) = left.iter().find(|(_, at)| !stale(at)) {
            return Err(held(
                lock,
                "it is older than the git guardctl started, so not its own",
            ));
        }
        let mut here: Vec<PathBuf> = self.repo.work_tree().into_iter().collect();
        here.push(common.to_path_buf());
        match live_git_in(&here) {
            Some(Some(pid)) => {
                let why = format!("a git process (pid {pid}) is working in this repository");
                return Err(held(&left[0].0, &why));
            }
            Some(None) => {}
            None => {
                return Err(held(
                    &left[0].0,
                    "this system has no /proc to tell whether git runs",
                ));
            }
        }
        let paths: Vec<PathBuf> = left.into_iter().map(|(p, _)| p).collect();
        self.repo.remove_abandoned_locks(&paths)?;
        Ok(paths.len())
    }
}

fn held(lock: &Path, why: &str) -> Error {
    Error::new(
        Kind::NeedsRecovery,
        format!("a lock file blocks recovery: {} ({why})", lock.display()),
    )
    .with_hint("make sure no git process is running, remove that file by hand, then run `guardctl recover`")
}

/// A running git whose working directory is inside one of `dirs`: `Some(Some(pid))`;
/// `Some(None)` when there is none; `None` when `/proc` cannot tell.
fn live_git_in(dirs: &[PathBuf]) -> Option<Option<u32>> {
    let dirs: Vec<PathBuf> = dirs.iter().filter_map(|d| d.canonicalize().ok()).collect();
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let comm = comm.trim_end();
        if comm != "git" && !comm.starts_with("git-") {
            continue;
        }
        // A zombie (a killed git nobody reaped yet) holds nothing; a process whose working
        // directory cannot be read is another user's, which cannot write this repository.
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        if !zombie && dirs.iter().any(|d| cwd.starts_with(d)) {
            return Some(Some(pid));
        }
    }
    Some(None)
}
