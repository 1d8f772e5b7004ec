//! The allowlist: the programs and forms that cannot destroy anything, whatever the repository
//! and the files hold. A command passes here only when it is one of them; anything else is
//! not cleared (the line is tried in the sandbox), never guessed harmless.
//!
//! To extend it: add a program to [`READERS`] when none of its options writes a file or runs
//! a program, whatever its arguments; otherwise give it an arm in [`clears`] that names the
//! options that make it unsafe. Each entry says why it cannot destroy. git's forms live in
//! [`super::git_forms::clears`]; `rm` of temporary paths in [`temporary`].

use super::words::Word;
use std::path::{Component, Path, PathBuf};

/// Programs that read, print or compute and write only their standard output, with any
/// arguments (a variable or substitution among them included): none of their options writes a
/// file, deletes one or runs a program.
const READERS: &[&str] = &[
    // Print their arguments, the environment or facts about the system.
    "echo",
    "pwd",
    "true",
    "false",
    ":",
    "whoami",
    "id",
    "uname",
    "basename",
    "dirname",
    "printenv",
    "nproc",
    "uptime",
    "arch",
    "groups",
    "tty",
    "seq",
    "sleep",
    "yes",
    "expr",
    // Read files and print them or facts about them.
    "ls",
    "cat",
    "tac",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "realpath",
    "readlink",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "nl",
    "fold",
    "column",
    "paste",
    "rev",
    "od",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "strings",
    // jq has no way to write a file or run a program.
    "jq",
    // Look programs up without running them.
    "which",
    "type",
    "whereis",
    // Directory and shell-state builtins: they move the shell or set its variables.
    "cd",
    "pushd",
    "popd",
    "dirs",
    "set",
    "shift",
    "exit",
    "return",
    "break",
    "continue",
    "umask",
    // They create and never overwrite: a directory that exists stays as it is, `touch`
    // changes times, never contents, and `mktemp` makes a new name.
    "mkdir",
    "touch",
    "mktemp",
];

