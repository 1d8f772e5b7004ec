//! Commit-graph questions, answered so that cost grows with the repository, not with
//! branches × history: one walk from the base gives the reachable set; each branch then
//! only walks its own commits until it meets that set.
//!
//! Parents are read from the object database (`git_odb_read`, no object cache, no full
//! commit parse) or, for [`Reads::Fast`], from git's commit-graph file first
//! (`commit_graph.rs`). `Fast` is for planning only: the plan is re-derived with
//! [`Reads::Verified`] at `verify`/`apply`, so a crafted commit-graph can make a plan
//! refused, never make it applied.

use super::commit_graph::CommitGraph;
use super::shallow::Shallow;
use super::{CommitFacts, Repo};
use crate::error::{Error, Result};
use git2::Oid;
use std::collections::{HashMap, HashSet};

/// Where a walk reads parents from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The objects themselves: the resolver of record (`verify`, `apply`).
    Verified,
    /// The commit-graph file when the repository has one (`plan`, re-checked later).
    Fast,
}

/// Every commit reachable from the base, indexed; with `dag`, also each one's parents and
/// topological level (1 + the highest level of its parents; roots are 1).
pub struct Reachable {
    base: Oid,
    index: HashMap<Oid, u32>,
    dag: Option<Dag>,
}

/// The base's history by index: `parents[starts[i]..starts[i + 1]]` are commit i's parents.
struct Dag {
    oids: Vec<Oid>,
    starts: Vec<u32>,
    parents: Vec<u32>,
    level: Vec<u32>,
}

impl Reachable {
    /// The commit the set was walked from.
    pub fn base(&self) -> Oid {
        self.base
    }

    pub fn contains(&self, oid: Oid) -> bool {
        self.index.contains_key(&oid)
    }

    /// How many commits the base reaches.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The topological level of a commit of the base (with a DAG only).
    pub fn level(&self, oid: Oid) -> Option<u32> {
        let dag = self.dag.as_ref()?;
        Some(dag.level[*self.index.get(&oid)? as usize])
    }

    /// Commits of the base at `min_level` or above that have exactly one parent, with their
    /// parent (the changes a squash merge lands as), oldest level first. Empty without a DAG.
    ///
    /// In history order, not the index's (object id) order: a commit's trees are stored in
    /// the pack as deltas against its neighbours' in history, and libgit2 keeps recently
    /// resolved delta bases, so diffing neighbours one after the other reads each chain once
    /// instead of once per commit (random order made the tree diffs' cost per commit grow
    /// with the pack: plan --squash-merged 3.3 s at 5k, 23 s at 20k, 6.9x for 4x the work).
    pub fn single_parent_commits_from(&self, min_level: u32) -> Vec<(Oid, Oid)> {
        let Some(dag) = &self.dag else { return vec![] };
        let mut window: Vec<usize> = (0..dag.oids.len())
            .filter(|&i| dag.level[i] >= min_level && dag.parents_of(i).len() == 1)
            .collect();
        window.sort_unstable_by_key(|&i| (dag.level[i], i));
        window
            .into_iter()
            .map(|i| (dag.oids[i], dag.oids[dag.parents_of(i)[0] as usize]))
            .collect()
    }

    /// The commits of `boundary` (commits of the base) that are not ancestors of another of
    /// them: where a branch whose walk met the base at `boundary` and the base have their
    /// best common ancestors, i.e. their merge-bases. Every commit of the base a branch
    /// reaches is reached through a boundary commit, so the common ancestors are exactly the
    /// boundary commits and their ancestors. Without a DAG, `boundary` as it is.
    ///
    /// One walk down from every boundary commit's parents, no lower than the lowest boundary
    /// commit's level: the boundary commits it never reaches are the best. (A check per pair
    /// was quadratic: a branch meeting 1,000 side lines of a 50,000-commit base, which anyone
    /// who can push a branch can make, took over 20 s, at verify and apply too.)
    pub fn best_of(&self, boundary: &[Oid]) -> Vec<Oid> {
        let Some(dag) = &self.dag else {
            return boundary.to_vec();
        };
        let at: Vec<usize> = boundary
            .iter()
            .filter_map(|b| self.index.get(b).map(|&i| i as usize))
            .collect();
        let Some(floor) = at.iter().map(|&i| dag.level[i]).min() else {
            return boundary.to_vec();
        };
        let mut below: HashSet<u32> = HashSet::new();
        let mut stack: Vec<u32> = at
            .iter()
            .flat_map(|&i| dag.parents_of(i).iter().copied())
            .collect();
        while let Some(i) = stack.pop() {
            if dag.level[i as usize] < floor || !below.insert(i) {
                continue;
            }
            stack.extend_from_slice(dag.parents_of(i as usize));
        }
        boundary
            .iter()
            .filter(|b| self.index.get(b).is_none_or(|i| !below.contains(i)))
            .copied()
            .collect()
    }

