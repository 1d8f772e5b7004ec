//! The trial's pure parts: the manifest's format and order, quoting, the stderr tail and the
//! "blocked" reading. Trials of real lines are in tests/cli/trial.rs (they need the built
//! binary as the sandbox's launcher).

use super::*;

fn change(what: ChangeKind, verb: &str, subject: &str, detail: &str) -> Change {
    Change {
        what,
        verb: verb.into(),
        path_or_ref: subject.into(),
        detail: detail.into(),
    }
}

fn effect(destroyed: Vec<Change>, gate: Vec<Change>) -> Effect {
    Effect {
        outcome: Outcome::Finished { status: 0 },
        destroyed,
        gate,
        created: 0,
        exempt: 0,
        moved: 0,
        stderr_tail: String::new(),
        blocked: None,
    }
}

#[test]
fn the_manifest_is_one_sorted_line_per_change() {
    let e = effect(
        vec![
            change(ChangeKind::Delete, "delete file", "src/a.rs", "sha256:ab"),
            change(ChangeKind::DeleteRef, "delete branch", "refs/heads/x", "1a2b"),
            change(ChangeKind::DropReflog, "drop reflog", "refs/stash", "2 entries"),
        ],
        vec![change(ChangeKind::Gate, "change git config", "alias.zap", "")],
    );
    assert_eq!(
        e.manifest(),
        "delete branch refs/heads/x 1a2b\n\
         delete file src/a.rs sha256:ab\n\
         drop reflog refs/stash 2 entries\n\
         gate: change git config alias.zap\n"
    );
    assert!(!e.destroys_nothing());
    assert!(effect(Vec::new(), Vec::new()).destroys_nothing());
    assert_eq!(effect(Vec::new(), Vec::new()).manifest(), "");
}

#[test]
fn a_path_that_could_forge_a_line_is_quoted() {
    let c = change(ChangeKind::Delete, "delete file", "a b\nfake line\\", "sha256:00");
    assert_eq!(c.line(), "delete file \"a b\\nfake line\\\\\" sha256:00");
    assert_eq!(quote("plain/path.rs"), "plain/path.rs");
    assert_eq!(quote("say \"hi\""), "\"say \\\"hi\\\"\"");
    assert_eq!(quote("esc\u{1b}"), "\"esc\\u{1b}\"");
}

#[test]
fn a_long_manifest_ends_with_a_count() {
    let many: Vec<Change> = (0..MANIFEST_LINES + 5)
        .map(|i| {
            change(
                ChangeKind::Delete,
                "delete file",
                &format!("f{i:06}"),
                "sha256:00",
            )
        })
        .collect();
    let m = effect(many, Vec::new()).manifest();
    assert_eq!(m.lines().count(), MANIFEST_LINES + 1);
    assert!(m.ends_with("\nand 5 more\n"), "{}", &m[m.len() - 40..]);
}

#[test]
fn the_tail_is_the_last_lines_escaped_without_the_launchers_words() {
    let text: String = (0..30).map(|i| format!("line {i}\n")).collect::<String>()
        + "bad \u{1b}]0;title\u{7}\n\nguardctl sandbox: timed out\n";
    let t = tail(&text, 20);
    assert_eq!(t.lines().count(), 20);
    assert!(t.starts_with("line 11\n"), "{t}");
    assert!(!t.contains('\u{1b}'));
    assert!(!t.contains("timed out"));
}

#[test]
fn blocked_says_what_the_line_needed() {
    let hidden = [PathBuf::from("/home/u/.ssh")];
    assert_eq!(
        blocked("curl: (6) Could not resolve host: example.com", &hidden).as_deref(),
        Some("the network")
    );
    assert_eq!(
        blocked("cat: /home/u/.ssh/id_ed25519: Permission denied", &hidden).as_deref(),
        Some("a hidden path: /home/u/.ssh")
    );
    assert_eq!(
        blocked("cat: /sys/class/net/eth0/address: No such file", &hidden).as_deref(),
        Some("/sys or /run")
    );
    assert_eq!(
        blocked("bash: line 1: kill: (4242) - No such process", &hidden).as_deref(),
        Some("processes of the machine (the trial sees only its own)")
    );
    assert!(blocked("touch: cannot touch 'x': Read-only file system", &hidden).is_some());
    assert_eq!(
        blocked(
            "    sock.connect(sa)\nPermissionError: [Errno 13] Permission denied",
            &hidden
        )
        .as_deref(),
        Some("the network (connections are refused in the trial)")
    );
    assert_eq!(
        blocked(
            "    _socket.socket.__init__(self)\nPermissionError: [Errno 13] Permission denied",
            &hidden
        )
        .as_deref(),
        Some("a UNIX socket (the trial allows none)")
    );
    assert!(
        blocked(
            "touch: cannot touch '/var/x': Value too large for defined data type",
            &hidden
        )
        .is_some()
    );
    assert_eq!(blocked("error: pathspec 'x' did not match", &hidden), None);
}

#[test]
fn bash_comes_from_the_lines_path() {
    let env = vec![("PATH".to_string(), OsString::from("/nonexistent:/usr/bin:/bin"))];
    let b = bash(&env);
    assert!(b.ends_with("bash") && b.is_absolute(), "{}", b.display());
    assert_eq!(bash(&[]), Path::new("/bin/bash"));
}
