//! Fast commit reads for planning ([`Reads::Fast`](super::Reads)), through gitoxide's object
//! database (`gix-odb`) instead of libgit2's.
//!
//! Why a second reader: without a commit-graph, most of a plan's time is reading the base's
//! commits, and libgit2 takes a process-wide lock (its pack-window mutex) and the pack's own
//! lock on every object read, even from separate repository handles. Two threads reading
//! commits through libgit2 spent a fifth of their CPU in futex calls and finished *later* than
//! one (10k real-shaped branches, 2 cores: 0.245 s vs 0.21 s pinned to one core). gix-odb
//! reads memory-mapped packs without a shared lock, with one reusable inflate state per handle:
//! the same 26,026 commits in 75 ms on one thread (libgit2: 96 ms) and 42 ms on two.
//!
//! What it is not: a resolver of record. It answers only `Reads::Fast`, whose results the
//! signed plan carries and `verify`/`apply` re-derive with libgit2 ([`Reads::Verified`]), so a
//! difference between the two readers can make a plan refused as drift, never applied. It
//! does not verify object hashes (neither does a `Fast` libgit2 read). It does not follow
//! replace refs (libgit2 does not either), and a shallow clone's boundary is applied above it
//! (`Parents::of`), as for libgit2. Anything it cannot answer (a store it cannot open, an
//! object it does not find) is asked of libgit2 instead, so errors keep libgit2's words.

use git2::Oid;
use gix_object::Find;

/// How many objects one gix store reads before it is dropped and opened again. gix maps
/// each pack file whole, and every page a read touches stays in the process's resident
/// memory until the store is dropped: a plan at 50,000 real-shaped branches (130,000 commits
/// of main spread over a 147 MB pack written by fast-import) peaked at 251 MB, 155 MB of it
/// the mapped pack and index. Reopening is a directory read and an index map: cheap beside
/// this many inflated objects (see docs/performance.md for the measured cost).
const READS_PER_MAPPING: u32 = 4096;

/// A reader of gix's object database. Each clone opens a store of its own on first use: a
/// handle is not `Sync` (one per thread), and a store of its own lets each reader drop its
/// mappings without waiting for the others'.
pub struct FastObjects {
    objects_dir: std::path::PathBuf,
    handle: Option<Handle>,
    /// The packs mapped again for reading the start of commits (`prefix.rs`), on first use;
    /// dropped with `handle`.
    packs: Option<super::prefix::Packs>,
    /// Objects read through `handle` or `packs` since they were opened.
    reads: u32,
    buf: Vec<u8>,
}

type Handle = gix_odb::Cache<gix_odb::store::Handle<std::sync::Arc<gix_odb::Store>>>;

impl Clone for FastObjects {
    fn clone(&self) -> FastObjects {
        FastObjects {
            objects_dir: self.objects_dir.clone(),
            handle: None,
            packs: None,
            reads: 0,
            buf: Vec::new(),
        }
    }
}

fn open_handle(objects_dir: &std::path::Path) -> Option<Handle> {
    gix_odb::at(objects_dir, gix_hash::Kind::Sha1)
        .ok()?
        .into_arc()
        .ok()
}

impl FastObjects {
    /// The object database under `objects_dir` (alternates included), or `None` where gix
    /// cannot open it (then libgit2 reads everything, as before).
    pub fn open(objects_dir: &std::path::Path) -> Option<FastObjects> {
        Some(FastObjects {
            objects_dir: objects_dir.to_path_buf(),
            handle: Some(open_handle(objects_dir)?),
            packs: None,
            reads: 0,
            buf: Vec::new(),
        })
    }

    /// The raw bytes of commit `oid`, or `None` where this reader does not have it as a commit
    /// (missing, another kind, or an error reading it): the caller then asks libgit2.
    pub fn commit(&mut self, oid: Oid) -> Option<&[u8]> {
        match self.object(oid)? {
            (gix_object::Kind::Commit, data) => Some(data),
            _ => None,
        }
    }

    /// The kind and raw bytes of object `oid`, or `None` where this reader does not have it
    /// (missing, or an error reading it): the caller then asks libgit2.
    pub fn object(&mut self, oid: Oid) -> Option<(gix_object::Kind, &[u8])> {
        let id = gix_hash::oid::try_from_bytes(oid.as_bytes()).ok()?;
        self.ready()?;
        let data = self.handle.as_ref()?.try_find(id, &mut self.buf).ok()??;
        Some((data.kind, data.data))
    }

    /// The kind and size of object `oid`, from its header alone (nothing inflated beyond
    /// it), or `None` where this reader does not have it or cannot tell.
    pub fn header(&mut self, oid: Oid) -> Option<(gix_object::Kind, u64)> {
        use gix_object::FindHeader;
        let id = gix_hash::oid::try_from_bytes(oid.as_bytes()).ok()?;
        self.ready()?;
        let header = self.handle.as_ref()?.try_header(id).ok()??;
        Some((header.kind, header.size))
    }

