//! Documentation that must match the code. Completions in `completions/` and man pages in
//! `man/` are generated from the clap definition; a test fails when they are stale
//! (regenerate with `GUARDCTL_BLESS=1 cargo test --features test-hooks docs`). The policy
//! example in docs/policy.md must be a valid policy. Every field of a plan payload is in
//! docs/plan-format.md, every exit code and error kind in docs/exit-codes.md.

use clap_complete::Shell;
use std::path::{Path, PathBuf};

fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for (shell, file) in [
        (Shell::Bash, "guardctl.bash"),
        (Shell::Zsh, "_guardctl"),
        (Shell::Fish, "guardctl.fish"),
    ] {
        let script = guardctl::commands::completions::script(shell, guardctl::cli::command());
        out.push((root.join("completions").join(file), script.into_bytes()));
    }
    let dir = tempfile::tempdir().unwrap();
    clap_mangen::generate_to(guardctl::cli::command(), dir.path()).unwrap();
    let mut pages: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    for page in pages {
        let content = String::from_utf8(std::fs::read(&page).unwrap()).unwrap();
        let content = with_man_sections(&content);
        out.push((
            root.join("man").join(page.file_name().unwrap()),
            content.into_bytes(),
        ));
    }
    out
}

/// The sections clap's pages lack, on every page before VERSION: EXIT STATUS (from the
/// error kinds, so it cannot drift from the code), ENVIRONMENT and FILES.
fn with_man_sections(page: &str) -> String {
    let item = |term: &str, text: &str| format!(".TP\n\\fB{term}\\fR\n{text}\n");
    let mut codes: Vec<(u8, String, &str)> = vec![
        (
            0,
            "0".into(),
            "success (also: a replay of an applied plan; plan without \\-\\-detailed\\-exitcode)",
        ),
        (
            2,
            "2".into(),
            "plan \\-\\-detailed\\-exitcode: the plan has changes",
        ),
    ];
    for k in guardctl::error::Kind::ALL {
        codes.push((
            k.exit_code(),
            format!("{} ({})", k.exit_code(), k.as_str()),
            k.meaning(),
        ));
    }
    codes.sort_by_key(|(code, _, _)| *code);
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for (_, term, text) in &codes {
        s += &item(term, text);
    }
    s += ".PP\nWith \\-\\-json every failure prints one JSON document {\"error\": {\"kind\", \"exit_code\", \"meaning\", \"message\", \"hint\", \"details\"}} on stdout (docs/json.md); MCP tool errors are the same document.\n";
    s += ".SH ENVIRONMENT\n";
    for (var, text) in [
        (
            "GUARDCTL_KEY",
            "the signing key, when \\-\\-key is not given (before git's user.signingKey with gpg.format=ssh)",
        ),
        (
            "GUARDCTL_ALLOWED_SIGNERS",
            "the allowed\\-signers file, when \\-\\-allowed\\-signers is not given",
        ),
        (
            "SSH_AUTH_SOCK",
            "the ssh\\-agent holding keys given as public key files",
        ),
        ("NO_COLOR", "set and not empty: no colour with \\-\\-color auto"),
        ("CI", "set (and not false or 0): never prompt"),
        (
            "GIT_SSH_COMMAND, GIT_SSH",
            "if neither is set (nor core.sshCommand), ssh runs with BatchMode=yes",
        ),
        (
            "GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM",
            "as for git: where git's signing and allowed\\-signers settings are read",
        ),
    ] {
        s += &item(var, text);
    }
    s += ".SH FILES\n";
    for (file, text) in [
        ("plan.json", "the default plan file (plan, show, approve, apply)"),
        (
            ".guardctl/policy.toml",
            "the policy, read from the default branch of the shared remote",
        ),
        (
            ".guardctl/allowed_signers",
            "who may sign, read from the default branch of the shared remote",
        ),
        (
            ".git/guardctl/",
            "guardctl's state: lock, journals, consumed markers, receipts, decisions, audit.log",
        ),
        (
            "refs/guardctl/",
            "backup refs (refs/guardctl/backup/<plan id>) and the audit log's anchor (refs/guardctl/audit)",
        ),
        (
            "~/.local/share/guardctl/",
            "the per\\-user key guardctl generates when no other is configured (the platform's data directory)",
        ),
    ] {
        s += &item(file, text);
    }
    match page.find(".SH VERSION") {
        Some(i) => format!("{}{s}{}", &page[..i], &page[i..]),
        None => format!("{page}{s}"),
    }
}

