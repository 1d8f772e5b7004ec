//! The planner is not trusted (issue 12). A planner holds a valid key and can re-sign any
//! payload: every test here forges a plan the way they could — edit the payload, recompute
//! what guardctl would recompute, sign it again with the planner's own key — and shows that
//! `show`, `approve`, `verify` and `apply` refuse it (65 for a plan guardctl would never
//! write, 10 for one the repository contradicts), with the repository left byte for byte as
//! it was.

use crate::fixtures::{Run, TestEnv, payload_of, plan_id_of, standard_repo};
use crate::plan_file::re_signed;
use guardctl::plan::{Plan, derive, hash::plan_hash};
use std::fs;

/// Alice's plan of the merged and gone branches in `standard_repo`.
pub(crate) fn planned() -> TestEnv {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "--gone"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

/// Rewrite plan.json as a hostile planner would: edit the payload, then recompute every
/// derived field guardctl checks (so only what the edit says is wrong), sign with alice's key.
pub(crate) fn forge(env: &TestEnv, edit: impl Fn(&mut Plan)) {
    forge_raw(env, |plan| {
        edit(plan);
        let (op, affected) = (&plan.operation, &plan.affected);
        plan.plan_hash = plan_hash(&plan.repository, op, &plan.policy_hash, affected).unwrap();
        plan.summary = derive::summary(op, affected);
        plan.diff = derive::diff(affected);
        plan.side_effects = derive::side_effects(op, affected);
        let policy = guardctl::policy::Policy::default();
        plan.risk = derive::risk(op, affected, policy.bulk.threshold);
        plan.review = match guardctl::plan::manifest::of(op) {
            Some(ids) => guardctl::policy::route::review_ids(&policy, &ids).unwrap(),
            None => guardctl::policy::route::review(&policy, affected).unwrap(),
        };
    });
}

/// Rewrite plan.json with `edit` applied to its payload and nothing recomputed.
pub(crate) fn forge_raw(env: &TestEnv, edit: impl Fn(&mut Plan)) {
    let path = env.repo.join("plan.json");
    let text = fs::read_to_string(&path).unwrap();
    let mut plan: Plan = serde_json::from_value(payload_of(&path)).unwrap();
    edit(&mut plan);
    let value = serde_json::to_value(&plan).unwrap();
    let forged = re_signed(env, &text, "alice", |p| *p = value.clone());
    fs::write(&path, forged).unwrap();
}

/// What git says of a branch's tip: the `Resource` a plan would list for it.
fn affected_for(env: &TestEnv, branch: &str) -> guardctl::plan::Resource {
    let out = env.git(&[
        "log",
        "-1",
        "--format=%H%x00%an%x00%ae%x00%s%x00%ct",
        &format!("refs/heads/{branch}"),
    ]);
    let f: Vec<&str> = out.trim_end().split('\0').collect();
    guardctl::plan::Resource {
        refname: format!("refs/heads/{branch}"),
        oid: f[0].into(),
        reasons: vec![guardctl::plan::Criterion::Merged],
        last_commit_time: time::OffsetDateTime::from_unix_timestamp(f[4].parse().unwrap()).unwrap(),
        author: guardctl::plan::Person {
            name: f[1].into(),
            email: f[2].into(),
        },
        subject: f[3].into(),
        facts: guardctl::plan::ResourceFacts::Branch(guardctl::plan::BranchFacts::default()),
    }
}

/// Every way the plan reaches a person or the repository refuses it with `code`, and nothing
/// in the repository changed.
pub(crate) fn refused_everywhere(env: &TestEnv, code: i32, says: &str) {
    let before = env.repository_state();
    for (who, args) in [
        ("bob", &["show", "plan.json"][..]),
        ("bob", &["approve", "plan.json", "--yes"][..]),
        ("alice", &["verify", "plan.json"][..]),
        ("alice", &["apply", "plan.json"][..]),
    ] {
        let r = env.run(who, args);
        assert_eq!(r.code, code, "{args:?}: {}", r.transcript());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(before, env.repository_state(), "{args:?} changed the repository");
    }
}

/// bob approves the (forged) plan, then alice's apply is refused with `code`, mutating nothing.
fn approved_then_refused(env: &TestEnv, code: i32) -> Run {
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    let verify = env.run("alice", &["verify", "plan.json"]);
    assert_eq!(verify.code, code, "{}", verify.transcript());
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, code, "{}", r.transcript());
    assert_eq!(
        before,
        env.repository_state(),
        "a refused apply changed the repository"
    );
    r
}

