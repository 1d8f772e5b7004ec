//! Attack review of in-process signing (commit 44e40a3: a plain Ed25519/ECDSA key file is
//! signed with in guardctl's own process, not by `ssh-keygen -Y sign`) and of counting only
//! the unmerged branches a criterion selects (commit 5788e38).

use crate::fixtures::{TestEnv, payload_of, remote_repo, standard_repo};
use guardctl::plan::{Plan, ResourceFacts};
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// Finding: ssh-keygen will not sign with a private key file of the user's that others may
/// read ("UNPROTECTED PRIVATE KEY FILE!"). The in-process path read it anyway, so a key in a
/// shared directory, a checkout or a world-readable home signed plans and approvals where it
/// used to be refused. Every signing command refuses it again, in ssh-keygen's words, and
/// writes nothing.
#[test]
fn a_key_file_others_may_read_signs_no_plan_and_no_approval() {
    let env = standard_repo();
    let planned = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(planned.code, 0, "{}", planned.transcript());
    let plan = fs::read(env.repo.join("plan.json")).unwrap();
    for user in ["alice", "carol"] {
        // alice's key is Ed25519, carol's ECDSA: both kinds the in-process path signs with.
        fs::set_permissions(env.key(user), fs::Permissions::from_mode(0o644)).unwrap();
    }
    let before = env.repository_state();
    let out = env.path().join("other.json");
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "-o", out.to_str().unwrap()],
    );
    // Refused before any work, as ssh-keygen would refuse the file, saying what to do.
    let refused = |r: &crate::fixtures::Run, user: &str| {
        assert_eq!(r.code, 64, "{}", r.transcript());
        assert!(r.stderr.contains("may be read by others"), "{}", r.stderr);
        let fix = format!("chmod 600 {}", env.key(user).display());
        assert!(r.stderr.contains(&fix), "{}", r.stderr);
    };
    refused(&r, "alice");
    assert!(!out.exists(), "a plan was signed with a key others may read");
    let r = env.run("carol", &["approve", "plan.json", "--yes"]);
    refused(&r, "carol");
    // whoami says so too (it said "ready" while every signature failed).
    let r = env.run("carol", &["whoami"]);
    refused(&r, "carol");
    assert_eq!(
        plan,
        fs::read(env.repo.join("plan.json")).unwrap(),
        "approval recorded"
    );
    assert_eq!(before, env.repository_state());
    // Made private again, the same keys sign (in-process).
    for user in ["alice", "carol"] {
        fs::set_permissions(env.key(user), fs::Permissions::from_mode(0o600)).unwrap();
    }
    let r = env.run("carol", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Not a finding: a whole plan, approval and apply signed in-process leave no line of any
/// private key in what they write or print (plan file, records under `.git/guardctl`, the
/// audit log, stdout, stderr).
#[test]
fn no_private_key_material_reaches_plans_records_or_output() {
    let env = standard_repo();
    let mut printed = String::new();
    for (who, args) in [
        ("alice", &["plan", "stale-branches", "--merged"][..]),
        ("alice", &["whoami"][..]),
        ("bob", &["approve", "plan.json", "--yes"][..]),
        ("carol", &["show", "plan.json"][..]),
        ("alice", &["verify", "plan.json"][..]),
        ("alice", &["apply", "plan.json"][..]),
        ("alice", &["log", "--verify"][..]),
    ] {
        let r = env.run(who, args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.transcript());
        printed += &r.stdout;
        printed += &r.stderr;
    }
    let mut written = fs::read_to_string(env.repo.join("plan.json")).unwrap();
    for (path, text) in crate::fixtures::file_tree(&env.repo.join(".git/guardctl")) {
        written += &format!("{}\n{text}\n", path.display());
    }
    for user in ["alice", "bob", "carol"] {
        let private = fs::read_to_string(env.key(user)).unwrap();
        for line in private
            .lines()
            .filter(|l| !l.starts_with("-----") && l.len() > 20)
        {
            // Each base64 line of the key file, and the same bytes as one run (a re-wrap).
            assert!(!written.contains(line), "{user}'s key line in a record: {line}");
            assert!(!printed.contains(line), "{user}'s key line printed: {line}");
        }
        let body: String = private.lines().filter(|l| !l.starts_with("-----")).collect();
        let middle = &body[body.len() / 3..body.len() / 3 + 40];
        assert!(!written.replace('\n', "").contains(middle), "{user}");
    }
}

fn history_mut<'a>(p: &'a mut Plan, refname: &str) -> &'a mut guardctl::plan::History {
    let a = p
        .affected
        .iter_mut()
        .find(|a| a.refname == refname)
        .unwrap_or_else(|| panic!("{refname} not planned"));
    match &mut a.facts {
        ResourceFacts::Branch(b) => &mut b.history,
        ResourceFacts::Tag(t) => &mut t.history,
    }
}

