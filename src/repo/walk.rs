//! The base's whole history with every commit's parents, read on every core when the reads
//! go through gix (`plan`); through libgit2 (`verify`, `apply`) on one thread, since
//! libgit2's readers queue on its process-wide locks (`parallel.rs`).
//!
//! Reading a commit (inflating it, or a commit-graph lookup) is most of a plan's time in a
//! repository without a commit-graph, and one commit's parents are known only once it is read,
//! so a single chain cannot be split. A history with merges has many chains, though: each
//! thread follows one chain by itself (the first new parent it finds), and hands the others
//! (the second parents of merges, the side branches) to a shared stack that idle threads take
//! from. A linear history therefore costs one thread and no hand-offs; a history of merged
//! pull requests keeps both cores busy. Each commit is claimed once, when first found.

use super::graph::{Parents, Reads};
use super::{CommitFacts, Repo};
use crate::error::{Error, Result};
use git2::Oid;
use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Every commit read, with its parents (as git sees them: see `shallow.rs`).
pub type Commits = Vec<(Oid, Vec<Oid>)>;

/// The facts of the commits the walk was asked to note, where it read them.
pub type Noted = Vec<(Oid, CommitFacts)>;

struct Shared {
    /// Commits found and claimed but not read yet, for any thread to take.
    stack: Vec<Oid>,
    /// Every commit found so far.
    seen: HashSet<Oid>,
    /// Threads that hold a commit to read (and may find more).
    busy: usize,
    /// Threads waiting for the stack to fill.
    waiting: usize,
    /// A read failed: every thread stops.
    failed: bool,
}

struct Walk {
    shared: Mutex<Shared>,
    more: Condvar,
}

impl Repo {
    /// Every commit reachable from `base` with its parents, in no particular order.
    /// With the facts of those among `note` that it read as objects (see
    /// [`Repo::history_noting`]).
    pub(super) fn walk_history(
        &self,
        base: Oid,
        reads: Reads,
        note: &HashSet<Oid>,
    ) -> Result<(Commits, Noted)> {
        // Loaded before the workers are made, so that they share it.
        let parents = self.parents(reads)?;
        let walk = Walk {
            shared: Mutex::new(Shared {
                stack: Vec::new(),
                seen: HashSet::from([base]),
                busy: 1,
                waiting: 0,
                failed: false,
            }),
            more: Condvar::new(),
        };
        let helpers = match (reads, self.commit_graph()) {
            // Parents from the commit-graph are a lookup each, cheaper than the shared stack's
            // lock that every commit takes: one thread (10k real-shaped branches: plan 0.10 s,
            // 0.11-0.12 s with the walk on two).
            (Reads::Fast, Some(_)) => 0,
            _ => super::parallel::threads_for(usize::MAX, reads.into()) - 1,
        };
        let workers: Vec<Repo> = (0..helpers).map(|_| self.worker()).collect::<Result<_>>()?;
        let (mine, theirs) = std::thread::scope(|s| {
            let walk = &walk;
            let handles: Vec<_> = workers
                .into_iter()
                .map(|w| {
                    s.spawn(move || {
                        let got = w.parents(reads).and_then(|p| walk.follow(&p, None, note));
                        if got.is_err() {
                            walk.fail();
                        }
                        (w, got)
                    })
                })
                .collect();
            let mine = walk.follow(&parents, Some(base), note);
            if mine.is_err() {
                walk.fail();
            }
            (mine, handles.into_iter().map(|h| h.join()).collect::<Vec<_>>())
        });
        let (mut all, mut noted) = mine?;
        for joined in theirs {
            let (worker, got) = joined.map_err(|_| Error::internal("a history worker thread panicked"))?;
            let (commits, facts) = got?;
            all.extend(commits);
            noted.extend(facts);
            // `read_tips` takes the same handles next.
            self.give_back(worker);
        }
        Ok((all, noted))
    }
}

