//! The change between two commits, hashed two ways for squash detection
//! ([`Repo::change_ids`]): trees walked and files diffed line by line here, with objects read
//! through gix for a plan ([`Reads::Fast`]) and through libgit2 for a re-derivation
//! ([`Reads::Verified`]).
//!
//! Why not libgit2's tree diff and patch printer, as before: squash detection diffs every
//! base commit since the oldest fork and every unmerged branch, and libgit2's object reads
//! take a process-wide lock (see `parallel.rs`), so those diffs ran on one core: on a real
//! project's 9,030 pull-request heads that was 40-47 s, half of it in libgit2's diff and
//! patch machinery. Read through gix the same work splits over every core.
//!
//! Both ids are only ever compared with ids computed here (a base commit's change with a
//! branch's), never with git's or libgit2's, so what matters is that the same two trees
//! always give the same ids, whichever reader read them: the diff is deterministic
//! (imara-diff's histogram diff, its hunks slid to one canonical place), and a file it would
//! cost too much to diff line by line is compared by its blob ids.

use super::Repo;
use super::graph::Reads;
use crate::error::{Error, Result};
use git2::Oid;
use sha2::{Digest, Sha256};

/// Files larger than this (on either side) are compared by blob id, not line by line: a
/// squash commit carries such a file's change whole or not at all, and diffing generated
/// megabytes for every base commit that touches them would cost more than all the rest.
const MAX_LINE_DIFF_BYTES: usize = 1 << 20;
/// Where git looks for a NUL byte to call a file binary.
const BINARY_PROBE_BYTES: usize = 8000;
/// Lines of context around each change, as in `git diff` and libgit2's patch-id.
const CONTEXT: u32 = 3;
const MODE_TREE: u32 = 0o040000;
const MODE_SUBMODULE: u32 = 0o160000;

/// Two ids of one change (see [`Repo::change_ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeIds {
    /// The change with 3 lines of context, in git's and libgit2's patch-id manner: white
    /// space removed from every line, hunk headers (line numbers) left out, one hash per
    /// file, summed so that file order does not matter. Equal ids are a verdict, as `git
    /// cherry` judges: the same lines changed, amid the same lines, in the same files (at
    /// whatever line numbers: main may have added lines above since the branch forked).
    pub exact: Oid,
    /// Which files, how many lines removed, and exactly which lines added: equal for a
    /// squash commit whose base had changed the lines the branch replaced (or the lines
    /// next to them) since the branch forked. Only ever a candidate, never a verdict.
    pub added: Oid,
}

/// What an object is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Commit,
    Tree,
    Blob,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
        }
    }
}

impl Repo {
    /// The ids of the change from commit `old` to commit `new` (see [`ChangeIds`]); `None`
    /// for an empty change.
    pub fn change_ids(&self, old: Oid, new: Oid, reads: Reads) -> Result<Option<ChangeIds>> {
        let old = tree_of(self.read(old, Kind::Commit, reads)?.as_slice(), old)?;
        let new = tree_of(self.read(new, Kind::Commit, reads)?.as_slice(), new)?;
        if old == new {
            return Ok(None);
        }
        let files = self.diff_trees(reads, old, new)?;
        if files.is_empty() {
            return Ok(None);
        }
        let mut ids = Hasher::default();
        for f in &files {
            self.hash_file(reads, f, &mut ids)?;
        }
        Ok(Some(ids.finish()))
    }

    /// The bytes of object `oid`, which must be a `kind`: through gix for [`Reads::Fast`]
    /// (libgit2 where gix cannot answer, so its errors keep libgit2's words), through
    /// libgit2 for [`Reads::Verified`].
    fn read(&self, oid: Oid, kind: Kind, reads: Reads) -> Result<Vec<u8>> {
        if reads == Reads::Fast {
            let fast = self.fast_object(oid, |k, data| {
                let same = matches!(
                    (k, kind),
                    (gix_object::Kind::Commit, Kind::Commit)
                        | (gix_object::Kind::Tree, Kind::Tree)
                        | (gix_object::Kind::Blob, Kind::Blob)
                );
                same.then(|| data.to_vec())
            });
            if let Some(Some(data)) = fast {
                return Ok(data);
            }
        }
        let odb = self.git.odb()?;
        let obj = odb.read(oid)?;
        let want = match kind {
            Kind::Commit => git2::ObjectType::Commit,
            Kind::Tree => git2::ObjectType::Tree,
            Kind::Blob => git2::ObjectType::Blob,
        };
        if obj.kind() != want {
            return Err(Error::internal(format!("{oid} is not a {}", kind.name())));
        }
        Ok(obj.data().to_vec())
    }