/// Whether the command `program args…` (a bare name, after wrappers) is on the allowlist.
/// `Err` names what keeps it off, for `guardctl explain`.
pub(super) fn clears(program: &str, args: &[Word], facts: &Facts) -> Result<(), String> {
    let lit: Vec<Option<&str>> = args.iter().map(Word::literal).collect();
    let has = |opts: &[&str]| lit.iter().flatten().any(|a| opts.iter().any(|o| option_is(a, o)));
    let dashable = args.iter().find(|w| could_be_option(w)).map(Word::text);
    let not = |what: &str| Err(format!("`{program}` {what}"));
    if READERS.contains(&program) {
        return Ok(());
    }
    match program {
        // `jobs -x CMD` runs CMD; `wait -p NAME` assigns NAME, evaluating a subscript in it.
        "jobs" | "wait" => {
            if lit
                .iter()
                .any(|a| a.is_none_or(|a| a.starts_with('-') && a.contains(['x', 'p'])))
            {
                return not("with `-x` runs a command, with `-p` evaluates a name");
            }
            Ok(())
        }
        // `[`/`test` evaluate `-v 'a[$(…)]'`'s subscript as arithmetic: that runs code.
        "test" | "[" => {
            if lit.contains(&Some("-v")) {
                return not("with `-v` evaluates a subscript, which may run code");
            }
            Ok(())
        }
        // `printf -v NAME` assigns, and a subscripted NAME runs its code.
        "printf" => match lit.first() {
            Some(Some(a)) if a.starts_with("-v") => not("with `-v` assigns a name bash evaluates"),
            Some(None) => not("with a first word only the shell knows (it could be `-v`)"),
            _ => Ok(()),
        },
        // `read` into plain names only: `read 'a[$(…)]'` evaluates the subscript.
        "read" | "mapfile" | "readarray" => {
            // `mapfile -C CALLBACK` runs the callback.
            if lit.iter().any(|a| a.is_none_or(|a| a.starts_with("-C"))) {
                return not("runs a callback with `-C` (or may: a word only the shell knows)");
            }
            let values = ["-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u", "-c", "-O", "-s"];
            let mut i = 0;
            while let Some(w) = args.get(i) {
                match w.literal() {
                    Some(a) if values.contains(&a) => i += 2,
                    Some(a) if a.starts_with('-') => i += 1,
                    Some(a) if identifier(a) => i += 1,
                    _ => return not(&format!("into `{}`: only plain names are read", w.text())),
                }
            }
            Ok(())
        }
        // Assignments, judged with the line's other assignments; a nameref (`-n`) or an
        // integer (`-i`, evaluated as arithmetic) may run code a string holds.
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            for w in args {
                let text = w.text();
                if text.starts_with('-') || text.starts_with('+') {
                    if text.contains(['n', 'i']) {
                        return not(&format!("`{text}` makes bash evaluate a value"));
                    }
                    continue;
                }
                let name = text.split('=').next().unwrap_or_default();
                if !identifier(name) {
                    return not(&format!("assigns `{text}`, not a plain name"));
                }
            }
            Ok(())
        }
        // `sort -o FILE` writes; `--compress-program` runs a program.
        "sort" => {
            if has(&["-o", "--output", "--compress-program"]) {
                return not("writes a file or runs a program with these options");
            }
            dynamic_option(program, dashable)
        }
        // `uniq IN OUT` and `xxd IN OUT` write OUT.
        "uniq" | "xxd" => {
            let operands = args.iter().filter(|w| !w.text().starts_with('-')).count();
            if operands > 1 || dashable.is_some() {
                return not("with a second operand writes it");
            }
            Ok(())
        }
        "date" => {
            if has(&["-s", "--set"]) {
                return not("sets the clock");
            }
            dynamic_option(program, dashable)
        }
        "hostname" => {
            if !args.is_empty() && !has(&["-f", "-s", "-d", "-i", "-I", "-A", "--fqdn", "--short"]) {
                return not("with an operand sets the host's name");
            }
            Ok(())
        }
        // less and more write a log with `-o`/`-O` and run `+` commands.
        "less" | "more" => {
            if lit.iter().any(|a| a.is_none_or(|a| a.starts_with('+')))
                || has(&["-o", "-O", "--log-file", "--LOG-FILE"])
            {
                return not("writes a log or runs a command with these arguments");
            }
            Ok(())
        }
        // ripgrep runs a preprocessor with `--pre`.
        "rg" => {
            if has(&["--pre"]) {
                return not("runs a program with `--pre`");
            }
            dynamic_option(program, dashable)
        }
        "env" if args.is_empty() => Ok(()),
        // `unset 'a[$(…)]'` evaluates the subscript.
        "unset" => match args
            .iter()
            .find(|w| !w.literal().is_some_and(|a| a.starts_with('-') || identifier(a)))
        {
            Some(w) => not(&format!(
                "`{}`: only plain names are unset without evaluating anything",
                w.text()
            )),
            None => Ok(()),
        },
        // `file -C` compiles a magic file into the current directory.
        "file" => {
            if has(&["-C", "--compile"]) {
                return not("with `-C` writes a compiled magic file");
            }
            dynamic_option(program, dashable)
        }
        // ag runs `--pager COMMAND`.
        "ag" => {
            if has(&["--pager"]) {
                return not("runs a program with `--pager`");
            }
            dynamic_option(program, dashable)
        }
        "kubectl" | "docker" | "podman" | "gh" => tool_reads(program, args),
        // A plain GET or HEAD of http(s) URLs, printed to standard output: it reads. Writing
        // a file (`-o`, `-O`, a cookie jar, a trace), reading a config (`-K`), another
        // method, a body or an upload, or another scheme keep it off the list (the rules
        // refuse the requests that may change a remote resource).
        "curl" => {
            if has(&[
                "-o",
                "--output",
                "-O",
                "--remote-name",
                "--remote-name-all",
                "-K",
                "--config",
                "-c",
                "--cookie-jar",
                "-D",
                "--dump-header",
                "--trace",
                "--trace-ascii",
                "--libcurl",
                "--create-dirs",
                "-T",
                "--upload-file",
                "-d",
                "--data",
                "-F",
                "--form",
                "--json",
                "-Q",
                "--quote",
                "--stderr",
                "-w",
                "--write-out",
                "--etag-save",
                "--hsts",
                "--alt-svc",
            ]) {
                return not("writes a file, reads a config or sends a body with these options");
            }
            let mut i = 0;
            while let Some(a) = lit.get(i) {
                let Some(a) = a else {
                    return not("with a word only the shell knows");
                };
                if *a == "-X" || *a == "--request" {
                    if !matches!(lit.get(i + 1), Some(Some("GET" | "HEAD"))) {
                        return not("with a method other than GET or HEAD");
                    }
                    i += 2;
                    continue;
                }
                if a.starts_with("-X") || a.starts_with("--request=") || a.starts_with("--req") {
                    return not("with a method guardctl does not take apart");
                }
                if !(a.starts_with('-') || a.starts_with("http://") || a.starts_with("https://")) {
                    // An option's value (`-H 'Accept: …'`, `-m 5`) or another scheme.
                    let prev = i.checked_sub(1).and_then(|p| lit.get(p).copied().flatten());
                    if !prev.is_some_and(|p| {
                        matches!(
                            p,
                            "-H" | "--header"
                                | "-m"
                                | "--max-time"
                                | "-A"
                                | "--user-agent"
                                | "--connect-timeout"
                                | "-e"
                                | "--referer"
                        )
                    }) {
                        return not(&format!("`{a}`: only http and https URLs are read"));
                    }
                }
                i += 1;
            }
            Ok(())
        }
        "find" => find(args),
        "sed" | "gsed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => awk(args),
        "rm" | "rmdir" | "unlink" => temporary(program, args, facts),
        _ => Err(format!(
            "`{program}` is not a program guardctl knows cannot destroy"
        )),
    }
}

