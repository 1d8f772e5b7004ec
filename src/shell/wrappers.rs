//! Programs that run other programs: wrappers (`sudo`, `timeout`, `setsid`…) with the options
//! each takes before the command, shells, and programs that run a `-c` line.

use super::words::Word;

/// Programs that run the rest of their arguments as a command: (program, its options that
/// take a value — short ones also at the end of a cluster, `-iu root` — and how many operands
/// come before the command: `timeout DURATION`, `flock FILE`, `taskset MASK`, `chrt PRIO`).
/// A wrapper guardctl does not list is a program off the allowlist: the line is tried.
pub(super) const WRAPPERS: &[(&str, &[&str], usize)] = &[
    (
        "sudo",
        &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-U",
            "-T",
            "-R",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--chroot",
            "--close-from",
        ],
        0,
    ),
    ("doas", &["-u", "-C"], 0),
    ("nice", &["-n", "--adjustment"], 0),
    (
        "ionice",
        &[
            "-c",
            "-n",
            "-p",
            "-P",
            "-u",
            "--class",
            "--classdata",
            "--pid",
            "--pgid",
            "--uid",
        ],
        0,
    ),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"], 1),
    ("stdbuf", &["-i", "-o", "-e", "--input", "--output", "--error"], 0),
    ("nohup", &[], 0),
    ("time", &["-f", "-o", "--format", "--output"], 0),
    ("command", &[], 0),
    ("builtin", &[], 0),
    ("exec", &["-a"], 0),
    ("chronic", &[], 0),
    ("setsid", &[], 0),
    ("flock", &["-w", "--timeout", "-E", "--conflict-exit-code"], 1),
    ("taskset", &[], 1),
    ("chrt", &[], 1),
    (
        "unshare",
        &[
            "--map-user",
            "--map-group",
            "--propagation",
            "--setgroups",
            "-S",
            "--setuid",
            "-G",
            "--setgid",
            "-R",
            "--root",
            "-w",
            "--wd",
        ],
        0,
    ),
    (
        "strace",
        &["-o", "-e", "-p", "-u", "-s", "-a", "-O", "-E", "-P", "-X", "-b"],
        0,
    ),
    ("ltrace", &["-o", "-e", "-p", "-u", "-s", "-a", "-n", "-E"], 0),
    (
        "nsenter",
        &[
            "-t", "--target", "-S", "--setuid", "-G", "--setgid", "-r", "--root", "-w", "--wd",
        ],
        0,
    ),
    ("firejail", &[], 0),
    (
        "systemd-run",
        &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "--description",
            "--slice",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--working-directory",
            "-M",
            "--machine",
            "-H",
            "--host",
        ],
        0,
    ),
    ("busybox", &[], 0),
    ("catchsegv", &[], 0),
    ("valgrind", &[], 0),
    ("faketime", &[], 1),
    ("caffeinate", &["-t", "-w"], 0),
    (
        "watch",
        &["-n", "--interval", "-d", "-g", "-q", "--differences"],
        0,
    ),
    (
        "setpriv",
        &[
            "--reuid",
            "--regid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
        ],
        0,
    ),
    ("prlimit", &["-p", "--pid"], 0),
    ("chroot", &["--userspec", "--groups"], 1),
    ("unbuffer", &[], 0),
    ("fakeroot", &["-l", "--lib", "--faked", "-s", "-i"], 0),
    ("pkexec", &["--user"], 0),
];

/// Whether a wrapper that ran `inner` adds nothing of its own to judge: it only runs the
/// command (as another user, later, with a time limit). The others write files of their own
/// (`strace -o`, `script`'s typescript, `time -o`, `valgrind --log-file`), run the command in
/// another root or namespace (`chroot`, `unshare`, `nsenter`, `firejail`), as a service
/// (`systemd-run`), or run a shell when given no command (`sudo -s`, `sudo -e` edits a
/// file): the command is judged all the same, and the line is left to the trial.
pub(super) fn transparent(program: &str, args: &[Word], inner: &[Word]) -> Result<(), String> {
    const PLAIN: &[&str] = &[
        "sudo",
        "doas",
        "nice",
        "ionice",
        "timeout",
        "stdbuf",
        "nohup",
        "time",
        "command",
        "builtin",
        "exec",
        "chronic",
        "setsid",
        "flock",
        "taskset",
        "chrt",
        "caffeinate",
        "watch",
        "setpriv",
        "prlimit",
        "unbuffer",
        "fakeroot",
        "pkexec",
        "faketime",
        "catchsegv",
    ];
    let lit: Vec<&str> = args[..args.len() - inner.len()]
        .iter()
        .filter_map(Word::literal)
        .collect();
    let writes = program == "time"
        && lit
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--o") || a.starts_with("-a"));
    let shell = matches!(program, "sudo" | "doas")
        && (inner.is_empty()
            || lit.iter().any(|a| {
                a.starts_with("--edit")
                    || a.starts_with("--shell")
                    || a.starts_with("--login")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['e', 's', 'i']))
            }));
    if !PLAIN.contains(&program)
        || writes
        || shell
        || (program != "exec" && inner.is_empty() && program != "command")
    {
        return Err(format!(
            "`{program}` does more than run the command (its own files, another root, a shell): the trial sees it"
        ));
    }
    Ok(())
}

/// Shells: `-c SCRIPT` is read as a line of its own, so is a script given on standard input
/// by a here-string or here-document; a pipe into one is unreadable.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "zsh", "dash", "ksh", "ksh93", "mksh", "oksh", "loksh", "pdksh", "ash", "yash",
    "posh", "fish", "tcsh", "csh",
];

/// Programs that run a string argument as a shell line with `-c` (or `--command`).
pub(super) const DASH_C: &[&str] = &["su", "runuser", "script", "sg", "flock"];

/// The words after a wrapper's own options: `with_value` names those that take the next
/// word as their value (`-u root`, `--user root`), also at the end of a cluster (`-iu root`);
/// inside a cluster (`-n5`) the rest of it is the value.
pub(super) fn skip_options<'w>(args: &'w [Word], with_value: &[&str]) -> &'w [Word] {
    let takes = |c: char| with_value.iter().any(|v| v.len() == 2 && v.ends_with(c));
    let mut i = 0;
    while let Some(a) = args.get(i).and_then(Word::literal) {
        if a == "--" {
            return &args[i + 1..];
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let takes_value = if a.starts_with("--") {
            // An abbreviation takes a value as the option does (`--sig KILL`, `--out L`).
            !a.contains('=')
                && a.len() > 2
                && with_value.iter().any(|v| v.starts_with("--") && v.starts_with(a))
        } else {
            let letters: Vec<char> = a[1..].chars().collect();
            match letters.iter().position(|c| takes(*c)) {
                Some(at) => at + 1 == letters.len(),
                None => false,
            }
        };
        i += if takes_value { 2 } else { 1 };
    }
    &args[i.min(args.len())..]
}
