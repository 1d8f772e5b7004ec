//! The effect trial's reading of a repository (`src/trial/`): what a line tried in the
//! copy-on-write view did to the git directory, judged from the host's repository (the state
//! before) and the merged view after ([`Merged`]), never by running git.
//!
//! What it reports ([`Finding`]): refs deleted, rewritten (the new commit does not descend
//! from the old) or, for tags, moved at all; reflog entries dropped (`git stash drop`); staged
//! changes the index lost and nothing kept; objects deleted and not kept in a pack or a loose
//! object that remains; and, as changes to the gate, git config outside a harmless allowlist,
//! hooks, `info/exclude`, `info/attributes`, `info/grafts`, `info/sparse-checkout` and guardctl's own state. Remote-tracking refs mirror a remote: their moves
//! and deletions are not findings. HEAD, ORIG_HEAD, FETCH_HEAD, COMMIT_EDITMSG and the rest of
//! the git directory's bookkeeping are ignored (counted).
//!
//! Not handled: the reftable ref storage (refused: [`TrialRepo::discover`]), SHA-256
//! repositories' packs (read as SHA-1: their objects count as deleted).

use crate::error::{Error, Result};
use git2::Repository;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The file system after the trial, as the trial's view reads it.
pub trait Merged {
    /// A regular file's bytes after the trial (`None`: absent).
    fn read(&self, path: &Path) -> Option<Vec<u8>>;
    /// The names in a directory after the trial.
    fn list(&self, dir: &Path) -> BTreeSet<OsString>;
    /// Where a path's content after the trial lies on the host.
    fn path_of(&self, path: &Path) -> Option<PathBuf>;
    /// The directory holding what the trial wrote at host directory `dir`.
    fn upper_of(&self, dir: &Path) -> Option<PathBuf>;
}

/// What happened to a path of the git directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitOp {
    Deleted,
    Modified,
    Created,
}

/// One thing the trial did to the repository that a reviewer must see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// A change to the gate (config, hooks), not a destruction.
    pub gate: bool,
    /// The manifest's verb phrase: `delete branch`, `rewrite branch`, `drop reflog`, …
    pub what: String,
    /// The ref, path or key.
    pub subject: String,
    /// The stable rest of the manifest line (object ids, counts).
    pub detail: String,
}

/// The repository the line started in, as it was before the trial.
pub struct TrialRepo {
    git: Repository,
    /// The same repository without the trial's objects: what was stored before the line ran.
    before: Repository,
    pub work_tree: Option<PathBuf>,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
}

/// The files of `info/` that change what git does (the rest is bookkeeping).
const GATE_INFO: [&str; 4] = [
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "info/sparse-checkout",
];

/// Config keys a line may change without touching the gate (`*`: any one name part).
const HARMLESS_CONFIG: [&str; 11] = [
    "user.name",
    "user.email",
    "core.autocrlf",
    "core.filemode",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "remote.*.url",
    "remote.*.fetch",
    "init.defaultbranch",
    "color.ui",
];

impl TrialRepo {
    /// The repository holding `cwd`, if any. A reftable repository is refused: its refs
    /// cannot be compared file by file.
    pub fn discover(cwd: &Path) -> Result<Option<TrialRepo>> {
        let refuse = |at: &Path| {
            Error::usage(format!(
                "the repository at {} stores its refs in a reftable; the effect trial cannot compare them",
                crate::text::safe(&at.display().to_string())
            ))
            .with_hint("the line was not tried; plan it explicitly instead")
        };
        let git = match Repository::discover(cwd) {
            Ok(g) => g,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            // libgit2 cannot open a reftable repository at all.
            Err(e) if e.message().contains("refstorage") => return Err(refuse(cwd)),
            Err(e) => return Err(e.into()),
        };
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let git_dir = canon(git.path());
        let common_dir = canon(git.commondir());
        let reftable = common_dir.join("reftable").is_dir()
            || git
                .config()
                .and_then(|c| c.get_string("extensions.refstorage"))
                .is_ok_and(|v| v.eq_ignore_ascii_case("reftable"));
        if reftable {
            return Err(refuse(&common_dir));
        }
        let before = Repository::open(git.path())?;
        Ok(Some(TrialRepo {
            work_tree: git.workdir().map(canon),
            git_dir,
            common_dir,
            git,
            before,
        }))
    }