    /// Whether `ancestor` is reachable from `tip` (both commits of the base; with a DAG).
    /// Levels prune the walk: a commit below `ancestor`'s level cannot reach it.
    pub fn is_ancestor(&self, ancestor: Oid, tip: Oid) -> bool {
        let (Some(dag), Some(&a), Some(&t)) = (&self.dag, self.index.get(&ancestor), self.index.get(&tip))
        else {
            return false;
        };
        let floor = dag.level[a as usize];
        let mut seen = HashSet::new();
        let mut stack = vec![t];
        while let Some(i) = stack.pop() {
            if i == a {
                return true;
            }
            if dag.level[i as usize] <= floor || !seen.insert(i) {
                continue;
            }
            stack.extend_from_slice(dag.parents_of(i as usize));
        }
        false
    }
}

impl Dag {
    fn parents_of(&self, i: usize) -> &[u32] {
        &self.parents[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// Topological levels, by an iterative post-order walk (histories are deep); `None` for
    /// a history with a cycle. git's cannot have one (a commit names its parents by hash),
    /// but a crafted commit-graph can say so (`plan` reads parents from it), and so can an
    /// object whose content is not its id's (nothing re-hashes what `plan` reads): the walk
    /// must end, not grow its stack until memory runs out.
    fn levels(oids: usize, starts: &[u32], parents: &[u32]) -> Option<Vec<u32>> {
        /// A commit whose parents are being levelled: meeting it again below itself is a cycle.
        const OPEN: u32 = u32::MAX;
        let mut level = vec![0u32; oids];
        for root in 0..oids {
            if level[root] != 0 {
                continue;
            }
            let mut stack = vec![(root, false)];
            while let Some((i, expanded)) = stack.pop() {
                let ps = &parents[starts[i] as usize..starts[i + 1] as usize];
                if expanded {
                    level[i] = 1 + ps.iter().map(|&p| level[p as usize]).max().unwrap_or(0);
                    continue;
                }
                match level[i] {
                    0 => {}
                    OPEN => return None,
                    _ => continue,
                }
                level[i] = OPEN;
                stack.push((i, true));
                for &p in ps {
                    match level[p as usize] {
                        0 => stack.push((p as usize, false)),
                        OPEN => return None,
                        _ => {}
                    }
                }
            }
        }
        Some(level)
    }
}

/// Reads a commit's parents: the commit-graph when allowed and it holds the commit, else the
/// object (raw: the header's `parent` lines, no full parse); for [`Reads::Fast`] through gix
/// first (`objects.rs`), else libgit2.
pub struct Parents<'r> {
    odb: git2::Odb<'r>,
    /// Through gix first ([`Repo::fast_commit`]): only for [`Reads::Fast`].
    fast: Option<&'r Repo>,
    graph: Option<&'r CommitGraph>,
    /// A shallow clone's boundary: commits git treats as having no parents.
    shallow: Option<std::sync::Arc<Shallow>>,
}

impl Parents<'_> {
    /// A commit's parents and, with `facts`, its facts from the same read of its bytes; the
    /// facts are `None` where no object was read for the parents (a commit-graph answered, or
    /// a shallow boundary), or are not parseable: the caller reads them then as it would.
    pub fn of_noting(&self, oid: Oid, facts: bool) -> Result<(Vec<Oid>, Option<CommitFacts>)> {
        if let Some(ps) = self.without_object(oid) {
            return Ok((ps, None));
        }
        if !facts {
            return Ok((self.parsed(oid)?, None));
        }
        let (parents, facts) = self.object(oid, |data| (parse_parents(data), super::commit::facts(data)))?;
        Ok((parents.ok_or_else(|| malformed(oid))?, facts))
    }

    pub fn of(&self, oid: Oid) -> Result<Vec<Oid>> {
        match self.without_object(oid) {
            Some(ps) => Ok(ps),
            None => self.parsed(oid),
        }
    }

