//! Whether a branch's change is already in a commit, line by line: the confirmation of a
//! squash merge when the tree merge that normally confirms it conflicts.
//!
//! The case it exists for (about 6% of squash merges in the real-shaped benchmark): between
//! the branch's fork and its squash commit, main changed a line *next to* a line the branch
//! changed. A three-way merge of the branch into the squash commit then conflicts (git's
//! and libgit2's merges treat changes to adjacent lines as one region), although the squash
//! commit holds every line the branch wrote, each where the branch wrote it.
//!
//! The criterion, per file the branch changes (fork `F` → tip `T`), against that file in
//! the candidate commit `S`:
//!
//! - the same blob (and mode) in `T` and `S`, or both without the file: contained; else
//! - both text and the same mode in `T` and `S`, and with `B`, `Th`, `O` the file's lines
//!   at `F`, `T`, `S`: take the branch's edits (a line diff `B` → `Th`) and main's (`B` →
//!   `O`). Every edit of the branch must lie inside one of main's edited regions, and that
//!   region of `O` must be exactly `B`'s lines there with the branch's edits applied,
//!   except that each line of `B` the branch left alone may have been replaced by one other
//!   line (main's own change of it). Otherwise: not contained.
//!
//! Why it is sound: outside main's edited regions `O` is `B`, and no edit of the branch lies
//! there; inside them `O` is `Th` but for lines the branch took unchanged from its fork. So
//! every line the branch added is in `S`, where the branch put it, and every line it removed
//! is gone from there: `O` and `Th` differ only in lines that were never the branch's work.
//! That holds for any correct pair of line diffs, so it does not depend on which diff the
//! algorithm finds (a less fortunate one can only make a file not contained). A branch with
//! one line of its own that `S` lacks, or has elsewhere, or has with a line inserted or
//! removed next to it, is not contained, and is kept (a miss, never a false positive).
//! Binary files, symbolic links and submodules are contained only when identical.

use super::Repo;
use super::diff_budget::Budget;
use super::graph::Reads;
use crate::error::Result;
use git2::{ErrorCode, Oid};
use similar::{Algorithm, DiffTag, capture_diff_slices};
use std::ops::Range;

/// Files larger than this, or whose diffs are over the line diff budget
/// (`diff_budget.rs`), are contained only when identical: a line diff is quadratic in the
/// worst case.
const MAX_TEXT: usize = 1 << 20;

impl Repo {
    /// Whether every change the branch makes from `fork` to `tip` is in commit `into`, by
    /// the criterion of this module. Reads objects only.
    pub fn change_is_in(&self, fork: Oid, tip: Oid, into: Oid) -> Result<bool> {
        let tree = |c: Oid| -> Result<git2::Tree<'_>> { Ok(self.git.find_commit(c)?.tree()?) };
        let (fork, tip, into) = (tree(fork)?, tree(tip)?, tree(into)?);
        let diff = self.git.diff_tree_to_tree(Some(&fork), Some(&tip), None)?;
        // One budget for every file of the change (see `diff_budget`).
        let mut budget = Budget::default();
        for delta in diff.deltas() {
            let Some(path) = delta.new_file().path().or(delta.old_file().path()) else {
                return Ok(false);
            };
            let side = |f: git2::DiffFile| f.exists().then(|| (f.id(), i32::from(f.mode())));
            let (base, theirs) = (side(delta.old_file()), side(delta.new_file()));
            let ours = match into.get_path(path) {
                Ok(e) => Some((e.id(), e.filemode())),
                Err(e) if e.code() == ErrorCode::NotFound => None,
                Err(e) => return Err(e.into()),
            };
            if theirs == ours {
                continue;
            }
            let (Some((t, t_mode)), Some((o, o_mode))) = (theirs, ours) else {
                return Ok(false);
            };
            if t_mode != o_mode || !is_file(t_mode) {
                return Ok(false);
            }
            let b = match base {
                Some((b, mode)) if is_file(mode) => Some(b),
                Some(_) => return Ok(false),
                None => None,
            };
            if !self.text_contained(b, t, o, &mut budget)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn text_contained(&self, base: Option<Oid>, theirs: Oid, ours: Oid, budget: &mut Budget) -> Result<bool> {
        // The size from the object's header first: a loose object of 1 MiB can inflate to
        // gigabytes, and a file too large is never read.
        let mut read = |oid: Oid| -> Result<Option<git2::Blob<'_>>> {
            let size = self.blob_size(oid, Reads::Verified)?;
            if size > MAX_TEXT as u64 || !budget.read(size) {
                return Ok(None);
            }
            let blob = self.git.find_blob(oid)?;
            Ok((!blob.is_binary()).then_some(blob))
        };
        let (Some(t), Some(o)) = (read(theirs)?, read(ours)?) else {
            return Ok(false);
        };
        let b = match base {
            Some(b) => match read(b)? {
                Some(blob) => Some(blob),
                None => return Ok(false),
            },
            None => None,
        };
        let b = b.as_ref().map_or(&[][..], |b| b.content());
        Ok(lines_contained(b, t.content(), o.content(), budget))
    }
}

/// A regular file's mode (plain or executable), as a tree entry holds it.
fn is_file(mode: i32) -> bool {
    mode == 0o100644 || mode == 0o100755
}

/// Lines, each with its terminator (so a missing final newline is a difference).
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

/// One edit of a line diff: the lines `old` of the first text became `new` of the second.
#[derive(Debug, Clone)]
struct Edit {
    old: Range<usize>,
    new: Range<usize>,
}

/// The edits of the diff `old` → `new`, adjacent ones joined.
fn edits(old: &[&[u8]], new: &[&[u8]]) -> Vec<Edit> {
    let mut out: Vec<Edit> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        let (tag, o, n) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.old.end == o.start && last.new.end == n.start => {
                last.old.end = o.end;
                last.new.end = n.end;
            }
            _ => out.push(Edit { old: o, new: n }),
        }
    }
    out
}

