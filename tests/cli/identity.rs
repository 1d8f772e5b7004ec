//! Identity that just works (issue 15): git's own signing config is used inside and outside a
//! repository; `whoami` prints the allowed-signers line and its file and says whether the key
//! can sign; no agent, a key not in the agent and a passphrase fail at once, never prompting.

use crate::fixtures::{Run, TestEnv, run, standard_repo};
use std::fs;
use std::process::Command;

/// A global git config (`GIT_CONFIG_GLOBAL`) with git's own SSH signing set-up: Bob's key
/// and the test allowed-signers file.
fn global_config(env: &TestEnv, key: &std::path::Path) -> std::path::PathBuf {
    let path = env.path().join("gitconfig");
    fs::write(
        &path,
        format!(
            "[user]\n\temail = bob@example.com\n\tsigningKey = {}\n[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tallowedSignersFile = {}\n",
            key.display(),
            env.allowed_signers().display()
        ),
    )
    .unwrap();
    path
}

/// guardctl with no --key/--allowed-signers, in `dir`, with `vars`.
fn bare(env: &TestEnv, dir: &std::path::Path, vars: &[(&str, &std::ffi::OsStr)], args: &[&str]) -> Run {
    let mut c = env.command();
    c.current_dir(dir);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.args(args);
    run(c)
}