    /// Every file that differs between trees `old` and `new`, sorted by path. A path that
    /// is a file on one side and a directory on the other is a file removed and files
    /// added, as in git. Walked with a stack of its own, not by recursion: a repository is
    /// input, and a tree nested thousands deep must not overflow a worker thread's stack.
    fn diff_trees(&self, reads: Reads, old: Oid, new: Oid) -> Result<Vec<FileChange>> {
        let mut out = Vec::new();
        let mut todo: Vec<(Vec<u8>, Option<Oid>, Option<Oid>)> = vec![(Vec::new(), Some(old), Some(new))];
        while let Some((dir, old, new)) = todo.pop() {
            let read = |t: Option<Oid>| -> Result<Vec<u8>> {
                Ok(t.map(|t| self.read(t, Kind::Tree, reads))
                    .transpose()?
                    .unwrap_or_default())
            };
            let (old_data, new_data) = (read(old)?, read(new)?);
            let olds = parse_tree(old, &old_data)?;
            let news = parse_tree(new, &new_data)?;
            let (mut i, mut j) = (0, 0);
            while i < olds.len() || j < news.len() {
                let order = match (olds.get(i), news.get(j)) {
                    (Some(a), Some(b)) => {
                        gix_object::tree::name_order(a.name, a.is_tree(), b.name, b.is_tree())
                    }
                    (Some(_), None) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                let (a, b) = match order {
                    std::cmp::Ordering::Less => (olds.get(i), None),
                    std::cmp::Ordering::Greater => (None, news.get(j)),
                    std::cmp::Ordering::Equal => (olds.get(i), news.get(j)),
                };
                i += usize::from(a.is_some());
                j += usize::from(b.is_some());
                if let (Some(a), Some(b)) = (a, b)
                    && a.oid == b.oid
                    && a.mode == b.mode
                {
                    continue;
                }
                let mut path = dir.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(a.or(b).map(|e| e.name).unwrap_or_default());
                if a.or(b).is_some_and(Entry::is_tree) {
                    // Same name and both trees (name order puts a file and a directory of
                    // one name apart), or a tree on one side only.
                    todo.push((path, a.map(|e| e.oid), b.map(|e| e.oid)));
                } else {
                    out.push(FileChange {
                        path,
                        old: a.map(|e| (e.mode, e.oid)),
                        new: b.map(|e| (e.mode, e.oid)),
                    });
                }
            }
        }
        // One order for every pair of trees with these changes (the added id hashes files
        // in sequence).
        out.sort_unstable_by(|x, y| x.path.cmp(&y.path));
        Ok(out)
    }

    /// Feed one file's change to both ids.
    fn hash_file(&self, reads: Reads, f: &FileChange, ids: &mut Hasher) -> Result<()> {
        let mode = |side: Option<(u32, Oid)>| side.map_or_else(|| "-".to_string(), |(m, _)| format!("{m:o}"));
        ids.start_file(&f.path, &mode(f.old), &mode(f.new));
        let content = |side: Option<(u32, Oid)>| -> Result<Vec<u8>> {
            match side {
                None => Ok(Vec::new()),
                // A submodule's "content" is the commit it points at, as `git diff` shows it.
                Some((MODE_SUBMODULE, oid)) => Ok(format!("Subproject commit {oid}\n").into_bytes()),
                Some((_, oid)) => self.read(oid, Kind::Blob, reads),
            }
        };
        let (old, new) = (content(f.old)?, content(f.new)?);
        let whole = |data: &[u8]| {
            data.len() > MAX_LINE_DIFF_BYTES || data[..data.len().min(BINARY_PROBE_BYTES)].contains(&0)
        };
        if whole(&old) || whole(&new) {
            let id = |side: Option<(u32, Oid)>| side.map_or(Oid::ZERO_SHA1, |(_, oid)| oid);
            ids.whole(id(f.old), id(f.new));
            return Ok(());
        }
        ids.lines(&old, &new);
        Ok(())
    }
}

/// One file that differs, by its path from the root and each side's mode and blob id.
struct FileChange {
    path: Vec<u8>,
    old: Option<(u32, Oid)>,
    new: Option<(u32, Oid)>,
}

/// One tree entry, borrowed from the tree's bytes.
struct Entry<'a> {
    name: &'a [u8],
    mode: u32,
    oid: Oid,
}