/// The read-only subcommands of tools agents query (`kubectl get`, `docker ps`, `gh pr
/// view`): they print what a server holds and change nothing. The subcommand is the first
/// word that is neither an option nor the value of one of `VALUED`; an option that points
/// the tool at another configuration (which may name a program to run) is not cleared.
fn tool_reads(program: &str, args: &[Word]) -> Result<(), String> {
    const VALUED: &[&str] = &[
        "-n",
        "--namespace",
        "--context",
        "--cluster",
        "--user",
        "-o",
        "--output",
        "-l",
        "--selector",
        "-c",
        "--container",
        "--since",
        "--tail",
        "-R",
        "--repo",
        "-H",
        "--host",
        "-f",
        "--format",
        "-L",
        "--limit",
        "-s",
        "--state",
        "-q",
        "--jq",
        "-t",
        "--template",
    ];
    let reads: &[&str] = match program {
        "kubectl" => &[
            "get",
            "describe",
            "logs",
            "explain",
            "version",
            "api-resources",
            "api-versions",
            "top",
            "cluster-info",
        ],
        "docker" | "podman" => &[
            "ps", "images", "logs", "inspect", "version", "info", "stats", "top", "port", "history", "diff",
        ],
        _ => &["view", "list", "status", "diff", "checks", "search", "browse"],
    };
    let mut words = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(a) = w.literal() else {
            return Err(format!(
                "`{program} {}`: only the shell knows that word",
                w.text()
            ));
        };
        if a.starts_with("--kubeconfig") || a.starts_with("--config") || a.starts_with("--exec") {
            return Err(format!("`{program} {a}` reads another configuration"));
        }
        if VALUED.contains(&a) {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            words.push(a);
        }
        i += 1;
    }
    // gh's verb comes after its group (`gh pr view`); the others' first word is the verb.
    let verb = if program == "gh" {
        words.get(1)
    } else {
        words.first()
    };
    match verb {
        Some(v) if reads.contains(v) && !(program == "gh" && words.first() == Some(&"api")) => Ok(()),
        _ => Err(format!(
            "`{program} {}` is not a form guardctl knows changes nothing",
            words.join(" ")
        )),
    }
}

