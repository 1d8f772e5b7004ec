//! Issue 27's preview sandbox, MCP `out` and approving-key refusal, attacked by a hostile
//! agent, a hostile planner and a careless teammate. `broke_*` tests were failing before
//! their fix; `held_*` tests pin attacks that were already denied.

use crate::fixtures::{TestEnv, file_tree, run, standard_repo};
use std::fs;

/// Plan an exec with `preview` as `user`, extra env `vars`; the preview's text.
fn preview_as(env: &TestEnv, vars: &[(&str, &str)], extra: &[&str], preview: &str) -> String {
    let out = env.path().join("p.json");
    let mut args = vec!["plan", "exec", "--preview", preview, "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "true"]);
    let r = env.run_env("alice", vars, &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let payload = crate::fixtures::payload_of(&out);
    payload["operation"]["inputs"]["preview_output"]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `preview_as` of `sh probe.sh`, `script` written to the work tree's `probe.sh`.
fn preview(env: &TestEnv, script: &str) -> String {
    fs::write(env.repo.join("probe.sh"), script).unwrap();
    preview_as(env, &[], &[], "sh probe.sh")
}

/// `try <what> cmd...`: one line, `<what> allowed` or `<what> denied`.
const TRY: &str = "try() { what=$1; shift; if \"$@\" >/dev/null 2>&1; then echo \"$what allowed\"; else echo \"$what denied\"; fi; }\n";

/// The host's TLS keys live in /etc/ssl/private (root and the ssl-cert group may read it):
/// the allowlist bound all of /etc/ssl, so a preview run as root read the host's keys.
#[test]
fn broke_a_preview_cannot_read_the_hosts_tls_keys() {
    let env = TestEnv::new();
    let text = preview(
        &env,
        &format!("{TRY}try ssl-private ls /etc/ssl/private\ntry pki-private ls /etc/pki/tls/private\n"),
    );
    assert_eq!(text, "ssl-private denied\npki-private denied\n");
}

/// A careless teammate's dotfiles repository: the work tree is $HOME, so binding the work
/// tree bound ~/.ssh, guardctl's data directory, the agent's socket and the `--key` file.
/// Each is hidden now; the rest of the work tree stays readable.
#[test]
fn broke_secrets_inside_the_work_tree_are_hidden() {
    let env = TestEnv::new();
    let home = env.repo.clone();
    fs::create_dir_all(home.join(".ssh")).unwrap();
    fs::write(home.join(".ssh/id_ed25519"), "PRIVATE\n").unwrap();
    fs::create_dir_all(home.join(".local/share/guardctl")).unwrap();
    fs::write(home.join(".local/share/guardctl/key"), "PRIVATE\n").unwrap();
    fs::create_dir_all(home.join("keys")).unwrap();
    let key = home.join("keys/deploy");
    fs::copy(env.key("alice"), &key).unwrap();
    fs::copy(
        format!("{}.pub", env.key("alice").display()),
        home.join("keys/deploy.pub"),
    )
    .unwrap();
    let socket = home.join(".agent.sock");
    let agent = std::process::Command::new("ssh-agent")
        .arg("-a")
        .arg(&socket)
        .arg("-D")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ssh-agent");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _agent = Kill(agent);
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let added = std::process::Command::new("ssh-add")
        .arg(env.key("bob"))
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(added.status.success());
    let script = format!(
        "{TRY}try ssh grep -q PRIVATE .ssh/id_ed25519\ntry data grep -q PRIVATE .local/share/guardctl/key\ntry key grep -q PRIVATE keys/deploy\n\
         try agent env SSH_AUTH_SOCK=.agent.sock ssh-add -l\ntry readme cat README\n"
    );
    fs::write(home.join("probe.sh"), script).unwrap();
    let mut c = env.command();
    c.env("HOME", &home)
        .env("SSH_AUTH_SOCK", &socket)
        .arg("--key")
        .arg(&key)
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args([
            "plan",
            "exec",
            "--preview",
            "sh probe.sh",
            "-o",
            "../p.json",
            "--",
            "true",
        ]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let payload = crate::fixtures::payload_of(&env.path().join("p.json"));
    assert_eq!(
        payload["operation"]["inputs"]["preview_output"]["text"],
        "ssh denied\ndata denied\nkey denied\nagent denied\nreadme allowed\n"
    );
}

/// A preview's leftovers: a daemon it started outlived it (and could go on writing an
/// unlinked file), and its /tmp was the host's disk, so a preview could fill it. The command
/// now is the first process of a PID namespace, and /tmp a bounded tmpfs.
#[test]
fn broke_nothing_outlives_a_preview_and_its_tmp_is_bounded() {
    let env = TestEnv::new();
    let marker = format!("{}.{}", std::process::id(), env.path().to_string_lossy().len());
    let script = format!("(exec >/dev/null 2>&1 </dev/null; sleep 99{marker}) & stat -f -c '%b %S' /tmp\n");
    let text = preview(&env, &script);
    let words: Vec<u64> = text.split_whitespace().map(|w| w.parse().unwrap()).collect();
    assert!(words[0] * words[1] <= 1 << 30, "/tmp holds {text}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let alive = fs::read_dir("/proc").unwrap().flatten().any(|p| {
        fs::read(p.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&format!("99{marker}")))
    });
    assert!(!alive, "the preview's daemon outlived it");
}

/// Links in the work tree lead nowhere (their targets are not in the sandbox), `.git` and its
/// guardctl state are read-only, signals reach nothing outside, neither UDP nor TCP has a route,
/// and a work tree's own `.guardctl/policy.toml` (not committed) cannot widen the sandbox.
#[test]
fn held_links_state_signals_udp_and_an_uncommitted_policy() {
    let env = standard_repo();
    fs::create_dir_all(env.home.join(".ssh")).unwrap();
    fs::write(env.home.join(".ssh/id_ed25519"), "PRIVATE\n").unwrap();
    std::os::unix::fs::symlink(env.home.join(".ssh/id_ed25519"), env.repo.join("leak")).unwrap();
    std::os::unix::fs::symlink(env.home.join(".ssh"), env.repo.join("leakdir")).unwrap();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    let policy = format!(
        "version = 1\n[sandbox]\nnetwork = true\nread = [\"{}\"]\n",
        env.home.display()
    );
    fs::write(env.repo.join(".guardctl/policy.toml"), policy).unwrap();
    let r = env.run("alice", &["plan", "stale-branches", "-o", "../target.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "../target.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = file_tree(&env.repo.join(".git"));
    let script = format!(
        "{TRY}try link cat leak\ntry linkdir ls leakdir/\ntry home ls {home}\n\
         try state-write sh -c 'echo x >> .git/guardctl/audit.log'\ntry git-write sh -c 'echo x > .git/hooks/pre-commit'\n\
         try kill-outside kill -0 {pid}\n\
         try udp bash -c 'echo x > /dev/udp/127.0.0.1/53'\ntry tcp bash -c 'exec 3<>/dev/tcp/127.0.0.1/22'\n",
        home = env.home.display(),
        pid = std::process::id(),
    );
    let text = preview(&env, &script);
    let want = [
        "link",
        "linkdir",
        "home",
        "state-write",
        "git-write",
        "kill-outside",
        "udp",
        "tcp",
    ]
    .map(|w| format!("{w} denied\n"))
    .concat();
    assert_eq!(text, want);
    assert_eq!(
        file_tree(&env.repo.join(".git")),
        before,
        "the preview wrote into .git"
    );
}

/// A preview that fakes the launcher's failure (its marker on stderr, exit 125) where the
/// trusted policy says `required = false` gets an error, never an unsandboxed re-run.
#[test]
fn held_a_faked_launcher_failure_is_an_error_not_an_unsandboxed_run() {
    let env = TestEnv::new();
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n[sandbox]\nrequired = false\n",
        "Alice",
        1,
    );
    let script = "[ -d \"$HOME\" ] && echo unsandboxed; echo 'guardctl sandbox: cannot enter' >&2; exit 125";
    let r = env.run_env(
        "alice",
        &[],
        &["plan", "exec", "--env", "HOME", "--preview", script, "--", "true"],
    );
    assert_ne!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stderr.contains("sandbox could not be built"),
        "{}",
        r.transcript()
    );
    assert!(!env.repo.join("plan.json").exists());
}

/// `guardctl mcp` refused a key that may approve *now*, but not one whose line only becomes
/// valid later: a line `valid-after` tomorrow with no namespaces is an approving key tomorrow,
/// for a server that is still running.
#[test]
fn broke_a_key_that_may_approve_later_is_refused_too() {
    let env = standard_repo();
    env.allow_signer(
        "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"",
        "mallory",
    );
    env.allow_signer("later@example.com valid-after=\"20260602\"", "mallory");
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("mallory"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("mcp");
    let r = run(c);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("as later@example.com"), "{}", r.transcript());
}

/// `out` spellings an agent might try beyond the MCP tests' list: through `/proc/self/root`,
/// doubled and trailing slashes, `.git` behind a `//`, a `plans` directory that is a symbolic
/// link out of the work tree, a directory. Every one is refused and nothing changes.
#[test]
fn held_mcp_out_spellings() {
    use std::io::{BufRead, Write};
    let env = standard_repo();
    env.allow_signer(
        "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"",
        "mallory",
    );
    let outside = env.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.repo.join("plans")).unwrap();
    fs::create_dir_all(env.repo.join("sub")).unwrap();
    let top = env.repo.canonicalize().unwrap();
    let outs = [
        format!("/proc/self/root{}/x.json", top.display()),
        "plans/x.json".into(),
        "plans//x.json".into(),
        ".git//x.json".into(),
        "/.git/x.json".into(),
        "sub/".into(),
        "sub//".into(),
        format!("{}//.git/x.json", top.display()),
        format!("{}/.guardctl/allowed_signers", top.display()),
    ];
    let before = file_tree(env.path());
    let mut c = env.command();
    c.arg("--key")
        .arg(env.key("mallory"))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    lines.next().unwrap().unwrap();
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, out) in outs.iter().enumerate() {
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "plan_stale_branches", "arguments": {"out": out}}}),
        );
        let reply: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(reply["result"]["isError"], true, "out = {out}: {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("\"usage\""), "out = {out}: {text}");
    }
    drop(stdin);
    child.wait().unwrap();
    assert_eq!(file_tree(env.path()), before, "a refused `out` wrote a file");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}
