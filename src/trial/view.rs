//! The trial's copy-on-write view of the machine, host side: which host directories become
//! overlay layers ([`Layers::of_this_machine`]), the private directory holding their upper
//! layers ([`State`], removed on every way out), what the uppers say changed ([`changes`]),
//! and the merged view after the trial ([`View`], read without mounting anything).
//!
//! overlayfs' upper layer, as read here (`userxattr` mounts, `metacopy=off`, no
//! `redirect_dir`, so a renamed lower directory is copied, never redirected): a character
//! device 0:0 is a whiteout (the path is gone, and everything under it if it was a
//! directory); a directory with the xattr `user.overlay.opaque` = `y` hides everything of the
//! lower directory that the upper does not hold; anything else in the upper is what the
//! merged view shows at that path.
//!
//! Invariants: walking costs what changed (the uppers), plus the lower content of what was
//! deleted or overwritten; nothing here follows a symlink of the upper or the lower.

use crate::error::{Error, Result};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Top-level directories of `/` never overlaid (the trial has its own `/proc` and `/dev`, and
/// no `/sys` or `/run`).
const NOT_LAYERS: [&str; 4] = ["proc", "sys", "dev", "run"];

/// What of the host becomes what in the trial (see `sandbox::Overlay`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Layers {
    /// Overlaid at their own paths, parents first.
    pub layers: Vec<PathBuf>,
    /// Mounts that cannot be overlaid (a path the mount options cannot spell).
    pub sealed: Vec<PathBuf>,
    /// File mounts (bound read-only).
    pub files: Vec<PathBuf>,
    /// Top-level symlinks and their targets.
    pub links: Vec<(PathBuf, PathBuf)>,
}

impl Layers {
    /// The host's top-level directories (but /proc, /sys, /dev, /run), every mount below
    /// them (`/proc/self/mountinfo`) and the directories of `extra`, parents first.
    ///
    /// Why `extra` (the work tree, `$HOME`, the temporary directories): overlayfs copies a
    /// file up with its directories, each with its owner; in an unprivileged user namespace
    /// an owner outside the namespace's id map (root, for `/work` or `/var`) cannot be given,
    /// and the write fails with EOVERFLOW. A layer's own root needs no copy-up, so each place
    /// the line is expected to write is a layer of its own.
    pub fn of_this_machine(extra: &[PathBuf]) -> Result<Layers> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(Error::io("read", Path::new("/proc/self/mountinfo")))?;
        let mut tops = Vec::new();
        let mut links = Vec::new();
        let entries = std::fs::read_dir("/").map_err(Error::io("list", Path::new("/")))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if NOT_LAYERS.iter().any(|n| name == *n) {
                continue;
            }
            let path = Path::new("/").join(&name);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(&path) {
                        links.push((path, target));
                    }
                }
                Ok(m) if m.is_dir() => tops.push(path),
                _ => {} // a file at the top: not in the trial
            }
        }
        let mut mounts = mount_points(&mountinfo);
        mounts.extend(
            extra
                .iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .filter(|p| p.is_dir()),
        );
        Ok(Layers::plan(tops, links, &mounts, |p| {
            std::fs::symlink_metadata(p).map(|m| m.is_dir()).ok()
        }))
    }

    /// The layers of `tops` and `mounts` (`is_dir`: `Some(true)` for a directory,
    /// `Some(false)` for anything else, `None` for a path that does not exist).
    fn plan(
        tops: Vec<PathBuf>,
        mut links: Vec<(PathBuf, PathBuf)>,
        mounts: &[PathBuf],
        is_dir: impl Fn(&Path) -> Option<bool>,
    ) -> Layers {
        let mut layers: BTreeSet<PathBuf> = tops.iter().cloned().collect();
        let mut files = BTreeSet::new();
        for m in mounts {
            if !tops.iter().any(|t| m.starts_with(t)) {
                continue;
            }
            match is_dir(m) {
                Some(true) => {
                    layers.insert(m.clone());
                }
                Some(false) => {
                    files.insert(m.clone());
                }
                None => {}
            }
        }
        let (mut layers, sealed): (Vec<PathBuf>, Vec<PathBuf>) =
            layers.into_iter().partition(|p| spellable(p));
        layers.sort_by_key(|p| (p.components().count(), p.clone()));
        links.sort();
        Layers {
            layers,
            sealed,
            files: files.into_iter().collect(),
            links,
        }
    }
}

