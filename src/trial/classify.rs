//! The effect trial's judgement: each change of the uppers ([`super::view::Raw`]) is a
//! change to the gate, exempt (temporary, regenerable, git's bookkeeping, content git still
//! stores), moved, created, or destroyed (see the module doc of `trial` for the order of the
//! rules). Pure but for reading the old content of what was deleted or overwritten, and the
//! repository through `repo::trial`.

use super::view::{Op, Raw, View};
use super::{Change, ChangeKind, Effect, Outcome, Request};
use crate::error::Result;
use crate::repo::trial::{Finding, GitOp, Merged, TrialRepo};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The regenerable build output of the work tree (gitignore-style): exempt when deleted or
/// overwritten, if git also ignores the path.
pub const DEFAULT_REGENERABLE: [&str; 8] = [
    "target/",
    "node_modules/",
    "dist/",
    "build/",
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
];

/// Regenerable caches under `$HOME` (outside the repository).
const HOME_CACHES: [&str; 6] = [
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".npm",
    ".rustup/tmp",
    "go/pkg/mod",
];

/// The gate's files, relative to the work tree's top and to `$HOME` (`*`: any name part;
/// a trailing `/` for everything below).
const GATE: [&str; 5] = [
    // Everything of Claude Code's: its settings, hooks, commands and agents run later.
    ".claude/",
    ".gemini/",
    ".guardctl/",
    // MCP servers the harness starts from the project, and Claude Code's own state.
    ".mcp.json",
    ".claude.json",
];

/// The gate's files under `$HOME` only: guardctl's own configuration and git's global
/// configuration (an alias or `core.hooksPath` there changes what every git command does).
const HOME_GATE: [&str; 20] = [
    ".config/guardctl",
    // Tools' configuration that names programs they run (kubeconfig exec plugins, docker's
    // credential helpers, aws's credential_process, gh's aliases, npm's script shell).
    ".kube",
    ".docker",
    ".aws",
    ".config/gh",
    ".npmrc",
    ".ssh",
    ".gitconfig",
    ".config/git",
    // What every later shell of the agent reads before its line runs: an alias or a function
    // there renames a program the reader clears (`ls`, `git`) into anything.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_aliases",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".config/fish",
    ".inputrc",
];

pub struct Context<'a> {
    repo: Option<&'a TrialRepo>,
    home: Option<PathBuf>,
    temps: Vec<PathBuf>,
    regenerable: globset::GlobSet,
    /// [`GATE`] as globs over paths relative to the work tree or `$HOME`.
    gate_files: globset::GlobSet,
    gate: Vec<PathBuf>,
    /// The directories of the line's `PATH`: a program put there (or replaced) runs in place
    /// of one the reader clears by name in every later line, untried.
    path_dirs: Vec<PathBuf>,
}

impl Merged for View {
    fn read(&self, path: &Path) -> Option<Vec<u8>> {
        View::read(self, path)
    }
    fn list(&self, dir: &Path) -> BTreeSet<OsString> {
        View::list(self, dir)
    }
    fn path_of(&self, path: &Path) -> Option<PathBuf> {
        View::path_of(self, path)
    }
    fn upper_of(&self, dir: &Path) -> Option<PathBuf> {
        View::upper_of(self, dir)
    }
}

/// gitignore-style patterns as globs over paths relative to the work tree's top.
fn globs(patterns: &[String]) -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim();
        let (body, _dir) = match p.strip_suffix('/') {
            Some(b) => (b, true),
            None => (p, false),
        };
        if body.is_empty() {
            continue;
        }
        let anchored = body.trim_start_matches('/');
        let base = if body.contains('/') {
            anchored.to_string()
        } else {
            format!("**/{anchored}")
        };
        for g in [base.clone(), format!("{base}/**")] {
            if let Ok(glob) = globset::GlobBuilder::new(&g).literal_separator(true).build() {
                set.add(glob);
            }
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}

