//! Plan files as untrusted input: every malformed, tampered or foreign file exits 65 with a
//! clear message, never a panic. Plus the key lookup and ssh-agent signing.

use crate::fixtures::{TestEnv, run, ssh_keygen_verify, standard_repo};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// The first signature of a plan file and the PAE bytes it signs.
pub fn signature_and_pae(path: &Path) -> (String, Vec<u8>) {
    let v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let ty = v["payloadType"].as_str().unwrap();
    let body = B64.decode(v["payload"].as_str().unwrap()).unwrap();
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(&body);
    (v["signatures"][0]["sig"].as_str().unwrap().to_string(), pae)
}

fn planned() -> (TestEnv, String) {
    let env = standard_repo();
    assert_eq!(env.run("alice", &["plan", "stale-branches"]).code, 0);
    let text = fs::read_to_string(env.repo.join("plan.json")).unwrap();
    (env, text)
}

fn show_exit(env: &TestEnv, content: &[u8]) -> crate::fixtures::Run {
    fs::write(env.repo.join("bad.json"), content).unwrap();
    env.run("bob", &["show", "bad.json"])
}

fn with_payload(text: &str, edit: impl Fn(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    let mut payload: Value =
        serde_json::from_slice(&B64.decode(v["payload"].as_str().unwrap()).unwrap()).unwrap();
    edit(&mut payload);
    v["payload"] = Value::String(B64.encode(serde_json::to_vec(&payload).unwrap()));
    serde_json::to_string(&v).unwrap()
}

/// The plan file `text` with its payload edited and signed again with `key`: what a planner
/// (who holds the plan key) could produce by hand.
pub fn re_signed(env: &TestEnv, text: &str, key: &str, edit: impl Fn(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(&with_payload(text, edit)).unwrap();
    let body = B64.decode(v["payload"].as_str().unwrap()).unwrap();
    let ty = "application/vnd.guardctl.plan.v1+json";
    let mut pae = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    pae.extend_from_slice(&body);
    v["signatures"][0]["sig"] = Value::String(ssh_sign(&env.key(key), "guardctl-plan", &pae));
    v.to_string()
}

#[test]
fn garbage_and_malformed_files_exit_65() {
    let (env, text) = planned();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"not json at all".to_vec()),
        ("empty", Vec::new()),
        ("binary", vec![0xff, 0x00, 0x1b, 0x9b]),
        ("trailing data", format!("{text}{{}}").into_bytes()),
        (
            "unknown field",
            text.replacen("{", "{\"extra\": 1,", 1).into_bytes(),
        ),
        (
            "duplicate key",
            text.replacen("{", "{\"payloadType\": \"x\",", 1).into_bytes(),
        ),
        (
            "deep nesting",
            ("[".repeat(10_000) + &"]".repeat(10_000)).into_bytes(),
        ),
        (
            "wrong payloadType",
            text.replace(
                "application/vnd.guardctl.plan.v1+json",
                "application/vnd.in-toto+json",
            )
            .into_bytes(),
        ),
        ("no signature", {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            v["signatures"] = Value::Array(vec![]);
            v.to_string().into_bytes()
        }),
    ];
    for (what, bytes) in cases {
        let r = show_exit(&env, &bytes);
        assert_eq!(r.code, 65, "{what}: {}", r.transcript());
        assert!(r.stderr.starts_with("error: "), "{what}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{what}");
    }
}

#[test]
fn tampered_payload_or_signature_exits_65() {
    let (env, text) = planned();
    let edited = with_payload(&text, |p| p["affected"][0]["oid"] = Value::String("0".repeat(40)));
    let r = show_exit(&env, edited.as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("signature does not verify"), "{}", r.stderr);

    let mut v: Value = serde_json::from_str(&text).unwrap();
    let sig = v["signatures"][0]["sig"].as_str().unwrap().to_string();
    let lines: Vec<&str> = sig.lines().collect();
    let mut broken = lines[1].to_string();
    let flipped = if broken.ends_with('A') { 'B' } else { 'A' };
    broken.pop();
    broken.push(flipped);
    v["signatures"][0]["sig"] = Value::String(sig.replacen(lines[1], &broken, 1));
    let r = show_exit(&env, v.to_string().as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());

    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["signatures"][0]["keyid"] = Value::String("SHA256:somebodyelse".into());
    let r = show_exit(&env, v.to_string().as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());
}

