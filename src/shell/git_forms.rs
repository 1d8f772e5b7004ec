//! The git forms on the allowlist: what `git …` may run with no further work. Read-only
//! subcommands, and the everyday writes that keep what they replace; any option or setting
//! that discards work, forces a ref or runs a program keeps the command off the list.

use super::git::{runs_a_program, settings};
use super::words::Word;

/// A `-c` setting that makes git run, read or trust something else, change what a later
/// command deletes or where it fetches from: off the allowlist (the trial sees it).
fn risky_setting(setting: &str) -> bool {
    // An allowlist: git has settings that run programs under many names
    // (`interactive.diffFilter`, `man.<tool>.path`, `init.templateDir`'s hooks), so only
    // those that change what is printed are cleared.
    let (key, value) = setting.split_once('=').unwrap_or((setting, ""));
    let key = key.to_ascii_lowercase();
    let printing = [
        "color.",
        "advice.",
        "column.",
        "log.",
        "format.pretty",
        "format.date",
    ]
    .iter()
    .any(|p| key.starts_with(p))
        || matches!(
            key.as_str(),
            "core.quotepath" | "user.name" | "user.email" | "init.defaultbranch"
        )
        || (key.starts_with("pager.") && matches!(value, "false" | "true" | "cat" | ""));
    !printing || runs_a_program(setting)
}