/// What the line says elsewhere that decides about a command here.
#[derive(Debug, Clone, Default)]
pub(super) struct Facts {
    /// Variables assigned once on the line, from `$(mktemp …)`: a fresh temporary path.
    pub mktemp: Vec<String>,
    /// The line assigns `TMPDIR`: `$TMPDIR` is not the system's temporary directory.
    pub tmpdir_set: bool,
}

impl Facts {
    /// `line`'s facts. A name counts as assigned once only when the line mentions it bare
    /// (not as `$name`/`${name}`) exactly once: `read tmp`, `for tmp in …`, `printf -v tmp`
    /// or `eval tmp=…` assign it too, without an assignment word.
    pub(super) fn of(line: &str, assigns: &[(String, Word)]) -> Facts {
        let once =
            |n: &str| assigns.iter().filter(|(m, _)| m == n).count() == 1 && bare_mentions(line, n) == 1;
        let mktemp = assigns
            .iter()
            .filter(|(n, v)| once(n) && is_mktemp(v))
            .map(|(n, _)| n.clone())
            .collect();
        Facts {
            mktemp,
            tmpdir_set: bare_mentions(line, "TMPDIR") > 0,
        }
    }
}

/// How often `line` names `name` as a whole word other than to expand it (`$name`,
/// `${name…}`): every place it may be assigned, and some where it is only text.
pub(super) fn bare_mentions(line: &str, name: &str) -> usize {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(name)
        .filter(|(at, _)| {
            let before = line[..*at].chars().next_back();
            let after = line[at + name.len()..].chars().next();
            !before.is_some_and(word)
                && !after.is_some_and(word)
                && before != Some('$')
                && !line[..*at].ends_with("${")
                && !line[..*at].ends_with("${!")
        })
        .count()
}