    /// Whether `oid` is a commit, from its header alone: a packed object's kind is in its
    /// entry's first bytes, so nothing is inflated (a delta's kind is its base's). `None`
    /// where this reader does not have it or cannot tell.
    pub fn is_commit(&mut self, oid: Oid) -> Option<bool> {
        Some(self.header(oid)?.0 == gix_object::Kind::Commit)
    }

    /// The parents of commit `oid` read from the start of its packed object (`prefix.rs`), or
    /// `None` where that does not settle them: the caller reads the whole commit then.
    pub fn parents(&mut self, oid: Oid) -> Option<Vec<Oid>> {
        self.count_read();
        let objects_dir = &self.objects_dir;
        self.packs
            .get_or_insert_with(|| super::prefix::Packs::open(objects_dir))
            .parents(oid)
    }

    /// A store open for one more read.
    fn ready(&mut self) -> Option<()> {
        self.count_read();
        if self.handle.is_none() {
            self.handle = Some(open_handle(&self.objects_dir)?);
        }
        Some(())
    }

    /// One more read; every READS_PER_MAPPING reads the mappings are dropped (and opened
    /// again when next needed), which unmaps what the last reads touched.
    fn count_read(&mut self) {
        if self.reads >= READS_PER_MAPPING {
            self.handle = None;
            self.packs = None;
            self.reads = 0;
        }
        self.reads += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commits(dir: &std::path::Path) -> (git2::Repository, Vec<Oid>) {
        let repo = git2::Repository::init(dir).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let mut oids = Vec::new();
        let mut parent: Option<git2::Commit> = None;
        for i in 0..5 {
            let parents: Vec<&git2::Commit> = parent.iter().collect();
            let oid = repo
                .commit(None, &sig, &sig, &format!("commit {i}"), &tree, &parents)
                .unwrap();
            oids.push(oid);
            parent = Some(repo.find_commit(oid).unwrap());
        }
        drop(parent);
        drop(tree);
        (repo, oids)
    }

    #[test]
    fn reads_the_same_bytes_as_libgit2_from_loose_objects_and_packs() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, oids) = repo_with_commits(tmp.path());
        let check = |repo: &git2::Repository| {
            let mut fast = FastObjects::open(&repo.path().join("objects")).unwrap();
            for oid in &oids {
                let want = repo.odb().unwrap().read(*oid).unwrap().data().to_vec();
                assert_eq!(fast.commit(*oid), Some(&want[..]), "{oid}");
            }
        };
        check(&repo);
        // Packed (and the loose copies pruned): the same answers from the pack.
        let git = |args: &[&str]| crate::repo::test_support::git(tmp.path(), args);
        git(&["branch", "main", &oids[4].to_string()]);
        git(&["repack", "-adq"]);
        git(&["prune-packed"]);
        assert!(
            !tmp.path()
                .join(".git/objects")
                .join(&oids[0].to_string()[..2])
                .exists()
        );
        check(&repo);
    }

    #[test]
    fn a_reader_keeps_answering_across_its_remappings_and_a_clone_opens_its_own_store() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, oids) = repo_with_commits(tmp.path());
        let mut fast = FastObjects::open(&repo.path().join("objects")).unwrap();
        let want: Vec<Vec<u8>> = oids
            .iter()
            .map(|o| repo.odb().unwrap().read(*o).unwrap().data().to_vec())
            .collect();
        let rounds = 3 * READS_PER_MAPPING as usize / oids.len();
        for i in 0..rounds * oids.len() {
            let k = i % oids.len();
            assert_eq!(fast.commit(oids[k]), Some(&want[k][..]), "read {i}");
        }
        assert!(
            fast.reads <= READS_PER_MAPPING,
            "{} reads on one mapping",
            fast.reads
        );
        let mut other = fast.clone();
        assert!(other.handle.is_none());
        assert_eq!(other.commit(oids[0]), Some(&want[0][..]));
    }

    #[test]
    fn a_missing_object_or_another_kind_is_none_for_libgit2_to_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, oids) = repo_with_commits(tmp.path());
        let mut fast = FastObjects::open(&repo.path().join("objects")).unwrap();
        assert_eq!(fast.commit(Oid::from_bytes(&[0xab; 20]).unwrap()), None);
        let tree = repo.find_commit(oids[0]).unwrap().tree_id();
        assert_eq!(fast.commit(tree), None);
        assert_eq!(fast.is_commit(tree), Some(false));
        assert_eq!(fast.is_commit(oids[0]), Some(true));
        assert_eq!(fast.is_commit(Oid::from_bytes(&[0xab; 20]).unwrap()), None);
    }
}