impl Entry<'_> {
    fn is_tree(&self) -> bool {
        self.mode == MODE_TREE
    }
}

/// The `tree` line that opens a commit object.
fn tree_of(data: &[u8], commit: Oid) -> Result<Oid> {
    data.strip_prefix(b"tree ")
        .and_then(|rest| rest.get(..40))
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| Oid::from_str(hex).ok())
        .ok_or_else(|| Error::internal(format!("commit {commit} is malformed")))
}

/// A tree object's entries: `<octal mode> <name>\0<20-byte id>`, repeated.
fn parse_tree(tree: Option<Oid>, mut data: &[u8]) -> Result<Vec<Entry<'_>>> {
    let malformed = || {
        Error::internal(format!(
            "tree {} is malformed",
            tree.map_or_else(String::new, |t| t.to_string())
        ))
    };
    let mut out = Vec::new();
    while !data.is_empty() {
        let space = data.iter().position(|&b| b == b' ').ok_or_else(malformed)?;
        let mode = std::str::from_utf8(&data[..space])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or_else(malformed)?;
        data = &data[space + 1..];
        let nul = data.iter().position(|&b| b == 0).ok_or_else(malformed)?;
        let name = &data[..nul];
        data = &data[nul + 1..];
        let id = data.get(..20).ok_or_else(malformed)?;
        out.push(Entry {
            name,
            mode,
            oid: Oid::from_bytes(id).map_err(|_| malformed())?,
        });
        data = &data[20..];
    }
    Ok(out)
}

/// Both [`ChangeIds`], fed file by file.
#[derive(Default)]
struct Hasher {
    /// The current file's hash, and whether a file has started.
    file: Sha256,
    in_file: bool,
    /// The sum of the finished files' hashes (little-endian with carry, as libgit2's
    /// `flush_hunk`).
    sum: [u8; 20],
    added: Sha256,
}

impl Hasher {
    fn start_file(&mut self, path: &[u8], old_mode: &str, new_mode: &str) {
        if self.in_file {
            self.flush();
        }
        self.in_file = true;
        for part in [
            b"file\0".as_slice(),
            path,
            b"\0",
            old_mode.as_bytes(),
            b"\0",
            new_mode.as_bytes(),
        ] {
            self.file.update(part);
        }
        self.added.update(b"\0file\0");
        self.added.update(path);
    }

    /// A file compared whole, by its blob ids (binary, or too large to diff by lines).
    fn whole(&mut self, old: Oid, new: Oid) {
        for h in [&mut self.file, &mut self.added] {
            h.update(b"\0whole\0");
            h.update(old.as_bytes());
            h.update(new.as_bytes());
        }
    }

