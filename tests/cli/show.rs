//! `guardctl show`: snapshots of the human and JSON renderings, pagination, hostile names,
//! `--since`.

use crate::fixtures::{TestEnv, many_branches, standard_repo};

fn plan(env: &TestEnv, args: &[&str]) {
    let mut full = vec!["plan", "stale-branches"];
    full.extend_from_slice(args);
    let r = env.run("alice", &full);
    assert!(r.code == 0, "{}", r.transcript());
}

#[test]
fn show_small_plan() {
    let env = standard_repo();
    plan(
        &env,
        &["--merged", "--squash-merged", "--gone", "--include-unmerged"],
    );
    let r = env.run("bob", &["show", "plan.json"]);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!("show_small_plan", env.stable(&r.transcript()));
}

#[test]
fn show_small_plan_json() {
    let env = standard_repo();
    plan(
        &env,
        &["--merged", "--squash-merged", "--gone", "--include-unmerged"],
    );
    let r = env.run("bob", &["--json", "show"]);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!("show_small_plan_json", env.stable(&r.transcript()));
}

#[test]
fn human_and_json_come_from_the_same_view() {
    let env = standard_repo();
    plan(&env, &["--merged", "--gone"]);
    let human = env.run("bob", &["show"]).stdout;
    let json = env.run("bob", &["--json", "show"]).json();
    assert!(human.starts_with(json["summary"].as_str().unwrap()), "{human}");
    for row in json["rows"]["items"].as_array().unwrap() {
        assert!(human.contains(row["name"].as_str().unwrap()));
        // The table abbreviates the full id JSON carries.
        assert!(human.contains(&row["tip"].as_str().unwrap()[..12]));
    }
    for s in json["side_effects"].as_array().unwrap() {
        assert!(human.contains(s.as_str().unwrap()), "{s}");
    }
}

