//! The `.lock` files a killed guardctl's git left behind, and when they may be removed.
//!
//! A SIGKILL of guardctl's whole process group (a CI timeout, a closed terminal) stops its git
//! children wherever they are: between locking a ref and committing it (`refs/…/<name>.lock`,
//! `packed-refs.lock`), or in the middle of a config rewrite (`config.lock`, which guardctl
//! also writes itself). Every later git command on those refs or that config then fails until
//! a person deletes the file, because git cannot tell a dead process's lock from a live one's.
//!
//! guardctl can, for the locks made while it held its own repository lock: every mutation
//! happens under that lock ([`super::RepoMut`]), which writes the marker `mutating` (in
//! guardctl's state directory) when it is taken and removes it when it is released. Finding
//! the marker on taking the lock means the last holder died holding it (the `flock` is
//! released with the process). Then a lock file is that holder's git's, and stale, when:
//! - it is `packed-refs.lock`, `config.lock` or a `*.lock` under `refs/`, a regular file;
//! - it was made after the marker was written (its mtime is not older);
//! - no git process may be working in this repository now (`/proc`): none whose working
//!   directory, `--git-dir`/`-C` arguments or `GIT_DIR`/`GIT_COMMON_DIR`/`GIT_WORK_TREE` lie
//!   in the git dir, the main work tree or a linked worktree, or lead (as git finds a
//!   repository, through `.git` files and `commondir`) to this one, and none whose working
//!   directory or environment cannot be read (another user's, in a shared repository). One
//!   still running (an orphan finishing its work) is waited for, up to [`WAIT`];
//! - it is still the same file when it is removed (device, inode and mtime as when checked).
//!
//! What `/proc` cannot show is not ruled out: a git in another PID namespace (a container
//! sharing the repository's directory), or a program writing git's locks that is not git.
//! `.git/guardctl` is anyone's with write access to `.git`: the marker is created anew (never
//! written through a link; anything else in its place is removed), the walk starts only at a
//! `refs` that is a real directory and follows no link below it.
//!
//! A lock older than the marker is someone else's and is left, as is every lock when no git
//! process can be ruled out; the marker then stays as it was, so a later run can still
//! clear what this one could not.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The marker's name, beside guardctl's lock file.
pub(super) const MARKER: &str = "mutating";

/// How long to wait for a git process still working in the repository.
const WAIT: Duration = Duration::from_secs(5);

/// What clearing did.
#[derive(Debug, Default)]
pub struct Cleared {
    /// The lock files removed.
    pub removed: Vec<PathBuf>,
    /// Why stale-looking lock files were left, if they were.
    pub left: Option<String>,
}