#[test]
fn a_tag_listed_in_a_branch_plan_is_refused_before_anyone_sees_it() {
    let env = planned();
    env.git(&["tag", "v1.0", "main"]);
    let tag = env.git(&["rev-parse", "v1.0"]).trim().to_string();
    forge(&env, |p| {
        let mut a = p.affected[0].clone();
        a.refname = "refs/tags/v1.0".into();
        a.oid = tag.clone();
        p.affected.push(a);
    });
    refused_everywhere(&env, 65, "refs/tags/v1.0 is not a valid ref under refs/heads/");
    assert!(env.git(&["tag", "-l"]).contains("v1.0"));
}

#[test]
fn a_name_git_would_reject_is_refused() {
    let env = planned();
    forge(&env, |p| p.affected[0].refname = "refs/heads/../../config".into());
    refused_everywhere(&env, 65, "field `affected[0].ref`");
}

#[test]
fn a_forged_backup_namespace_is_refused() {
    let env = planned();
    forge(&env, |p| p.before_image.namespace = "refs/remotes/origin".into());
    refused_everywhere(&env, 65, "field `before_image.namespace`");
}

#[test]
fn a_false_summary_risk_or_emptied_side_effects_is_refused() {
    let env = planned();
    let original = fs::read(env.repo.join("plan.json")).unwrap();
    type Lie = Box<dyn Fn(&mut Plan)>;
    let lies: [(&str, Lie); 4] = [
        (
            "summary",
            Box::new(|p| p.summary = "delete 0 branches; nothing is lost \x1b[8mhidden".into()),
        ),
        (
            "risk",
            Box::new(|p| {
                p.risk.level = guardctl::plan::RiskLevel::Low;
                p.risk.reasons = vec!["\x1b]8;;http://x\x07harmless\x1b]8;;\x07".into()];
            }),
        ),
        ("side_effects", Box::new(|p| p.side_effects.clear())),
        ("diff", Box::new(|p| p.diff.clear())),
    ];
    for (field, lie) in lies {
        fs::write(env.repo.join("plan.json"), &original).unwrap();
        forge_raw(&env, |p| lie(p));
        refused_everywhere(&env, 65, &format!("field `{field}`"));
    }
}

#[test]
fn a_worktree_branch_added_to_a_re_signed_plan_is_drift() {
    let env = planned();
    let wt = affected_for(&env, "hotfix/wt");
    forge(&env, |p| {
        p.skipped.retain(|s| s.refname != wt.refname);
        p.affected.push(wt.clone());
    });
    let r = approved_then_refused(&env, 10);
    assert!(
        r.stderr.contains(
            "refs/heads/hotfix/wt eligible: planned delete, now not planned: checked out in another worktree"
        ),
        "{}",
        r.stderr
    );
    assert!(env.git(&["branch", "--list", "hotfix/wt"]).contains("hotfix/wt"));
}