/// [`GATE`] as globs (`*` within one name part).
fn gate_globs() -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for g in GATE {
        let pattern = match g.strip_suffix('/') {
            Some(dir) => format!("{dir}/**"),
            None => g.to_string(),
        };
        if let Ok(glob) = globset::GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
        {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}

/// Whether the file at `path` (as the host has it) has other names.
fn hard_linked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// At most this many deleted files are hashed (read whole); the rest say `unhashed`, and a
/// line deleting that many is refused on its first lines anyway.
const HASH_CAP: usize = 10_000;
const UNHASHED: &str = "unhashed";

/// Files up to this size are read into memory to ask whether git stores their content; a
/// larger overwritten file is destroyed whatever git holds (only hashed, in a stream).
const IN_MEMORY: u64 = 64 << 20;

/// What a path held before the trial (a symlink: its target).
struct Old {
    sha256: String,
    size: u64,
    /// The bytes, up to [`IN_MEMORY`].
    bytes: Option<Vec<u8>>,
}

impl Old {
    fn of(path: &Path) -> Old {
        use std::io::Read;
        use std::os::unix::ffi::OsStrExt;
        let whole = |bytes: Vec<u8>| Old {
            sha256: sha256_hex(&bytes),
            size: bytes.len() as u64,
            bytes: Some(bytes),
        };
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return whole(Vec::new());
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path).unwrap_or_default();
            return whole(target.as_os_str().as_bytes().to_vec());
        }
        if meta.len() <= IN_MEMORY {
            return whole(std::fs::read(path).unwrap_or_default());
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        if let Ok(mut file) = std::fs::File::open(path) {
            let mut buf = vec![0u8; 1 << 20];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                size += n as u64;
            }
        }
        Old {
            sha256: hasher.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            size,
            bytes: None,
        }
    }
}