#[test]
fn the_same_key_and_principal_inside_and_outside_a_repository_from_global_git_config() {
    let env = standard_repo();
    let cfg = global_config(&env, &env.key("bob"));
    let vars = [("GIT_CONFIG_GLOBAL", cfg.as_os_str())];
    let downloads = env.path().join("Downloads");
    fs::create_dir_all(&downloads).unwrap();
    let inside = bare(&env, &env.repo, &vars, &["--json", "whoami"]);
    let outside = bare(&env, &downloads, &vars, &["--json", "whoami"]);
    assert_eq!(inside.code, 0, "{}", inside.transcript());
    assert_eq!(outside.code, 0, "{}", outside.transcript());
    let (i, o) = (inside.json(), outside.json());
    assert_eq!(i["fingerprint"], o["fingerprint"]);
    assert_eq!(o["key_source"], "git config user.signingKey");
    assert_eq!(o["principals"][1]["principals"][0], "bob@example.com");
    assert!(
        !outside.stderr.contains("generated"),
        "no new key: {}",
        outside.stderr
    );

    // The reviewer approves a downloaded plan file there, and it counts.
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::copy(env.repo.join("plan.json"), downloads.join("plan.json")).unwrap();
    let r = bare(&env, &downloads, &vars, &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::copy(downloads.join("plan.json"), env.repo.join("plan.json")).unwrap();
    assert_eq!(env.run("alice", &["verify", "plan.json"]).code, 0);
}

#[test]
fn whoami_prints_the_exact_allowed_signers_line_and_its_file() {
    let env = standard_repo();
    // Mallory's key is in no line: the line to add names git's user.email.
    let cfg = global_config(&env, &env.key("mallory"));
    let vars = [("GIT_CONFIG_GLOBAL", cfg.as_os_str())];
    let r = bare(&env, &env.repo, &vars, &["whoami"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let line = format!("bob@example.com {}", public_without_comment(&env, "mallory"));
    assert!(
        r.stdout.contains(&format!(
            "To give this key a principal, add this line to {}:\n  {line}\n",
            env.allowed_signers().display()
        )),
        "{}",
        r.stdout
    );
    let v = bare(&env, &env.repo, &vars, &["--json", "whoami"]).json();
    assert_eq!(v["allowed_signers_line"], line);
    // Nothing configured: where to put the file, and how to point git at it.
    let r = bare(
        &env,
        &env.repo,
        &[],
        &["--key", env.key("mallory").to_str().unwrap(), "--json", "whoami"],
    );
    let v = r.json();
    assert_eq!(v["allowed_signers_file"], "~/.config/git/allowed_signers");
    assert!(
        v["allowed_signers_then"]
            .as_str()
            .unwrap()
            .starts_with("git config --global gpg.ssh.allowedSignersFile ~/.config/git/allowed_signers")
    );
    // The command comes after the line it refers to (issue 34 item 13).
    let r = bare(
        &env,
        &env.repo,
        &[],
        &["--key", env.key("mallory").to_str().unwrap(), "whoami"],
    );
    assert!(
        r.stdout
            .contains("add this line to ~/.config/git/allowed_signers:\n"),
        "{}",
        r.stdout
    );
    let line_at = r.stdout.find("ssh-ed25519").unwrap();
    let then_at = r.stdout.find("then: git config").unwrap();
    assert!(line_at < then_at, "{}", r.stdout);
}

fn public_without_comment(env: &TestEnv, name: &str) -> String {
    env.public_key(name)
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_public_key_without_an_agent_fails_at_once_and_whoami_says_why() {
    let env = standard_repo();
    let public = format!("{}.pub", env.key("alice").display());
    let signers = env.allowed_signers();
    let args = [
        "--key",
        public.as_str(),
        "--allowed-signers",
        signers.to_str().unwrap(),
    ];
    let mut plan: Vec<&str> = args.to_vec();
    plan.extend(["--json", "plan", "stale-branches"]);
    let r = bare(&env, &env.repo, &[], &plan);
    assert_eq!(r.code, 64, "{}", r.transcript());
    let v = r.json();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no agent is running"),
        "{v:#}"
    );
    assert!(
        v["error"]["details"]["hint"]
            .as_str()
            .unwrap()
            .contains("ssh-add"),
        "{v:#}"
    );
    assert!(!env.repo.join("plan.json").exists(), "nothing planned");
    let mut who: Vec<&str> = args.to_vec();
    who.push("whoami");
    let r = bare(&env, &env.repo, &[], &who);
    // What whoami shows, then the error a signing command would give, with its code.
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("cannot sign"), "{}", r.stderr);
    assert!(
        r.stdout.contains("the private key must be in ssh-agent"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("no agent is running"), "{}", r.stdout);
}

#[test]
fn a_key_missing_from_a_running_agent_fails_at_once() {
    let env = standard_repo();
    let sock = env.path().join("agent.sock");
    let mut agent = crate::fixtures::ssh_agent(&sock);
    let public = format!("{}.pub", env.key("alice").display());
    let vars = [("SSH_AUTH_SOCK", sock.as_os_str())];
    let signers = env.allowed_signers();
    let r = bare(
        &env,
        &env.repo,
        &vars,
        &[
            "--key",
            &public,
            "--allowed-signers",
            signers.to_str().unwrap(),
            "plan",
            "stale-branches",
        ],
    );
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("the agent does not hold it"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "hint: add the key to your agent: ssh-add {}",
            env.key("alice").display()
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn a_passphrase_protected_key_without_a_terminal_fails_at_once_and_never_prompts() {
    let env = standard_repo();
    let key = env.path().join("locked_ed25519");
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "secret", "-C", "locked", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(ok.success());
    let signers = env.allowed_signers();
    let r = bare(
        &env,
        &env.repo,
        &[],
        &[
            "--key",
            key.to_str().unwrap(),
            "--allowed-signers",
            signers.to_str().unwrap(),
            "--json",
            "plan",
            "stale-branches",
        ],
    );
    assert_eq!(r.code, 64, "{}", r.transcript());
    let v = r.json();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("passphrase-protected"),
        "{v:#}"
    );
    assert!(!r.stderr.contains("incorrect passphrase"), "{}", r.stderr);
}

/// Issue 34 item 5: a reviewer approves a downloaded plan outside any repository, where the
/// team's identities (its committed allowed-signers file) cannot be read. The refusal says so
/// and how to point at them (64), not what a `namespaces=` restriction would mean; with the
/// team's file named, the same approval works.
#[test]
fn approving_outside_a_repository_says_the_teams_identities_could_not_be_read() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let downloads = env.path().join("Downloads");
    fs::create_dir_all(&downloads).unwrap();
    fs::copy(env.repo.join("plan.json"), downloads.join("plan.json")).unwrap();
    let approve = |with_signers: bool| {
        let mut c = env.command();
        c.current_dir(&downloads).arg("--key").arg(env.key("bob"));
        if with_signers {
            c.arg("--allowed-signers").arg(env.allowed_signers());
        }
        c.args(["approve", "plan.json", "--yes"]);
        run(c)
    };
    let r = approve(false);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("team's identities"), "{}", r.stderr);
    assert!(
        r.stderr.contains("-C <clone>") && r.stderr.contains("--allowed-signers"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("namespaces="), "{}", r.stderr);
    let r = approve(true);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Issue 34 item 9: with no key configured and keys in ssh-agent, the error lists the agent's
/// keys and the exact git config lines that sign with one; nothing is generated.
#[test]
fn no_configured_key_lists_the_agents_keys_and_the_git_config_lines_to_use_one() {
    let env = standard_repo();
    let sock = env.path().join("agent.sock");
    let mut agent = crate::fixtures::ssh_agent(&sock);
    let added = Command::new("ssh-add")
        .arg(env.key("bob"))
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .unwrap();
    let vars = [("SSH_AUTH_SOCK", sock.as_os_str())];
    let r = bare(&env, &env.repo, &vars, &["whoami"]);
    let json = bare(&env, &env.repo, &vars, &["--json", "plan", "stale-branches"]);
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(added.status.success(), "{added:?}");
    assert_eq!(r.code, 64, "{}", r.transcript());
    let blob = public_without_comment(&env, "bob");
    assert!(r.stderr.contains("ssh-agent holds 1 key"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("git config --global user.signingKey 'key::{blob}'")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("git config --global gpg.format ssh"),
        "{}",
        r.stderr
    );
    assert_eq!(json.code, 64, "{}", json.transcript());
    let v = json.json();
    assert!(
        v["error"]["details"]["agent_keys"][0]
            .as_str()
            .unwrap()
            .starts_with(&blob),
        "{v:#}"
    );
    assert!(!env.home.join(".local/share/guardctl/id_ed25519").exists());
}
