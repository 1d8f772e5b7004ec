//! `guardctl hook claude-code` fed Claude Code's PreToolUse payloads as the harness sends them
//! (the recorded shape below), and `guardctl guard`: a command that destroys nothing passes
//! untouched; one that does is denied with a plan of exactly what it would destroy, which a
//! second key approves and the agent's `guardctl apply` carries out with the command's own
//! effect. Every failure denies (exit 2): a hook that fails open is no gate.

use crate::fixtures::{Run, TestEnv, affected_refs, git_out, remote_repo, standard_repo, tagged_repo};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub(crate) const AGENT: &str = "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"";

/// A PreToolUse payload as Claude Code sends it for a Bash call (recorded shape: every field
/// the harness sends, whether guardctl reads it or not).
pub(crate) fn payload(command: &str, cwd: &Path) -> String {
    json!({
        "session_id": "5b1e2c3d-0a4f-4c8e-9d2a-7f6e5d4c3b2a",
        "transcript_path": "/home/user/.claude/projects/repo/5b1e2c3d.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Clean up", "timeout": 120000},
        "tool_use_id": "toolu_01ABCdef"
    })
    .to_string()
}

fn agent_env(env: TestEnv) -> TestEnv {
    env.allow_signer(AGENT, "mallory");
    env
}

/// The hook as the harness runs it: `guardctl --key <user> --allowed-signers <file> hook
/// claude-code [extra]`, `stdin` on its standard input.
fn hook_as(env: &TestEnv, user: Option<&str>, vars: &[(&str, &str)], extra: &[&str], stdin: &str) -> Run {
    harness_hook(env, "claude-code", user, vars, extra, stdin)
}

/// `hook_as` for the hook of `harness` (`claude-code`, `gemini-cli`).
fn harness_hook(
    env: &TestEnv,
    harness: &str,
    user: Option<&str>,
    vars: &[(&str, &str)],
    extra: &[&str],
    stdin: &str,
) -> Run {
    let mut c = env.command();
    for (k, v) in vars {
        c.env(k, v);
    }
    if let Some(user) = user {
        c.arg("--key").arg(env.key(user));
    }
    c.arg("--allowed-signers")
        .arg(env.allowed_signers())
        .args(["hook", harness])
        .args(extra);
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The hook may deny before reading all of it: a closed pipe is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn hook(env: &TestEnv, command: &str) -> Run {
    hook_as(env, Some("mallory"), &[], &[], &payload(command, &env.repo))
}

/// The plan files the denial names, in order.
fn plan_files(r: &Run) -> Vec<PathBuf> {
    r.stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("then apply it:"))
        .map(|l| PathBuf::from(l.trim().rsplit(' ').next().unwrap()))
        .collect()
}

/// The command line the denial tells the agent to run after `prefix` (`then apply it:`), run
/// as the agent's shell would run it: by `sh`, with guardctl on `PATH`.
fn run_as_told(env: &TestEnv, r: &Run, prefix: &str) -> Run {
    let line = r
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in {}", r.stderr))
        .trim()
        .to_string();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_guardctl")).parent().unwrap();
    let mut c = std::process::Command::new("sh");
    c.current_dir(&env.repo).env_clear();
    for (k, v) in env.command().get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env("PATH", path).arg("-c").arg(&line);
    crate::fixtures::run(c)
}

fn denied_with_one_plan(r: &Run) -> PathBuf {
    assert_eq!(r.code, 2, "{}", r.transcript());
    let files = plan_files(r);
    assert_eq!(files.len(), 1, "{}", r.stderr);
    files.into_iter().next().unwrap()
}

/// Bob approves the plan and the agent applies it; the apply's run.
fn approve_and_apply(env: &TestEnv, plan: &Path) -> Run {
    let plan = plan.to_str().unwrap();
    let approved = env.run("bob", &["approve", plan, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());
    let verified = env.run("mallory", &["verify", plan]);
    assert_eq!(verified.code, 0, "{}", verified.transcript());
    env.run("mallory", &["apply", plan])
}

fn branches(env: &TestEnv) -> String {
    env.git(&["for-each-ref", "--format=%(refname)", "refs/heads"])
}

#[test]
fn a_read_only_command_passes_untouched_and_plans_nothing() {
    let env = agent_env(standard_repo());
    let before = env.repository_state();
    for command in [
        "git status",
        "git log --oneline -3 | head -1 && ls",
        "git push origin main",
    ] {
        let r = hook(&env, command);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "", ""),
            "{command}"
        );
    }
    assert_eq!(env.repository_state(), before);
    assert!(!env.home.join(".local/share/guardctl/plans").exists());
    // Not a shell command: not guardctl's to judge.
    let write = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "/x"}, "cwd": env.repo});
    assert_eq!(
        hook_as(&env, Some("mallory"), &[], &[], &write.to_string()).code,
        0
    );
}

