//! Teams across machines (issue 16, docs/remote.md): plans, approvals, rejections and consumed
//! markers travel through the git remote under `refs/guardctl/`, each person in a clone of
//! their own with a key of their own, and no file passes between them.

use crate::fixtures::{Run, Team, TestEnv, publish, team_remote};
use std::path::{Path, PathBuf};

/// Two approvals, from the `reviewers` group only.
const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n";

/// The team of `fixtures::team` under this file's policy: dave (the mallory test key) is
/// trusted as the executor.
fn team() -> Team {
    crate::fixtures::team(POLICY)
}

impl Team {
    /// Alice plans the merged remote branches, for dave to apply, and publishes the plan.
    fn publish_plan(&self) -> String {
        format!("sha256:{}", publish(&self.env, &self.planner, "plan.json", &[]))
    }

    fn inbox(&self, dir: &Path, user: &str) -> serde_json::Value {
        let r = self.env.run_in(dir, user, &["--json", "inbox"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        r.json()
    }

    fn origin_refs(&self) -> String {
        self.env.published_on(&self.env.origin())
    }
}

/// The first 12 hex digits of a plan id: what people type.
fn prefix(id: &str) -> &str {
    &id["sha256:".len().."sha256:".len() + 12]
}

fn no_plan_files(dir: &Path) {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| e.path())
        .collect();
    assert!(files.is_empty(), "files in {}: {files:?}", dir.display());
}

fn remote_branch_names(env: &TestEnv) -> Vec<String> {
    env.remote_branches()
        .lines()
        .map(|l| {
            l.split(' ')
                .next()
                .unwrap()
                .trim_start_matches("refs/heads/")
                .to_string()
        })
        .collect()
}

#[test]
fn a_plan_published_in_one_clone_is_approved_in_two_and_applied_in_a_fourth_with_no_file_passed() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    assert!(
        t.origin_refs().contains(&format!("refs/guardctl/plans/{hex}")),
        "{}",
        t.origin_refs()
    );