    /// Parents known without reading the commit: none at a shallow clone's boundary, else
    /// the commit-graph's, where allowed and it holds the commit.
    fn without_object(&self, oid: Oid) -> Option<Vec<Oid>> {
        if self.shallow.as_ref().is_some_and(|s| s.is_boundary(oid)) {
            return Some(Vec::new());
        }
        self.graph.and_then(|g| g.parents(oid))
    }

    /// The parents in the commit object's header: for [`Reads::Fast`] from its first bytes
    /// where they settle them (`prefix.rs`), else from the whole object.
    fn parsed(&self, oid: Oid) -> Result<Vec<Oid>> {
        if let Some(ps) = self.fast.and_then(|repo| repo.fast_parents(oid)) {
            return Ok(ps);
        }
        self.object(oid, parse_parents)?.ok_or_else(|| malformed(oid))
    }

    /// `f` over the commit object's bytes: through gix first for [`Reads::Fast`], else (or
    /// where gix cannot answer) libgit2's object database.
    fn object<R>(&self, oid: Oid, f: impl Fn(&[u8]) -> R) -> Result<R> {
        if let Some(got) = self.fast.and_then(|repo| repo.fast_commit(oid, &f)) {
            return Ok(got);
        }
        let obj = self.odb.read(oid)?;
        if obj.kind() != git2::ObjectType::Commit {
            return Err(Error::internal(format!("{oid} is not a commit")));
        }
        Ok(f(obj.data()))
    }
}

fn malformed(oid: Oid) -> Error {
    Error::internal(format!("commit {oid} is malformed"))
}

/// The `parent` lines of a commit's header, which follow its `tree` line.
pub(super) fn parse_parents(data: &[u8]) -> Option<Vec<Oid>> {
    let mut lines = data.split(|&b| b == b'\n');
    lines.next()?.strip_prefix(b"tree ")?;
    let mut out = Vec::new();
    for line in lines {
        let Some(hex) = line.strip_prefix(b"parent ") else {
            break;
        };
        out.push(Oid::from_str(std::str::from_utf8(hex).ok()?).ok()?);
    }
    Some(out)
}

/// What a branch holds beyond the base.
#[derive(Debug, Clone, Default)]
pub struct UnmergedCount {
    /// Commits reachable from the tip but not from the base.
    pub commits: u64,
    /// The commits of the base where the branch's own history meets it (its fork points).
    pub boundary: Vec<Oid>,
}