/// Whether the branch's change of one text (`base` → `theirs`) is in `ours`, by the
/// module's criterion. Pure.
pub(super) fn lines_contained(base: &[u8], theirs: &[u8], ours: &[u8], budget: &mut Budget) -> bool {
    if theirs == ours {
        return true;
    }
    let (b, t, o) = (lines(base), lines(theirs), lines(ours));
    // Too costly to diff: kept, as any file this criterion cannot show contained.
    if !budget.diff(&b, &t) || !budget.diff(&b, &o) {
        return false;
    }
    let branch = edits(&b, &t);
    let main = edits(&b, &o);
    // Each of the branch's edits, in order, inside one of main's regions.
    let mut next = 0;
    for region in &main {
        let start = next;
        while next < branch.len() && inside(&branch[next].old, &region.old) {
            next += 1;
        }
        let mine = &branch[start..next];
        if mine.is_empty() {
            continue;
        }
        // The region as it must read: B's lines with the branch's edits applied, where a
        // line the branch left alone may be anything (one line for one).
        let mut at = region.new.start;
        let mut k = region.old.start;
        for e in mine {
            let free = e.old.start - k;
            at += free;
            k = e.old.end;
            let want = &t[e.new.clone()];
            match o.get(at..at + want.len()) {
                Some(got) if got == want => at += want.len(),
                _ => return false,
            }
        }
        at += region.old.end - k;
        if at != region.new.end {
            return false;
        }
    }
    next == branch.len()
}

/// Whether edit range `e` (of the base) lies within region `r`; an insertion (empty `e`)
/// may sit at either end of it.
fn inside(e: &Range<usize>, r: &Range<usize>) -> bool {
    r.start <= e.start && e.end <= r.end
}

#[cfg(test)]
mod tests {
    use super::lines_contained;
    use crate::repo::diff_budget::Budget;

