//! A commit's parents from the start of its packed object, for the walk of the base's history
//! ([`Reads::Fast`](super::Reads) only).
//!
//! Why: without a commit-graph a plan's walk inflates every commit of the base, and most of
//! a commit is its message (tokio's commits: 603 bytes on average, of which the `tree` and
//! `parent` lines are 94). Inflating a whole object was three quarters of the walk's time.
//! A packed commit stored whole (not as a delta) is one zlib stream, so its first bytes can be
//! inflated alone: the parents are in the first 256 bytes of all but octopus merges.
//!
//! What it answers: only a commit stored whole in one of the repository's own packs, and only
//! when its first bytes settle the parents. Anything else (a loose object, a delta, an
//! alternate's pack, a stream that ends early, a header it cannot settle) is `None`, and the
//! caller reads the whole object as before, so errors keep that reader's words. Like the rest
//! of the fast reads it is no resolver of record: `verify` and `apply` re-derive with libgit2.
//! So a commit damaged past its first 256 bytes (its stream's tail or checksum) is answered
//! from its start here, as one whose bytes do not hash to its id already was (neither fast
//! reader checks ids), and the damage stops the plan where it is verified: libgit2 refuses
//! the object.

use git2::Oid;

/// How much of a commit is inflated: a `tree` line (46 bytes) and four `parent` lines (48
/// each) fit.
pub const PREFIX: usize = 256;

/// The repository's packs, each index and data file mapped, and one inflate state.
pub struct Packs {
    bundles: Vec<gix_pack::Bundle>,
    /// The pack that answered last: a history's commits sit in one pack, mostly.
    last: usize,
    inflate: gix_zlib::Inflate,
    /// One byte more than [`PREFIX`]: a commit that fits is inflated to its end, so that the
    /// stream is seen to end where its header says.
    buf: Box<[u8; PREFIX + 1]>,
}

impl Packs {
    /// Every `pack-*.idx` under `objects_dir/pack` with its pack. A pack that will not open
    /// is left out (its objects are read the other way).
    pub fn open(objects_dir: &std::path::Path) -> Packs {
        let mut bundles = Vec::new();
        if let Ok(dir) = std::fs::read_dir(objects_dir.join("pack")) {
            for entry in dir.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "idx")
                    && let Ok(bundle) = gix_pack::Bundle::at(&path, gix_hash::Kind::Sha1)
                {
                    bundles.push(bundle);
                }
            }
        }
        Packs {
            bundles,
            last: 0,
            inflate: gix_zlib::Inflate::default(),
            buf: Box::new([0; PREFIX + 1]),
        }
    }

    /// The parents of commit `oid` from the first bytes of its packed object, or `None` where
    /// they cannot be settled that way (see the module's documentation).
    pub fn parents(&mut self, oid: Oid) -> Option<Vec<Oid>> {
        let (start, whole) = self.start(oid)?;
        if whole {
            super::graph::parse_parents(start)
        } else {
            parents_in_prefix(start)
        }
    }

    /// The first bytes of commit `oid` (at most [`PREFIX`]) and whether they are all of it.
    fn start(&mut self, oid: Oid) -> Option<(&[u8], bool)> {
        let id = gix_hash::oid::try_from_bytes(oid.as_bytes()).ok()?;
        let found = std::iter::once(self.last)
            .chain(0..self.bundles.len())
            .find_map(|i| {
                let b = self.bundles.get(i)?;
                Some((i, b.index.pack_offset_at_index(b.index.lookup(id)?)))
            });
        let (i, offset) = found?;
        self.last = i;
        let pack = &self.bundles[i].pack;
        let entry = pack.entry(offset).ok()?;
        if entry.header != gix_pack::data::entry::Header::Commit {
            return None;
        }
        let size = usize::try_from(entry.decompressed_size).ok()?;
        let input = pack.entry_slice(entry.data_offset..pack.pack_end() as u64)?;
        let whole = size < PREFIX;
        // A whole object gets a byte of room more than its header says: a longer stream fills
        // it, and is left to the other reader.
        let (want, room) = if whole { (size, size + 1) } else { (PREFIX, PREFIX) };
        self.inflate.reset();
        let (status, _, written) = self.inflate.prefix(input, &mut self.buf[..room]).ok()?;
        if written != want || (whole && status != gix_zlib::Status::StreamEnd) {
            return None;
        }
        Some((&self.buf[..want], whole))
    }
}

