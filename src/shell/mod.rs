//! What a shell command line may do, for `guardctl hook` and `guardctl guard`: a fast static
//! reader that only ever *allows* what it can prove harmless ([`read`] and [`Reading`]). Pure:
//! a command line and the rules in, a reading out; no repository, no processes, no clock.
//!
//! The line goes through a real shell parser ([`words`]); every simple command it may run
//! (substitutions, `sh -c` scripts, `eval`, wrappers such as `sudo`, `env`, `xargs`, `find
//! -exec`, `parallel`, and `ssh`'s remote command included) is judged:
//!
//! - **Safe**: a program and form on the allowlist (`allow.rs`, git's forms in `git_forms.rs`): it
//!   cannot destroy anything whatever the files hold. Only a line whose every command, output
//!   redirection, assignment and definition is of that kind is Safe.
//! - **Known**: a command the rules ([`rules`]) know exactly and that is not a `local` rule —
//!   native plans (`git branch -d`, `git tag -d`, `git push --delete`), remote effects (a
//!   force push, `kubectl delete`, a command run over `ssh`), self-protection (`guardctl
//!   approve`), and `rm -r /`-like disasters: planned or refused without running anything.
//! - **Try**: everything else — unknown programs, interpreters and scripts, build tools,
//!   local destroyers (`git reset --hard`, `rm`, whose `local` rules name what they destroy),
//!   and whatever only the shell can expand (a command word that is a variable, `eval
//!   "$x"`, `source FILE`, aliases and functions defined on the line, `printf -v`/`read`
//!   into subscripted names): the sandbox's trial on a copy-on-write view sees what the line
//!   really does. The reason names the first command the reader could not clear.

mod allow;
mod git;
mod git_forms;
mod remote;
pub mod rules;
pub mod words;
mod wrappers;

use crate::plan::derive::shell_words;
use allow::Facts;
use git::{Push, branches, git_globals, push, tags};
use rules::{Native, Rules};
use std::path::PathBuf;
use words::{Dir, Simple, Word};
use wrappers::{DASH_C, SHELLS, WRAPPERS, skip_options};

/// What the static reader makes of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// Every simple command the line can run (substitutions, subscripts, aliases, functions,
    /// here-docs, wrappers and shells fed by any redirect included) is a known non-destroying
    /// program and form: the line may run with no further work.
    Safe,
    /// Destructive commands the reader knows exactly (native plans and remote effects), as
    /// `Finding`s: planned or refused without running anything.
    Known(Vec<Finding>),
    /// Neither: the line must be tried in the sandbox (it runs the line on a copy-on-write
    /// view and plans exactly what it destroyed). The reason names the first command the
    /// reader could not clear (for `guardctl explain`).
    Try(String),
}

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

/// The reader's verdict on `line`. Any Known finding makes the line Known (with all of them);
/// else any command not cleared makes it Try; else it is Safe. A line the parser cannot read
/// is Try: bash decides in the trial.
pub fn read(line: &str, rules: &Rules) -> Reading {
    read_with_assumptions(line, rules).0
}

/// What a Safe reading takes for granted about the repository and the machine, for the
/// caller to confirm before it runs the line (the reader itself is pure: it cannot look).
/// Each names where the command runs, relative to the line's starting directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assumption {
    /// `git fetch`/`git pull` (of `remote`, when the line names one) deletes nothing only if
    /// the repository's configuration neither prunes (`fetch.prune`, `remote.*.prune`,
    /// `*.pruneTags`) nor mirrors or forces (`remote.*.mirror`, a `+` in `remote.*.fetch`).
    Fetch { dir: PathBuf, remote: Option<String> },
    /// A plain `git push` overwrites nothing only if the configuration neither mirrors
    /// (`remote.*.mirror`) nor pushes forced refspecs (`remote.*.push`, `push.*`).
    Push { dir: PathBuf, remote: Option<String> },
    /// A temporary path the line deletes (`/tmp/x`, `$TMPDIR/x` as written, a `mktemp`
    /// variable): harmless only if the work tree, the repository and the starting directory
    /// are not inside it — and, for `$TMPDIR/x`, only if `TMPDIR` is set (not empty) in the
    /// environment the line runs in: unset, `$TMPDIR/home` is `/home`.
    Deletes { dir: PathBuf, path: String },
}

