//! The preview sandbox, tried as a hostile agent would: a preview (at plan time and when
//! apply re-runs it) and a verify command that try to read the user's keys, reach their
//! ssh-agent, use the network, write outside their private /tmp or into the work tree, and
//! approve the agent's own plan with the human's key. Each is denied, the plan records the
//! denial or is refused, and nothing is approved. A control shows a legitimate preview
//! (listing files, git read commands) still works.

use crate::fixtures::{TestEnv, standard_repo};
use std::fs;
use std::path::{Path, PathBuf};

/// A preview script that tries everything it must not be able to do, printing one line
/// each: `<what> allowed` or `<what> denied`. `$HOME` and `$SSH_AUTH_SOCK` are allowlisted
/// by the planner (`--env`): an agent can name any variable.
fn probe_script(env: &TestEnv, outside: &Path) -> String {
    let bob_key = env.key("bob");
    let guardctl_key = env.home.join(".local/share/guardctl/key");
    format!(
        r#"try() {{ what=$1; shift; if "$@" >/dev/null 2>&1; then echo "$what allowed"; else echo "$what denied"; fi; }}
try read-ssh-key cat "$HOME/.ssh/id_ed25519"
try read-guardctl-key cat '{gk}'
try read-bob-key cat '{bk}'
try list-home ls "$HOME"
try agent env SSH_AUTH_SOCK="$SSH_AUTH_SOCK" ssh-add -l
try write-outside sh -c 'echo x > {outside}'
try write-home sh -c 'echo x > "$HOME/pwned"'
try write-worktree sh -c 'echo x > README'
try write-tmp sh -c 'echo x > /tmp/scratch && cat /tmp/scratch'
"#,
        gk = guardctl_key.display(),
        bk = bob_key.display(),
        outside = outside.display(),
    )
}

/// A path outside `/tmp` (the test's own directories are all under `/tmp`, which inside the
/// sandbox is the command's private directory: a write there lands in the private copy).
fn outside_tmp() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(dir).unwrap();
    let unique = format!(
        "sandbox-outside-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    );
    let path = dir.join(unique.replace(['(', ')'], ""));
    let _ = fs::remove_file(&path);
    path
}

/// An ssh-agent on a socket under the test's directory, holding bob's key.
struct Agent {
    socket: PathBuf,
    pid: String,
}

impl Agent {
    fn start(env: &TestEnv) -> Agent {
        let socket = env.path().join("agent.sock");
        let out = std::process::Command::new("ssh-agent")
            .arg("-a")
            .arg(&socket)
            .arg("-s")
            .output()
            .expect("ssh-agent");
        let text = String::from_utf8_lossy(&out.stdout);
        let pid = text
            .split("SSH_AGENT_PID=")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .unwrap_or_default()
            .to_string();
        let added = std::process::Command::new("ssh-add")
            .arg(env.key("bob"))
            .env("SSH_AUTH_SOCK", &socket)
            .output()
            .expect("ssh-add");
        assert!(
            added.status.success(),
            "{}",
            String::from_utf8_lossy(&added.stderr)
        );
        Agent { socket, pid }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(&self.pid).output();
    }
}

/// The user's secrets where an agent would look for them.
fn plant_secrets(env: &TestEnv) {
    fs::create_dir_all(env.home.join(".ssh")).unwrap();
    fs::write(env.home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    let data = env.home.join(".local/share/guardctl");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("key"), "PRIVATE KEY\n").unwrap();
}