/// Whether overlayfs' mount options can name `path` (they split on `,` and `:`).
fn spellable(path: &Path) -> bool {
    path.to_str().is_some_and(|s| !s.contains([',', ':', '\\', '\n']))
}

/// The mount points of a `/proc/self/mountinfo` text (octal escapes decoded).
fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape_octal(p)))
        .collect()
}

fn unescape_octal(s: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

/// The private directory of one trial (`/dev/shm/guardctl-trial-XXXX`, mode 0700): the new
/// root's mount point and each layer's upper and work directories. Removed when dropped,
/// whatever overlayfs left in it (its work directories are mode 0).
pub struct State {
    dir: PathBuf,
}

impl State {
    pub fn new() -> Result<State> {
        let dir = tempfile::Builder::new()
            .prefix("guardctl-trial-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in("/dev/shm")
            .map_err(|e| {
                Error::internal("cannot create the trial's private directory in /dev/shm").caused_by(e)
            })?
            .keep();
        let state = State { dir };
        std::fs::create_dir(state.root()).map_err(Error::io("create", &state.root()))?;
        Ok(state)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The new root's mount point.
    pub fn root(&self) -> PathBuf {
        self.dir.join("root")
    }
}

impl Drop for State {
    fn drop(&mut self) {
        let _ = remove_all(&self.dir);
    }
}

/// `rm -rf`, making each directory writable and searchable first (overlayfs' `work/work`
/// is mode 0, which stops an unprivileged `remove_dir_all`).
fn remove_all(dir: &Path) -> std::io::Result<()> {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => remove_all(&path)?,
            _ => std::fs::remove_file(&path)?,
        }
    }
    std::fs::remove_dir(dir)
}

/// What one path became in the trial (host paths).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Gone: a file, symlink or (when `dir`) a directory of the lower. A deleted directory's
    /// content is listed as deletions of its own unless the caller's `skip` said not to
    /// enumerate it.
    Deleted { dir: bool },
    /// Different content (or symlink target); `mode_only`: the same bytes, another mode.
    Modified { mode_only: bool },
    /// New (files and symlinks only; directories are not counted).
    Created,
    /// A deleted directory whose content was not listed: the trial had already listed
    /// [`LIST_CAP`] changes (`rm -rf /` would otherwise list the machine).
    Unlisted,
}

/// At most this many changes are listed one by one; a directory deleted beyond it is one
/// [`Op::Unlisted`].
pub const LIST_CAP: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Raw {
    pub path: PathBuf,
    pub op: Op,
}

/// The layers' host paths and their upper directories.
pub struct View {
    layers: Vec<(PathBuf, PathBuf)>,
}

impl View {
    pub fn new(layers: &[PathBuf], state: &Path) -> View {
        let layers = layers
            .iter()
            .enumerate()
            .map(|(n, l)| (l.clone(), crate::sandbox::overlay_dirs(state, n).0))
            .filter(|(_, upper)| upper.is_dir())
            .collect();
        View { layers }
    }

    /// Every change the uppers hold, sorted. `skip(path)`: a deleted directory whose content
    /// is not listed (regenerable build output: its one `Deleted { dir: true }` says it).
    pub fn changes(&self, skip: &dyn Fn(&Path) -> bool) -> Vec<Raw> {
        let mut out = Vec::new();
        for (host, upper) in &self.layers {
            walk(upper, host, false, skip, &mut out);
        }
        out.sort();
        out
    }

