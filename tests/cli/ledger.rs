//! Team state on a branch the host can protect (issue 29, docs/remote.md "The ledger"): every
//! published item is added to `refs/heads/guardctl/ledger` and never taken away. Against a
//! bare remote that protects branches and tags the way hosts do (a `pre-receive` hook refusing
//! deletions and non-fast-forward updates under `refs/heads/` and `refs/tags/`, allowing
//! anything else), a planner with push access cannot lift a veto or unconsume a plan; where
//! the host protects nothing, a clone that saw the ledger refuses it rewound.

use crate::fixtures::{Team, protect_refs, publish};
use std::path::Path;

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

const LEDGER: &str = "refs/heads/guardctl/ledger";

/// What GitHub rulesets, GitLab protected branches and Gitea branch protection do: no
/// deletion and no force-push of branches and tags; any other ref may change.
fn protect_branches_and_tags(remote: &Path) {
    protect_refs(remote, "refs/heads/*|refs/tags/*");
}

fn team() -> Team {
    crate::fixtures::team(POLICY)
}

/// `git push` in `clone`, as anyone with push access runs it: whether the remote took it.
fn push(clone: &Path, args: &[&str]) -> bool {
    let mut c = std::process::Command::new("git");
    c.current_dir(clone).arg("push").arg("-q").args(args);
    c.output().unwrap().status.success()
}