/// On taking guardctl's lock: clear what a holder that died left (its marker at `marker`, a
/// regular file, says since when), then write this holder's marker. Anything else at
/// `marker` (a link, a directory: not guardctl's) is removed, and the marker is created anew,
/// never written through a link. Returns whether this holder's marker was written (not when
/// locks were left: the dead holder's marker stays for a later holder) and what was cleared.
pub(super) fn take_over(marker: &Path, common: &Path, work_tree: Option<&Path>) -> Result<(bool, Cleared)> {
    let found = std::fs::symlink_metadata(marker).ok();
    let cleared = match found
        .as_ref()
        .filter(|m| m.is_file())
        .map(std::fs::Metadata::modified)
    {
        Some(Ok(since)) => clear(common, work_tree, since),
        _ => Cleared::default(),
    };
    if cleared.left.is_some() {
        return Ok((false, cleared));
    }
    if let Some(m) = &found {
        let removed = match m.is_dir() {
            true => std::fs::remove_dir(marker),
            false => std::fs::remove_file(marker),
        };
        removed.map_err(Error::io("remove", marker))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(marker)
        .map_err(Error::io("create", marker))?;
    std::io::Write::write_all(&mut file, std::process::id().to_string().as_bytes())
        .map_err(Error::io("write", marker))?;
    Ok((true, cleared))
}

/// Remove the lock files made since `since` under `common` (the common git dir), as the
/// module's rules allow; `work_tree` is where else a git working here would run.
pub(super) fn clear(common: &Path, work_tree: Option<&Path>, since: SystemTime) -> Cleared {
    use std::os::unix::fs::MetadataExt;
    let mut found = Vec::new();
    for name in ["packed-refs.lock", "config.lock"] {
        found.push(common.join(name));
    }
    // The walk follows no link, from its root on: a `refs` that is not a directory of the
    // repository's own (a link to elsewhere) is not walked at all.
    let refs = common.join("refs");
    if std::fs::symlink_metadata(&refs).is_ok_and(|m| m.is_dir()) {
        under(&refs, &mut found);
    }
    let identity = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| Some((m.dev(), m.ino(), m.modified().ok()?)))
    };
    let stale: Vec<(PathBuf, (u64, u64, SystemTime))> = found
        .into_iter()
        .filter_map(|p| identity(&p).map(|id| (p, id)))
        .filter(|(_, (_, _, at))| *at >= since)
        .collect();
    if stale.is_empty() {
        return Cleared::default();
    }
    let here = repository_dirs(common, work_tree);
    let started = std::time::Instant::now();
    loop {
        match live_git_in(&here) {
            None => {
                return Cleared {
                    removed: Vec::new(),
                    left: Some("this system has no /proc to tell whether a git process runs".into()),
                };
            }
            Some(None) => break,
            Some(Some(pid)) if started.elapsed() >= WAIT => {
                return Cleared {
                    removed: Vec::new(),
                    left: Some(format!("a git process (pid {pid}) is working in this repository")),
                };
            }
            Some(Some(_)) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let mut cleared = Cleared::default();
    for (path, seen) in stale {
        if identity(&path) != Some(seen) {
            cleared.left = Some(format!("{} changed while it was checked", path.display()));
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => cleared.removed.push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => cleared.left = Some(format!("cannot remove {}: {e}", path.display())),
        }
    }
    cleared
}

/// Every `*.lock` file under `dir`, not following symbolic links.
fn under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            under(&path, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "lock") {
            out.push(path);
        }
    }
}

/// Where a git working in this repository may be: the common git dir, the work tree this
/// run was given, the main work tree (beside a common dir named `.git`) and every linked
/// worktree (`worktrees/*/gitdir` names its `.git` file).
fn repository_dirs(common: &Path, work_tree: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![common.to_path_buf()];
    dirs.extend(work_tree.map(Path::to_path_buf));
    if common.file_name().is_some_and(|n| n == ".git") {
        dirs.extend(common.parent().map(Path::to_path_buf));
    }
    if let Ok(linked) = std::fs::read_dir(common.join("worktrees")) {
        for entry in linked.flatten() {
            if let Ok(gitdir) = std::fs::read_to_string(entry.path().join("gitdir")) {
                dirs.extend(Path::new(gitdir.trim_end()).parent().map(Path::to_path_buf));
            }
        }
    }
    dirs.iter().filter_map(|d| d.canonicalize().ok()).collect()
}

/// A running git that may be working in `dirs`: `Some(Some(pid))`; `Some(None)` when there
/// is none; `None` when `/proc` cannot tell.
fn live_git_in(dirs: &[PathBuf]) -> Option<Option<u32>> {
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let proc = entry.path();
        let Ok(comm) = std::fs::read_to_string(proc.join("comm")) else {
            continue;
        };
        let comm = comm.trim_end();
        if comm != "git" && !comm.starts_with("git-") {
            continue;
        }
        // A zombie (a killed git nobody reaped yet) holds nothing.
        let zombie = std::fs::read_to_string(proc.join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if zombie {
            continue;
        }
        if may_work_in(&proc, dirs) {
            return Some(Some(pid));
        }
    }
    Some(None)
}