#[test]
fn plan_signed_in_another_namespace_or_re_signed_by_another_key_exits_65() {
    let (env, text) = planned();
    let v: Value = serde_json::from_str(&text).unwrap();
    let (_, pae) = signature_and_pae(&env.repo.join("plan.json"));
    // A valid SSHSIG over the right bytes, but in the approval namespace.
    let sig = ssh_sign(&env.key("alice"), "guardctl-approval", &pae);
    let mut w = v.clone();
    w["signatures"][0]["sig"] = Value::String(sig);
    let r = show_exit(&env, w.to_string().as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("namespace"), "{}", r.stderr);
    // A git commit signature (namespace `git`) is refused the same way.
    let sig = ssh_sign(&env.key("alice"), "git", &pae);
    let mut w = v.clone();
    w["signatures"][0]["sig"] = Value::String(sig);
    assert_eq!(show_exit(&env, w.to_string().as_bytes()).code, 65);
    // Mallory re-signs Alice's payload: the payload names Alice's key, so it is refused.
    let sig = ssh_sign(&env.key("mallory"), "guardctl-plan", &pae);
    let mut w = v.clone();
    w["signatures"][0]["sig"] = Value::String(sig);
    w["signatures"][0]["keyid"] = Value::String(fingerprint(&env.key("mallory")));
    let r = show_exit(&env, w.to_string().as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("different planner key"), "{}", r.stderr);
}

#[test]
fn unknown_format_version_exits_65_naming_the_version() {
    let (env, text) = planned();
    // Re-sign a payload claiming version 2 with Alice's key, so only the version is wrong.
    let edited = re_signed(&env, &text, "alice", |p| p["format_version"] = Value::from(2));
    let r = show_exit(&env, edited.as_bytes());
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("unknown plan format version 2"), "{}", r.stderr);
}

