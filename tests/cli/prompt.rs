//! The approval prompt on a real terminal (a tmux pane, on a private tmux server): Ctrl-C,
//! Ctrl-D and a wrong answer each end it with a newline and a plain word, exit 1 (declined)
//! and record nothing; the right digits approve.

use crate::apply::planned;
use crate::fixtures::{NOW, TestEnv, plan_id_of};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Pane {
    socket: std::path::PathBuf,
}

impl Pane {
    fn tmux(&self, args: &[&str]) -> String {
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
    fn wait_for(&self, text: &str) -> String {
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
    let q = |p: &Path| format!("'{}'", p.display());
    let command = format!(
        "cd {} && env -i PATH=\"$PATH\" HOME={} TZ=UTC GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GUARDCTL_TEST_NOW={NOW} {} --key {} --allowed-signers {} approve plan.json; echo \"EXIT=$?\"; sleep 60",
        q(&env.repo),
        q(&env.home),
        q(Path::new(env!("CARGO_BIN_EXE_guardctl"))),
        q(&env.key("bob")),
        q(&env.allowed_signers()),
    );
    let pane = Pane {
        socket: env.path().join(format!("tmux-{name}")),
    };
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
        &command,
    ]);
    pane.wait_for("type the first 8 hex digits of its id:");
    for k in keys {
        pane.tmux(&["send-keys", "-t", "t", k]);
    }
    pane.wait_for("EXIT=")
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