/// [`read`], and for a Safe reading what it takes for granted ([`Assumption`]): the same
/// work, once.
pub fn read_with_assumptions(line: &str, rules: &Rules) -> (Reading, Vec<Assumption>) {
    let script = match words::script(line) {
        Ok(s) => s,
        // Nesting no person writes is refused, not tried: thousands of nested subshells can
        // fail in the trial for want of resources and succeed for real.
        Err(e) if e.0.contains(words::TOO_DEEP) => {
            let finding = Finding {
                command: crate::text::safe(&line.chars().take(80).collect::<String>()),
                dir: PathBuf::new(),
                reason: "it cannot be judged".into(),
                action: Action::Refuse { why: e.0 },
            };
            return (Reading::Known(vec![finding]), Vec::new());
        }
        Err(e) => return (Reading::Try(e.0), Vec::new()),
    };
    let mut reader = Classifier {
        rules,
        depth: 0,
        stdin: words::Stdin::Inherited,
        facts: Facts::of(line, &script.assigns),
        untried: None,
        assumptions: Vec::new(),
    };
    // A variable that changes what programs run, set other than by an assignment word.
    let assigned = |n: &str| script.assigns.iter().filter(|(m, _)| m == n).count();
    let names: std::collections::BTreeSet<&str> = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && allow::sensitive(w))
        .collect();
    if let Some(n) = names
        .into_iter()
        .find(|n| allow::bare_mentions(line, n) > assigned(n))
    {
        reader.untry(format!(
            "it names {n} where bash may assign it (`read`, `for`, `printf -v`…): the trial sees what that does"
        ));
    }
    let mut found = Vec::new();
    reader.script(script, &mut found);
    let reading = match (found.is_empty(), reader.untried) {
        (false, _) => Reading::Known(found),
        (true, Some(why)) => Reading::Try(why),
        (true, None) => Reading::Safe,
    };
    let assumptions = if reading == Reading::Safe {
        reader.assumptions
    } else {
        Vec::new()
    };
    (reading, assumptions)
}

/// The reading as the engine consumed it before the trial existed: Known's findings, Try as
/// an unreadable line (`Err`), Safe as nothing to gate. Kept until the callers use [`read`].
pub fn classify(line: &str, rules: &Rules) -> Result<Vec<Finding>, String> {
    match read(line, rules) {
        Reading::Safe => Ok(vec![]),
        Reading::Known(found) => Ok(found),
        Reading::Try(why) => Err(why),
    }
}

struct Classifier<'r> {
    rules: &'r Rules,
    depth: usize,
    /// The standard input of the command being judged.
    stdin: words::Stdin,
    /// What the line says elsewhere (its `mktemp` variables, a `TMPDIR` it sets).
    facts: Facts,
    /// Why the first command not cleared was not: the line is Try unless something is Known.
    untried: Option<String>,
    /// What the commands cleared so far take for granted.
    assumptions: Vec<Assumption>,
}