/// `plan exec [extra…] --preview PREVIEW -o OUT -- true` as alice, with `vars`.
fn plan_preview(
    env: &TestEnv,
    vars: &[(&str, &str)],
    extra: &[&str],
    preview: &str,
    out: &str,
) -> crate::fixtures::Run {
    let mut args = vec!["plan", "exec"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--preview", preview, "-o", out, "--", "true"]);
    env.run_env("alice", vars, &args)
}

fn preview_text(plan: &Path) -> String {
    let payload = crate::fixtures::payload_of(plan);
    payload["operation"]["inputs"]["preview_output"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

const EXPECTED: [&str; 9] = [
    "read-ssh-key denied",
    "read-guardctl-key denied",
    "read-bob-key denied",
    "list-home denied",
    "agent denied",
    "write-outside denied",
    "write-home denied",
    "write-worktree denied",
    "write-tmp allowed",
];

#[test]
fn a_preview_reads_no_key_reaches_no_agent_and_writes_only_its_private_tmp() {
    let env = TestEnv::new();
    plant_secrets(&env);
    let agent = Agent::start(&env);
    let outside = outside_tmp();
    fs::write(env.repo.join("probe.sh"), probe_script(&env, &outside)).unwrap();
    let sock = agent.socket.to_string_lossy().into_owned();
    let r = plan_preview(
        &env,
        &[("SSH_AUTH_SOCK", &sock)],
        &["--env", "HOME", "--env", "SSH_AUTH_SOCK"],
        "sh probe.sh",
        "plan.json",
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let lines: Vec<String> = preview_text(&env.repo.join("plan.json"))
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines, EXPECTED, "the preview's view of the machine");
    assert!(!outside.exists(), "the preview wrote outside its /tmp");
    assert!(!env.home.join("pwned").exists(), "the preview wrote into HOME");
    assert_eq!(fs::read_to_string(env.repo.join("README")).unwrap(), "initial\n");
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout
            .contains("  sandboxed   preview and verify run without keys"),
        "{}",
        show.stdout
    );
}

#[test]
fn at_apply_the_preview_and_the_verify_command_are_sandboxed_too() {
    let env = TestEnv::new();
    plant_secrets(&env);
    let agent = Agent::start(&env);
    let outside = outside_tmp();
    fs::write(env.repo.join("probe.sh"), probe_script(&env, &outside)).unwrap();
    // The preview tries again once armed (only at apply); the verify command always.
    fs::write(
        env.repo.join("preview.sh"),
        "echo one-resource\n[ -f .git/armed ] && sh probe.sh > /tmp/out && grep -q allowed /tmp/out && cat /tmp/out >&2\nexit 0\n",
    )
    .unwrap();
    let sock = agent.socket.to_string_lossy().into_owned();
    let vars = [("SSH_AUTH_SOCK", sock.as_str())];
    let args = [
        "plan",
        "exec",
        "--env",
        "HOME",
        "--env",
        "SSH_AUTH_SOCK",
        "--preview",
        "sh preview.sh",
        "--verify",
        "sh probe.sh | grep -v '^write-tmp' | grep allowed; true",
        "--",
        "true",
    ];
    let r = env.run_env("alice", &vars, &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    fs::write(env.repo.join(".git/armed"), "").unwrap();
    let r = env.run_env("alice", &vars, &["--json", "apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The verify command printed every attempt that was allowed (but the private /tmp): none.
    let v = &r.json()["receipt"]["exec"]["verification"];
    assert_eq!(v["observed"], serde_json::json!([]), "{v}");
    assert!(!outside.exists(), "a sandboxed command wrote outside its /tmp");
    assert!(!env.home.join("pwned").exists());
    assert_eq!(fs::read_to_string(env.repo.join("README")).unwrap(), "initial\n");
}

/// The whole bypass this sandbox exists for: an agent plans a deletion, then plans an exec
/// whose preview runs `guardctl approve` on it with the human's key file, and with the human's
/// ssh-agent. Both fail inside the sandbox; the deletion stays unapproved.
#[test]
fn a_preview_cannot_approve_the_agents_own_plan_with_the_humans_key() {
    let env = standard_repo();
    let agent = Agent::start(&env);
    let r = env.run("alice", &["plan", "stale-branches", "-o", "target.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let bin = Path::new(env!("CARGO_BIN_EXE_guardctl"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bob_pub = env.public_key("bob");
    // In the preview string itself, so that guardctl is pinned and runs (from its private
    // copy) inside the sandbox: the attempt fails for want of the key, not of the program.
    let preview = format!(
        "t=target; guardctl --key '{key}' --allowed-signers '{signers}' approve \"$t.json\" --yes >/dev/null 2>&1; echo key-file=$?; \
         echo '{bob_pub}' > /tmp/bob.pub; \
         SSH_AUTH_SOCK='{sock}' guardctl --key /tmp/bob.pub --allowed-signers '{signers}' approve \"$t.json\" --yes 2>&1; echo agent=$?",
        key = env.key("bob").display(),
        signers = env.allowed_signers().display(),
        sock = agent.socket.display(),
    );
    let r = plan_preview(&env, &[("PATH", &path)], &[], &preview, "exec.json");
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = preview_text(&env.repo.join("exec.json"));
    assert!(!text.contains("key-file=0"), "{text}");
    assert!(!text.contains("agent=0"), "{text}");
    let r = env.run("alice", &["--json", "verify", "target.json"]);
    assert_eq!(r.code, 12, "{}", r.transcript());
    let approvals = crate::fixtures::payload_of(&env.repo.join("target.json"));
    assert!(approvals.get("approvals").is_none());
    let file: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(env.repo.join("target.json")).unwrap()).unwrap();
    assert_eq!(
        file["approvals"],
        serde_json::json!([]),
        "the preview approved the plan"
    );
}

#[test]
fn a_preview_has_no_network_unless_the_trusted_policy_allows_it() {
    let env = TestEnv::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo connected; else echo no-network; fi\n"
    );
    fs::write(env.repo.join("net.sh"), script).unwrap();
    // bash, for /dev/tcp.
    let plan = |out: &str| plan_preview(&env, &[], &[], "bash net.sh", out);
    let r = plan("closed.json");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(preview_text(&env.repo.join("closed.json")), "no-network\n");
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n[sandbox]\nnetwork = true\n",
        "Alice",
        1,
    );
    let r = plan("open.json");
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(preview_text(&env.repo.join("open.json")), "connected\n");
}

#[test]
fn a_legitimate_preview_lists_files_and_reads_git() {
    let env = standard_repo();
    fs::create_dir_all(env.repo.join("trash")).unwrap();
    fs::write(env.repo.join("trash/a"), "a").unwrap();
    let r = plan_preview(
        &env,
        &[],
        &[],
        "ls trash; git branch --list 'feature/*' --format='%(refname:short)'; git log -1 --format=%s main",
        "plan.json",
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = preview_text(&env.repo.join("plan.json"));
    let want = "a\nfeature/done\nfeature/gone-merged\nfeature/gone-work\nfeature/live\nfeature/squashed\n";
    assert!(text.starts_with(want), "{text}");
    assert_eq!(text.lines().count(), 7, "{text}");
}

/// Where the kernel cannot sandbox (a test hook stands in for a kernel without user
/// namespaces), a preview is refused unless the trusted policy opts out; then the plan and
/// `show` say plainly that it ran unsandboxed.
#[test]
fn without_a_sandbox_previews_are_refused_unless_the_policy_opts_out() {
    let env = TestEnv::new();
    let no = [("GUARDCTL_TEST_NO_SANDBOX", "1")];
    let args = ["plan", "exec", "--preview", "echo x", "--", "true"];
    let r = env.run_env("alice", &no, &args);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("cannot sandbox the preview"), "{}", r.stderr);
    assert!(r.stderr.contains("[sandbox] required = false"), "{}", r.stderr);
    assert!(!env.repo.join("plan.json").exists());
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n[sandbox]\nrequired = false\n",
        "Alice",
        1,
    );
    let r = env.run_env("alice", &no, &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let payload = crate::fixtures::payload_of(&env.repo.join("plan.json"));
    assert_eq!(payload["operation"]["inputs"]["preview_unsandboxed"], true);
    let show = env.run("alice", &["show", "plan.json"]);
    assert!(
        show.stdout.contains("the preview ran UNSANDBOXED"),
        "{}",
        show.stdout
    );
    let json = env.run("alice", &["--json", "show", "plan.json"]);
    assert_eq!(
        json.json()["exec"]["preview_sandbox"],
        "unsandboxed",
        "{}",
        json.stdout
    );
    // Where the sandbox exists, the same policy still sandboxes.
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "echo x",
            "-o",
            "p2.json",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let payload = crate::fixtures::payload_of(&env.repo.join("p2.json"));
    assert!(
        payload["operation"]["inputs"]
            .get("preview_unsandboxed")
            .is_none()
    );
}

/// `plan -o`: never guardctl's state or trust files; not over a file that is not a plan, or a
/// plan that carries approvals, without `--force`; every refused file byte-identical.
#[test]
fn plan_out_refuses_state_trust_and_foreign_files_and_approved_plans_without_force() {
    let env = standard_repo();
    let plan = |args: &[&str]| {
        let mut all = vec!["plan", "stale-branches"];
        all.extend_from_slice(args);
        env.run("alice", &all)
    };
    let r = plan(&["-o", "approved.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "approved.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let audit = env.repo.join(".git/guardctl/audit.log");
    let signers = env.allowed_signers();
    let key = env.key("alice");
    let state = env.repo.join(".git/guardctl/plans/x.json");
    for target in [&audit, &signers, &key, &state] {
        let before = fs::read(target).ok();
        for extra in [&[][..], &["--force"][..]] {
            let mut args = vec!["-o", target.to_str().unwrap()];
            args.extend_from_slice(extra);
            let r = plan(&args);
            assert_eq!(r.code, 64, "{}: {}", target.display(), r.transcript());
            assert!(
                r.stderr.contains("guardctl's own state or a trust file"),
                "{}",
                r.stderr
            );
            assert_eq!(fs::read(target).ok(), before, "{} changed", target.display());
        }
    }
    let approved = fs::read(env.repo.join("approved.json")).unwrap();
    let r = plan(&["-o", "approved.json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("holds a plan with 1 approval"), "{}", r.stderr);
    assert_eq!(fs::read(env.repo.join("approved.json")).unwrap(), approved);
    let r = plan(&["-o", "README"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("is not a guardctl plan"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(env.repo.join("README")).unwrap(), "initial\n");
    // An unapproved plan is replaced as before; --force replaces the others.
    assert_eq!(plan(&[]).code, 0);
    assert_eq!(plan(&[]).code, 0, "re-planning over an unapproved plan");
    let r = plan(&["-o", "approved.json", "--force"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = plan(&["-o", "README", "--force"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Issue 27's preview sandbox attacked by a hostile agent, a hostile planner and a careless
/// teammate. `broke_*` tests were failing before their fix; `held_*` tests pin attacks that
/// were already denied.
mod escapes {
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
        let script =
            format!("(exec >/dev/null 2>&1 </dev/null; sleep 99{marker}) & stat -f -c '%b %S' /tmp\n");
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
        let script =
            "[ -d \"$HOME\" ] && echo unsandboxed; echo 'guardctl sandbox: cannot enter' >&2; exit 125";
        let r = env.run_env(
            "alice",
            &[],
            &["plan", "exec", "--env", "HOME", "--preview", script, "--", "true"],
        );
        assert_eq!(r.code, 1, "{}", r.transcript());
        assert!(
            r.stderr.contains("sandbox could not be built"),
            "{}",
            r.transcript()
        );
        assert!(!env.repo.join("plan.json").exists());
    }
}

#[test]
fn plan_out_refuses_a_file_with_a_plan_envelope_that_does_not_verify() {
    // Found by a review of the lighter `-o` guard (it reads the envelope, not the payload):
    // an edited plan is not a plan, and is replaced only with --force.
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "-o", "edited.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let path = env.repo.join("edited.json");
    let mut file: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    file["payload"] = serde_json::Value::String("bm90IHRoZSBzaWduZWQgcGF5bG9hZA==".into());
    fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let before = fs::read(&path).unwrap();
    let r = env.run("alice", &["plan", "stale-branches", "-o", "edited.json"]);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert!(r.stderr.contains("is not a guardctl plan"), "{}", r.stderr);
    assert_eq!(fs::read(&path).unwrap(), before);
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "-o", "edited.json", "--force"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
}