#[test]
fn completions_and_man_pages_are_current() {
    let bless = std::env::var_os("GUARDCTL_BLESS").is_some();
    let mut stale = Vec::new();
    for (path, content) in generated() {
        if std::fs::read(&path).ok().as_deref() != Some(content.as_slice()) {
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &content).unwrap();
            } else {
                stale.push(path.display().to_string());
            }
        }
    }
    // A page whose command no longer exists is stale too.
    let expected: Vec<PathBuf> = generated().into_iter().map(|(p, _)| p).collect();
    let man = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    for entry in std::fs::read_dir(&man).unwrap() {
        let path = entry.unwrap().path();
        if !expected.contains(&path) {
            if bless {
                std::fs::remove_file(&path).unwrap();
            } else {
                stale.push(path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run `GUARDCTL_BLESS=1 cargo test --features test-hooks docs`): {stale:?}"
    );
}

#[test]
fn completions_command_prints_the_shipped_completions() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_guardctl"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let shipped =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/guardctl.bash")).unwrap();
    assert_eq!(out.stdout, shipped);
}

/// The policy example in docs/policy.md's Policy section is a valid policy, so the schema the
/// docs document and the one guardctl reads cannot drift apart unnoticed.
#[test]
fn policy_doc_example_parses() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policy.md")).unwrap();
    let section = &doc[doc.find("\n## Policy\n").expect("a Policy section")..];
    let start = section.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let policy = guardctl::policy::file::parse(example).unwrap_or_else(|e| panic!("docs/policy.md: {e}"));
    let routes: Vec<&str> = policy.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(routes, vec!["team-a", "release"]);
    assert_eq!(policy.bulk.approvals.map(|b| b.required), Some(2));
    assert_eq!(policy.executors, vec!["ci"]);
}

/// The guardctl command lines in `text`: a line (comments and `- ` list markers left out)
/// that starts with `guardctl `, or has one after `; `, up to the next `;`, `|`, `>` or `#`.
fn guardctl_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start_matches(|c: char| c == '#' || c == '-' || c.is_whitespace());
        let Some(start) = line
            .find("guardctl ")
            .filter(|i| *i == 0 || line[..*i].ends_with("; ") || line[..*i].ends_with("&& "))
        else {
            continue;
        };
        let command = line[start..].split([';', '|', '>', '#']).next().unwrap().trim();
        out.push(command.to_string());
    }
    out
}

/// Every `guardctl` command the CI examples and the action run (or tell a reviewer to run)
/// parses with the current CLI, so they cannot drift from the flags they use; the plan the
/// workflow's `plan-args` make does too. Between them they cover the whole flow.
#[test]
fn the_ci_examples_use_only_commands_and_flags_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = Vec::new();
    for file in [
        "docs/ci/remote-branch-cleanup.yml",
        "docs/ci/gitlab/remote-branch-cleanup.gitlab-ci.yml",
        "scripts/github-action.sh",
        "docs/ci/README.md",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let mut commands = if file.ends_with(".md") {
            // Prose: the commands are code spans.
            text.split('`')
                .skip(1)
                .step_by(2)
                .filter(|span| span.starts_with("guardctl "))
                .map(str::to_string)
                .collect()
        } else {
            guardctl_commands(&text)
        };
        // The action plans `plan-args` with these flags (scripts/github-action.sh).
        for line in text.lines() {
            if let Some(args) = line.trim().strip_prefix("plan-args: ") {
                let (operation, rest) = args.split_once(' ').unwrap_or((args, ""));
                commands.push(format!(
                    "guardctl plan {operation} --publish --detailed-exitcode -o plan.json {rest}"
                ));
            }
        }
        assert!(!commands.is_empty(), "{file}: no guardctl command found");
        for command in commands {
            // Shell variables and placeholders stand for ids and paths; the script's plan
            // arguments for an operation.
            let command = command
                .replace("\"${args[0]}\"", "remote-branches")
                .replace("\"${args[@]:1}\"", "--merged");
            let words: Vec<String> = command
                .split_whitespace()
                .map(|w| w.replace('"', ""))
                .map(|w| {
                    if w.contains('$') || w.contains('<') {
                        "0123456789ab".to_string()
                    } else {
                        w
                    }
                })
                .collect();
            if let Err(e) = guardctl::cli::command().try_get_matches_from(&words) {
                panic!("{file}: {command}\n{e}");
            }
            checked.push(
                words[1..]
                    .iter()
                    .find(|w| !w.starts_with('-') && !w.contains('/'))
                    .cloned()
                    .unwrap(),
            );
        }
    }
    for expected in ["plan", "show", "inbox", "approve", "reject", "verify", "apply"] {
        assert!(
            checked.iter().any(|c| c == expected),
            "no `guardctl {expected}` in the CI examples: {checked:?}"
        );
    }
}

