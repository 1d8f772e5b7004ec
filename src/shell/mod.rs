//! Which parts of a shell command line destroy something, and what guardctl plans for each:
//! the classifier behind `guardctl hook` and `guardctl guard`. Pure: a command line and the
//! rules in, findings out; no repository, no processes, no clock.
//!
//! The line goes through a real shell parser ([`words`]); every simple command it may run
//! (substitutions, `sh -c` scripts, `eval`, wrappers such as `sudo`, `env`, `xargs`, `find
//! -exec` included) is matched against the rules ([`rules`]). A destructive command becomes a
//! native plan of exactly the names it gives (`git branch -d`, `git tag -d`, `git push
//! --delete`), an exec plan gated by the rule's preview, or a refusal that says how to plan it
//! by hand. Whatever guardctl cannot read with confidence — a line the parser refuses, a
//! command word or a destructive command's argument that only the shell can expand, a
//! directory a `cd` to a variable leaves unknown — is a refusal, never an allow.

pub mod rules;
pub mod words;

use crate::plan::derive::shell_words;
use rules::{Native, Rules};
use std::path::PathBuf;
use words::{Dir, Simple, Word};

/// One destructive command of the line and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The command as guardctl read it, quoted for a shell: for messages.
    pub command: String,
    /// Where it runs, relative to the line's starting directory.
    pub dir: PathBuf,
    /// What it destroys (the rule's words).
    pub reason: String,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `git branch -d/-D NAMES`: `force` is `-D` (unmerged work may be lost).
    Branches { names: Vec<String>, force: bool },
    /// `git push REMOTE --delete NAMES` (branches).
    RemoteBranches { remote: String, names: Vec<String> },
    /// `git tag -d NAMES`, or their deletion on `remote`.
    Tags {
        remote: Option<String>,
        names: Vec<String>,
    },
    /// The command itself, run without a shell, gated by `preview`'s output.
    Exec { argv: Vec<String>, preview: String },
    /// Destructive, and nothing guardctl can plan for it from here.
    Refuse { why: String },
}

/// The destructive commands of `line` (none: nothing to gate). `Err` is a line guardctl
/// cannot read with confidence, said in words; callers treat it as destructive.
pub fn classify(line: &str, rules: &Rules) -> Result<Vec<Finding>, String> {
    let commands = words::commands(line).map_err(|e| e.0)?;
    let mut found = Vec::new();
    for c in commands {
        Classifier { rules, depth: 0 }.simple(c, &mut found)?;
    }
    Ok(found)
}

struct Classifier<'r> {
    rules: &'r Rules,
    depth: usize,
}