    fn text(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    const BASE: [&str; 8] = ["one", "two", "three", "four", "five", "six", "seven", "eight"];

    fn with(edits: &[(usize, &str)]) -> String {
        let mut v: Vec<&str> = BASE.to_vec();
        for (i, l) in edits {
            v[*i] = l;
        }
        text(&v)
    }

    fn contained(theirs: &str, ours: &str) -> bool {
        lines_contained(
            text(&BASE).as_bytes(),
            theirs.as_bytes(),
            ours.as_bytes(),
            &mut Budget::default(),
        )
    }

    #[test]
    fn a_line_main_also_wrote_next_to_a_line_main_changed_is_contained() {
        let branch = with(&[(4, "topic five")]);
        assert!(contained(&branch, &with(&[(3, "main four"), (4, "topic five")])));
        assert!(contained(&branch, &with(&[(4, "topic five"), (5, "main six")])));
        // Main's own changes elsewhere, and the same line exactly: contained.
        assert!(contained(&branch, &with(&[(0, "main one"), (4, "topic five")])));
        assert!(contained(&branch, &branch));
    }

    #[test]
    fn several_edits_in_one_region_of_main_are_checked_in_place() {
        let branch = with(&[(3, "topic four"), (5, "topic six")]);
        assert!(contained(
            &branch,
            &with(&[(3, "topic four"), (4, "main five"), (5, "topic six")])
        ));
        // The branch's two lines swapped: not its change.
        assert!(!contained(
            &branch,
            &with(&[(3, "topic six"), (4, "main five"), (5, "topic four")])
        ));
    }

    #[test]
    fn inserted_and_removed_lines_must_be_where_the_branch_put_them() {
        let mut v: Vec<&str> = BASE.to_vec();
        v.insert(4, "topic new");
        let branch = text(&v);
        v[3] = "main four";
        assert!(contained(&branch, &text(&v)));
        // Main inserted a line of its own between: a line for a line no longer holds.
        let mut w: Vec<&str> = BASE.to_vec();
        w[3] = "main four";
        w.insert(4, "main extra");
        w.insert(5, "topic new");
        assert!(!contained(&branch, &text(&w)));
        // Removed by the branch, still there in main: not contained.
        let mut r: Vec<&str> = BASE.to_vec();
        r.remove(4);
        assert!(!contained(&text(&r), &with(&[(3, "main four")])));
    }

    #[test]
    fn the_branchs_line_elsewhere_or_missing_is_not_contained() {
        let branch = with(&[(4, "topic five")]);
        // Next to where the branch wrote it, with the branch's line five still there.
        assert!(!contained(&branch, &with(&[(2, "topic five"), (3, "main four")])));
        assert!(!contained(&branch, &with(&[(7, "topic five")])));
        assert!(!contained(&branch, &with(&[(3, "main four")])));
        assert!(!contained(&branch, &text(&BASE)));
        // One of two lines landed.
        let two = with(&[(1, "topic two"), (4, "topic five")]);
        assert!(!contained(&two, &with(&[(3, "main four"), (4, "topic five")])));
    }

    #[test]
    fn the_branchs_lines_are_compared_with_their_newlines() {
        // The branch's last line without a final newline.
        let mut branch = with(&[(7, "topic eight")]);
        branch.pop();
        let mut ours = with(&[(6, "main seven"), (7, "topic eight")]);
        assert!(!contained(&branch, &ours));
        ours.pop();
        assert!(contained(&branch, &ours));
    }

    /// Main changed a line between two the branch changed, far apart: contained, unless
    /// the lines between are more than the line diff budget allows to align.
    fn far_apart(lines: usize) -> (String, String, String) {
        let base: Vec<String> = (0..lines).map(|i| format!("line {i}")).collect();
        let edit = |at: &[usize], to: &str| {
            let mut v = base.clone();
            for &i in at {
                v[i] = format!("{to} {i}");
            }
            text(&v.iter().map(String::as_str).collect::<Vec<_>>())
        };
        let (last, mid) = (lines - 10, lines / 2);
        let theirs = edit(&[10, last], "branch");
        let mut ours: Vec<String> = theirs.lines().map(str::to_string).collect();
        ours[mid] = format!("main {mid}");
        (
            edit(&[], ""),
            theirs,
            text(&ours.iter().map(String::as_str).collect::<Vec<_>>()),
        )
    }

    #[test]
    fn a_change_whose_files_together_are_over_the_budget_is_not_contained() {
        // Each text alone within the budget; the third is past what the change has left.
        let (b, t, o) = far_apart(crate::repo::diff_budget::MAX_DIFF_LINES / 4);
        let mut budget = Budget::default();
        let mut contained = || lines_contained(b.as_bytes(), t.as_bytes(), o.as_bytes(), &mut budget);
        let verdicts: Vec<bool> = (0..12).map(|_| contained()).collect();
        assert!(verdicts[0], "within the budget: contained");
        assert!(!verdicts[11], "past the change's budget: kept");
    }

    #[test]
    fn a_diff_over_the_line_budget_is_not_contained() {
        let (b, t, o) = far_apart(1000);
        assert!(lines_contained(
            b.as_bytes(),
            t.as_bytes(),
            o.as_bytes(),
            &mut Budget::default()
        ));
        let (b, t, o) = far_apart(2 * crate::repo::diff_budget::MAX_DIFF_LINES);
        assert!(!lines_contained(
            b.as_bytes(),
            t.as_bytes(),
            o.as_bytes(),
            &mut Budget::default()
        ));
    }
}