impl Classifier<'_> {
    /// A line or a script it runs: its commands, and what else about it keeps it off the
    /// allowlist (files it writes, variables it sets, functions it defines).
    fn script(&mut self, script: words::Script, found: &mut Vec<Finding>) {
        if let Some(w) = script
            .writes
            .iter()
            .find(|w| !allow::harmless_write(w, &self.facts))
        {
            self.untry(format!(
                "it writes `{}`, which may overwrite a file: the trial shows what changes",
                w.text()
            ));
        }
        if let Some(f) = script.functions.first() {
            self.untry(format!(
                "it defines the function `{f}`: a later word may run it under any name; the trial sees what it does"
            ));
        }
        for (name, value) in &script.assigns {
            if name == "GUARDCTL_ALLOWED_SIGNERS" {
                found.push(Finding {
                    command: format!("{name}={}", value.text()),
                    dir: PathBuf::new(),
                    reason: "chooses who may approve guardctl's plans".into(),
                    action: Action::Refuse {
                        why: "an agent does not choose who may approve: the allowed signers are the repository's".into(),
                    },
                });
            } else if let Some(why) = allow::risky_assignment(name, value) {
                self.untry(why);
            }
        }
        for c in script.commands {
            self.simple(c, found);
        }
    }

    fn simple(&mut self, c: Simple, found: &mut Vec<Finding>) {
        self.embedded_approval(&c.words, found);
        self.stdin = c.stdin;
        if let Err(why) = self.words(c.words, c.dir, c.assigns, found) {
            self.untry(why);
        }
    }

    /// The first reason is the one reported: it names the first command not cleared.
    fn untry(&mut self, why: String) {
        self.untried.get_or_insert(why);
    }

    /// `guardctl … approve|reject` or `ssh-keygen -Y…` anywhere among a command's words,
    /// whatever runs them (`setsid`, `flock`, a wrapper guardctl does not list): an approval
    /// comes from a person at a terminal, never from the agent's shell.
    fn embedded_approval(&self, words: &[Word], found: &mut Vec<Finding>) {
        let base = |w: &Word| w.literal().map(|t| t.rsplit('/').next().unwrap_or(t).to_string());
        // guardctl under another name (`cp guardctl /tmp/g; /tmp/g approve plan.json`): a
        // program given by a path, followed by `approve` or `reject` and a plan file or id.
        // An approval the trial cannot see (no plan there yet) is refused by its shape.
        let renamed = words
            .first()
            .and_then(Word::literal)
            .is_some_and(|p| p.contains('/'))
            && words.iter().enumerate().skip(1).any(|(i, w)| {
                matches!(w.literal(), Some("approve" | "reject"))
                    && words[i + 1..].iter().any(|a| {
                        a.literal().is_none_or(|t| {
                            t.ends_with(".json")
                                || t.starts_with("sha256:")
                                || (t.len() >= 8 && t.chars().all(|c| c.is_ascii_hexdigit()))
                        })
                    })
            });
        if renamed {
            found.push(Finding {
                command: shell_words(&words.iter().map(|w| w.text().to_string()).collect::<Vec<_>>()),
                dir: PathBuf::new(),
                reason: "approves or rejects a plan: a person does that, not the agent".into(),
                action: Action::Refuse {
                    why: "it looks like guardctl under another name; a person approves at their own terminal"
                        .into(),
                },
            });
            return;
        }
        for (i, w) in words.iter().enumerate().skip(1) {
            let (program, what) = match base(w).as_deref() {
                Some("guardctl")
                    if words[i + 1..].iter().any(|a| {
                        matches!(a.literal(), Some("approve" | "reject")) || a.literal().is_none()
                    }) =>
                {
                    (
                        "guardctl",
                        "approves or rejects a plan: a person does that, not the agent",
                    )
                }
                Some("ssh-keygen")
                    if words[i + 1..]
                        .iter()
                        .any(|a| a.literal().is_none_or(|t| t.starts_with("-Y") || t == "sign")) =>
                {
                    (
                        "ssh-keygen",
                        "signs with an SSH key: guardctl's approvals are SSH signatures",
                    )
                }
                _ => continue,
            };
            found.push(Finding {
                command: shell_words(&words.iter().map(|w| w.text().to_string()).collect::<Vec<_>>()),
                dir: PathBuf::new(),
                reason: what.to_string(),
                action: Action::Refuse {
                    why: format!("it runs `{program}` through another program; run nothing of the kind from the agent's shell"),
                },
            });
            return;
        }
    }

    fn words(
        &mut self,
        words: Vec<Word>,
        dir: Dir,
        assigns: Vec<(String, Word)>,
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
        // `su -c LINE`, `script -c LINE`, `flock FILE -c LINE`: the line is a script.
        if DASH_C.contains(&program.as_str()) {
            // `-c LINE`, `-qc LINE` (a cluster ending in c), `--command LINE`, `--command=LINE`.
            let dash_c = |w: &Word| {
                w.literal().is_some_and(|a| {
                    a == "--command" || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
                })
            };
            if let Some(line) = args
                .iter()
                .find_map(|w| w.literal().and_then(|a| a.strip_prefix("--command=")))
            {
                return self.nested(line, dir, found);
            }
            if program == "script" {
                // script writes a typescript file of its own, whatever it runs.
                if let Some(i) = args.iter().position(dash_c)
                    && let Some(Word::Literal(line)) = args.get(i + 1)
                {
                    self.nested(line, dir, found)?;
                }
                return Err("`script` writes a typescript file: the trial sees where".into());
            }
            if let Some(i) = args.iter().position(dash_c) {
                return match args.get(i + 1) {
                    Some(Word::Literal(script)) => self.nested(script, dir, found),
                    Some(w) => Err(format!(
                        "`{program} -c {}`: only the shell knows what that runs",
                        w.text()
                    )),
                    None => Ok(()),
                };
            }
        }
        if let Some((_, with_value, operands)) = WRAPPERS.iter().find(|(p, _, _)| *p == program) {
            if program == "command"
                && args
                    .first()
                    .and_then(Word::literal)
                    .is_some_and(|a| a == "-v" || a == "-V")
            {
                return Ok(());
            }
            let mut inner = skip_options(args, with_value);
            // `timeout DURATION COMMAND…`, `flock FILE COMMAND…`.
            inner = &inner[(*operands).min(inner.len())..];
            let escalated = matches!(program.as_str(), "sudo" | "doas" | "pkexec");
            let before = found.len();
            let untried_before = self.untried.is_some();
            let at = match &dir {
                Dir::Known(d) => d.clone(),
                Dir::Unknown => PathBuf::new(),
            };
            let judged = if program == "watch" {
                // watch joins its words and hands them to `sh -c`: `watch ls ';' rm x`.
                let line = literal_all(inner).ok_or("`watch` of a word only the shell knows")?;
                self.nested(&line.join(" "), dir, found)
            } else {
                self.words(inner.to_vec(), dir, assigns, found)
            };
            // Not cleared by reading, and the trial cannot try it: it runs with
            // `no_new_privs`, where `sudo` fails and so destroys nothing it would for real.
            if escalated
                && found.len() == before
                && (judged.is_err() || (!untried_before && self.untried.is_some()))
            {
                found.push(Finding {
                    command: shell_words(&std::iter::once(program.clone()).chain(args.iter().map(|w| w.text().to_string())).collect::<Vec<_>>()),
                    dir: at,
                    reason: "runs a command guardctl cannot clear as another user".into(),
                    action: Action::Refuse {
                        why: format!("`{program}` cannot run in the trial (it runs with no_new_privs), so its effect cannot be seen: plan it by hand, as that user"),
                    },
                });
                return Ok(());
            }
            judged?;
            if escalated {
                for f in &mut found[before..] {
                    f.action = Action::Refuse {
                        why: format!("it runs as another user (`{program}`): plan it by hand, as that user"),
                    };
                }
            }
            return wrappers::transparent(&program, args, inner);
        }
        if program == "trap" {
            // `trap 'LINE' SIGNAL…`: the line runs when the signal (or EXIT) comes.
            return match args
                .iter()
                .find(|w| !w.literal().is_some_and(|a| a.starts_with('-')))
            {
                Some(Word::Literal(script)) => self.nested(script, dir, found),
                Some(w) => Err(format!(
                    "`trap {}`: only the shell knows what that runs",
                    w.text()
                )),
                None => Ok(()),
            };
        }
        if matches!(program.as_str(), "source" | ".") {
            // A script from standard input or a process substitution is text the line made.
            return match (args.first(), &self.stdin) {
                (Some(Word::Literal(f)), words::Stdin::Text(Word::Literal(script))) if is_stdin_path(f) => {
                    let script = script.clone();
                    self.nested(&script, dir, found)
                }
                (Some(Word::Literal(f)), _) if !is_stdin_path(f) => Err(format!(
                    "`{program} {f}` runs a script file in this shell: the trial sees what it does"
                )),
                (None, _) => Ok(()),
                (Some(w), _) => Err(format!(
                    "`{program} {}`: only the shell knows what that script is",
                    w.text()
                )),
            };
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

        if program == "ssh" {
            return self.ssh(args, dir, found);
        }
        if program == "parallel" || program == "sem" {
            return self.parallel(&program, args, dir, found);
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
        if program == "git"
            && assigns
                .iter()
                .any(|(a, v)| words::git_variable(a) && !words::harmless_value(a, v))
        {
            return Err("it sets git's environment (GIT_*) for the git it runs".into());
        }
        let literal_args: Vec<String> = args.iter().map(|w| w.text().to_string()).collect();
        let is_git = program == "git";
        if is_git {
            self.git_runs(&args, &dir, found)?;
        }
        let here = match &dir {
            Dir::Known(d) => d.clone(),
            Dir::Unknown => PathBuf::new(),
        };
        let mut command = vec![program.clone()];
        command.extend(literal_args.iter().cloned());
        // Disasters are refused, never tried; so is choosing who may approve.
        let refusal = allow::catastrophic(&program, &args)
            .map(|why| ("deletes what no agent's task needs deleted", why))
            .or_else(|| self_protection(&program, &args, &assigns));
        if let Some((reason, why)) = refusal {
            found.push(Finding {
                command: shell_words(&command),
                dir: here,
                reason: reason.into(),
                action: Action::Refuse { why },
            });
            return Ok(());
        }
        if is_git && let Some(why) = git::remote_rewrite(&args) {
            found.push(Finding {
                command: shell_words(&command),
                dir: here,
                reason: "deletes or overwrites branches or tags on a remote".into(),
                action: Action::Refuse { why },
            });
            return Ok(());
        }
        let subcommand_at = |sub: &[String]| subcommand_at(&literal_args, sub, is_git);
        let Some((rule, at)) = self.rules.find(&program, &subcommand_at, &literal_args) else {
            // A word only the shell can expand could be the subcommand or option a rule names
            // (`git push -$x`, `kubectl $(echo delete)`): a rule with a remote effect is
            // refused, never guessed harmless; a local one is left to the trial.
            if args.iter().any(|w| w.literal().is_none()) {
                let known: Vec<Option<String>> = args.iter().map(|w| w.literal().map(String::from)).collect();
                let prefixes: Vec<String> = args
                    .iter()
                    .map(|w| literal_prefix(w.text()).to_string())
                    .collect();
                if let Some(rule) = self.rules.could_match(&program, &known, &prefixes, is_git) {
                    let dynamic = args
                        .iter()
                        .find(|w| w.literal().is_none())
                        .map(Word::text)
                        .unwrap_or_default();
                    if rule.local {
                        return Err(format!(
                            "`{}`: its argument `{dynamic}` is expanded by the shell and could make it {}",
                            shown(&program, &args),
                            rule.reason
                        ));
                    }
                    found.push(Finding {
                        command: shell_words(&command),
                        dir: here,
                        reason: rule.reason.clone(),
                        action: Action::Refuse {
                            why: format!(
                                "its argument `{dynamic}` is expanded by the shell and could make it destructive: spell out its arguments"
                            ),
                        },
                    });
                    return Ok(());
                }
            }
            return self.clear(name, &program, &args, &assigns, &dir);
        };
        if rule.local {
            // What the rule knows is the reason; the allowlist may still clear the form
            // (`git checkout -bfeature`, `rm -rf /tmp/x`), and otherwise the trial shows
            // exactly what it destroys.
            return self.clear(name, &program, &args, &assigns, &dir).map_err(|_| {
                format!(
                    "`{}` {}: the trial shows exactly what",
                    shown(&program, &args),
                    rule.reason
                )
            });
        }
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
            let mut names: Vec<&str> = assigns.iter().map(|(n, _)| n.as_str()).collect();
            names.sort();
            found.push(finding(
                refuse(format!(
                    "it sets {} for the command: plan it by hand (`guardctl plan exec --env NAME …`)",
                    names.join(", ")
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
                Push::Harmless => {
                    let remote = rest.iter().find(|a| !a.starts_with('-')).cloned();
                    self.assumptions.push(Assumption::Push { dir: here, remote });
                    return Ok(());
                }
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
            // Approving or signing is a person's act at their own terminal: no plan of it,
            // and no hint that would make one.
            (None, None) if matches!(program.as_str(), "guardctl" | "ssh-keygen") => refuse(
                "a person approves at their own terminal, with their own key; nothing the agent's shell runs can do it"
                    .into(),
            ),
            (None, None) => refuse(format!(
                "guardctl has no preview for it: plan it by hand with `guardctl plan exec --preview '<a command that lists what it destroys>' -- {}`",
                shell_words(&command)
            )),
        };
        found.push(finding(action, here));
        Ok(())
    }

    /// The allowlist's verdict on a command no rule makes Known. `name` is the command word
    /// as written: a program from a path other than the system's (`./ls`, `/tmp/x/cat`) is
    /// whatever that file is, not the program its name says.
    fn clear(
        &mut self,
        name: &str,
        program: &str,
        args: &[Word],
        assigns: &[(String, Word)],
        dir: &Dir,
    ) -> Result<(), String> {
        const SYSTEM: &[&str] = &["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/"];
        if name.contains('/') && !SYSTEM.iter().any(|d| name.strip_prefix(d) == Some(program)) {
            return Err(format!(
                "`{name}` runs a program from a path: the trial sees what that file does"
            ));
        }
        if let Some((n, v)) = assigns
            .iter()
            .find(|(n, v)| allow::risky_assignment(n, v).is_some())
        {
            return Err(format!("`{program}` runs with {n}={}", v.text()));
        }
        let here = match dir {
            Dir::Known(d) => d.clone(),
            Dir::Unknown => PathBuf::new(),
        };
        if program == "git" {
            git_forms::clears(args)?;
            let lit: Vec<Option<&str>> = args.iter().map(Word::literal).collect();
            let at = rules::git_subcommand_start(&lit);
            if matches!(lit.get(at), Some(Some("fetch" | "pull"))) {
                let remote = args[at + 1..]
                    .iter()
                    .filter_map(Word::literal)
                    .find(|a| !a.starts_with('-'))
                    .map(String::from);
                self.assumptions.push(Assumption::Fetch { dir: here, remote });
            }
            return Ok(());
        }
        if program == "guardctl" {
            return guardctl_clears(args);
        }
        allow::clears(program, args, &self.facts)?;
        if matches!(program, "rm" | "rmdir" | "unlink") {
            for w in args.iter().filter(|w| !w.text().starts_with('-')) {
                self.assumptions.push(Assumption::Deletes {
                    dir: here.clone(),
                    path: w.text().to_string(),
                });
            }
        }
        Ok(())
    }

    /// git subcommands that run a command line they are given: `rebase -x/--exec LINE`,
    /// `submodule foreach LINE`, `bisect run COMMAND…`, `--upload-pack=LINE`/`--receive-pack`
    /// (run by a shell): each is judged as a line of its own.
    fn git_runs(&mut self, args: &[Word], dir: &Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let lit: Vec<Option<&str>> = args.iter().map(Word::literal).collect();
        let Some(at) = lit.iter().position(|a| a.is_some_and(|a| !a.starts_with('-'))) else {
            return Ok(());
        };
        let script = |w: Option<&Word>| -> Result<Option<String>, String> {
            match w {
                Some(Word::Literal(s)) => Ok(Some(s.clone())),
                Some(w) => Err(format!(
                    "git runs `{}`: only the shell knows what that is",
                    w.text()
                )),
                None => Ok(None),
            }
        };
        let rebase = lit[at] == Some("rebase");
        let mut lines = Vec::new();
        for (i, a) in lit.iter().enumerate().skip(at + 1) {
            match *a {
                Some("-x" | "--exec") if rebase => lines.extend(script(args.get(i + 1))?),
                Some(a) if rebase && a.starts_with("-x") && a.len() > 2 => lines.push(a[2..].to_string()),
                Some(a)
                    if a.starts_with("--exec=")
                        || a.starts_with("--upload-pack=")
                        || a.starts_with("--receive-pack=") =>
                {
                    lines.push(a.split_once('=').map(|(_, v)| v.to_string()).unwrap_or_default());
                }
                Some("--upload-pack" | "--receive-pack") => lines.extend(script(args.get(i + 1))?),
                _ => {}
            }
        }
        match (lit[at], lit.get(at + 1).copied().flatten()) {
            (Some("submodule"), Some("foreach")) => {
                let words = args[at + 2..]
                    .iter()
                    .filter(|w| !w.literal().is_some_and(|a| a.starts_with('-')))
                    .map(|w| w.literal().map(String::from))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("`git submodule foreach` of a variable or substitution")?;
                lines.push(words.join(" "));
            }
            (Some("bisect"), Some("run")) => {
                self.words(args[at + 2..].to_vec(), dir.clone(), Vec::new(), found)?;
            }
            _ => {}
        }
        for line in lines {
            self.nested(&line, dir.clone(), found)?;
        }
        Ok(())
    }

    fn nested(&mut self, script: &str, dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let script = words::nested(script, dir, self.depth).map_err(|e| e.0)?;
        let (depth, stdin) = (self.depth, self.stdin.clone());
        self.depth += 1;
        self.script(script, found);
        self.depth = depth;
        self.stdin = stdin;
        Ok(())
    }

    /// `env [-i] [-u NAME] [-C DIR] [NAME=value]… COMMAND…`
    fn env(
        &mut self,
        args: &[Word],
        mut dir: Dir,
        mut assigns: Vec<(String, Word)>,
        found: &mut Vec<Finding>,
    ) -> Result<(), String> {
        // env's options as getopt reads them: clusters (`-iu NAME`, `-vS'…'`, `-iC DIR`) and
        // any unambiguous prefix of a long one (`--split-s=…`).
        let chdir = |dir: &Dir, to: Option<&Word>| match (dir, to.and_then(Word::literal)) {
            (Dir::Known(d), Some(to)) => Dir::Known(d.join(to)),
            _ => Dir::Unknown,
        };
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let Some(a) = w.literal() else { break };
            if a == "--" {
                i += 1;
                break;
            }
            if a == "-" {
                i += 1;
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let is = |full: &str| !name.is_empty() && full.starts_with(name);
                if is("split-string") && name.len() >= 2 {
                    return match value {
                        Some(v) => self.split_string(Some(v), &args[i + 1..], dir, found),
                        None => self.split_string(
                            args.get(i + 1).and_then(Word::literal),
                            args.get(i + 2..).unwrap_or_default(),
                            dir,
                            found,
                        ),
                    };
                }
                if is("chdir") && name.len() >= 2 {
                    dir = match value {
                        Some(v) => chdir(&dir, Some(&Word::Literal(v.to_string()))),
                        None => chdir(&dir, args.get(i + 1)),
                    };
                    i += if value.is_some() { 1 } else { 2 };
                    continue;
                }
                if is("unset") && value.is_none() {
                    i += 2;
                    continue;
                }
                i += 1;
                continue;
            }
            if let Some(cluster) = a.strip_prefix('-') {
                let mut next = i + 1;
                for (k, c) in cluster.char_indices() {
                    let rest = &cluster[k + c.len_utf8()..];
                    match c {
                        'S' => {
                            return if rest.is_empty() {
                                self.split_string(
                                    args.get(next).and_then(Word::literal),
                                    args.get(next + 1..).unwrap_or_default(),
                                    dir,
                                    found,
                                )
                            } else {
                                self.split_string(Some(rest), &args[next..], dir, found)
                            };
                        }
                        'u' | 'C' => {
                            let value = if rest.is_empty() {
                                next += 1;
                                args.get(next - 1).cloned()
                            } else {
                                Some(Word::Literal(rest.to_string()))
                            };
                            if c == 'C' {
                                dir = chdir(&dir, value.as_ref());
                            }
                            break;
                        }
                        _ => {}
                    }
                }
                i = next;
                continue;
            }
            if let Some((name, value)) = a.split_once('=')
                && !name.is_empty()
            {
                assigns.push((name.to_string(), Word::Literal(value.to_string())));
                i += 1;
                continue;
            }
            break;
        }
        self.words(args[i.min(args.len())..].to_vec(), dir, assigns, found)
    }

    /// `env -S STRING REST…`: env splits STRING into words and goes on reading its options
    /// there (`env -S'-C dir' git reset --hard`): read as the line `env STRING REST…`.
    fn split_string(
        &mut self,
        split: Option<&str>,
        rest: &[Word],
        dir: Dir,
        found: &mut Vec<Finding>,
    ) -> Result<(), String> {
        let split = split.ok_or("`env -S` of a variable or substitution")?;
        let rest = literal_all(rest).ok_or("`env -S` with a word only the shell knows")?;
        self.nested(&format!("env {split} {}", shell_words(&rest)), dir, found)
    }

    /// `sh [-e…] -c SCRIPT [NAME ARGS…]`: the script is read as a line of its own; so is a
    /// script on standard input from a here-string or here-document. A script from a pipe or
    /// a process substitution is text only the running line knows: unreadable.
    fn shell(&mut self, args: &[Word], dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        let mut i = 0;
        let mut inline = false;
        let mut from_stdin = false;
        while let Some(w) = args.get(i) {
            let Some(a) = w.literal() else {
                return Err(format!(
                    "the shell's argument `{}` is expanded by the shell",
                    w.text()
                ));
            };
            if a == "--" || a == "-" {
                i += 1;
                break;
            }
            if !a.starts_with('-') && !a.starts_with('+') {
                break;
            }
            if a.starts_with("--") {
                // bash's long options; two take a value.
                i += if matches!(a, "--rcfile" | "--init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            inline |= a.starts_with('-') && a.contains('c');
            from_stdin |= a.starts_with('-') && a.contains('s');
            // Each `o` or `O` in a cluster takes the next word (`-eoc pipefail '…'`).
            i += 1 + a.chars().filter(|c| *c == 'o' || *c == 'O').count();
        }
        if inline {
            return match args.get(i) {
                Some(Word::Literal(script)) => self.nested(script, dir, found),
                Some(Word::Dynamic(w)) => {
                    Err(format!("`sh -c {w}`: only the shell knows what that script is"))
                }
                None => Ok(()),
            };
        }
        let script_file = args.get(i);
        match (script_file, &self.stdin) {
            // A script file: what it does is the file's; the trial sees it.
            (Some(Word::Literal(f)), _) if !is_stdin_path(f) && !from_stdin => Err(format!(
                "the shell runs the script `{f}`: the trial sees what it does"
            )),
            (Some(Word::Dynamic(w)), _) => Err(format!(
                "the shell runs `{w}`: only the shell knows what that script is"
            )),
            (_, words::Stdin::Text(Word::Literal(script))) => {
                let script = script.clone();
                self.nested(&script, dir, found)
            }
            (_, words::Stdin::Text(_)) => Err("a shell reads a script that only the shell can expand".into()),
            (_, words::Stdin::Pipe) => {
                Err("a shell reads its script from a pipe: only the running line knows what it runs".into())
            }
            (_, words::Stdin::Unknown) => Err(
                "a shell reads its script from input the line redirects: only the running line knows what it runs"
                    .into(),
            ),
            // A shell on the line's own input: nothing here says what it runs.
            (_, words::Stdin::Inherited) => Err("a shell reads commands from the line's own input".into()),
        }
    }

    /// `xargs [OPTIONS] COMMAND ARGS…`: the command gets arguments from its input, which only
    /// the shell (and whatever feeds it) knows.
    fn xargs(&mut self, args: &[Word], dir: Dir, found: &mut Vec<Finding>) -> Result<(), String> {
        // GNU's `-e`, `-i` and `-l` take only an attached value.
        let with_value = [
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
        ];
        // Each word holding the replacement string (`-I R`, `-i` for `{}`) is input text, even
        // inside a `sh -c` script, where it would be code.
        let replace = args.iter().enumerate().find_map(|(i, w)| match w.literal()? {
            "-I" => args.get(i + 1).and_then(Word::literal).map(String::from),
            "-i" | "--replace" => Some("{}".to_string()),
            a => a
                .strip_prefix("-I")
                .or_else(|| a.strip_prefix("-i"))
                .or_else(|| a.strip_prefix("--replace="))
                .filter(|r| !r.is_empty())
                .map(String::from),
        });
        let mut inner: Vec<Word> = skip_options(args, &with_value)
            .iter()
            .map(|w| match (w.literal(), &replace) {
                (Some(t), Some(r)) if t.contains(r.as_str()) => Word::Dynamic(t.to_string()),
                _ => w.clone(),
            })
            .collect();
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

/// `guardctl --allowed-signers F …` or `GUARDCTL_ALLOWED_SIGNERS=F guardctl …`: the agent
/// choosing whose signatures count.
fn self_protection(
    program: &str,
    args: &[Word],
    assigns: &[(String, Word)],
) -> Option<(&'static str, String)> {
    let chooses = program == "guardctl"
        && (args
            .iter()
            .any(|w| w.text().starts_with("--allowed-signers") || w.text().starts_with("--allowed-s"))
            || assigns.iter().any(|(n, _)| n == "GUARDCTL_ALLOWED_SIGNERS"));
    chooses.then(|| {
        (
            "chooses who may approve guardctl's plans",
            "an agent does not choose who may approve: the allowed signers are the repository's".to_string(),
        )
    })
}

/// guardctl's own commands an agent runs to plan, wait for and apply what a person approves:
/// each is gated by guardctl itself (an apply checks the approval's signature). Approving,
/// rejecting and choosing signers are Known refusals before this; anything else is tried.
fn guardctl_clears(args: &[Word]) -> Result<(), String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.literal() {
            Some("--key" | "-C" | "--repo" | "--color") => i += 2,
            Some(a) if a.starts_with('-') => {
                if matches!(a, "--version" | "-V" | "--help" | "-h") {
                    return Ok(());
                }
                i += 1;
            }
            Some(
                "plan" | "show" | "verify" | "inbox" | "wait" | "apply" | "log" | "whoami" | "explain"
                | "help",
            ) => {
                return Ok(());
            }
            _ => {
                return Err(format!(
                    "`guardctl {}` is not one of the commands an agent runs to plan and apply",
                    w.text()
                ));
            }
        }
    }
    Ok(())
}

/// A command as the agent wrote it, for a reason: literal words quoted for a shell, words
/// only the shell can expand as written (`rm -rf "$BUILD"`, not `'"$BUILD"'`).
fn shown(program: &str, args: &[Word]) -> String {
    let mut out = shell_words(&[program.to_string()]);
    for w in args {
        out.push(' ');
        match w {
            Word::Literal(t) => out.push_str(&shell_words(std::slice::from_ref(t))),
            Word::Dynamic(raw) => out.push_str(raw),
        }
    }
    out
}

/// What a word only the shell can expand certainly starts with: its text up to the first
/// quote, expansion, glob or escape (`-$x` → `-`, `"$x"` → nothing).
fn literal_prefix(raw: &str) -> &str {
    let end = raw
        .find(['$', '`', '*', '?', '[', '{', '~', '"', '\'', '\\', '(', '<', '>'])
        .unwrap_or(raw.len());
    &raw[..end]
}

/// Paths that name the process's own standard input.
fn is_stdin_path(path: &str) -> bool {
    // `/dev/fd/3` with `3<<< …`: any descriptor the line may have given a script.
    matches!(path, "/dev/stdin" | "-") || path.starts_with("/dev/fd/") || path.starts_with("/proc/self/fd/")
}

fn literal_all(args: &[Word]) -> Option<Vec<String>> {
    args.iter().map(|w| w.literal().map(String::from)).collect()
}

/// Where `sub` starts among `args`, and so where the rest begins: for git, right after git's
/// own options (kept at the front); for other programs, anywhere among the words — a
/// subcommand after an option's value (`kubectl -n prod delete …`) still counts.
fn subcommand_at(args: &[String], sub: &[String], git: bool) -> Option<usize> {
    if sub.is_empty() {
        return Some(0);
    }
    if git {
        let words: Vec<Option<&str>> = args.iter().map(|a| Some(a.as_str())).collect();
        let i = rules::git_subcommand_start(&words);
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

#[cfg(test)]
mod tests;
