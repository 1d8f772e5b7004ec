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
fn verify_and_apply_read_past_fifty_thousand_junk_refs_under_refs_guardctl() {
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
