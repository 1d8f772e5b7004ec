//! Commit-graph questions, answered so that cost grows with the repository, not with
//! branches × history: one walk from the base gives the reachable set; each branch then
//! only walks its own commits until it meets that set.

use super::Repo;
use crate::error::Result;
use git2::Oid;
use std::collections::HashSet;

/// Every commit reachable from the base.
pub struct Reachable {
    base: Oid,
    set: HashSet<Oid>,
}

impl Reachable {
    /// The commit the set was walked from.
    pub fn base(&self) -> Oid {
        self.base
    }

    pub fn contains(&self, oid: Oid) -> bool {
        self.set.contains(&oid)
    }
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
    pub fn reachable_from(&self, base: Oid) -> Result<Reachable> {
        let mut walk = self.git.revwalk()?;
        walk.push(base)?;
        let mut set = HashSet::new();
        for oid in walk {
            set.insert(oid?);
        }
        Ok(Reachable { base, set })
    }

    /// Every commit reachable from any of `tips` (e.g. every branch, for tags: a tag whose
    /// commit is outside this set is the only name of some history). One walk.
    pub fn reachable_from_all(&self, tips: &[Oid]) -> Result<Reachable> {
        let mut walk = self.git.revwalk()?;
        for tip in tips {
            walk.push(*tip)?;
        }
        let mut set = HashSet::new();
        for oid in walk {
            set.insert(oid?);
        }
        Ok(Reachable {
            base: tips.first().copied().unwrap_or(Oid::ZERO_SHA1),
            set,
        })
    }

    /// Walk back from `tip`, stopping at commits of the base.
    pub fn unmerged(&self, tip: Oid, base: &Reachable) -> Result<UnmergedCount> {
        let mut out = UnmergedCount::default();
        let mut seen: HashSet<Oid> = HashSet::new();
        let mut stack = vec![tip];
        while let Some(oid) = stack.pop() {
            if !seen.insert(oid) {
                continue;
            }
            if base.contains(oid) {
                out.boundary.push(oid);
                continue;
            }
            out.commits += 1;
            stack.extend(self.git.find_commit(oid)?.parent_ids());
        }
        Ok(out)
    }

    /// The e-mail of every author and committer of the commits reachable from `tip` but not
    /// from the base: whose work a deletion puts at stake (review routing). Sorted, distinct.
    pub fn people_not_in(&self, tip: Oid, base: &Reachable) -> Result<Vec<String>> {
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
            stack.extend(c.parent_ids());
        }
        Ok(people.into_iter().collect())
    }

    /// The fork point of a branch (`tip`) whose walk met the base at `boundary`: the boundary
    /// commit itself in the usual case, else git's merge-base of base and tip.
    pub fn fork_point(&self, base: Oid, tip: Oid, boundary: &[Oid]) -> Option<Oid> {
        match boundary {
            [] => None,
            [one] => Some(*one),
            _ => self.git.merge_base(base, tip).ok(),
        }
    }

    /// The newest commit every one of `commits` descends from (octopus merge base).
    pub fn common_ancestor(&self, commits: &[Oid]) -> Option<Oid> {
        match commits {
            [] => None,
            [one] => Some(*one),
            many => self.git.merge_base_octopus(many).ok(),
        }
    }

    /// Patch-ids of every non-merge commit of the base made since `since` (exclusive): the
    /// changes a squash merge of a branch forked at or after `since` could have landed as.
    pub fn base_patch_ids(&self, base: Oid, since: Option<Oid>) -> Result<HashSet<Oid>> {
        let mut walk = self.git.revwalk()?;
        walk.push(base)?;
        if let Some(s) = since {
            walk.hide(s)?;
        }
        let mut out = HashSet::new();
        for oid in walk {
            let commit = self.git.find_commit(oid?)?;
            if commit.parent_count() != 1 {
                continue;
            }
            let parent = commit.parent(0)?;
            if let Some(id) = self.tree_patch_id(parent.tree_id(), commit.tree_id())? {
                out.insert(id);
            }
        }
        Ok(out)
    }

    /// The patch-id of a branch's whole change (fork point to tip), as a squash merge has it.
    pub fn squash_patch_id(&self, fork: Oid, tip: Oid) -> Result<Option<Oid>> {
        let old = self.git.find_commit(fork)?.tree_id();
        let new = self.git.find_commit(tip)?.tree_id();
        self.tree_patch_id(old, new)
    }

    /// `None` for an empty change (nothing to find in the base).
    fn tree_patch_id(&self, old: Oid, new: Oid) -> Result<Option<Oid>> {
        if old == new {
            return Ok(None);
        }
        let old = self.git.find_tree(old)?;
        let new = self.git.find_tree(new)?;
        let diff = self.git.diff_tree_to_tree(Some(&old), Some(&new), None)?;
        if diff.deltas().len() == 0 {
            return Ok(None);
        }
        Ok(Some(diff.patchid(None)?))
    }
}