/// `$(mktemp)`, `"$(mktemp -d)"`, `$(mktemp -t x.XXXX)`: a path mktemp just created.
fn is_mktemp(value: &Word) -> bool {
    let raw = value.text().trim_matches('"');
    let Some(inner) = raw.strip_prefix("$(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let mut words = inner.split_whitespace();
    words.next() == Some("mktemp")
        && words.all(|w| {
            // `-u` only prints a name; `-p DIR`/`--tmpdir=DIR` may put it anywhere.
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
                && !matches!(w, "-u" | "--dry-run" | "-p")
                && !w.starts_with("--tmpdir")
                && !w.starts_with("--dry")
        })
}

/// `rm`/`rmdir`/`unlink` of temporary paths only: one name directly in `/tmp` or
/// `/var/tmp` (a deeper path may pass through a symbolic link someone put there), in
/// `$TMPDIR`, or a `$(mktemp)` result of this line. `--help`/`--version` delete nothing.
pub(super) fn temporary(program: &str, args: &[Word], facts: &Facts) -> Result<(), String> {
    let mut operands = Vec::new();
    let mut after_dashes = false;
    for w in args {
        match w.literal() {
            Some("--help" | "--version") if !after_dashes => return Ok(()),
            Some("--") if !after_dashes => after_dashes = true,
            Some(a) if !after_dashes && a.starts_with('-') && a.len() > 1 => {
                let known = [
                    "--recursive",
                    "--force",
                    "--dir",
                    "--verbose",
                    "--one-file-system",
                    "--preserve-root",
                    "--ignore-fail-on-non-empty",
                    "--parents",
                ];
                let cluster = !a.starts_with("--") && a[1..].chars().all(|c| "rRfdvp".contains(c));
                if !known.contains(&a) && !cluster {
                    return Err(format!("`{program} {a}` is an option guardctl does not read"));
                }
            }
            _ => operands.push(w),
        }
    }
    if operands.is_empty() {
        return Ok(());
    }
    match operands.iter().find(|w| !is_temporary(w, facts)) {
        Some(w) => Err(format!(
            "`{program}` deletes `{}`, not a temporary path: the trial shows what it destroys",
            w.text()
        )),
        None => Ok(()),
    }
}

fn is_temporary(w: &Word, facts: &Facts) -> bool {
    match w {
        // A `..` is taken by the kernel after it follows a link (`/tmp/link/../x` may be
        // anywhere): only paths without one are read as text.
        Word::Literal(path) if path.split('/').any(|c| c == "..") => false,
        Word::Literal(path) => {
            let p = logical(Path::new(path));
            let under = |root: &str| {
                p.strip_prefix(root)
                    .is_ok_and(|rest| rest.components().count() == 1 && !path.ends_with('/'))
            };
            under("/tmp") || under("/var/tmp")
        }
        Word::Dynamic(raw) => {
            // `$TMPDIR/x`, `"${TMPDIR}"/x`, `"$tmp"`, `$tmp/x` with `tmp=$(mktemp -d)`.
            let bare = raw.replace('"', "");
            let (var, rest) = match bare.strip_prefix("${") {
                Some(r) => match r.split_once('}') {
                    Some((v, rest)) => (v.to_string(), rest.to_string()),
                    None => return false,
                },
                None => match bare.strip_prefix('$') {
                    Some(r) => {
                        let end = r
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(r.len());
                        (r[..end].to_string(), r[end..].to_string())
                    }
                    None => return false,
                },
            };
            let plain_rest = rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
                && !rest.split('/').any(|c| c == "..");
            if !plain_rest || raw.matches('$').count() != 1 {
                return false;
            }
            // `${TMPDIR:-/tmp}/x` is `/tmp/x` when TMPDIR is unset.
            let var = match var.as_str() {
                "TMPDIR:-/tmp" | "TMPDIR:-/var/tmp" => "TMPDIR".to_string(),
                _ => var,
            };
            if var == "TMPDIR" {
                let parts: Vec<&str> = rest.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
                return !facts.tmpdir_set
                    && rest.starts_with('/')
                    && parts.len() == 1
                    && !rest.ends_with('/');
            }
            facts.mktemp.contains(&var) && (rest.is_empty() || rest.starts_with('/'))
        }
    }
}

/// `rm -r` of a path whose loss is a disaster (`/`, `~`, `.`, `*`, a system directory): a
/// refusal, never a trial. The reason, when `args` are such.
pub(super) fn catastrophic(program: &str, args: &[Word]) -> Option<String> {
    if program != "rm" {
        return None;
    }
    let lit: Vec<&str> = args.iter().filter_map(Word::literal).collect();
    let recursive = lit.iter().any(|a| {
        *a == "--recursive" || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R']))
    });
    if lit.contains(&"--no-preserve-root") {
        return Some("it is told to delete `/` as well (`--no-preserve-root`)".into());
    }
    if !recursive {
        return None;
    }
    const SYSTEM: &[&str] = &[
        "/", "/usr", "/etc", "/home", "/var", "/bin", "/sbin", "/opt", "/boot", "/root", "/srv", "/dev",
        "/proc", "/sys",
    ];
    for w in args {
        let raw = w.text().replace(['"', '\''], "");
        if raw.starts_with('-') && w.literal().is_some() {
            continue;
        }
        let trimmed = raw.trim_end_matches('/');
        let norm = if raw.starts_with('/') {
            logical(Path::new(&raw)).to_string_lossy().into_owned()
        } else {
            trimmed.to_string()
        };
        let home = ["~", "$HOME", "${HOME}", "~/*", "$HOME/*", "${HOME}/*"];
        let here = [".", "..", "*", "./*", "../*", ".*", ""];
        let bad = SYSTEM.contains(&norm.as_str())
            || norm == "/*"
            || norm.starts_with("/lib")
            || home.contains(&trimmed)
            || (here.contains(&trimmed) && !raw.is_empty());
        if bad {
            return Some(format!(
                "it deletes `{}` recursively: that is never an agent's task; a person does it by hand",
                w.text()
            ));
        }
    }
    None
}

/// `find` without the actions that delete, run or write (`-delete`, `-exec`, `-fprint`…).
/// An action's name as the value of a test (`-name -delete`) is not an action.
fn find(args: &[Word]) -> Result<(), String> {
    const ACTS: &[&str] = &["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];
    // Tests and options that take the next word as their value.
    const VALUED: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-size",
        "-newer",
        "-anewer",
        "-cnewer",
        "-samefile",
        "-inum",
        "-links",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-used",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-fstype",
        "-context",
        "-regextype",
        "-files0-from",
        "-D",
        "-O",
    ];
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.literal() {
            // What `-exec` runs is judged as a command of its own (`Classifier::find_exec`).
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                i += args[i..]
                    .iter()
                    .position(|w| matches!(w.literal(), Some(";" | "+")))
                    .unwrap_or(args.len())
                    + 1;
            }
            Some(a) if ACTS.contains(&a) => return Err(format!("`find {a}` deletes, runs or writes")),
            Some(a) if VALUED.contains(&a) || a.starts_with("-newer") => i += 2,
            Some(_) => i += 1,
            // A word only the shell knows may be an action.
            None if could_be_option(w) => {
                return Err(format!(
                    "`find {}`: a word only the shell knows could be `-delete`",
                    w.text()
                ));
            }
            None => i += 1,
        }
    }
    Ok(())
}