    /// Read the objects the trial wrote too (the upper of `objects/`), for ancestry and for
    /// "is this content still stored".
    pub fn see_new_objects(&self, view: &dyn Merged) -> Result<()> {
        if let Some(upper) = view.upper_of(&self.common_dir.join("objects")) {
            self.git.odb()?.add_disk_alternate(&upper.to_string_lossy())?;
        }
        Ok(())
    }

    /// Whether git ignores `path` (relative to the work tree).
    pub fn is_ignored(&self, path: &Path) -> bool {
        self.git.is_path_ignored(path).unwrap_or(false)
    }

    /// Whether a blob of exactly `bytes` was stored before the trial (committed, or staged
    /// earlier). A blob only the trial wrote does not count: `git stash && git stash drop`
    /// leaves the uncommitted edit in an object nothing reaches, which `gc` deletes.
    pub fn has_blob(&self, bytes: &[u8], view: &dyn Merged) -> bool {
        let Ok(oid) = git2::Oid::hash_object(git2::ObjectType::Blob, bytes) else {
            return false;
        };
        if self.before.odb().is_ok_and(|odb| odb.exists(oid)) {
            return true;
        }
        // Written by the trial: kept only if the stash the line leaves holds it (`git stash`
        // keeps the edit it takes; `git stash && git stash drop` does not).
        self.git.odb().is_ok_and(|odb| odb.exists(oid)) && self.stash_holds(oid, view)
    }

    /// Whether the stash after the trial (its work-tree commit, or the index commit that is
    /// its second parent) holds the blob `oid`.
    fn stash_holds(&self, oid: git2::Oid, view: &dyn Merged) -> bool {
        let Some(stash) = self.resolve_after("refs/stash", &HashMap::new(), view, 0) else {
            return false;
        };
        let Ok(commit) = self.git.find_commit(stash) else {
            return false;
        };
        let mut trees: Vec<git2::Tree> = commit.tree().into_iter().collect();
        if let Ok(index) = commit.parent(1)
            && let Ok(t) = index.tree()
        {
            trees.push(t);
        }
        trees.iter().any(|t| {
            let mut found = false;
            let _ = t.walk(git2::TreeWalkMode::PreOrder, |_, e| {
                if e.id() == oid {
                    found = true;
                    return git2::TreeWalkResult::Abort;
                }
                git2::TreeWalkResult::Ok
            });
            found
        })
    }

