//! git's command line as git reads it: its own options before the subcommand (`-C`, `-c`, the
//! ones that point it elsewhere or make it run programs), and the arguments of the
//! subcommands guardctl plans natively (`branch -d/-D`, `tag -d`, `push`). The forms the
//! allowlist clears are in `git_forms`.

use super::Action;
use super::words::{Dir, Word};

/// git's options before its subcommand: `-C DIR` moves the command (and is dropped from the
/// words, so that a preview runs where the command does); `-c`, `--no-pager` and the like
/// stay. One that points git at another repository (`--git-dir`, `--work-tree`), defines an
/// alias or a program git runs (`-c alias.x=…`, `-c core.sshCommand=…`), or that guardctl
/// does not know (it might take the next word as its value) makes the line unreadable with
/// confidence. `None`: no subcommand (`git --version`).
pub(super) fn git_globals(args: &[Word], mut dir: Dir) -> Result<Option<(Dir, Vec<Word>)>, String> {
    const PLAIN: &[&str] = &[
        "-p",
        "-P",
        "--paginate",
        "--no-pager",
        "--no-replace-objects",
        "--no-lazy-fetch",
        "--no-optional-locks",
        "--no-advice",
        "--bare",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--version",
        "--help",
        "-v",
        "-h",
        "--html-path",
        "--man-path",
        "--info-path",
        "--exec-path",
    ];
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
            // `-Crepo`: git takes a short option's value attached too.
            a if a.starts_with("-C") && a.len() > 2 => {
                dir = match &dir {
                    Dir::Known(d) => Dir::Known(d.join(&a[2..])),
                    Dir::Unknown => Dir::Unknown,
                };
                i += 1;
            }
            "-c" => {
                let setting = args.get(i + 1).map(Word::text).unwrap_or_default();
                if runs_a_program(setting) {
                    return Err(format!("`git -c {setting}` makes git run something of its own"));
                }
                kept.extend_from_slice(&args[i..(i + 2).min(args.len())]);
                i += 2;
            }
            a if a.starts_with("-c") && a.len() > 2 => {
                if runs_a_program(&a[2..]) {
                    return Err(format!("`git {a}` makes git run something of its own"));
                }
                kept.push(w.clone());
                i += 1;
            }
            a if PLAIN.contains(&a)
                || (a.starts_with("--")
                    && a.contains('=')
                    && ![
                        "--git-dir",
                        "--work-tree",
                        "--namespace",
                        "--config-env",
                        "--exec-path",
                    ]
                    .iter()
                    .any(|p| a.starts_with(p))) =>
            {
                kept.push(w.clone());
                i += 1;
            }
            a if a.starts_with('-') => {
                return Err(format!(
                    "git's option `{a}` is one guardctl does not read: it may take the next word"
                ));
            }
            _ => break,
        }
    }
    if i >= args.len() {
        return Ok(None);
    }
    // The options kept go first, as written: rules match the subcommand after them.
    let mut words = kept;
    words.extend_from_slice(&args[i..]);
    Ok(Some((dir, words)))
}

/// A git setting (`key=value`) that makes git run a program or a command of its own.
pub(super) fn runs_a_program(setting: &str) -> bool {
    let key = setting.split('=').next().unwrap_or_default().to_ascii_lowercase();
    key.starts_with("alias.")
        || [
            "fsmonitor",
            "sshcommand",
            "hookspath",
            "pager",
            "editor",
            "askpass",
            "command",
            "clean",
            "smudge",
            "process",
            "textconv",
            "proxy",
            "program",
            "helper",
            "exec",
            "external",
            "uploadpack",
            "receivepack",
            "tool",
            "cmd",
        ]
        .iter()
        .any(|k| key.ends_with(k))
}

/// `git push` with a `-c` setting that rewrites the remote (`remote.NAME.mirror`, a
/// `remote.NAME.push` refspec, `push.*`), or `send-pack`-like transports the native push
/// plan does not read: refused, with the plan line that gates it.
pub(super) fn remote_rewrite(args: &[Word]) -> Option<String> {
    let lit: Vec<Option<&str>> = args.iter().map(Word::literal).collect();
    let at = super::rules::git_subcommand_start(&lit);
    if lit.get(at).copied().flatten() != Some("push") {
        return None;
    }
    let settings = settings(&args[..at]);
    let rewrites = settings.iter().find(|k| {
        let k = k.split('=').next().unwrap_or_default().to_ascii_lowercase();
        (k.starts_with("remote.") && (k.ends_with(".mirror") || k.ends_with(".push")))
            || k.starts_with("push.")
            || k.starts_with("url.")
    })?;
    Some(format!(
        "`-c {rewrites}` makes this push mirror or force refs on the remote; plan it with `guardctl plan exec --preview 'git push --dry-run --porcelain …' -- git …`"
    ))
}

/// The `-c KEY=VALUE` settings among git's own options.
pub(super) fn settings(globals: &[Word]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(a) = globals.get(i).map(Word::text) {
        if a == "-c" {
            out.push(globals.get(i + 1).map(Word::text).unwrap_or_default().to_string());
            i += 2;
        } else {
            if let Some(kv) = a
                .strip_prefix("-c")
                .filter(|kv| !kv.is_empty() && !a.starts_with("--"))
            {
                out.push(kv.to_string());
            }
            i += 1;
        }
    }
    out
}

/// `git branch` arguments after `branch`, with `-d`, `-D` or `--delete` among them.
pub(super) fn branches(rest: &[String]) -> Action {
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
pub(super) fn tags(rest: &[String]) -> Action {
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

pub(super) enum Push {
    /// An ordinary push: it adds, never deletes or overwrites.
    Harmless,
    /// Deletions, as guardctl plans them.
    Plans(Vec<Action>),
    /// A push that may overwrite the remote's branches.
    Force,
    Refuse(String),
}

/// `git push` arguments after `push`.
pub(super) fn push(rest: &[String]) -> Push {
    let mut delete = false;
    let mut force = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        if a == "--" {
            operands.extend(rest[i + 1..].iter().cloned());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            // git takes any unambiguous prefix of a long option (`--dele`, `--forc`).
            let (name, value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            let abbreviates = |full: &str| !name.is_empty() && full.starts_with(name);
            if name == "repo" || (name.len() >= 2 && abbreviates("repo")) {
                return Push::Refuse("`git push --repo`: name the remote as the first operand".into());
            }
            if name.len() >= 2 && abbreviates("dry-run") {
                return Push::Harmless;
            }
            delete |= abbreviates("delete");
            force |= abbreviates("force")
                || name.starts_with("force")
                || (name.len() >= 2 && (abbreviates("mirror") || abbreviates("prune")));
            if !value
                && ["push-option", "receive-pack", "exec"]
                    .iter()
                    .any(|o| name.len() >= 2 && abbreviates(o))
            {
                i += 1;
            }
        } else if a.starts_with('-') && a.len() > 1 {
            // A cluster: `-o` takes a value (the rest of it, or the next word).
            for (k, c) in a[1..].char_indices() {
                match c {
                    'n' => return Push::Harmless,
                    'd' => delete = true,
                    'f' => force = true,
                    'o' => {
                        if k + 2 == a.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            operands.push(a.to_string());
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
