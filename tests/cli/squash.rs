//! `plan stale-branches --squash-merged` on the shapes that defeat git's own patch-id: main
//! changed lines next to (or the very lines) a branch replaced before the squash landed,
//! main changed them again after; and the same line added elsewhere, which is not the
//! branch's work. Plus a commit-graph written by git must not change any answer.
//!
//! And the squash whose confirming tree merge conflicts because main had changed a line next
//! to the branch's before it landed: squash-merged when the squash holds every line the
//! branch wrote where the branch wrote it, kept when the same line sits one line off.

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

/// Whether git's own tree merge of `tip` into `into`, from `fork`, conflicts (so the case
/// is the one a clean merge cannot confirm).
fn tree_merge_conflicts(env: &TestEnv, fork: &str, into: &str, tip: &str) -> bool {
    let base = format!("--merge-base={fork}");
    let out = std::process::Command::new("git")
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["merge-tree", "--write-tree", &base, into, tip])
        .output()
        .expect("run git merge-tree");
    match out.status.code() {
        Some(0) => false,
        Some(1) => true,
        _ => panic!("git merge-tree failed: {}", String::from_utf8_lossy(&out.stderr)),
    }
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
fn a_squash_next_to_a_line_main_had_changed_is_squash_merged_though_the_tree_merge_conflicts() {
    let env = forked();
    let fork = env.git(&["merge-base", "main", "topic"]);
    // Line 4, right above the branch's line 5, changes on main first; the squash then lands
    // the branch's line on top of it (the conflict resolved), and main moves on.
    env.commit("shared.txt", &shared(&[(3, "main four")]), "Alice", 20);
    let squash = env.commit(
        "shared.txt",
        &shared(&[(3, "main four"), (4, "topic five")]),
        "Alice",
        10,
    );
    env.commit("other.txt", "later", "Alice", 5);
    assert!(tree_merge_conflicts(&env, &fork, &squash, "topic"));
    assert_eq!(verdict(&env, "topic"), "squash-merged");
    // Main rewriting those very lines later does not bring the branch's work back.
    env.commit(
        "shared.txt",
        &shared(&[(3, "four again"), (4, "five again")]),
        "Alice",
        2,
    );
    assert_eq!(verdict(&env, "topic"), "squash-merged");
}

#[test]
fn a_branch_of_several_lines_landed_among_mains_changes_is_squash_merged() {
    let env = TestEnv::new();
    env.commit("shared.txt", &shared(&[]), "Alice", 40);
    env.git(&["checkout", "-q", "-b", "topic"]);
    env.commit("shared.txt", &shared(&[(3, "topic four")]), "Bob", 35);
    env.commit(
        "shared.txt",
        &shared(&[(3, "topic four"), (5, "topic six")]),
        "Bob",
        30,
    );
    env.git(&["checkout", "-q", "main"]);
    let fork = env.git(&["merge-base", "main", "topic"]);
    // Main changes the line between the branch's two, and the one after them.
    env.commit(
        "shared.txt",
        &shared(&[(4, "main five"), (6, "main seven")]),
        "Alice",
        20,
    );
    let squash = env.commit(
        "shared.txt",
        &shared(&[
            (3, "topic four"),
            (4, "main five"),
            (5, "topic six"),
            (6, "main seven"),
        ]),
        "Alice",
        10,
    );
    assert!(tree_merge_conflicts(&env, &fork, &squash, "topic"));
    assert_eq!(verdict(&env, "topic"), "squash-merged");
}

#[test]
fn the_branchs_line_landed_one_line_off_next_to_mains_change_is_not_squash_merged() {
    let env = forked();
    let fork = env.git(&["merge-base", "main", "topic"]);
    env.commit("shared.txt", &shared(&[(3, "main four")]), "Alice", 20);
    // The same one line replaced by "topic five" (so it is a candidate), but line 3's, with
    // line 5 still "five": the branch's change is not there, and git's merge conflicts.
    let near = env.commit(
        "shared.txt",
        &shared(&[(2, "topic five"), (3, "main four")]),
        "Alice",
        10,
    );
    assert!(tree_merge_conflicts(&env, &fork, &near, "topic"));
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
