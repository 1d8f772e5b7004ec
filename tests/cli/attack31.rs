//! Attacks on the run's one snapshot of the team remote (`Ctx::snapshot`, `Snapshot::prepare`)
//! and on reading refs from before the ledger by commit id (`published::fetch_capped`): a
//! hostile teammate who holds a valid key and can push anything under `refs/guardctl/` of the
//! team remote, whose host protects only `refs/heads/*` and `refs/tags/*`.

use crate::fixtures::{Team, TestEnv, protect_refs, publish};
use std::fs;
use std::path::Path;

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

fn team() -> Team {
    let t = crate::fixtures::team(POLICY);
    protect_refs(&t.env.origin(), "refs/heads/*|refs/tags/*");
    t
}

/// `git push` in `clone`, as anyone with push access runs it: whether the remote took it.
fn push(clone: &Path, args: &[&str]) -> bool {
    let mut c = std::process::Command::new("git");
    c.current_dir(clone).arg("push").arg("-q").args(args);
    c.output().unwrap().status.success()
}

#[test]
fn a_ref_from_before_the_ledger_at_a_ledger_commit_does_not_make_the_ledger_read_as_rewound() {
    // Attack (hostile teammate, push access under refs/guardctl/ only): the ledger is
    // protected, so she cannot rewind it; instead she pushes a ref in the old layout pointing
    // at the ledger's tip commit. Readers fetch such refs' commits one commit deep into the
    // scratch repository that holds the ledger, and git then records the ledger's tip as a
    // shallow boundary: the tip "has no parents", so every clone that saw an earlier tip
    // refused the (intact) ledger as rewound (16) and its hint says to delete the file that
    // remembers the tip, which disarms the rewind check for good.
    let t = team();
    let first = publish(&t.env, &t.planner, "a.json", &["--match", "feature/done"]);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &first[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The ledger moves on after bob saw it.
    let second = publish(&t.env, &t.planner, "b.json", &["--match", "fix/old"]);
    let tip = t.env.ledger_tip();
    let junk = format!("refs/guardctl/plans/{}", "a".repeat(64));
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", "+refs/heads/guardctl/ledger:refs/l"],
    );
    assert!(push(&t.planner, &["origin", &format!("{tip}:{junk}")]));
    for cmd in ["show", "verify"] {
        let r = t.env.run_in(&t.bob, "bob", &[cmd, &second[..12]]);
        assert!(
            !r.stderr.contains("was rewound") && r.code != 16,
            "{cmd}: {}",
            r.transcript()
        );
    }
    let r = t.env.run_in(&t.bob, "bob", &["approve", &second[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        !t.env
            .published_under(&t.env.origin(), &format!("refs/guardctl/approvals/{second}/"))
            .is_empty(),
        "bob's approval is on the ledger"
    );
}

/// The ref-safe fingerprint of fixture key `user` (hex of the SHA-256 of its public key
/// blob): the last part of its decision refs.
fn fpr_hex(env: &TestEnv, user: &str) -> String {
    use base64::Engine;
    let fp = crate::plan_file::fingerprint(&env.key(user));
    let raw = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(fp.trim_start_matches("SHA256:"))
        .unwrap();
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

/// Create `refname` on the team's remote holding a parentless commit of the one file `name`
/// with `bytes`: an item as an older guardctl published it, before the ledger.
fn push_item(env: &TestEnv, refname: &str, name: &str, bytes: &[u8]) {
    let dir = env.path().join(format!("pusher-{}", refname.replace('/', "-")));
    env.git_in(env.path(), &["init", "-q", dir.to_str().unwrap()]);
    fs::write(dir.join(name), bytes).unwrap();
    env.git_in(&dir, &["add", name]);
    env.git_in(&dir, &["commit", "-q", "-m", "published before the ledger"]);
    let url = format!("file://{}", env.origin().display());
    env.git_in(&dir, &["push", "-q", &url, &format!("HEAD:{refname}")]);
}

#[test]
fn a_veto_published_before_the_ledger_is_moved_onto_it_by_publishing_it_again() {
    // Attack (hostile planner, push access under refs/guardctl/): carol vetoed the plan with
    // an older guardctl, so her rejection lives only at refs/guardctl/rejections/<id>/<fpr>,
    // a ref any pusher can delete. docs/remote.md ("Before the ledger") says: have the
    // reviewer publish it again (`guardctl reject <id> --publish` writes it to the ledger).
    // That was refused (14, "a decision of yours published earlier stands as it is"): the
    // old ref holds her own rejection, so nothing reached the ledger; the planner then
    // deleted the ref and a fresh clone applied the vetoed plan.
    let t = team();
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    let file = t.carol.join("plan.json");
    fs::copy(t.planner.join("plan.json"), &file).unwrap();
    let r = t.env.run_in(
        &t.carol,
        "carol",
        &[
            "reject",
            file.to_str().unwrap(),
            "--no-publish",
            "--comment",
            "not now",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let plan: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    let envelope = plan["approvals"].as_array().unwrap().last().unwrap().clone();
    let mut bytes = serde_json::to_vec_pretty(&envelope).unwrap();
    bytes.push(b'\n');
    let old = format!("refs/guardctl/rejections/{id}/{}", fpr_hex(&t.env, "carol"));
    push_item(&t.env, &old, "rejection.json", &bytes);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());

    // As the docs say: carol publishes her veto again, onto the ledger.
    let r = t.env.run_in(
        &t.carol,
        "carol",
        &["reject", &id[..12], "--publish", "--comment", "still not now"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let ledger_has_it = || {
        let listing = t.env.git_in(
            &t.env.origin(),
            &["log", "--format=", "--name-only", "refs/heads/guardctl/ledger"],
        );
        listing
            .lines()
            .any(|l| l.starts_with(&format!("rejections/{id}/")))
    };
    assert!(ledger_has_it(), "carol's veto is on the ledger");

    // The planner deletes the old ref (nothing protects refs/guardctl/).
    assert!(push(&t.planner, &["origin", "--delete", &old]));
    let fresh = t.env.clones(&["fresh"]).remove(0);
    let r = t.env.run_in(&fresh, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("rejected by carol@example.com"), "{}", r.stderr);
}

/// One approval from the reviewers; more than one branch at once is bulk and needs carol
/// (release) too (as tests/cli/teams.rs).
const BULK_POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\"]\nrelease = [\"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n\n[bulk]\nthreshold = 1\nrequired = 1\nfrom = [\"release\"]\n";

#[test]
fn a_plan_published_only_before_the_ledger_goes_onto_it_with_its_consumed_marker() {
    // Attack (hostile planner): alice splits a bulk deletion into two plans, each under the
    // threshold and approved by bob alone, for two fresh CI clones. An apply publishes its
    // plan on the ledger with its marker, so that the second clone counts the first. Before
    // anything is applied she pushes plan A itself (a valid plan file of that id) at
    // refs/guardctl/plans/<A>, a name from before the ledger. The apply took that as "the
    // plan is published already" and put only its marker on the ledger; she then deleted the
    // ref, and the second clone counted B alone: both halves deleted with bob's approval.
    let env = crate::fixtures::team_remote(BULK_POLICY);
    let [laptop, bob] = <[std::path::PathBuf; 2]>::try_from(env.clones(&["laptop", "bob"])).unwrap();
    let a = crate::teams::plan_unpublished(&env, &laptop, "a.json", "feature/done");
    let b = crate::teams::plan_unpublished(&env, &laptop, "b.json", "fix/old");
    for f in [&a, &b] {
        let r = env.run_in(&bob, "bob", &["approve", f.to_str().unwrap(), "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let a_hex = crate::fixtures::plan_id_of(&a)
        .trim_start_matches("sha256:")
        .to_string();
    let old = format!("refs/guardctl/plans/{a_hex}");
    push_item(&env, &old, "plan.json", &fs::read(&a).unwrap());

    let [ci1] = <[std::path::PathBuf; 1]>::try_from(env.clones(&["ci1"])).unwrap();
    let r = env.run_in(&ci1, "mallory", &["apply", a.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(push(&laptop, &["origin", "--delete", &old]));
    let [ci2] = <[std::path::PathBuf; 1]>::try_from(env.clones(&["ci2"])).unwrap();
    let r = env.run_in(&ci2, "mallory", &["apply", b.to_str().unwrap()]);
    assert_ne!(r.code, 0, "B alone was applied: {}", r.transcript());
    assert!(
        env.remote_branches().contains("refs/heads/fix/old "),
        "both halves of a bulk deletion applied without the bulk group"
    );
}

#[test]
fn junk_on_a_rewound_ledger_does_not_hide_that_the_published_decisions_were_left_out() {
    // Attack (hostile planner, on a host that protects nothing): bob saw the ledger with
    // carol's veto. The planner rewinds it to before the veto and adds, on top, a commit of
    // 25 junk files. `show` of the plan file warns instead of failing, but the warnings about
    // published items are capped at 20 and the ledger's junk was noted first: "the published
    // approvals and rejections are left out: the ledger … was rewound" was only counted in
    // "and 6 more items … were left out (junk …)".
    let t = crate::fixtures::team(POLICY);
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    let r = t
        .env
        .run_in(&t.carol, "carol", &["reject", &id[..12], "--comment", "not now"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // bob's approve records the tip it saw (the veto under it).
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", "+refs/heads/guardctl/ledger:refs/l"],
    );
    assert!(push(
        &t.planner,
        &["-f", "origin", "refs/l~2:refs/heads/guardctl/ledger"]
    ));
    let junk: Vec<(String, String)> = (0..25).map(|i| (format!("junk{i:02}"), format!("{i}"))).collect();
    let files: Vec<(&str, &str)> = junk.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
    t.env.push_to_ledger(&t.planner, &files);
    let file = t.bob.join("plan.json");
    fs::copy(t.planner.join("plan.json"), &file).unwrap();
    let r = t.env.run_in(&t.bob, "bob", &["show", file.to_str().unwrap()]);
    assert!(
        r.stderr.contains("was rewound"),
        "the rewind is said: {}",
        r.stderr
    );
}
