//! git's commit-graph file (`objects/info/commit-graph`, or the split chain under
//! `objects/info/commit-graphs/`), read directly: each commit's parents without inflating it.
//!
//! Why not libgit2: libgit2 1.9 refuses any commit-graph with a chunk it does not know, and
//! every git since 2.34 writes one (`GDA2`, generation data), so libgit2 silently falls back
//! to inflating every commit it walks (measured: a third of `plan`'s time was zlib).
//!
//! What it is not: a resolver of record. The file is untrusted input (anyone who can write
//! the repository can write it), so it is read only where the answer is re-derived from the
//! objects themselves before anything acts on it (`plan`; `verify`/`apply` re-check with
//! git2). Every offset and index is bounds-checked; a malformed file is ignored (`None`), a
//! commit it does not hold is read from the object database by the caller.

use git2::Oid;
use std::path::Path;

const HASH: usize = 20;
const NO_PARENT: u32 = 0x7000_0000;
const EDGE_MASK: u32 = 0x8000_0000;

/// One layer: its own OID table and commit data; positions are global across the chain.
struct Layer {
    data: Vec<u8>,
    fanout: usize,
    lookup: usize,
    commits: usize,
    commit_data: usize,
    /// The extra-edge list (octopus merges' further parents), if present.
    edges: Option<(usize, usize)>,
    /// Commits in the layers below this one (its first global position).
    offset: usize,
}

/// Every layer, base first.
pub struct CommitGraph {
    layers: Vec<Layer>,
}

impl CommitGraph {
    /// The repository's commit-graph, if it has one that parses. `objects` is the objects dir.
    pub fn load(objects: &Path) -> Option<CommitGraph> {
        let info = objects.join("info");
        let mut files = Vec::new();
        if let Ok(chain) = std::fs::read_to_string(info.join("commit-graphs/commit-graph-chain")) {
            for line in chain.lines() {
                let line = line.trim();
                if line.len() != 2 * HASH || !line.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                files.push(info.join(format!("commit-graphs/graph-{line}.graph")));
            }
        } else {
            files.push(info.join("commit-graph"));
        }
        let mut layers: Vec<Layer> = Vec::new();
        for f in files {
            let offset = layers.last().map_or(0, |l| l.offset + l.commits);
            layers.push(Layer::parse(std::fs::read(f).ok()?, offset)?);
        }
        (!layers.is_empty()).then_some(CommitGraph { layers })
    }

    /// How many commits the graph holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.layers.last().map_or(0, |l| l.offset + l.commits)
    }

    /// The parents of `oid`, or `None` when the graph does not hold it (or is malformed there).
    pub fn parents(&self, oid: Oid) -> Option<Vec<Oid>> {
        let (layer, local) = self.find(oid)?;
        let l = &self.layers[layer];
        let row = l.commit_data + local * (HASH + 16);
        let p1 = l.u32_at(row + HASH)?;
        let p2 = l.u32_at(row + HASH + 4)?;
        let mut out = Vec::with_capacity(2);
        if p1 == NO_PARENT {
            return Some(out);
        }
        out.push(self.oid_at(p1 as usize)?);
        if p2 == NO_PARENT {
            return Some(out);
        }
        if p2 & EDGE_MASK == 0 {
            out.push(self.oid_at(p2 as usize)?);
            return Some(out);
        }
        // An octopus: the rest of the parents are in the extra-edge list, the last one marked.
        let (start, count) = l.edges?;
        let mut i = (p2 & !EDGE_MASK) as usize;
        loop {
            if i >= count || out.len() > 100_000 {
                return None;
            }
            let e = l.u32_at(start + 4 * i)?;
            out.push(self.oid_at((e & !EDGE_MASK) as usize)?);
            if e & EDGE_MASK != 0 {
                return Some(out);
            }
            i += 1;
        }
    }

    fn find(&self, oid: Oid) -> Option<(usize, usize)> {
        let want = oid.as_bytes();
        for (i, l) in self.layers.iter().enumerate().rev() {
            let first = want[0] as usize;
            let lo = if first == 0 {
                0
            } else {
                l.u32_at(l.fanout + 4 * (first - 1))? as usize
            };
            let hi = l.u32_at(l.fanout + 4 * first)? as usize;
            if lo > hi || hi > l.commits {
                return None;
            }
            let (mut lo, mut hi) = (lo, hi);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let at = l.data.get(l.lookup + mid * HASH..l.lookup + (mid + 1) * HASH)?;
                match at.cmp(want) {
                    std::cmp::Ordering::Equal => return Some((i, mid)),
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                }
            }
        }
        None
    }

    fn oid_at(&self, global: usize) -> Option<Oid> {
        let l = self
            .layers
            .iter()
            .find(|l| global >= l.offset && global < l.offset + l.commits)?;
        let at = l.lookup + (global - l.offset) * HASH;
        Oid::from_bytes(l.data.get(at..at + HASH)?).ok()
    }
}

