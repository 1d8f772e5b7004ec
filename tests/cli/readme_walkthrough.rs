//! The README's "Your own repository in five minutes", run as written (issue 34): its shell
//! blocks, in order, by two people with their own home directories, git configs, ssh-agents
//! and keys (Bob's passphrase-protected, added to his agent through `SSH_ASKPASS`, as a
//! person types it), in one clone of a bare remote. Each person runs the set-up block; Alice
//! runs the team block (its `AAAA…` placeholders filled in with the two public keys); then
//! each `alice$` / `bob$` line of the loop runs as that person, Bob's `approve` on a real
//! terminal (a tmux pane) where he types the plan id's first digits. Every command must exit
//! 0, and the repository must show what each step says.
//!
//! The clock is the real one: nothing here sets `GUARDCTL_TEST_NOW`.

use crate::fixtures::{TestEnv, remote_repo};
use crate::prompt::Pane;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The README section's shell blocks, in order.
fn five_minute_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("## Your own repository in five minutes")
        .expect("the README's five-minute section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(at) = rest.find("```sh\n") {
        let body = &rest[at + 6..];
        let end = body.find("```").unwrap();
        blocks.push(body[..end].to_string());
        rest = &body[end..][3..];
    }
    blocks
}

/// One person: a home directory, an ssh-agent, the passphrase their askpass answers.
struct Person {
    name: &'static str,
    home: PathBuf,
    agent: std::process::Child,
    socket: PathBuf,
    askpass: PathBuf,
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = self.agent.kill();
        let _ = self.agent.wait();
    }
}

