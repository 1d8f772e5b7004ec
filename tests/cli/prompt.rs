//! The approval prompt on a real terminal (a tmux pane, on a private tmux server): Ctrl-C,
//! Ctrl-D and a wrong answer each end it with a newline and a plain word, exit 1 (declined)
//! and record nothing; the right digits approve.

use crate::apply::planned;
use crate::fixtures::{NOW, TestEnv, plan_id_of};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux pane on a private tmux server (its own socket), killed on drop.
pub(crate) struct Pane {
    socket: std::path::PathBuf,
}

impl Pane {
    /// A pane of 200×50 running the shell line `command`, on the server at `socket`.
    pub(crate) fn start(socket: std::path::PathBuf, command: &str) -> Pane {
        let pane = Pane { socket };
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "200",
            "-y",
            "50",
            command,
        ]);
        pane
    }

    /// Type `keys` (tmux key names: "Enter", "C-c", or text).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux (the prompt tests need it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "t"])
    }

    /// Wait until the pane shows `text`; the screen then.
    pub(crate) fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "`{text}` never appeared:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        // Only this test's own server, by its socket.
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// `guardctl approve plan.json` as Bob in a tmux pane: press `keys`, return the screen once
/// the command has exited.
fn approve_on_a_terminal(env: &TestEnv, name: &str, keys: &[&str]) -> String {
    let pane = guardctl_on_a_terminal(env, name, &env.key("bob"), "approve plan.json");
    pane.wait_for("type the first 8 hex digits of its id:");
    for k in keys {
        pane.tmux(&["send-keys", "-t", "t", k]);
    }
    pane.wait_for("EXIT=")
}

/// `guardctl --key KEY … ARGS` started in a tmux pane of its own (no ssh-agent), its exit
/// status printed as `EXIT=<code>` when it ends.
pub(crate) fn guardctl_on_a_terminal(env: &TestEnv, name: &str, key: &Path, args: &str) -> Pane {
    let q = |p: &Path| format!("'{}'", p.display());
    let command = format!(
        "cd {} && env -i PATH=\"$PATH\" HOME={} TZ=UTC GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GUARDCTL_TEST_NOW={NOW} {} --key {} --allowed-signers {} {args}; echo \"EXIT=$?\"; sleep 60",
        q(&env.repo),
        q(&env.home),
        q(Path::new(env!("CARGO_BIN_EXE_guardctl"))),
        q(key),
        q(&env.allowed_signers()),
    );
    Pane::start(env.path().join(format!("tmux-{name}")), &command)
}

/// The lines from the prompt on: the prompt line ends (a newline), then the error.
fn after_prompt(screen: &str) -> Vec<String> {
    let lines: Vec<String> = screen.lines().map(|l| l.trim_end().to_string()).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("type the first 8 hex digits"))
        .unwrap();
    lines[at..].iter().filter(|l| !l.is_empty()).cloned().collect()
}