    /// A text file's lines, diffed and grouped into hunks with [`CONTEXT`] lines around.
    fn lines(&mut self, old: &[u8], new: &[u8]) {
        use imara_diff::{Algorithm, Diff, InternedInput};
        let input = InternedInput::new(old, new);
        let mut diff = Diff::compute(Algorithm::Histogram, &input);
        // Slides each hunk to one canonical place (as far down as it can go), so that a
        // change that could be drawn at several places is drawn at the same one in the
        // branch and in the squash commit.
        diff.postprocess_no_heuristic(&input);
        let hunks: Vec<imara_diff::Hunk> = diff.hunks().collect();
        let (before, after) = (&input.before, &input.after);
        let line = |t: imara_diff::Token| -> &[u8] { input.interner[t] };
        let mut start = 0;
        while start < hunks.len() {
            // Hunks whose contexts touch or overlap are one hunk, as in a unified diff. Its
            // header is not hashed: git's patch-id leaves line numbers out (xdiff's
            // `XDL_EMIT_NO_HUNK_HDR`), so a change landed below lines main added since is
            // the same change.
            let mut end = start + 1;
            while end < hunks.len() && hunks[end].before.start - hunks[end - 1].before.end <= 2 * CONTEXT {
                end += 1;
            }
            let (first, last) = (&hunks[start], &hunks[end - 1]);
            let from = first.before.start.saturating_sub(CONTEXT);
            let to = (last.before.end + CONTEXT).min(before.len() as u32);
            let mut at = from;
            for h in &hunks[start..end] {
                for &t in &before[at as usize..h.before.start as usize] {
                    self.context(line(t));
                }
                for &t in &before[h.before.start as usize..h.before.end as usize] {
                    self.removed(line(t));
                }
                for &t in &after[h.after.start as usize..h.after.end as usize] {
                    self.add(line(t));
                }
                at = h.before.end;
            }
            for &t in &before[at as usize..to as usize] {
                self.context(line(t));
            }
            start = end;
        }
    }

    fn context(&mut self, line: &[u8]) {
        update_without_white_space(&mut self.file, line);
    }

    fn removed(&mut self, line: &[u8]) {
        self.file.update(b"-");
        update_without_white_space(&mut self.file, line);
        self.added.update(b"\0-");
    }

    fn add(&mut self, line: &[u8]) {
        self.file.update(b"+");
        update_without_white_space(&mut self.file, line);
        self.added.update(b"\0+");
        self.added.update(line);
    }

    fn flush(&mut self) {
        let hash = std::mem::take(&mut self.file).finalize();
        let mut carry = 0u16;
        for (sum, h) in self.sum.iter_mut().zip(hash.iter()) {
            carry += u16::from(*sum) + u16::from(*h);
            *sum = carry as u8;
            carry >>= 8;
        }
    }

    fn finish(mut self) -> ChangeIds {
        self.flush();
        let added = self.added.finalize();
        ChangeIds {
            exact: Oid::from_bytes(&self.sum).unwrap_or(Oid::ZERO_SHA1),
            added: Oid::from_bytes(&added[..20]).unwrap_or(Oid::ZERO_SHA1),
        }
    }
}

