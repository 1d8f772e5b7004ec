//! The git mechanics of the ledger branch (`store::ledger`): commits that each add files,
//! built and read in a [`Scratch`] repository, never in the user's.
//!
//! A ledger commit's tree holds only the files that commit adds (not everything added
//! before): what the ledger holds is the union over every commit its tip reaches, so a
//! commit that "deletes" a file changes nothing anyone reads, and no diff is ever computed.

use super::publish::Scratch;
use crate::error::Result;
use git2::Oid;
use std::collections::BTreeMap;

/// The ledger branch on the team remote (`store::ledger`). Never a branch a plan may
/// delete: remote branch listings leave it out.
pub const LEDGER_REF: &str = "refs/heads/guardctl/ledger";

/// A file added by a ledger commit: its path in the commit's tree, its blob, its mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub path: String,
    pub blob: Oid,
    pub mode: i32,
}

enum Node {
    File(Oid),
    Dir(BTreeMap<String, Node>),
}

impl Scratch {
    /// A new commit on `parent` (none: the ledger's first) whose tree holds exactly `files`
    /// (`(path, bytes)`, paths of `/`-separated ref-safe components), with guardctl's fixed
    /// identity and time, so equal content on an equal parent is an equal commit.
    pub fn ledger_commit(
        &self,
        parent: Option<Oid>,
        files: &[(String, Vec<u8>)],
        message: &str,
    ) -> Result<Oid> {
        let git = self.git2();
        let mut root = BTreeMap::new();
        for (path, bytes) in files {
            let blob = git.blob(bytes)?;
            let mut dir = &mut root;
            let parts: Vec<&str> = path.split('/').collect();
            let (file, dirs) = parts
                .split_last()
                .ok_or_else(|| crate::error::Error::internal("an empty ledger path"))?;
            for d in dirs {
                let node = dir
                    .entry(d.to_string())
                    .or_insert_with(|| Node::Dir(BTreeMap::new()));
                dir = match node {
                    Node::Dir(m) => m,
                    Node::File(_) => {
                        return Err(crate::error::Error::internal(format!(
                            "ledger path {path} runs through a file"
                        )));
                    }
                };
            }
            dir.insert(file.to_string(), Node::File(blob));
        }
        let tree = git.find_tree(self.write_tree(&root)?)?;
        let sig = git2::Signature::new("guardctl", "guardctl@invalid", &git2::Time::new(0, 0))?;
        let parents = match parent {
            Some(p) => vec![git.find_commit(p)?],
            None => vec![],
        };
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        Ok(git.commit(None, &sig, &sig, message, &tree, &parents)?)
    }

    fn write_tree(&self, dir: &BTreeMap<String, Node>) -> Result<Oid> {
        let mut tb = self.git2().treebuilder(None)?;
        for (name, node) in dir {
            match node {
                Node::File(blob) => tb.insert(name, *blob, 0o100644)?,
                Node::Dir(d) => tb.insert(name, self.write_tree(d)?, 0o040000)?,
            };
        }
        Ok(tb.write()?)
    }

    /// Every commit in `tip`'s history, oldest first: its first-parent chain, then every
    /// other commit it reaches (parents before children), and the commits that have more than
    /// one parent (a ledger guardctl writes has none). All of them: a host that refuses only
    /// rewinds takes a merge whose *first* parent is a crafted history leaving out a veto or a
    /// consumed marker, as long as the old tip is one of its other parents; what was on the
    /// ledger is still in its history, and must still be read.
    pub fn history(&self, tip: Oid) -> Result<(Vec<Oid>, Vec<Oid>)> {
        let mut walk = self.git2().revwalk()?;
        walk.push(tip)?;
        walk.simplify_first_parent()?;
        let mut chain = Vec::new();
        for oid in walk {
            chain.push(oid?);
        }
        chain.reverse();
        let mut seen: std::collections::HashSet<Oid> = chain.iter().copied().collect();
        let mut merges = Vec::new();
        let mut all = self.git2().revwalk()?;
        all.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
        all.push(tip)?;
        let mut rest = Vec::new();
        for oid in all {
            let oid = oid?;
            if self.git2().find_commit(oid)?.parent_count() > 1 {
                merges.push(oid);
            }
            if seen.insert(oid) {
                rest.push(oid);
            }
        }
        chain.extend(rest);
        Ok((chain, merges))
    }

    /// Every blob in `commit`'s tree, by path (trees entered, anything else skipped).
    pub fn added_files(&self, commit: Oid) -> Result<Vec<Added>> {
        let tree = self.git2().find_commit(commit)?.tree()?;
        let mut out = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob)
                && let Ok(name) = std::str::from_utf8(entry.name_bytes())
            {
                out.push(Added {
                    path: format!("{root}{name}"),
                    blob: entry.id(),
                    mode: entry.filemode(),
                });
            }
            git2::TreeWalkResult::Ok
        })?;
        Ok(out)
    }

    /// The bytes of blob `oid`, of at most `limit` bytes; `Err` says why not (a filtered
    /// fetch left it out: too large).
    pub fn read_blob(&self, oid: Oid, limit: u64) -> std::result::Result<Vec<u8>, String> {
        let odb = self.git2().odb().map_err(|e| e.message().to_string())?;
        if !odb.exists(oid) {
            return Err(format!("blob {oid} is too large: the fetch left it out"));
        }
        let (size, kind) = odb.read_header(oid).map_err(|e| e.message().to_string())?;
        if kind != git2::ObjectType::Blob {
            return Err(format!("{oid} is not a file"));
        }
        if size as u64 > limit {
            return Err(format!("blob {oid} is larger than {limit} bytes"));
        }
        let blob = self.git2().find_blob(oid).map_err(|e| e.message().to_string())?;
        Ok(blob.content().to_vec())
    }

    /// Whether `tip`'s history holds commit `seen` (or is it).
    pub fn holds_commit(&self, tip: Oid, seen: Oid) -> bool {
        tip == seen || self.git2().graph_descendant_of(tip, seen).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_commit_holds_only_what_it_adds_and_the_chain_is_read_oldest_first() {
        let s = Scratch::new(vec![]).unwrap();
        let a = s
            .ledger_commit(None, &[("plans/x/plan.json".into(), b"one".to_vec())], "a")
            .unwrap();
        let b = s
            .ledger_commit(
                Some(a),
                &[
                    ("approvals/x/k/approval.json".into(), b"two".to_vec()),
                    ("consumed/x/consumed.json".into(), b"three".to_vec()),
                ],
                "b",
            )
            .unwrap();
        let (chain, merges) = s.history(b).unwrap();
        assert_eq!(chain, vec![a, b]);
        assert!(merges.is_empty());
        let paths: Vec<String> = s.added_files(b).unwrap().into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["approvals/x/k/approval.json", "consumed/x/consumed.json"]);
        let one = &s.added_files(a).unwrap()[0];
        assert_eq!(s.read_blob(one.blob, 3).unwrap(), b"one");
        assert!(s.read_blob(one.blob, 2).unwrap_err().contains("larger than 2"));
        assert!(s.holds_commit(b, a) && s.holds_commit(b, b) && !s.holds_commit(a, b));
        // Equal content on an equal parent is an equal commit.
        let again = s
            .ledger_commit(None, &[("plans/x/plan.json".into(), b"one".to_vec())], "a")
            .unwrap();
        assert_eq!(again, a);
    }
}
