//! `guardctl whoami` and the allowed-signers file's strictness.

use crate::fixtures::{TestEnv, run};

#[test]
fn whoami_names_key_fingerprint_and_principal() {
    let env = TestEnv::new();
    let r = env.run("alice", &["whoami"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.contains("fingerprint  SHA256:"), "{}", r.stdout);
    assert!(
        r.stdout.contains("guardctl-plan      alice@example.com"),
        "{}",
        r.stdout
    );
    let r = env.run("mallory", &["whoami"]);
    assert!(
        r.stdout.contains("guardctl-plan      (no principal)"),
        "{}",
        r.stdout
    );
}

#[test]
fn namespaces_option_limits_what_a_key_may_sign() {
    let env = TestEnv::new();
    let signers = env.path().join("limited");
    std::fs::write(
        &signers,
        format!(
            "agent@ci namespaces=\"guardctl-plan\" {}\n",
            env.public_key("mallory")
        ),
    )
    .unwrap();
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("mallory"))
        .arg("--allowed-signers")
        .arg(&signers)
        .args(["--json", "whoami"]);
    let v = run(c).json();
    assert_eq!(v["principals"][0]["namespace"], "guardctl-plan");
    assert_eq!(v["principals"][0]["principals"][0], "agent@ci");
    assert_eq!(v["principals"][1]["principals"].as_array().unwrap().len(), 0);
}

#[test]
fn wildcard_principal_lines_are_ignored_with_a_warning_naming_the_line() {
    let env = TestEnv::new();
    let signers = env.path().join("wild");
    std::fs::write(
        &signers,
        format!(
            "# team\n*@example.com {}\nalice@example.com {}\n",
            env.public_key("mallory"),
            env.public_key("alice")
        ),
    )
    .unwrap();
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(&signers)
        .arg("whoami");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stderr.contains("line 2 ignored"), "{}", r.stderr);
    assert!(r.stderr.contains("wildcards"), "{}", r.stderr);
    assert!(
        r.stdout.contains("guardctl-plan      alice@example.com"),
        "{}",
        r.stdout
    );
}

#[test]
fn principals_differing_only_by_case_refuse_the_file_naming_both_lines() {
    let env = TestEnv::new();
    env.allow_signer("Alice@Example.com", "mallory");
    let r = env.run("mallory", &["whoami"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("line 4"), "{}", r.stderr);
    assert!(r.stderr.contains("differs only by case"), "{}", r.stderr);
    assert!(r.stderr.contains("line 1"), "{}", r.stderr);
}

#[test]
fn identities_come_from_flag_env_admin_config_or_the_default_branch_only() {
    let env = TestEnv::new();
    let file = env.allowed_signers();
    let whoami = |c: &mut std::process::Command| {
        c.arg("--key").arg(env.key("alice")).args(["--json", "whoami"]);
        let r = run(std::mem::replace(c, std::process::Command::new("true")));
        (r.json(), r.stderr)
    };
    // Planner-writable places are never read: the work tree and the repository's config.
    std::fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    std::fs::copy(&file, env.repo.join(".guardctl/allowed_signers")).unwrap();
    env.git(&["config", "gpg.ssh.allowedSignersFile", file.to_str().unwrap()]);
    let (v, stderr) = whoami(&mut env.command());
    assert_eq!(v["allowed_signers_source"], serde_json::Value::Null, "{v}");
    assert_eq!(v["principals"][0]["principals"].as_array().unwrap().len(), 0);
    assert!(stderr.contains("repository's own config"), "{stderr}");
    assert!(
        stderr.contains("in the work tree differs from the trusted identities"),
        "{stderr}"
    );
    // Committed on the default branch of a repository with no remote: trusted (like the
    // policy), and said to be the planner's to change.
    env.git(&["add", ".guardctl/allowed_signers"]);
    env.git(&["commit", "-q", "-m", "identities"]);
    let (v, stderr) = whoami(&mut env.command());
    assert_eq!(
        v["allowed_signers_source"],
        "the local default branch (local: the planner controls it)"
    );
    // The work-tree copy is the committed file: nothing to warn about.
    assert!(!stderr.contains("work tree"), "{stderr}");
    assert_eq!(v["allowed_signers"], "refs/heads/main:.guardctl/allowed_signers");
    assert_eq!(v["principals"][0]["principals"][0], "alice@example.com");
    // System or global git config wins over the committed file.
    let global = env.path().join("gitconfig");
    let admin = env.path().join("admin_signers");
    std::fs::write(&admin, format!("ops@example.com {}\n", env.public_key("alice"))).unwrap();
    std::fs::write(
        &global,
        format!("[gpg \"ssh\"]\n\tallowedSignersFile = {}\n", admin.display()),
    )
    .unwrap();
    let mut c = env.command();
    c.env("GIT_CONFIG_GLOBAL", &global);
    let (v, stderr) = whoami(&mut c);
    assert_eq!(
        v["allowed_signers_source"],
        "system or global git config gpg.ssh.allowedSignersFile"
    );
    assert_eq!(v["principals"][0]["principals"][0], "ops@example.com");
    // Issue 34 item 1: the global file silently replaced the team's; now it is said, once,
    // naming both, and whoami advises the team file, not the personal one.
    assert_eq!(
        stderr.matches("shadows the team's committed").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains(&admin.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("refs/heads/main:.guardctl/allowed_signers"),
        "{stderr}"
    );
    assert!(!stderr.contains("work tree"), "{stderr}");
    assert_eq!(v["allowed_signers_file"], ".guardctl/allowed_signers");
    assert_eq!(
        v["allowed_signers_then"],
        "commit it to the default branch and push"
    );
    // The caller's own choice wins over everything.
    let mut c = env.command();
    c.env("GIT_CONFIG_GLOBAL", &global)
        .env("GUARDCTL_ALLOWED_SIGNERS", &file);
    let (v, stderr) = whoami(&mut c);
    assert_eq!(v["allowed_signers_source"], "GUARDCTL_ALLOWED_SIGNERS");
    assert_eq!(v["principals"][0]["principals"][0], "alice@example.com");
    // The same bytes as the team file: nothing is shadowed.
    assert!(!stderr.contains("shadows"), "{stderr}");
}