/// `line` without its white space (as libgit2's and git's patch-ids strip it), fed in the
/// pieces between white space rather than copied.
fn update_without_white_space(h: &mut Sha256, line: &[u8]) {
    for piece in line.split(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' | b'\x0b')) {
        if !piece.is_empty() {
            h.update(piece);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        git: git2::Repository,
        repo: Repo,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path()).unwrap();
        let repo = Repo::open(Some(dir.path())).unwrap();
        Fixture { _dir: dir, git, repo }
    }

    impl Fixture {
        /// A commit whose tree holds exactly `files` (path, content; a path with `/` makes
        /// directories).
        fn commit(&self, files: &[(&str, &[u8])]) -> Oid {
            let mut index = git2::Index::new().unwrap();
            for (path, content) in files {
                let blob = self.git.blob(content).unwrap();
                let mut entry = git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: 0o100644,
                    uid: 0,
                    gid: 0,
                    file_size: content.len() as u32,
                    id: blob,
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_bytes().to_vec(),
                };
                entry.flags = path.len().min(0xfff) as u16;
                index.add(&entry).unwrap();
            }
            let tree = index.write_tree_to(&self.git).unwrap();
            let tree = self.git.find_tree(tree).unwrap();
            let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
            self.git.commit(None, &sig, &sig, "c", &tree, &[]).unwrap()
        }

        /// The ids both readers give, which must agree.
        fn ids(&self, old: Oid, new: Oid) -> Option<ChangeIds> {
            let fast = self.repo.change_ids(old, new, Reads::Fast).unwrap();
            let verified = self.repo.change_ids(old, new, Reads::Verified).unwrap();
            assert_eq!(fast, verified, "gix and libgit2 reads disagree");
            fast
        }
    }

    fn numbered(lines: std::ops::Range<u32>) -> String {
        lines.map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn the_same_change_at_the_same_place_has_the_same_ids_and_no_change_has_none() {
        let f = fixture();
        let base = numbered(0..40);
        let changed = base.replace("line 20\n", "line twenty\n");
        let a0 = f.commit(&[("src/a.txt", base.as_bytes()), ("b.txt", b"b\n")]);
        let a1 = f.commit(&[("src/a.txt", changed.as_bytes()), ("b.txt", b"b\n")]);
        // The same edit on a history where an unrelated file differs.
        let b0 = f.commit(&[("src/a.txt", base.as_bytes()), ("b.txt", b"other\n")]);
        let b1 = f.commit(&[("src/a.txt", changed.as_bytes()), ("b.txt", b"other\n")]);
        let a = f.ids(a0, a1).unwrap();
        assert_eq!(Some(a), f.ids(b0, b1));
        // And where main has since added lines above it: line numbers are not the change.
        let shifted = format!("{}{base}", numbered(100..106));
        let c0 = f.commit(&[("src/a.txt", shifted.as_bytes()), ("b.txt", b"b\n")]);
        let c1 = f.commit(&[
            (
                "src/a.txt",
                shifted.replace("line 20\n", "line twenty\n").as_bytes(),
            ),
            ("b.txt", b"b\n"),
        ]);
        assert_eq!(Some(a), f.ids(c0, c1));
        assert_eq!(f.ids(a0, a0), None);
        assert_ne!(Some(a), f.ids(a1, a0), "the reverse change is another change");
    }

    #[test]
    fn the_same_lines_added_elsewhere_share_only_the_added_id() {
        let f = fixture();
        let base = numbered(0..40);
        let old = f.commit(&[("a.txt", base.as_bytes())]);
        let at_10 = base.replace("line 10\n", "line 10\nnew\n");
        let at_30 = base.replace("line 30\n", "line 30\nnew\n");
        let (x, y) = (
            f.ids(old, f.commit(&[("a.txt", at_10.as_bytes())])).unwrap(),
            f.ids(old, f.commit(&[("a.txt", at_30.as_bytes())])).unwrap(),
        );
        assert_ne!(
            x.exact, y.exact,
            "a change at another place is not the same change"
        );
        assert_eq!(x.added, y.added);
        // White space changes nothing of the exact id, as in git's patch-id; but the added
        // id holds the lines as written.
        let spaced = f.ids(
            old,
            f.commit(&[("a.txt", base.replace("line 10\n", "line 10\nn e w\n").as_bytes())]),
        );
        assert_eq!(spaced.unwrap().exact, x.exact);
        assert_ne!(spaced.unwrap().added, x.added);
        // The same lines in another file are another change.
        let other = f.commit(&[("a.txt", base.as_bytes()), ("b.txt", b"new\n")]);
        assert_ne!(f.ids(old, other).unwrap().added, x.added);
    }

    #[test]
    fn files_in_directories_binary_and_moved_between_file_and_directory_are_changes() {
        let f = fixture();
        let one = f.commit(&[("d/x", b"1\n"), ("bin", b"\0\x01")]);
        let two = f.commit(&[("d/x", b"2\n"), ("bin", b"\0\x01")]);
        let bin = f.commit(&[("d/x", b"1\n"), ("bin", b"\0\x02")]);
        let bin2 = f.commit(&[("d/x", b"1\n"), ("bin", b"\0\x03")]);
        let moved = f.commit(&[("d", b"now a file\n"), ("bin", b"\0\x01")]);
        let all = [
            f.ids(one, two),
            f.ids(one, bin),
            f.ids(one, bin2),
            f.ids(one, moved),
        ];
        assert!(all.iter().all(Option::is_some));
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b, "two different changes hashed alike");
            }
        }
    }

    /// A commit whose only file is `depth` directories down.
    fn nested(f: &Fixture, depth: usize, content: &[u8]) -> Oid {
        let mut b = f.git.treebuilder(None).unwrap();
        b.insert("f", f.git.blob(content).unwrap(), 0o100644).unwrap();
        let mut tree = b.write().unwrap();
        for _ in 0..depth {
            let mut b = f.git.treebuilder(None).unwrap();
            b.insert("d", tree, 0o040000).unwrap();
            tree = b.write().unwrap();
        }
        let tree = f.git.find_tree(tree).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        f.git.commit(None, &sig, &sig, "c", &tree, &[]).unwrap()
    }

    /// A repository is input: a tree nested deeper than git allows is diffed on a worker
    /// thread's stack (what squash detection runs on) like any other, never overflowing it.
    #[test]
    fn a_tree_nested_thousands_deep_is_diffed_without_overflowing_a_thread_stack() {
        let f = fixture();
        let (a, b) = (nested(&f, 5000, b"1\n"), nested(&f, 5000, b"2\n"));
        let shallow = f.ids(nested(&f, 1, b"1\n"), nested(&f, 1, b"2\n")).unwrap();
        let path = f._dir.path().to_path_buf();
        // A thread of its own, with the default stack of the worker threads.
        let got = std::thread::spawn(move || {
            let repo = Repo::open(Some(&path)).unwrap();
            [Reads::Fast, Reads::Verified].map(|reads| repo.change_ids(a, b, reads).unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(got[0], got[1]);
        assert!(
            got[0].is_some_and(|ids| ids != shallow),
            "the path is part of the change"
        );
    }

    #[test]
    /// Attack review of the change walk (a hostile repository's trees): each of these pairs is
    /// a different change and must hash differently, and odd trees must be read alike by gix
    /// (plan) and libgit2 (verify), or a plan would be refused as drift, or worse, a change
    /// taken for another's.
    fn hostile_trees_are_distinct_changes_and_both_readers_agree_on_them() {
        let f = fixture();
        let raw_tree = |entries: &[(&[u8], &[u8], Oid)]| {
            let mut data = Vec::new();
            for (mode, name, oid) in entries {
                data.extend_from_slice(mode);
                data.push(b' ');
                data.extend_from_slice(name);
                data.push(0);
                data.extend_from_slice(oid.as_bytes());
            }
            f.git.odb().unwrap().write(git2::ObjectType::Tree, &data).unwrap()
        };
        let commit_of = |tree: Oid| {
            let data = format!(
                "tree {tree}\nauthor t <t@example.com> 1700000000 +0000\ncommitter t <t@example.com> 1700000000 +0000\n\nc\n"
            );
            f.git
                .odb()
                .unwrap()
                .write(git2::ObjectType::Commit, data.as_bytes())
                .unwrap()
        };
        let blob = |b: &[u8]| f.git.blob(b).unwrap();
        let one =
            |mode: &[u8], name: &[u8], content: &[u8]| commit_of(raw_tree(&[(mode, name, blob(content))]));
        let empty = commit_of(raw_tree(&[]));
        // 1. mode-only changes
        let base = one(b"100644", b"f", b"x\n");
        let exe = f.ids(base, one(b"100755", b"f", b"x\n")).unwrap();
        let link = f.ids(base, one(b"120000", b"f", b"x\n")).unwrap();
        let content = f.ids(base, one(b"100644", b"f", b"y\n")).unwrap();
        assert_ne!(exe.exact, link.exact);
        assert_ne!(exe.exact, content.exact);
        // 2. symlink vs file added, same content
        assert_ne!(
            f.ids(empty, one(b"120000", b"f", b"x")).unwrap().exact,
            f.ids(empty, one(b"100644", b"f", b"x")).unwrap().exact
        );
        // 3. submodule vs file holding its text
        let c = Oid::from_str("1111111111111111111111111111111111111111").unwrap();
        let sub = commit_of(raw_tree(&[(b"160000", b"s", c)]));
        let text = one(b"100644", b"s", format!("Subproject commit {c}\n").as_bytes());
        assert_ne!(
            f.ids(empty, sub).unwrap().exact,
            f.ids(empty, text).unwrap().exact
        );
        // 5. big files
        let big = |b: u8| vec![b; (1 << 20) + 10];
        let b0 = one(b"100644", b"big", &big(b'a'));
        assert_ne!(
            f.ids(b0, one(b"100644", b"big", &big(b'b'))).unwrap().exact,
            f.ids(b0, one(b"100644", b"big", &big(b'c'))).unwrap().exact
        );
        // 6. NUL after 8000 bytes: text, diffed by lines, readers agree
        let mut late = vec![b'a'; 8100];
        late.extend_from_slice(b"\n\0one\nx\n");
        let l0 = one(b"100644", b"n", &late);
        let l1 = one(b"100644", b"n", &[&late[..], b"y\n"].concat());
        let l2 = one(b"100644", b"n", &[&late[..], b"z\n"].concat());
        assert_ne!(f.ids(l0, l1).unwrap().exact, f.ids(l0, l2).unwrap().exact);
        // 7. rename vs copy
        let a = one(b"100644", b"a", b"x\n");
        let renamed = one(b"100644", b"b", b"x\n");
        let copied = commit_of(raw_tree(&[
            (b"100644", b"a", blob(b"x\n")),
            (b"100644", b"b", blob(b"x\n")),
        ]));
        assert_ne!(f.ids(a, renamed).unwrap().exact, f.ids(a, copied).unwrap().exact);
        // 11. split across files
        let two = commit_of(raw_tree(&[
            (b"100644", b"a", blob(b"1\n")),
            (b"100644", b"b", blob(b"1\n")),
        ]));
        let both = commit_of(raw_tree(&[
            (b"100644", b"a", blob(b"2\n")),
            (b"100644", b"b", blob(b"2\n")),
        ]));
        let only_a = commit_of(raw_tree(&[
            (b"100644", b"a", blob(b"2\n")),
            (b"100644", b"b", blob(b"1\n")),
        ]));
        assert_ne!(f.ids(two, both).unwrap().exact, f.ids(two, only_a).unwrap().exact);
        // 12. unsorted and duplicate entries: no panic, readers agree
        let (x, y) = (blob(b"x\n"), blob(b"y\n"));
        let unsorted = commit_of(raw_tree(&[(b"100644", b"b", x), (b"100644", b"a", y)]));
        let dup = commit_of(raw_tree(&[(b"100644", b"a", x), (b"100644", b"a", y)]));
        let sorted = commit_of(raw_tree(&[(b"100644", b"a", y), (b"100644", b"b", x)]));
        let _ = (f.ids(sorted, unsorted), f.ids(sorted, dup), f.ids(dup, unsorted));
        // 14. "040000" vs "40000"
        let sub = raw_tree(&[(b"100644", b"f", x)]);
        assert_eq!(
            f.ids(
                commit_of(raw_tree(&[(b"40000", b"d", sub)])),
                commit_of(raw_tree(&[(b"040000", b"d", sub)]))
            ),
            None
        );
        // 15. odd directory mode, blob mode on a tree, tree mode on a blob: errors, no panic
        for (m, o) in [
            (&b"40755"[..], sub),
            (b"100644", sub),
            (b"40000", x),
            (b"160000", sub),
        ] {
            let r = [Reads::Fast, Reads::Verified].map(|r| {
                f.repo
                    .change_ids(empty, commit_of(raw_tree(&[(m, b"d", o)])), r)
                    .is_ok()
            });
            assert_eq!(r[0], r[1]);
        }
    }

    #[test]
    fn a_malformed_tree_is_an_error_not_a_panic() {
        for bad in [
            &b"100644 a"[..],
            b"100644 a\0short",
            b"9z a\0aaaaaaaaaaaaaaaaaaaa",
            b"100644",
        ] {
            assert!(parse_tree(None, bad).is_err(), "{bad:?}");
        }
        let good = [&b"100644 a\0"[..], &[7u8; 20]].concat();
        let parsed = parse_tree(None, &good).unwrap();
        assert_eq!((parsed[0].name, parsed[0].mode), (&b"a"[..], 0o100644));
    }
}
