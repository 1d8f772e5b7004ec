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
fn wildcard_principal_in_allowed_signers_is_refused_naming_the_line() {
    let env = TestEnv::new();
    let signers = env.path().join("wild");
    std::fs::write(
        &signers,
        format!("# team\n*@example.com {}\n", env.public_key("alice")),
    )
    .unwrap();
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("alice"))
        .arg("--allowed-signers")
        .arg(&signers)
        .arg("whoami");
    let r = run(c);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("line 2"), "{}", r.stderr);
    assert!(r.stderr.contains("wildcards"), "{}", r.stderr);
}

#[test]
fn allowed_signers_found_through_env_git_config_and_work_tree() {
    let env = TestEnv::new();
    let file = env.allowed_signers();
    let principal = |c: &mut std::process::Command| {
        c.arg("--key").arg(env.key("alice")).args(["--json", "whoami"]);
        let v = run(std::mem::replace(c, std::process::Command::new("true"))).json();
        (
            v["allowed_signers_source"].clone(),
            v["principals"][0]["principals"][0].clone(),
        )
    };
    std::fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    std::fs::copy(&file, env.repo.join(".guardctl/allowed_signers")).unwrap();
    assert_eq!(principal(&mut env.command()).0, ".guardctl/allowed_signers");
    env.git(&["config", "gpg.ssh.allowedSignersFile", file.to_str().unwrap()]);
    assert_eq!(
        principal(&mut env.command()).0,
        "git config gpg.ssh.allowedSignersFile"
    );
    let mut c = env.command();
    c.env("GUARDCTL_ALLOWED_SIGNERS", &file);
    let (src, who) = principal(&mut c);
    assert_eq!(src, "GUARDCTL_ALLOWED_SIGNERS");
    assert_eq!(who, "alice@example.com");
}
