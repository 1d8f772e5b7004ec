//! Reading refs: local branches and tags (validated), and which branches are checked out
//! anywhere.

use super::Repo;
use crate::error::Result;
use git2::Oid;
use std::collections::HashMap;
use std::path::Path;

/// A local branch (or tag) as listed by the repository.
#[derive(Debug, Clone)]
pub struct BranchRef {
    /// The full ref name; lossily decoded when it is not UTF-8 (then `valid` is false).
    pub refname: String,
    /// Whether git itself would accept this name.
    pub valid: bool,
    /// The object the ref points at, if it is a direct ref.
    pub oid: Option<Oid>,
}

/// Branches that must never be deleted because something has them checked out.
#[derive(Debug, Default)]
pub struct CheckedOut {
    /// The branch HEAD points at in the work tree guardctl runs in.
    pub here: Option<String>,
    /// Branches checked out (or being rebased) in other worktrees, with the worktree's name.
    pub elsewhere: HashMap<String, String>,
    /// For a remote's branches: the branch the remote's HEAD names (its default branch, what
    /// every new clone checks out).
    pub remote_head: Option<String>,
}

impl CheckedOut {
    /// What a remote has "checked out": the branch its HEAD names.
    pub fn remote(head: Option<&str>) -> CheckedOut {
        CheckedOut {
            remote_head: head.map(String::from),
            ..Default::default()
        }
    }
}

impl Repo {
    /// Every ref under `refs/heads/`, sorted by name, valid or not.
    pub fn local_branches(&self) -> Result<Vec<BranchRef>> {
        self.local_refs(b"refs/heads/")
    }

    /// Every ref under `refs/tags/`, sorted by name, valid or not.
    pub fn local_tags(&self) -> Result<Vec<BranchRef>> {
        self.local_refs(b"refs/tags/")
    }

    fn local_refs(&self, prefix: &[u8]) -> Result<Vec<BranchRef>> {
        let mut out = Vec::new();
        for r in self.git.references()? {
            let r = r?;
            let bytes = r.name_bytes();
            if !bytes.starts_with(prefix) {
                continue;
            }
            let (refname, utf8) = match std::str::from_utf8(bytes) {
                Ok(s) => (s.to_string(), true),
                Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
            };
            let valid = utf8 && is_valid_refname(&refname);
            out.push(BranchRef {
                refname,
                valid,
                oid: r.target(),
            });
        }
        out.sort_by(|a, b| a.refname.cmp(&b.refname));
        Ok(out)
    }

    pub fn checked_out(&self) -> Result<CheckedOut> {
        let mut co = CheckedOut::default();
        if let Ok(head) = self.git.find_reference("HEAD") {
            co.here = head.symbolic_target().ok().flatten().map(String::from);
        }
        for branch in in_progress(self.git.path()) {
            co.elsewhere
                .entry(branch)
                .or_insert_with(|| "this work tree (rebase or bisect in progress)".into());
        }
        let common = self.git.commondir();
        // The main work tree, when we are in a linked one.
        if common != self.git.path() {
            for branch in head_and_in_progress(common) {
                co.elsewhere
                    .entry(branch)
                    .or_insert_with(|| "main work tree".into());
            }
        }
        // Linked worktrees: read their admin dirs directly, so a worktree whose directory was
        // removed but not pruned still protects its branch (as git does).
        let this = std::fs::canonicalize(self.git.path()).ok();
        if let Ok(dir) = std::fs::read_dir(common.join("worktrees")) {
            for entry in dir.flatten() {
                let admin = entry.path();
                if std::fs::canonicalize(&admin).ok() == this {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                for branch in head_and_in_progress(&admin) {
                    co.elsewhere
                        .entry(branch)
                        .or_insert_with(|| format!("worktree {name}"));
                }
            }
        }
        if let Some(here) = &co.here {
            co.elsewhere.remove(here);
        }
        Ok(co)
    }
}

/// The branch in `<git dir>/HEAD` plus any branch a rebase in progress will come back to.
fn head_and_in_progress(git_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = read_symref(&git_dir.join("HEAD")) {
        out.push(b);
    }
    out.extend(in_progress(git_dir));
    out
}

fn in_progress(git_dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = ["rebase-merge/head-name", "rebase-apply/head-name"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(git_dir.join(f)).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| s.starts_with("refs/heads/"))
        .collect();
    // `git bisect reset` returns to the branch bisection started from: BISECT_START names it
    // (short), or holds a commit id when bisection started detached. git refuses to delete it.
    if let Ok(start) = std::fs::read_to_string(git_dir.join("BISECT_START")) {
        let start = start.trim();
        let detached = start.len() >= 40 && start.bytes().all(|b| b.is_ascii_hexdigit());
        if !start.is_empty() && !detached {
            out.push(format!("refs/heads/{start}"));
        }
    }
    out
}

fn read_symref(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim().strip_prefix("ref: ").map(|s| s.trim().to_string())
}

/// Git's rules for ref names (check-ref-format), plus: no non-ASCII control characters.
pub fn is_valid_refname(name: &str) -> bool {
    git2::Reference::is_valid_name(name)
        && !name.chars().any(|c| c.is_control())
        && !name.split('/').any(|c| c == "." || c == "..")
}

#[cfg(test)]
mod tests {
    use super::is_valid_refname;

    #[test]
    fn refname_validation_follows_git() {
        assert!(is_valid_refname("refs/heads/feature/x"));
        assert!(is_valid_refname("refs/heads/ünïcødé"));
        for bad in [
            "refs/heads/../../x",
            "refs/heads/a..b",
            "refs/heads/esc\u{1b}[31m",
            "refs/heads/sp ace",
            "refs/heads/x.lock",
            "refs/heads/a\u{85}b",
            "refs/heads/tilde~1",
            "refs/heads/",
        ] {
            assert!(!is_valid_refname(bad), "{bad:?}");
        }
    }
}