    /// The upper directory that holds `path`'s layer, and `path` relative to that layer.
    fn layer_of<'a>(&'a self, path: &'a Path) -> Option<(&'a Path, &'a Path)> {
        self.layers
            .iter()
            .filter_map(|(host, upper)| path.strip_prefix(host).ok().map(|rel| (host, upper, rel)))
            .max_by_key(|(host, _, _)| host.components().count())
            .map(|(_, upper, rel)| (upper.as_path(), rel))
    }

    /// Where `path` is in the merged view: `Upper(p)` (the upper holds it), `Lower` (the host
    /// path shows through), or `Gone` (a whiteout, or below an opaque directory or a
    /// replaced one). Paths of no layer show the host.
    fn locate(&self, path: &Path) -> Place {
        let Some((upper, rel)) = self.layer_of(path) else {
            return Place::Lower;
        };
        let mut at = upper.to_path_buf();
        let mut lower_visible = true;
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            let Ok(meta) = std::fs::symlink_metadata(&at) else {
                return if lower_visible { Place::Lower } else { Place::Gone };
            };
            if is_whiteout(&meta) {
                return Place::Gone;
            }
            if i + 1 == parts.len() {
                return Place::Upper(at);
            }
            if !meta.is_dir() {
                return Place::Gone;
            }
            if is_opaque(&at) {
                lower_visible = false;
            }
        }
        Place::Upper(at)
    }

    /// `path`'s bytes after the trial (`None`: absent or not a regular file).
    pub fn read(&self, path: &Path) -> Option<Vec<u8>> {
        let at = match self.locate(path) {
            Place::Upper(p) => p,
            Place::Lower => path.to_path_buf(),
            Place::Gone => return None,
        };
        let meta = std::fs::symlink_metadata(&at).ok()?;
        meta.is_file().then(|| std::fs::read(&at).ok()).flatten()
    }

    /// The names in directory `dir` after the trial.
    pub fn list(&self, dir: &Path) -> BTreeSet<OsString> {
        let mut names = BTreeSet::new();
        let (upper, lower_visible) = match self.locate(dir) {
            Place::Gone => return names,
            Place::Lower => (None, true),
            Place::Upper(p) => {
                let opaque = is_opaque(&p);
                (Some(p), !opaque)
            }
        };
        let mut whiteouts = BTreeSet::new();
        if let Some(upper) = &upper {
            for e in std::fs::read_dir(upper).into_iter().flatten().flatten() {
                match e.metadata() {
                    Ok(m) if is_whiteout(&m) => {
                        whiteouts.insert(e.file_name());
                    }
                    _ => {
                        names.insert(e.file_name());
                    }
                }
            }
        }
        if lower_visible {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if !whiteouts.contains(&e.file_name()) {
                    names.insert(e.file_name());
                }
            }
        }
        names
    }

    /// Where `path`'s merged content lies on the host (its upper or its lower; `None`: gone).
    pub fn path_of(&self, path: &Path) -> Option<PathBuf> {
        match self.locate(path) {
            Place::Upper(p) => Some(p),
            Place::Lower => std::fs::symlink_metadata(path)
                .is_ok()
                .then(|| path.to_path_buf()),
            Place::Gone => None,
        }
    }

    /// The upper directory of host directory `dir` (new files the trial wrote there), if any.
    pub fn upper_of(&self, dir: &Path) -> Option<PathBuf> {
        match self.locate(dir) {
            Place::Upper(p) if p.is_dir() => Some(p),
            _ => None,
        }
    }
}

enum Place {
    Upper(PathBuf),
    Lower,
    Gone,
}

fn is_whiteout(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == 0
}

fn is_opaque(dir: &Path) -> bool {
    let mut buf = [0u8; 4];
    matches!(
        rustix::fs::lgetxattr(dir, "user.overlay.opaque", &mut buf[..]),
        Ok(n) if buf[..n] == *b"y"
    )
}

/// Whether two paths (the lower's and the upper's) hold the same bytes or symlink target.
fn same_content(lower: &Path, lm: &std::fs::Metadata, upper: &Path, um: &std::fs::Metadata) -> bool {
    use std::io::Read;
    if lm.file_type().is_symlink() || um.file_type().is_symlink() {
        return lm.file_type().is_symlink()
            && um.file_type().is_symlink()
            && std::fs::read_link(lower).ok() == std::fs::read_link(upper).ok();
    }
    if !lm.is_file() || !um.is_file() || lm.len() != um.len() {
        return false;
    }
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(lower), std::fs::File::open(upper)) else {
        return false;
    };
    let (mut x, mut y) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let n = match a.read(&mut x) {
            Ok(n) => n,
            Err(_) => return false,
        };
        if n == 0 {
            return true;
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
    }
}

