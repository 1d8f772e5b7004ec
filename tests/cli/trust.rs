//! Trust roots (issue 13): who may approve is decided by nothing the planner can write, a key
//! counts only while valid, a rejection cannot be stripped, and SSH certificates work. Every
//! attack is tried as a hostile planner would, and must be refused with its contract exit
//! code, leaving the repository as it was.

use crate::apply::{
    approval_body, approve, attach, attach_forged, forged_approval, plan_value, planned, refused_apply,
};
use crate::fixtures::{Run, TestEnv, run, standard_repo};
use std::fs;

/// guardctl as `user`, with no `--allowed-signers`: the trusted sources decide.
fn run_bare(env: &TestEnv, user: &str, args: &[&str]) -> Run {
    let mut c = env.command();
    c.arg("--key").arg(env.key(user)).args(args);
    run(c)
}

/// `run_bare` apply, asserting a refusal with `code` that changes nothing.
fn refused_bare_apply(env: &TestEnv, user: &str, code: i32) -> Run {
    let before = env.repository_state();
    let r = run_bare(env, user, &["apply", "plan.json"]);
    assert_eq!(r.code, code, "{}", r.transcript());
    assert_eq!(
        before,
        env.repository_state(),
        "a refused apply changed the repository"
    );
    r
}

/// The standard repository with alice, bob and carol committed as trusted identities on the
/// default branch, and a plan by Alice made with them.
fn committed_identities() -> TestEnv {
    let env = standard_repo();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::copy(env.allowed_signers(), env.repo.join(".guardctl/allowed_signers")).unwrap();
    env.git(&["add", ".guardctl/allowed_signers"]);
    env.git(&["commit", "-q", "-m", "Trusted identities"]);
    // Trusted once on the shared remote's default branch, as the remote reports it.
    env.git(&["push", "-q", "origin", "main"]);
    let r = run_bare(&env, "alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

#[test]
fn identities_committed_on_the_default_branch_gate_the_plan() {
    let env = committed_identities();
    let r = run_bare(&env, "bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = run_bare(&env, "alice", &["verify", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("refs/heads/main:.guardctl/allowed_signers (the default branch)")
            && r.stderr.contains("origin.git"),
        "{}",
        r.stderr
    );
    let v = run_bare(&env, "alice", &["--json", "verify", "plan.json"]).json();
    assert_eq!(v["allowed_signers"]["source"], "the default branch");
    let r = run_bare(&env, "bob", &["show", "plan.json"]);
    assert!(
        r.stderr.contains("Trusted identities from") && r.stderr.contains("refs/heads/main"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_work_tree_edit_of_the_allowed_signers_file_does_not_make_an_approver() {
    let env = committed_identities();
    // The planner makes their second key "bob" in the work tree copy (uncommitted).
    let path = env.repo.join(".guardctl/allowed_signers");
    let mut text = fs::read_to_string(&path).unwrap();
    text += &format!("bob@example.com {}\n", env.public_key("mallory"));
    fs::write(&path, text).unwrap();
    let r = run_bare(&env, "mallory", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("in the work tree differs from the trusted identities and is ignored"),
        "{}",
        r.stderr
    );
    attach_forged(&env, "mallory", "bob@example.com");
    let r = refused_bare_apply(&env, "alice", 12);
    assert!(
        r.stderr.contains("bob@example.com (key not allowed"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_allowed_signers_file_named_in_the_repositorys_own_config_is_ignored() {
    let env = committed_identities();
    let evil = env.path().join("evil_signers");
    fs::write(
        &evil,
        format!(
            "alice@example.com {}\nbob@example.com {}\n",
            env.public_key("alice"),
            env.public_key("mallory")
        ),
    )
    .unwrap();
    env.git(&["config", "gpg.ssh.allowedSignersFile", evil.to_str().unwrap()]);
    let r = run_bare(&env, "mallory", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("repository's own config"), "{}", r.stderr);
    attach_forged(&env, "mallory", "bob@example.com");
    refused_bare_apply(&env, "alice", 12);
}

#[test]
fn the_planners_key_under_a_second_principal_is_self_approval() {
    // Without namespaces=: the key maps to two principals for approvals.
    let env = planned();
    env.allow_signer("dave@example.com", "alice");
    assert_eq!(approve(&env, "alice").code, 64);
    attach_forged(&env, "alice", "dave@example.com");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(
        r.stderr.contains("dave@example.com (the planner cannot approve"),
        "{}",
        r.stderr
    );

    // With namespaces=: the key is "dave" for approvals only, and still the planner's key.
    let env = planned();
    env.allow_signer("dave@example.com namespaces=\"guardctl-approval\"", "alice");
    let signers = env.allowed_signers();
    let text = fs::read_to_string(&signers).unwrap().replacen(
        "alice@example.com ssh-",
        "alice@example.com namespaces=\"guardctl-plan,guardctl-apply\" ssh-",
        1,
    );
    fs::write(&signers, text).unwrap();
    let r = approve(&env, "alice");
    assert_eq!(r.code, 12, "{}", r.transcript());
    assert!(r.stderr.contains("belongs to the planner"), "{}", r.stderr);
    attach_forged(&env, "alice", "dave@example.com");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(
        r.stderr.contains("dave@example.com (the planner cannot approve"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_case_variant_of_the_planners_principal_is_refused_as_ambiguous() {
    let env = planned();
    env.allow_signer("Alice@Example.com", "mallory");
    let r = approve(&env, "mallory");
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("differs only by case"), "{}", r.stderr);
    attach_forged(&env, "mallory", "Alice@Example.com");
    let r = refused_apply(&env, "alice", &[], 64);
    assert!(r.stderr.contains("line 4"), "{}", r.stderr);
    assert!(r.stderr.contains("line 1"), "{}", r.stderr);
}

/// Plan at `planned_at` (lifetime 2 days), so approvals may claim times after it.
fn planned_at(planned_at: &str) -> TestEnv {
    let env = standard_repo();
    let r = env.run_env(
        "alice",
        &[("GUARDCTL_TEST_NOW", planned_at)],
        &["plan", "stale-branches", "--merged", "--expires-in", "2d"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    env
}

fn limit_key(env: &TestEnv, principal: &str, option: &str) {
    let signers = env.allowed_signers();
    let text = fs::read_to_string(&signers).unwrap().replacen(
        &format!("{principal} "),
        &format!("{principal} {option} "),
        1,
    );
    fs::write(&signers, text).unwrap();
}

#[test]
fn an_expired_key_cannot_back_date_an_approval() {
    let env = planned_at("2026-05-31T06:00:00Z");
    // Bob's approval claims a time the plan already existed and his key was valid.
    let mut body = approval_body(&env, "bob@example.com", "bob", "approve");
    body["created_at"] = "2026-05-31T07:00:00Z".into();
    attach(&env, forged_approval(&env, "bob", body));
    assert_eq!(
        env.run("alice", &["verify", "plan.json"]).code,
        0,
        "control: it counts while valid"
    );
    // Bob's key was retired at midnight: now it counts for nothing, whatever it claims.
    limit_key(&env, "bob@example.com", "valid-before=\"20260601\"");
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(
        r.stderr.contains("bob@example.com (key not allowed"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_expired_planner_key_cannot_back_date_a_plan() {
    let env = planned_at("2026-05-31T06:00:00Z");
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 0, "control");
    limit_key(&env, "alice@example.com", "valid-before=\"20260601\"");
    let r = refused_apply(&env, "alice", &[], 65);
    assert!(
        r.stderr.contains("both when the plan claims it was made and now"),
        "{}",
        r.stderr
    );
}

#[test]
fn approvals_dated_before_the_plan_or_in_the_future_do_not_count() {
    for at in ["2026-06-01T11:54:00Z", "2026-06-01T12:06:00Z"] {
        let env = planned();
        let mut body = approval_body(&env, "bob@example.com", "bob", "approve");
        body["created_at"] = at.into();
        attach(&env, forged_approval(&env, "bob", body));
        let r = refused_apply(&env, "alice", &[], 12);
        assert!(r.stderr.contains("dated outside"), "{at}: {}", r.stderr);
    }
}

#[test]
fn a_rejection_stripped_from_the_plan_file_still_vetoes() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let r = env.run("carol", &["reject", "plan.json", "--comment", "no"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The planner removes Carol's rejection from the file.
    let mut plan = plan_value(&env);
    plan["approvals"].as_array_mut().unwrap().truncate(1);
    fs::write(
        env.repo.join("plan.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    let r = refused_apply(&env, "alice", &[], 12);
    assert!(r.stderr.contains("rejected by carol@example.com"), "{}", r.stderr);
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 12);
    let v = env.run("bob", &["--json", "show", "plan.json"]).json();
    assert_eq!(v["approvals"]["rejected_by"][0], "carol@example.com", "{v}");
}

#[test]
fn only_the_rejecting_principal_can_withdraw_a_rejection() {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    assert_eq!(env.run("carol", &["reject", "plan.json"]).code, 0);
    let r = env.run("bob", &["reject", "--withdraw", "plan.json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("no rejection"), "{}", r.stderr);
    refused_apply(&env, "alice", &[], 12);
    let r = env.run("carol", &["reject", "--withdraw", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("Every approval the plan needs is in place"),
        "{}",
        r.stderr
    );
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// A certificate authority and user keys made with ssh-keygen in the test's directory.
struct Ca {
    dir: std::path::PathBuf,
}

impl Ca {
    fn new(env: &TestEnv) -> Ca {
        let dir = env.path().join("ca");
        fs::create_dir_all(&dir).unwrap();
        for name in ["ca", "other_ca", "dave"] {
            keygen(&dir, &["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", name]);
        }
        Ca { dir }
    }

    fn public(&self, name: &str) -> String {
        fs::read_to_string(self.dir.join(format!("{name}.pub")))
            .unwrap()
            .trim()
            .to_string()
    }

    /// A user certificate for dave's key, signed by `ca`, for `principal`, valid `validity`;
    /// returns the certificate's path (`<name>-cert.pub`, with dave's private key beside it).
    fn certify(&self, name: &str, ca: &str, principal: &str, validity: &str) -> std::path::PathBuf {
        fs::copy(self.dir.join("dave"), self.dir.join(name)).unwrap();
        fs::copy(self.dir.join("dave.pub"), self.dir.join(format!("{name}.pub"))).unwrap();
        let pubkey = format!("{name}.pub");
        keygen(
            &self.dir,
            &[
                "-q", "-s", ca, "-I", name, "-n", principal, "-V", validity, &pubkey,
            ],
        );
        self.dir.join(format!("{name}-cert.pub"))
    }
}

fn keygen(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("ssh-keygen")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ssh-keygen {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// guardctl with `key` (a path), the test's allowed-signers file.
fn run_with_key(env: &TestEnv, key: &std::path::Path, args: &[&str]) -> Run {
    let mut c = env.command();
    c.arg("--key")
        .arg(key)
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(args);
    run(c)
}

/// What `ssh-keygen -Y verify` says of the last approval in plan.json, at the test clock.
fn ssh_keygen_agrees(env: &TestEnv, principal: &str) -> bool {
    use base64::Engine;
    let plan = plan_value(env);
    let approval = plan["approvals"].as_array().unwrap().last().unwrap().clone();
    let ty = approval["payloadType"].as_str().unwrap();
    let body = base64::engine::general_purpose::STANDARD
        .decode(approval["payload"].as_str().unwrap())
        .unwrap();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(&body);
    let sig = env.path().join("approval.sig");
    fs::write(&sig, approval["signatures"][0]["sig"].as_str().unwrap()).unwrap();
    let mut child = std::process::Command::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-n",
            "guardctl-approval",
            "-I",
            principal,
            "-Overify-time=20260601120000",
            "-f",
        ])
        .arg(env.allowed_signers())
        .arg("-s")
        .arg(&sig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &pae).unwrap();
    child.wait().unwrap().success()
}

#[test]
fn a_user_certificate_from_a_trusted_ca_approves() {
    let env = planned();
    let ca = Ca::new(&env);
    env.allow_signer("dave@example.com cert-authority", "alice");
    // allow_signer adds a fixture key; replace it with the CA's public key.
    let signers = env.allowed_signers();
    let text = fs::read_to_string(&signers).unwrap().replace(
        &format!("dave@example.com cert-authority {}", env.public_key("alice")),
        &format!("dave@example.com cert-authority {}", ca.public("ca")),
    );
    fs::write(&signers, text).unwrap();
    let cert = ca.certify("good", "ca", "dave@example.com", "20260101:20270101");
    let r = run_with_key(&env, &cert, &["whoami"]);
    assert!(
        r.stdout.contains("guardctl-approval  dave@example.com"),
        "{}",
        r.transcript()
    );
    let r = run_with_key(&env, &cert, &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        ssh_keygen_agrees(&env, "dave@example.com"),
        "ssh-keygen -Y verify disagrees"
    );
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("dave@example.com"), "{}", r.stdout);
}

#[test]
fn expired_foreign_or_other_principal_certificates_do_not_approve() {
    let cases = [
        ("expired", "ca", "dave@example.com", "20250101:20260101"),
        ("other_principal", "ca", "eve@example.com", "20260101:20270101"),
        ("other_ca", "other_ca", "dave@example.com", "20260101:20270101"),
    ];
    for (name, signing_ca, principal, validity) in cases {
        let env = planned();
        let ca = Ca::new(&env);
        let signers = env.allowed_signers();
        let mut text = fs::read_to_string(&signers).unwrap();
        text += &format!(
            "dave@example.com,eve@example.com cert-authority {}\n",
            ca.public("ca")
        );
        fs::write(&signers, text).unwrap();
        let cert = ca.certify(name, signing_ca, principal, validity);
        let r = run_with_key(&env, &cert, &["approve", "plan.json", "--yes"]);
        if name == "other_principal" {
            // The certificate speaks for eve, whom the CA line lists: eve may approve, dave not.
            assert_eq!(r.code, 0, "{name}: {}", r.transcript());
            assert!(!ssh_keygen_agrees(&env, "dave@example.com"), "{name}");
            let mut plan = plan_value(&env);
            plan["approvals"].as_array_mut().unwrap().clear();
            fs::write(
                env.repo.join("plan.json"),
                serde_json::to_string_pretty(&plan).unwrap(),
            )
            .unwrap();
        } else {
            assert_eq!(r.code, 12, "{name}: {}", r.transcript());
        }
        // An approval claiming dave, signed with that certificate, does not count.
        attach(
            &env,
            forged_with(
                &env,
                &cert,
                approval_body(&env, "dave@example.com", "alice", "approve"),
            ),
        );
        assert!(
            !ssh_keygen_agrees(&env, "dave@example.com"),
            "{name}: ssh-keygen accepts it"
        );
        let r = refused_apply(&env, "alice", &[], 12);
        assert!(
            r.stderr.contains("dave@example.com (key not allowed"),
            "{name}: {}",
            r.stderr
        );
    }
}

#[test]
fn a_ca_lines_namespaces_are_honoured() {
    let env = planned();
    let ca = Ca::new(&env);
    let signers = env.allowed_signers();
    let mut text = fs::read_to_string(&signers).unwrap();
    text += &format!(
        "dave@example.com cert-authority,namespaces=\"guardctl-plan\" {}\n",
        ca.public("ca")
    );
    fs::write(&signers, text).unwrap();
    let cert = ca.certify("planner_only", "ca", "dave@example.com", "20260101:20270101");
    let r = run_with_key(&env, &cert, &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    attach(
        &env,
        forged_with(
            &env,
            &cert,
            approval_body(&env, "dave@example.com", "alice", "approve"),
        ),
    );
    refused_apply(&env, "alice", &[], 12);
}

/// An approval envelope over `body`, signed with the key or certificate at `key`, naming the
/// signing key's fingerprint.
fn forged_with(env: &TestEnv, key: &std::path::Path, mut body: serde_json::Value) -> serde_json::Value {
    use base64::Engine;
    let fp = crate::plan_file::fingerprint(key);
    body["key"] = fp.clone().into();
    let _ = env;
    let ty = "application/vnd.guardctl.approval.v1+json";
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, bytes.len()).into_bytes();
    pae.extend_from_slice(&bytes);
    let sig = crate::plan_file::ssh_sign(key, "guardctl-approval", &pae);
    serde_json::json!({"payloadType": ty, "payload": base64::engine::general_purpose::STANDARD.encode(&bytes),
        "signatures": [{"keyid": fp, "sig": sig}]})
}

/// A plan applied (approved by Bob, applied by Alice), then a second plan approved by Bob in
/// plan2.json: the log holds Bob's approvals and Alice's apply.
fn applied_with_a_second_plan() -> TestEnv {
    let env = planned();
    assert_eq!(approve(&env, "bob").code, 0);
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.git(&["branch", "feature/extra", "main"]);
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "-o", "plan2.json"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan2.json", "--yes"]).code, 0);
    let v = env.run("alice", &["--json", "log", "--verify"]).json();
    assert_eq!(v["verified"], true, "{v}");
    env
}

fn audit_log(env: &TestEnv) -> std::path::PathBuf {
    env.repo.join(".git/guardctl/audit.log")
}

/// After tampering: `log --verify` names entry `line`, and nothing more can be applied or
/// rolled back (exit 65), leaving the repository as it was.
fn assert_tamper_refused(env: &TestEnv, line: u64) {
    let r = env.run("alice", &["--json", "log", "--verify"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert_eq!(
        r.json()["error"]["details"]["break"]["line"],
        line,
        "{}",
        r.transcript()
    );
    assert!(
        r.stderr.contains(&format!("broken at entry {line}")),
        "{}",
        r.stderr
    );
    let before = env.repository_state();
    let r = env.run("alice", &["verify", "plan2.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    let r = env.run("alice", &["apply", "plan2.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert_eq!(before, env.repository_state(), "a refusal changed the repository");
    // Restoring is never blocked by the log (an incident must be able to end), and says it
    // went unrecorded; the damaged log itself is left as it is, for investigation.
    let log = fs::read(audit_log(env)).ok();
    let r = env.run("alice", &["rollback", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("NOT recorded in the audit log"), "{}", r.stderr);
    assert_eq!(log, fs::read(audit_log(env)).ok());
}

#[test]
fn a_truncated_audit_log_is_detected_and_refuses_further_changes() {
    let env = applied_with_a_second_plan();
    let text = fs::read_to_string(audit_log(&env)).unwrap();
    let first = text.lines().next().unwrap().to_string();
    fs::write(audit_log(&env), first + "\n").unwrap();
    let r = env.run("alice", &["log"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert_tamper_refused(&env, 2);
}

#[test]
fn a_deleted_audit_log_is_detected_and_refuses_further_changes() {
    let env = applied_with_a_second_plan();
    fs::remove_file(audit_log(&env)).unwrap();
    assert_tamper_refused(&env, 1);
}

/// Re-sign a log line's payload (edited by `edit`) with `key`, as a planner holding only their
/// own keys could; returns the new line and its id.
pub fn resign(
    env: &TestEnv,
    line: &str,
    key: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> (String, String) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let env_v: serde_json::Value = serde_json::from_str(line).unwrap();
    let ty = env_v["payloadType"].as_str().unwrap().to_string();
    let mut body: serde_json::Value =
        serde_json::from_slice(&b64.decode(env_v["payload"].as_str().unwrap()).unwrap()).unwrap();
    edit(&mut body);
    let fp = crate::plan_file::fingerprint(&env.key(key));
    body["key"] = fp.clone().into();
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, bytes.len()).into_bytes();
    pae.extend_from_slice(&bytes);
    let ns = if body["event"] == "approve" {
        "guardctl-approval"
    } else {
        "guardctl-apply"
    };
    let sig = crate::plan_file::ssh_sign(&env.key(key), ns, &pae);
    let line = serde_json::json!({"payloadType": ty, "payload": b64.encode(&bytes),
        "signatures": [{"keyid": fp, "sig": sig}]});
    (
        line.to_string(),
        format!("sha256:{}", crate::apply::hex_sha256(&bytes)),
    )
}

/// Point the anchor ref at entry `seq` with id `id`, as anyone with write access could.
fn move_anchor(env: &TestEnv, seq: usize, id: &str) {
    let blob = env.path().join("anchor");
    fs::write(&blob, format!("guardctl audit anchor v1\nseq {seq}\nid {id}\n")).unwrap();
    let oid = env.git(&["hash-object", "-w", blob.to_str().unwrap()]);
    env.git(&["update-ref", "refs/guardctl/audit", &oid]);
}

#[test]
fn an_audit_log_rewritten_with_recomputed_hashes_is_detected() {
    let env = applied_with_a_second_plan();
    let text = fs::read_to_string(audit_log(&env)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "approve, apply, approve");
    // The planner rewrites Bob's approval as Eve's and re-chains every entry after it, signing
    // with the only keys they hold, and moves the anchor to the new head.
    let (l1, id1) = resign(&env, lines[0], "alice", |b| {
        b["principal"] = "eve@example.com".into()
    });
    let (l2, id2) = resign(&env, lines[1], "alice", |b| {
        b["audit"]["prev"] = id1.clone().into()
    });
    let (l3, id3) = resign(&env, lines[2], "alice", |b| b["prev"] = id2.clone().into());
    fs::write(audit_log(&env), format!("{l1}\n{l2}\n{l3}\n")).unwrap();
    move_anchor(&env, 3, &id3);
    assert_tamper_refused(&env, 1);

    // Without re-signing (the hashes recomputed, Bob's signature kept): broken by itself.
    let env = applied_with_a_second_plan();
    let text = fs::read_to_string(audit_log(&env)).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let (l1, _) = resign(&env, text.lines().next().unwrap(), "bob", |b| {
        b["principal"] = "eve@example.com".into()
    });
    let mut forged: serde_json::Value = serde_json::from_str(&l1).unwrap();
    forged["signatures"] = first["signatures"].clone();
    let rest: Vec<&str> = text.lines().skip(1).collect();
    fs::write(audit_log(&env), format!("{forged}\n{}\n", rest.join("\n"))).unwrap();
    let r = env.run("alice", &["log"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("broken at entry 1"), "{}", r.stderr);
}

#[test]
fn an_apply_removed_from_the_audit_log_is_found_by_its_receipt() {
    let env = applied_with_a_second_plan();
    let text = fs::read_to_string(audit_log(&env)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Drop the apply (the receipt) and re-chain Bob's later approval onto the first entry:
    // only Bob can sign as Bob, so the planner uses Bob's key here to isolate the receipt check.
    let first_id = {
        use base64::Engine;
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v["payload"].as_str().unwrap())
            .unwrap();
        format!("sha256:{}", crate::apply::hex_sha256(&bytes))
    };
    let (l2, id2) = resign(&env, lines[2], "bob", |b| {
        b["prev"] = first_id.clone().into();
        b["seq"] = 2.into();
    });
    fs::write(audit_log(&env), format!("{}\n{l2}\n", lines[0])).unwrap();
    move_anchor(&env, 2, &id2);
    assert_eq!(env.run("alice", &["log"]).code, 0, "the chain itself is intact");
    let r = env.run("alice", &["--json", "log", "--verify"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert_eq!(r.json()["error"]["details"]["break"]["line"], 2);
    assert!(r.stderr.contains("receipt of plan"), "{}", r.stderr);
}

#[test]
fn every_entry_names_the_key_that_acted_and_the_anchor_keeps_a_reflog() {
    let env = applied_with_a_second_plan();
    let v = env.run("alice", &["--json", "log"]).json();
    let events: Vec<(&str, &str)> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap(), e["principal"].as_str().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("approve", "bob@example.com"),
            ("apply", "alice@example.com"),
            ("approve", "bob@example.com")
        ]
    );
    // The anchor moved once per entry, and git kept each earlier head in its reflog.
    let reflog = fs::read_to_string(env.repo.join(".git/logs/refs/guardctl/audit")).unwrap();
    assert_eq!(reflog.lines().count(), 3, "{reflog}");
    let first = env.git(&["cat-file", "-p", "refs/guardctl/audit@{2}"]);
    assert!(first.contains("seq 1\n"), "{first}");
    // The receipt is the apply's entry.
    let receipt: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(
            fs::read_dir(env.repo.join(".git/guardctl/plans"))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path()
                .join("receipt.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let line: serde_json::Value = serde_json::from_str(
        fs::read_to_string(audit_log(&env))
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(receipt["payload"], line["payload"]);
    assert_eq!(receipt["signatures"], line["signatures"]);
}

/// Approvals a hostile planner signs or keeps (issue 12's review): the plan's own key, the
/// planner's principal in another case, a key revoked since, signers from the work tree.
mod approvals_the_planner_forges {
    use crate::fixtures::standard_repo;
    use std::fs;

    // ---------------------------------------------------------------------------------------
    // self-approval
    // ---------------------------------------------------------------------------------------

    /// docs/trust-model.md: an approval signed by the plan's key, under any principal, is self-approval.
    /// A key listed for planning as alice and for approving under another name (the
    /// allowed-signers file's `namespaces=` makes that one principal per namespace, so `approve`
    /// accepts it) approves its own plan today.
    #[test]
    fn an_approval_signed_with_the_plans_own_key_is_self_approval_whatever_the_principal() {
        let env = standard_repo();
        let signers = env.path().join("allowed_signers");
        fs::write(
            &signers,
            format!(
                "alice@example.com namespaces=\"guardctl-plan,guardctl-apply\" {a}\n\
             alice-review@example.com namespaces=\"guardctl-approval\" {a}\n\
             bob@example.com {b}\ncarol@example.com {c}\n",
                a = env.public_key("alice"),
                b = env.public_key("bob"),
                c = env.public_key("carol"),
            ),
        )
        .unwrap();
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let _ = env.run("alice", &["approve", "plan.json", "--yes"]);
        let before = env.repository_state();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_eq!(
            r.code,
            12,
            "the planner's own key approved the plan:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.repository_state());
    }

    /// docs/trust-model.md: a principal equal to the planner's ignoring case is the planner. A file that
    /// spells one principal two ways is ambiguous: every command refuses it (64, naming both
    /// lines), so the case variant never approves anything.
    #[test]
    fn an_approval_by_the_planners_principal_in_another_case_is_self_approval() {
        let env = standard_repo();
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        env.allow_signer("ALICE@example.com", "mallory");
        let r = env.run("mallory", &["approve", "plan.json", "--yes"]);
        assert_eq!(r.code, 64, "{}", r.transcript());
        assert!(
            r.stderr.contains("line 4") && r.stderr.contains("line 1"),
            "{}",
            r.stderr
        );
        let before = env.repository_state();
        let r = env.run("alice", &["apply", "plan.json"]);
        assert_ne!(
            r.code,
            0,
            "the planner's case variant approved the plan:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.repository_state());
    }

    /// docs/trust-model.md: an approver's key must be valid when the approval says it was signed *and
    /// when apply checks it*. A key revoked after approving (compromised: `valid-before` set
    /// to now) still counts, since validity is looked up only at the approval's own
    /// `created_at` — which its signer writes.
    #[test]
    fn an_approval_by_a_key_revoked_since_does_not_count() {
        let env = standard_repo();
        fs::write(
        env.path().join("allowed_signers"),
        format!(
            "alice@example.com {a}\nbob@example.com valid-before=\"202606011210\" {b}\ncarol@example.com {c}\n",
            a = env.public_key("alice"),
            b = env.public_key("bob"),
            c = env.public_key("carol"),
        ),
    )
    .unwrap();
        let r = env.run(
            "alice",
            &["plan", "stale-branches", "--merged", "--expires-in", "1h"],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let r = env.run_env(
            "bob",
            &[("GUARDCTL_TEST_NOW", "2026-06-01T12:05:00Z")],
            &["approve", "plan.json", "--yes"],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let before = env.repository_state();
        let r = env.run_env(
            "alice",
            &[("GUARDCTL_TEST_NOW", "2026-06-01T12:20:00Z")],
            &["apply", "plan.json"],
        );
        assert_eq!(
            r.code,
            12,
            "an approval by a revoked key counted:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.repository_state());
    }

    // ---------------------------------------------------------------------------------------
    // trusted sources
    // ---------------------------------------------------------------------------------------

    /// docs/trust-model.md: allowed signers come from trusted sources only — "never the work tree or the
    /// repository's own config (the planner can write both)". guardctl reads
    /// `.guardctl/allowed_signers` from the work tree and `gpg.ssh.allowedSignersFile` from the
    /// repository's config. A planner (or an agent whose key may only plan) who writes either
    /// names their second key `bob@example.com` and approves their own plan.
    #[test]
    fn an_allowed_signers_file_in_the_work_tree_or_the_repository_config_is_never_trusted() {
        for how in ["repository config", "work tree"] {
            let env = standard_repo();
            let mine = format!(
                "alice@example.com {}\nbob@example.com {}\n",
                env.public_key("alice"),
                env.public_key("mallory")
            );
            if how == "work tree" {
                fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
                fs::write(env.repo.join(".guardctl/allowed_signers"), &mine).unwrap();
            } else {
                let path = env.path().join("mine");
                fs::write(&path, &mine).unwrap();
                env.git(&["config", "gpg.ssh.allowedSignersFile", path.to_str().unwrap()]);
            }
            let as_ = |user: &str, args: &[&str]| {
                let mut c = env.command();
                c.arg("--key").arg(env.key(user)).args(args);
                crate::fixtures::run(c)
            };
            let r = as_("alice", &["plan", "stale-branches", "--merged"]);
            assert_eq!(r.code, 0, "{how}: {}", r.transcript());
            let _ = as_("mallory", &["approve", "plan.json", "--yes"]);
            let before = env.repository_state();
            let r = as_("alice", &["apply", "plan.json"]);
            assert_ne!(
                r.code,
                0,
                "{how}: a planner-written allowed-signers file let the planner approve their own plan:\n{}",
                r.transcript()
            );
            assert_eq!(before, env.repository_state(), "{how}");
        }
    }
}

/// A hostile planner who can write their own clone (refs, `.git/config`) must not choose the
/// trust roots of their plan: identities come from the remote's default branch (issue 13's
/// second review).
mod trust_roots_on_the_remote {
    use crate::fixtures::{Run, TestEnv, run, standard_repo};
    use std::fs;

    /// guardctl as `user`, with no `--allowed-signers`: the trusted sources decide.
    fn run_bare(env: &TestEnv, user: &str, args: &[&str]) -> Run {
        let mut c = env.command();
        c.arg("--key").arg(env.key(user)).args(args);
        run(c)
    }

    /// The standard repository with alice, bob and carol committed as trusted identities on
    /// main, pushed to `origin` (the shared truth), and `origin/HEAD` naming `origin/main`.
    fn identities_on_origin() -> TestEnv {
        let env = standard_repo();
        fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
        fs::copy(env.allowed_signers(), env.repo.join(".guardctl/allowed_signers")).unwrap();
        env.git(&["add", ".guardctl/allowed_signers"]);
        env.git(&["commit", "-q", "-m", "Trusted identities"]);
        env.git(&["push", "-q", "origin", "main"]);
        env.git(&["fetch", "-q", "origin"]);
        env.git(&["remote", "set-head", "origin", "main"]);
        env
    }

    /// The planner (alice) makes mallory's key a second "bob" in a commit of her own on
    /// `branch` (never pushed), plans, has mallory approve, and applies: must be refused.
    fn self_approval_through_a_planner_commit(env: &TestEnv, point_base_at_it: impl Fn(&TestEnv, &str)) {
        let head = env.git(&["rev-parse", "HEAD"]).trim().to_string();
        env.git(&["checkout", "-q", "-b", "evil"]);
        let path = env.repo.join(".guardctl/allowed_signers");
        let mut text = fs::read_to_string(&path).unwrap();
        text += &format!("bob@example.com {}\n", env.public_key("mallory"));
        fs::write(&path, text).unwrap();
        env.git(&["commit", "-q", "-am", "a second bob"]);
        let evil = env.git(&["rev-parse", "HEAD"]).trim().to_string();
        env.git(&["checkout", "-q", "main"]);
        env.git(&["reset", "-q", "--hard", &head]);
        point_base_at_it(env, &evil);
        let r = run_bare(env, "alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let before = env.repository_state();
        let _ = run_bare(env, "mallory", &["approve", "plan.json", "--yes"]);
        let r = run_bare(env, "alice", &["apply", "plan.json"]);
        assert_ne!(
            r.code,
            0,
            "the planner's own key approved through identities the planner committed locally:\n{}",
            r.transcript()
        );
        assert_eq!(
            before,
            env.repository_state(),
            "a refused apply changed the repository"
        );
    }

    #[test]
    fn committed_identities_come_from_the_remotes_default_branch_not_a_local_origin_head() {
        let env = identities_on_origin();
        // `refs/remotes/origin/HEAD` is a symbolic ref in the planner's clone.
        self_approval_through_a_planner_commit(&env, |env, _| {
            env.git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/evil"]);
        });
    }

    #[test]
    fn committed_identities_come_from_the_remotes_default_branch_not_a_rewritten_tracking_ref() {
        let env = identities_on_origin();
        self_approval_through_a_planner_commit(&env, |env, evil| {
            env.git(&["update-ref", "refs/remotes/origin/main", evil]);
        });
    }

    #[test]
    fn committed_identities_are_not_read_from_an_unpushed_local_main() {
        // No origin/HEAD (as after `git init` + `remote add` + push): the local main decides today.
        let env = identities_on_origin();
        env.git(&["remote", "set-head", "origin", "--delete"]);
        self_approval_through_a_planner_commit(&env, |env, evil| {
            env.git(&["update-ref", "refs/heads/main", evil]);
            env.git(&["reset", "-q", "--hard", evil]);
        });
    }

    #[test]
    fn committed_identities_ignore_init_default_branch_in_the_repositorys_own_config() {
        let env = identities_on_origin();
        env.git(&["remote", "set-head", "origin", "--delete"]);
        self_approval_through_a_planner_commit(&env, |env, _| {
            env.git(&["config", "init.defaultBranch", "evil"]);
        });
    }

    /// Control: without the planner's ref edits, mallory is no one (passes today).
    #[test]
    fn control_mallory_is_not_bob_on_the_origins_default_branch() {
        let env = identities_on_origin();
        self_approval_through_a_planner_commit(&env, |_, _| {});
    }
}

/// Self-approval in disguise (issues 13 and 20, second review): an approver the planner minted
/// or whose key the plan's own key also speaks for; one key under two principals.
mod self_approval {
    use crate::fixtures::{Run, TestEnv, run};
    use std::fs;

    /// guardctl as `user`, with no `--allowed-signers`: the trusted sources decide.
    fn run_bare(env: &TestEnv, user: &str, args: &[&str]) -> Run {
        let mut c = env.command();
        c.arg("--key").arg(env.key(user)).args(args);
        run(c)
    }

    /// The same self-approval against the shared remote: a `remote-branches` plan the planner
    /// applies from their own clone deletes branches on `origin` for everyone. The identities
    /// must be the remote's (as `ls-remote` reports its HEAD), as the policy already is.
    #[test]
    fn a_planner_minted_approver_cannot_delete_branches_on_the_shared_remote() {
        let env = crate::fixtures::remote_repo();
        fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
        fs::copy(env.allowed_signers(), env.repo.join(".guardctl/allowed_signers")).unwrap();
        env.git(&["add", ".guardctl/allowed_signers"]);
        env.git(&["commit", "-q", "-m", "Trusted identities"]);
        env.git(&["push", "-q", "origin", "main"]);
        env.git(&["fetch", "-q", "origin"]);
        env.git(&["remote", "set-head", "origin", "main"]);
        // The planner's own commit, never pushed, named by the clone's origin/HEAD.
        env.git(&["checkout", "-q", "-b", "evil"]);
        let path = env.repo.join(".guardctl/allowed_signers");
        let mut text = fs::read_to_string(&path).unwrap();
        text += &format!("bob@example.com {}\n", env.public_key("mallory"));
        fs::write(&path, text).unwrap();
        env.git(&["commit", "-q", "-am", "a second bob"]);
        env.git(&["checkout", "-q", "main"]);
        env.git(&["symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/evil"]);
        let r = run_bare(&env, "alice", &["plan", "remote-branches", "--remote", "origin"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let before = env.remote_branches();
        let _ = run_bare(&env, "mallory", &["approve", "plan.json", "--yes"]);
        let r = run_bare(&env, "alice", &["apply", "plan.json"]);
        assert_ne!(
            r.code,
            0,
            "deleted on origin with a planner-minted approval:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.remote_branches(), "origin's branches changed");
    }

    /// One person, two spellings of their identity: their key K speaks for `alice@example.com`
    /// and `alice@corp.example.com` (git's allowed-signers lists several e-mails for one key),
    /// and their second key speaks for `alice@example.com` only. A plan signed with K that claims
    /// the corp principal must not be approvable by the second key: K "may also speak for" the
    /// approver's principal, which is self-approval (docs/trust-model.md, check 2).
    #[test]
    fn an_approver_the_plans_own_key_also_speaks_for_is_self_approval() {
        let env = crate::hostile::planned();
        env.allow_signer("alice@corp.example.com", "alice");
        env.allow_signer("alice@example.com", "mallory");
        // `plan` refuses a key with two principals; the planner re-signs the claim instead.
        crate::hostile::forge_raw(&env, |p| {
            p.planner.principal = Some("alice@corp.example.com".into());
        });
        crate::apply::attach_forged(&env, "mallory", "alice@example.com");
        let r = crate::apply::refused_apply(&env, "alice", &[], 12);
        assert!(
            r.stderr.contains("own plan") || r.stderr.contains("self"),
            "{}",
            r.transcript()
        );
    }

    /// One key listed for two principals (git's allowed-signers allows `a@x,b@y KEY`) is one
    /// person: two approvals signed by that one key, one per principal, are one approval.
    #[test]
    fn two_approvals_by_one_key_under_two_principals_count_once() {
        let env = TestEnv::new();
        env.branch("feature/done", "main", 1, "Bob", 30);
        env.merge("feature/done", 29);
        env.commit(
            ".guardctl/policy.toml",
            "version = 1\n\n[approvals]\nrequired = 2",
            "Alice",
            1,
        );
        env.allow_signer("bob@corp.example.com", "bob");
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        for principal in ["bob@example.com", "bob@corp.example.com"] {
            crate::apply::attach_forged(&env, "bob", principal);
        }
        crate::apply::refused_apply(&env, "alice", &[], 12);
    }
}

#[test]
fn trust_roots_in_system_git_config_are_not_replaced_by_a_flag_or_variable() {
    let env = standard_repo();
    // The administrator's file: alice and bob as the test file has them.
    let admin = env.path().join("admin_signers");
    fs::copy(env.allowed_signers(), &admin).unwrap();
    let config = env.path().join("gitconfig");
    fs::write(
        &config,
        format!("[gpg \"ssh\"]\n\tallowedSignersFile = {}\n", admin.display()),
    )
    .unwrap();
    // An agent's own file, naming the agent's key as an approver.
    let own = env.path().join("own_signers");
    fs::write(
        &own,
        format!("mallory@example.com {}\n", env.public_key("mallory")),
    )
    .unwrap();
    let system = ("GUARDCTL_TEST_SYSTEM_GITCONFIG", config.to_str().unwrap());
    let mut c = env.command();
    c.env(system.0, system.1)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(&own)
        .args(["plan", "stale-branches", "--merged"]);
    let r = run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("the system git config names the trusted identities"),
        "{}",
        r.stderr
    );
    let mut c = env.command();
    c.env(system.0, system.1)
        .env("GUARDCTL_ALLOWED_SIGNERS", &own)
        .arg("--key")
        .arg(env.key("alice"))
        .args(["plan", "stale-branches", "--merged"]);
    let r = run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    // The same file named again is no widening: allowed, and the system's file is what counts.
    let mut c = env.command();
    c.env(system.0, system.1)
        .arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(&admin)
        .args(["plan", "stale-branches", "--merged"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let mut c = env.command();
    c.env(system.0, system.1)
        .arg("--key")
        .arg(env.key("alice"))
        .args(["plan", "stale-branches", "--merged", "-o", "plan2.json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
}
