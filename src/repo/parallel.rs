//! Work split over the machine's cores, one repository handle per thread (a libgit2
//! repository is not `Sync`). For embarrassingly parallel reads only: per-branch
//! observation, per-commit patch-ids. Results come back in input order, so the answer does
//! not depend on the number of threads.

use super::Repo;
use crate::error::Result;

/// Below this many items a second thread (and a second repository handle) costs more than it
/// saves.
const MIN_PER_THREAD: usize = 256;
/// Beyond a few threads the object database's locks and memory bandwidth stop paying.
const MAX_THREADS: usize = 4;

impl Repo {
    /// Open now the worker handles [`Repo::in_parallel`] will use, before the caller loads
    /// something large: opening a handle parses the whole repository config, and `apply` at
    /// 50,000 `[branch]` sections peaked with that parse on top of the parsed plan. Best
    /// effort: a handle that cannot be opened now is opened (and its error reported) when
    /// needed.
    pub fn open_workers(&self) {
        let wanted = threads_for(usize::MAX).saturating_sub(1);
        let Ok(mut spare) = self.spare.lock() else {
            return;
        };
        while spare.len() < wanted {
            match self.open_handle() {
                Ok(git) => spare.push(git),
                Err(_) => return,
            }
        }
    }

    /// Return a handle a worker thread is done with, for the next parallel step to take.
    pub(super) fn give_back(&self, worker: Repo) {
        if let Ok(mut spare) = self.spare.lock() {
            spare.push(worker.git);
        }
    }

    /// `f` over every item, on up to as many threads as there are cores; this thread uses
    /// `self`, each other thread its own [`Repo::worker`] handle.
    pub fn in_parallel<T, R, F>(&self, items: &[T], f: F) -> Result<Vec<R>>
    where
        T: Sync,
        R: Send,
        F: Fn(&Repo, &T) -> Result<R> + Sync,
    {
        let threads = threads_for(items.len());
        if threads == 1 {
            return items.iter().map(|t| f(self, t)).collect();
        }
        let chunk = items.len().div_ceil(threads);
        let mut parts = items.chunks(chunk);
        let first = parts.next().unwrap_or_default();
        let workers: Vec<Repo> = (1..threads).map(|_| self.worker()).collect::<Result<_>>()?;
        let f = &f;
        std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .zip(workers)
                .map(|(part, repo)| {
                    s.spawn(move || part.iter().map(|t| f(&repo, t)).collect::<Result<Vec<R>>>())
                })
                .collect();
            let mut out: Vec<R> = first.iter().map(|t| f(self, t)).collect::<Result<_>>()?;
            for h in handles {
                let part = h
                    .join()
                    .map_err(|_| crate::error::Error::internal("a worker thread panicked"))??;
                out.extend(part);
            }
            Ok(out)
        })
    }
}

/// How many threads `items` items are split over.
pub(super) fn threads_for(items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(MAX_THREADS).min(items / MIN_PER_THREAD).max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_input_order_across_threads() {
        let tmp = tempfile::tempdir().unwrap();
        git2::Repository::init(tmp.path()).unwrap();
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        let items: Vec<u32> = (0..5_000).collect();
        let got = repo
            .in_parallel(&items, |_, &i| Ok((i, std::thread::current().id())))
            .unwrap();
        assert_eq!(got.iter().map(|(i, _)| *i).collect::<Vec<_>>(), items);
        let threads: std::collections::HashSet<_> = got.iter().map(|(_, t)| *t).collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads.len(), cores.clamp(1, 4));
    }

    #[test]
    fn workers_opened_ahead_are_the_ones_a_parallel_run_takes() {
        let tmp = tempfile::tempdir().unwrap();
        git2::Repository::init(tmp.path()).unwrap();
        let repo = super::Repo::open(Some(tmp.path())).unwrap();
        repo.open_workers();
        let opened = repo.spare.lock().unwrap().len();
        assert_eq!(opened, super::threads_for(usize::MAX) - 1);
        let items: Vec<u32> = (0..5_000).collect();
        let got = repo.in_parallel(&items, |_, &i| Ok(i * 2)).unwrap();
        assert_eq!(got, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(repo.spare.lock().unwrap().len(), 0, "every spare handle was used");
    }
}