#[test]
fn a_protected_branch_added_to_a_re_signed_plan_is_refused() {
    let env = planned();
    let release = affected_for(&env, "release/1.0");
    forge(&env, |p| {
        p.skipped.retain(|s| s.refname != release.refname);
        p.affected.push(release.clone());
    });
    let r = approved_then_refused(&env, 14);
    assert!(
        r.stderr.contains("refs/heads/release/1.0 is protected"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_misstated_author_or_subject_is_drift() {
    let env = planned();
    forge(&env, |p| {
        p.affected[0].author.email = "alice@example.com".into();
        p.affected[0].subject = "harmless".into();
    });
    let r = approved_then_refused(&env, 10);
    assert!(
        r.stderr.contains("author: planned alice@example.com"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("subject: planned harmless"), "{}", r.stderr);
}

/// Issue 34 item 7: the evidence a reviewer reads for a squash-merged branch (the base commit
/// carrying its change) is re-derived: a re-signed plan naming another commit, or none, is
/// drift; the honest plan shows the commit guardctl found.
#[test]
fn misstated_squash_evidence_is_drift() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--squash-merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let squash = env.git(&[
        "log",
        "-1",
        "--format=%H",
        "--grep=^Squashed feature/squashed",
        "main",
    ]);
    let squash = squash.trim();
    let shown = env.run("bob", &["--json", "show", "plan.json"]).json();
    let row = shown["rows"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "feature/squashed")
        .unwrap()
        .clone();
    assert_eq!(row["squashed_into"]["commit"], squash, "{row:#}");
    assert_eq!(row["squashed_into"]["subject"], "Squashed feature/squashed");
    let human = env.run("bob", &["show", "plan.json"]);
    assert!(
        human.stdout.contains(&format!(
            "feature/squashed  {}  Squashed feature/squashed",
            &squash[..12]
        )),
        "{}",
        human.stdout
    );
    let clean = fs::read(env.repo.join("plan.json")).unwrap();
    let other = env.git(&["rev-parse", "main~1"]);
    for forged in [Some(other.trim().to_string()), None] {
        fs::write(env.repo.join("plan.json"), &clean).unwrap();
        forge(&env, |p| {
            for a in &mut p.affected {
                if let guardctl::plan::ResourceFacts::Branch(b) = &mut a.facts
                    && b.squashed_into.is_some()
                {
                    b.squashed_into = forged.clone().map(|commit| guardctl::plan::model::SquashedInto {
                        commit,
                        subject: "Squashed feature/squashed".into(),
                    });
                }
            }
        });
        let r = approved_then_refused(&env, 10);
        assert!(r.stderr.contains("squashed_into: planned"), "{}", r.stderr);
    }
}

#[test]
fn control_sequences_in_every_planner_written_string_never_reach_the_terminal() {
    let env = planned();
    let esc = "\x1b]8;;https://evil\x07click\x1b]8;;\x07\x1b[2J\u{202E}";
    forge(&env, |p| {
        p.executor.key = Some(format!("SHA256:{esc}"));
        p.policy_source.location = Some(esc.into());
        for s in &mut p.skipped {
            s.detail = Some(esc.into());
        }
        p.skipped[0].refname = format!("refs/heads/{esc}");
        p.affected[0].author.name = esc.into();
        p.affected[0].author.email = esc.into();
        p.affected[0].subject = esc.into();
        if let guardctl::plan::Operation::StaleBranches(i) = &mut p.operation {
            i.base = format!("refs/heads/{esc}");
            i.exclude = vec![esc.into()];
        }
    });
    for (who, args) in [
        ("bob", &["show", "plan.json", "--all"][..]),
        ("bob", &["--json", "show", "plan.json"][..]),
        ("bob", &["approve", "plan.json", "--yes"][..]),
        ("alice", &["apply", "plan.json"][..]),
    ] {
        let r = env.run(who, args);
        for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(
                !text.contains(['\x1b', '\x07', '\u{202E}']),
                "{args:?} printed a raw control character on {stream}:\n{text}"
            );
        }
    }
}

#[test]
fn an_honest_plan_is_drift_once_a_planned_branch_is_checked_out() {
    let env = planned();
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    env.git(&["checkout", "-q", "feature/done"]);
    let before = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("refs/heads/feature/done eligible: planned delete, now not planned: checked out here"),
        "{}",
        r.stderr
    );
    assert_eq!(before, env.repository_state());
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 10);
}

#[test]
fn an_honest_plan_is_drift_once_a_planned_branch_is_in_a_new_worktree() {
    let env = planned();
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let wt2 = env.path().join("wt2");
    env.git(&["worktree", "add", "-q", wt2.to_str().unwrap(), "fix/old"]);
    let before = env.repository_state();
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("refs/heads/fix/old eligible"), "{}", r.stderr);
    assert!(
        r.stderr.contains("checked out in another worktree"),
        "{}",
        r.stderr
    );
    assert_eq!(before, env.repository_state());
    assert_eq!(
        env.git(&["-C", wt2.to_str().unwrap(), "symbolic-ref", "HEAD"])
            .trim(),
        "refs/heads/fix/old"
    );
}