    /// What the changes `changed` (host paths in the git directories) did. Also returns how
    /// many were bookkeeping and ignored.
    pub fn judge(&self, changed: &[(PathBuf, GitOp)], view: &dyn Merged) -> Result<(Vec<Finding>, usize)> {
        let mut out = Vec::new();
        let mut ignored = 0;
        let mut refs: BTreeSet<String> = BTreeSet::new();
        let mut reflogs: BTreeSet<String> = BTreeSet::new();
        let mut configs: BTreeSet<PathBuf> = BTreeSet::new();
        let mut deleted_objects: Vec<PathBuf> = Vec::new();
        let (mut packed, mut index) = (false, false);
        for (path, op) in changed {
            let (base, rel) = match path.strip_prefix(&self.git_dir) {
                Ok(rel) if self.git_dir != self.common_dir => (&self.git_dir, rel),
                _ => match path.strip_prefix(&self.common_dir) {
                    Ok(rel) => (&self.common_dir, rel),
                    Err(_) => continue,
                },
            };
            let rel_s = rel.to_string_lossy().into_owned();
            let first = rel_s.split('/').next().unwrap_or("");
            match first {
                "refs" => {
                    refs.insert(rel_s);
                }
                "packed-refs" => packed = true,
                "logs" => {
                    reflogs.insert(rel_s["logs/".len().min(rel_s.len())..].to_string());
                }
                "index" if rel_s == "index" => index = true,
                "config" | "config.worktree" if !rel_s.contains('/') => {
                    configs.insert(base.join(rel));
                }
                // `info/refs` and `objects/info/packs` are `update-server-info`'s bookkeeping.
                "info" if !GATE_INFO.contains(&rel_s.as_str()) => ignored += 1,
                "hooks" | "info" | "guardctl" if rel_s != first => {
                    let verb = match (first, op) {
                        ("hooks", GitOp::Created) => "install git hook",
                        ("hooks", GitOp::Modified) => "change git hook",
                        ("hooks", GitOp::Deleted) => "remove git hook",
                        ("info", _) => "change git info",
                        _ => "change guardctl state",
                    };
                    out.push(Finding {
                        gate: true,
                        what: verb.into(),
                        subject: rel_s[first.len() + 1..].to_string(),
                        detail: String::new(),
                    });
                }
                "objects" if *op == GitOp::Deleted => deleted_objects.push(path.clone()),
                _ => ignored += 1,
            }
        }
        let before_packed =
            parse_packed(&std::fs::read(self.common_dir.join("packed-refs")).unwrap_or_default());
        let after_packed = parse_packed(
            &view
                .read(&self.common_dir.join("packed-refs"))
                .unwrap_or_default(),
        );
        if packed {
            let names: BTreeSet<&String> = before_packed.keys().chain(after_packed.keys()).collect();
            for name in names {
                if before_packed.get(name) != after_packed.get(name) {
                    refs.insert(name.clone());
                }
            }
        }
        let mut moved_to: Vec<git2::Oid> = Vec::new();
        for name in &refs {
            if !crate::repo::is_valid_refname(name) {
                continue;
            }
            let old = self.git.refname_to_id(name).ok();
            let new = self.resolve_after(name, &after_packed, view, 0);
            if let Some(n) = new
                && old != new
            {
                moved_to.push(n);
            }
            if name == "refs/stash" || name.starts_with("refs/remotes/") {
                continue; // the reflog says what a stash lost; remote-tracking refs mirror
            }
            let kind = ref_kind(name);
            match (old, new) {
                (Some(o), None) => out.push(Finding {
                    gate: false,
                    what: format!("delete {kind}"),
                    subject: name.clone(),
                    detail: o.to_string(),
                }),
                (Some(o), Some(n)) if o != n => {
                    let fast_forward = self.git.graph_descendant_of(n, o).unwrap_or(false);
                    if kind == "tag" || !fast_forward {
                        out.push(Finding {
                            gate: false,
                            what: if kind == "tag" {
                                "move tag".into()
                            } else {
                                format!("rewrite {kind}")
                            },
                            subject: name.clone(),
                            detail: format!("{o} -> {n}"),
                        });
                    }
                }
                _ => {}
            }
        }
        for name in &reflogs {
            let path = self.reflog_path(name);
            let Ok(old) = std::fs::read(&path) else {
                continue; // new
            };
            let dropped = match view.read(&path) {
                Some(new) if new.starts_with(&old) => 0,
                Some(new) => {
                    let kept: BTreeSet<&[u8]> = new.split(|b| *b == b'\n').collect();
                    old.split(|b| *b == b'\n')
                        .filter(|l| !l.is_empty() && !kept.contains(l))
                        .count()
                }
                None => {
                    let still = name == "HEAD"
                        || name == "refs/stash"
                        || self.resolve_after(name, &after_packed, view, 0).is_some();
                    if still {
                        old.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count()
                    } else {
                        0 // the ref's deletion says it
                    }
                }
            };
            if dropped > 0 {
                out.push(Finding {
                    gate: false,
                    what: "drop reflog".into(),
                    subject: name.clone(),
                    detail: format!("{dropped} {}", if dropped == 1 { "entry" } else { "entries" }),
                });
            }
        }
        if index {
            out.extend(self.lost_staged_changes(view, &moved_to)?);
        }
        for config in &configs {
            out.extend(config_changes(config, view)?);
        }
        if !deleted_objects.is_empty() {
            let lost = self.lost_objects(&deleted_objects, view);
            if lost > 0 {
                out.push(Finding {
                    gate: false,
                    what: "delete objects".into(),
                    subject: format!("{lost}"),
                    detail: String::new(),
                });
            }
        }
        Ok((out, ignored))
    }

    fn reflog_path(&self, name: &str) -> PathBuf {
        let base = if name == "HEAD" || !name.starts_with("refs/") {
            &self.git_dir
        } else {
            &self.common_dir
        };
        base.join("logs").join(name)
    }