impl Walk {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A thread that panicked holding the lock fails the whole walk when joined.
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self) {
        self.lock().failed = true;
        self.more.notify_all();
    }

    /// Read commits until none is left: `start` first (already counted busy), then the chain
    /// it begins, then whatever the others hand over.
    fn follow(&self, parents: &Parents, start: Option<Oid>, note: &HashSet<Oid>) -> Result<(Commits, Noted)> {
        let mut out = Vec::new();
        let mut noted = Vec::new();
        let mut next = start;
        loop {
            let oid = match next.take() {
                Some(oid) => oid,
                None => match self.take() {
                    Some(oid) => oid,
                    None => return Ok((out, noted)),
                },
            };
            let (ps, facts) = parents.of_noting(oid, note.contains(&oid))?;
            if let Some(facts) = facts {
                noted.push((oid, facts));
            }
            let mut s = self.lock();
            for &p in &ps {
                if s.seen.insert(p) {
                    if next.is_none() {
                        next = Some(p);
                    } else {
                        s.stack.push(p);
                    }
                }
            }
            if next.is_none() {
                s.busy -= 1;
            }
            // Wake a waiting thread only when there is something for it (or nothing left
            // for anyone): a wake-up is a system call, and most commits hand nothing over.
            let wake = s.waiting > 0 && (!s.stack.is_empty() || s.busy == 0);
            drop(s);
            if wake {
                self.more.notify_all();
            }
            out.push((oid, ps));
        }
    }

    /// A commit from the shared stack, waiting while other threads may still find some;
    /// `None` when the walk is over (or failed).
    fn take(&self) -> Option<Oid> {
        let mut s = self.lock();
        loop {
            if s.failed {
                return None;
            }
            if let Some(oid) = s.stack.pop() {
                s.busy += 1;
                return Some(oid);
            }
            if s.busy == 0 {
                return None;
            }
            s.waiting += 1;
            s = self
                .more
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            s.waiting -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    /// A history of `prs` merged pull requests of 1-3 commits each, forked at many points.
    fn merged_prs(dir: &std::path::Path, prs: usize) -> git2::Oid {
        let repo = git2::Repository::init(dir).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let commit = |parents: &[git2::Oid], msg: &str| {
            let ps: Vec<_> = parents.iter().map(|p| repo.find_commit(*p).unwrap()).collect();
            repo.commit(None, &sig, &sig, msg, &tree, &ps.iter().collect::<Vec<_>>())
                .unwrap()
        };
        let mut main = vec![commit(&[], "root")];
        for pr in 0..prs {
            let fork = main[main.len().saturating_sub(1 + pr % 7)];
            let mut tip = fork;
            for c in 0..=(pr % 3) {
                tip = commit(&[tip], &format!("pr {pr} commit {c}"));
            }
            let head = *main.last().unwrap();
            main.push(commit(&[head, tip], &format!("merge {pr}")));
        }
        *main.last().unwrap()
    }

    #[test]
    fn the_walk_reads_each_commit_once_with_the_parents_git_sees() {
        let tmp = tempfile::tempdir().unwrap();
        let base = merged_prs(tmp.path(), 400);
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        let got = repo
            .walk_history(base, super::Reads::Verified, &Default::default())
            .unwrap()
            .0;
        let mut by_oid: HashMap<git2::Oid, Vec<git2::Oid>> = HashMap::new();
        for (oid, ps) in got {
            assert!(by_oid.insert(oid, ps).is_none(), "{oid} read twice");
        }
        let git = git2::Repository::open(tmp.path()).unwrap();
        let mut revwalk = git.revwalk().unwrap();
        revwalk.push(base).unwrap();
        let mut expected = 0;
        for oid in revwalk {
            let oid = oid.unwrap();
            let parents: Vec<_> = git.find_commit(oid).unwrap().parent_ids().collect();
            assert_eq!(by_oid.get(&oid), Some(&parents), "{oid}");
            expected += 1;
        }
        assert_eq!(by_oid.len(), expected);
    }

    #[test]
    fn a_missing_commit_fails_the_walk_on_every_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let base = merged_prs(tmp.path(), 300);
        // Remove one pull request's first commit (a loose object): its chain cannot be read.
        let git = git2::Repository::open(tmp.path()).unwrap();
        let victim = git
            .revwalk()
            .map(|mut w| {
                w.push(base).unwrap();
                w.map(Result::unwrap)
                    .find(|o| git.find_commit(*o).unwrap().summary_bytes() == Some(&b"pr 150 commit 0"[..]))
                    .unwrap()
            })
            .unwrap();
        let hex = victim.to_string();
        std::fs::remove_file(tmp.path().join(".git/objects").join(&hex[..2]).join(&hex[2..])).unwrap();
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        let e = repo
            .walk_history(base, super::Reads::Verified, &Default::default())
            .unwrap_err();
        assert!(format!("{e:?}").contains(&hex), "{e:?}");
    }
}