/// `sed` whose script provably neither writes nor runs: no `-i`, no script file, and no `w`,
/// `W`, `e` command or `w`/`e` flag of `s` (checked conservatively: any such letter where a
/// command may stand, and any `w`/`e` after an `s` command's last delimiter).
fn sed(args: &[Word]) -> Result<(), String> {
    let mut scripts = Vec::new();
    let mut i = 0;
    let mut script_given = false;
    while let Some(w) = args.get(i) {
        let Some(a) = w.literal() else {
            if !script_given || could_be_option(w) {
                return Err(format!(
                    "`sed {}`: only the shell knows that script or option",
                    w.text()
                ));
            }
            i += 1;
            continue;
        };
        if a == "--" {
            // After `--` the first word is the script, if none came before.
            if !script_given {
                match args.get(i + 1).map(|w| w.literal()) {
                    Some(Some(script)) => scripts.push(script.to_string()),
                    Some(None) => return Err("`sed --` of a script only the shell knows".into()),
                    None => {}
                }
            }
            break;
        }
        if a == "-l" {
            // `-l N`: the line length, not the script.
            i += 2;
            continue;
        }
        // GNU sed takes any unambiguous abbreviation of a long option (`--i` is
        // `--in-place`, `--exp` is `--expression`): only the harmless ones, spelled out.
        if a.starts_with("--") {
            const SPELLED: &[&str] = &[
                "--quiet",
                "--silent",
                "--regexp-extended",
                "--posix",
                "--debug",
                "--null-data",
                "--zero-terminated",
                "--separate",
                "--unbuffered",
                "--sandbox",
                "--help",
                "--version",
                "--expression",
            ];
            if !(SPELLED.contains(&a) || a.starts_with("--expression=") || a.starts_with("--line-length=")) {
                return Err(format!(
                    "`sed {a}`: a long option guardctl does not know spelled out (GNU sed takes abbreviations)"
                ));
            }
        }
        if a.starts_with("-i")
            || a.starts_with("--in-place")
            || a.starts_with("-f")
            || a.starts_with("--file")
        {
            return Err(format!(
                "`sed {a}` edits files in place or reads its script from a file"
            ));
        }
        if a == "-e" || a == "--expression" {
            match args.get(i + 1).and_then(Word::literal) {
                Some(s) => scripts.push(s.to_string()),
                None => return Err("`sed -e` of a script only the shell knows".into()),
            }
            script_given = true;
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s.to_string());
            script_given = true;
        } else if a.starts_with('-') && a.len() > 1 {
            if !a.starts_with("--") && a.contains(['i', 'f', 'e']) {
                return Err(format!("`sed {a}`: a cluster guardctl does not take apart"));
            }
        } else if !script_given {
            scripts.push(a.to_string());
            script_given = true;
        }
        i += 1;
    }
    for s in &scripts {
        if sed_writes(s) {
            return Err(format!("`sed` script `{s}` may write a file or run a command"));
        }
    }
    Ok(())
}