    /// A ref's target after the trial (loose file of the merged view, else packed-refs).
    fn resolve_after(
        &self,
        name: &str,
        packed: &HashMap<String, git2::Oid>,
        view: &dyn Merged,
        depth: usize,
    ) -> Option<git2::Oid> {
        let base = if name.starts_with("refs/") {
            &self.common_dir
        } else {
            &self.git_dir
        };
        match view.read(&base.join(name)) {
            Some(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.trim();
                match text.strip_prefix("ref: ") {
                    Some(target) if depth < 5 => self.resolve_after(target.trim(), packed, view, depth + 1),
                    Some(_) => None,
                    None => git2::Oid::from_str(text).ok(),
                }
            }
            None => packed.get(name).copied(),
        }
    }

    /// Staged changes (an old stage-0 entry whose blob differs from HEAD's) that neither the
    /// new index, nor the work tree after, nor a commit a ref moved to (a stash) holds.
    fn lost_staged_changes(&self, view: &dyn Merged, moved_to: &[git2::Oid]) -> Result<Vec<Finding>> {
        let mut out = Vec::new();
        let path = self.git_dir.join("index");
        let Ok(old) = git2::Index::open(&path) else {
            return Ok(out);
        };
        let new = match view.read(&path) {
            Some(bytes) => {
                let tmp = tempfile::NamedTempFile::new()
                    .map_err(|e| Error::internal("cannot read the index after the trial").caused_by(e))?;
                std::fs::write(tmp.path(), bytes).map_err(Error::io("write", tmp.path()))?;
                git2::Index::open(tmp.path()).ok()
            }
            None => None,
        };
        let head = self.git.head().ok().and_then(|h| h.peel_to_tree().ok());
        let kept_trees: Vec<git2::Tree> = moved_to
            .iter()
            .filter_map(|o| self.git.find_commit(*o).ok())
            .flat_map(|c| {
                let mut commits = vec![c.clone()];
                commits.extend(c.parents());
                commits
            })
            .filter_map(|c| c.tree().ok())
            .collect();
        for e in old.iter() {
            if (e.flags >> 12) & 3 != 0 {
                continue;
            }
            let p = String::from_utf8_lossy(&e.path).into_owned();
            let at = Path::new(&p);
            if head.as_ref().and_then(|t| t.get_path(at).ok()).map(|t| t.id()) == Some(e.id) {
                continue; // not a staged change
            }
            if new
                .as_ref()
                .and_then(|n| n.get_path(at, 0))
                .is_some_and(|n| n.id == e.id)
            {
                continue;
            }
            let in_work_tree = self
                .work_tree
                .as_ref()
                .and_then(|w| view.read(&w.join(at)))
                .is_some_and(|b| git2::Oid::hash_object(git2::ObjectType::Blob, &b).is_ok_and(|o| o == e.id));
            if in_work_tree
                || kept_trees
                    .iter()
                    .any(|t| t.get_path(at).is_ok_and(|x| x.id() == e.id))
            {
                continue;
            }
            out.push(Finding {
                gate: false,
                what: "discard staged change".into(),
                subject: p,
                detail: e.id.to_string(),
            });
        }
        Ok(out)
    }

    /// How many objects of the deleted loose objects and packs no remaining pack or loose
    /// object holds after the trial.
    fn lost_objects(&self, deleted: &[PathBuf], view: &dyn Merged) -> usize {
        let objects = self.common_dir.join("objects");
        let mut ids: BTreeSet<gix_hash::ObjectId> = BTreeSet::new();
        let mut packs: BTreeSet<PathBuf> = BTreeSet::new();
        for path in deleted {
            let Ok(rel) = path.strip_prefix(&objects) else {
                continue;
            };
            let parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            match parts.as_slice() {
                [dir, file] if dir.len() == 2 && dir != "pack" => {
                    if let Ok(id) = gix_hash::ObjectId::from_hex(format!("{dir}{file}").as_bytes()) {
                        ids.insert(id);
                    }
                }
                [pack, file] if pack == "pack" && (file.ends_with(".pack") || file.ends_with(".idx")) => {
                    let stem = file.trim_end_matches(".pack").trim_end_matches(".idx");
                    packs.insert(objects.join("pack").join(format!("{stem}.idx")));
                }
                _ => {}
            }
        }
        for idx in &packs {
            if let Ok(file) = gix_pack::index::File::at(idx, gix_hash::Kind::Sha1) {
                ids.extend(file.iter().map(|e| e.oid));
            }
        }
        if ids.is_empty() {
            return 0;
        }
        let remaining: Vec<gix_pack::index::File> = view
            .list(&objects.join("pack"))
            .iter()
            .filter_map(|n| n.to_str().filter(|n| n.ends_with(".idx")).map(str::to_string))
            .filter_map(|n| view.path_of(&objects.join("pack").join(n)))
            .filter_map(|p| gix_pack::index::File::at(p, gix_hash::Kind::Sha1).ok())
            .collect();
        let mut loose: HashMap<String, BTreeSet<OsString>> = HashMap::new();
        ids.iter()
            .filter(|id| {
                let hex = id.to_hex().to_string();
                let (dir, file) = hex.split_at(2);
                let names = loose
                    .entry(dir.to_string())
                    .or_insert_with(|| view.list(&objects.join(dir)));
                !names.contains(&OsString::from(file)) && !remaining.iter().any(|p| p.lookup(id).is_some())
            })
            .count()
    }
}