impl Person {
    fn new(env: &TestEnv, name: &'static str, passphrase: &str) -> Person {
        let home = env.path().join(format!("home-{name}"));
        // A person who uses SSH has a ~/.ssh; git knows who they are.
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            format!("[user]\n\tname = {name}\n\temail = {name}@example.com\n"),
        )
        .unwrap();
        let askpass = env.path().join(format!("askpass-{name}"));
        std::fs::write(&askpass, format!("#!/bin/sh\necho '{passphrase}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
        let socket = env.path().join(format!("agent-{name}.sock"));
        let agent = crate::fixtures::ssh_agent(&socket);
        Person {
            name,
            home,
            agent,
            socket,
            askpass,
        }
    }

    /// The environment of this person's shell: their home (and so their global git config),
    /// their agent, guardctl on the PATH; nothing of the test's own.
    fn vars(&self, bin: &Path) -> Vec<(&'static str, String)> {
        vec![
            (
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
            ),
            ("HOME", self.home.display().to_string()),
            ("SSH_AUTH_SOCK", self.socket.display().to_string()),
            ("SSH_ASKPASS", self.askpass.display().to_string()),
            ("SSH_ASKPASS_REQUIRE", "force".to_string()),
            ("GIT_CONFIG_NOSYSTEM", "1".to_string()),
            ("TZ", "UTC".to_string()),
        ]
    }

    /// Run a shell line as this person in `dir`; (exit code, stdout, stderr).
    fn sh(&self, bin: &Path, dir: &Path, line: &str) -> (i32, String, String) {
        let mut c = Command::new("bash");
        c.current_dir(dir)
            .env_clear()
            .arg("-c")
            .arg(line)
            .stdin(std::process::Stdio::null());
        for (k, v) in self.vars(bin) {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Run a shell line as this person on a terminal (a tmux pane): the pane.
    fn on_terminal(&self, bin: &Path, dir: &Path, line: &str, socket: PathBuf) -> Pane {
        let vars: Vec<String> = self
            .vars(bin)
            .into_iter()
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let command = format!(
            "cd '{}' && env -i {} bash -c {}; echo \"EXIT=$?\"; sleep 60",
            dir.display(),
            vars.join(" "),
            shell_quote(line)
        );
        Pane::start(socket, &command)
    }

    fn public_key(&self) -> String {
        let text = std::fs::read_to_string(self.home.join(".ssh/id_ed25519.pub")).unwrap();
        text.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn branches(env: &TestEnv) -> Vec<String> {
    env.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"])
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_readmes_five_minute_walkthrough_runs_as_written_for_two_people() {
    let blocks = five_minute_blocks();
    assert_eq!(blocks.len(), 3, "set-up, team file, loop: {blocks:#?}");
    let env = remote_repo();
    // guardctl on the PATH, as `cargo install` puts it.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_guardctl"), bin.join("guardctl")).unwrap();
    let alice = Person::new(&env, "alice", "");
    let bob = Person::new(&env, "bob", "correct horse battery");
    let clone = &env.repo;

    // Each person, once: a key, git's SSH signing set-up, the key in the agent, whoami.
    for p in [&alice, &bob] {
        let (code, out, err) = p.sh(&bin, clone, &blocks[0]);
        assert_eq!(code, 0, "{}'s set-up:\n{out}\n{err}", p.name);
        assert!(out.contains("can sign     ready"), "{}: {out}", p.name);
        assert!(out.contains("To give this key a principal"), "{}: {out}", p.name);
    }
    // Bob's key needs its passphrase (read only through his agent here); Alice's does not.
    let opens = |p: &Person| {
        Command::new("ssh-keygen")
            .args(["-y", "-P", "", "-f"])
            .arg(p.home.join(".ssh/id_ed25519"))
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(!opens(&bob), "Bob's key must be passphrase-protected");
    assert!(opens(&alice));

    // The team file, committed and pushed by Alice, placeholders filled in.
    let team = blocks[1]
        .replace(
            "'alice@example.com ssh-ed25519 AAAA…'",
            &format!("'alice@example.com {}'", alice.public_key()),
        )
        .replace(
            "'bob@example.com ssh-ed25519 AAAA…'",
            &format!("'bob@example.com {}'", bob.public_key()),
        );
    assert_ne!(
        team, blocks[1],
        "the placeholders are where the test fills them in"
    );
    let (code, out, err) = alice.sh(&bin, clone, &team);
    assert_eq!(code, 0, "team file:\n{out}\n{err}");
    let (_, out, _) = bob.sh(&bin, clone, "guardctl whoami");
    assert!(out.contains("guardctl-approval  bob@example.com"), "{out}");

    // The loop, line by line, as whoever the prompt names.
    let before = branches(&env);
    let mut applied_receipt = String::new();
    for (n, line) in blocks[2].lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let (who, command) = line.split_once('$').expect("a prompt naming who runs it");
        let person = match who.trim() {
            "alice" => &alice,
            "bob" => &bob,
            other => panic!("who is {other}?"),
        };
        let command = command.trim();
        if command.contains("guardctl approve") {
            let pane = person.on_terminal(&bin, clone, command, env.path().join(format!("tmux-{n}")));
            pane.wait_for("type the first 8 hex digits of its id:");
            let id = crate::fixtures::plan_id_of(&clone.join("plan.json"));
            pane.keys(&[&id["sha256:".len()..][..8], "Enter"]);
            let screen = pane.wait_for("EXIT=");
            assert!(screen.contains("EXIT=0"), "{line}:\n{screen}");
            continue;
        }
        let (code, out, err) = person.sh(&bin, clone, command);
        assert_eq!(code, 0, "{line}:\n{out}\n{err}");
        let args: Vec<&str> = command.split('#').next().unwrap().split_whitespace().collect();
        match args[1] {
            "plan" => assert!(out.contains("delete 3 branches"), "{out}\n{err}"),
            "apply" if applied_receipt.is_empty() => {
                for gone in ["feature/done", "fix/old"] {
                    assert!(!branches(&env).contains(&gone.to_string()), "{gone}: {out}");
                }
                applied_receipt = out;
            }
            "apply" => {
                // A `Replayed:` line, then the recorded result byte for byte.
                assert!(out.starts_with("Replayed: "), "{out}");
                assert!(out.ends_with(&applied_receipt), "the same receipt:\n{out}");
                assert!(err.contains("already applied"), "the replay says so: {err}");
            }
            "rollback" => assert_eq!(branches(&env), before, "{out}\n{err}"),
            "log" => {
                for event in ["approve", "apply", "rollback"] {
                    assert!(out.contains(event), "{event} in the log:\n{out}");
                }
            }
            other => panic!("a step the test does not check: {other}"),
        }
    }
    assert!(!applied_receipt.is_empty(), "the loop applied the plan");
}
