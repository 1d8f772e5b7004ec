//! Attacks on three changes of issue 34 (item 3: one passphrase per command through a private
//! ssh-agent; item 7: squash evidence; the shadowed allowed-signers warning), as a hostile
//! planner with a valid key, a careless teammate and a confused agent. The tests of findings
//! failed before their fixes; those marked "Held" pin an attack that found nothing.

use crate::fixtures::standard_repo;
use crate::hostile::{forge, refused_everywhere};
use std::fs;

/// A hostile planner re-signs the plan of the merged branches with squash "evidence" on a
/// branch that is merged for real (not squash-merged): nothing re-derives it (`compare` only
/// looks at it when the branch is judged squash-merged), so `show` presents invented evidence
/// and `verify` passes. It is a plan guardctl would never write: refused (65) everywhere.
#[test]
fn squash_evidence_on_a_merged_branch_is_refused() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let other = env.git(&["rev-parse", "main~1"]).trim().to_string();
    forge(&env, |p| {
        for a in &mut p.affected {
            if let guardctl::plan::ResourceFacts::Branch(b) = &mut a.facts {
                b.squashed_into = Some(guardctl::plan::model::SquashedInto {
                    commit: other.clone(),
                    subject: "Reviewed and landed by the security team".into(),
                });
            }
        }
    });
    // Each of show, approve, verify and apply: 65 naming the field, the repository as it was.
    refused_everywhere(&env, 65, "squashed_into");
}

/// The commit id of the squash evidence is planner-written text like its subject, but `show`
/// prints its first 12 characters unescaped: terminal control sequences reach the reviewer's
/// terminal (here: an OSC 8 hyperlink opener and a clear-screen).
#[test]
fn control_sequences_in_the_squash_evidence_commit_never_reach_the_terminal() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let esc = "\x1b[2J\x1b[H\x1b]0;x\x07\u{202E}";
    forge(&env, |p| {
        if let guardctl::plan::ResourceFacts::Branch(b) = &mut p.affected[0].facts {
            b.squashed_into = Some(guardctl::plan::model::SquashedInto {
                commit: esc.into(),
                subject: "Squashed".into(),
            });
        }
    });
    for (who, args) in [
        ("bob", &["show", "plan.json", "--all"][..]),
        ("alice", &["verify", "plan.json"][..]),
        ("bob", &["approve", "plan.json", "--yes"][..]),
    ] {
        let r = env.run(who, args);
        for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            assert!(
                !text.contains(['\x1b', '\x07', '\u{202E}']),
                "{args:?} printed a raw control character on {stream}:\n{}",
                text.escape_debug()
            );
        }
    }
}

/// Held: changing only the subject of honest evidence (same commit) is drift too, and the
/// drift message escapes the planner's subject.
#[test]
fn a_misstated_squash_subject_alone_is_drift() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--squash-merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    forge(&env, |p| {
        for a in &mut p.affected {
            if let guardctl::plan::ResourceFacts::Branch(b) = &mut a.facts
                && let Some(s) = &mut b.squashed_into
            {
                s.subject = "Approved by security (#42)\x1b]0;x\x07".into();
            }
        }
    });
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["verify", "plan.json"]);
    assert_eq!(r.code, 10, "{}", r.transcript());
    assert!(r.stderr.contains("squashed_into"), "{}", r.stderr);
    assert!(
        !r.stderr.contains(['\x1b', '\x07']),
        "{}",
        r.stderr.escape_debug()
    );
}

/// Issue 34 item 3: the applier's private agent holds their unlocked key for the whole apply,
/// and an exec plan's approved command (and its before-image command) run unsandboxed in the
/// middle of it, as the same user: the socket's 0700 directory under the data dir keeps out
/// other users, not them. A command written by a hostile planner finds the socket and signs
/// whatever it likes (here: in the approval namespace) with a key whose passphrase it never
/// saw. The agent must not sign for anyone else while the command runs.
#[test]
fn the_approved_command_cannot_sign_with_the_appliers_unlocked_key() {
    use crate::prompt::{guardctl_on_a_terminal, locked_key};
    let env = crate::fixtures::TestEnv::new();
    let leak = env.path().join("leak");
    fs::create_dir_all(&leak).unwrap();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    let script = format!(
        "#!/bin/sh\n# Tidies the build cache.\nif [ \"$1\" = --dry-run ]; then echo 'would tidy the cache'; exit 0; fi\n\
         for s in {home}/.local/share/guardctl/unlock-*/agent.sock; do\n  [ -S \"$s\" ] || continue\n  \
         echo \"$s\" > {leak}/socket\n  \
         SSH_AUTH_SOCK=\"$s\" /usr/bin/ssh-add -L > {leak}/keys 2>/dev/null\n  \
         printf forged | SSH_AUTH_SOCK=\"$s\" /usr/bin/ssh-keygen -Y sign -n guardctl-approval -U -f {leak}/keys > {leak}/sig 2>/dev/null\n\
         done\necho tidied\n",
        home = env.home.display(),
        leak = leak.display(),
    );
    fs::write(env.repo.join("scripts/tidy.sh"), script).unwrap();
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--executor",
            "carol@example.com",
            "--preview",
            "sh scripts/tidy.sh --dry-run",
            "--",
            "sh",
            "scripts/tidy.sh",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());

    // Carol applies with her passphrase-protected key, which no agent of hers holds.
    let carol = locked_key(&env, "carol");
    let pane = guardctl_on_a_terminal(&env, "apply-exec", &carol, "apply plan.json");
    pane.wait_for("Enter passphrase");
    pane.tmux(&["send-keys", "-t", "t", "secret", "Enter"]);
    let screen = pane.wait_for("EXIT=");
    drop(pane);
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        leak.join("socket").exists(),
        "the command did not find the agent's socket (the attack did not run):\n{screen}"
    );
    let keys = fs::read_to_string(leak.join("keys")).unwrap_or_default();
    let sig = fs::read_to_string(leak.join("sig")).unwrap_or_default();
    assert!(
        !sig.contains("BEGIN SSH SIGNATURE"),
        "the approved command signed with carol's unlocked key:\n{sig}"
    );
    assert!(
        !keys.contains(env.public_key("carol").split_whitespace().nth(1).unwrap()),
        "the approved command listed carol's unlocked key from guardctl's agent:\n{keys}"
    );
}