#[test]
fn symlinked_and_oversized_plan_files_exit_65_and_a_missing_one_66() {
    let (env, _) = planned();
    std::os::unix::fs::symlink(env.repo.join("plan.json"), env.repo.join("link.json")).unwrap();
    let r = env.run("bob", &["show", "link.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);

    // A typo in a path is not tampering (sysexits EX_NOINPUT).
    let r = env.run("bob", &["show", "missing.json"]);
    assert_eq!(r.code, 66, "{}", r.transcript());

    let big = fs::File::create(env.repo.join("big.json")).unwrap();
    big.set_len(129 * 1024 * 1024).unwrap(); // sparse: costs no disk
    let r = env.run("bob", &["show", "big.json"]);
    assert_eq!(r.code, 65, "{}", r.transcript());
    assert!(r.stderr.contains("larger than"), "{}", r.stderr);
}

#[test]
fn json_errors_are_one_document_on_stdout() {
    let (env, _) = planned();
    let r = env.run("bob", &["--json", "show", "missing.json"]);
    assert_eq!(r.code, 66);
    let v = r.json();
    assert_eq!(v["error"]["kind"], "not_found");
    assert!(v["error"]["message"].as_str().unwrap().contains("missing.json"));
    assert!(v["error"]["details"]["hint"].is_string());
}

pub fn ssh_sign(key: &Path, namespace: &str, data: &[u8]) -> String {
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", namespace, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

pub fn fingerprint(key: &Path) -> String {
    let out = Command::new("ssh-keygen").arg("-lf").arg(key).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string()
}

#[test]
fn signs_through_ssh_agent_with_a_passphrase_protected_key() {
    let env = standard_repo();
    let dir = env.path().join("agent");
    fs::create_dir_all(&dir).unwrap();
    let key = dir.join("id_ed25519");
    let ok = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "correct horse",
            "-C",
            "test agent key",
            "-f",
        ])
        .arg(&key)
        .status()
        .unwrap();
    assert!(ok.success());
    let socket = dir.join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // ssh-add reads the passphrase from an askpass program, never a terminal.
    let askpass = dir.join("askpass.sh");
    fs::write(&askpass, "#!/bin/sh\necho 'correct horse'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&askpass, fs::Permissions::from_mode(0o700)).unwrap();
    let added = Command::new("ssh-add")
        .arg(&key)
        .env("SSH_AUTH_SOCK", &socket)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );

    let signers = env.path().join("agent_signers");
    let public = fs::read_to_string(dir.join("id_ed25519.pub")).unwrap();
    fs::write(&signers, format!("dave@example.com {public}")).unwrap();
    // Only the public half is given: the private key must come from the agent.
    let mut c = env.command();
    c.env("SSH_AUTH_SOCK", &socket)
        .arg("--key")
        .arg(dir.join("id_ed25519.pub"))
        .arg("--allowed-signers")
        .arg(&signers)
        .args(["plan", "stale-branches"]);
    let r = run(c);
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(r.code, 0, "{}", r.transcript());
    let (sig, pae) = signature_and_pae(&env.repo.join("plan.json"));
    let (ok, out) = ssh_keygen_verify(&signers, "dave@example.com", "guardctl-plan", &sig, &pae);
    assert!(ok, "{out}");
}

#[test]
fn key_lookup_order_is_flag_env_git_config_then_generated_default() {
    let env = standard_repo();
    let signers = env.allowed_signers();
    let who = |c: &mut Command| {
        c.arg("--allowed-signers")
            .arg(&signers)
            .args(["--json", "whoami"]);
        let r = run(std::mem::replace(c, Command::new("true")));
        assert_eq!(r.code, 0, "{}", r.transcript());
        r.json()
    };
    // git config user.signingKey with gpg.format=ssh.
    env.git(&["config", "gpg.format", "ssh"]);
    env.git(&["config", "user.signingKey", env.key("bob").to_str().unwrap()]);
    let v = who(&mut env.command());
    assert_eq!(v["key_source"], "git config user.signingKey");
    assert_eq!(v["principals"][0]["principals"][0], "bob@example.com");
    // GUARDCTL_KEY beats git config.
    let mut c = env.command();
    c.env("GUARDCTL_KEY", env.key("carol"));
    assert_eq!(who(&mut c)["principals"][0]["principals"][0], "carol@example.com");
    // --key beats both.
    let mut c = env.command();
    c.env("GUARDCTL_KEY", env.key("carol"))
        .arg("--key")
        .arg(env.key("alice"));
    assert_eq!(who(&mut c)["principals"][0]["principals"][0], "alice@example.com");
    // git's `key::` literal means the private half is in ssh-agent.
    env.git(&[
        "config",
        "user.signingKey",
        &format!("key::{}", env.public_key("alice")),
    ]);
    let v = who(&mut env.command());
    assert_eq!(v["in_agent"], true);
    assert_eq!(v["principals"][0]["principals"][0], "alice@example.com");
    // Nothing configured: a per-user key is generated once, with a notice.
    env.git(&["config", "--unset", "gpg.format"]);
    let mut c = env.command();
    c.args(["whoami"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("generated a signing key"), "{}", r.stderr);
    let generated = env.home.join(".local/share/guardctl/id_ed25519");
    assert!(generated.exists());
    let mut c = env.command();
    c.args(["whoami"]);
    let r = run(c);
    assert!(
        !r.stderr.contains("generated"),
        "generated only once: {}",
        r.stderr
    );
}