    // The inbox shows it to the reviewers, who may approve it; not to the planner or the
    // executor, who may not.
    for (dir, user) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        let v = t.inbox(dir, user);
        let plans = v["plans"].as_array().unwrap();
        assert_eq!(plans.len(), 1, "{v:#}");
        assert_eq!(plans[0]["plan_id"], id.as_str());
        assert_eq!(plans[0]["may_approve"], true, "{user}: {v:#}");
        assert_eq!(plans[0]["still_needed"][0]["missing"], 2);
        assert_eq!(
            plans[0]["still_needed"][0]["from"],
            serde_json::json!(["bob@example.com", "carol@example.com"])
        );
        assert_eq!(v["principal"], format!("{user}@example.com").as_str());
    }
    let planner = t.inbox(&t.planner, "alice");
    assert_eq!(planner["plans"][0]["may_approve"], false);
    assert_eq!(planner["plans"][0]["why_not"], "you planned it");
    let executor = t.inbox(&t.executor, "mallory");
    assert_eq!(executor["plans"][0]["may_approve"], false);
    assert_eq!(
        executor["plans"][0]["why_not"],
        "no group that still needs approvals lists you"
    );
    // As text too.
    let r = t.env.run_in(&t.bob, "bob", &["inbox"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout.contains("1 plan waiting on remote `origin`"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("needs: default 2 more (from bob@example.com, carol@example.com)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "guardctl approve {} (published back to the remote)",
            prefix(&id)
        )),
        "{}",
        r.stdout
    );

    // Each reviewer looks at it and approves it by a prefix of its id, in their own clone.
    let r = t.env.run_in(&t.bob, "bob", &["show", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("feature/done"), "{}", r.stdout);
    let r = t.env.run_in(&t.bob, "bob", &["approve", prefix(&id), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("on remote `origin`"), "{}", r.stderr);
    let r = t.env.run_in(
        &t.carol,
        "carol",
        &["--json", "approve", &id, "--yes", "--publish"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = r.json();
    assert_eq!(v["written_to"], serde_json::Value::Null);
    assert_eq!(v["published"]["remote"], "origin");
    assert!(
        v["published"]["ref"]
            .as_str()
            .unwrap()
            .starts_with(&format!("refs/guardctl/approvals/{hex}/"))
    );
    assert_eq!(
        v["approvals"]["approved_by"].as_array().unwrap().len(),
        2,
        "{v:#}"
    );
    // Bob's inbox: the plan needs nothing more, and he approved it already.
    let v = t.inbox(&t.bob, "bob");
    assert_eq!(v["plans"][0]["still_needed"], serde_json::json!([]));
    assert_eq!(v["plans"][0]["why_not"], "you approved it");

    // The executor verifies and applies it in a fourth clone, by its id alone.
    let r = t.env.run_in(&t.executor, "mallory", &["verify", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = t.env.run_in(&t.executor, "mallory", &["apply", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/live", "main", "release/1.0"]
    );
    assert!(
        t.origin_refs().contains(&format!("refs/guardctl/consumed/{hex}")),
        "{}",
        t.origin_refs()
    );

    // Nothing waits any more, for anyone.
    for (dir, user) in [(&t.bob, "bob"), (&t.carol, "carol"), (&t.planner, "alice")] {
        let v = t.inbox(dir, user);
        assert_eq!(v["plans"], serde_json::json!([]), "{v:#}");
        assert_eq!(v["left_out"]["consumed"], 1);
    }
    // No plan or approval file was passed: the reviewers' and executor's clones have none.
    for dir in [&t.bob, &t.carol, &t.executor] {
        no_plan_files(dir);
    }
}

#[test]
fn a_rejection_published_from_one_clone_makes_apply_refuse_in_another() {
    let t = team();
    let id = t.publish_plan();
    assert_eq!(t.env.run_in(&t.bob, "bob", &["approve", &id, "--yes"]).code, 0);
    let r = t.env.run_in(
        &t.carol,
        "carol",
        &["reject", prefix(&id), "--comment", "not before the release"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The rejection was made in carol's clone only; the executor's clone sees it on the remote.
    for cmd in ["verify", "apply"] {
        let r = t.env.run_in(&t.executor, "mallory", &[cmd, prefix(&id)]);
        assert_eq!(r.code, 12, "{cmd}: {}", r.transcript());
        assert!(
            r.stderr
                .contains("rejected by carol@example.com: not before the release"),
            "{cmd}: {}",
            r.stderr
        );
    }
    // Also for the plan file in the planner's clone, which never held the rejection.
    let file = t.planner.join("plan.json");
    let r = t
        .env
        .run_in(&t.planner, "alice", &["show", file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("carol@example.com"), "{}", r.stdout);
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
    );
    // The inbox says so, and nobody is asked to approve a vetoed plan.
    let v = t.inbox(&t.bob, "bob");
    assert_eq!(
        v["plans"][0]["rejected_by"],
        serde_json::json!(["carol@example.com"])
    );
    assert_eq!(v["plans"][0]["may_approve"], false);
}

#[test]
fn a_published_approval_is_never_overwritten_by_a_second_one_from_the_same_key() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    let r = t
        .env
        .run_in(&t.bob, "bob", &["approve", &id, "--yes", "--comment", "first"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = t.origin_refs();
    // A second, different approval by the same key: the create-only lease refuses it.
    let r = t
        .env
        .run_in(&t.bob, "bob", &["approve", &id, "--yes", "--comment", "second"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr.contains("already published with other content"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("refs/guardctl/approvals/{hex}/")),
        "{}",
        r.stderr
    );
    assert_eq!(t.origin_refs(), before, "a published ref moved");
    // Carol approves the planner's file and publishes: the plan is on the remote already, so
    // only her approval is created; what bob published first is what counts.
    let plan = t.planner.join("plan.json");
    let r = t.env.run_in(
        &t.planner,
        "carol",
        &["--json", "approve", plan.to_str().unwrap(), "--yes", "--publish"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        r.json()["published"]["created"].as_array().unwrap().len(),
        1,
        "{}",
        r.stdout
    );
    let r = t
        .env
        .run_in(&t.planner, "alice", &["show", plan.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("first"), "{}", r.stdout);
    assert!(!r.stdout.contains("second"), "{}", r.stdout);
}

#[test]
fn a_remote_that_refuses_guardctl_refs_is_named_with_its_message_and_the_file_fallback() {
    let t = team();
    let hook = t.env.origin().join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in refs/guardctl/*|refs/heads/guardctl/*) echo \"custom refs are not accepted here: $ref\"; exit 1;; esac\ndone\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = t.planner.join("plan.json");
    let r: Run = t.env.run_in(
        &t.planner,
        "alice",
        &[
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "-o",
            out.to_str().unwrap(),
            "--publish",
        ],
    );
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("refused refs/guardctl/plans/"), "{}", r.stderr);
    assert!(
        r.stderr.contains("custom refs are not accepted here"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--out FILE"), "{}", r.stderr);
    assert_eq!(t.origin_refs(), "", "something was published");
    // The file fallback works with the same remote.
    assert!(out.exists());
    let r = t.env.run_in(
        &t.bob,
        "bob",
        &["approve", out.to_str().unwrap(), "--yes", "--no-publish"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_prefix_is_resolved_among_published_plans_and_junk_under_refs_guardctl_is_left_out() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    // Not published: not found (66). Too short: not an id (66).
    let r = t.env.run_in(&t.bob, "bob", &["show", "0123456789ab"]);
    assert_eq!(r.code, 66, "{}", r.transcript());
    let r = t.env.run_in(&t.bob, "bob", &["show", &hex[..6]]);
    assert_eq!(r.code, 66, "{}", r.transcript());
    // Junk published by someone with push access: an "approval" under bob's name that is
    // not a signed envelope. It is left out with a warning naming the ref; bob's own
    // approval can then no longer be published under that ref (denial, nothing more).
    let fpr = "0".repeat(64);
    let tree = t.env.git_in(&t.env.origin(), &["mktree"]);
    let commit = t
        .env
        .git_in(&t.env.origin(), &["commit-tree", &tree, "-m", "junk"]);
    t.env.git_in(
        &t.env.origin(),
        &[
            "update-ref",
            &format!("refs/guardctl/approvals/{hex}/{fpr}"),
            &commit,
        ],
    );
    let r = t.env.run_in(&t.bob, "bob", &["show", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr
            .contains(&format!("ignored refs/guardctl/approvals/{hex}/{fpr}")),
        "{}",
        r.stderr
    );
    let r = t.env.run_in(&t.executor, "mallory", &["verify", prefix(&id)]);
    assert_eq!(r.code, 12, "junk counted as an approval: {}", r.transcript());
}

#[test]
fn a_published_rejection_cannot_be_shadowed_by_its_payload_re_signed_with_another_key() {
    use base64::Engine;
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    assert_eq!(t.env.run_in(&t.bob, "bob", &["approve", &id, "--yes"]).code, 0);
    assert_eq!(
        t.env
            .run_in(&t.carol, "carol", &["reject", &id, "--comment", "no"])
            .code,
        0
    );
    let listed = t.origin_refs();
    let rejection_ref = listed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .find(|r| r.starts_with(&format!("refs/guardctl/rejections/{hex}/")))
        .unwrap()
        .to_string();
    let text = t.env.published_bytes(&t.env.origin(), &rejection_ref);
    // The planner copies carol's payload and signs it with a key of their own, then puts that
    // envelope first in the plan file the executor is handed.
    let mut forged: serde_json::Value = serde_json::from_str(&text).unwrap();
    let body = base64::engine::general_purpose::STANDARD
        .decode(forged["payload"].as_str().unwrap())
        .unwrap();
    let ty = forged["payloadType"].as_str().unwrap().to_string();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(&body);
    let key = t.env.key("alice");
    forged["signatures"][0]["sig"] =
        serde_json::Value::String(crate::plan_file::ssh_sign(&key, "guardctl-approval", &pae));
    forged["signatures"][0]["keyid"] = serde_json::Value::String(crate::plan_file::fingerprint(&key));
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.planner.join("plan.json")).unwrap()).unwrap();
    file["approvals"] = serde_json::json!([forged]);
    let handed = t.executor.join("handed.json");
    std::fs::write(&handed, file.to_string()).unwrap();
    let r = t
        .env
        .run_in(&t.executor, "mallory", &["apply", handed.to_str().unwrap()]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(
        r.stderr.contains("rejected by carol@example.com: no"),
        "{}",
        r.stderr
    );
}

/// guardctl in `dir` with `key` (a path: a user certificate with its private key beside it)
/// and the team's allowed-signers file.
fn run_key_in(env: &TestEnv, dir: &Path, key: &Path, args: &[&str]) -> Run {
    let mut c = env.command();
    c.arg("--key")
        .arg(key)
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("-C")
        .arg(dir)
        .args(args);
    crate::fixtures::run(c)
}

#[test]
fn an_executor_signing_with_a_certificate_is_replayed_in_another_clone_not_refused() {
    let t = team();
    // dave applies with a key of the day, certified for dave@example.com by the team's CA.
    let cert = t.env.certified_key("dave_today", "dave@example.com");
    let id = t.publish_plan();
    for (dir, user) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        let r = t.env.run_in(dir, user, &["approve", &id, "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let second = t.env.clones(&["second"]).pop().unwrap();
    let r = run_key_in(&t.env, &t.executor, &cert, &["--json", "apply", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let applied = r.json();
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/live", "main", "release/1.0"]
    );
    // Another runner of dave's, in another clone: the marker and receipt the certificate
    // signed are dave's, so it prints that receipt as a replay.
    let r = run_key_in(&t.env, &second, &cert, &["--json", "apply", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let replayed = r.json();
    assert_eq!(replayed["replayed"], true, "{replayed:#}");
    assert_eq!(replayed["receipt"], applied["receipt"]);
    // And in the clone that applied it, as ever.
    let r = run_key_in(&t.env, &t.executor, &cert, &["--json", "apply", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["replayed"], true);
}

/// Create `refname` on the team's remote holding a parentless commit of the one file `name`
/// with `bytes` (what anyone with push access can do).
fn push_item(env: &TestEnv, refname: &str, name: &str, bytes: &[u8]) {
    let dir = env.path().join(format!("pusher-{}", refname.replace('/', "-")));
    env.git_in(env.path(), &["init", "-q", dir.to_str().unwrap()]);
    std::fs::write(dir.join(name), bytes).unwrap();
    env.git_in(&dir, &["add", name]);
    env.git_in(&dir, &["commit", "-q", "-m", "pushed by hand"]);
    let url = format!("file://{}", env.origin().display());
    env.git_in(&dir, &["push", "-q", &url, &format!("HEAD:{refname}")]);
}

#[test]
fn a_consumed_marker_signed_with_a_certificate_for_another_principal_is_refused() {
    use base64::Engine;
    let t = team();
    let dave = t.env.certified_key("dave_today", "dave@example.com");
    // eve's certificate comes from the same CA, which the allowed signers trust for eve.
    let eve = t.env.certified_key("eve_today", "eve@example.com");
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    for (dir, user) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        assert_eq!(t.env.run_in(dir, user, &["approve", &id, "--yes"]).code, 0);
    }
    // eve signs a consumed marker for dave's plan with her certificate and pushes it.
    let key = crate::plan_file::fingerprint(&eve);
    let body = serde_json::json!({
        "plan_id": id, "before_image": format!("sha256:{}", "0".repeat(64)), "key": key,
        "created_at": crate::fixtures::NOW, "nonce": "0".repeat(32),
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let ty = "application/vnd.guardctl.consumed.v1+json";
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, bytes.len()).into_bytes();
    pae.extend_from_slice(&bytes);
    let sig = crate::plan_file::ssh_sign(&eve, "guardctl-apply", &pae);
    let marker = serde_json::json!({"payloadType": ty,
        "payload": base64::engine::general_purpose::STANDARD.encode(&bytes),
        "signatures": [{"keyid": key, "sig": sig}]});
    let consumed = format!("refs/guardctl/consumed/{hex}");
    push_item(&t.env, &consumed, "consumed.json", marker.to_string().as_bytes());
    // dave's apply does not take it for dave's: 16 naming the ref and whom it speaks for.
    let r = run_key_in(&t.env, &t.executor, &dave, &["apply", prefix(&id)]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(r.stderr.contains(&consumed), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "it is signed by {key} (eve@example.com), not by the plan's executor dave@example.com"
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("Replayed"), "{}", r.stdout);
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
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

/// A junk commit (one empty file) at `refname` on the team's remote.
fn junk_at(env: &TestEnv, refname: &str) {
    push_item(env, refname, "junk.txt", b"not a decision\n");
}

#[test]
fn junk_at_a_reviewers_rejection_ref_does_not_silence_the_veto_they_publish() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    assert_eq!(t.env.run_in(&t.bob, "bob", &["approve", &id, "--yes"]).code, 0);
    // Someone with push access takes carol's rejection name first.
    let taken = format!("refs/guardctl/rejections/{hex}/{}", fpr_hex(&t.env, "carol"));
    junk_at(&t.env, &taken);
    let r = t.env.run_in(
        &t.carol,
        "carol",
        &["--json", "reject", prefix(&id), "--comment", "not now"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr
            .contains(&format!("{taken} on remote `origin` was taken")),
        "{}",
        r.stderr
    );
    let published = r.json()["published"]["ref"].as_str().unwrap().to_string();
    assert!(
        published.starts_with(&format!("{taken}-")) && published.len() == taken.len() + 17,
        "{published}"
    );
    let refs = t.origin_refs();
    assert!(refs.contains(&taken) && refs.contains(&published), "{refs}");
    // Every other clone sees carol's veto, said first, with the junk named besides.
    for cmd in ["verify", "apply"] {
        let r = t.env.run_in(&t.executor, "mallory", &[cmd, prefix(&id)]);
        assert_eq!(r.code, 12, "{cmd}: {}", r.transcript());
        assert!(
            r.stderr.contains("rejected by carol@example.com: not now"),
            "{cmd}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("also blocked: {taken}")),
            "{cmd}: {}",
            r.stderr
        );
    }
    let v = t.inbox(&t.bob, "bob");
    assert_eq!(
        v["plans"][0]["rejected_by"],
        serde_json::json!(["carol@example.com"])
    );
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
    );
}

#[test]
fn junk_alone_under_a_plans_rejections_blocks_apply_and_nothing_is_deleted() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    for (dir, user) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        assert_eq!(t.env.run_in(dir, user, &["approve", &id, "--yes"]).code, 0);
    }
    // Not even a fingerprint for a name: still read, still blocking.
    let junk = format!("refs/guardctl/rejections/{hex}/junk");
    junk_at(&t.env, &junk);
    let before = t.origin_refs();
    for cmd in ["verify", "apply"] {
        let r = t
            .env
            .run_in(&t.executor, "mallory", &["--json", cmd, prefix(&id)]);
        assert_eq!(r.code, 12, "{cmd}: {}", r.transcript());
        let e = r.json();
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("the plan is blocked:") && msg.contains(&junk),
            "{cmd}: {e:#}"
        );
        assert_eq!(
            e["error"]["details"]["blocked_by"].as_array().unwrap().len(),
            1,
            "{e:#}"
        );
        assert!(
            e["error"]["details"]["hint"]
                .as_str()
                .unwrap()
                .contains("administers the remote"),
            "{e:#}"
        );
    }
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/done", "feature/live", "fix/old", "main", "release/1.0"]
    );
    assert_eq!(t.origin_refs(), before, "a ref on the remote changed");
    // show and inbox say so; nobody is asked to approve it.
    let r = t.env.run_in(&t.bob, "bob", &["show", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("BLOCKED"), "{}", r.stdout);
    let v = t.inbox(&t.bob, "bob");
    let plan = &v["plans"][0];
    assert_eq!(plan["may_approve"], false, "{v:#}");
    assert!(
        plan["approvals"]["blocked_by"][0]
            .as_str()
            .unwrap()
            .contains(&junk),
        "{v:#}"
    );
    let r = t.env.run_in(&t.bob, "bob", &["inbox"]);
    assert!(r.stdout.contains("blocked (taken for a veto)"), "{}", r.stdout);
}

#[test]
fn junk_under_a_plans_approvals_counts_for_nothing_and_does_not_keep_an_approval_off() {
    let t = team();
    let id = t.publish_plan();
    let hex = id.trim_start_matches("sha256:");
    // Junk at both reviewers' approval names, and under a name that is no fingerprint.
    for user in ["bob", "carol"] {
        junk_at(
            &t.env,
            &format!("refs/guardctl/approvals/{hex}/{}", fpr_hex(&t.env, user)),
        );
    }
    junk_at(&t.env, &format!("refs/guardctl/approvals/{hex}/junk"));
    let r = t.env.run_in(&t.executor, "mallory", &["verify", prefix(&id)]);
    assert_eq!(r.code, 12, "junk counted as an approval: {}", r.transcript());
    assert!(!r.stderr.contains("blocked"), "{}", r.stderr);
    // bob approves twice (his name is taken, so each lands under its own fallback name):
    // he still counts once.
    for comment in ["first", "second"] {
        let r = t
            .env
            .run_in(&t.bob, "bob", &["approve", &id, "--yes", "--comment", comment]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let r = t
        .env
        .run_in(&t.executor, "mallory", &["--json", "verify", prefix(&id)]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let e = r.json();
    assert_eq!(
        e["error"]["details"]["approved_by"],
        serde_json::json!(["bob@example.com"])
    );
    assert_eq!(e["error"]["details"]["groups"][0]["missing"], 1, "{e:#}");
    assert_eq!(
        t.env.run_in(&t.carol, "carol", &["approve", &id, "--yes"]).code,
        0
    );
    let r = t.env.run_in(&t.executor, "mallory", &["apply", prefix(&id)]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        remote_branch_names(&t.env),
        ["feature/live", "main", "release/1.0"]
    );
}

/// `git` in `dir` with `input` on stdin; its stdout, trimmed.
fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// guardctl as `user` in `dir`, where no file may grow past `max_file_bytes` (`ulimit -f`,
/// for guardctl and everything it runs): a fetch that wrote more than that would fail.
fn run_capped(env: &TestEnv, dir: &Path, user: &str, max_file_bytes: u64, args: &[&str]) -> Run {
    let plain = env.command();
    let mut c = std::process::Command::new("sh");
    c.args([
        "-c",
        "ulimit -f \"$0\" && exec \"$@\"",
        &max_file_bytes.div_ceil(512).to_string(),
        env!("CARGO_BIN_EXE_guardctl"),
        "--key",
    ])
    .arg(env.key(user))
    .arg("--allowed-signers")
    .arg(env.allowed_signers())
    .arg("-C")
    .arg(dir)
    .args(args)
    .env_clear()
    .current_dir(plain.get_current_dir().unwrap());
    for (k, v) in plain.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    crate::fixtures::run(c)
}

/// One approval from the reviewers; more than one branch at once is bulk and needs carol
/// (release) too.
const BULK_POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\"]\nrelease = [\"carol@example.com\"]\n\n[approvals]\nrequired = 1\nfrom = [\"reviewers\"]\n\n[bulk]\nthreshold = 1\nrequired = 1\nfrom = [\"release\"]\n";

#[test]
fn a_deletion_split_across_plans_published_from_two_clones_still_needs_the_bulk_approvals() {
    let env = team_remote(BULK_POLICY);
    let [laptop, desktop, bob, executor] =
        <[PathBuf; 4]>::try_from(env.clones(&["laptop", "desktop", "bob", "executor"])).unwrap();
    // alice plans one merged branch from each of her two clones: each is one branch, under
    // the threshold; together they are two.
    let a = publish(&env, &laptop, "a.json", &["--match", "feature/done"]);
    let b = publish(&env, &desktop, "b.json", &["--match", "fix/old"]);
    let (short_a, short_b) = (&a[..12], &b[..12]);

    // In a third clone that never saw either plan: bob's view of B counts A, and his
    // approval for the bulk group is refused (he is not in it; without A the plan would have
    // no bulk group at all: 64).
    let r = env.run_in(&bob, "bob", &["show", short_b]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout
            .contains("part of    2 plans by alice@example.com totalling 2 branches"),
        "{}",
        r.stdout
    );
    let r = env.run_in(&bob, "bob", &["approve", short_b, "--group", "bulk", "--yes"]);
    assert_eq!(r.code, 14, "{}", r.transcript());
    let r = env.run_in(&bob, "bob", &["approve", short_b, "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());

    // Applying B in a fourth clone is refused, naming both plans: the bulk group is missing.
    let r = env.run_in(&executor, "mallory", &["apply", short_b]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert!(
        r.stderr.contains("part of 2 plans by alice@example.com"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&format!("sha256:{short_a}")), "{}", r.stderr);
    assert!(r.stderr.contains(short_b), "{}", r.stderr);
    let r = env.run_in(&executor, "mallory", &["--json", "apply", short_b]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let err = r.json();
    assert_eq!(
        err["error"]["details"]["part_of"]["others"],
        serde_json::json!([format!("sha256:{a}")]),
        "{err:#}"
    );
    assert!(
        remote_branch_names(&env).contains(&"fix/old".to_string()),
        "nothing was deleted"
    );

    // Once the release group approves (from yet another clone, published), B applies.
    let [carol] = <[PathBuf; 1]>::try_from(env.clones(&["carol"])).unwrap();
    let r = env.run_in(&carol, "carol", &["approve", short_b, "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_in(&executor, "mallory", &["apply", short_b]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!remote_branch_names(&env).contains(&"fix/old".to_string()));

    // A team remote that cannot be read: `show` shows what it can read and says so; `verify`
    // (the gate) refuses rather than judge without the plans and vetoes published elsewhere.
    let moved = env.path().join("origin-away.git");
    std::fs::rename(env.origin(), &moved).unwrap();
    let a_file = laptop.join("a.json");
    let r = env.run_in(&laptop, "alice", &["show", a_file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("cannot read refs/guardctl/"), "{}", r.stderr);
    let r = env.run_in(&laptop, "alice", &["verify", a_file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stderr.contains("cannot read refs/guardctl/"), "{}", r.stderr);
    std::fs::rename(&moved, env.origin()).unwrap();
}

/// `plan remote-branches` in `dir` written to `name` there, not published; its path.
pub fn plan_unpublished(env: &TestEnv, dir: &Path, name: &str, glob: &str) -> PathBuf {
    let out = dir.join(name);
    let args = [
        "plan",
        "remote-branches",
        "--remote",
        "origin",
        "--executor",
        "dave@example.com",
        "--match",
        glob,
        "-o",
        out.to_str().unwrap(),
    ];
    let r = env.run_in(dir, "alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    out
}

#[test]
fn halves_of_a_deletion_applied_from_two_fresh_ci_clones_without_publish_still_need_the_bulk_approvals() {
    let env = team_remote(BULK_POLICY);
    let [laptop, bob] = <[PathBuf; 2]>::try_from(env.clones(&["laptop", "bob"])).unwrap();
    // Two plan files, never published, each under the threshold, each approved by bob.
    let a = plan_unpublished(&env, &laptop, "a.json", "feature/done");
    let b = plan_unpublished(&env, &laptop, "b.json", "fix/old");
    for f in [&a, &b] {
        let r = env.run_in(&bob, "bob", &["approve", f.to_str().unwrap(), "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // A CI job in a fresh clone applies the first half: alone it is no bulk deletion.
    let [ci1] = <[PathBuf; 1]>::try_from(env.clones(&["ci1"])).unwrap();
    let r = env.run_in(&ci1, "mallory", &["apply", a.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Its apply published the plan with its marker: another fresh clone, which never saw
    // A, counts it and refuses the second half without the bulk group.
    let [ci2] = <[PathBuf; 1]>::try_from(env.clones(&["ci2"])).unwrap();
    let r = env.run_in(&ci2, "mallory", &["apply", b.to_str().unwrap()]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("bulk needs 1 more"), "{}", r.stderr);
    assert!(
        r.stderr.contains("part of 2 plans by alice@example.com"),
        "{}",
        r.stderr
    );
    assert!(
        remote_branch_names(&env).contains(&"fix/old".to_string()),
        "nothing was deleted"
    );
    let r = env.run_in(&bob, "carol", &["approve", b.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run_in(&ci2, "mallory", &["apply", b.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!remote_branch_names(&env).contains(&"fix/old".to_string()));
    // The first half's apply, replayed from its clone, publishes nothing twice.
    let r = env.run_in(&ci1, "mallory", &["apply", a.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_plan_applied_in_a_ci_clone_is_rolled_back_from_another_clone_by_its_published_receipt() {
    let t = crate::fixtures::team(POLICY);
    let id = publish(&t.env, &t.planner, "plan.json", &[]);
    for (clone, who) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        let r = t.env.run_in(clone, who, &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // A CI clone applies it; its runner is then discarded with the before-image.
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_in(&ci, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("Undo with: guardctl rollback"), "{}", r.stdout);
    std::fs::remove_dir_all(&ci).unwrap();
    assert!(!remote_branch_names(&t.env).contains(&"fix/old".to_string()));

    // The planner runs what the receipt said, in their own clone: the published receipt
    // says where it was applied and what it deleted, and the refs go back from here.
    let r = t.env.run_in(&t.planner, "alice", &["rollback", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("was applied in another clone"), "{}", r.stderr);
    assert!(r.stderr.contains("dave@example.com applied it"), "{}", r.stderr);
    assert!(
        r.stdout.contains("restored 2 branches (0 already present)"),
        "{}",
        r.stdout
    );
    let names = remote_branch_names(&t.env);
    assert!(names.contains(&"fix/old".to_string()) && names.contains(&"feature/done".to_string()));
    let log = t.env.run_in(&t.planner, "alice", &["--json", "log", "--verify"]);
    assert_eq!(log.code, 0, "{}", log.transcript());
    let last = log.json()["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "rollback", "{last}");

    // Again, in a fresh clone: nothing is missing, nothing is pushed.
    let [fresh] = <[PathBuf; 1]>::try_from(t.env.clones(&["fresh"])).unwrap();
    let r = t.env.run_in(&fresh, "bob", &["--json", "rollback", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["already_present"], 2, "{}", r.stdout);
    assert_eq!(r.json()["applied_elsewhere"]["executor"], "dave@example.com");

    // A branch recreated at another commit since: refused, nothing restored, naming it.
    t.env
        .git_in(&t.planner, &["push", "-q", "origin", "--delete", "fix/old"]);
    t.env.git_in(
        &t.planner,
        &["push", "-q", "origin", "origin/main:refs/heads/fix/old"],
    );
    t.env
        .git_in(&t.planner, &["push", "-q", "origin", "--delete", "feature/done"]);
    let r = t.env.run_in(&t.planner, "alice", &["rollback", &id[..12]]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(
        r.stderr.contains("refs/heads/fix/old is now taken"),
        "{}",
        r.stderr
    );
    assert!(!remote_branch_names(&t.env).contains(&"feature/done".to_string()));
}

#[test]
fn an_unmerged_branch_deleted_from_a_ci_clone_is_restored_from_the_remotes_backups_in_a_clone_that_never_had_it()
 {
    let t = crate::fixtures::team(POLICY);
    let live = t
        .env
        .git(&["rev-parse", "origin/feature/live"])
        .trim()
        .to_string();
    let id = publish(
        &t.env,
        &t.planner,
        "plan.json",
        &[
            "--match",
            "feature/live",
            "--older-than",
            "1d",
            "--include-unmerged",
        ],
    );
    for (clone, who) in [(&t.bob, "bob"), (&t.carol, "carol")] {
        let r = t.env.run_in(clone, who, &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let [ci] = <[PathBuf; 1]>::try_from(t.env.clones(&["ci"])).unwrap();
    let r = t.env.run_in(&ci, "mallory", &["apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    std::fs::remove_dir_all(&ci).unwrap();
    assert!(!remote_branch_names(&t.env).contains(&"feature/live".to_string()));
    // The remote's backups branch keeps the deleted tip, and no plan lists that branch.
    let origin = t.env.origin();
    t.env.git_in(
        &origin,
        &[
            "merge-base",
            "--is-ancestor",
            &live,
            "refs/heads/guardctl/backups",
        ],
    );
    let r = t.env.run_in(
        &t.planner,
        "alice",
        &[
            "--json",
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--older-than",
            "0d",
            "--include-unmerged",
            "-o",
            "all.json",
        ],
    );
    assert!(
        !r.stdout.contains("guardctl/backups") && !r.stderr.contains("guardctl/backups"),
        "{}",
        r.transcript()
    );

    // A clone of main alone (as CI checks out) has never had feature/live's commits.
    let lean = t.env.path().join("lean");
    let url = format!("file://{}", origin.display());
    t.env.git_in(
        t.env.path(),
        &[
            "clone",
            "-q",
            "--single-branch",
            "--branch",
            "main",
            &url,
            lean.to_str().unwrap(),
        ],
    );
    let has = |dir: &std::path::Path| {
        std::process::Command::new("git")
            .args(["-C", dir.to_str().unwrap(), "cat-file", "-e", &live])
            .status()
            .unwrap()
            .success()
    };
    assert!(!has(&lean));

    // Without the remote's backups (removed behind the host's back), nothing is restored
    // and the error says what is missing where.
    let tip = t
        .env
        .git_in(&origin, &["rev-parse", "refs/heads/guardctl/backups"]);
    t.env
        .git_in(&origin, &["update-ref", "-d", "refs/heads/guardctl/backups"]);
    let r = t.env.run_in(&lean, "bob", &["rollback", &id[..12]]);
    assert_eq!(r.code, 66, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("the remote has no backups branch refs/heads/guardctl/backups")
            && r.stderr.contains(&live),
        "{}",
        r.stderr
    );
    assert!(!remote_branch_names(&t.env).contains(&"feature/live".to_string()));

    t.env.git_in(
        &origin,
        &["update-ref", "refs/heads/guardctl/backups", tip.trim()],
    );
    let r = t.env.run_in(&lean, "bob", &["rollback", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("restored 1 branches"), "{}", r.stdout);
    let back = t.env.git_in(&origin, &["rev-parse", "refs/heads/feature/live"]);
    assert_eq!(back.trim(), live);
}

/// The heavy tests of this file (minutes of CPU, hundreds of MB, thousands of refs): they return
/// at once unless `GUARDCTL_HEAVY_TESTS=1`; `.ci/run` runs every `::heavy::` test as a separate
/// bounded step (tests/cli/fixtures.rs `skip_heavy`).
mod heavy {
    use super::*;

    #[test]
    fn a_huge_blob_under_plans_is_left_out_as_too_large_without_being_fetched_and_other_plans_are_listed() {
        if crate::fixtures::skip_heavy(
            "a_huge_blob_under_plans_is_left_out_as_too_large_without_being_fetched_and_other_plans_are_listed",
        ) {
            return;
        }
        const MIB: u64 = 1024 * 1024;
        let t = team();
        let id = t.publish_plan();
        let origin = t.env.origin();
        // 200 MB that do not compress, stored as they are (quicker to make and to send).
        let junk = t.env.path().join("junk.bin");
        {
            use std::io::Write;
            let mut w = std::io::BufWriter::new(std::fs::File::create(&junk).unwrap());
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for _ in 0..(200 * MIB / 8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.write_all(&x.to_le_bytes()).unwrap();
            }
        }
        t.env.git_in(&origin, &["config", "core.compression", "0"]);
        t.env.git_in(&origin, &["config", "pack.compression", "0"]);
        let blob = t.env.git_in(
            &origin,
            &["hash-object", "-w", "--no-filters", junk.to_str().unwrap()],
        );
        std::fs::remove_file(&junk).unwrap();
        let tree = git_stdin(
            &origin,
            &["mktree"],
            format!("100644 blob {blob}\tplan.json\n").as_bytes(),
        );
        let commit = t.env.git_in(&origin, &["commit-tree", &tree, "-m", "huge"]);
        let huge = "f".repeat(64);
        t.env.git_in(
            &origin,
            &["update-ref", &format!("refs/guardctl/plans/{huge}"), &commit],
        );

        let check = |r: &Run| {
            assert_eq!(r.code, 0, "{}", r.transcript());
            let v = r.json();
            let listed: Vec<&str> = v["plans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["plan_id"].as_str().unwrap())
                .collect();
            assert_eq!(listed, [id.as_str()], "{v:#}");
            assert_eq!(v["left_out"]["invalid"], 1, "{v:#}");
            assert!(
                r.stderr
                    .contains(&format!("left out: refs/guardctl/plans/{huge}"))
                    && r.stderr.contains("`plan.json`"),
                "{}",
                r.stderr
            );
        };
        // A server that does not filter (file:// as set up): the fetch is stopped at the cap
        // (128 MiB and a little), never the 200 MB; run where no file may pass 136 MiB.
        let r = run_capped(&t.env, &t.bob, "bob", 136 * MIB, &["--json", "inbox"]);
        check(&r);
        assert!(
            r.stderr.contains("larger than any published item"),
            "{}",
            r.stderr
        );
        // A server that filters: the blob is never sent; run where no file may pass 8 MiB.
        t.env
            .git_in(&origin, &["config", "uploadpack.allowFilter", "true"]);
        let r = run_capped(&t.env, &t.bob, "bob", 8 * MIB, &["--json", "inbox"]);
        check(&r);
        assert!(
            r.stderr.contains("too large: the fetch left it out"),
            "{}",
            r.stderr
        );
        // Named by id, it is 65 (not a plan guardctl can read), whatever the server.
        let r = t.env.run_in(&t.bob, "bob", &["show", &huge]);
        assert_eq!(r.code, 65, "{}", r.transcript());
    }
}

/// Issue 34 item 10: a plan that changes nothing waits for nobody. `--publish` saves it and
/// says it was not published; the team remote gains nothing and `inbox` lists no plan.
#[test]
fn a_plan_that_changes_nothing_is_not_published_and_never_listed() {
    let t = team();
    let before = t.origin_refs();
    let out = t.planner.join("empty.json");
    let r = t.env.run_in(
        &t.planner,
        "alice",
        &[
            "plan",
            "remote-branches",
            "--match",
            "no-such-branch-*",
            "-o",
            out.to_str().unwrap(),
            "--publish",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("changes nothing") && r.stderr.contains("not published"),
        "{}",
        r.stderr
    );
    assert!(out.exists());
    assert_eq!(t.origin_refs(), before, "nothing was published");
    let inbox = t.inbox(&t.bob, "bob");
    assert_eq!(inbox["plans"].as_array().unwrap().len(), 0, "{inbox}");
}