impl Layer {
    fn parse(data: Vec<u8>, offset: usize) -> Option<Layer> {
        // Header: "CGPH", version 1, hash version 1 (SHA-1), chunk count, base graph count.
        if data.len() < 8 + HASH || &data[..4] != b"CGPH" || data[4] != 1 || data[5] != 1 {
            return None;
        }
        let chunks = data[6] as usize;
        let end = data.len() - HASH;
        let (mut fanout, mut lookup, mut cdat, mut edges) = (None, None, None, None);
        let table = |i: usize| -> Option<(u32, usize)> {
            let at = 8 + 12 * i;
            let id = u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?);
            let off = u64::from_be_bytes(data.get(at + 4..at + 12)?.try_into().ok()?);
            Some((id, usize::try_from(off).ok()?))
        };
        for i in 0..chunks {
            let (id, start) = table(i)?;
            let (_, next) = table(i + 1)?;
            if start > next || next > end {
                return None;
            }
            let span = (start, next - start);
            match &id.to_be_bytes() {
                b"OIDF" => fanout = Some(span),
                b"OIDL" => lookup = Some(span),
                b"CDAT" => cdat = Some(span),
                b"EDGE" => edges = Some((span.0, span.1 / 4)),
                _ => {} // generation data, bloom filters, base graphs: not needed here
            }
        }
        let (fanout, lookup, cdat) = (fanout?, lookup?, cdat?);
        if fanout.1 != 256 * 4 {
            return None;
        }
        let l = Layer {
            commits: 0,
            fanout: fanout.0,
            lookup: lookup.0,
            commit_data: cdat.0,
            edges,
            offset,
            data,
        };
        let commits = l.u32_at(fanout.0 + 255 * 4)? as usize;
        if lookup.1 != commits * HASH || cdat.1 != commits * (HASH + 16) {
            return None;
        }
        Some(Layer { commits, ..l })
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        Some(u32::from_be_bytes(self.data.get(at..at + 4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::repo::test_support::git;

    /// A history with a root, merges, and an octopus (extra-edge list).
    fn history(dir: &Path) -> Vec<Oid> {
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "root"]);
        for b in ["a", "b", "c"] {
            git(dir, &["checkout", "-q", "-b", b, "main"]);
            git(dir, &["commit", "-q", "--allow-empty", "-m", b]);
        }
        git(dir, &["checkout", "-q", "main"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "m"]);
        git(dir, &["merge", "-q", "--no-ff", "-m", "two", "a"]);
        git(dir, &["merge", "-q", "--no-ff", "-m", "octopus", "b", "c"]);
        git(dir, &["rev-list", "--all"])
            .lines()
            .map(|l| Oid::from_str(l).unwrap())
            .collect()
    }

    fn parents_by_git2(dir: &Path, oid: Oid) -> Vec<Oid> {
        git2::Repository::open(dir)
            .unwrap()
            .find_commit(oid)
            .unwrap()
            .parent_ids()
            .collect()
    }

    #[test]
    fn parents_from_the_graph_file_match_the_objects() {
        let tmp = tempfile::tempdir().unwrap();
        let commits = history(tmp.path());
        git(tmp.path(), &["commit-graph", "write", "--reachable"]);
        let graph = CommitGraph::load(&tmp.path().join(".git/objects")).unwrap();
        assert_eq!(graph.len(), commits.len());
        for c in &commits {
            assert_eq!(graph.parents(*c), Some(parents_by_git2(tmp.path(), *c)), "{c}");
        }
        assert!(commits.iter().any(|c| parents_by_git2(tmp.path(), *c).len() == 3));
    }

    #[test]
    fn a_split_chain_is_read_across_layers_and_new_commits_are_not_in_it() {
        let tmp = tempfile::tempdir().unwrap();
        let commits = history(tmp.path());
        git(tmp.path(), &["commit-graph", "write", "--reachable", "--split"]);
        git(tmp.path(), &["commit", "-q", "--allow-empty", "-m", "later"]);
        git(
            tmp.path(),
            &["commit-graph", "write", "--reachable", "--split=no-merge"],
        );
        git(
            tmp.path(),
            &["commit", "-q", "--allow-empty", "-m", "not in the graph"],
        );
        let newest = Oid::from_str(&git(tmp.path(), &["rev-parse", "HEAD"])).unwrap();
        let later = Oid::from_str(&git(tmp.path(), &["rev-parse", "HEAD~1"])).unwrap();
        let graph = CommitGraph::load(&tmp.path().join(".git/objects")).unwrap();
        assert_eq!(graph.layers.len(), 2);
        for c in commits.iter().chain([&later]) {
            assert_eq!(graph.parents(*c), Some(parents_by_git2(tmp.path(), *c)), "{c}");
        }
        assert_eq!(graph.parents(newest), None);
    }

    #[test]
    fn a_truncated_or_foreign_file_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        history(tmp.path());
        git(tmp.path(), &["commit-graph", "write", "--reachable"]);
        let file = tmp.path().join(".git/objects/info/commit-graph");
        let bytes = std::fs::read(&file).unwrap();
        for cut in [0, 7, 40, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&file, &bytes[..cut]).unwrap();
            if let Some(g) = CommitGraph::load(&tmp.path().join(".git/objects")) {
                // Whatever survives must not panic on lookups.
                let _ = g.parents(Oid::from_bytes(&[0xff; 20]).unwrap());
            }
        }
        std::fs::write(&file, b"not a commit graph at all, just text").unwrap();
        assert!(CommitGraph::load(&tmp.path().join(".git/objects")).is_none());
    }
}
