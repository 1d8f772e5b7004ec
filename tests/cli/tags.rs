//! `plan tags` end to end: selection by age, name and kind; signed tags and tags that are the
//! only name of some history kept unless asked; apply and a rollback that recreates the very
//! same tag objects, even after `git gc` pruned them; drift; a remote's tags.

use crate::fixtures::{TestEnv, backed_up, remote_repo, tagged_repo};
use std::collections::BTreeMap;

/// Planned names and skipped names with their reasons, from `plan tags ARGS`.
fn classify(env: &TestEnv, args: &[&str]) -> (Vec<String>, BTreeMap<String, String>) {
    let (planned, skipped) = crate::plan::classify_op(env, "tags", args);
    (planned.into_keys().collect(), skipped)
}

fn tags(env: &TestEnv, dir: &std::path::Path) -> String {
    env.git_in(
        dir,
        &["for-each-ref", "--format=%(refname) %(objectname)", "refs/tags"],
    )
}

#[test]
fn old_tags_are_planned_by_age_and_signed_or_history_holding_ones_are_kept() {
    let env = tagged_repo();
    let (planned, skipped) = classify(&env, &["--older-than", "300d"]);
    assert_eq!(planned, ["v0.1", "v0.2"]);
    assert_eq!(skipped["v0.3"], "signed");
    assert_eq!(skipped["lost/1"], "unmerged");
    assert_eq!(skipped["rc/1"], "not_stale");

    let (planned, _) = classify(
        &env,
        &["--older-than", "300d", "--include-signed", "--include-unmerged"],
    );
    assert_eq!(planned, ["lost/1", "v0.1", "v0.2", "v0.3"]);
    let (planned, skipped) = classify(&env, &["--older-than", "300d", "--annotated"]);
    assert_eq!(planned, ["v0.2"]);
    assert_eq!(skipped["v0.1"], "other_kind");
    let (planned, _) = classify(&env, &["--match", "rc/*"]);
    assert_eq!(planned, ["rc/1"]);
    let text = env.run("alice", &["show", "plan.json"]).stdout;
    assert!(text.contains("Tags to delete (1)"), "{text}");
    assert!(text.contains("│ KIND ") && text.contains(" TAG "), "{text}");
    assert!(
        text.contains("│ lightweight tag "),
        "every row names its kind: {text}"
    );
}

#[test]
fn a_tag_plan_needs_a_name_or_an_age() {
    let env = tagged_repo();
    let r = env.run("alice", &["plan", "tags"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("--match"), "{}", r.stderr);
}

#[test]
fn apply_deletes_tags_and_rollback_recreates_the_same_tag_objects_after_gc() {
    let env = tagged_repo();
    let before = tags(&env, &env.repo);
    let args = [
        "plan",
        "tags",
        "--older-than",
        "300d",
        "--include-signed",
        "--include-unmerged",
    ];
    assert_eq!(env.run("alice", &args).code, 0);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("deleted 4"), "{}", r.stdout);
    assert_eq!(
        tags(&env, &env.repo),
        before
            .lines()
            .filter(|l| l.contains("rc/1"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The backup keeps the commits; the annotated tag objects are now unreachable and a
    // pruning gc removes them: only the before-image still has them.
    let v02 = before
        .lines()
        .find(|l| l.contains("v0.2"))
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .to_string();
    env.git(&["gc", "-q", "--prune=now"]);
    assert!(
        std::process::Command::new("git")
            .current_dir(&env.repo)
            .args(["cat-file", "-e", &v02])
            .status()
            .unwrap()
            .code()
            != Some(0),
        "gc should have pruned the deleted tag object"
    );
    let kept = backed_up(&env.repo);
    assert!(kept.len() >= 2, "{kept:?}");
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(tags(&env, &env.repo), before);
    assert_eq!(env.git(&["cat-file", "-t", "v0.3"]), "tag");
}

/// Review routes match `people_not_in_base`, and only a branch plan re-derives it at apply:
/// a tag resource carrying it (or any other branch fact) is a plan guardctl never writes.
#[test]
fn a_tag_plan_whose_tags_carry_branch_facts_is_refused() {
    let env = tagged_repo();
    assert_eq!(env.run("alice", &["plan", "tags", "--match", "rc/*"]).code, 0);
    let path = env.repo.join("plan.json");
    let honest = std::fs::read_to_string(&path).unwrap();
    let branch_facts = [
        ("people_not_in_base", serde_json::json!(["carol@example.com"])),
        (
            "upstream",
            serde_json::json!({"remote": "origin", "merge": "refs/heads/x", "tracking_ref": null, "gone": true}),
        ),
        (
            "config",
            serde_json::json!([{"key": "branch.rc/1.remote", "value": "origin"}]),
        ),
    ];
    for (field, value) in branch_facts {
        let forged = crate::plan_file::re_signed(&env, &honest, "alice", |p| {
            p["affected"][0][field] = value.clone();
        });
        std::fs::write(&path, forged).unwrap();
        for cmd in ["show", "verify"] {
            let r = env.run("bob", &[cmd, "plan.json"]);
            assert_eq!(r.code, 65, "{field}, {cmd}: {}", r.transcript());
            assert!(
                r.stderr.contains(&format!("cannot have `{field}`")),
                "{field}, {cmd}: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn a_tag_moved_after_planning_is_drift_and_nothing_is_deleted() {
    let env = tagged_repo();
    assert_eq!(env.run("alice", &["plan", "tags", "--match", "rc/*"]).code, 0);
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    env.git(&["tag", "-f", "rc/1", "feature/done"]);
    let state = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("refs/tags/rc/1 oid"), "{}", r.stderr);
    assert_eq!(env.repository_state(), state);
}

#[test]
fn a_remotes_tags_are_deleted_by_one_leased_push_and_pushed_back_on_rollback() {
    let env = remote_repo();
    let first = env.git(&["rev-list", "--max-parents=0", "main"]);
    env.git_at(350, &["tag", "-a", "v0.2", "-m", "Release 0.2", &first]);
    env.git_at(340, &["tag", "v0.1", &first]);
    env.git(&["tag", "v1.0", "main"]);
    env.git(&["push", "-q", "origin", "--tags"]);
    let origin = env.origin();
    // A tag this clone never fetched cannot be judged: planning says to fetch.
    let main = env.git(&["rev-parse", "main"]);
    env.git_in(&origin, &["tag", "-a", "v0.9", "-m", "theirs", &main]);
    let r = env.run(
        "alice",
        &["plan", "tags", "--remote", "origin", "--match", "v0.*"],
    );
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("git fetch --tags origin"), "{}", r.stderr);
    env.git(&["fetch", "-q", "--tags", "origin"]);
    let before = tags(&env, &origin);
    let r = env.run(
        "alice",
        &["plan", "tags", "--remote", "origin", "--match", "v0.*", "--json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["remote"], "origin");
    let text = env.run("alice", &["show", "plan.json"]).stdout;
    assert!(text.contains("--prune-tags"), "{text}");
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let local = tags(&env, &env.repo);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let after = tags(&env, &origin);
    assert!(
        !after.contains("v0.1") && !after.contains("v0.2") && after.contains("v1.0"),
        "{after}"
    );
    assert_eq!(tags(&env, &env.repo), local, "local tags are not the plan's");
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(tags(&env, &origin), before);
}
