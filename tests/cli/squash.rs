//! `plan stale-branches --squash-merged` on the shapes that defeat git's own patch-id: main
//! changed lines next to (or the very lines) a branch replaced before the squash landed,
//! main changed them again after; and the same line added elsewhere, which is not the
//! branch's work. Plus a commit-graph written by git must not change any answer.

use crate::fixtures::TestEnv;
use crate::plan::classify_op;

const LINES: [&str; 10] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// `shared.txt` with line `i` (0-based) replaced, for each `(i, text)`.
fn shared(edits: &[(usize, &str)]) -> String {
    let mut lines: Vec<&str> = LINES.to_vec();
    for (i, text) in edits {
        lines[*i] = text;
    }
    lines.join("\n")
}

/// main with `shared.txt`; `topic` forked from it replacing line 5 ("five").
fn forked() -> TestEnv {
    let env = TestEnv::new();
    env.commit("shared.txt", &shared(&[]), "Alice", 40);
    env.git(&["checkout", "-q", "-b", "topic"]);
    env.commit("shared.txt", &shared(&[(4, "topic five")]), "Bob", 30);
    env.git(&["checkout", "-q", "main"]);
    env
}

fn verdict(env: &TestEnv, branch: &str) -> String {
    let (affected, skipped) = classify_op(env, "stale-branches", &["--squash-merged"]);
    match affected.get(branch) {
        Some(reasons) => reasons.join(","),
        None => format!("skipped: {}", skipped[branch]),
    }
}

#[test]
fn a_squash_after_main_changed_the_lines_next_to_it_is_squash_merged() {
    let env = forked();
    // Line 3 changes on main first: the squash commit's context is not the branch's.
    env.commit("shared.txt", &shared(&[(2, "main three")]), "Alice", 20);
    env.squash_merge("topic", 10);
    assert_eq!(verdict(&env, "topic"), "squash-merged");
}

#[test]
fn a_squash_over_lines_main_had_replaced_and_changed_again_later_is_squash_merged() {
    let env = forked();
    env.commit("shared.txt", &shared(&[(4, "main five")]), "Alice", 20);
    // The conflict resolved for the branch, as one commit; later main rewrites that line.
    env.commit("shared.txt", &shared(&[(4, "topic five")]), "Alice", 10);
    env.commit("shared.txt", &shared(&[(4, "five again")]), "Alice", 5);
    assert_eq!(verdict(&env, "topic"), "squash-merged");
}

#[test]
fn the_same_line_added_at_another_place_is_not_the_branchs_work() {
    let env = forked();
    // Same file, one line removed, "topic five" added: but at line 8, not line 5.
    env.commit("shared.txt", &shared(&[(7, "topic five")]), "Alice", 10);
    assert_eq!(verdict(&env, "topic"), "skipped: not_stale");
}

#[test]
fn a_commit_graph_written_by_git_changes_no_answer() {
    let env = crate::fixtures::standard_repo();
    let args = [
        "--squash-merged",
        "--merged",
        "--include-unmerged",
        "--older-than",
        "60d",
    ];
    let without = classify_op(&env, "stale-branches", &args);
    env.git(&["commit-graph", "write", "--reachable"]);
    assert!(env.repo.join(".git/objects/info/commit-graph").exists());
    assert_eq!(classify_op(&env, "stale-branches", &args), without);
}
