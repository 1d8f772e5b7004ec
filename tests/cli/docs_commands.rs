//! Every guardctl command the README and docs/ show is one guardctl accepts (issue 34 item 4:
//! the team snippet `plan remote-branches --merged --publish` failed when copied). Each line
//! of a fenced block that runs guardctl (`guardctl …`, `$ guardctl …`, `alice$ guardctl …`,
//! a CI step's `run: guardctl …`), continuation lines joined and comments dropped, is split as
//! a shell splits it and parsed by the CLI definition itself: an unknown flag, a missing
//! required argument or a removed command fails here with the file and line. What each
//! command does is the business of the tests of its capability (and of the README
//! walk-through, `readme_walkthrough.rs`, which runs its commands for real).

use std::path::{Path, PathBuf};

/// README.md and every Markdown file under docs/, and the CI examples' workflows there.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "yml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The guardctl command lines of `text`'s fenced blocks: (line number, command).
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.trim().to_string()),
            };
            continue;
        }
        let Some(info) = &fence else { continue };
        // Data, not commands.
        if ["toml", "json", "text", "yaml-data"].contains(&info.as_str()) {
            continue;
        }
        if let Some((at, mut cmd)) = pending.take() {
            let (body, more) = continued(trimmed);
            cmd.push(' ');
            cmd.push_str(body);
            if more {
                pending = Some((at, cmd));
            } else {
                out.push((at, cmd));
            }
            continue;
        }
        let Some(start) = command_start(trimmed) else {
            continue;
        };
        let (body, more) = continued(start);
        if more {
            pending = Some((i + 1, body.to_string()));
        } else {
            out.push((i + 1, body.to_string()));
        }
    }
    out
}

/// A line without its trailing `\` (and whether it had one).
fn continued(line: &str) -> (&str, bool) {
    match line.trim_end().strip_suffix('\\') {
        Some(body) => (body, true),
        None => (line.trim_end(), false),
    }
}

/// The shell line of a block's line that runs guardctl: without its prompt (`$ `, `alice$ `)
/// or a workflow step's `run: `; `None` for a line that does not mention it.
fn command_start(line: &str) -> Option<&str> {
    let line = line.strip_prefix("- ").unwrap_or(line);
    let line = line.strip_prefix("run: ").unwrap_or(line);
    let line = match line.split_once("$ ") {
        Some((prompt, rest)) if !prompt.contains(' ') && !prompt.is_empty() => rest,
        _ => line.strip_prefix("$ ").unwrap_or(line),
    };
    line.contains("guardctl").then_some(line)
}

/// Each `guardctl …` of a command line: split as a shell would, cut at comments, pipes,
/// lists and redirections.
fn invocations(command: &str) -> Vec<Vec<String>> {
    // A comment starts at ` #` outside quotes: shlex keeps `#` in a word, so cut first.
    let mut cut = String::new();
    let (mut single, mut double) = (false, false);
    let chars: Vec<char> = command.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && (i == 0 || chars[i - 1] == ' ') => break,
            _ => {}
        }
        cut.push(c);
    }
    // A diagram or prose line mentioning guardctl (`guardctl's own state`) is no shell line;
    // a line that starts with guardctl must be one.
    let Some(words) = shlex::split(&cut) else {
        assert!(!command.starts_with("guardctl "), "not a shell line: {command}");
        return Vec::new();
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut current: Option<Vec<String>> = None;
    // Where a command starts: the line's first word, or after a separator.
    let mut at_command = true;
    let (mut redirect, mut substitution) = (false, 0usize);
    for w in words {
        // `$(…)` is another command's output, whatever its words (a file name's date).
        if substitution > 0 || w.contains("$(") {
            substitution = (substitution + w.matches("$(").count()).saturating_sub(w.matches(')').count());
            continue;
        }
        if ["&&", "||", "|", ";", "{", "}", "(", ")"].contains(&w.as_str()) || w.ends_with(';') {
            out.extend(current.take());
            at_command = true;
            continue;
        }
        if redirect {
            redirect = false;
            continue;
        }
        if w.starts_with('>') || w.starts_with('<') || w == "2>&1" {
            // `> file` takes the next word; `>file` is one.
            redirect = w == ">" || w == ">>" || w == "<";
            continue;
        }
        match &mut current {
            Some(args) => args.push(w),
            None if at_command && w == "guardctl" => current = Some(vec![w]),
            None => {}
        }
        at_command = false;
    }
    out.extend(current);
    out
}

#[test]
fn every_guardctl_command_in_the_readme_and_docs_parses() {
    let mut checked = 0;
    let mut failed = Vec::new();
    for doc in documents() {
        let mut text = std::fs::read_to_string(&doc).unwrap();
        if doc.extension().is_some_and(|e| e == "yml") {
            // A workflow is one block of commands (its `run:` steps).
            text = format!("```\n{text}\n```\n");
        }
        for (line, command) in commands(&text) {
            for argv in invocations(&command) {
                checked += 1;
                if let Err(e) = guardctl::cli::command().try_get_matches_from(&argv) {
                    // `--help` and `--version` end parsing on purpose.
                    use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                    if ![DisplayHelp, DisplayVersion].contains(&e.kind()) {
                        let first = e.to_string().lines().next().unwrap_or_default().to_string();
                        failed.push(format!("{}:{line}: {command}\n    {first}", doc.display()));
                    }
                }
            }
        }
    }
    eprintln!("{checked} guardctl commands parsed");
    assert!(
        checked > 30,
        "only {checked} commands found: is the extraction broken?"
    );
    assert!(
        failed.is_empty(),
        "{} of {checked} commands do not parse:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn the_extraction_finds_prompts_continuations_and_pipelines() {
    let text = "```sh\nalice$ guardctl plan stale-branches --merged   # writes plan.json\n$ guardctl show plan.json && guardctl approve plan.json\nguardctl plan exec --preview 'x --dry-run' \\\n    -- x\n```\n```toml\nguardctl = 1\n```\n";
    let found: Vec<Vec<Vec<String>>> = commands(text).iter().map(|(_, c)| invocations(c)).collect();
    assert_eq!(
        found,
        [
            vec![vec!["guardctl", "plan", "stale-branches", "--merged"]],
            vec![
                vec!["guardctl", "show", "plan.json"],
                vec!["guardctl", "approve", "plan.json"]
            ],
            vec![vec![
                "guardctl",
                "plan",
                "exec",
                "--preview",
                "x --dry-run",
                "--",
                "x"
            ]],
        ]
        .map(|v| v
            .into_iter()
            .map(|a| a.into_iter().map(String::from).collect())
            .collect::<Vec<Vec<String>>>())
    );
}