/// A plan approved by bob and rejected by carol, both published on the ledger.
fn vetoed(t: &Team) -> String {
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t
        .env
        .run_in(&t.carol, "carol", &["reject", &id[..12], "--comment", "not now"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let rejection = t
        .env
        .published_under(&t.env.origin(), &format!("refs/guardctl/rejections/{id}/"));
    assert!(!rejection.is_empty(), "the rejection is on the ledger");
    assert_eq!(
        t.env.git_in(&t.env.origin(), &["for-each-ref", "refs/guardctl"]),
        "",
        "nothing is published as a ref of its own"
    );
    id
}

fn refused_with_the_veto(t: &Team, dir: &Path, id: &str) {
    let r = t.env.run_in(dir, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(
        r.stderr.contains("rejected by carol@example.com: not now"),
        "{}",
        r.stderr
    );
}

#[test]
fn on_a_host_protecting_branches_a_planner_cannot_delete_or_rewind_the_ledger_and_the_veto_holds() {
    let t = team();
    let id = vetoed(&t);
    protect_branches_and_tags(&t.env.origin());
    let tip = t.env.ledger_tip();
    let before = t.env.published_on(&t.env.origin());
    // The planner tries to delete the ledger, then to force it back before the rejection.
    assert!(!push(&t.planner, &["origin", "--delete", "guardctl/ledger"]));
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
    );
    assert!(!push(
        &t.planner,
        &["-f", "origin", "refs/l~1:refs/heads/guardctl/ledger"]
    ));
    assert_eq!(t.env.ledger_tip(), tip, "the host refused both");
    // A fast-forward whose tree holds nothing (or junk) "removes" nothing: what the ledger
    // holds is everything ever added.
    t.env
        .push_to_ledger(&t.planner, &[("README", "nothing to see here")]);
    assert_ne!(t.env.ledger_tip(), tip);
    let after = t.env.published_on(&t.env.origin());
    assert!(
        before.lines().all(|l| after.lines().any(|a| a == l)),
        "{before}\n---\n{after}"
    );
    // A fresh clone never saw any of it: the veto stands there too.
    let fresh = t.env.clones(&["fresh"]).remove(0);
    refused_with_the_veto(&t, &fresh, &id);
    refused_with_the_veto(&t, &t.executor, &id);
    let r = t.env.run_in(&fresh, "mallory", &["inbox"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("at the top of the ledger"),
        "the junk is named: {}",
        r.stderr
    );
}

#[test]
fn a_clone_that_saw_the_ledger_refuses_it_rewound_on_a_host_that_protects_nothing() {
    let t = team();
    let id = vetoed(&t);
    // The executor's apply is refused, and its clone keeps the tip it saw.
    refused_with_the_veto(&t, &t.executor, &id);
    let seen = t.env.ledger_tip();
    // The planner rewinds the ledger to before the rejection (nothing protects it here).
    t.env.git_in(
        &t.planner,
        &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
    );
    assert!(push(
        &t.planner,
        &["-f", "origin", "refs/l~1:refs/heads/guardctl/ledger"]
    ));
    let now = t.env.ledger_tip();
    for cmd in ["verify", "apply"] {
        let r = t.env.run_in(&t.executor, "mallory", &["--json", cmd, &id[..12]]);
        assert_eq!(r.code, 16, "{cmd}: {}", r.transcript());
        let e = &r.json()["error"];
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("was rewound") && message.contains(&seen) && message.contains(&now),
            "{e}"
        );
        assert_eq!(e["details"]["seen"], seen.as_str());
    }
    // Deleting the whole branch is no way around it either.
    assert!(push(&t.planner, &["origin", "--delete", "guardctl/ledger"]));
    let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains("the branch is gone"), "{}", r.stderr);
}

#[test]
fn a_ledger_rewound_while_an_apply_runs_is_refused_when_its_push_is_built_again() {
    // Two approvals, so that rewinding one away would leave the plan short of approvals.
    let t = crate::fixtures::team(
        "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n",
    );
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    for (clone, who) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        let r = t.env.run_in(clone, who, &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // After the apply read the ledger, before its push: the planner rewinds it past carol's
    // approval (nothing protects it here). The push, leased on the tip the apply saw, fails;
    // built again, it would land on the rewound ledger as if nothing had happened.
    let origin = t.env.origin();
    let rewind = format!("git -C {} update-ref {LEDGER} {LEDGER}~1", origin.display());
    let r = t.env.run_env(
        "mallory",
        &[
            ("GUARDCTL_TEST_EXEC_AT", "consumed"),
            ("GUARDCTL_TEST_EXEC", &rewind),
        ],
        &["-C", t.executor.to_str().unwrap(), "--json", "apply", &id[..12]],
    );
    assert_eq!(r.code, 16, "{}", r.transcript());
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("was rewound"), "{message}");
    assert!(t.env.remote_branches().contains("fix/old"), "nothing was deleted");
}

mod merge_history {
    //! Attacks on the ledger branch (issue 29): a planner with push access to a remote that
    //! protects branches only against deletion and non-fast-forward pushes.

    use crate::fixtures::{Team, TestEnv, protect_refs, publish};
    use std::path::Path;

    const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n";

    const LEDGER: &str = "refs/heads/guardctl/ledger";

    /// What a host does for the ledger branch as docs/remote.md "Protecting the ledger" asks: no
    /// deletion and no force-push (the team's other branches stay deletable: plans delete them).
    fn protect_the_ledger(remote: &Path) {
        protect_refs(remote, LEDGER);
    }

    fn team() -> Team {
        crate::fixtures::team(POLICY)
    }

    /// The first-parent commit of the remote's ledger that added a file under `dir` (a path in
    /// the ledger, e.g. `rejections/<id>`).
    fn commit_adding(env: &TestEnv, dir: &str) -> String {
        let origin = env.origin();
        let chain = env.git_in(&origin, &["log", "--first-parent", "--format=%H", LEDGER, "--"]);
        chain
            .lines()
            .find(|c| {
                env.git_in(&origin, &["ls-tree", "-r", "--name-only", c])
                    .lines()
                    .any(|p| p.starts_with(dir))
            })
            .unwrap_or_else(|| panic!("no ledger commit adds {dir}"))
            .to_string()
    }

    /// Push onto the ledger, from `clone`, a merge commit whose first parent is `first` and whose
    /// second is the ledger's current tip: a fast-forward (the tip is an ancestor), so a host
    /// that only refuses rewinds takes it.
    fn push_merge_skipping(env: &TestEnv, clone: &Path, first: &str) {
        env.git_in(
            clone,
            &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/forged/ledger")],
        );
        let tip = env.git_in(clone, &["rev-parse", "refs/forged/ledger"]);
        let empty = env.git_in(clone, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
        let merge = env.git_in(
            clone,
            &["commit-tree", &empty, "-p", first, "-p", &tip, "-m", "merge"],
        );
        env.git_in(clone, &["push", "-q", "origin", &format!("{merge}:{LEDGER}")]);
        assert_eq!(
            env.ledger_tip(),
            merge,
            "the host took the merge as a fast-forward"
        );
    }

    #[test]
    fn a_merge_commit_whose_first_parent_skips_a_rejection_does_not_lift_the_veto() {
        let t = team();
        let id = publish(&t.env, &t.planner, "plan.json", &[]);
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = t
            .env
            .run_in(&t.carol, "carol", &["reject", &id[..12], "--comment", "not now"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        protect_the_ledger(&t.env.origin());
        // The executor's clone sees the veto (and records the tip).
        let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
        assert_eq!(r.code, 12, "{}", r.transcript());
        let rejection = commit_adding(&t.env, &format!("rejections/{id}"));
        // t.planner has the objects after a fetch; the rejection's parent is the approved plan.
        t.env.git_in(
            &t.planner,
            &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
        );
        let before = t
            .env
            .git_in(&t.planner, &["rev-parse", &format!("{rejection}~1")]);
        push_merge_skipping(&t.env, &t.planner, &before);
        let fresh = t.env.clones(&["fresh"]).remove(0);
        let remote = t.env.remote_branches();
        for dir in [&fresh, &t.executor] {
            let r = t.env.run_in(dir, "mallory", &["apply", &id[..12]]);
            assert_eq!(r.code, 12, "the veto was lifted: {}", r.transcript());
            assert_eq!(
                t.env.remote_branches(),
                remote,
                "a refused apply deleted branches"
            );
            assert!(
                r.stderr.contains("rejected by carol@example.com: not now"),
                "{}",
                r.transcript()
            );
        }
    }

    #[test]
    fn a_merge_commit_whose_first_parent_skips_the_consumed_marker_does_not_let_a_plan_apply_twice() {
        let t = team();
        let id = publish(&t.env, &t.planner, "plan.json", &[]);
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        protect_the_ledger(&t.env.origin());
        let branches = t.env.remote_branches();
        let r = t.env.run_in(&t.executor, "mallory", &["apply", &id[..12]]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        assert_ne!(
            t.env.remote_branches(),
            branches,
            "the first apply deleted branches"
        );
        let consumed = commit_adding(&t.env, &format!("consumed/{id}"));
        t.env.git_in(
            &t.planner,
            &["fetch", "-q", "origin", &format!("+{LEDGER}:refs/l")],
        );
        let before = t.env.git_in(&t.planner, &["rev-parse", &format!("{consumed}~1")]);
        push_merge_skipping(&t.env, &t.planner, &before);
        // The planner puts the deleted branches back at the tips the plan names.
        for line in branches.lines() {
            let (name, oid) = line.split_once(' ').unwrap();
            t.env.git_in(&t.env.origin(), &["update-ref", name, oid]);
        }
        assert_eq!(t.env.remote_branches(), branches);
        let fresh = t.env.clones(&["fresh"]).remove(0);
        for dir in [&fresh, &t.executor] {
            let r = t.env.run_in(dir, "mallory", &["apply", &id[..12]]);
            // A replay of the first apply (0, its recorded result): nothing is deleted again.
            assert_eq!(r.code, 0, "{}", r.transcript());
            assert!(r.stdout.contains("nothing was changed now"), "{}", r.transcript());
            assert_eq!(
                t.env.remote_branches(),
                branches,
                "the plan applied twice: {}",
                r.transcript()
            );
        }
    }
}

mod before_the_ledger {
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
        let remote = env.remote_branches();
        let r = env.run_in(&ci2, "mallory", &["apply", b.to_str().unwrap()]);
        assert_eq!(r.code, 12, "B alone was applied: {}", r.transcript());
        assert_eq!(env.remote_branches(), remote, "a refused apply deleted branches");
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
}

/// The heavy tests of this file (minutes of CPU, hundreds of MB, thousands of refs): they return
/// at once unless `GUARDCTL_HEAVY_TESTS=1`; `.ci/run` runs every `::heavy::` test as a separate
/// bounded step (tests/cli/fixtures.rs `skip_heavy`).
mod heavy {
    use super::*;

    #[test]
    fn verify_and_apply_read_past_fifty_thousand_junk_refs_under_refs_guardctl() {
        if crate::fixtures::skip_heavy(
            "verify_and_apply_read_past_fifty_thousand_junk_refs_under_refs_guardctl",
        ) {
            return;
        }
        let t = team();
        let id = publish(&t.env, &t.planner, "plan.json", &[]);
        let r = t.env.run_in(&t.bob, "bob", &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        // The clean case, for the README's numbers (printed, never asserted: `--nocapture`).
        let clean = std::time::Instant::now();
        let r = t.env.run_in(&t.executor, "mallory", &["verify", &id[..12]]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let clean = clean.elapsed();
        // Anyone who can push can create refs there: 50,000 of them, each its own junk commit
        // (fast-import makes them, as a hostile pusher's script would).
        let origin = t.env.origin();
        let mut input = String::new();
        for i in 0..50_000u32 {
            let kind = ["plans", "consumed", "receipts", "approvals"][i as usize % 4];
            let name = format!("{:064x}", u128::from(i) * 2_654_435_761 + 1);
            let refname = match kind {
                "approvals" => format!("refs/guardctl/{kind}/{id}/{name}"),
                _ => format!("refs/guardctl/{kind}/{name}"),
            };
            let message = format!("junk {i}\n");
            input += &format!(
                "commit {refname}\ncommitter J <j@example.com> 0 +0000\ndata {}\n{message}\n",
                message.len()
            );
        }
        let mut c = std::process::Command::new("git");
        c.current_dir(&origin)
            .args(["fast-import", "--quiet"])
            .stdin(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        t.env.git_in(&origin, &["pack-refs", "--all"]);
        eprintln!("verify without junk refs: {clean:?}");
        let timed = |args: &[&str]| {
            let started = std::time::Instant::now();
            let r = t.env.run_in(&t.executor, "mallory", args);
            let shown = r.transcript();
            assert_eq!(r.code, 0, "{args:?}: {}", &shown[..shown.len().min(3000)]);
            eprintln!("{args:?} with 50,000 junk refs: {:?}", started.elapsed());
        };
        timed(&["inbox"]);
        timed(&["verify", &id[..12]]);
        timed(&["apply", &id[..12]]);
    }
}
