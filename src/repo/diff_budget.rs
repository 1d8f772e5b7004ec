//! How much line diffing one pair of texts may cost, decided from the texts alone.
//!
//! Squash detection diffs files of a repository, which is input: line diffs are quadratic
//! in their worst cases (imara-diff's histogram diff re-indexes what is left of a file
//! after every common run it finds; its Myers fallback rescans runs of frequent lines;
//! plain Myers costs lines × edits), and a file of 200,000 short lines in two rhythms took
//! 17 s where `git diff` takes 0.4 s. The budget is a function of the two texts only, never
//! a clock: a plan and its re-derivation must reach the same verdict on the same objects,
//! whatever the machine's load. A pair over budget is compared whole (by blob id) or judged
//! "not contained", which only ever makes a branch kept, never deleted.

/// The most lines, both sides together, a line diff may have to align after the lines
/// the two texts share at their start and end are set aside. At this size the worst input
/// measured (unique lines with each adjacent pair swapped) takes 0.6-0.8 s and the shapes
/// of `benches/hostile_diff.py` about 0.2 s (docs/performance.md, "Files made to be
/// expensive to diff"); real source files diff in milliseconds. vite's `pnpm-lock.yaml`
/// (14,474 lines) changed at both ends must still diff, hence not 2^14.
pub(super) const MAX_DIFF_LINES: usize = 1 << 15;

/// The most one change's line diffs may cost together, each file's cost the square of its
/// lines to align (see [`lines_to_align`]): the worst inputs are quadratic in them, and a
/// change may hold 65,536 files, each within [`MAX_DIFF_LINES`] (an attack made one of two
/// blobs, A → B at every path: hours). At 2^31 the worst change measured costs about 1.6 s
/// (two files of unique lines with each adjacent pair swapped, 0.6-0.8 s each); past it,
/// the rest of the change's files are compared by blob id, in path order, so plan and
/// verify decide alike.
pub(super) const MAX_CHANGE_COST: u64 = 1 << 31;
/// The most bytes of files one change's diffs may read; past them, files are compared by
/// blob id without being read.
pub(super) const MAX_CHANGE_BYTES: u64 = 64 << 20;

/// What is left of one change's budgets ([`MAX_CHANGE_COST`], [`MAX_CHANGE_BYTES`]).
pub(super) struct Budget {
    cost: u64,
    bytes: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            cost: MAX_CHANGE_COST,
            bytes: MAX_CHANGE_BYTES,
        }
    }
}

impl Budget {
    /// Whether `bytes` more may be read, taking them if so.
    pub(super) fn read(&mut self, bytes: u64) -> bool {
        take(&mut self.bytes, bytes)
    }

    /// Whether diffing `old` against `new` is affordable on its own ([`lines_to_align`]) and
    /// within what the change has left, taking its cost if so.
    pub(super) fn diff<T: PartialEq>(&mut self, old: &[T], new: &[T]) -> bool {
        let Some(lines) = lines_to_align(old, new) else {
            return false;
        };
        take(&mut self.cost, (lines as u64).pow(2))
    }
}

/// Whether `amount` is within what is `left`, taken from it if so.
fn take(left: &mut u64, amount: u64) -> bool {
    match left.checked_sub(amount) {
        Some(rest) => {
            *left = rest;
            true
        }
        None => false,
    }
}

/// The lines a diff of `old` against `new` (lines, or interned line tokens) must align, both
/// sides together, or `None` past [`MAX_DIFF_LINES`]. What is left of one side once the
/// shared start and end are set aside may be empty: lines only added, or only removed, cost
/// nothing to align (0). Linear in the texts.
fn lines_to_align<T: PartialEq>(old: &[T], new: &[T]) -> Option<usize> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (old.len() - suffix, new.len() - suffix);
    match old == 0 || new == 0 {
        true => Some(0),
        false => (old + new <= MAX_DIFF_LINES).then_some(old + new),
    }
}

#[cfg(test)]
mod tests {
    use super::{Budget, MAX_CHANGE_BYTES, MAX_CHANGE_COST, MAX_DIFF_LINES, lines_to_align};

    fn affordable<T: PartialEq>(old: &[T], new: &[T]) -> bool {
        lines_to_align(old, new).is_some()
    }

    #[test]
    fn a_change_spends_one_budget_across_its_files() {
        let a: Vec<u32> = (0..MAX_DIFF_LINES as u32 / 2).collect();
        let b: Vec<u32> = a.iter().map(|i| i + 1_000_000).collect();
        // Each pair costs (2^15)^2 = 2^30: two fit in 2^31, the third does not.
        assert_eq!((MAX_DIFF_LINES as u64).pow(2) * 2, MAX_CHANGE_COST);
        let mut budget = Budget::default();
        assert!(budget.diff(&a, &b));
        assert!(budget.diff(&a, &b));
        assert!(!budget.diff(&a, &b), "the change's budget is spent");
        assert!(budget.diff(&[] as &[u32], &b), "lines only added cost nothing");
        assert!(!budget.diff(&a[..10], &b[..10]), "nothing is left");
        let mut budget = Budget::default();
        assert!(budget.read(MAX_CHANGE_BYTES - 1));
        assert!(!budget.read(2));
        assert!(budget.read(1));
        assert!(!budget.read(1));
    }

    #[test]
    fn only_the_lines_between_the_shared_start_and_end_count() {
        let big: Vec<u32> = (0..4 * MAX_DIFF_LINES as u32).collect();
        let mut edited = big.clone();
        edited[10] = u32::MAX;
        edited[big.len() - 10] = u32::MAX;
        // Lines 10 to len-10 lie between the two edits: far more than the budget.
        assert!(!affordable(&big, &edited));
        let mut one_edit = big.clone();
        one_edit[big.len() / 2] = u32::MAX;
        assert!(
            affordable(&big, &one_edit),
            "one changed line costs one line each side"
        );
        assert!(affordable(&big, &big));
    }

    #[test]
    fn the_budget_is_both_sides_together_and_inclusive() {
        let half = MAX_DIFF_LINES / 2;
        let a: Vec<u32> = (0..half as u32).collect();
        let b: Vec<u32> = (0..half as u32).map(|i| i + 1_000_000).collect();
        assert!(affordable(&a, &b), "exactly the budget");
        let mut c = b.clone();
        c.push(7);
        assert!(!affordable(&a, &c), "one line over");
        assert!(affordable(&[] as &[u32], &c), "lines only added");
        assert!(affordable(&c, &[] as &[u32]), "lines only removed");
    }

    #[test]
    fn lines_only_added_or_removed_are_affordable_at_any_size() {
        let long: Vec<u32> = (0..3 * MAX_DIFF_LINES as u32).collect();
        let mut inserted = long.clone();
        inserted.splice(10..10, (0..2 * MAX_DIFF_LINES as u32).map(|i| i + 10_000_000));
        assert!(affordable(&long, &inserted));
        assert!(affordable(&inserted, &long));
        // A shared start and end that overlap (a a a → a a) are not counted twice.
        assert!(affordable(&[1, 1, 1], &[1, 1]));
    }
}