/// The git forms on the allowlist, given git's words after `git_globals` (its kept options,
/// the subcommand, the rest). Read-only subcommands, and the everyday writes that keep what
/// they replace (a commit, a branch switch that refuses to overwrite changes, a rebase whose
/// old commits stay in the reflog, a fetch that neither prunes nor forces). Anything that can
/// discard work, move a branch by force or delete a ref is not cleared: the trial shows it.
pub(super) fn clears(args: &[Word]) -> Result<(), String> {
    let lit: Vec<Option<&str>> = args.iter().map(Word::literal).collect();
    let at = super::rules::git_subcommand_start(&lit);
    if let Some(k) = settings(&args[..at]).iter().find(|k| risky_setting(k)) {
        return Err(format!("`git -c {k}` changes what git runs, trusts or deletes"));
    }
    let Some(sub) = args.get(at) else {
        return Ok(());
    };
    let Some(sub) = sub.literal() else {
        return Err(format!(
            "git's subcommand `{}` is expanded by the shell",
            sub.text()
        ));
    };
    let rest = &args[at + 1..];
    let not = |what: &str| Err(format!("`git {sub}` {what}"));
    let first = rest.iter().find(|w| !w.text().starts_with('-')).map(Word::text);
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "cat-file" | "blame"
        | "annotate" | "describe" | "shortlog" | "rev-list" | "merge-base" | "show-ref" | "for-each-ref"
        | "name-rev" | "var" | "version" | "help" | "count-objects" | "whatchanged" | "diff-tree"
        | "diff-index" | "diff-files" | "check-ignore" | "check-attr" | "check-ref-format" | "ls-remote"
        | "show-branch" | "cherry" | "range-diff" | "grep" => {
            // `--output FILE` overwrites a file; `grep -O` runs a program on the matches.
            let short = if sub == "grep" { "O" } else { "" };
            operands(sub, rest, &["output", "open-files-in-pager"], short, &[]).map(|_| ())
        }
        // No option of theirs deletes, overwrites a file or runs a program: any word will do.
        "add" | "commit" => Ok(()),
        "merge" | "cherry-pick" | "revert" | "rebase" => {
            // `--abort` and `--skip` throw away what was resolved so far; `--exec` (and any
            // abbreviation of it, `--exe`) runs a command at each step: tried.
            operands(
                sub,
                rest,
                &["abort", "skip", "exec"],
                if sub == "rebase" { "x" } else { "" },
                &["-m", "-s", "-X", "--onto"],
            )
            .map(|_| ())
        }
        "fetch" | "pull" => {
            // Pruning deletes refs; a forced or `:` refspec moves them; `--depth` hides
            // history; another transport program runs a command.
            let ops = operands(
                sub,
                rest,
                &[
                    "prune",
                    "prune-tags",
                    "refmap",
                    "force",
                    "update-head-ok",
                    "depth",
                    "deepen",
                    "shallow-since",
                    "shallow-exclude",
                    "upload-pack",
                    "mirror",
                    "update-shallow",
                ],
                "fpPu",
                &[
                    "-j",
                    "--jobs",
                    "-o",
                    "--server-option",
                    "-s",
                    "--strategy",
                    "-X",
                    "--strategy-option",
                ],
            )?;
            for w in ops {
                match w.literal() {
                    Some(r) if r.starts_with('+') || r.contains(':') && !r.contains("://") => {
                        return not(&format!("with the refspec `{r}` may move local refs"));
                    }
                    Some(r) if r.contains("::") => {
                        return not(&format!("from `{r}` runs a transport program"));
                    }
                    Some(_) => {}
                    None => return not(&format!("with `{}` only the shell knows", w.text())),
                }
            }
            Ok(())
        }
        "init" => operands(sub, rest, &["template", "separate-git-dir"], "", &[]).map(|_| ()),
        "clone" => {
            let ops = operands(
                sub,
                rest,
                &["upload-pack", "template", "separate-git-dir", "config"],
                "uc",
                &[
                    "-o",
                    "--origin",
                    "-b",
                    "--branch",
                    "--depth",
                    "-j",
                    "--jobs",
                    "--reference",
                ],
            )?;
            for w in ops {
                match w.literal() {
                    Some(r) if r.contains("::") || r.starts_with("ext:") => {
                        return not(&format!("from `{r}` runs a transport program"));
                    }
                    Some(_) => {}
                    None => return not(&format!("from `{}`: only the shell knows the URL", w.text())),
                }
            }
            Ok(())
        }
        // Only a dry run lists without deleting (`clean.requireForce` may be off).
        "clean" => {
            let dry = rest.iter().filter_map(Word::literal).any(|a| {
                a == "--dry-run"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && a.contains('n')
                        && a[1..].chars().all(|c| "dfnqxX".contains(c)))
            });
            let interactive = rest.iter().any(|w| {
                w.literal().is_none_or(|a| {
                    a == "--interactive"
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains(['i', 'e']))
                })
            });
            if dry && !interactive {
                Ok(())
            } else {
                not("without `-n` deletes untracked files")
            }
        }
        "checkout" => {
            let allowed = [
                "quiet",
                "track",
                "no-track",
                "guess",
                "no-guess",
                "detach",
                "recurse-submodules",
                "no-recurse-submodules",
                "progress",
                "no-progress",
                "ignore-other-worktrees",
            ];
            let creates = rest.iter().filter_map(Word::literal).any(|a| {
                a.starts_with("--track")
                    || a == "--detach"
                    || a == "-t"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && a[1..].starts_with(['b', 'q'])
                        && a.contains('b'))
            });
            let ops = only(sub, rest, &allowed, "qtb", &["-b"])?;
            match ops.as_slice() {
                [] => Ok(()),
                [w] if w.literal() == Some("-") => Ok(()),
                [_] if creates => Ok(()),
                _ => not(
                    "with an operand may restore paths over uncommitted changes (a path and a branch look the same here)",
                ),
            }
        }
        "switch" => {
            let allowed = [
                "create",
                "detach",
                "track",
                "no-track",
                "guess",
                "no-guess",
                "quiet",
                "recurse-submodules",
                "no-recurse-submodules",
                "progress",
                "no-progress",
                "ignore-other-worktrees",
            ];
            let creates = rest.iter().filter_map(Word::literal).any(|a| {
                a.starts_with("--create") || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
            });
            let ops = only(sub, rest, &allowed, "cdtq", &["-c", "--create"])?;
            if ops.len() <= 1 + usize::from(creates) {
                Ok(())
            } else {
                not("with these operands")
            }
        }
        "branch" => {
            let allowed = [
                "all",
                "remotes",
                "verbose",
                "list",
                "contains",
                "no-contains",
                "merged",
                "no-merged",
                "show-current",
                "sort",
                "format",
                "points-at",
                "color",
                "no-color",
                "column",
                "no-column",
                "ignore-case",
                "abbrev",
                "no-abbrev",
                "quiet",
                "track",
                "no-track",
            ];
            only(
                sub,
                rest,
                &allowed,
                "arvlqit",
                &[
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--sort",
                    "--format",
                    "--points-at",
                ],
            )
            .map(|_| ())
        }
        "tag" => {
            let allowed = [
                "list",
                "contains",
                "no-contains",
                "merged",
                "no-merged",
                "points-at",
                "sort",
                "format",
                "column",
                "no-column",
                "ignore-case",
                "color",
                "annotate",
                "message",
                "file",
                "cleanup",
            ];
            only(
                sub,
                rest,
                &allowed,
                "lnaimF0123456789",
                &[
                    "-m",
                    "--message",
                    "-F",
                    "--file",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "--sort",
                    "--format",
                ],
            )
            .map(|_| ())
        }
        "remote" => match first {
            None | Some("show" | "get-url") => Ok(()),
            Some(_) => not("changes the remotes"),
        },
        "config" => {
            // A read only when every option is a read or a harmless modifier, spelled out
            // (`--comment --get KEY VALUE` sets KEY; `--file --get …` writes a file named
            // `--get`), and at most a key and a pattern follow.
            const READS: &[&str] = &[
                "--get",
                "--get-all",
                "--get-regexp",
                "--get-urlmatch",
                "--list",
                "-l",
                "--get-color",
                "--get-colorbool",
            ];
            const MODIFIERS: &[&str] = &[
                "--global",
                "--local",
                "--system",
                "--worktree",
                "--show-origin",
                "--show-scope",
                "--null",
                "-z",
                "--name-only",
                "--includes",
                "--no-includes",
                "--bool",
                "--int",
                "--path",
            ];
            let lit: Vec<Option<&str>> = rest.iter().map(Word::literal).collect();
            let Some(words) = lit.iter().copied().collect::<Option<Vec<&str>>>() else {
                return not("with a word only the shell knows");
            };
            let (options, operands): (Vec<&str>, Vec<&str>) = words.iter().partition(|a| a.starts_with('-'));
            let known = options.iter().all(|a| {
                READS.contains(a)
                    || MODIFIERS.contains(a)
                    || a.starts_with("--type=")
                    || a.starts_with("--default=")
            });
            let subcommand_read = matches!(operands.first(), Some(&("get" | "list")));
            let flag_read = options.iter().any(|a| READS.contains(a));
            if known && (flag_read || subcommand_read) && operands.len() <= 3 {
                Ok(())
            } else {
                not("sets configuration, or reads it in a form guardctl does not take apart")
            }
        }
        "stash" => match first {
            None
            | Some("list" | "show" | "push" | "save" | "pop" | "apply" | "branch" | "create" | "store") => {
                Ok(())
            }
            Some(_) => not("drops stashed changes or does what guardctl does not read"),
        },
        "reflog" => match first {
            None | Some("show" | "list") => Ok(()),
            Some(_) => not("may drop reflog entries"),
        },
        "worktree" => match first {
            Some("list") => Ok(()),
            _ => not("changes worktrees"),
        },
        _ => Err(format!(
            "`git {sub}` is not a git form guardctl knows cannot destroy"
        )),
    }
}