impl Repo {
    /// A parent reader for `reads` (the commit-graph is loaded on first use).
    pub fn parents(&self, reads: Reads) -> Result<Parents<'_>> {
        if reads == Reads::Fast {
            // Opened here, by the handle that makes the workers, so that they inherit it (each
            // reader then opens a store of its own: `objects.rs`).
            let _ = self.fast_objects();
        }
        Ok(Parents {
            odb: self.git.odb()?,
            fast: (reads == Reads::Fast).then_some(self),
            graph: match reads {
                Reads::Fast => self.commit_graph(),
                Reads::Verified => None,
            },
            shallow: self.shallow()?,
        })
    }

    /// Every commit reachable from the base, with parents and levels: one walk (`walk.rs`:
    /// on every core when it reads through gix).
    pub fn history(&self, base: Oid, reads: Reads) -> Result<Reachable> {
        Ok(self.history_noting(base, reads, &HashSet::new())?.0)
    }

    /// [`Repo::history`], and the facts of the commits among `tips` that the walk read as
    /// objects (without a commit-graph): a merged branch's tip is a commit of the base, and
    /// reading it again for its facts was a fifth of a plan's inflating on a real project
    /// (rust-lang/cargo: 7,096 merged pull-request heads in a 23,077-commit walk).
    pub fn history_noting(
        &self,
        base: Oid,
        reads: Reads,
        tips: &HashSet<Oid>,
    ) -> Result<(Reachable, HashMap<Oid, CommitFacts>)> {
        let (mut commits, facts) = self.walk_history(base, reads, tips)?;
        // The threads' shares arrive in any order; the index does not depend on it.
        commits.sort_unstable_by_key(|(oid, _)| *oid);
        let index: HashMap<Oid, u32> = commits
            .iter()
            .enumerate()
            .map(|(i, (oid, _))| (*oid, i as u32))
            .collect();
        let (oids, edges): (Vec<Oid>, Vec<Vec<Oid>>) = commits.into_iter().unzip();
        let mut starts = Vec::with_capacity(oids.len() + 1);
        let mut flat = Vec::with_capacity(oids.len() + oids.len() / 4);
        starts.push(0u32);
        for ps in edges {
            flat.extend(ps.iter().filter_map(|p| index.get(p).copied()));
            starts.push(flat.len() as u32);
        }
        let level = Dag::levels(oids.len(), &starts, &flat).ok_or_else(|| {
            Error::usage(format!(
                "the history of {base} has a cycle, which git's cannot: the commit-graph file or a commit object is corrupt"
            ))
            .with_hint("`git commit-graph write --reachable` rewrites the commit-graph; `git fsck` checks the objects")
        })?;
        let reachable = Reachable {
            base,
            index,
            dag: Some(Dag {
                oids,
                starts,
                parents: flat,
                level,
            }),
        };
        Ok((reachable, facts.into_iter().collect()))
    }

    /// Every commit reachable from any of `tips` (e.g. every branch, for tags: a tag whose
    /// commit is outside this set is the only name of some history). One walk.
    pub fn reachable_from_all(&self, tips: &[Oid]) -> Result<Reachable> {
        let mut walk = self.git.revwalk()?;
        for tip in tips {
            walk.push(*tip)?;
        }
        let mut index = HashMap::new();
        for oid in walk {
            let n = index.len() as u32;
            index.insert(oid?, n);
        }
        Ok(Reachable {
            base: tips.first().copied().unwrap_or(Oid::ZERO_SHA1),
            index,
            dag: None,
        })
    }

    /// Walk back from `tip`, stopping at commits of the base.
    pub fn unmerged(&self, tip: Oid, base: &Reachable) -> Result<UnmergedCount> {
        unmerged_with(&self.parents(Reads::Verified)?, tip, base)
    }

    /// The e-mail of every author and committer of the commits reachable from `tip` but not
    /// from the base: whose work a deletion puts at stake (review routing). Sorted, distinct.
    ///
    /// Parents come from [`Parents`], as for every other walk, never from `git2::Commit`:
    /// libgit2 grafts a commit's parents from a `shallow` file in the *worktree's* git dir
    /// (`.git/worktrees/<name>/shallow`, which git never reads) and accepts parents on its
    /// lines, so a planner's worktree could cut this walk, and hide whose work is lost, while
    /// git and `commits_not_in_base` see the whole branch.
    pub fn people_not_in(&self, tip: Oid, base: &Reachable) -> Result<Vec<String>> {
        let parents = self.parents(Reads::Verified)?;
        let mut people = std::collections::BTreeSet::new();
        let mut seen: HashSet<Oid> = HashSet::new();
        let mut stack = vec![tip];
        while let Some(oid) = stack.pop() {
            if !seen.insert(oid) || base.contains(oid) {
                continue;
            }
            let c = self.git.find_commit(oid)?;
            for who in [c.author(), c.committer()] {
                people.insert(String::from_utf8_lossy(who.email_bytes()).into_owned());
            }
            stack.extend(parents.of(oid)?);
        }
        Ok(people.into_iter().collect())
    }

    /// The fork point of a branch (`tip`) whose walk met the base's history `reachable` at
    /// `boundary`: the boundary commit itself in the usual case; else git's merge-base of base
    /// and tip, which is the one boundary commit no other boundary commit descends from
    /// ([`Reachable::best_of`]) when there is one, and is asked of libgit2 only when there
    /// are several (a criss-cross), so that its choice among them stays libgit2's.
    ///
    /// libgit2's merge-base reads every commit it walks as an object (it uses no
    /// commit-graph): for vite's 9,030 pull-request heads, many of which merged `main` into
    /// themselves, those walks were 46% of `plan --squash-merged` (24 s of 53).
    pub fn fork_point(&self, reachable: &Reachable, tip: Oid, boundary: &[Oid]) -> Option<Oid> {
        match boundary {
            [] => None,
            [one] => Some(*one),
            _ => match reachable.best_of(boundary).as_slice() {
                [one] => Some(*one),
                _ => self.git.merge_base(reachable.base(), tip).ok(),
            },
        }
    }

    /// Whether merging `tip` into commit `into` (from the tip's fork point `fork`) changes
    /// nothing: no conflict, and the merged tree is `into`'s. In memory: nothing is written.
    pub fn merge_changes_nothing(&self, fork: Oid, into: Oid, tip: Oid) -> Result<bool> {
        let tree = |c: Oid| -> Result<git2::Tree<'_>> { Ok(self.git.find_commit(c)?.tree()?) };
        let (fork, into, tip) = (tree(fork)?, tree(into)?, tree(tip)?);
        let merged = self.git.merge_trees(&fork, &into, &tip, None)?;
        if merged.has_conflicts() {
            return Ok(false);
        }
        let diff = self.git.diff_tree_to_index(Some(&into), Some(&merged), None)?;
        Ok(diff.deltas().len() == 0)
    }
}