/// Programs that run the rest of their arguments as a command, with the options (taking a
/// value or not) that come before it.
const WRAPPERS: &[(&str, &[&str], &[&str])] = &[
    // (program, options taking a value, options without one — others end the options)
    (
        "sudo",
        &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"],
        &[],
    ),
    ("doas", &["-u", "-C"], &[]),
    ("nice", &["-n"], &[]),
    ("ionice", &["-c", "-n", "-p"], &[]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"], &[]),
    ("stdbuf", &["-i", "-o", "-e"], &[]),
    ("nohup", &[], &[]),
    ("time", &["-f", "-o"], &[]),
    ("command", &[], &[]),
    ("builtin", &[], &[]),
    ("exec", &["-a"], &[]),
    ("chronic", &[], &[]),
];

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"];

impl Classifier<'_> {
    fn simple(&mut self, c: Simple, found: &mut Vec<Finding>) -> Result<(), String> {
        self.words(c.words, c.dir, c.assigns, found)
    }

    fn words(
        &mut self,
        words: Vec<Word>,
        dir: Dir,
        mut assigns: Vec<String>,
        found: &mut Vec<Finding>,
    ) -> Result<(), String> {
        let Some(first) = words.first() else {
            return Ok(());
        };
        let Some(name) = first.literal() else {
            return Err(format!(
                "the command `{}` is a variable or substitution: only the shell knows what runs",
                first.text()
            ));
        };
        let program = name.rsplit('/').next().unwrap_or(name).to_string();
        let args = &words[1..];

        // Wrappers and interpreters: what they run is the command.
        if let Some((_, with_value, _)) = WRAPPERS.iter().find(|(p, _, _)| *p == program) {
            if program == "command"
                && args
                    .first()
                    .and_then(Word::literal)
                    .is_some_and(|a| a == "-v" || a == "-V")
            {
                return Ok(());
            }
            let mut inner = skip_options(args, with_value);
            if program == "timeout" && !inner.is_empty() {
                // `timeout DURATION COMMAND…`
                inner = &inner[1..];
            }
            let escalated = matches!(program.as_str(), "sudo" | "doas");
            let before = found.len();
            self.words(inner.to_vec(), dir, assigns, found)?;
            if escalated {
                for f in &mut found[before..] {
                    f.action = Action::Refuse {
                        why: format!("it runs as another user (`{program}`): plan it by hand, as that user"),
                    };
                }
            }
            return Ok(());
        }
        if program == "env" {
            return self.env(args, dir, assigns, found);
        }
        if SHELLS.contains(&program.as_str()) {
            return self.shell(args, dir, found);
        }
        if program == "eval" {
            let script = literal_all(args)
                .ok_or("`eval` of a variable or substitution: only the shell knows what runs")?;
            return self.nested(&script.join(" "), dir, found);
        }
        if program == "xargs" {
            return self.xargs(args, dir, found);
        }
        if program == "find" {
            self.find_exec(args, &dir, found)?;
        }

        // git's own options come before its subcommand; `-C` moves it.
        let (dir, args) = if program == "git" {
            match git_globals(args, dir)? {
                Some(x) => x,
                None => return Ok(()),
            }
        } else {
            (dir, args.to_vec())
        };
        let literal_args: Vec<String> = args.iter().map(|w| w.text().to_string()).collect();
        let is_git = program == "git";
        let subcommand_at = |sub: &[String]| subcommand_at(&literal_args, sub, is_git);
        let Some((rule, at)) = self.rules.find(&program, &subcommand_at, &literal_args) else {
            return Ok(());
        };
        let mut command = vec![program.clone()];
        command.extend(literal_args.iter().cloned());
        let finding = |action: Action, dir: PathBuf| Finding {
            command: shell_words(&command),
            dir,
            reason: rule.reason.clone(),
            action,
        };
        let refuse = |why: String| Action::Refuse { why };
        let Dir::Known(here) = dir else {
            found.push(finding(
                refuse("it runs in a directory only the shell knows (after a `cd` to a variable, `cd -`, or inside a pipeline)".into()),
                PathBuf::new(),
            ));
            return Ok(());
        };
        if let Some(w) = args.iter().find(|w| w.literal().is_none()) {
            found.push(finding(
                refuse(format!(
                    "its argument `{}` is expanded by the shell (a variable, substitution, glob or `~`): spell out exactly what it destroys",
                    w.text()
                )),
                here,
            ));
            return Ok(());
        }
        if !assigns.is_empty() {
            assigns.sort();
            found.push(finding(
                refuse(format!(
                    "it sets {} for the command: plan it by hand (`guardctl plan exec --env NAME …`)",
                    assigns.join(", ")
                )),
                here,
            ));
            return Ok(());
        }
        let rest = &literal_args[at..];
        let action = match (rule.native, &rule.preview) {
            (Some(Native::Branches), _) => branches(rest),
            (Some(Native::Tags), _) => tags(rest),
            (Some(Native::Push), _) => match push(rest) {
                Push::Harmless => return Ok(()),
                Push::Plans(actions) => {
                    for a in actions {
                        found.push(finding(a, here.clone()));
                    }
                    return Ok(());
                }
                Push::Force => Action::Exec {
                    argv: command.clone(),
                    preview: format!("git push --dry-run --porcelain {}", shell_words(rest)),
                },
                Push::Refuse(why) => refuse(why),
            },
            (None, Some(template)) => Action::Exec {
                argv: command.clone(),
                preview: preview(template, &literal_args, at, &rule.replace),
            },
            (None, None) => refuse(format!(
                "guardctl has no preview for it: plan it by hand with `guardctl plan exec --preview '<a command that lists what it destroys>' -- {}`",
                shell_words(&command)
            )),
        };
        found.push(finding(action, here));
        Ok(())
    }

    fn nested(&mut self, script: &str, dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let commands = words::nested(script, dir, self.depth).map_err(|e| e.0)?;
        let mut inner = Classifier {
            rules: self.rules,
            depth: self.depth + 1,
        };
        for c in commands {
            inner.simple(c, found)?;
        }
        Ok(())
    }

    /// `env [-i] [-u NAME] [-C DIR] [NAME=value]… COMMAND…`
    fn env(
        &mut self,
        args: &[Word],
        mut dir: Dir,
        mut assigns: Vec<String>,
        found: &mut Vec<Finding>,
    ) -> Result<(), String> {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let Some(a) = w.literal() else { break };
            match a {
                "-i" | "--ignore-environment" | "-0" | "--null" | "-v" | "--debug" | "-" => i += 1,
                "-u" | "--unset" => i += 2,
                "-C" | "--chdir" => {
                    dir = match (&dir, args.get(i + 1).and_then(Word::literal)) {
                        (Dir::Known(d), Some(to)) => Dir::Known(d.join(to)),
                        _ => Dir::Unknown,
                    };
                    i += 2;
                }
                "-S" | "--split-string" => {
                    let script =
                        literal_all(&args[i + 1..]).ok_or("`env -S` of a variable or substitution")?;
                    return self.nested(&script.join(" "), dir, found);
                }
                "--" => {
                    i += 1;
                    break;
                }
                a if a.contains('=') && !a.starts_with('=') => {
                    assigns.push(a.split('=').next().unwrap_or_default().to_string());
                    i += 1;
                }
                a if a.starts_with('-') => i += 1,
                _ => break,
            }
        }
        self.words(args[i.min(args.len())..].to_vec(), dir, assigns, found)
    }

    /// `sh [-e…] -c SCRIPT [NAME ARGS…]`: the script is read as a line of its own.
    fn shell(&mut self, args: &[Word], dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let mut i = 0;
        let mut inline = false;
        while let Some(a) = args.get(i).and_then(Word::literal) {
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') && !a.starts_with('+') {
                break;
            }
            if a.starts_with('-') && !a.starts_with("--") && a.contains('c') {
                inline = true;
            }
            // Options that take a value (`-o pipefail`, `-O extglob`).
            i += if matches!(a, "-o" | "+o" | "-O" | "+O") {
                2
            } else {
                1
            };
        }
        if !inline {
            // A script file or standard input: what it does is its own (an unlisted program).
            return Ok(());
        }
        match args.get(i) {
            Some(Word::Literal(script)) => self.nested(script, dir, found),
            Some(Word::Dynamic(w)) => Err(format!("`sh -c {w}`: only the shell knows what that script is")),
            None => Ok(()),
        }
    }

    /// `xargs [OPTIONS] COMMAND ARGS…`: the command gets arguments from its input, which only
    /// the shell (and whatever feeds it) knows.
    fn xargs(&mut self, args: &[Word], dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let with_value = [
            "-a",
            "-d",
            "-E",
            "-e",
            "-I",
            "-i",
            "-L",
            "-l",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--replace",
            "--max-lines",
        ];
        let mut inner = skip_options(args, &with_value).to_vec();
        if inner.is_empty() {
            inner.push(Word::Literal("echo".into()));
        }
        inner.push(Word::Dynamic("(arguments from xargs' input)".into()));
        self.words(inner, dir, Vec::new(), found)
    }

    /// `find … -exec COMMAND … ;` (and `-execdir`, `-ok`, `-okdir`): the command runs for
    /// each file found, `{}` standing for it.
    fn find_exec(&mut self, args: &[Word], dir: &Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let mut i = 0;
        while i < args.len() {
            if matches!(args[i].literal(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
                let end = args[i + 1..]
                    .iter()
                    .position(|w| matches!(w.literal(), Some(";" | "+")))
                    .map_or(args.len(), |p| i + 1 + p);
                let inner: Vec<Word> = args[i + 1..end]
                    .iter()
                    .map(|w| match w.literal() {
                        Some(s) if s.contains("{}") => Word::Dynamic(s.to_string()),
                        _ => w.clone(),
                    })
                    .collect();
                self.words(inner, dir.clone(), Vec::new(), found)?;
                i = end;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The words after a wrapper's own options.
fn skip_options<'w>(args: &'w [Word], with_value: &[&str]) -> &'w [Word] {
    let mut i = 0;
    while let Some(a) = args.get(i).and_then(Word::literal) {
        if a == "--" {
            return &args[i + 1..];
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let takes_value = with_value.contains(&a) && !a.contains('=');
        i += if takes_value { 2 } else { 1 };
    }
    &args[i.min(args.len())..]
}

fn literal_all(args: &[Word]) -> Option<Vec<String>> {
    args.iter().map(|w| w.literal().map(String::from)).collect()
}

/// git's options before its subcommand: `-C DIR` moves the command (and is dropped from the
/// words, so that a preview runs where the command does); `-c`, `--no-pager` and the like
/// stay. One that points git at another repository (`--git-dir`, `--work-tree`) makes the
/// line unreadable with confidence. `None`: no subcommand (`git --version`).
fn git_globals(args: &[Word], mut dir: Dir) -> Result<Option<(Dir, Vec<Word>)>, String> {
    let mut kept = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(a) = w.literal() else {
            return Err(format!("git's option `{}` is expanded by the shell", w.text()));
        };
        match a {
            "-C" => {
                dir = match (&dir, args.get(i + 1).and_then(Word::literal)) {
                    (Dir::Known(d), Some(to)) => Dir::Known(d.join(to)),
                    _ => Dir::Unknown,
                };
                i += 2;
            }
            "-c" | "--config-env" => {
                kept.extend_from_slice(&args[i..(i + 2).min(args.len())]);
                i += 2;
            }
            a if a.starts_with("--git-dir")
                || a.starts_with("--work-tree")
                || a.starts_with("--namespace") =>
            {
                return Err(format!(
                    "`git {a}` points git elsewhere than the directory it runs in"
                ));
            }
            a if a.starts_with('-') => {
                kept.push(w.clone());
                i += 1;
            }
            _ => break,
        }
    }
    if i >= args.len() {
        return Ok(None);
    }
    // The options kept go after the subcommand's position: rules match the subcommand first.
    let mut words: Vec<Word> = args[i..].to_vec();
    if !kept.is_empty() {
        // `git -c x=y branch -D z` runs as written; the options stay with the command.
        let mut with = kept;
        with.append(&mut words);
        words = with;
    }
    Ok(Some((dir, words)))
}

/// Where `sub` starts among `args`, and so where the rest begins: for git, right after git's
/// own options (kept at the front); for other programs, anywhere among the words — a
/// subcommand after an option's value (`kubectl -n prod delete …`) still counts.
fn subcommand_at(args: &[String], sub: &[String], git: bool) -> Option<usize> {
    if sub.is_empty() {
        return Some(0);
    }
    if git {
        let mut i = 0;
        while i < args.len() && args[i].starts_with('-') {
            i += if args[i] == "-c" || args[i] == "--config-env" {
                2
            } else {
                1
            };
        }
        return (args.len() >= i + sub.len() && args[i..i + sub.len()] == *sub).then_some(i + sub.len());
    }
    (0..args.len())
        .find(|&i| args.len() >= i + sub.len() && args[i..i + sub.len()] == *sub)
        .map(|i| i + sub.len())
}

/// The preview command from its template.
fn preview(
    template: &str,
    args: &[String],
    at: usize,
    replace: &std::collections::BTreeMap<String, String>,
) -> String {
    let swap = |list: &[String]| -> Vec<String> {
        list.iter()
            .filter_map(|a| match replace.get(a) {
                Some(to) if to.is_empty() => None,
                Some(to) => Some(to.clone()),
                None => Some(a.clone()),
            })
            .collect()
    };
    let rest = &args[at..];
    let mut operands = Vec::new();
    let mut after_dashes = false;
    for a in rest {
        if !after_dashes && a == "--" {
            after_dashes = true;
        } else if after_dashes || !a.starts_with('-') || a == "-" {
            // `./-x`: an operand that starts with a dash must not become the preview's option.
            operands.push(if a.starts_with('-') {
                format!("./{a}")
            } else {
                a.clone()
            });
        }
    }
    let filled = template
        .replace("{args}", &shell_words(&swap(args)))
        .replace("{rest}", &shell_words(&swap(rest)))
        .replace("{operands}", &shell_words(&operands));
    filled.trim_end().to_string()
}

/// `git branch` arguments after `branch`, with `-d`, `-D` or `--delete` among them.
fn branches(rest: &[String]) -> Action {
    let mut force = false;
    let mut names = Vec::new();
    let mut after_dashes = false;
    for a in rest {
        match a.as_str() {
            _ if after_dashes => names.push(a.clone()),
            "--" => after_dashes = true,
            "-d" | "--delete" | "-q" | "--quiet" | "-v" | "--verbose" => {}
            "-D" | "-f" | "--force" => force = true,
            "-r" | "--remotes" | "-a" | "--all" => {
                return Action::Refuse {
                    why: "it deletes remote-tracking branches: plan the remote's branches with `guardctl plan remote-branches`".into(),
                };
            }
            a if a.starts_with("--") => {
                return Action::Refuse {
                    why: format!("guardctl does not read `git branch {a}`: plan it by hand"),
                };
            }
            a if a.starts_with('-') && a.len() > 1 => {
                for c in a[1..].chars() {
                    match c {
                        'd' | 'q' | 'v' => {}
                        'D' | 'f' => force = true,
                        'r' | 'a' => {
                            return Action::Refuse {
                                why: "it deletes remote-tracking branches: plan the remote's branches with `guardctl plan remote-branches`".into(),
                            };
                        }
                        _ => {
                            return Action::Refuse {
                                why: format!("guardctl does not read `git branch {a}`: plan it by hand"),
                            };
                        }
                    }
                }
            }
            _ => names.push(a.clone()),
        }
    }
    if names.is_empty() {
        return Action::Refuse {
            why: "it names no branch".into(),
        };
    }
    Action::Branches { names, force }
}

/// `git tag` arguments after `tag`, with `-d` or `--delete` among them.
fn tags(rest: &[String]) -> Action {
    let mut names = Vec::new();
    let mut after_dashes = false;
    for a in rest {
        match a.as_str() {
            _ if after_dashes => names.push(a.clone()),
            "--" => after_dashes = true,
            "-d" | "--delete" => {}
            a if a.starts_with('-') => {
                return Action::Refuse {
                    why: format!("guardctl does not read `git tag {a}` beside `-d`: plan it by hand"),
                };
            }
            _ => names.push(a.clone()),
        }
    }
    if names.is_empty() {
        return Action::Refuse {
            why: "it names no tag".into(),
        };
    }
    Action::Tags { remote: None, names }
}

enum Push {
    /// An ordinary push: it adds, never deletes or overwrites.
    Harmless,
    /// Deletions, as guardctl plans them.
    Plans(Vec<Action>),
    /// A push that may overwrite the remote's branches.
    Force,
    Refuse(String),
}

/// `git push` arguments after `push`.
fn push(rest: &[String]) -> Push {
    let mut delete = false;
    let mut force = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        match a {
            "--" => {
                operands.extend(rest[i + 1..].iter().cloned());
                break;
            }
            "-n" | "--dry-run" => return Push::Harmless,
            "-d" | "--delete" => delete = true,
            "-f" | "--force" | "--mirror" | "--prune" | "--force-if-includes" => force = true,
            a if a.starts_with("--force-with-lease") => force = true,
            "-o" | "--push-option" | "--receive-pack" | "--exec" => i += 1,
            a if a.starts_with("--repo") => {
                return Push::Refuse("`git push --repo`: name the remote as the first operand".into());
            }
            a if a.starts_with("--") => {}
            a if a.starts_with('-') && a.len() > 1 => {
                if a.contains('n') {
                    return Push::Harmless;
                }
                delete |= a.contains('d');
                force |= a.contains('f');
            }
            _ => operands.push(a.to_string()),
        }
        i += 1;
    }
    let refspecs = operands.get(1..).unwrap_or_default();
    let deletes: Vec<&String> = refspecs.iter().filter(|r| delete || r.starts_with(':')).collect();
    force |= refspecs.iter().any(|r| r.starts_with('+'));
    if deletes.is_empty() {
        return if force { Push::Force } else { Push::Harmless };
    }
    if force || deletes.len() != refspecs.len() {
        return Push::Refuse(
            "it deletes and pushes in one command: run the deletion on its own (guardctl plans it) and the push apart".into(),
        );
    }
    let Some(remote) = operands.first() else {
        return Push::Refuse("it names no remote: give the remote's name".into());
    };
    if remote.contains("://") || remote.contains(':') || remote.contains('/') {
        return Push::Refuse(format!(
            "it pushes to `{remote}`, not a configured remote: add it as a remote and name that"
        ));
    }
    let (mut branches, mut tags) = (Vec::new(), Vec::new());
    let mut names = deletes.iter().map(|r| r.trim_start_matches(':')).peekable();
    while let Some(n) = names.next() {
        if n == "tag" && delete {
            match names.next() {
                Some(t) => tags.push(t.to_string()),
                None => return Push::Refuse("`tag` names no tag".into()),
            }
        } else if let Some(t) = n.strip_prefix("refs/tags/") {
            tags.push(t.to_string());
        } else if let Some(b) = n.strip_prefix("refs/heads/") {
            branches.push(b.to_string());
        } else if n.starts_with("refs/") || n.is_empty() {
            return Push::Refuse(format!(
                "it deletes `{n}`, neither a branch nor a tag: plan it by hand"
            ));
        } else {
            // A bare name is a branch, as guardctl plans it; a tag is named `refs/tags/…`.
            branches.push(n.to_string());
        }
    }
    let mut plans = Vec::new();
    if !branches.is_empty() {
        plans.push(Action::RemoteBranches {
            remote: remote.clone(),
            names: branches,
        });
    }
    if !tags.is_empty() {
        plans.push(Action::Tags {
            remote: Some(remote.clone()),
            names: tags,
        });
    }
    Push::Plans(plans)
}

#[cfg(test)]
mod tests;
