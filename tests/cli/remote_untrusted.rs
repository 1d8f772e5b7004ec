//! Issue 16 attacked as a hostile planner with a valid key who can push anything under
//! `refs/guardctl/` (docs/remote.md, "Everything fetched is untrusted"), as a careless
//! teammate and as a confused agent. Each test proves one behaviour no other test covers.

use crate::fixtures::{Run, TestEnv, publish, remote_repo, team_remote};

use std::path::{Path, PathBuf};

const POLICY: &str = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n";

/// The policy committed on the remote's default branch, dave (the mallory test key) trusted
/// as the executor, and a clone for alice (planner), bob, carol and dave.
fn team() -> (TestEnv, [PathBuf; 4]) {
    let env = team_remote(POLICY);
    let clones = env.clones(&["planner", "bob", "carol", "executor"]);
    (env, <[PathBuf; 4]>::try_from(clones).unwrap())
}

/// The hex fingerprint a decision ref names for the test key `name`.
fn key_hex(env: &TestEnv, name: &str) -> String {
    use base64::Engine;
    let fpr = crate::plan_file::fingerprint(&env.key(name));
    let b64 = fpr.trim_start_matches("SHA256:");
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(b64.trim_end_matches('='))
        .unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `git push origin <object>:<refname>` from `clone`, as anyone with push access can.
fn push_object(env: &TestEnv, clone: &Path, object: &str, refname: &str) {
    env.git_in(clone, &["push", "-q", "origin", &format!("{object}:{refname}")]);
}

/// A one-file commit holding `bytes` as `file`, made in `clone` (what guardctl publishes).
fn item_commit(env: &TestEnv, clone: &Path, file: &str, bytes: &str) -> String {
    let path = clone.join(".git/item-blob");
    std::fs::write(&path, bytes).unwrap();
    let blob = env.git_in(clone, &["hash-object", "-w", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    let tree = mktree(env, clone, &format!("100644 blob {blob}\t{file}\n"));
    env.git_in(clone, &["commit-tree", &tree, "-m", "forged"])
}

fn mktree(env: &TestEnv, clone: &Path, listing: &str) -> String {
    use std::io::Write;
    let mut c = std::process::Command::new("git")
        .current_dir(clone)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["mktree"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(listing.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success());
    let _ = env;
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A DSSE envelope of `payload` signed by the test key `signer` in `namespace`.
fn envelope(env: &TestEnv, signer: &str, payload_type: &str, namespace: &str, payload: &[u8]) -> String {
    use base64::Engine;
    let mut pae = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(payload);
    let key = env.key(signer);
    serde_json::to_string_pretty(&serde_json::json!({
        "payloadType": payload_type,
        "payload": base64::engine::general_purpose::STANDARD.encode(payload),
        "signatures": [{
            "keyid": crate::plan_file::fingerprint(&key),
            "sig": crate::plan_file::ssh_sign(&key, namespace, &pae),
        }],
    }))
    .unwrap()
        + "\n"
}

/// The payload of the envelope in `refname:file` on the remote.
fn published_payload(env: &TestEnv, refname: &str, file: &str) -> (String, Vec<u8>) {
    use base64::Engine;
    let _ = file;
    let text = env.published_bytes(&env.origin(), refname);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let body = base64::engine::general_purpose::STANDARD
        .decode(v["payload"].as_str().unwrap())
        .unwrap();
    (text, body)
}

/// What a read-only command must leave alone in `clone`: refs, config, reflogs, objects,
/// and `.git/guardctl`.
fn clone_state(env: &TestEnv, clone: &Path) -> String {
    let git = clone.join(".git");
    let mut s = env.git_in(clone, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    s += &std::fs::read_to_string(git.join("config")).unwrap();
    s += &env.git_in(clone, &["count-objects", "-v"]);
    s += &format!("{:?}", crate::fixtures::file_tree(&git.join("logs")));
    s += &format!("guardctl dir: {}", git.join("guardctl").exists());
    s
}

fn remote_branches_left(env: &TestEnv) -> usize {
    env.remote_branches().lines().count()
}

#[test]
fn objects_that_are_not_commits_under_decision_refs_are_left_out_and_preview_writes_nothing() {
    let (env, [planner, bob, _carol, executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    // A blob, a tree and an annotated tag pushed where approvals go, under made-up keys.
    let blob = env.git_in(&planner, &["hash-object", "-w", "plan.json"]);
    let tree = env.git_in(&planner, &["rev-parse", "HEAD^{tree}"]);
    env.git_in(&planner, &["tag", "-a", "-m", "x", "t", "HEAD"]);
    let tag = env.git_in(&planner, &["rev-parse", "t"]);
    for (digit, object) in [('0', &blob), ('1', &tree), ('2', &tag)] {
        let fpr: String = std::iter::repeat_n(digit, 64).collect();
        push_object(
            &env,
            &planner,
            object,
            &format!("refs/guardctl/approvals/{id}/{fpr}"),
        );
    }
    let before = clone_state(&env, &bob);
    for args in [vec!["show", &id[..12]], vec!["inbox"], vec!["--json", "inbox"]] {
        let r = env.run_in(&bob, "bob", &args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.transcript());
        assert_eq!(clone_state(&env, &bob), before, "{args:?} wrote to bob's clone");
    }
    let r = env.run_in(&bob, "bob", &["show", &id[..12]]);
    assert_eq!(r.stderr.matches("is not a commit").count(), 3, "{}", r.stderr);
    let r = env.run_in(&executor, "mallory", &["verify", &id[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert_eq!(clone_state(&env, &bob), before);
}

#[test]
fn an_approval_re_signed_by_the_planner_misfiled_under_another_key_or_plan_counts_for_nothing() {
    let (env, [planner, bob, _carol, executor]) = team();
    let a = publish(&env, &planner, "a.json", &[]);
    let b = publish(&env, &planner, "b.json", &["--expires-in", "2h"]);
    assert_ne!(a, b);
    assert_eq!(env.run_in(&bob, "bob", &["approve", &a[..12], "--yes"]).code, 0);
    let bob_ref = format!("refs/guardctl/approvals/{a}/{}", key_hex(&env, "bob"));
    let bob_commit = env.published_commit(&env.origin(), &bob_ref, "approval.json");
    let (_, payload) = published_payload(&env, &bob_ref, "approval.json");
    // 1. bob's payload re-signed with the planner's own valid key, under the planner's key.
    let forged = envelope(
        &env,
        "alice",
        "application/vnd.guardctl.approval.v1+json",
        "guardctl-approval",
        &payload,
    );
    let c = item_commit(&env, &planner, "approval.json", &forged);
    push_object(
        &env,
        &planner,
        &c,
        &format!("refs/guardctl/approvals/{a}/{}", key_hex(&env, "alice")),
    );
    // 2. bob's genuine approval filed under carol's key: it would count twice if it counted.
    let on_origin = |refname: String| env.git_in(&env.origin(), &["update-ref", &refname, &bob_commit]);
    on_origin(format!("refs/guardctl/approvals/{a}/{}", key_hex(&env, "carol")));
    // 3. bob's approval of plan A filed under plan B.
    on_origin(format!("refs/guardctl/approvals/{b}/{}", key_hex(&env, "bob")));
    let r = env.run_in(&executor, "mallory", &["--json", "verify", &a[..12]]);
    assert_eq!(r.code, 12, "one real approval of two: {}", r.transcript());
    assert!(r.stderr.contains("not the key the ref names"), "{}", r.stderr);
    let r = env.run_in(&executor, "mallory", &["--json", "apply", &a[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let r = env.run_in(&executor, "mallory", &["verify", &b[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("about another plan"), "{}", r.stderr);
    let v = env.run_in(&bob, "bob", &["--json", "inbox"]).json();
    let plan_a = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["plan_id"].as_str().unwrap().contains(&a))
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert!(!plan_a.to_string().contains("alice@example.com\"]"), "{plan_a}");
    assert_eq!(remote_branches_left(&env), 5, "nothing was deleted");
}

#[test]
fn a_consumed_marker_and_receipt_signed_by_the_planners_valid_key_make_no_apply_report_applied() {
    let (env, [planner, bob, carol, executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    assert_eq!(env.run_in(&bob, "bob", &["approve", &id[..12], "--yes"]).code, 0);
    assert_eq!(
        env.run_in(&carol, "carol", &["approve", &id[..12], "--yes"]).code,
        0
    );
    // The planner, who wants the plan never applied while CI reports success, forges the
    // marker (about this plan, naming its own key, which signed it) and a receipt.
    let alice_fpr = crate::plan_file::fingerprint(&env.key("alice"));
    let marker = serde_json::json!({
        "plan_id": format!("sha256:{id}"),
        "before_image": format!("sha256:{}", "0".repeat(64)),
        "key": alice_fpr,
        "created_at": "2026-06-01T12:00:00Z",
        "nonce": "0123456789abcdef0123456789abcdef",
    });
    let marker = envelope(
        &env,
        "alice",
        "application/vnd.guardctl.consumed.v1+json",
        "guardctl-apply",
        serde_json::to_string(&marker).unwrap().as_bytes(),
    );
    let c = item_commit(&env, &planner, "consumed.json", &marker);
    push_object(&env, &planner, &c, &format!("refs/guardctl/consumed/{id}"));
    let r = item_commit(&env, &planner, "receipt.json", &marker);
    push_object(&env, &planner, &r, &format!("refs/guardctl/receipts/{id}"));
    let r = env.run_in(&executor, "mallory", &["--json", "apply", &id[..12]]);
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
    let e = &r.json()["error"];
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("refs/guardctl/consumed/{id}")),
        "{e}"
    );
    assert!(
        r.stderr.contains("not by the plan's executor")
            || e.to_string().contains("not by the plan's executor"),
        "{}",
        r.transcript()
    );
    assert_eq!(remote_branches_left(&env), 5, "nothing was deleted");
}

#[allow(dead_code)]
fn _unused(_: Run) {}

#[test]
fn inbox_leaves_out_a_plan_whose_key_the_trusted_identities_do_not_give_the_planner_it_claims() {
    use base64::Engine;
    let (env, [planner, bob, _carol, _executor]) = team();
    let real = publish(&env, &planner, "plan.json", &[]);
    // Eve, who can push but has no trusted key, plans with a key of her own and rewrites the
    // payload to claim alice as its planner, then publishes it under its own id.
    let eve = env.path().join("keys/eve_ed25519");
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "eve", "-f"])
        .arg(&eve)
        .status()
        .unwrap();
    assert!(status.success());
    let own = planner.join("eve.json");
    let mut c = env.command();
    c.args(["-C", planner.to_str().unwrap(), "--key"])
        .arg(&eve)
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args([
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--executor",
            "dave@example.com",
        ])
        .args(["--expires-in", "2h", "-o", own.to_str().unwrap()]);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut payload: serde_json::Value =
        serde_json::from_slice(&b64.decode(file["payload"].as_str().unwrap()).unwrap()).unwrap();
    payload["planner"]["principal"] = "alice@example.com".into();
    let body = serde_json::to_vec_pretty(&payload).unwrap();
    let ty = file["payloadType"].as_str().unwrap().to_string();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(&body);
    file["payload"] = b64.encode(&body).into();
    file["signatures"][0]["sig"] = crate::plan_file::ssh_sign(&eve, "guardctl-plan", &pae).into();
    file["approvals"] = serde_json::json!([]);
    let forged = serde_json::to_string_pretty(&file).unwrap() + "\n";
    std::fs::write(&own, &forged).unwrap();
    let r = env.run_in(&bob, "bob", &["--json", "show", own.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = r.json()["plan_id"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let commit = item_commit(&env, &planner, "plan.json", &forged);
    push_object(&env, &planner, &commit, &format!("refs/guardctl/plans/{id}"));
    let r = env.run_in(&bob, "bob", &["--json", "inbox"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = r.json();
    let listed: Vec<&str> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["plan_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![format!("sha256:{real}")], "{v}");
    assert_eq!(v["left_out"]["invalid"], 1, "{v}");
    assert!(
        r.stderr.contains(&format!(
            "left out: plan sha256:{id} claims planner alice@example.com"
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn a_rejection_pre_empted_by_junk_under_its_ref_is_published_under_its_fallback_name() {
    let (env, [planner, _bob, carol, _executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    // The planner takes carol's rejection ref first, with junk.
    let tree = mktree(&env, &planner, "");
    let junk = env.git_in(&planner, &["commit-tree", &tree, "-m", "junk"]);
    push_object(
        &env,
        &planner,
        &junk,
        &format!("refs/guardctl/rejections/{id}/{}", key_hex(&env, "carol")),
    );
    let r = env.run_in(
        &carol,
        "carol",
        &["--json", "reject", &id[..12], "--comment", "no"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let taken = format!("refs/guardctl/rejections/{id}/{}", key_hex(&env, "carol"));
    assert!(
        r.stderr.contains(&format!(
            "{taken} on remote `origin` was taken by something that is not your decision"
        )),
        "{}",
        r.stderr
    );
    let published = r.json()["published"]["ref"].as_str().unwrap().to_string();
    assert!(published.starts_with(&format!("{taken}-")), "{published}");
}

#[test]
fn a_marker_back_dated_by_a_retired_executor_key_to_before_the_plan_existed_makes_no_replay() {
    let (env, [planner, bob, carol, executor]) = team();
    // Alice once ran the applies as dave: her key was dave's until April, then retired.
    let text = std::fs::read_to_string(env.allowed_signers()).unwrap();
    std::fs::write(
        env.allowed_signers(),
        text + &format!(
            "dave@example.com valid-before=\"20260401\" {}\n",
            env.public_key("alice")
        ),
    )
    .unwrap();
    let id = publish(&env, &planner, "plan.json", &[]);
    assert_eq!(env.run_in(&bob, "bob", &["approve", &id[..12], "--yes"]).code, 0);
    assert_eq!(
        env.run_in(&carol, "carol", &["approve", &id[..12], "--yes"]).code,
        0
    );
    let shown = env
        .run_in(&executor, "mallory", &["--json", "show", &id[..12]])
        .json();
    assert!(shown["repository"].is_string(), "{shown}");
    let plan_hash = shown["plan_hash"].as_str().unwrap().to_string();
    // She back-dates a marker and a receipt to March, when her key still spoke for dave.
    let alice_fpr = crate::plan_file::fingerprint(&env.key("alice"));
    let marker = serde_json::json!({
        "plan_id": format!("sha256:{id}"),
        "before_image": format!("sha256:{}", "0".repeat(64)),
        "key": alice_fpr,
        "created_at": "2026-03-01T12:00:00Z",
        "nonce": "0123456789abcdef0123456789abcdef",
    });
    let receipt = serde_json::json!({
        "plan_id": format!("sha256:{id}"),
        "plan_hash": plan_hash,
        "repository": shown["repository"],
        "executor": "dave@example.com",
        "key": alice_fpr,
        "approved_by": ["bob@example.com", "carol@example.com"],
        "applied_at": "2026-03-01T12:00:01Z",
        "backup": null,
        "deleted": [],
        "config_removed": 0,
        "verified": true,
        "mismatches": [],
    });
    for (file, ty, value) in [
        ("consumed", "application/vnd.guardctl.consumed.v1+json", marker),
        ("receipt", "application/vnd.guardctl.receipt.v1+json", receipt),
    ] {
        let env_text = envelope(
            &env,
            "alice",
            ty,
            "guardctl-apply",
            serde_json::to_string(&value).unwrap().as_bytes(),
        );
        let c = item_commit(&env, &planner, &format!("{file}.json"), &env_text);
        let dir = if file == "consumed" {
            "consumed"
        } else {
            "receipts"
        };
        push_object(&env, &planner, &c, &format!("refs/guardctl/{dir}/{id}"));
    }
    let r = env.run_in(&executor, "mallory", &["--json", "apply", &id[..12]]);
    assert_eq!(
        r.code,
        16,
        "a back-dated marker made a replay: {}",
        r.transcript()
    );
    assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
    assert!(r.stdout.contains("outside the plan's life"), "{}", r.stdout);
    assert_eq!(remote_branches_left(&env), 5);
}

#[test]
fn a_plan_pushed_under_an_id_that_is_not_its_own_is_refused_named_makes_a_prefix_ambiguous_and_is_left_out_of_inbox()
 {
    let (env, [planner, bob, _carol, _executor]) = team();
    let short = publish(&env, &planner, "a.json", &[]);
    let long = publish(&env, &planner, "b.json", &["--expires-in", "3h"]);
    // Plan `short` pushed again under an id that shares `long`'s first 12 digits.
    let commit = env.published_commit(
        &env.origin(),
        &format!("refs/guardctl/plans/{short}"),
        "plan.json",
    );
    let fake = format!("{}{}", &long[..12], "f".repeat(52));
    env.git_in(
        &env.origin(),
        &["update-ref", &format!("refs/guardctl/plans/{fake}"), &commit],
    );
    let r = env.run_in(&bob, "bob", &["--json", "show", &fake]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(
        r.stdout.contains("a plan is published under its own id"),
        "{}",
        r.stdout
    );
    // The prefix both share is ambiguous (64, listing both): more digits name the real one.
    let r = env.run_in(&bob, "bob", &["--json", "show", &long[..12]]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert_eq!(
        r.json()["error"]["details"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(env.run_in(&bob, "bob", &["show", &long[..16]]).code, 0);
    // inbox: the impostor is invalid (with a warning); two hours later `short` has expired.
    let r = env.run_env(
        "bob",
        &[("GUARDCTL_TEST_NOW", "2026-06-01T14:00:00Z")],
        &["-C", bob.to_str().unwrap(), "--json", "inbox"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let v = r.json();
    assert_eq!(v["left_out"]["invalid"], 1, "{v}");
    assert_eq!(v["left_out"]["expired"], 1, "{v}");
    let listed: Vec<&str> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["plan_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![format!("sha256:{long}")], "{v}");
    assert!(r.stderr.contains(&format!("plans/{fake}")), "{}", r.stderr);
}

#[test]
fn a_receipt_pushed_by_the_planner_before_the_real_one_is_16_never_a_replay() {
    let (env, [planner, bob, carol, executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    assert_eq!(env.run_in(&bob, "bob", &["approve", &id[..12], "--yes"]).code, 0);
    assert_eq!(
        env.run_in(&carol, "carol", &["approve", &id[..12], "--yes"]).code,
        0
    );
    let shown = env
        .run_in(&executor, "mallory", &["--json", "show", &id[..12]])
        .json();
    // A genuine marker by dave's key (another runner is applying), and, before that runner
    // publishes its receipt, one the planner signed claiming nothing was deleted.
    let marker = serde_json::json!({
        "plan_id": format!("sha256:{id}"),
        "before_image": format!("sha256:{}", "0".repeat(64)),
        "key": crate::plan_file::fingerprint(&env.key("mallory")),
        "created_at": "2026-06-01T12:00:00Z",
        "nonce": "0123456789abcdef0123456789abcdef",
    });
    let receipt = serde_json::json!({
        "plan_id": format!("sha256:{id}"),
        "plan_hash": shown["plan_hash"],
        "repository": shown["repository"],
        "executor": "dave@example.com",
        "key": crate::plan_file::fingerprint(&env.key("mallory")),
        "approved_by": ["bob@example.com", "carol@example.com"],
        "applied_at": "2026-06-01T12:00:01Z",
        "backup": null,
        "deleted": [],
        "config_removed": 0,
        "verified": true,
        "mismatches": [],
    });
    for (dir, file, signer, ty, value) in [
        (
            "consumed",
            "consumed.json",
            "mallory",
            "application/vnd.guardctl.consumed.v1+json",
            marker,
        ),
        (
            "receipts",
            "receipt.json",
            "alice",
            "application/vnd.guardctl.receipt.v1+json",
            receipt,
        ),
    ] {
        let text = envelope(
            &env,
            signer,
            ty,
            "guardctl-apply",
            serde_json::to_string(&value).unwrap().as_bytes(),
        );
        let c = item_commit(&env, &planner, file, &text);
        push_object(&env, &planner, &c, &format!("refs/guardctl/{dir}/{id}"));
    }
    let r = env.run_in(
        &executor,
        "mallory",
        &["--json", "apply", &id[..12], "--wait", "0"],
    );
    assert_eq!(r.code, 16, "{}", r.transcript());
    assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!("refs/guardctl/receipts/{id}")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("the key that consumed the plan"),
        "{}",
        r.stdout
    );
}

// ---- The consumed-marker opt-out and the exec abandonment record ----

/// An exec plan bound to `origin` made by alice in the planning clone (she executes it too),
/// whose command appends a line to `counter`, approved by bob, reviewer of the default
/// policy: written to `name`.
fn counting_exec_plan(env: &TestEnv, name: &str, counter: &Path) -> PathBuf {
    if !env.repo.join("scripts/count.sh").exists() {
        std::fs::create_dir_all(env.repo.join("scripts")).unwrap();
        std::fs::write(
            env.repo.join("scripts/count.sh"),
            "#!/bin/sh\necho ran >> \"$1\"\n",
        )
        .unwrap();
        env.git(&["add", "scripts"]);
        env.git(&["commit", "-q", "-m", "count script"]);
        env.git(&["push", "-q", "origin", "main"]);
    }
    let out = env.repo.join(name);
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--remote",
            "origin",
            "--preview",
            "echo would count once",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "scripts/count.sh",
            counter.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", out.to_str().unwrap(), "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    out
}

/// guardctl as alice in `clone`, with extra environment variables.
fn alice_at(env: &TestEnv, clone: &Path, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut c = env.command();
    for (k, v) in vars {
        c.env(k, v);
    }
    c.arg("-C")
        .arg(clone)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(args);
    crate::fixtures::run(c)
}

fn count_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn another_plans_genuine_abandonment_record_under_this_plans_receipt_ref_never_reads_as_abandoned() {
    let env = remote_repo();
    let counter = env.path().join("counter");
    let one = counting_exec_plan(&env, "one.json", &counter);
    let two = counting_exec_plan(&env, "two.json", &env.path().join("counter-2"));
    let hex = |p: &Path| {
        crate::fixtures::plan_id_of(p)
            .trim_start_matches("sha256:")
            .to_string()
    };
    let (one_id, two_id) = (hex(&one), hex(&two));
    assert_ne!(one_id, two_id);
    let clones = env.clones(&["runner-a", "runner-b"]);
    // Plan one: consumed on the remote, killed before its command, abandoned by recover,
    // which publishes alice's genuine abandonment record of plan one.
    let crash = [("GUARDCTL_TEST_CRASH_AFTER", "pushed")];
    let r = alice_at(&env, &clones[0], &crash, &["apply", one.to_str().unwrap()]);
    assert_eq!(r.code, -1, "killed (SIGKILL): {}", r.transcript());
    let r = alice_at(&env, &clones[0], &[], &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let origin = env.origin();
    let record = env.published_commit(
        &origin,
        &format!("refs/guardctl/receipts/{one_id}"),
        "receipt.json",
    );
    // Plan two: consumed on the remote by alice's key in runner-a, which dies before its
    // command; its receipt slot is still free. Someone copies plan one's record there.
    let r = alice_at(&env, &clones[0], &crash, &["apply", two.to_str().unwrap()]);
    assert_eq!(r.code, -1, "killed (SIGKILL): {}", r.transcript());
    env.git_in(
        &origin,
        &["update-ref", &format!("refs/guardctl/receipts/{two_id}"), &record],
    );
    // Another runner: signed by the right key, but the record of another plan and another
    // consumption: 16 naming the ref, never "abandoned", never a replay; nothing ran.
    let r = alice_at(
        &env,
        &clones[1],
        &[],
        &["--json", "apply", "--wait", "0", two.to_str().unwrap()],
    );
    assert_eq!(r.code, 16, "{}", r.transcript());
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(&format!("refs/guardctl/receipts/{two_id}")),
        "{message}"
    );
    assert!(!message.contains("abandoned"), "{message}");
    assert!(!r.stdout.contains("\"replayed\""), "{}", r.stdout);
    assert_eq!(count_lines(&counter), 0);
    assert_eq!(count_lines(&env.path().join("counter-2")), 0);
}

#[test]
fn recover_in_a_clone_whose_marker_never_reached_the_remote_publishes_no_abandonment() {
    let env = remote_repo();
    let counter = env.path().join("counter");
    let plan = counting_exec_plan(&env, "plan.json", &counter);
    let id = crate::fixtures::plan_id_of(&plan)
        .trim_start_matches("sha256:")
        .to_string();
    let clones = env.clones(&["runner-a", "runner-b"]);
    // runner-b consumes the plan here and is killed before its push; runner-a, with the same
    // key, then consumes it on the remote and is killed before its command.
    let r = alice_at(
        &env,
        &clones[1],
        &[("GUARDCTL_TEST_CRASH_AFTER", "consumed")],
        &["apply", plan.to_str().unwrap()],
    );
    assert_eq!(r.code, -1, "killed (SIGKILL): {}", r.transcript());
    let r = alice_at(
        &env,
        &clones[0],
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["apply", plan.to_str().unwrap()],
    );
    assert_eq!(r.code, -1, "killed (SIGKILL): {}", r.transcript());
    let origin = env.origin();
    let marker = env.published_under(&origin, &format!("refs/guardctl/consumed/{id}"));
    // runner-b's recover holds the consuming key, but the marker on the remote is not its
    // own: it abandons its own apply and says nothing to other clones about runner-a's.
    let r = alice_at(&env, &clones[1], &[], &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("it was not run"), "{}", r.stdout);
    assert!(!r.stdout.contains("published"), "{}", r.stdout);
    let receipts = || env.published_under(&origin, "refs/guardctl/receipts");
    assert_eq!(receipts(), "");
    assert_eq!(
        env.published_under(&origin, &format!("refs/guardctl/consumed/{id}")),
        marker
    );
    // runner-a's own recover does publish it.
    let r = alice_at(&env, &clones[0], &[], &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_ne!(receipts(), "");
    assert_eq!(count_lines(&counter), 0);
}

#[test]
fn a_consumed_marker_opt_out_in_a_clones_work_tree_branch_or_repo_config_is_not_the_policy() {
    let (env, [planner, bob, carol, executor]) = team();
    let off = "version = 1\n\n[groups]\nreviewers = [\"bob@example.com\", \"carol@example.com\"]\n\n[approvals]\nrequired = 2\nfrom = [\"reviewers\"]\n\n[remote]\nconsumed_marker = false\n";
    // The planner pushes the opt-out on a branch of their own, and commits it locally.
    std::fs::write(planner.join(".guardctl/policy.toml"), off).unwrap();
    env.git_in(&planner, &["commit", "-q", "-am", "no marker"]);
    env.git_in(&planner, &["push", "-q", "origin", "HEAD:refs/heads/no-marker"]);
    let off_file = env.path().join("off.toml");
    std::fs::write(&off_file, off).unwrap();
    env.git_in(
        &planner,
        &["config", "guardctl.policy", off_file.to_str().unwrap()],
    );
    // The executor's work tree says the same (uncommitted), and so does its repo config.
    std::fs::write(executor.join(".guardctl/policy.toml"), off).unwrap();
    env.git_in(
        &executor,
        &["config", "guardctl.policy", off_file.to_str().unwrap()],
    );
    let id = publish(&env, &planner, "plan.json", &[]);
    let shown = env.run_in(&executor, "mallory", &["--json", "show", &id[..12]]);
    assert_eq!(shown.json()["consumed_on"], "remote", "{}", shown.stdout);
    for (clone, who) in [(&bob, "bob"), (&carol, "carol")] {
        let r = env.run_in(clone, who, &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let r = env.run_in(&executor, "mallory", &["--json", "apply", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["consumed_on"], "remote", "{}", r.stdout);
    let marker = env.published_under(&env.origin(), &format!("refs/guardctl/consumed/{id}"));
    assert_ne!(marker, "", "the apply consumed the plan on the remote");
}

// ---- Decision refs under their fallback names ----

#[test]
fn a_withdrawal_published_under_its_fallback_name_lifts_the_reviewers_own_veto() {
    let (env, [planner, bob, carol, executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    let r = env.run_in(&bob, "bob", &["reject", &id[..12], "--comment", "wait"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Someone takes bob's withdrawal name first, with junk.
    let tree = mktree(&env, &planner, "");
    let junk = env.git_in(&planner, &["commit-tree", &tree, "-m", "junk"]);
    let taken = format!("refs/guardctl/withdrawals/{id}/{}", key_hex(&env, "bob"));
    push_object(&env, &planner, &junk, &taken);
    let r = env.run_in(&bob, "bob", &["--json", "reject", "--withdraw", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let published = r.json()["published"]["ref"].as_str().unwrap().to_string();
    assert!(published.starts_with(&format!("{taken}-")), "{published}");
    for (clone, who) in [(&bob, "bob"), (&carol, "carol")] {
        let r = env.run_in(clone, who, &["approve", &id[..12], "--yes"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // In a clone that saw none of it, the veto is lifted by the fallback withdrawal.
    let r = env.run_in(&executor, "mallory", &["verify", &id[..12]]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

#[test]
fn a_reviewers_genuine_rejection_copied_under_many_fallback_names_is_one_veto_and_blocks_nothing_else() {
    let (env, [planner, bob, carol, executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    let r = env.run_in(&carol, "carol", &["reject", &id[..12], "--comment", "no"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let carol_ref = format!("refs/guardctl/rejections/{id}/{}", key_hex(&env, "carol"));
    let commit = env.published_commit(&env.origin(), &carol_ref, "rejection.json");
    // The same genuine envelope under made-up fallback names of carol's and under bob's.
    for name in [
        format!("{carol_ref}-0000000000000000"),
        format!("{carol_ref}-ffffffffffffffff"),
        format!(
            "refs/guardctl/rejections/{id}/{}-0123456789abcdef",
            key_hex(&env, "bob")
        ),
    ] {
        env.git_in(&env.origin(), &["update-ref", &name, &commit]);
    }
    let _ = bob;
    let r = env.run_in(&executor, "mallory", &["--json", "verify", &id[..12]]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let e = r.json()["error"].clone();
    let message = e["message"].as_str().unwrap();
    // carol's veto is said first; bob is never said to have rejected.
    assert!(message.contains("carol@example.com"), "{e}");
    assert!(!message.contains("bob@example.com"), "{e}");
}

// ---- The size cap ----

/// A `git` ahead of the real one on PATH that logs, for every `git fetch` guardctl runs, a
/// line with the number of its arguments: the PATH to run guardctl with, and the log.
fn counting_git(env: &TestEnv) -> (String, PathBuf) {
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let bin = env.path().join("counting-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path().join("fetches.log");
    std::fs::write(
        bin.join("git"),
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" fetch \"*) echo \"$#\" >> '{}';; esac\nexec '{real}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    (path, log)
}

// ---- A file named like a plan id ----

#[test]
fn a_file_named_like_the_published_plans_id_holding_another_plan_is_refused_never_approved() {
    let (env, [planner, bob, _carol, _executor]) = team();
    let id = publish(&env, &planner, "plan.json", &[]);
    // The planner makes another plan (unpublished) and commits it to the default branch
    // under the name reviewers will type for the published one.
    let other = planner.join("other.json");
    let r = env.run_in(
        &planner,
        "alice",
        &[
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--executor",
            "dave@example.com",
            "--expires-in",
            "3h",
            "-o",
            other.to_str().unwrap(),
            "--no-publish",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let prefix = &id[..12];
    std::fs::copy(&other, planner.join(prefix)).unwrap();
    env.git_in(&planner, &["add", prefix]);
    env.git_in(&planner, &["commit", "-q", "-m", "notes"]);
    env.git_in(&planner, &["push", "-q", "origin", "HEAD:main"]);
    env.git_in(&bob, &["pull", "-q", "origin", "main"]);
    assert!(bob.join(prefix).exists());
    // bob, in his clone's top directory, approves what inbox listed, by its prefix.
    let mut c = env.command();
    c.current_dir(&bob)
        .arg("--key")
        .arg(env.key("bob"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["--json", "approve", prefix, "--yes"]);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(&crate::fixtures::plan_id_of(&other)),
        "{message}"
    );
    let approvals = env.published_under(&env.origin(), "refs/guardctl/approvals");
    assert_eq!(approvals, "", "nothing was approved");
    // `./<name>` still reads the file; a file named like its own plan's id is that plan.
    let mut c = env.command();
    c.current_dir(&bob)
        .arg("--key")
        .arg(env.key("bob"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["--json", "show", &format!("./{prefix}")]);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let own = crate::fixtures::plan_id_of(&other);
    let own_prefix = own.trim_start_matches("sha256:")[..12].to_string();
    std::fs::copy(&other, bob.join(&own_prefix)).unwrap();
    let mut c = env.command();
    c.current_dir(&bob)
        .arg("--key")
        .arg(env.key("bob"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["--json", "show", &own_prefix]);
    let r = crate::fixtures::run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.json()["plan_id"], own);
}

/// The heavy tests of this file (minutes of CPU, hundreds of MB, thousands of refs): they return
/// at once unless `GUARDCTL_HEAVY_TESTS=1`; `.ci/run` runs every `::heavy::` test as a separate
/// bounded step (tests/cli/fixtures.rs `skip_heavy`).
mod heavy {
    use super::*;

    #[test]
    fn a_huge_blob_among_many_published_refs_costs_a_few_fetches_not_one_per_ref() {
        if crate::fixtures::skip_heavy(
            "a_huge_blob_among_many_published_refs_costs_a_few_fetches_not_one_per_ref",
        ) {
            return;
        }
        const MIB: u64 = 1024 * 1024;
        let (env, [planner, bob, _carol, _executor]) = team();
        let id = publish(&env, &planner, "plan.json", &[]);
        let origin = env.origin();
        // 200 MB that do not compress under one plan name, on a server that does not filter.
        let junk = env.path().join("junk.bin");
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
        env.git_in(&origin, &["config", "core.compression", "0"]);
        env.git_in(&origin, &["config", "pack.compression", "0"]);
        let blob = env.git_in(
            &origin,
            &["hash-object", "-w", "--no-filters", junk.to_str().unwrap()],
        );
        std::fs::remove_file(&junk).unwrap();
        let tree = mktree(&env, &origin, &format!("100644 blob {blob}\tplan.json\n"));
        let huge = env.git_in(&origin, &["commit-tree", &tree, "-m", "huge"]);
        // And 400 small junk plans beside it.
        let small_tree = mktree(&env, &origin, "");
        let small = env.git_in(&origin, &["commit-tree", &small_tree, "-m", "junk"]);
        let mut updates = format!("create refs/guardctl/plans/{} {huge}\n", "f".repeat(64));
        for i in 0..400 {
            updates += &format!("create refs/guardctl/plans/{i:064x} {small}\n");
        }
        let updates_file = env.path().join("updates");
        std::fs::write(&updates_file, updates).unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("git update-ref --stdin < \"$0\"")
            .arg(&updates_file)
            .current_dir(&origin)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
        let (path, log) = counting_git(&env);
        let mut c = env.command();
        c.env("PATH", path)
            .arg("-C")
            .arg(&bob)
            .arg("--key")
            .arg(env.key("bob"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args(["--json", "inbox"]);
        let r = crate::fixtures::run(c);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let v = r.json();
        let listed: Vec<&str> = v["plans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["plan_id"].as_str().unwrap())
            .collect();
        assert_eq!(listed, [format!("sha256:{id}")], "{v:#}");
        assert_eq!(v["left_out"]["invalid"], 401, "{v:#}");
        let fetches = count_lines(&log);
        // The one huge item is found among 402 refs in a few dozen fetches, not 403.
        assert!(fetches > 1, "the fallback ran: {fetches}");
        assert!(fetches <= 45, "{fetches} fetches for 402 refs");
    }

    #[test]
    fn inbox_reads_thousands_of_published_refs_in_one_fetch_of_a_few_refspecs() {
        if crate::fixtures::skip_heavy(
            "inbox_reads_thousands_of_published_refs_in_one_fetch_of_a_few_refspecs",
        ) {
            return;
        }
        let (env, [planner, bob, _carol, _executor]) = team();
        let id = publish(&env, &planner, "plan.json", &[]);
        let origin = env.origin();
        // 8000 refs under plans/ (a busy team's years, or one pusher's afternoon). Fetched by
        // name, git matches each of 8000 refspecs against each of 8000 refs (two minutes here);
        // read back one prefix at a time from the scratch repository, each lookup walked them
        // all again (seven more): every inbox took nine minutes.
        let tree = mktree(&env, &origin, "");
        let junk = env.git_in(&origin, &["commit-tree", &tree, "-m", "junk"]);
        let mut updates = String::new();
        for i in 0..8000 {
            updates += &format!("create refs/guardctl/plans/{i:064x} {junk}\n");
        }
        let updates_file = env.path().join("updates");
        std::fs::write(&updates_file, updates).unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("git update-ref --stdin < \"$0\"")
            .arg(&updates_file)
            .current_dir(&origin)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
        let (path, log) = counting_git(&env);
        let mut c = env.command();
        c.env("PATH", path)
            .arg("-C")
            .arg(&bob)
            .arg("--key")
            .arg(env.key("bob"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args(["--json", "inbox"]);
        let r = crate::fixtures::run(c);
        assert_eq!(r.code, 0, "{}", &r.transcript()[..r.transcript().len().min(4000)]);
        let v = r.json();
        let listed: Vec<&str> = v["plans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["plan_id"].as_str().unwrap())
            .collect();
        assert_eq!(listed, [format!("sha256:{id}")]);
        assert_eq!(v["left_out"]["invalid"], 8000);
        let args: Vec<usize> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        // The ledger (where the plan is) and the refs from before it: one fetch each.
        assert_eq!(args.len(), 2, "one fetch of each: {args:?}");
        assert!(args.iter().all(|a| *a < 30), "a fetch of {args:?} arguments");
    }
}
