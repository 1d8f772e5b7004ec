//! Work split over the machine's cores, one repository handle per thread (a libgit2
//! repository is not `Sync`). For embarrassingly parallel reads only: per-branch
//! observation, per-commit patch-ids. Results come back in input order, so the answer does
//! not depend on the number of threads.
//!
//! Only work that reads objects through gix (`objects.rs`) is split. libgit2 takes a
//! process-wide mutex (its pack windows) and each pack's lock on every object read, whatever
//! the repository handle, so its readers queue on each other: on this project's 2-core
//! machines, two threads of libgit2 reads finished *later* than one (plan --squash-merged at
//! 5k real-shaped branches: 6.5-6.9 s on both cores, 4.5 s pinned to one, with 2 s of system
//! time in futex calls; plan's walk at 10k: 0.245 s vs 0.21 s).

use super::Repo;
use super::graph::Reads;
use crate::error::Result;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What a parallel step reads its objects through, which decides whether threads pay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// gix's object database: no lock shared between handles.
    Gix,
    /// libgit2: one thread (see the module's comment).
    Libgit2,
}

impl From<Reads> for Reader {
    /// [`Reads::Fast`] reads commits through gix; [`Reads::Verified`] through libgit2.
    fn from(reads: Reads) -> Reader {
        match reads {
            Reads::Fast => Reader::Gix,
            Reads::Verified => Reader::Libgit2,
        }
    }
}

/// Below this many items a second thread (and a second repository handle) costs more than it
/// saves.
const MIN_PER_THREAD: usize = 256;
/// Beyond a few threads the object database's locks and memory bandwidth stop paying.
const MAX_THREADS: usize = 4;
/// Items a thread takes at a time: few enough to balance, enough that taking costs nothing.
const BLOCK: usize = 32;

impl Repo {
    /// Return a handle a worker thread is done with, for the next parallel step to take.
    pub(super) fn give_back(&self, worker: Repo) {
        if let Ok(mut spare) = self.spare.lock() {
            spare.push(worker.git);
        }
    }

    /// `f` over every item, on up to as many threads as there are cores when it reads
    /// through gix (on this thread only through libgit2); this thread uses `self`, each
    /// other thread its own [`Repo::worker`] handle.
    pub fn in_parallel<T, R, F>(&self, items: &[T], reader: Reader, f: F) -> Result<Vec<R>>
    where
        T: Sync,
        R: Send,
        F: Fn(&Repo, &T) -> Result<R> + Sync,
    {
        let threads = threads_for(items.len(), reader);
        if threads == 1 {
            return items.iter().map(|t| f(self, t)).collect();
        }
        // Items are taken in blocks as threads come free, not split in equal halves up
        // front: the cost of an item varies by orders of magnitude (a merged branch is one
        // lookup, an unmerged one walks its own commits), and on real repositories such
        // branches cluster (old pull requests), so a fixed split left a core idle.
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let run = |repo: &Repo| -> Result<Vec<(usize, Vec<R>)>> {
            let mut done = Vec::new();
            loop {
                let start = next.fetch_add(BLOCK, Ordering::Relaxed);
                if start >= items.len() || failed.load(Ordering::Relaxed) {
                    return Ok(done);
                }
                let block = &items[start..(start + BLOCK).min(items.len())];
                match block.iter().map(|t| f(repo, t)).collect::<Result<Vec<R>>>() {
                    Ok(got) => done.push((start, got)),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
        };
        let workers: Vec<Repo> = (1..threads).map(|_| self.worker()).collect::<Result<_>>()?;
        let run = &run;
        let mut blocks = std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .into_iter()
                .map(|repo| s.spawn(move || run(&repo)))
                .collect();
            let mut blocks = run(self)?;
            for h in handles {
                let theirs = h
                    .join()
                    .map_err(|_| crate::error::Error::internal("a worker thread panicked"))??;
                blocks.extend(theirs);
            }
            Ok::<_, crate::error::Error>(blocks)
        })?;
        blocks.sort_unstable_by_key(|(start, _)| *start);
        Ok(blocks.into_iter().flat_map(|(_, got)| got).collect())
    }
}

/// How many threads `items` items read through `reader` are split over.
pub(super) fn threads_for(items: usize, reader: Reader) -> usize {
    if reader == Reader::Libgit2 {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(MAX_THREADS).min(items / MIN_PER_THREAD).max(1)
}

#[cfg(test)]
mod tests {
    use super::Reader;

    #[test]
    fn results_keep_input_order_across_threads() {
        let tmp = tempfile::tempdir().unwrap();
        git2::Repository::init(tmp.path()).unwrap();
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        let items: Vec<u32> = (0..5_000).collect();
        // Each item takes a while, so every thread is running before the items run out
        // (threads take blocks as they come free: trivial items may all go to the first).
        let got = repo
            .in_parallel(&items, Reader::Gix, |_, &i| {
                std::thread::sleep(std::time::Duration::from_micros(100));
                Ok((i, std::thread::current().id()))
            })
            .unwrap();
        assert_eq!(got.iter().map(|(i, _)| *i).collect::<Vec<_>>(), items);
        let threads: std::collections::HashSet<_> = got.iter().map(|(_, t)| *t).collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads.len(), cores.clamp(1, 4));
        let serial = repo
            .in_parallel(&items, Reader::Libgit2, |_, _| Ok(std::thread::current().id()))
            .unwrap();
        assert!(serial.iter().all(|t| *t == std::thread::current().id()));
    }

    #[test]
    fn a_failed_item_fails_the_whole_step() {
        let tmp = tempfile::tempdir().unwrap();
        git2::Repository::init(tmp.path()).unwrap();
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        let items: Vec<u32> = (0..5_000).collect();
        // Whichever thread holds item 40 fails, and its error is the step's: no partial
        // result comes back as a success. (How soon the other threads stop is not pinned: a
        // thread descheduled at the failure lets the others finish every item first.)
        for failing in [0, 40, 4_999] {
            let got = repo.in_parallel(&items, Reader::Gix, |_, &i| {
                if i == failing {
                    Err(crate::error::Error::internal(format!("item {i} is unreadable")))
                } else {
                    Ok(i)
                }
            });
            let e = got.expect_err("a failed item fails the step");
            assert!(format!("{e:?}").contains(&format!("item {failing} ")), "{e:?}");
        }
    }
}