#[test]
fn branch_deletion_of_a_merged_and_an_unmerged_branch_is_planned_exactly_and_applied_after_approval() {
    let env = agent_env(standard_repo());
    let before = env.repository_state();
    let r = hook(&env, "git branch -D feature/done feature/live release/1.0 main");
    let plan = denied_with_one_plan(&r);
    assert!(r.stderr.contains("guardctl: denied"), "{}", r.stderr);
    assert!(
        r.stderr.contains("Not in the plan: release/1.0 (protected)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("Not in the plan: main (is the base)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("approve"), "{}", r.stderr);
    // Planning changed nothing.
    assert_eq!(env.repository_state(), before);
    assert_eq!(
        affected_refs(&plan),
        ["refs/heads/feature/done", "refs/heads/feature/live"]
    );
    let shown = env.run("bob", &["show", plan.to_str().unwrap()]);
    assert!(
        shown.stdout.contains("2 (lost)"),
        "the unmerged work is flagged: {}",
        shown.stdout
    );
    // The agent may not apply before a person approves; the commands it is told to run
    // carry its own key, so they work as printed.
    let early = run_as_told(&env, &r, "then apply it:");
    assert_eq!(early.code, 12, "{}", early.transcript());
    let approved = env.run("bob", &["approve", plan.to_str().unwrap(), "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());
    assert_eq!(run_as_told(&env, &r, "You wait for that:").code, 0);
    let applied = run_as_told(&env, &r, "then apply it:");
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    let left = branches(&env);
    assert!(
        !left.contains("feature/done") && !left.contains("feature/live"),
        "{left}"
    );
    assert!(left.contains("refs/heads/main"));
}

#[test]
fn safe_delete_plans_only_what_git_branch_d_would_delete() {
    let env = agent_env(standard_repo());
    let r = hook(&env, "git branch -d feature/done feature/live");
    let plan = denied_with_one_plan(&r);
    assert_eq!(affected_refs(&plan), ["refs/heads/feature/done"]);
    assert!(r.stderr.contains("Not in the plan: feature/live"), "{}", r.stderr);
}

#[test]
fn a_remote_deletion_behind_cd_becomes_a_remote_branch_plan_with_the_pushes_effect() {
    let env = agent_env(remote_repo());
    // The harness's cwd is above the repository; the command moves into it first.
    let line = "cd repo && git push origin --delete feature/done";
    let r = hook_as(&env, Some("mallory"), &[], &[], &payload(line, env.path()));
    let plan = denied_with_one_plan(&r);
    assert!(r.stderr.contains("(in repo)"), "{}", r.stderr);
    assert_eq!(affected_refs(&plan), ["refs/heads/feature/done"]);
    let applied = approve_and_apply(&env, &plan);
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    let on_remote = git_out(
        &env.origin(),
        &["for-each-ref", "--format=%(refname)", "refs/heads"],
    );
    assert!(
        !on_remote.contains("feature/done") && on_remote.contains("feature/live"),
        "{on_remote}"
    );
}

#[test]
fn a_tag_deletion_in_an_sh_c_wrapper_becomes_a_tags_plan() {
    let env = agent_env(tagged_repo());
    let r = hook(&env, "sh -c 'git tag -d v0.1'");
    let plan = denied_with_one_plan(&r);
    assert_eq!(affected_refs(&plan), ["refs/tags/v0.1"]);
    let applied = approve_and_apply(&env, &plan);
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    assert!(!env.git(&["tag"]).lines().any(|t| t == "v0.1"));
    assert!(env.git(&["tag"]).lines().any(|t| t == "v0.2"));
}

#[test]
fn git_clean_and_rm_rf_become_exec_plans_gated_by_their_previews() {
    let env = agent_env(standard_repo());
    std::fs::create_dir_all(env.repo.join("build/sub")).unwrap();
    std::fs::write(env.repo.join("build/sub/out.o"), "x").unwrap();
    std::fs::write(env.repo.join("scratch.txt"), "x").unwrap();

    let r = hook(&env, "rm -rf build");
    let plan = denied_with_one_plan(&r);
    let shown = env.run("bob", &["show", plan.to_str().unwrap()]);
    assert!(
        shown.stdout.contains("build/sub/out.o"),
        "the preview lists the files: {}",
        shown.stdout
    );
    assert!(env.repo.join("build").exists(), "nothing ran");
    let applied = approve_and_apply(&env, &plan);
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    assert!(!env.repo.join("build").exists());

    let r = hook(&env, "git clean -fdx");
    let plan = denied_with_one_plan(&r);
    let shown = env.run("bob", &["show", plan.to_str().unwrap()]);
    assert!(shown.stdout.contains("scratch.txt"), "{}", shown.stdout);
    let applied = approve_and_apply(&env, &plan);
    assert_eq!(applied.code, 0, "{}", applied.transcript());
    assert!(!env.repo.join("scratch.txt").exists());
}

#[test]
fn what_guardctl_cannot_plan_is_denied_with_the_reason() {
    let env = agent_env(standard_repo());
    for (line, says) in [
        ("docker system prune -af", "guardctl plan exec --preview"),
        ("guardctl approve plan.json", "a person does that"),
        (
            "git branch --merged | xargs git branch -d",
            "expanded by the shell",
        ),
        ("git branch -D '{feature/done,fix/old}'", "glob characters"),
        ("x=D; git branch -$x feature/done", "could make it destructive"),
        ("setsid guardctl approve plan.json --yes", "a person does that"),
        ("ssh-keygen -Ysign -f k -n n f", "SSH"),
    ] {
        let r = hook(&env, line);
        assert_eq!(r.code, 2, "{line}: {}", r.transcript());
        assert!(r.stderr.contains(says), "{line}: {}", r.stderr);
        assert!(plan_files(&r).is_empty(), "{line}");
    }
}

#[test]
fn a_line_only_the_shell_can_read_is_judged_by_what_it_does() {
    // The reader cannot clear these; the trial runs them: bash refuses an unterminated quote,
    // an unset variable expands to nothing. They destroy nothing, here or for real.
    let env = agent_env(standard_repo());
    let before = env.repository_state();
    for line in ["rm -rf 'unterminated", "$CLEANER --all", "rm -rf \"$BUILD_DIR\""] {
        let r = hook(&env, line);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{line}: {}", r.transcript());
    }
    assert_eq!(env.repository_state(), before);
    // A script piped to a shell is what it does: the branch it deletes is planned.
    let r = hook(&env, "echo 'git branch -D feature/done' | sh");
    let plan = denied_with_one_plan(&r);
    let text = crate::fixtures::payload_of(&plan)["operation"]["inputs"]["preview_output"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("delete branch refs/heads/feature/done"), "{text}");
    assert!(branches(&env).contains("feature/done"));
}

#[test]
fn input_that_would_overflow_the_parsers_stack_is_denied_not_a_crash() {
    // A stack overflow aborts (134): the harness would let the command through.
    let env = agent_env(standard_repo());
    for (open, close) in [
        ("( ", " )"),
        ("{ ", "; }"),
        ("$(", ")"),
        ("if true; then ", "; fi"),
    ] {
        let line = format!(
            "{}git branch -D feature/done{}",
            open.repeat(5_000),
            close.repeat(5_000)
        );
        let r = hook(&env, &line);
        let head: String = r.stderr.chars().take(300).collect();
        assert_eq!(r.code, 2, "{open}: {head}");
        assert!(r.stderr.contains("levels deep"), "{open}: {head}");
    }
    assert!(branches(&env).contains("feature/done"));
}

#[test]
fn double_parentheses_bash_runs_as_subshells_are_judged_as_commands() {
    let env = agent_env(standard_repo());
    let r = hook(&env, "( ( git branch -D feature/done ) )");
    let plan = denied_with_one_plan(&r);
    assert_eq!(affected_refs(&plan), ["refs/heads/feature/done"]);
}

#[test]
fn every_failure_denies_with_exit_2_and_says_why() {
    let env = agent_env(standard_repo());
    let destructive = payload("git branch -D feature/done", &env.repo);
    let cases: Vec<(&str, Run)> = vec![
        ("not json", hook_as(&env, Some("mallory"), &[], &[], "{not json")),
        (
            "no command",
            hook_as(
                &env,
                Some("mallory"),
                &[],
                &[],
                r#"{"tool_name":"Bash","tool_input":{},"cwd":"/"}"#,
            ),
        ),
        (
            "relative cwd",
            hook_as(
                &env,
                Some("mallory"),
                &[],
                &[],
                &payload("git branch -D x", Path::new("repo")),
            ),
        ),
        (
            "another event",
            hook_as(
                &env,
                Some("mallory"),
                &[],
                &[],
                r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/"}"#,
            ),
        ),
        ("no key", hook_as(&env, None, &[], &[], &destructive)),
        (
            "a key that may approve",
            hook_as(&env, Some("bob"), &[], &[], &destructive),
        ),
        (
            "not a repository",
            hook_as(
                &env,
                Some("mallory"),
                &[],
                &[],
                &payload("git branch -D x", env.path()),
            ),
        ),
        (
            "timeout",
            hook_as(
                &env,
                Some("mallory"),
                &[("GUARDCTL_TEST_HOOK_STALL", "1")],
                &["--timeout", "1s"],
                &destructive,
            ),
        ),
        (
            "bad flag",
            hook_as(&env, Some("mallory"), &[], &["--bogus"], &destructive),
        ),
        (
            "bad rules file",
            hook_as(
                &env,
                Some("mallory"),
                &[],
                &["--rules", "/nonexistent.toml"],
                &destructive,
            ),
        ),
        (
            "git environment",
            hook_as(
                &env,
                Some("mallory"),
                &[("GIT_DIR", "/elsewhere")],
                &[],
                &destructive,
            ),
        ),
    ];
    for (what, r) in cases {
        assert_eq!(r.code, 2, "{what}: {}", r.transcript());
        assert!(r.stderr.contains("denied"), "{what}: {}", r.stderr);
        assert!(plan_files(&r).is_empty(), "{what}: {}", r.stderr);
    }
    assert!(branches(&env).contains("feature/done"));
}

#[test]
fn guard_exits_0_for_a_harmless_line_and_3_with_the_plan_for_a_destructive_one() {
    let env = agent_env(standard_repo());
    let ok = env.run("mallory", &["guard", "--", "git", "status"]);
    assert_eq!((ok.code, ok.stdout.as_str()), (0, ""), "{}", ok.transcript());
    let denied = env.run(
        "mallory",
        &[
            "--json",
            "guard",
            "--",
            "git branch -D feature/done && git status",
        ],
    );
    assert_eq!(denied.code, 3, "{}", denied.transcript());
    let doc: Value = denied.json();
    assert_eq!(doc["decision"], "deny");
    assert_eq!(doc["commands"][0]["outcome"], "planned");
    let plan = PathBuf::from(doc["commands"][0]["plan_file"].as_str().unwrap());
    assert_eq!(affected_refs(&plan), ["refs/heads/feature/done"]);
    assert!(
        doc["commands"][0]["apply_command"]
            .as_str()
            .unwrap()
            .contains(" apply ")
    );
}

#[test]
fn gemini_cli_s_before_tool_hook_gets_the_same_gate_in_its_own_protocol() {
    let env = agent_env(standard_repo());
    let call = |command: &str| {
        json!({
            "session_id": "s", "transcript_path": "/t", "cwd": env.repo,
            "hook_event_name": "BeforeTool", "timestamp": "2026-06-01T12:00:00Z",
            "tool_name": "run_shell_command", "tool_input": {"command": command}
        })
        .to_string()
    };
    let run = |command: &str| harness_hook(&env, "gemini-cli", Some("mallory"), &[], &[], &call(command));
    let ok = run("git status");
    assert_eq!((ok.code, ok.stdout.trim()), (0, "{}"), "{}", ok.transcript());
    let denied = run("git branch -D feature/done");
    assert_eq!(denied.code, 2, "{}", denied.transcript());
    assert!(denied.stderr.contains("Planned: sha256:"), "{}", denied.stderr);
    // Claude Code's payload is not Gemini CLI's: refused, not misread.
    let wrong = hook_as(&env, Some("mallory"), &[], &[], &call("ls"));
    assert_eq!(wrong.code, 2, "{}", wrong.transcript());
}

#[test]
fn hook_install_prints_or_merges_settings_that_run_this_guardctl_with_the_agents_key() {
    let env = agent_env(standard_repo());
    let printed = env.run("mallory", &["hook", "install", "claude-code"]);
    assert_eq!(printed.code, 0, "{}", printed.transcript());
    let doc: Value = serde_json::from_str(&printed.stdout).unwrap();
    let command = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    // By absolute path (a hook the harness cannot find lets commands through), with the key.
    assert!(command.starts_with(env!("CARGO_BIN_EXE_guardctl")), "{command}");
    assert!(
        command.contains(env.key("mallory").to_str().unwrap()),
        "{command}"
    );
    // Fails closed: Claude Code lets a call through on any exit but 2.
    assert!(command.ends_with("hook claude-code || exit 2"), "{command}");
    // A guardctl in a build directory, writable by this user: both said.
    assert!(printed.stderr.contains("looks temporary"), "{}", printed.stderr);
    assert!(
        printed.stderr.contains("writable by this user"),
        "{}",
        printed.stderr
    );

    // --scope project: the committed settings file, merged.
    let settings = env.repo.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": []}]}}"#,
    )
    .unwrap();
    let project = ["hook", "install", "claude-code", "--write", "--scope", "project"];
    for _ in 0..2 {
        let r = env.run("mallory", &project);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(merged["model"], "opus");
    let hooks = merged["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "added once, the other hook kept: {merged:#}");
    assert_eq!(hooks[1]["hooks"][0]["command"], command.as_str());
    std::fs::write(&settings, "not json").unwrap();
    let r = env.run("mallory", &project);
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "not json",
        "a file it cannot read is left alone"
    );

    // The default: the local settings file, ignored for this clone only (never committed).
    let r = env.run("mallory", &["hook", "install", "claude-code", "--write"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let local = env.repo.join(".claude/settings.local.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
    assert_eq!(
        doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        command.as_str()
    );
    let ignored = crate::fixtures::git_out(&env.repo, &["check-ignore", ".claude/settings.local.json"]);
    assert_eq!(ignored.trim(), ".claude/settings.local.json");
    let status = crate::fixtures::git_out(
        &env.repo,
        &["status", "--porcelain", "--", ".claude/settings.local.json"],
    );
    assert_eq!(status.trim(), "", "not shown as untracked");
}

#[test]
fn doctor_checks_the_installed_hook_end_to_end() {
    let env = agent_env(standard_repo());
    // Nothing installed: a problem, exit 1.
    let r = env.run("mallory", &["doctor"]);
    assert_eq!(r.code, 1, "{}", r.transcript());
    assert!(r.stdout.contains("PROBLEM installed"), "{}", r.stdout);
    let r = env.run("mallory", &["hook", "install", "claude-code", "--write"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("mallory", &["doctor"]);
    assert!(r.stdout.contains("ok      installed"), "{}", r.stdout);
    assert!(r.stdout.contains("ok      fails closed"), "{}", r.stdout);
    assert!(
        r.stdout.contains("ok      passes a harmless line"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("ok      blocks `rm -rf /`"), "{}", r.stdout);
    // The test binary sits in a directory this user can write: said, and so exit 1.
    assert!(
        r.stdout.contains("PROBLEM binary out of the agent's reach"),
        "{}",
        r.stdout
    );
    assert_eq!(r.code, 1, "{}", r.transcript());
    // A hook command without `|| exit 2` fails open when guardctl is missing: said.
    let local = env.repo.join(".claude/settings.local.json");
    let text = std::fs::read_to_string(&local).unwrap().replace(" || exit 2", "");
    std::fs::write(&local, text).unwrap();
    let r = env.run("mallory", &["doctor"]);
    assert!(r.stdout.contains("PROBLEM fails closed"), "{}", r.stdout);
}

#[test]
fn plan_named_selects_exactly_the_names_given_and_show_says_so() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--named",
            "--match",
            "feature/live",
            "--match",
            "fix/old",
            "--include-unmerged",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(
        affected_refs(&env.repo.join("plan.json")),
        ["refs/heads/feature/live", "refs/heads/fix/old"]
    );
    let shown = env.run("bob", &["show", "plan.json"]);
    assert!(shown.stdout.contains("criteria: matched"), "{}", shown.stdout);
    assert!(shown.stdout.contains("--named"), "{}", shown.stdout);
    // Without --include-unmerged the unmerged one stays; without --match there is nothing named.
    let r = env.run(
        "alice",
        &[
            "plan",
            "stale-branches",
            "--named",
            "--match",
            "feature/live",
            "-o",
            "p2.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(affected_refs(&env.repo.join("p2.json")).is_empty());
    assert_eq!(env.run("alice", &["plan", "stale-branches", "--named"]).code, 64);
    assert_eq!(
        env.run(
            "alice",
            &["plan", "stale-branches", "--named", "--merged", "--match", "x"]
        )
        .code,
        64
    );
}
