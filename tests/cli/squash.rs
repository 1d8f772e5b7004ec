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

/// A blobless clone (`git clone --filter=blob:none`, how CI checks out large repositories)
/// of a repository with a merged, a squash-merged and an unmerged branch, each a local branch
/// of the clone; returns the clone's path. The clone lacks the branches' file contents.
fn blobless_clone(env: &TestEnv) -> std::path::PathBuf {
    env.branch("merged", "main", 2, "Bob", 30);
    env.merge("merged", 25);
    env.branch("squashed", "main", 2, "Bob", 20);
    env.squash_merge("squashed", 15);
    env.branch("live", "main", 1, "Bob", 10);
    let origin = env.path().join("filtered.git");
    env.git_in(env.path(), &["clone", "-q", "--bare", "repo", "filtered.git"]);
    env.git_in(&origin, &["config", "uploadpack.allowFilter", "true"]);
    let url = format!("file://{}", origin.display());
    env.git_in(
        env.path(),
        &["clone", "-q", "--filter=blob:none", &url, "partial"],
    );
    let clone = env.path().join("partial");
    for b in ["merged", "squashed", "live"] {
        env.git_in(&clone, &["branch", b, &format!("origin/{b}")]);
    }
    clone
}

/// The objects the clone knows of but does not have (`?<id>` lines of git's own listing).
fn missing_objects(env: &TestEnv, dir: &std::path::Path) -> usize {
    env.git_in(dir, &["rev-list", "--objects", "--all", "--missing=print"])
        .lines()
        .filter(|l| l.starts_with('?'))
        .count()
}