fn walk(upper: &Path, host: &Path, opaque: bool, skip: &dyn Fn(&Path) -> bool, out: &mut Vec<Raw>) {
    let Ok(entries) = std::fs::read_dir(upper) else {
        return;
    };
    let mut in_upper = BTreeSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        in_upper.insert(name.clone());
        let (up, at) = (entry.path(), host.join(&name));
        let Ok(um) = std::fs::symlink_metadata(&up) else {
            continue;
        };
        let lower = std::fs::symlink_metadata(&at).ok();
        if is_whiteout(&um) {
            if let Some(lm) = lower {
                deleted(&at, &lm, skip, out);
            }
            continue;
        }
        match lower {
            Some(lm) if um.is_dir() && lm.is_dir() => walk(&up, &at, opaque || is_opaque(&up), skip, out),
            Some(lm) if um.is_dir() || lm.is_dir() => {
                deleted(&at, &lm, skip, out);
                created(&up, &at, out);
            }
            Some(lm) => {
                if !same_content(&at, &lm, &up, &um) {
                    out.push(Raw {
                        path: at,
                        op: Op::Modified { mode_only: false },
                    });
                } else if lm.mode() != um.mode() {
                    out.push(Raw {
                        path: at,
                        op: Op::Modified { mode_only: true },
                    });
                }
            }
            None => created(&up, &at, out),
        }
    }
    if opaque {
        for entry in std::fs::read_dir(host).into_iter().flatten().flatten() {
            if !in_upper.contains(&entry.file_name())
                && let Ok(lm) = std::fs::symlink_metadata(entry.path())
            {
                deleted(&entry.path(), &lm, skip, out);
            }
        }
    }
}

/// `at` (of the lower) is gone: itself, and each file below it unless `skip` says not to
/// enumerate it.
fn deleted(at: &Path, lm: &std::fs::Metadata, skip: &dyn Fn(&Path) -> bool, out: &mut Vec<Raw>) {
    if !lm.is_dir() {
        out.push(Raw {
            path: at.to_path_buf(),
            op: Op::Deleted { dir: false },
        });
        return;
    }
    if !skip(at) && out.len() >= LIST_CAP {
        out.push(Raw {
            path: at.to_path_buf(),
            op: Op::Unlisted,
        });
        return;
    }
    out.push(Raw {
        path: at.to_path_buf(),
        op: Op::Deleted { dir: true },
    });
    if skip(at) {
        return;
    }
    for entry in std::fs::read_dir(at).into_iter().flatten().flatten() {
        if let Ok(m) = std::fs::symlink_metadata(entry.path()) {
            deleted(&entry.path(), &m, skip, out);
        }
    }
}

/// Everything of the upper `up` (new at host path `at`), files and symlinks only.
fn created(up: &Path, at: &Path, out: &mut Vec<Raw>) {
    let Ok(m) = std::fs::symlink_metadata(up) else {
        return;
    };
    if m.is_dir() {
        for entry in std::fs::read_dir(up).into_iter().flatten().flatten() {
            created(&entry.path(), &at.join(entry.file_name()), out);
        }
    } else if !is_whiteout(&m) {
        out.push(Raw {
            path: at.to_path_buf(),
            op: Op::Created,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_paths_are_decoded() {
        let info = "22 27 0:21 / /proc rw - proc proc rw\n\
                    28 27 0:25 / /mnt/with\\040space ro - tmpfs x ro\n";
        assert_eq!(
            mount_points(info),
            vec![PathBuf::from("/proc"), PathBuf::from("/mnt/with space")]
        );
    }

    #[test]
    fn layers_are_the_top_directories_and_the_mounts_below_parents_first() {
        let l = Layers::plan(
            vec!["/work".into(), "/etc".into(), "/mnt".into()],
            vec![("/bin".into(), "usr/bin".into())],
            &[
                "/".into(),
                "/proc".into(),
                "/mnt/a/b".into(),
                "/mnt/a".into(),
                "/etc/hosts".into(),
                "/mnt/x,y".into(),
                "/dev/shm".into(),
            ],
            |p| Some(p != Path::new("/etc/hosts")),
        );
        assert_eq!(
            l.layers,
            ["/etc", "/mnt", "/work", "/mnt/a", "/mnt/a/b"].map(PathBuf::from)
        );
        assert_eq!(l.sealed, [PathBuf::from("/mnt/x,y")]);
        assert_eq!(l.files, [PathBuf::from("/etc/hosts")]);
    }
}
