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
/// the two texts share at their start and end are set aside. At this size the worst inputs
/// measured (benches/README.md, "Line diff budget") take about 0.2 s; real source files
/// diff in milliseconds.
pub(super) const MAX_DIFF_LINES: usize = 1 << 15;

/// Whether diffing `old` against `new` (as lines, or interned line tokens) is within
/// [`MAX_DIFF_LINES`]. What is left of one side once the shared start and end are set
/// aside may be empty: lines only added, or only removed, cost nothing to align. Linear in
/// the texts.
pub(super) fn affordable<T: PartialEq>(old: &[T], new: &[T]) -> bool {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (old.len() - suffix, new.len() - suffix);
    old == 0 || new == 0 || old + new <= MAX_DIFF_LINES
}

#[cfg(test)]
mod tests {
    use super::{MAX_DIFF_LINES, affordable};

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