/// Walk back from `tip` with `parents`, stopping at commits of the base.
pub fn unmerged_with(parents: &Parents, tip: Oid, base: &Reachable) -> Result<UnmergedCount> {
    if base.contains(tip) {
        return Ok(UnmergedCount {
            commits: 0,
            boundary: vec![tip],
        });
    }
    unmerged_after(parents, &Beyond::default(), tip, parents.of(tip)?, base)
}

/// The parents of commits outside the base, shared by every branch's walk (and its threads).
///
/// Unmerged branches share history beyond the base (stacked pull requests, branches off a
/// long-lived branch, a fork's old history): walked one by one, the branches of a real
/// project read the same commits over and over. rust-lang/cargo's 8,872 pull-request heads,
/// 1,776 of them unmerged, reach 10,734 commits outside `master` but 102,781 counted branch
/// by branch; each read is an inflate (without a commit-graph), and those walks were half of
/// the plan's time. Here each of those commits is read once; the walks themselves stay per
/// branch (they count each branch's own commits), over this map.
#[derive(Default)]
pub struct Beyond {
    parents: std::sync::Mutex<HashMap<Oid, std::sync::Arc<[Oid]>>>,
}

impl Beyond {
    fn of(&self, parents: &Parents, oid: Oid) -> Result<std::sync::Arc<[Oid]>> {
        if let Some(ps) = self.known().get(&oid) {
            return Ok(ps.clone());
        }
        // Read without the lock: two threads may both read a commit, never block each other.
        let read: std::sync::Arc<[Oid]> = parents.of(oid)?.into();
        self.known().insert(oid, read.clone());
        Ok(read)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<Oid, std::sync::Arc<[Oid]>>> {
        // A poisoned lock only means another walk panicked; what the map holds is still true.
        self.parents.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// [`unmerged_with`] for a `tip` that is not a commit of the base, whose parents
/// (`tip_parents`) the caller has read already; commits beyond the base are read through
/// `beyond`, once for every branch that reaches them.
pub fn unmerged_after(
    parents: &Parents,
    beyond: &Beyond,
    tip: Oid,
    tip_parents: Vec<Oid>,
    base: &Reachable,
) -> Result<UnmergedCount> {
    let mut out = UnmergedCount {
        commits: 1,
        boundary: vec![],
    };
    let mut seen: HashSet<Oid> = HashSet::from([tip]);
    let mut stack = tip_parents;
    while let Some(oid) = stack.pop() {
        if !seen.insert(oid) {
            continue;
        }
        if base.contains(oid) {
            out.boundary.push(oid);
            continue;
        }
        out.commits += 1;
        stack.extend(beyond.of(parents, oid)?.iter());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_the_header_lines_after_the_tree() {
        let tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
        let p1 = "1111111111111111111111111111111111111111";
        let p2 = "2222222222222222222222222222222222222222";
        let raw = format!("tree {tree}\nparent {p1}\nparent {p2}\nauthor a <a> 1 +0000\n\nparent {tree}\n");
        let got = parse_parents(raw.as_bytes()).unwrap();
        assert_eq!(got, vec![Oid::from_str(p1).unwrap(), Oid::from_str(p2).unwrap()]);
        assert_eq!(
            parse_parents(format!("tree {tree}\nauthor a\n").as_bytes()),
            Some(vec![])
        );
        assert_eq!(parse_parents(b"author a\n"), None);
        assert_eq!(
            parse_parents(format!("tree {tree}\nparent zz\n").as_bytes()),
            None
        );
    }

    #[test]
    fn a_cycle_has_no_levels_and_the_walk_ends() {
        // 0 <- 1 <- 2 <- 0 (a lie only a crafted commit-graph or object can tell), 3 <- 3,
        // and a cycle reached from a commit outside it: 4 -> 5 <-> 6.
        for parents_of in [
            &[&[2u32][..], &[0], &[1]][..],
            &[&[], &[0], &[1], &[3]],
            &[&[], &[], &[], &[], &[5], &[6], &[5]],
        ] {
            let mut starts = vec![0u32];
            let mut flat = vec![];
            for ps in parents_of {
                flat.extend_from_slice(ps);
                starts.push(flat.len() as u32);
            }
            assert_eq!(
                Dag::levels(parents_of.len(), &starts, &flat),
                None,
                "{parents_of:?}"
            );
        }
        // A diamond is no cycle: 0 <- 1, 0 <- 2, 3 = merge(1, 2), each parent met twice.
        let (starts, flat) = (vec![0u32, 0, 1, 2, 4], vec![0u32, 0, 1, 2]);
        assert_eq!(Dag::levels(4, &starts, &flat), Some(vec![1, 2, 2, 3]));
    }

    #[test]
    fn levels_count_the_longest_path_to_a_root() {
        // 0 <- 1 <- 2, 0 <- 3, 4 = merge(2, 3); indices are arbitrary, parents point down.
        let parents_of: [&[u32]; 5] = [&[], &[0], &[1], &[0], &[2, 3]];
        let mut starts = vec![0u32];
        let mut flat = vec![];
        for ps in parents_of {
            flat.extend_from_slice(ps);
            starts.push(flat.len() as u32);
        }
        assert_eq!(Dag::levels(5, &starts, &flat), Some(vec![1, 2, 3, 2, 4]));
    }

    /// A repository to write commits into (all with the empty tree), for history shapes.
    struct Shapes {
        repo: git2::Repository,
    }

    impl Shapes {
        fn init(dir: &std::path::Path) -> Shapes {
            Shapes {
                repo: git2::Repository::init(dir).unwrap(),
            }
        }

        fn commit(&self, parents: &[Oid], msg: &str) -> Oid {
            let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
            let tree = self.repo.treebuilder(None).unwrap().write().unwrap();
            let tree = self.repo.find_tree(tree).unwrap();
            let ps: Vec<_> = parents
                .iter()
                .map(|p| self.repo.find_commit(*p).unwrap())
                .collect();
            self.repo
                .commit(None, &sig, &sig, msg, &tree, &ps.iter().collect::<Vec<_>>())
                .unwrap()
        }
    }

    /// A base of three commits and, beyond it, a stack: `a` (2 commits off the base), `b` on
    /// `a` (1 more), `c` on `b` (1 more) and `d` merging `c` with a commit off the root.
    fn stacked(dir: &std::path::Path) -> (Oid, Vec<Oid>) {
        let shapes = Shapes::init(dir);
        let commit = |parents: &[Oid], msg: &str| shapes.commit(parents, msg);
        let root = commit(&[], "root");
        let fork = commit(&[root], "fork");
        let base = commit(&[fork], "main");
        let a1 = commit(&[fork], "a1");
        let a = commit(&[a1], "a2");
        let b = commit(&[a], "b");
        let c = commit(&[b], "c");
        let side = commit(&[root], "side");
        let d = commit(&[c, side], "d");
        (base, vec![a, b, c, d])
    }

    #[test]
    fn branches_sharing_history_beyond_the_base_read_it_once_and_count_it_each() {
        let tmp = tempfile::tempdir().unwrap();
        let (base, tips) = stacked(tmp.path());
        let repo = Repo::open(Some(tmp.path())).unwrap();
        let reachable = repo.history(base, Reads::Verified).unwrap();
        let parents = repo.parents(Reads::Verified).unwrap();
        let shared = Beyond::default();
        let counts: Vec<u64> = tips
            .iter()
            .map(|&t| {
                unmerged_after(&parents, &shared, t, parents.of(t).unwrap(), &reachable)
                    .unwrap()
                    .commits
            })
            .collect();
        // Each branch's own count, as a walk of its own (a fresh map) finds it.
        let alone: Vec<u64> = tips
            .iter()
            .map(|&t| unmerged_with(&parents, t, &reachable).unwrap().commits)
            .collect();
        assert_eq!(counts, vec![2, 3, 4, 6]);
        assert_eq!(counts, alone);
        // Read once: the map holds each commit beyond the base that a walk stepped onto
        // (every one but `d`, whose parents the caller read), and nothing of the base.
        let known = shared.known();
        assert_eq!(known.len(), 5, "a1, a2, b, c, side: {:?}", known.keys());
        assert!(known.keys().all(|o| !reachable.contains(*o)));
    }

    #[test]
    fn the_fork_point_of_a_branch_that_merged_the_base_in_is_gits_merge_base() {
        // main: m0 - m1 - m2 - m3 - m4; topic forks at m0, merges m1 in, then m3 in: its walk
        // meets main at m0, m1 and m3, and git's merge-base is m3.
        let tmp = tempfile::tempdir().unwrap();
        let shapes = Shapes::init(tmp.path());
        let commit = |parents: &[Oid], msg: &str| shapes.commit(parents, msg);
        let mut main = vec![commit(&[], "m0")];
        for i in 1..5 {
            main.push(commit(&[main[i - 1]], &format!("m{i}")));
        }
        let t1 = commit(&[main[0]], "t1");
        let t2 = commit(&[t1, main[1]], "merge m1");
        let t3 = commit(&[t2], "t3");
        let tip = commit(&[t3, main[3]], "merge m3");
        let r = Repo::open(Some(tmp.path())).unwrap();
        let reachable = r.history(main[4], Reads::Verified).unwrap();
        let parents = r.parents(Reads::Verified).unwrap();
        let walked = unmerged_with(&parents, tip, &reachable).unwrap();
        let mut boundary = walked.boundary.clone();
        boundary.sort();
        let mut expected = vec![main[0], main[1], main[3]];
        expected.sort();
        assert_eq!(boundary, expected);
        assert_eq!(reachable.best_of(&walked.boundary), vec![main[3]]);
        let git_says = shapes.repo.merge_base(main[4], tip).unwrap();
        assert_eq!(r.fork_point(&reachable, tip, &walked.boundary), Some(git_says));
        assert_eq!(git_says, main[3]);
    }

    #[test]
    fn best_of_on_a_wide_boundary_is_one_walk_not_one_per_pair() {
        // Found by an attack on the change: main 0..n linear; side commit s_j (parent
        // main[j*n/k]); a chain of merges of (previous, s_j) on top of main. A branch meeting
        // the base at every s_j made a check per pair walk ~n/3 commits k^2/2 times.
        let (n, k) = (50_000usize, 1_000usize);
        let mut parents_of: Vec<Vec<u32>> = Vec::new();
        for i in 0..n {
            parents_of.push(if i == 0 { vec![] } else { vec![i as u32 - 1] });
        }
        for j in 0..k {
            parents_of.push(vec![(j * n / k) as u32]);
        }
        for j in 0..k {
            let prev = if j == 0 { n - 1 } else { n + k + j - 1 };
            parents_of.push(vec![prev as u32, (n + j) as u32]);
        }
        let total = parents_of.len();
        let oid = |i: usize| {
            let mut b = [0u8; 20];
            b[..8].copy_from_slice(&(i as u64 + 1).to_be_bytes());
            Oid::from_bytes(&b).unwrap()
        };
        let mut starts = vec![0u32];
        let mut flat = vec![];
        for ps in &parents_of {
            flat.extend_from_slice(ps);
            starts.push(flat.len() as u32);
        }
        let level = Dag::levels(total, &starts, &flat).unwrap();
        let oids: Vec<Oid> = (0..total).map(oid).collect();
        let reachable = Reachable {
            base: oid(total - 1),
            index: (0..total).map(|i| (oid(i), i as u32)).collect(),
            dag: Some(Dag {
                oids,
                starts,
                parents: flat,
                level,
            }),
        };
        // unmerged_after's boundary for an octopus of the side commits: none descends from
        // another, so all are best. (Not timed: a quadratic walk takes minutes, which the
        // test run's own limit catches.)
        let boundary: Vec<Oid> = (0..k).rev().map(|j| oid(n + j)).collect();
        assert_eq!(reachable.best_of(&boundary).len(), k);
        // With two of main's commits among them: main[10] is below the side commits forked
        // above it (and below main's top), so not best; main's top descends from no side
        // commit and is below none, so best.
        let mut mixed = boundary.clone();
        mixed.push(oid(10));
        mixed.push(oid(n - 1));
        let best = reachable.best_of(&mixed);
        assert!(best.contains(&oid(n - 1)));
        assert!(!best.contains(&oid(10)), "main[10] is an ancestor of main's top");
        assert_eq!(best.len(), k + 1);
    }
}