/// Whether a sed script may write a file or run a command: a `w`, `W` or `e` command, or a
/// `w`/`e` flag of `s`. Conservative: a `w` or `e` anywhere outside a regular expression, an
/// `s`/`y` body, or the text of `a`/`i`/`c`/`r`/`R` counts (`r` only reads).
fn sed_writes(script: &str) -> bool {
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            's' | 'y' => {
                let Some(delim) = chars.next() else { return false };
                if delim == '\\' || delim == '\n' {
                    return true;
                }
                let mut parts = 0;
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == delim {
                        parts += 1;
                        if parts == 2 {
                            break;
                        }
                    }
                }
                if c == 's' {
                    while let Some(&f) = chars.peek() {
                        if f == 'g'
                            || f == 'p'
                            || f == 'i'
                            || f == 'I'
                            || f == 'm'
                            || f == 'M'
                            || f.is_ascii_digit()
                        {
                            chars.next();
                        } else if f == 'w' || f == 'W' || f == 'e' {
                            return true;
                        } else {
                            break;
                        }
                    }
                }
            }
            'w' | 'W' | 'e' => return true,
            // Text of `a`, `i`, `c`, labels, `r` file names: to the end of the line, which
            // may hold no command letters of its own.
            'a' | 'i' | 'c' | 'r' | 'R' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            // A label ends at `;` too: what follows is read.
            ':' | 'b' | 't' | 'T' => {
                for c in chars.by_ref() {
                    if c == '\n' || c == ';' {
                        break;
                    }
                }
            }
            '/' | '\\' => {
                // An address regex: skip to its end.
                let delim = if c == '\\' {
                    chars.next().unwrap_or('/')
                } else {
                    '/'
                };
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == delim {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// `awk` whose program cannot write or run: no `system(`, no pipe, no `>` (print to a file),
/// no program file, no `@load`/`-l` extension.
fn awk(args: &[Word]) -> Result<(), String> {
    let mut program = false;
    for (i, w) in args.iter().enumerate() {
        let Some(a) = w.literal() else {
            // The program, or an option, only the shell knows.
            if !program || could_be_option(w) {
                return Err(format!(
                    "`awk {}`: only the shell knows that program or option",
                    w.text()
                ));
            }
            continue;
        };
        // mawk's `-W exec`/`-Wexec`, and any other `-W` or long option (abbreviations are
        // taken): off the allowlist.
        if a.starts_with("-W") || (a.starts_with("--") && a != "--") {
            return Err(format!("`awk {a}`: an option that may run a program file"));
        }
        if a.starts_with("-f")
            || a.starts_with("--file")
            || a.starts_with("-l")
            || a.starts_with("--load")
            || a.starts_with("-E")
            || a.starts_with("--exec")
            || a.starts_with("-i")
            || a.starts_with("--include")
        {
            return Err(format!("`awk {a}` runs a program file or an extension"));
        }
        // Every word is checked, not only the one taken for the program: `--source=…`,
        // `-e …` and a program after `--` are programs too, and a file name never needs
        // these.
        if a.contains("system")
            || a.contains('|')
            || a.contains('>')
            || a.contains("@load")
            || a.contains("@include")
        {
            return Err(format!("`awk` program `{a}` may write a file or run a command"));
        }
        let value = i > 0
            && matches!(
                args[i - 1].literal(),
                Some("-F" | "-v" | "--field-separator" | "--assign")
            );
        program |= !value && !a.starts_with('-');
    }
    Ok(())
}

/// A word only the shell knows that may expand to an option (its certain start is empty or
/// a dash).
pub(super) fn could_be_option(w: &Word) -> bool {
    match w {
        Word::Literal(_) => false,
        Word::Dynamic(raw) => {
            let prefix = super::literal_prefix(raw);
            prefix.is_empty() || prefix.starts_with('-')
        }
    }
}

fn dynamic_option(program: &str, dashable: Option<&str>) -> Result<(), String> {
    match dashable {
        Some(w) => Err(format!(
            "`{program} {w}`: only the shell knows that word, and it could be an option that writes"
        )),
        None => Ok(()),
    }
}

/// `a` is option `o`: itself, `o=value`, or (short) `o` with its value attached or in a cluster.
fn option_is(a: &str, o: &str) -> bool {
    if o.starts_with("--") {
        // GNU's getopt_long takes any unambiguous abbreviation (`sort --o=F` is `--output`):
        // any prefix counts, ambiguous or not (an ambiguous one only sends the line to the
        // trial).
        let name = a.split('=').next().unwrap_or(a);
        return a == o || a.starts_with(&format!("{o}=")) || (name.len() >= 3 && o.starts_with(name));
    }
    let letter = &o[1..];
    a.starts_with('-') && !a.starts_with("--") && a[1..].contains(letter)
}

/// Variables the line may set only with an assignment guardctl reads: set any other way
/// (`read PATH`, `for PATH in …`, `printf -v HOME`), the line is tried.
pub(super) fn sensitive(name: &str) -> bool {
    name == "PATH"
        || name == "TMPDIR"
        || name.starts_with("LD_")
        || super::words::git_variable(name)
        || risky_assignment(name, &Word::Dynamic(String::new())).is_some()
}

/// Why assigning `name` (anywhere on the line: its commands may see it) keeps the line off
/// the allowlist: variables that make programs run or read what they name (an editor, a
/// pager, a preloaded library, git's own, a home with other start-up files), and a `PATH`
/// with a relative, empty or temporary entry (a program there would answer to `ls`).
pub(super) fn risky_assignment(name: &str, value: &Word) -> Option<String> {
    const RUNS: &[&str] = &[
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "LESS",
        "SSH_ASKPASS",
        "BROWSER",
        "SUDO_ASKPASS",
        "HOME",
        "XDG_CONFIG_HOME",
        "RIPGREP_CONFIG_PATH",
        "SHELLOPTS",
        "BASHOPTS",
        "GUARDCTL_ALLOWED_SIGNERS",
    ];
    if name == "PATH" {
        let raw = value.text().replace(['"', '\''], "");
        let fine = raw.split(':').all(|entry| {
            let absolute =
                entry.starts_with('/') && !entry.contains('$') && !entry.split('/').any(|c| c == "..");
            let temporary = ["/tmp", "/var/tmp", "/dev/shm"]
                .iter()
                .any(|t| entry == *t || entry.starts_with(&format!("{t}/")));
            matches!(entry, "$PATH" | "${PATH}")
                || (absolute && !temporary)
                || ((entry.starts_with("$HOME/") || entry.starts_with("${HOME}/"))
                    && entry.matches('$').count() == 1)
        });
        return (!fine).then(|| {
            format!(
                "it sets PATH to `{}`: a program there would answer to an allowed name",
                value.text()
            )
        });
    }
    let risky = RUNS.contains(&name) || name.starts_with("LD_") || super::words::git_variable(name);
    (risky && !super::words::harmless_value(name, value)).then(|| {
        format!(
            "it sets {name}, which makes programs run or read what it names: the trial sees what that does"
        )
    })
}

/// A shell variable's name: what `read` and `declare` may assign without evaluating anything.
pub(super) fn identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where an output redirection may write without destroying anything: the null device, the
/// terminal's streams, a descriptor, or a path `mktemp` made on this line.
pub(super) fn harmless_write(w: &Word, facts: &Facts) -> bool {
    match w.literal() {
        Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") => true,
        // `/dev/fd/N` only: `/dev/fd/../../x` is any file.
        Some(p)
            if p.strip_prefix("/dev/fd/")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())) =>
        {
            true
        }
        // Only a fresh `mktemp` path: `/tmp/x` may be a symbolic link to a file in the work
        // tree (an earlier line may have made it), and writing follows it.
        _ => matches!(w, Word::Dynamic(_)) && is_temporary(w, facts),
    }
}

/// `path` with `.` and `..` taken away as text.
fn logical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
