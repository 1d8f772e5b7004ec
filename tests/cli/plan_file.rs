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
    let mut agent = crate::fixtures::ssh_agent(&socket);
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
fn key_lookup_order_is_flag_env_git_config_then_a_key_made_only_when_asked() {
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
    // git's `key::` literal means the private half is in ssh-agent; with no agent running,
    // whoami says so and exits as every signing command would (issue 34 item 9), its view in
    // the error's details.
    env.git(&[
        "config",
        "user.signingKey",
        &format!("key::{}", env.public_key("alice")),
    ]);
    let mut c = env.command();
    c.env_remove("SSH_AUTH_SOCK")
        .arg("--allowed-signers")
        .arg(&signers)
        .args(["--json", "whoami"]);
    let r = run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    let v = r.json();
    assert_eq!(v["error"]["details"]["whoami"]["in_agent"], true);
    assert_eq!(
        v["error"]["details"]["whoami"]["principals"][0]["principals"][0],
        "alice@example.com"
    );
    // Nothing configured: no key is made unasked; the error says how to use one.
    env.git(&["config", "--unset", "gpg.format"]);
    let generated = env.home.join(".local/share/guardctl/id_ed25519");
    for args in [&["whoami"][..], &["plan", "stale-branches"][..]] {
        let mut c = env.command();
        c.env_remove("SSH_AUTH_SOCK").args(args);
        let r = run(c);
        assert_eq!(r.code, 64, "{}", r.transcript());
        assert!(r.stderr.contains("no signing key is configured"), "{}", r.stderr);
        assert!(
            r.stderr.contains("git config --global gpg.format ssh"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("guardctl whoami --generate"), "{}", r.stderr);
        assert!(!generated.exists(), "made unasked by {args:?}");
    }
    assert!(!env.repo.join("plan.json").exists());
    // Asked for: made once, then used.
    let mut c = env.command();
    c.args(["whoami", "--generate"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("made a signing key"), "{}", r.stderr);
    assert!(generated.exists());
    let v = who(&mut env.command());
    assert_eq!(v["key_source"], "guardctl's per-user key (whoami --generate)");
    let mut c = env.command();
    c.args(["whoami", "--generate"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("already has a signing key"), "{}", r.stderr);
    // A configured key outranks a generated one: --generate refuses to make an unused key.
    let mut c = env.command();
    c.env("GUARDCTL_KEY", env.key("carol"))
        .args(["whoami", "--generate"]);
    let r = run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(
        r.stderr.contains("a signing key is already configured"),
        "{}",
        r.stderr
    );
}

/// Plan fields a hostile planner re-signs (issue 12's review): each is recomputed or refused,
/// never trusted, and never a panic.
mod forged_fields {
    use crate::fixtures::{payload_of, standard_repo};
    use crate::hostile::{forge, planned};
    use guardctl::plan::Operation;
    use std::fs;

    // ---------------------------------------------------------------------------------------
    // planner-written fields validation does not cover
    // ---------------------------------------------------------------------------------------

    /// `policy_hash` is planner-written, enters the plan hash (which the planner recomputes),
    /// and is printed raw in `show --json` (`policy.hash`): bidi and other non-C0 characters
    /// reach the reviewer's terminal. It is a `sha256:<hex>` guardctl computes: check it.
    #[test]
    fn a_forged_policy_hash_is_refused_before_anyone_sees_it() {
        let env = planned();
        forge(&env, |p| p.policy_hash = "sha256:\u{202E}\u{9b}31m0000".into());
        let r = env.run("bob", &["--json", "show", "plan.json"]);
        assert!(
            !r.stdout.contains(['\u{202E}', '\u{9b}']),
            "show --json printed a raw bidi/C1 character:\n{}",
            r.stdout
        );
        assert_eq!(r.code, 65, "{}", r.transcript());
    }

    /// Inputs no `guardctl plan` writes: a branch plan selecting by `matched` (a tag-only
    /// criterion, met by every branch), criteria out of order. Not a plan guardctl would write.
    #[test]
    fn a_forged_branch_plan_with_a_tag_only_criterion_is_refused() {
        let env = planned();
        forge(&env, |p| {
            if let Operation::StaleBranches(i) = &mut p.operation {
                i.criteria = vec![guardctl::plan::Criterion::Matched];
            }
            for a in &mut p.affected {
                a.reasons = vec![guardctl::plan::Criterion::Matched];
            }
        });
        let r = env.run("bob", &["show", "plan.json"]);
        assert_eq!(r.code, 65, "{}", r.transcript());
    }

    /// `skipped` is never checked: a forged plan can list a branch it deletes as skipped
    /// ("protected"), telling the reviewer it is safe.
    #[test]
    fn a_forged_skipped_list_that_names_a_deleted_branch_is_refused() {
        let env = planned();
        forge(&env, |p| {
            let a = p.affected[0].clone();
            p.skipped.insert(
                0,
                guardctl::plan::Skipped {
                    refname: a.refname,
                    oid: Some(a.oid),
                    reason: guardctl::plan::SkipReason::Protected,
                    detail: Some("kept: protected by policy".into()),
                },
            );
        });
        let r = env.run("bob", &["show", "plan.json"]);
        assert_eq!(r.code, 65, "{}", r.transcript());
    }

    // ---------------------------------------------------------------------------------------
    // more: JSON output, key validity, verify vs apply
    // ---------------------------------------------------------------------------------------

    /// `--json` errors carry `details` built from planner-written strings (drift's planned
    /// values, the executor in a wrong-principal refusal, the planned policy hash) without
    /// `safe`: serde escapes C0 only, so bidi and C1 controls reach the terminal.
    #[test]
    fn json_error_details_never_carry_raw_planner_written_controls() {
        let evil = "harmless\u{202E}txt.exe\u{9b}2J";
        // drift details: a misstated subject
        let env = planned();
        forge(&env, |p| p.affected[0].subject = evil.into());
        assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
        let r = env.run("alice", &["--json", "apply", "plan.json"]);
        assert_eq!(r.code, 10, "{}", r.transcript());
        assert!(
            !r.stdout.contains(['\u{202E}', '\u{9b}']),
            "apply --json printed a raw bidi/C1 character:\n{}",
            r.stdout
        );
        // wrong-principal details: a forged executor principal
        let env = planned();
        forge(&env, |p| {
            p.executor.principal = Some(format!("bob@example.com{evil}"))
        });
        let r = env.run("alice", &["--json", "verify", "plan.json"]);
        assert!(
            !r.stdout.contains(['\u{202E}', '\u{9b}']),
            "verify --json (exit {}) printed a raw bidi/C1 character:\n{}",
            r.code,
            r.stdout
        );
    }

    /// docs/trust-model.md: keys must be valid at the time their signature claims *and at the time of
    /// the check*. The planner's key is looked up at the plan's own `created_at`, which the
    /// planner writes: a key revoked yesterday (`valid-before`) backdates its plan to the day
    /// before and has it applied by someone else today.
    #[test]
    fn a_plan_backdated_into_its_planners_key_validity_is_refused() {
        let env = standard_repo();
        fs::write(
        env.path().join("allowed_signers"),
        format!(
            "alice@example.com valid-before=\"20260531\" {a}\nbob@example.com {b}\ncarol@example.com {c}\n",
            a = env.public_key("alice"),
            b = env.public_key("bob"),
            c = env.public_key("carol"),
        ),
    )
    .unwrap();
        let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let t =
            |s: &str| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
        forge(&env, |p| {
            p.planner.principal = Some("alice@example.com".into());
            p.created_at = t("2026-05-30T12:00:00Z");
            p.expires_at = t("2026-06-02T12:00:00Z");
            p.executor = guardctl::plan::Party {
                principal: Some("carol@example.com".into()),
                key: None,
            };
        });
        let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
        let before = env.repository_state();
        let r = env.run("carol", &["apply", "plan.json"]);
        assert_ne!(
            r.code,
            0,
            "a plan by a key revoked yesterday was applied:\n{}",
            r.transcript()
        );
        assert_eq!(before, env.repository_state());
    }

    // ---------------------------------------------------------------------------------------
    // odd numbers
    // ---------------------------------------------------------------------------------------

    /// `before_image.retention_days` is planner-written and only bounded below (the policy's
    /// minimum). `gc` adds it to a date with `+`, which panics past year 9999: one applied plan
    /// with `retention_days: 4294967295` makes every later `guardctl gc` of the repository panic.
    #[test]
    fn a_forged_retention_cannot_make_gc_panic() {
        let env = planned();
        forge(&env, |p| p.before_image.retention_days = u32::MAX);
        let _ = env.run("bob", &["approve", "plan.json", "--yes"]);
        let before = env.repository_state();
        let r = env.run("alice", &["apply", "plan.json"]);
        // An absurd retention is refused as an invalid plan (a derived field guardctl recomputes),
        // changing nothing; gc still runs.
        assert_eq!(r.code, 65, "{}", r.transcript());
        assert_eq!(
            before,
            env.repository_state(),
            "a refused apply changed the repository"
        );
        let gc = env.run("alice", &["gc"]);
        assert_eq!(gc.code, 0, "{}", gc.transcript());
    }

    /// Overstating lost work is allowed (apply refuses only *more* lost work than planned), but
    /// the summary and side effects add the counts with `+`: two branches that each "lose"
    /// u64::MAX/2+1 commits overflow — a panic in debug builds (exit 101) and, in release builds
    /// (overflow wraps), a summary saying "0 unmerged commits lost" for a plan that loses work.
    #[test]
    fn overstated_commit_counts_that_overflow_are_refused_not_a_panic_or_a_wrapped_summary() {
        let env = standard_repo();
        let r = env.run(
            "alice",
            &[
                "plan",
                "stale-branches",
                "--gone",
                "--older-than",
                "60d",
                "--include-unmerged",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
        let p = payload_of(&env.repo.join("plan.json"));
        let losing = p["affected"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["loses_work"] == true)
            .count();
        assert!(losing >= 1, "{p}");
        // The hostile planner computes the summary with wrapping sums (what a release build
        // does); the plan hash is recomputed as usual.
        crate::hostile::forge_raw(&env, |p| {
            use guardctl::plan::ResourceFacts;
            for a in &mut p.affected {
                if let ResourceFacts::Branch(b) = &mut a.facts
                    && b.history.loses_work
                {
                    b.history.commits_not_in_base = u64::MAX;
                }
            }
            // and one more, so the sum overflows even with a single losing branch
            let mut extra = p.affected.iter().find(|a| a.loses_work()).unwrap().clone();
            extra.refname = "refs/heads/feature/live".into();
            if let ResourceFacts::Branch(b) = &mut extra.facts {
                b.config.clear();
                b.upstream = None;
            }
            p.affected.push(extra);
            p.plan_hash =
                guardctl::plan::hash::plan_hash(&p.repository, &p.operation, &p.policy_hash, &p.affected)
                    .unwrap();
        });
        let r = env.run("bob", &["show", "plan.json"]);
        // Refused as an invalid plan (65), never a panic (101).
        assert_eq!(r.code, 65, "show:\n{}", r.transcript());
        assert!(
            r.code == 65 || !r.stdout.contains(" 0 unmerged commits lost"),
            "{}",
            r.transcript()
        );
    }
}