/// The operands among `rest`, refusing any option whose long name starts with one of
/// `banned` (git takes abbreviations: `--pru` is `--prune`) or whose short cluster holds a
/// letter of `banned_short`. `valued` options take the next word as their value. A word
/// only the shell knows that may be an option is refused, unless it is such a value or
/// `--name=…` with a name that is not banned.
fn operands<'w>(
    sub: &str,
    rest: &'w [Word],
    banned: &[&str],
    banned_short: &str,
    valued: &[&str],
) -> Result<Vec<&'w Word>, String> {
    scan(
        sub,
        rest,
        valued,
        &|long: &str| banned.iter().any(|b| b.starts_with(long)),
        &|c| banned_short.contains(c),
    )
}

/// As [`operands`], but only the long options in `allowed` (exactly) and short letters in
/// `allowed_short` pass.
fn only<'w>(
    sub: &str,
    rest: &'w [Word],
    allowed: &[&str],
    allowed_short: &str,
    valued: &[&str],
) -> Result<Vec<&'w Word>, String> {
    scan(sub, rest, valued, &|long: &str| !allowed.contains(&long), &|c| {
        !allowed_short.contains(c)
    })
}

fn scan<'w>(
    sub: &str,
    rest: &'w [Word],
    valued: &[&str],
    bad_long: &dyn Fn(&str) -> bool,
    bad_short: &dyn Fn(char) -> bool,
) -> Result<Vec<&'w Word>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = rest.get(i) {
        i += 1;
        let text = match w {
            Word::Literal(a) => a.as_str(),
            Word::Dynamic(raw) => {
                let prefix = super::literal_prefix(raw);
                if prefix.starts_with("--") && prefix.contains('=') {
                    prefix
                } else if super::allow::could_be_option(w) {
                    return Err(format!(
                        "`git {sub} {raw}`: only the shell knows that word, and it could be an option"
                    ));
                } else {
                    out.push(w);
                    continue;
                }
            }
        };
        if text == "--" {
            out.extend(&rest[i..]);
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            if bad_long(name) {
                return Err(format!("`git {sub} {text}` is a form guardctl does not clear"));
            }
            if !long.contains('=') && valued.contains(&text) {
                i += 1;
            }
            continue;
        }
        if text.starts_with('-') && text.len() > 1 {
            for (k, c) in text[1..].char_indices() {
                if bad_short(c) {
                    return Err(format!("`git {sub} {text}` is a form guardctl does not clear"));
                }
                if valued.iter().any(|v| v.len() == 2 && v.ends_with(c)) {
                    // The rest of the cluster is the value, or the next word is.
                    if k + 2 == text.len() {
                        i += 1;
                    }
                    break;
                }
            }
            continue;
        }
        out.push(w);
    }
    Ok(out)
}