/// The parents in the first bytes of a commit that go on beyond them: `None` unless those
/// bytes settle them, a whole `tree` line, whole `parent` lines and the start of a line that
/// is not one. What they settle is what `parse_parents` finds in the whole object.
fn parents_in_prefix(start: &[u8]) -> Option<Vec<Oid>> {
    let mut rest = start;
    take_line(&mut rest)?.strip_prefix(b"tree ")?;
    let mut out = Vec::new();
    loop {
        // The next line is not a parent's once its start says so, ended or not.
        let head = &rest[..rest.len().min(b"parent ".len())];
        if !b"parent ".starts_with(head) {
            return Some(out);
        }
        let hex = take_line(&mut rest)?.strip_prefix(b"parent ")?;
        out.push(Oid::from_str(std::str::from_utf8(hex).ok()?).ok()?);
    }
}

/// The line at the start of `rest` if it ends there (its newline dropped), `rest` moved past it.
fn take_line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let end = rest.iter().position(|&b| b == b'\n')?;
    let line = &rest[..end];
    *rest = &rest[end + 1..];
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::test_support::git;

    const TREE: &str = "tree 4b825dc642cb6eb9a060e54bf8d69288fbe4904b\n";
    const P1: &str = "parent 1111111111111111111111111111111111111111\n";
    const P2: &str = "parent 2222222222222222222222222222222222222222\n";

    fn oid(c: char) -> Oid {
        Oid::from_str(&c.to_string().repeat(40)).unwrap()
    }

    /// A repository of commits of every shape the walk meets: a root, short commits that fit
    /// in [`PREFIX`] whole, long messages, a merge, and an octopus whose parent lines do not
    /// fit. Returns each commit with its parents as libgit2 reads them.
    fn shapes(dir: &std::path::Path) -> (git2::Repository, Vec<(Oid, Vec<Oid>)>) {
        let repo = git2::Repository::init(dir).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let mut made: Vec<Oid> = Vec::new();
        let mut commit = |parents: &[Oid], msg: String| {
            let ps: Vec<_> = parents.iter().map(|p| repo.find_commit(*p).unwrap()).collect();
            let oid = repo
                .commit(None, &sig, &sig, &msg, &tree, &ps.iter().collect::<Vec<_>>())
                .unwrap();
            made.push(oid);
            oid
        };
        let root = commit(&[], "root".into());
        let mut tip = root;
        for i in 0..40 {
            // Alternately short (the whole commit under PREFIX) and long (a squash's body).
            let msg = if i % 2 == 0 {
                format!("c{i}")
            } else {
                format!("c{i}\n\n{}", "body line\n".repeat(60))
            };
            tip = commit(&[tip], msg);
        }
        let sides: Vec<Oid> = (0..5).map(|i| commit(&[root], format!("side {i}"))).collect();
        let merge = commit(&[tip, sides[0]], "merge".into());
        let mut octopus = vec![merge];
        octopus.extend(&sides[1..]);
        let top = commit(&octopus, "octopus".into());
        repo.reference("refs/heads/main", top, true, "test").unwrap();
        drop(tree);
        let all = made
            .iter()
            .map(|&o| (o, repo.find_commit(o).unwrap().parent_ids().collect()))
            .collect();
        (repo, all)
    }

    #[test]
    fn packed_commits_give_the_parents_libgit2_reads_or_none() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, all) = shapes(tmp.path());
        let objects = repo.path().join("objects");
        // Loose: no pack answers, every commit is read the other way.
        let mut packs = Packs::open(&objects);
        assert!(all.iter().all(|(oid, _)| packs.parents(*oid).is_none()));
        // Every object stored whole (no delta search): each commit is read from its start.
        git(tmp.path(), &["repack", "-adq", "--window=0"]);
        git(tmp.path(), &["prune-packed"]);
        let mut packs = Packs::open(&objects);
        for (oid, want) in &all {
            let got = packs.parents(*oid);
            if want.len() <= 4 {
                assert_eq!(got.as_ref(), Some(want), "{oid}");
            } else {
                // Five parent lines do not fit in PREFIX: left to the whole-object reader.
                assert_eq!(got, None, "{oid}");
            }
        }
        // Not a commit: none.
        let tree = repo.find_commit(all[0].0).unwrap().tree_id();
        assert_eq!(packs.parents(tree), None);
        assert_eq!(packs.parents(Oid::from_bytes(&[0xab; 20]).unwrap()), None);
    }

    #[test]
    fn the_walk_reads_the_same_history_through_prefixes_as_through_libgit2() {
        let tmp = tempfile::tempdir().unwrap();
        let (_repo, all) = shapes(tmp.path());
        // Deltas too (an aggressive repack stores some commits against others): those, and
        // the octopus, are read whole.
        git(tmp.path(), &["repack", "-adfq", "--window=250", "--depth=50"]);
        git(tmp.path(), &["prune-packed"]);
        let r = crate::repo::Repo::open(Some(tmp.path())).unwrap();
        let fast = r.parents(crate::repo::Reads::Fast).unwrap();
        let verified = r.parents(crate::repo::Reads::Verified).unwrap();
        for (oid, want) in &all {
            assert_eq!(&fast.of(*oid).unwrap(), want, "{oid}");
            assert_eq!(&verified.of(*oid).unwrap(), want, "{oid}");
        }
    }

    /// Found by a review: the end of a stream is not read for a prefix, so damage there is
    /// not seen by the walk. Pinned here with where it is seen: the whole-object readers.
    #[test]
    fn a_commit_damaged_past_its_first_bytes_is_answered_from_its_start_and_refused_by_libgit2() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, all) = shapes(tmp.path());
        git(tmp.path(), &["repack", "-adq", "--window=0"]);
        git(tmp.path(), &["prune-packed"]);
        // A long message: more than PREFIX bytes.
        let (oid, want) = all[2].clone();
        assert!(repo.odb().unwrap().read(oid).unwrap().len() > PREFIX);
        let idx = std::fs::read_dir(repo.path().join("objects/pack"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "idx"))
            .unwrap();
        let listing = git(tmp.path(), &["verify-pack", "-v", idx.to_str().unwrap()]);
        let line = listing.lines().find(|l| l.starts_with(&oid.to_string())).unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        let (in_pack, offset): (usize, usize) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let pack = idx.with_extension("pack");
        let mut bytes = std::fs::read(&pack).unwrap();
        // The entry's last byte: its stream's Adler-32.
        bytes[offset + in_pack - 1] ^= 0xff;
        let mut perm = std::fs::metadata(&pack).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&pack, perm).unwrap();
        std::fs::write(&pack, &bytes).unwrap();
        drop(repo);
        let r = crate::repo::Repo::open(Some(tmp.path())).unwrap();
        assert_eq!(
            r.parents(crate::repo::Reads::Fast).unwrap().of(oid).unwrap(),
            want
        );
        assert!(r.parents(crate::repo::Reads::Verified).unwrap().of(oid).is_err());
        assert!(r.commit_facts(oid).is_err());
    }

    #[test]
    fn a_prefix_settles_the_parents_once_a_line_starts_that_is_not_one() {
        let full = format!("{TREE}{P1}{P2}author a <a@x> 1 +0000\n");
        let want = vec![oid('1'), oid('2')];
        // Cut anywhere from the first letter of `author` on: settled.
        for cut in TREE.len() + 2 * P1.len() + 1..=full.len() {
            assert_eq!(
                parents_in_prefix(&full.as_bytes()[..cut]),
                Some(want.clone()),
                "cut {cut}"
            );
        }
        // Cut inside the tree line, a parent line, or before the next line starts: not settled.
        for cut in 0..=TREE.len() + 2 * P1.len() {
            assert_eq!(parents_in_prefix(&full.as_bytes()[..cut]), None, "cut {cut}");
        }
    }

    #[test]
    fn a_prefix_ending_in_what_may_begin_a_parent_line_is_not_settled() {
        for tail in ["p", "par", "parent", "parent "] {
            let s = format!("{TREE}{P1}{tail}");
            assert_eq!(parents_in_prefix(s.as_bytes()), None, "{tail:?}");
        }
        let s = format!("{TREE}{P1}pa\n");
        assert_eq!(parents_in_prefix(s.as_bytes()), Some(vec![oid('1')]));
        let root = format!("{TREE}author");
        assert_eq!(parents_in_prefix(root.as_bytes()), Some(vec![]));
    }

    #[test]
    fn a_malformed_header_is_left_to_the_whole_object_reader() {
        assert_eq!(parents_in_prefix(b"blob x\nauthor"), None);
        let bad = format!("{TREE}parent zz\nauthor");
        assert_eq!(parents_in_prefix(bad.as_bytes()), None);
    }
}