#[test]
fn two_plans_of_one_state_in_one_second_have_different_ids_and_each_applies_once() {
    let env = planned();
    let first = plan_id_of(&env.repo.join("plan.json"));
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--gone", "-o", "again.json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let again = plan_id_of(&env.repo.join("again.json"));
    assert_ne!(
        first, again,
        "the same state at the same second must still give two plans"
    );
    assert_eq!(
        payload_of(&env.repo.join("plan.json"))["plan_hash"],
        payload_of(&env.repo.join("again.json"))["plan_hash"],
        "the plan hash is over inputs and state: the same for both"
    );

    // apply, rollback, then a fresh plan of the restored state applies again for real.
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    assert_eq!(env.run("alice", &["apply", "plan.json"]).code, 0);
    assert!(!env.git(&["branch"]).contains("feature/done"));
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(env.git(&["branch"]).contains("feature/done"));
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--gone", "-o", "third.json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_ne!(plan_id_of(&env.repo.join("third.json")), first);
    assert_eq!(env.run("bob", &["approve", "third.json", "--yes"]).code, 0);
    let r = env.run("alice", &["apply", "third.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stderr.contains("already applied"), "{}", r.stderr);
    assert!(!env.git(&["branch"]).contains("feature/done"), "deleted again");
}

/// A graft (`.git/info/grafts`, deprecated by git) can add parents: one line makes unmerged
/// work look merged to git and to libgit2. guardctl will not judge history through it: `plan`
/// refuses, and so do `verify` and `apply` of a plan made before the graft appeared.
#[test]
fn a_graft_that_makes_unmerged_work_look_merged_is_refused() {
    let env = planned();
    let main = env.git(&["rev-parse", "main"]);
    let main_parent = env.git(&["rev-parse", "main^"]);
    let live = env.git(&["rev-parse", "feature/live"]);
    fs::write(
        env.repo.join(".git/info/grafts"),
        format!("{main} {main_parent} {live}\n"),
    )
    .unwrap();
    let merged = env.git(&["branch", "--merged", "main", "--format=%(refname:short)"]);
    assert!(
        merged.lines().any(|b| b == "feature/live"),
        "git follows the graft: {merged}"
    );

    let r = env.run("alice", &["plan", "stale-branches", "-o", "grafted.json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("unmerged work look merged"), "{}", r.stderr);
    assert!(!env.repo.join("grafted.json").exists());

    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    for args in [&["verify", "plan.json"][..], &["apply", "plan.json"][..]] {
        let r = env.run("alice", args);
        assert_eq!(r.code, 64, "{args:?}: {}", r.transcript());
        assert!(r.stderr.contains("info/grafts"), "{args:?}: {}", r.stderr);
    }
    assert_eq!(
        before,
        env.repository_state(),
        "a refused apply changed the repository"
    );
}

/// libgit2 reads a linked worktree's `shallow` from the worktree's own git dir
/// (`.git/worktrees/<name>/shallow`), where git never looks (git's `shallow` is common to
/// every worktree), and parses it like a graft file. A planner who runs guardctl in their
/// worktree could then cut the history libgit2 walks for `people_not_in_base` (review
/// routing: whose work a deletion puts at stake) without git, or guardctl's own history walk,
/// seeing any boundary. Every walk of a branch's own commits reads parents the one way.
#[test]
fn a_worktree_private_shallow_file_cannot_hide_whose_work_is_lost() {
    let env = standard_repo();
    env.git(&["checkout", "-q", "-b", "feature/shared", "main"]);
    env.commit("shared.txt", "victim's work", "Victim", 12);
    let tip = env.commit("shared.txt", "erin's touch", "Erin", 11);
    env.git(&["checkout", "-q", "main"]);
    let wt = env.path().join("wt");
    let private = env.repo.join(".git/worktrees/wt/shallow");
    assert!(private.parent().unwrap().is_dir());
    // A boundary at the tip, and a graft onto main (libgit2 reads parents on the line).
    let main = env.git(&["rev-parse", "main"]);
    fs::write(&private, format!("{tip} {main}\n")).unwrap();
    // git does not read it: both people's commits are the branch's.
    let authors = env.git_in(&wt, &["log", "--format=%ae", "main..feature/shared"]);
    assert_eq!(authors, "erin@example.com\nvictim@example.com");

    let args = [
        "--json",
        "plan",
        "stale-branches",
        "--match",
        "feature/shared",
        "--older-than",
        "5d",
        "--include-unmerged",
        "-o",
    ];
    let out = env.path().join("shared.json");
    let mut argv = args.to_vec();
    argv.push(out.to_str().unwrap());
    let r = env.run_in(&wt, "alice", &argv);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let plan = payload_of(&out);
    let a = &plan["affected"][0];
    assert_eq!(a["ref"], "refs/heads/feature/shared", "{plan:#}");
    assert_eq!(a["commits_not_in_base"], 2, "{a:#}");
    assert_eq!(
        a["people_not_in_base"],
        serde_json::json!(["erin@example.com", "victim@example.com"]),
        "{a:#}"
    );
    // The honest plan verifies from either worktree: both read the branch the one way.
    let out = out.to_str().unwrap();
    for dir in [&wt, &env.repo] {
        let r = env.run_in(dir, "alice", &["verify", out]);
        assert_eq!(r.code, 12, "{}: {}", dir.display(), r.transcript());
        assert!(!r.stderr.contains("people_not_in_base"), "{}", r.transcript());
    }
}

/// A file under `.git/objects` made writable again (git writes objects and graphs 0444).
fn overwrite(path: &std::path::Path, bytes: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).unwrap();
    fs::write(path, bytes).unwrap();
}

/// `.git/objects/info/commit-graph` (written by git) edited to give main's tip a second
/// parent, `rev` (git writes graphs read-only; the planner can write their own clone).
fn commit_graph_lie(env: &TestEnv, rev: &str) {
    let path = env.repo.join(".git/objects/info/commit-graph");
    if !path.exists() {
        env.git(&["commit-graph", "write", "--reachable"]);
    }
    let mut g = fs::read(&path).unwrap();
    assert_eq!(&g[..4], b"CGPH");
    let chunk = |g: &[u8], id: &[u8; 4]| -> usize {
        (0..g[6] as usize)
            .map(|k| 8 + 12 * k)
            .find(|&e| &g[e..e + 4] == id)
            .map(|e| u64::from_be_bytes(g[e + 4..e + 12].try_into().unwrap()) as usize)
            .unwrap_or_else(|| panic!("no {id:?} chunk"))
    };
    let (fanout, oids, data) = (chunk(&g, b"OIDF"), chunk(&g, b"OIDL"), chunk(&g, b"CDAT"));
    let count = u32::from_be_bytes(g[fanout + 255 * 4..fanout + 256 * 4].try_into().unwrap()) as usize;
    let position = |g: &[u8], rev: &str| -> usize {
        let hex = env.git(&["rev-parse", rev]);
        let raw: Vec<u8> = (0..20)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        (0..count)
            .find(|&i| g[oids + 20 * i..oids + 20 * i + 20] == raw[..])
            .unwrap()
    };
    let (main, other) = (position(&g, "main"), position(&g, rev));
    let second_parent = data + 36 * main + 24;
    g[second_parent..second_parent + 4].copy_from_slice(&(other as u32).to_be_bytes());
    overwrite(&path, &g);
}

/// The planner's commit-graph says main's tip merged `feature/gone-work` (a second parent it
/// does not have). `plan` reads parents from the graph and plans the branch as merged; `verify`
/// and `apply` read the objects, find its commit not in main, and refuse: drift, nothing
/// deleted.
#[test]
fn a_commit_graph_that_lies_about_parents_is_drift_never_a_deletion() {
    let env = standard_repo();
    commit_graph_lie(&env, "feature/gone-work");
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let planned = crate::fixtures::affected_refs(&env.repo.join("plan.json"));
    assert!(
        planned.iter().any(|r| r == "refs/heads/feature/gone-work"),
        "the lie reached the plan: {planned:?}"
    );
    let r = approved_then_refused(&env, 10);
    assert!(r.stderr.contains("feature/gone-work"), "{}", r.stderr);
    assert_eq!(
        env.git(&["rev-parse", "--verify", "-q", "feature/gone-work"])
            .len(),
        40
    );
}

/// A commit-graph whose parents make a cycle (main's tip "merged" `feature/live`, which was
/// forked from it): `plan` refuses at once, naming the cause. It used to level the history
/// forever, its stack growing until the kernel killed it.
#[test]
fn a_commit_graph_with_a_cycle_is_refused_not_walked_forever() {
    let env = standard_repo();
    commit_graph_lie(&env, "feature/live");
    let before = env.repository_state();
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["plan", "stale-branches", "--squash-merged"]);
    let mut child = c
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("plan was still levelling a cyclic history after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("has a cycle"), "{stderr}");
    assert!(!env.repo.join("plan.json").exists());
    assert_eq!(before, env.repository_state());
}

/// A loose commit object whose content is another commit's (a different author and subject,
/// the same tree and parents): gix, which `plan` reads through, checks no hash, so the plan
/// states the lie. libgit2 re-hashes at `verify`/`apply`: refused while the object lies, and
/// drift once the true object is back. Nothing is deleted either way.
#[test]
fn a_loose_object_whose_content_lies_is_refused_then_drift() {
    let env = standard_repo();
    let tip = env.git(&["rev-parse", "feature/done"]);
    let raw = env.git(&["cat-file", "commit", &tip]);
    let lie = raw
        .replace("Bob <bob@example.com>", "Mallory <mallory@example.com>")
        .replace("Change feature-done.txt", "Harmless");
    assert_ne!(raw, lie);
    let scratch = env.path().join("scratch.git");
    env.git_in(env.path(), &["init", "-q", "--bare", scratch.to_str().unwrap()]);
    let mut c = std::process::Command::new("git");
    c.arg("-C")
        .arg(&scratch)
        .args(["hash-object", "-t", "commit", "-w", "--stdin", "--literally"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), format!("{lie}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lie_id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let object = |dir: &std::path::Path, id: &str| dir.join(&id[..2]).join(&id[2..]);
    let path = object(&env.repo.join(".git/objects"), &tip);
    let truth = fs::read(&path).unwrap();
    overwrite(
        &path,
        &fs::read(object(&scratch.join("objects"), &lie_id)).unwrap(),
    );

    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let stated = payload_of(&env.repo.join("plan.json"))["affected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["ref"] == "refs/heads/feature/done")
        .cloned()
        .expect("plan reads the object without re-hashing it, and plans the branch");
    // What the reviewer is shown is the lie; what follows must refuse it.
    assert_eq!(stated["author"]["email"], "mallory@example.com", "{stated:#}");
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.repository_state();
    for args in [&["verify", "plan.json"][..], &["apply", "plan.json"][..]] {
        let r = env.run("alice", args);
        assert_eq!(r.code, 1, "{args:?} with the lying object: {}", r.transcript());
        assert_eq!(before, env.repository_state(), "{args:?} changed the repository");
    }
    overwrite(&path, &truth);
    for args in [&["verify", "plan.json"][..], &["apply", "plan.json"][..]] {
        let r = env.run("alice", args);
        assert_eq!(r.code, 10, "{args:?} with the true object: {}", r.transcript());
        assert!(r.stderr.contains("mallory@example.com"), "{}", r.stderr);
    }
    assert_eq!(before, env.repository_state());
}

/// A `.git/shallow` written after approval cuts main's history at its tip: the planned merged
/// branches are no longer reachable from it, so `verify` and `apply` refuse them as drift.
/// A line with parents on it (a graft in disguise, which libgit2 would follow) is refused
/// outright (64).
#[test]
fn a_shallow_boundary_added_after_approval_is_drift_and_a_graft_line_in_it_is_refused() {
    let env = planned();
    let main = env.git(&["rev-parse", "main"]);
    fs::write(env.repo.join(".git/shallow"), format!("{main}\n")).unwrap();
    let r = approved_then_refused(&env, 10);
    assert!(r.stderr.contains("feature/done"), "{}", r.stderr);

    let live = env.git(&["rev-parse", "feature/live"]);
    fs::write(env.repo.join(".git/shallow"), format!("{live} {main}\n")).unwrap();
    let before = env.repository_state();
    for args in [
        &["verify", "plan.json"][..],
        &["apply", "plan.json"][..],
        &["plan", "stale-branches", "-o", "again.json"][..],
    ] {
        let r = env.run("alice", args);
        assert_eq!(r.code, 64, "{args:?}: {}", r.transcript());
        assert!(r.stderr.contains("shallow"), "{args:?}: {}", r.stderr);
        assert_eq!(before, env.repository_state(), "{args:?} changed the repository");
    }
    assert!(!env.repo.join("again.json").exists());
}

/// Planner- and approver-written text never reaches the terminal raw (second review).
mod terminal_controls {
    use crate::fixtures::TestEnv;
    use std::fs;

    /// Terminal control in anything a plan carries (manifest ids, the command, the preview, the
    /// verify command) must never reach a reviewer's terminal raw.
    #[test]
    fn control_characters_in_an_exec_plan_never_reach_the_terminal_raw() {
        let env = TestEnv::new();
        fs::create_dir_all(env.repo.join("scripts")).unwrap();
        // ESC ] 0 ; title BEL, a CSI clear, a CR overwrite, and a right-to-left override.
        fs::write(
        env.repo.join("scripts/p.sh"),
        "#!/bin/sh\nprintf 'ok\\033]0;pwned\\007\\n\\033[2Jx\\n{\"id\": \"a\\\\u001b[31mred\"}\\nfine\\rEVIL\\nb\\342\\200\\256gnp.exe\\n'\n",
    )
    .unwrap();
        let r = env.run(
            "alice",
            &[
                "plan",
                "exec",
                "--preview",
                "sh scripts/p.sh",
                "--verify",
                "sh scripts/p.sh",
                "--",
                "sh",
                "scripts/p.sh",
                "\u{1b}[8mhidden",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let mut outputs = vec![r];
        for args in [
            &["show", "plan.json", "--all"][..],
            &["show", "plan.json"][..],
            &["approve", "plan.json", "--yes"][..],
            &["verify", "plan.json"][..],
        ] {
            outputs.push(env.run("bob", args));
        }
        for r in outputs {
            for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
                assert!(
                    !text.contains('\u{1b}')
                        && !text.contains('\r')
                        && !text.contains('\u{7}')
                        && !text.contains('\u{202e}'),
                    "raw control characters on {what}:\n{}",
                    text.escape_debug()
                );
            }
        }
    }

    /// Anything an envelope carries (a comment, a principal) is the signer's words, and the
    /// signer may be the hostile planner: never raw on a reviewer's terminal.
    #[test]
    fn control_characters_in_approval_fields_never_reach_the_terminal_raw() {
        let env = crate::apply::planned();
        let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{202e}";
        let mut body =
            crate::apply::approval_body(&env, &format!("bob@example.com{evil}"), "mallory", "approve");
        body["comment"] = serde_json::Value::String(format!("LGTM{evil}"));
        crate::apply::attach(&env, crate::apply::forged_approval(&env, "mallory", body));
        let mut body = crate::apply::approval_body(&env, "carol@example.com", "carol", "approve");
        body["comment"] = serde_json::Value::String(format!("fine{evil}"));
        crate::apply::attach(&env, crate::apply::forged_approval(&env, "carol", body));
        for args in [
            &["show", "plan.json"][..],
            &["--json", "show", "plan.json"][..],
            &["verify", "plan.json"][..],
            &["approve", "plan.json", "--yes"][..],
            &["log"][..],
        ] {
            let r = env.run("bob", args);
            for (what, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
                assert!(
                    !text.contains('\u{1b}')
                        && !text.contains('\r')
                        && !text.contains('\u{7}')
                        && !text.contains('\u{202e}'),
                    "{args:?}: raw control characters on {what}:\n{}",
                    text.escape_debug()
                );
            }
        }
    }
}