/// The example workflow and the action are pinned the way the docs say: every action by a
/// full commit SHA, guardctl's own `uses:` and `version:` to one and the same commit, and
/// every job bounded by `timeout-minutes` (GitLab: `timeout`).
#[test]
fn the_ci_examples_pin_every_action_and_bound_every_job() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sha = |s: &str| {
        s.len() == 40
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    for file in ["docs/ci/remote-branch-cleanup.yml", "action.yml"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let mut guardctl_pins = Vec::new();
        for line in text.lines().map(str::trim) {
            let line = line.trim_start_matches("- ");
            if let Some(used) = line.strip_prefix("uses: ") {
                let used = used.split(' ').next().unwrap();
                let (action, at) = used
                    .split_once('@')
                    .unwrap_or_else(|| panic!("{file}: {used} is not pinned"));
                assert!(sha(at), "{file}: {used} is not pinned by a full commit SHA");
                if action == "guardctl/guardctl" {
                    guardctl_pins.push(at.to_string());
                }
            }
            if let Some(v) = line.strip_prefix("version: ") {
                assert!(sha(v), "{file}: version {v} is not a full commit SHA");
                guardctl_pins.push(v.to_string());
            }
        }
        guardctl_pins.dedup();
        assert!(
            guardctl_pins.len() <= 1,
            "{file}: guardctl pinned to several commits: {guardctl_pins:?}"
        );
        if file.starts_with("docs/") {
            let jobs = text.matches("\n    runs-on: ").count();
            assert!(jobs >= 2, "{file}: {jobs} jobs");
            assert_eq!(
                text.matches("\n    timeout-minutes: ").count(),
                jobs,
                "{file}: a job without timeout-minutes"
            );
        }
    }
    let gitlab =
        std::fs::read_to_string(root.join("docs/ci/gitlab/remote-branch-cleanup.gitlab-ci.yml")).unwrap();
    assert!(
        gitlab.contains("\n  timeout: 30m\n"),
        "the GitLab jobs' template has no timeout"
    );
}