/// bob approves the forged plan (approving re-derives nothing); `verify` and `apply` refuse
/// it as drift naming `says`, and nothing in the repository changes.
fn approved_then_drift(env: &TestEnv, says: &str) {
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    for args in [&["verify", "plan.json"][..], &["apply", "plan.json"][..]] {
        let r = env.run("alice", args);
        assert_eq!(r.code, 10, "{args:?}: {}", r.transcript());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(before, env.repository_state(), "{args:?} changed the repository");
    }
}

/// Not a finding: planning no longer counts an unselected unmerged branch, but `verify` and
/// `apply` count every planned one. A re-signed plan that says an unmerged branch loses
/// nothing (0 commits), or fewer commits than it holds, is drift; so is one that lists
/// unmerged work under a weak criterion without --include-unmerged.
#[test]
fn a_forged_count_of_unmerged_work_is_drift_never_a_deletion() {
    // `feature/gone-work` (1 commit not in main) said to lose nothing.
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--gone", "--include-unmerged"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    crate::hostile::forge(&env, |p| {
        let h = history_mut(p, "refs/heads/feature/gone-work");
        h.commits_not_in_base = 0;
        h.loses_work = false;
    });
    let plan = payload_of(&env.repo.join("plan.json"));
    assert!(
        plan["affected"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["loses_work"] == false)
    );
    approved_then_drift(&env, "loses_work: planned nothing, now 1 commits");

    // `feature/live` (2 commits, selected by --older-than) said to lose 1.
    let env = standard_repo();
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--match",
            "feature/live",
            "--older-than",
            "1d",
            "--include-unmerged",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        payload_of(&env.repo.join("plan.json"))["affected"][0]["commits_not_in_base"],
        2
    );
    crate::hostile::forge(&env, |p| {
        history_mut(p, "refs/heads/feature/live").commits_not_in_base = 1;
    });
    approved_then_drift(&env, "loses_work: planned 1 commits, now 2 commits");

    // Without --include-unmerged, `feature/gone-work` added as if it were merged work.
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--gone"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let with = standard_repo();
    let r = with.run(
        "alice",
        &["plan", "stale-branches", "--gone", "--include-unmerged"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let theirs: Plan = serde_json::from_value(payload_of(&with.repo.join("plan.json"))).unwrap();
    let mut work = theirs
        .affected
        .iter()
        .find(|a| a.refname == "refs/heads/feature/gone-work")
        .unwrap()
        .clone();
    if let ResourceFacts::Branch(b) = &mut work.facts {
        b.history.commits_not_in_base = 0;
        b.history.loses_work = false;
        b.people_not_in_base.clear();
    }
    crate::hostile::forge(&env, |p| {
        p.skipped.retain(|s| s.refname != work.refname);
        p.affected.push(work.clone());
    });
    approved_then_drift(&env, "1 commit not in base");
}

/// Not a finding: on a remote's branches too, an unmerged branch a criterion selects is
/// counted (planned as losing work with --include-unmerged, skipped with its count without),
/// and one no criterion selects is left uncounted as not merged.
#[test]
fn remote_branches_count_the_unmerged_work_a_criterion_selects() {
    let env = remote_repo();
    let plan = |args: &[&str]| {
        let mut full = vec!["--json", "plan", "remote-branches", "--remote", "origin"];
        full.extend_from_slice(args);
        let r = env.run("alice", &full);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let view: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        (payload_of(&env.repo.join("plan.json")), view)
    };
    let skipped_live = |view: &serde_json::Value| {
        view["skipped"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().ends_with("feature/live"))
            .cloned()
            .unwrap_or_else(|| panic!("feature/live not skipped: {view:#}"))
    };

    let (_, view) = plan(&["--merged"]);
    let live = skipped_live(&view);
    assert_eq!(live["reason"], "not_stale", "{live:#}");
    assert_eq!(live["detail"], "not merged into base", "{live:#}");

    let (_, view) = plan(&["--older-than", "1d"]);
    let live = skipped_live(&view);
    assert_eq!(live["reason"], "unmerged", "{live:#}");
    assert_eq!(live["detail"], "2 commits not in base", "{live:#}");

    let (payload, _) = plan(&["--older-than", "1d", "--include-unmerged"]);
    let live = payload["affected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["ref"] == "refs/heads/feature/live")
        .cloned()
        .unwrap_or_else(|| panic!("feature/live not planned: {payload:#}"));
    assert_eq!(live["commits_not_in_base"], 2, "{live:#}");
    assert_eq!(live["loses_work"], true, "{live:#}");
}