/// Held: guardctl killed with SIGKILL while its private agent holds the key: the agent (run
/// as `ssh-agent -a SOCKET cat`) is gone within its 10-second parent check.
#[test]
fn the_private_agent_dies_with_a_killed_guardctl() {
    use crate::prompt::{guardctl_on_a_terminal, locked_key};
    let env = crate::fixtures::TestEnv::new();
    let spy = env.path().join("spy");
    fs::create_dir_all(&spy).unwrap();
    fs::create_dir_all(env.repo.join("scripts")).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --dry-run ]; then echo 'would wait'; exit 0; fi\n\
         echo $PPID > {spy}/guardctl.pid\nls -d {home}/.local/share/guardctl/unlock-*/agent.sock > {spy}/socket\n/bin/sleep 40\n",
        spy = spy.display(),
        home = env.home.display(),
    );
    fs::write(env.repo.join("scripts/wait.sh"), script).unwrap();
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "sh scripts/wait.sh --dry-run",
            "--",
            "sh",
            "scripts/wait.sh",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(env.run("bob", &["approve", "plan.json", "--yes"]).code, 0);
    let alice = locked_key(&env, "alice");
    let pane = guardctl_on_a_terminal(&env, "apply-killed", &alice, "apply plan.json");
    pane.wait_for("Enter passphrase");
    pane.tmux(&["send-keys", "-t", "t", "secret", "Enter"]);
    let start = std::time::Instant::now();
    while !spy.join("socket").exists() || fs::read_to_string(spy.join("socket")).unwrap().is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{}",
            pane.wait_for("")
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let socket = fs::read_to_string(spy.join("socket")).unwrap().trim().to_string();
    let agents = || {
        let out = std::process::Command::new("pgrep")
            .args(["-af", "ssh-agent"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&socket))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(!agents().is_empty(), "no agent found for {socket}");
    let pid = fs::read_to_string(spy.join("guardctl.pid"))
        .unwrap()
        .trim()
        .to_string();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(std::time::Duration::from_secs(15));
    assert_eq!(agents(), Vec::<String>::new(), "the agent outlived guardctl");
    drop(pane);
}

/// Held: approvals and rejections racing in one clone (each signing its audit entry for the
/// log as it stands, under the store lock held until it appends it) leave one intact chain
/// holding every decision.
#[test]
fn concurrent_decisions_in_one_clone_keep_the_audit_chain_intact() {
    let env = standard_repo();
    let n = 4;
    for i in 0..n {
        let out = format!("plan{i}.json");
        let r = env.run(
            "alice",
            &["plan", "stale-branches", "--merged", "--gone", "--out", &out],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let mut children = Vec::new();
    for i in 0..n {
        for (who, verb) in [("bob", "approve"), ("carol", "reject")] {
            let mut c = env.command();
            c.arg("--key")
                .arg(env.key(who))
                .arg("--allowed-signers")
                .arg(env.allowed_signers())
                .args([verb, &format!("plan{i}.json")]);
            c.arg(if verb == "reject" { "--comment=no" } else { "--yes" });
            children.push(
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let r = env.run("carol", &["--json", "log", "--verify"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        r.json()["entries"].as_array().unwrap().len(),
        2 * n,
        "{}",
        r.stdout
    );
}

/// The work-tree copy of `.guardctl/allowed_signers` is compared with the trusted identities
/// to warn about it, read with `std::fs::read`: following links, without a size cap, blocking.
/// A planner who shares the work tree (an agent planning where its human reviews) makes it a
/// FIFO (or a link to /dev/zero: memory without bound) and every `show`, `verify`, `approve`
/// and `apply` there hangs. It must be read like every other untrusted file (no link, a
/// regular file, bounded), and anything else only warned about.
#[test]
fn a_fifo_as_the_work_tree_signers_file_does_not_hang_the_preview() {
    let env = crate::hostile::planned();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    let fifo = env.repo.join(".guardctl/allowed_signers");
    let ok = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    for args in [&["show", "plan.json"][..], &["verify", "plan.json"][..]] {
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key("alice"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if start.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let status = status.unwrap_or_else(|| panic!("{args:?} hung on a FIFO in the work tree"));
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(status.code() != Some(70), "{args:?}: {stderr}");
        assert!(
            stderr.contains("allowed_signers in the work tree"),
            "{args:?}: {stderr}"
        );
    }
}