/// Every key path in a JSON value: `a.b` for an object's field, `a[].b` for every element's.
fn key_paths(value: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                key_paths(v, &path, out);
                out.insert(path);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                key_paths(v, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The fields of `payloads` that docs/plan-format.md does not name (as `` `path` ``).
fn undocumented(payloads: &[serde_json::Value]) -> Vec<String> {
    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plan-format.md")).unwrap();
    let mut paths = std::collections::BTreeSet::new();
    for p in payloads {
        key_paths(p, "", &mut paths);
    }
    assert!(paths.len() > 30, "too few fields to be real plans: {paths:?}");
    paths
        .into_iter()
        .filter(|p| !spec.contains(&format!("`{p}`")))
        .collect()
}

/// A plan of every kind, each with its optional parts present (upstreams, config, people not
/// in the base; tag facts; pinned files, a verify command and a pinned directory), and an
/// approval with a comment: every field any of them writes is in docs/plan-format.md.
#[test]
fn every_field_of_a_plan_payload_is_in_the_plan_format_spec() {
    use crate::fixtures::{payload_of, remote_repo, tagged_repo};
    let plan = |env: &crate::fixtures::TestEnv, args: &[&str]| {
        let r = env.run("alice", args);
        assert_eq!(r.code, 0, "{}", r.transcript());
        payload_of(&env.repo.join("plan.json"))
    };
    let mut payloads = Vec::new();

    let env = remote_repo();
    let local = plan(
        &env,
        &[
            "plan",
            "stale-branches",
            "--merged",
            "--gone",
            "--include-unmerged",
        ],
    );
    assert!(
        local["affected"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["people_not_in_base"].is_array() && !a["upstream"].is_null()),
        "no unmerged branch with an upstream: {local}"
    );
    payloads.push(local);
    let r = env.run(
        "bob",
        &[
            "approve",
            "plan.json",
            "--yes",
            "--comment",
            "ok",
            "--out",
            "approval.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    payloads.push(payload_of(&env.repo.join("approval.json")));
    payloads.push(plan(&env, &["plan", "remote-branches", "--remote", "origin"]));

    let env = tagged_repo();
    payloads.push(plan(&env, &["plan", "tags", "--older-than", "30d"]));

    let env = crate::fixtures::TestEnv::new();
    std::fs::create_dir_all(env.repo.join("lib")).unwrap();
    std::fs::write(env.repo.join("lib/h.sh"), "true\n").unwrap();
    std::fs::write(env.repo.join("prune.sh"), "echo a\n").unwrap();
    let exec = plan(
        &env,
        &[
            "plan",
            "exec",
            "--pin",
            "lib",
            "--preview",
            "sh prune.sh",
            "--verify",
            "true",
            "--",
            "sh",
            "prune.sh",
        ],
    );
    assert!(
        exec["operation"]["inputs"]["pinned"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["tree"].is_array()),
        "no pinned directory: {exec}"
    );
    payloads.push(exec);

    let missing = undocumented(&payloads);
    assert!(
        missing.is_empty(),
        "fields not in docs/plan-format.md: {missing:?}"
    );
}

/// Every exit code and JSON `error.kind` the code can produce has a row in
/// docs/exit-codes.md (`| code | `kind` |`).
#[test]
fn every_error_kind_and_exit_code_is_in_the_exit_codes_doc() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exit-codes.md")).unwrap();
    let missing: Vec<String> = guardctl::error::Kind::ALL
        .iter()
        .map(|k| format!("| {} | `{}` |", k.exit_code(), k.as_str()))
        .filter(|row| !doc.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "rows missing from docs/exit-codes.md: {missing:?}"
    );
}

/// Issue 34 item 13: `guardctl apply <TAB>` in bash offers plan files (clap's script offered
/// only flags there) and the ids of the plans this clone's state knows; flags after `-`.
#[test]
fn bash_completes_plan_files_and_known_plan_ids_where_a_plan_goes() {
    let env = crate::apply::planned();
    let r = env.run("bob", &["approve", "plan.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("alice", &["apply", "plan.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let id = crate::fixtures::plan_id_of(&env.repo.join("plan.json"))["sha256:".len()..].to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions/guardctl.bash");
    let complete = |words: &str| -> Vec<String> {
        let out = std::process::Command::new("bash")
            .current_dir(&env.repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .arg("-c")
            .arg(format!(
                "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); \
                 _guardctl guardctl \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect()
    };
    for command in ["apply", "show", "verify", "approve", "reject"] {
        assert_eq!(
            complete(&format!("guardctl {command} pla")),
            ["plan.json"],
            "{command}"
        );
    }
    assert_eq!(complete(&format!("guardctl rollback {}", &id[..6])), [id]);
    assert!(complete("guardctl apply --").contains(&"--approval".to_string()));
}

/// The Markdown example in the README is what `show --format markdown` prints for the
/// walkthrough's repository: the snapshot tests/cli/show_markdown.rs checks, word for word.
#[test]
fn the_readmes_markdown_example_is_the_renderers_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("````markdown\n")
        .expect("the README's Markdown example")
        + "````markdown\n".len();
    let example = &readme[start..start + readme[start..].find("\n````").unwrap()];
    let snapshot = std::fs::read_to_string(
        root.join("tests/cli/snapshots/cli__show_markdown__show_small_plan_markdown.snap"),
    )
    .unwrap();
    let rendered = snapshot.splitn(3, "---\n").nth(2).unwrap().trim_end();
    assert_eq!(
        example, rendered,
        "README.md's example differs from the snapshot: copy it over"
    );
}