fn ref_kind(name: &str) -> &'static str {
    if name.starts_with("refs/heads/") {
        "branch"
    } else if name.starts_with("refs/tags/") {
        "tag"
    } else {
        "ref"
    }
}

/// `packed-refs`' name → id (peeled lines and comments skipped).
fn parse_packed(bytes: &[u8]) -> HashMap<String, git2::Oid> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(id, name)| Some((name.trim().to_string(), git2::Oid::from_str(id).ok()?)))
        .collect()
}

/// The config keys (with their values) changed by the trial outside [`HARMLESS_CONFIG`].
fn config_changes(path: &Path, view: &dyn Merged) -> Result<Vec<Finding>> {
    let entries = |file: &Path| -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Ok(config) = git2::Config::open(file)
            && let Ok(mut all) = config.entries(None)
        {
            while let Some(Ok(e)) = all.next() {
                if let Ok(name) = e.name() {
                    out.entry(name.to_string())
                        .or_default()
                        .push(e.value().map(str::to_string).unwrap_or_default());
                }
            }
        }
        out
    };
    let before = if path.is_file() {
        entries(path)
    } else {
        BTreeMap::new()
    };
    let after = match view.read(path) {
        Some(bytes) => {
            let tmp = tempfile::NamedTempFile::new()
                .map_err(|e| Error::internal("cannot read the git config after the trial").caused_by(e))?;
            std::fs::write(tmp.path(), bytes).map_err(Error::io("write", tmp.path()))?;
            entries(tmp.path())
        }
        None => BTreeMap::new(),
    };
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    Ok(keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .filter(|k| !harmless(k, after.get(*k).map(Vec::as_slice).unwrap_or(&[])))
        .map(|k| Finding {
            gate: true,
            what: "change git config".into(),
            subject: k.clone(),
            detail: String::new(),
        })
        .collect())
}

/// Whether changing `key` (to `values`) leaves the gate as it was.
fn harmless(key: &str, values: &[String]) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    let matches = HARMLESS_CONFIG.iter().any(|pattern| {
        let p: Vec<&str> = pattern.split('.').collect();
        match (p.as_slice(), parts.as_slice()) {
            ([a, b], [x, y]) => a == x && b == y,
            ([a, "*", c], [x, .., z]) if parts.len() >= 3 => a == x && c == z,
            _ => false,
        }
    });
    // A forced refspec (`+…`) lets a fetch rewrite local refs.
    matches
        && !(key.ends_with(".fetch")
            && values
                .iter()
                .any(|v| v.starts_with('+') && !v.contains("refs/remotes/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harmless_config_is_an_allowlist() {
        assert!(harmless("user.name", &[]));
        assert!(harmless("branch.my.topic.remote", &[]));
        assert!(!harmless("alias.zap", &[]));
        assert!(!harmless("core.hookspath", &[]));
        assert!(!harmless("core.sshcommand", &[]));
        assert!(harmless(
            "remote.origin.fetch",
            &["+refs/heads/*:refs/remotes/origin/*".into()]
        ));
        assert!(!harmless(
            "remote.origin.fetch",
            &["+refs/heads/*:refs/heads/*".into()]
        ));
    }

    #[test]
    fn packed_refs_are_parsed_without_peeled_lines() {
        let p = parse_packed(
            b"# pack-refs with: peeled\n1111111111111111111111111111111111111111 refs/heads/a\n^2222222222222222222222222222222222222222\n",
        );
        assert_eq!(p.len(), 1);
        assert!(p.contains_key("refs/heads/a"));
    }
}