#[test]
fn plan_works_on_a_blobless_clone_and_squash_detection_refuses_at_once_saying_what_to_do() {
    let env = TestEnv::new();
    let clone = blobless_clone(&env);
    let missing = missing_objects(&env, &clone);
    assert!(
        missing > 0,
        "the clone must lack file contents for this test to mean anything"
    );
    let out = env.path().join("plan.json");
    let out = out.to_str().unwrap();
    // Merged and squash-merged branches, over the last plan.
    let plan_both = || {
        let args = [
            "plan",
            "stale-branches",
            "--merged",
            "--squash-merged",
            "-o",
            out,
            "--force",
        ];
        env.run_in(&clone, "alice", &args)
    };

    // Merged branches are found from history alone: the same plan as in the full repository.
    let r = env.run_in(&clone, "alice", &["plan", "stale-branches", "-o", out]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        crate::fixtures::affected_refs(std::path::Path::new(out)),
        vec!["refs/heads/merged"]
    );

    // Squash detection needs the contents: refused before any work, naming the partial clone
    // and the remedy, and nothing fetched (the preview path writes nothing).
    let refs_before = env.git_in(&clone, &["for-each-ref"]);
    let r = env.run_in(
        &clone,
        "alice",
        &["plan", "stale-branches", "--squash-merged", "-o", out, "--force"],
    );
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("this is a partial clone (promisor remote `origin`, filter `blob:none`)"),
        "{}",
        r.stderr
    );
    let remedy = "git -c remote.origin.partialclonefilter= fetch --refetch origin && git config --unset remote.origin.promisor";
    assert!(r.stderr.contains(remedy), "{}", r.stderr);
    assert_eq!(missing_objects(&env, &clone), missing, "nothing was fetched");
    assert_eq!(env.git_in(&clone, &["for-each-ref"]), refs_before);

    // Told it is not partial while it still lacks the contents (config edited by hand): the
    // detection meets a missing object and says so, not "re-run with the same arguments".
    env.git_in(&clone, &["config", "--unset", "remote.origin.promisor"]);
    let r = plan_both();
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(
        r.stderr.contains("an object this repository needs is missing"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("git fsck"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("re-run with the same arguments"),
        "{}",
        r.stderr
    );
    env.git_in(&clone, &["config", "remote.origin.promisor", "true"]);

    // The remedy the hint gives works: a full clone, where the squash merge is found.
    env.git_in(
        &clone,
        &[
            "-c",
            "remote.origin.partialclonefilter=",
            "fetch",
            "-q",
            "--refetch",
            "origin",
        ],
    );
    env.git_in(&clone, &["config", "--unset", "remote.origin.promisor"]);
    assert_eq!(missing_objects(&env, &clone), 0);
    let r = plan_both();
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        crate::fixtures::affected_refs(std::path::Path::new(out)),
        vec!["refs/heads/merged", "refs/heads/squashed"]
    );
    // verify (and apply) re-derive squash merges: in a clone that is partial again they refuse
    // the same way, before any work.
    let r = env.run_in(&clone, "bob", &["approve", out, "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.git_in(&clone, &["config", "remote.origin.promisor", "true"]);
    let r = env.run_in(&clone, "alice", &["verify", out]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("this is a partial clone"), "{}", r.stderr);
}

// ---- review attacks: wrong deletion verdicts from the exact id ----

/// plan, then approve and verify the plan it wrote: verify re-derives the same verdict (both
/// readers run the same hashing), so the approver's check passes.
fn plan_and_verify(env: &TestEnv, branch: &str) -> String {
    let v = verdict(env, branch);
    let plan = env.repo.join("plan.json");
    let plan = if plan.exists() {
        plan
    } else {
        env.path().join("plan.json")
    };
    let plan = plan.to_str().unwrap();
    let r = env.run("bob", &["approve", plan, "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["verify", plan]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    v
}

/// The exact id hashes each line's text (white space removed) with nothing between one line
/// and the next and no hunk header, so a base commit can be written whose change hashes like
/// any branch's: here one that removes a line reading `five+topic five`, amid the branch's
/// context. Main never holds "topic five" after the commit, yet the branch is squash-merged.
#[test]
fn attack_a_base_commit_whose_lines_run_together_like_the_branchs_change_is_not_its_squash() {
    let env = forked();
    // Someone with push access to main (the planner: untrusted) sets the line up...
    env.commit("shared.txt", &shared(&[(4, "five+topic five")]), "Mallory", 20);
    // ...and removes it: "two three four -five+topicfive six seven eight", as the branch's.
    env.commit(
        "shared.txt",
        &LINES
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 4)
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join("\n"),
        "Mallory",
        10,
    );
    let main = env.git(&["show", "main:shared.txt"]);
    assert!(!main.contains("topic five"), "the branch's line is not in main");
    assert_eq!(plan_and_verify(&env, "topic"), "skipped: not_stale");
}

/// `file` as `fork` on main, `topic` forked from it writing `theirs`, then main writing
/// `ours` over it.
fn diverged(file: &str, fork: &str, theirs: &str, ours: &str) -> TestEnv {
    let env = TestEnv::new();
    env.commit(file, fork, "Alice", 40);
    env.git(&["checkout", "-q", "-b", "topic"]);
    env.commit(file, theirs, "Bob", 30);
    env.git(&["checkout", "-q", "main"]);
    env.commit(file, ours, "Alice", 20);
    env
}

/// A Makefile's recipe must start with a tab: the branch's fix replaces four spaces with one.
/// A later main commit re-indents the same line with two spaces (still broken). The exact id
/// used to strip white space from removed and added lines, so the two changes hashed alike
/// and the branch with the only working Makefile was deleted. (`git cherry` would mark it `-`
/// too: it is advice there, a deletion here.)
#[test]
fn attack_a_white_space_fix_is_not_squash_merged_by_another_white_space_change() {
    let env = diverged(
        "Makefile",
        "all: app\napp:\n    cc -o app main.c",
        "all: app\napp:\n\tcc -o app main.c",
        "all: app\napp:\n  cc -o app main.c",
    );
    assert!(!env.git(&["show", "main:Makefile"]).contains('\t'));
    assert_eq!(plan_and_verify(&env, "topic"), "skipped: not_stale");
}

/// Python: the branch moves `return` out of the `if` (a behaviour change); main's commit
/// only trims the same line's trailing space.
#[test]
fn attack_an_indentation_change_in_python_is_not_squash_merged_by_a_trailing_space_fix() {
    let env = diverged(
        "f.py",
        "def f(x):\n    if x:\n        x += 1\n        return x \n    return 0",
        "def f(x):\n    if x:\n        x += 1\n    return x \n    return 0",
        "def f(x):\n    if x:\n        x += 1\n        return x\n    return 0",
    );
    assert_eq!(plan_and_verify(&env, "topic"), "skipped: not_stale");
}

/// A branch that adds a file of 512 MiB of zeros, stored as a loose object of half a
/// megabyte: squash detection must judge it by its size from the object's header, never
/// inflate it, in plan and in verify (which re-derive through different readers). Run with
/// 256 MiB of data segment (`ulimit -d`): inflating the file would abort the process.
#[test]
fn a_huge_file_that_compresses_to_little_is_never_inflated_by_plan_or_verify() {
    let env = TestEnv::new();
    env.commit("a.txt", "a", "Alice", 40);
    env.git(&["checkout", "-q", "-b", "topic"]);
    let out = std::process::Command::new("sh")
        .current_dir(&env.repo)
        .args(["-c", "head -c 536870912 /dev/zero | git hash-object -w --stdin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let blob = String::from_utf8(out.stdout).unwrap();
    env.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{},big.bin", blob.trim()),
    ]);
    env.git_full(&env.repo, &["commit", "-q", "-m", "big"], 30, "Bob");
    env.git(&["checkout", "-q", "-f", "main"]);
    env.commit("a.txt", "b", "Alice", 20);
    let limit = "ulimit -d 262144";
    let plan = env.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let r = env.run_after(
        limit,
        "alice",
        &["plan", "stale-branches", "--squash-merged", "-o", plan],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_after(limit, "alice", &["verify", plan]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// A branch whose change is over the per-change diff budget (six files, each with every
/// line replaced: two fill the budget, the other four are compared by blob id) and that
/// landed as one squash commit: still squash-merged, and verify re-derives the same
/// verdict through the other reader, whose budget is spent the same way. A branch whose
/// last file differs from the squash by one line is kept.
#[test]
fn a_change_over_the_diff_budget_is_judged_alike_by_plan_and_verify() {
    let env = TestEnv::new();
    let old: String = (0..16_384).map(|i| format!("old {i}\n")).collect();
    let new: String = (0..16_384).map(|i| format!("new {i}\n")).collect();
    let names: Vec<String> = (0..6).map(|i| format!("f{i}.txt")).collect();
    for n in &names {
        std::fs::write(env.repo.join(n), &old).unwrap();
    }
    env.git_full(&env.repo, &["add", "-A"], 40, "Alice");
    env.git_full(&env.repo, &["commit", "-q", "-m", "files"], 40, "Alice");
    let fork = env.git(&["rev-parse", "HEAD"]);
    for (branch, last) in [("topic", new.clone()), ("other", format!("{new}one more\n"))] {
        env.git(&["checkout", "-q", "-b", branch, &fork]);
        for n in &names {
            std::fs::write(env.repo.join(n), &new).unwrap();
        }
        std::fs::write(env.repo.join(&names[5]), &last).unwrap();
        env.git_full(&env.repo, &["add", "-A"], 30, "Bob");
        env.git_full(&env.repo, &["commit", "-q", "-m", "rewrite"], 30, "Bob");
    }
    env.git(&["checkout", "-q", "main"]);
    env.commit("unrelated.txt", "x", "Alice", 25);
    // The squash of topic: the same six files.
    env.git(&["checkout", "-q", "topic", "--", "."]);
    env.git_full(&env.repo, &["commit", "-q", "-m", "rewrite (#1)"], 20, "Alice");
    assert_eq!(verdict(&env, "other"), "skipped: not_stale");
    assert_eq!(plan_and_verify(&env, "topic"), "squash-merged");
}