impl<'a> Context<'a> {
    pub fn new(req: &Request, repo: Option<&'a TrialRepo>) -> Context<'a> {
        let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
        let home = super::env_var(&req.env, "HOME").map(|h| canon(PathBuf::from(h)));
        let mut temps: Vec<PathBuf> = vec!["/tmp".into(), "/var/tmp".into()];
        temps.extend(super::env_var(&req.env, "TMPDIR").map(|t| canon(PathBuf::from(t))));
        Context {
            repo,
            home,
            temps,
            regenerable: globs(&req.regenerable),
            gate_files: gate_globs(),
            gate: req.gate.iter().cloned().map(canon).collect(),
            path_dirs: super::env_var(&req.env, "PATH")
                .into_iter()
                .flat_map(std::env::split_paths)
                .filter(|d| d.is_absolute())
                .map(canon)
                .collect(),
        }
    }

    fn work_tree(&self) -> Option<&Path> {
        self.repo.and_then(|r| r.work_tree.as_deref())
    }

    fn in_git_dir(&self, path: &Path) -> bool {
        self.repo
            .is_some_and(|r| path.starts_with(&r.git_dir) || path.starts_with(&r.common_dir))
    }

    /// How the manifest names `path`.
    fn shown(&self, path: &Path) -> String {
        match self.work_tree().and_then(|w| path.strip_prefix(w).ok()) {
            Some(rel) => rel.to_string_lossy().into_owned(),
            None => path.to_string_lossy().into_owned(),
        }
    }

    fn is_temp(&self, path: &Path) -> bool {
        // A repository or a home directory that lives under /tmp (a clone made there, a CI
        // job's home) is no scratch space: its files are judged as a repository's or a home's.
        let inside = |base: &Path| path.starts_with(base);
        if self.work_tree().is_some_and(inside)
            || self.in_git_dir(path)
            || self.home.as_deref().is_some_and(inside)
        {
            return false;
        }
        self.temps.iter().any(|t| path.starts_with(t))
    }

    fn is_gate(&self, path: &Path) -> bool {
        if self.gate.iter().any(|g| path.starts_with(g)) {
            return true;
        }
        if path
            .parent()
            .is_some_and(|dir| self.path_dirs.iter().any(|d| d == dir))
        {
            return true;
        }
        // Any repository's configuration or hooks, wherever it is (one made under /tmp, a
        // nested one): a later `git -C there status` the reader clears would run them.
        let names: Vec<&std::ffi::OsStr> = path.iter().collect();
        if !self.in_git_dir(path)
            && names
                .windows(2)
                .any(|w| w[0] == ".git" && (w[1] == "config" || w[1] == "hooks" || w[1] == "info"))
        {
            return true;
        }
        let mut bases: Vec<&Path> = self.work_tree().into_iter().collect();
        if let Some(home) = &self.home {
            bases.push(home);
            if HOME_GATE.iter().any(|g| path.starts_with(home.join(g))) {
                return true;
            }
        }
        bases
            .iter()
            .filter_map(|base| path.strip_prefix(base).ok())
            .any(|rel| self.gate_files.is_match(rel))
    }

    /// Regenerable build output that git ignores, or a cache under `$HOME`.
    fn is_regenerable(&self, path: &Path) -> bool {
        if let (Some(repo), Some(work)) = (self.repo, self.work_tree())
            && let Ok(rel) = path.strip_prefix(work)
        {
            return self.regenerable.is_match(rel) && repo.is_ignored(rel);
        }
        self.home
            .as_ref()
            .is_some_and(|h| HOME_CACHES.iter().any(|c| path.starts_with(h.join(c))))
    }

    /// Judge what the uppers of `view` hold.
    pub fn judge(&self, view: &View) -> Result<Effect> {
        if let Some(repo) = self.repo {
            // Before anything asks whether content is stored: `git stash` stores it there.
            repo.see_new_objects(view)?;
        }
        let skip = |p: &Path| self.is_temp(p) || self.is_regenerable(p);
        let raws = view.changes(&skip);
        let mut effect = Effect {
            outcome: Outcome::Finished { status: 0 },
            destroyed: Vec::new(),
            gate: Vec::new(),
            created: 0,
            exempt: 0,
            moved: 0,
            stderr_tail: String::new(),
            blocked: None,
        };
        let mut git: Vec<(PathBuf, GitOp)> = Vec::new();
        // Deleted files, by their old bytes' hash, for "moved" (the size to find candidates).
        let mut deleted: Vec<(PathBuf, String, u64, &'static str)> = Vec::new();
        let mut hashed = 0usize;
        let mut created: Vec<PathBuf> = Vec::new();
        // Deleted directories already judged exempt: nothing below them is listed.
        let mut exempt_dirs: Vec<PathBuf> = Vec::new();
        for Raw { path, op } in raws {
            if self.is_gate(&path) {
                let verb = match op {
                    Op::Created => "create",
                    Op::Modified { mode_only: true } => "chmod",
                    Op::Modified { mode_only: false } => "change",
                    Op::Deleted { dir: true } => continue,
                    Op::Deleted { dir: false } | Op::Unlisted => "delete",
                };
                effect.gate.push(Change {
                    what: ChangeKind::Gate,
                    verb: verb.into(),
                    path_or_ref: self.shown(&path),
                    detail: String::new(),
                });
                continue;
            }
            // A file with other hard links: the overlay breaks the link on copy-up, so the
            // trial writes a copy, but the real run writes the one inode every name shares
            // (`ln notes.txt /tmp/x`, then `: > /tmp/x`). Not temporary, whatever its name.
            if matches!(op, Op::Modified { mode_only: false }) && hard_linked(&path) {
                let old = Old::of(&path);
                effect.destroyed.push(Change {
                    what: ChangeKind::Overwrite,
                    verb: "overwrite file".into(),
                    path_or_ref: self.shown(&path),
                    detail: format!("sha256:{} hard-linked", old.sha256),
                });
                continue;
            }
            if self.is_temp(&path) || exempt_dirs.iter().any(|d| path.starts_with(d)) {
                effect.exempt += 1;
                continue;
            }
            if self.in_git_dir(&path) {
                let op = match op {
                    Op::Deleted { dir: true } => continue,
                    Op::Deleted { dir: false } | Op::Unlisted => GitOp::Deleted,
                    Op::Modified { .. } => GitOp::Modified,
                    Op::Created => GitOp::Created,
                };
                git.push((path, op));
                continue;
            }
            match op {
                Op::Created => {
                    effect.created += 1;
                    created.push(path);
                }
                Op::Modified { mode_only: true } => {}
                _ if self.is_regenerable(&path) => {
                    effect.exempt += 1;
                    if op == (Op::Deleted { dir: true }) {
                        exempt_dirs.push(path);
                    }
                }
                Op::Deleted { dir: true } => {}
                Op::Unlisted => effect.destroyed.push(Change {
                    what: ChangeKind::Delete,
                    verb: "delete tree".into(),
                    path_or_ref: self.shown(&path),
                    detail: "unlisted".into(),
                }),
                Op::Deleted { dir: false } => {
                    let meta = std::fs::symlink_metadata(&path).ok();
                    let kind = if meta.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
                        "symlink"
                    } else {
                        "file"
                    };
                    if hashed >= HASH_CAP {
                        deleted.push((path, UNHASHED.into(), u64::MAX, kind));
                        continue;
                    }
                    hashed += 1;
                    let old = Old::of(&path);
                    deleted.push((path, old.sha256, old.size, kind));
                }
                Op::Modified { mode_only: false } => {
                    let old = Old::of(&path);
                    let in_work_tree = self.work_tree().is_some_and(|w| path.starts_with(w));
                    let stored = old
                        .bytes
                        .as_ref()
                        .is_some_and(|b| self.repo.is_some_and(|r| r.has_blob(b, view)));
                    if in_work_tree && stored {
                        effect.exempt += 1;
                        continue;
                    }
                    effect.destroyed.push(Change {
                        what: ChangeKind::Overwrite,
                        verb: "overwrite file".into(),
                        path_or_ref: self.shown(&path),
                        detail: format!("sha256:{}", old.sha256),
                    });
                }
            }
        }
        // Moved: a deleted file whose bytes a created file (not temporary) holds.
        let sizes: BTreeSet<u64> = deleted.iter().map(|d| d.2).collect();
        let mut landed: HashMap<String, usize> = HashMap::new();
        for path in &created {
            // Moved into scratch space or regenerable output is not kept: the next `rm -rf
            // target` or reboot takes it (`mv notes.txt target/`, then `rm -rf target`).
            if self.is_temp(path) || self.is_regenerable(path) {
                continue;
            }
            let Some(at) = view.path_of(path) else {
                continue;
            };
            let Ok(meta) = std::fs::symlink_metadata(&at) else {
                continue;
            };
            if meta.is_file() && sizes.contains(&meta.len()) {
                *landed.entry(Old::of(&at).sha256).or_default() += 1;
            }
        }
        for (path, hash, _, kind) in deleted {
            if let Some(n) = landed.get_mut(&hash).filter(|n| **n > 0 && hash != UNHASHED) {
                *n -= 1;
                effect.moved += 1;
                continue;
            }
            effect.destroyed.push(Change {
                what: ChangeKind::Delete,
                verb: format!("delete {kind}"),
                path_or_ref: self.shown(&path),
                detail: if hash == UNHASHED {
                    UNHASHED.into()
                } else {
                    format!("sha256:{hash}")
                },
            });
        }
        if let Some(repo) = self.repo
            && !git.is_empty()
        {
            let (findings, ignored) = repo.judge(&git, view)?;
            effect.exempt += ignored;
            for f in findings {
                let change = from_finding(f);
                if change.what == ChangeKind::Gate {
                    effect.gate.push(change);
                } else {
                    effect.destroyed.push(change);
                }
            }
        }
        effect.destroyed.sort_by_key(Change::line);
        effect.gate.sort_by_key(Change::line);
        Ok(effect)
    }
}

fn from_finding(f: Finding) -> Change {
    let what = if f.gate {
        ChangeKind::Gate
    } else if f.what.starts_with("delete objects") {
        ChangeKind::DeleteObjects
    } else if f.what.starts_with("delete") {
        ChangeKind::DeleteRef
    } else if f.what.starts_with("rewrite") || f.what.starts_with("move") {
        ChangeKind::RewriteRef
    } else if f.what.starts_with("drop reflog") {
        ChangeKind::DropReflog
    } else {
        ChangeKind::DiscardStaged
    };
    Change {
        what,
        verb: f.what,
        path_or_ref: f.subject,
        detail: f.detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_files_match_only_at_the_top() {
        let set = gate_globs();
        for yes in [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".gemini/settings.json",
            ".guardctl/policy.toml",
            ".guardctl/a/b",
            // Claude Code's commands, agents and hooks run later too: all of `.claude/`.
            ".claude/other.json",
            ".claude/commands/x.md",
            ".mcp.json",
        ] {
            assert!(set.is_match(yes), "{yes}");
        }
        for no in ["sub/.claude/settings.json", ".guardctl", "src/.mcp.json.bak"] {
            assert!(!set.is_match(no), "{no}");
        }
    }

    #[test]
    fn regenerable_patterns_match_as_gitignore_would() {
        let set = globs(&DEFAULT_REGENERABLE.map(String::from));
        for yes in [
            "target",
            "target/debug/x",
            "web/node_modules/a/b.js",
            "a/__pycache__/m.pyc",
            "m.pyc",
        ] {
            assert!(set.is_match(yes), "{yes}");
        }
        for no in [".env", "src/target.rs", "data.db", "targets/x"] {
            assert!(!set.is_match(no), "{no}");
        }
    }
}