/// The common git dir of the repository git would find from `dir`: the first `.git`
/// directory, or `.git` file's `gitdir:`, walking up, through a linked worktree's
/// `commondir`.
fn repository_of(dir: &Path) -> Option<PathBuf> {
    for at in dir.ancestors() {
        let dotgit = at.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dotgit) else {
            continue;
        };
        let gitdir = if meta.is_file() {
            let text = std::fs::read_to_string(&dotgit).ok()?;
            at.join(text.strip_prefix("gitdir:")?.trim())
        } else {
            dotgit
        };
        let gitdir = gitdir.canonicalize().ok()?;
        return match std::fs::read_to_string(gitdir.join("commondir")) {
            Ok(common) => gitdir.join(common.trim()).canonicalize().ok(),
            Err(_) => Some(gitdir),
        };
    }
    None
}

/// Whether the git process at `proc` may be working in `dirs`: by its working directory, a
/// path among its arguments (`--git-dir=…`, `-C …`, relative to that directory) or its
/// `GIT_DIR`/`GIT_COMMON_DIR`/`GIT_WORK_TREE`. What cannot be read (another user's process)
/// may be.
fn may_work_in(proc: &Path, dirs: &[PathBuf]) -> bool {
    // `dirs[0]` is the common git dir: a path whose repository (as git finds it, walking up
    // to a `.git` directory or file) is this one counts too, wherever its work tree is (a
    // `--separate-git-dir` repository's main work tree is named nowhere in the git dir).
    let common = dirs.first();
    let inside = |p: &Path| {
        p.canonicalize().is_ok_and(|p| {
            dirs.iter().any(|d| p.starts_with(d))
                || common.is_some_and(|c| repository_of(&p).as_ref() == Some(c))
        })
    };
    let Ok(cwd) = std::fs::read_link(proc.join("cwd")) else {
        return true;
    };
    if inside(&cwd) {
        return true;
    }
    let (Ok(cmdline), Ok(environ)) = (
        std::fs::read(proc.join("cmdline")),
        std::fs::read(proc.join("environ")),
    ) else {
        return true;
    };
    let arg_paths = cmdline.split(|b| *b == 0).map(|a| {
        let a = String::from_utf8_lossy(a);
        match a.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => value.to_string(),
            _ => a.into_owned(),
        }
    });
    let env_paths = environ.split(|b| *b == 0).filter_map(|v| {
        let v = String::from_utf8_lossy(v);
        ["GIT_DIR=", "GIT_COMMON_DIR=", "GIT_WORK_TREE="]
            .iter()
            .find_map(|k| v.strip_prefix(k).map(String::from))
    });
    arg_paths
        .chain(env_paths)
        .filter(|p| !p.is_empty())
        .any(|p| inside(&cwd.join(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path, at: SystemTime) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    /// Locks made since the marker go; older ones, other files and links stay.
    #[test]
    fn only_lock_files_made_since_the_marker_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("git");
        let since = SystemTime::now() - Duration::from_secs(60);
        let old = since - Duration::from_secs(60);
        let fresh = since + Duration::from_secs(1);
        let ours = [
            common.join("packed-refs.lock"),
            common.join("config.lock"),
            common.join("refs/heads/feature/x.lock"),
            common.join("refs/guardctl/audit.lock"),
        ];
        for p in &ours {
            touch(p, fresh);
        }
        let theirs = common.join("refs/heads/older.lock");
        touch(&theirs, old);
        let not_a_lock = common.join("refs/heads/main");
        touch(&not_a_lock, fresh);
        let elsewhere = dir.path().join("outside.lock");
        touch(&elsewhere, fresh);
        std::os::unix::fs::symlink(&elsewhere, common.join("refs/heads/link.lock")).unwrap();
        let mut cleared = clear(&common, None, since);
        cleared.removed.sort();
        let mut want = ours.to_vec();
        want.sort();
        assert_eq!(cleared.removed, want);
        assert_eq!(cleared.left, None);
        assert!(theirs.exists() && not_a_lock.exists() && elsewhere.exists());
        assert!(common.join("refs/heads/link.lock").symlink_metadata().is_ok());
    }
}