fn approvals(env: &TestEnv) -> usize {
    crate::apply::plan_value(env)["approvals"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn ctrl_c_ctrl_d_and_a_wrong_answer_end_the_prompt_cleanly_and_record_nothing() {
    let env = planned();
    for (name, keys, word) in [
        ("ctrl-c", &["1234", "C-c"][..], "error: approval cancelled"),
        (
            "ctrl-d",
            &["C-d"][..],
            "error: approval declined: no answer (end of input)",
        ),
        (
            "wrong",
            &["deadbeef", "Enter"][..],
            "error: approval declined: the digits did not match the plan id",
        ),
    ] {
        let screen = approve_on_a_terminal(&env, name, keys);
        let lines = after_prompt(&screen);
        // What was typed is echoed after the prompt; keys that arrive before the prompt has
        // switched the terminal to raw mode are echoed by the terminal itself, which may break
        // them over two lines ("dea" / "dbeef"), so only the error's line is pinned exactly.
        let error_at = lines.iter().position(|l| l.starts_with("error:"));
        assert_eq!(
            error_at.map(|i| lines[i].as_str()),
            Some(word),
            "{name}: the word on a line of its own:\n{screen}"
        );
        assert!(
            !lines[0].contains("error:"),
            "{name}: the error is not on the prompt's line:\n{screen}"
        );
        assert!(screen.contains("EXIT=1"), "{name}: {screen}");
        assert_eq!(approvals(&env), 0, "{name}: nothing recorded");
    }
    // The plan id's first 8 hex digits approve.
    let digits: String = plan_id_of(&env.repo.join("plan.json"))["sha256:".len()..][..8].to_string();
    let screen = approve_on_a_terminal(&env, "right", &[&digits, "Enter"]);
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(approvals(&env), 1);
}

/// A copy of `user`'s test key protected by the passphrase `secret` (the same public key, so
/// the same principal).
pub(crate) fn locked_key(env: &TestEnv, user: &str) -> std::path::PathBuf {
    let copy = env.path().join(format!("{user}_locked"));
    std::fs::copy(env.key(user), &copy).unwrap();
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-p", "-P", "", "-N", "secret", "-f"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
    copy
}

fn audit_entries(env: &TestEnv) -> usize {
    let log = env.run("carol", &["--json", "log"]).json();
    log["entries"].as_array().map_or(0, Vec::len)
}

/// Issue 34 item 3: a passphrase-protected key that no agent holds is asked for once per
/// command, however many signatures the command makes (approve: the decision and its audit
/// entry; apply: its records, receipt and audit entries); a passphrase that is not given
/// leaves nothing behind, so a retry starts clean.
#[test]
fn a_passphrase_is_asked_once_per_command_and_nothing_is_recorded_without_it() {
    let env = planned();
    let digits: String = plan_id_of(&env.repo.join("plan.json"))["sha256:".len()..][..8].to_string();

    // No passphrase (an empty answer ends ssh-add's prompt): no approval, no audit entry.
    let bob = locked_key(&env, "bob");
    let pane = guardctl_on_a_terminal(&env, "no-passphrase", &bob, "approve plan.json");
    pane.wait_for("type the first 8 hex digits of its id:");
    pane.tmux(&["send-keys", "-t", "t", &digits, "Enter"]);
    pane.wait_for("Enter passphrase");
    pane.tmux(&["send-keys", "-t", "t", "Enter"]);
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(screen.contains("was not unlocked"), "{screen}");
    assert_eq!(approvals(&env), 0, "{screen}");
    assert_eq!(audit_entries(&env), 0, "{screen}");
    drop(pane);

    // The passphrase once: the approval and its audit entry.
    let pane = guardctl_on_a_terminal(&env, "approve-once", &bob, "approve plan.json");
    pane.wait_for("type the first 8 hex digits of its id:");
    pane.tmux(&["send-keys", "-t", "t", &digits, "Enter"]);
    pane.wait_for("Enter passphrase");
    pane.tmux(&["send-keys", "-t", "t", "secret", "Enter"]);
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(screen.matches("Enter passphrase").count(), 1, "{screen}");
    assert_eq!(approvals(&env), 1);
    assert_eq!(audit_entries(&env), 1);
    drop(pane);

    // Apply signs several records, the receipt and audit entries: one prompt.
    let alice = locked_key(&env, "alice");
    let pane = guardctl_on_a_terminal(&env, "apply-once", &alice, "apply plan.json");
    pane.wait_for("Enter passphrase");
    pane.tmux(&["send-keys", "-t", "t", "secret", "Enter"]);
    let screen = pane.wait_for("EXIT=");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(screen.matches("Enter passphrase").count(), 1, "{screen}");
    assert!(audit_entries(&env) >= 2, "{screen}");
    let left = env.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
    assert!(!left.lines().any(|b| b == "fix/old"), "{left}");
}