#[test]
fn show_large_plan_is_paginated() {
    let env = many_branches(300);
    plan(&env, &[]);
    let r = env.run("bob", &["show"]);
    assert_eq!(r.code, 0);
    insta::assert_snapshot!("show_300_branches", env.stable(&r.transcript()));

    let page = env.run("bob", &["--json", "show", "--page", "2"]).json();
    assert_eq!(page["rows"]["mode"], "page");
    assert_eq!(page["rows"]["pages"], 6);
    assert_eq!(page["rows"]["shown"], 50);
    assert_eq!(page["rows"]["items"][0]["name"], "topic/050");
    let all = env.run("bob", &["--json", "show", "--all"]).json();
    assert_eq!(all["rows"]["shown"], 300);
    let human_all = env.run("bob", &["show", "--all"]).stdout;
    assert!(human_all.matches("topic/").count() >= 300);
    let r = env.run("bob", &["show", "--page", "0"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
}

#[test]
fn show_hostile_names_and_subjects_never_emit_raw_control_bytes() {
    let env = TestEnv::new();
    let esc_author = "Eve \x1b[2J\x1b]0;pwned\x07";
    env.git(&["checkout", "-q", "-b", "feature/\u{202E}txt.exe", "main"]);
    env.commit(
        "a.txt",
        "subject \x1b[31mRED\x1b[0m and OSC \x1b]8;;http://evil\x07link\x1b]8;;\x07",
        esc_author,
        10,
    );
    env.git(&["checkout", "-q", "main"]);
    env.merge("feature/\u{202E}txt.exe", 9);
    env.branch("m\u{0430}in", "main", 0, "Eve", 5); // Cyrillic а: looks like `main`
    env.branch("zero\u{200B}width", "main", 0, "Eve", 5);
    // A name git itself would reject, smuggled in through packed-refs.
    let head = env.git(&["rev-parse", "HEAD"]);
    env.git(&["pack-refs", "--all"]);
    let packed = env.repo.join(".git/packed-refs");
    let mut text = std::fs::read_to_string(&packed).unwrap();
    text += &format!("{head} refs/heads/evil\x1b]52;c;Y2F0IC9ldGMvcGFzc3dk\x07\n");
    std::fs::write(&packed, text).unwrap();

    plan(&env, &[]);
    for args in [&["show"][..], &["--json", "show"], &["show", "--all"]] {
        let r = env.run("bob", args);
        assert_eq!(r.code, 0, "{}", r.transcript());
        for (what, out) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(!out.contains('\x1b'), "{args:?} {what} has a raw ESC:\n{out}");
            assert!(!out.contains('\x07'), "{args:?} {what} has a raw BEL");
            assert!(
                !out.contains('\u{202E}'),
                "{args:?} {what} has a raw bidi override"
            );
            assert!(
                !out.contains('\u{200B}'),
                "{args:?} {what} has a raw zero-width space"
            );
        }
    }
    let r = env.run("bob", &["show"]);
    insta::assert_snapshot!("show_hostile", env.stable(&r.transcript()));
}

#[test]
fn show_since_an_earlier_plan() {
    let env = standard_repo();
    plan(&env, &["--merged", "--gone", "-o", "old.json"]);
    // One branch moves, one is deleted by hand, one new merged branch appears.
    env.git(&["branch", "-f", "fix/old", "feature/done"]);
    env.git(&["branch", "-D", "feature/gone-merged"]);
    env.branch("feature/new", "main", 1, "Bob", 3);
    env.merge("feature/new", 2);
    plan(&env, &["--merged", "--gone"]);
    let r = env.run("bob", &["show", "plan.json", "--since", "old.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    insta::assert_snapshot!("show_since", env.stable(&r.transcript()));
    let v = env
        .run("bob", &["--json", "show", "plan.json", "--since", "old.json"])
        .json();
    assert_eq!(v["since"]["added"], 1);
    assert_eq!(v["since"]["removed"], 1);
    assert_eq!(v["since"]["moved"], 1);
}

#[test]
fn show_reports_an_expired_plan() {
    let env = standard_repo();
    plan(&env, &["--expires-in", "1m"]);
    let mut c = env.command();
    c.env("GUARDCTL_TEST_NOW", "2026-06-01T12:05:00Z")
        .arg("--key")
        .arg(env.key("bob"))
        .args(["--json", "show"]);
    let v = crate::fixtures::run(c).json();
    assert_eq!(v["expired"], true);
    assert!(
        v["summary"].as_str().unwrap().contains("Expired 4m ago"),
        "{}",
        v["summary"]
    );
}

#[test]
fn show_counts_approvals_as_apply_would() {
    let env = standard_repo();
    plan(&env, &[]);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let v = env.run("bob", &["--json", "show"]).json();
    assert_eq!(v["approvals"]["approved_by"][0], "bob@example.com");
    assert!(
        v["summary"].as_str().unwrap().ends_with("Approvals 1/1."),
        "{}",
        v["summary"]
    );
    assert_eq!(
        env.run("carol", &["reject", "plan.json", "--comment", "no"]).code,
        0
    );
    let human = env.run("bob", &["show"]).stdout;
    assert!(
        human
            .contains("approvals  1 of 1 needed; approved by bob@example.com; REJECTED by carol@example.com"),
        "{human}"
    );
    assert!(
        human
            .lines()
            .next()
            .unwrap()
            .ends_with("Approvals 1/1, REJECTED."),
        "{human}"
    );
}

/// show states every input of the plan (issue 12's review).
mod inputs {
    use crate::fixtures::payload_of;

    // ---------------------------------------------------------------------------------------
    // what the reviewer is shown
    // ---------------------------------------------------------------------------------------

    /// The Trust model says "Approvers see the inputs; they approve those", but `show` prints only
    /// the base and the criteria: not `--match`/`--exclude`/`--protect`, `--include-unmerged`,
    /// `--include-signed`, the tag kind, nor which planned tags are signed or annotated (every
    /// row's kind is just "tag"). A plan deleting a signed release tag looks like any other.
    #[test]
    fn show_states_every_input_and_marks_signed_tags() {
        let env = crate::fixtures::tagged_repo();
        let r = env.run(
            "alice",
            &[
                "plan",
                "tags",
                "--match",
                "v*",
                "--include-signed",
                "--exclude",
                "v9*",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let p = payload_of(&env.repo.join("plan.json"));
        assert!(
            p["affected"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["ref"] == "refs/tags/v0.3" && a["tag"]["signed"] == true),
            "{p}"
        );
        let show = env.run("bob", &["show", "plan.json"]);
        assert_eq!(show.code, 0, "{}", show.transcript());
        for input in ["v*", "v9*", "include-signed"] {
            assert!(
                show.stdout.contains(input),
                "show does not state the input {input}:\n{}",
                show.stdout
            );
        }
        let row = show
            .stdout
            .lines()
            .find(|l| l.contains(" v0.3 "))
            .unwrap_or_else(|| panic!("no v0.3 row:\n{}", show.stdout));
        assert!(row.contains("signed"), "v0.3 is not marked signed: {row}");
    }
}

/// Issue 34 item 12: the resource table fits the terminal (`$COLUMNS`): subjects are cut
/// first (with `…`), then authors; names are never cut. Without a width (a pipe), nothing
/// more is cut than the view's own 40-character subjects.
#[test]
fn the_table_fits_the_terminal_cutting_subjects_never_names() {
    let env = standard_repo();
    let long = format!("Refactor {}", "the very long subject line ".repeat(6));
    env.git(&["checkout", "-q", "-b", "feature/wide-subject"]);
    env.git(&["commit", "-q", "--allow-empty", "-m", &long]);
    env.git(&["checkout", "-q", "main"]);
    env.git(&["merge", "-q", "--ff-only", "feature/wide-subject"]);
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let table = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.trim_start().starts_with(['│', '┌', '└', '╞', '├', '╭', '╰']))
            .map(String::from)
            .collect()
    };
    let wide = env.run("alice", &["show", "plan.json"]);
    assert_eq!(wide.code, 0, "{}", wide.transcript());
    let widest = table(&wide.stdout)
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap();
    assert!(widest > 110, "the table is wide: {widest}\n{}", wide.stdout);
    let narrow = env.run_env("alice", &[("COLUMNS", "110")], &["show", "plan.json"]);
    assert_eq!(narrow.code, 0, "{}", narrow.transcript());
    let lines = table(&narrow.stdout);
    assert!(!lines.is_empty(), "{}", narrow.stdout);
    for l in &lines {
        assert!(l.chars().count() <= 110, "{} columns: {l}", l.chars().count());
    }
    assert!(
        narrow.stdout.contains("feature/wide-subject"),
        "{}",
        narrow.stdout
    );
    assert!(narrow.stdout.contains('…'), "{}", narrow.stdout);
}
