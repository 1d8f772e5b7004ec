//! Pinning for `exec`: which files run, their content, and a private copy to run them from.
//!
//! [`analyze`] derives, from a plan's commands, every file that runs: the program of the
//! command and of each simple command in the preview, before-image and verify strings (bare
//! names resolved through `PATH` as the shell would, builtins excepted), the shell that runs
//! those strings, the script an interpreter runs (`sh x.sh`, `sh -e x.sh`, `python3 x.py`,
//! `. lib.sh`; code options are per interpreter), each looked for through known wrappers
//! (`env`, `exec`, `command`, `nice`, `timeout`, ...), and every `--pin` path (directories
//! as trees). A literal word of those strings that names a work-tree file and is not pinned
//! is listed, for planning to refuse ([`Analysis::refuse_unpinned`]). Each is recorded with its content digest and,
//! for a symbolic link, the link and its target.
//!
//! [`Staged`] copies exactly those files into a fresh private directory (mode 0700, under the
//! system temporary directory, never anywhere a plan names), checks every copy against the
//! expected digest, and gives the command lines rewritten to run the copies.
//!
//! Invariants: apply never trusts the plan's list: it re-derives it and compares; the copy's
//! layout is computed from paths guardctl resolved itself, each checked to hold only plain
//! components. Not pinned: what a script calls by name, reads or sources outside these files,
//! the interpreter named by a `#!` line, and the system's shared libraries.

use super::shell;
use crate::error::{Error, Result};
use crate::plan::model::{ExecInputs, FileDigest, PinSource, Pinned};
use crate::text::{safe, short_digest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// At most this many files are pinned (a `--pin` of a huge tree is a mistake).
const MAX_FILES: usize = 10_000;
/// At most this many bytes are pinned and copied.
const MAX_BYTES: u64 = 512 << 20;

/// Shell builtins and the words `sh` never looks up in `PATH`.
const BUILTINS: [&str; 38] = [
    ":", "[", "alias", "bg", "break", "cd", "command", "continue", "echo", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read", "readonly",
    "return", "set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset",
    "wait",
];

/// Programs whose first operand naming a file is code they run (`.` and `source` read it).
const INTERPRETERS: [&str; 18] = [
    ".", "source", "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "python", "python2", "python3", "perl",
    "ruby", "node", "php", "lua", "Rscript",
];

/// Shells: code on the command line is `-c`, alone or in a cluster (`-ec`).
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// Whether the option `w` of the interpreter `base` says its code is on the command line (so
/// no operand is a script). Other options are skipped and the script is still looked for.
fn is_code_option(base: &str, w: &str) -> bool {
    // In a cluster (`-Bc`), the first letter of `takes_rest` takes the rest of the word as
    // its argument (`-W error`, `-Ilib`): letters after it are not options.
    let cluster = |code: &[char], takes_rest: &[char]| {
        !w.starts_with("--")
            && w[1..]
                .chars()
                .find(|c| code.contains(c) || takes_rest.contains(c))
                .is_some_and(|c| code.contains(&c))
    };
    if SHELLS.contains(&base) {
        return !w.starts_with("--") && w.len() > 1 && w[1..].contains('c');
    }
    if base == "python" || base.starts_with("python2") || base.starts_with("python3") {
        return cluster(&['c', 'm'], &['W', 'X']);
    }
    match base {
        "perl" => cluster(&['e', 'E'], &['I', 'M', 'm', 'i', 'x', 'd', 'D', 'C', '0', 'l']),
        "ruby" => cluster(&['e'], &['I', 'r', 'C', 'E', 'x', 'T', 'W', '0', 'l']),
        "node" => ["-e", "-p", "--eval", "--print"].contains(&w) || w.starts_with("--eval="),
        "php" => ["-r", "-R", "-B", "-E"].contains(&w),
        "lua" | "Rscript" => w == "-e",
        _ => false,
    }
}

/// Programs that run the command after their options (and, for some, one more operand):
/// `(name, options that take the next word as their argument, operands before the command)`.
const WRAPPERS: [(&str, &[&str], usize); 10] = [
    (
        "env",
        &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        0,
    ),
    ("exec", &["-a"], 0),
    ("command", &[], 0),
    ("nice", &["-n", "--adjustment"], 0),
    ("nohup", &[], 0),
    ("timeout", &["-s", "--signal", "-k", "--kill-after"], 1),
    ("time", &["-f", "--format", "-o", "--output"], 0),
    ("stdbuf", &["-i", "-o", "-e", "--input", "--output", "--error"], 0),
    ("setsid", &[], 0),
    (
        "xargs",
        &[
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
        ],
        0,
    ),
];

/// The index of each program a simple command runs: its first word, then, while that is a
/// known wrapper (`env`, `exec`, `command`, `nice`, `timeout 60`, ...), the command it runs
/// after its options. The chain stops at a word that is not a literal, and is cut short
/// (`None` for the command) when a wrapper's options make it run no command (`command -v`)
/// or a command guardctl cannot read (`env -S STRING`).
pub(crate) fn chain(words: &[Option<&str>]) -> (Vec<usize>, bool) {
    let mut out = vec![0];
    let mut at = 0;
    loop {
        let Some(Some(program)) = words.get(at) else {
            return (out, true);
        };
        let base = program.rsplit('/').next().unwrap_or(program);
        let Some((name, with_arg, operands)) = WRAPPERS.iter().find(|w| w.0 == base) else {
            return (out, true);
        };
        let mut i = at + 1;
        // Options.
        while let Some(Some(w)) = words.get(i) {
            if *w == "--" {
                i += 1;
                break;
            }
            if !w.starts_with('-') || *w == "-" {
                break;
            }
            if (*name == "command" && (w.contains('v') || w.contains('V')))
                || (*name == "env" && (*w == "-S" || w.starts_with("--split-string") || w.starts_with("-S")))
            {
                return (out, false);
            }
            // `nice -n 5` takes the next word; `-n5`, `-5` and `--adjustment=5` do not.
            i += if with_arg.contains(w) { 2 } else { 1 };
        }
        if *name == "env" {
            while let Some(Some(w)) = words.get(i) {
                if !w.contains('=') {
                    break;
                }
                i += 1;
            }
        }
        i += operands;
        match words.get(i) {
            Some(Some(_)) => {
                out.push(i);
                at = i;
            }
            Some(None) => return (out, false),
            None => return (out, true),
        }
    }
}

/// Which command string of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    Preview,
    BeforeImage,
    Verify,
}

impl Script {
    pub fn label(self) -> &'static str {
        match self {
            Script::Preview => "preview",
            Script::BeforeImage => "before-image command",
            Script::Verify => "verify command",
        }
    }

    fn of<'a>(self, inputs: &Commands<'a>) -> Option<&'a str> {
        match self {
            Script::Preview => Some(inputs.preview),
            Script::BeforeImage => inputs.before_image,
            Script::Verify => inputs.verify,
        }
    }
}

/// The command lines of an exec plan, as given.
#[derive(Debug, Clone, Copy)]
pub struct Commands<'a> {
    pub command: &'a [String],
    pub preview: &'a str,
    pub before_image: Option<&'a str>,
    pub verify: Option<&'a str>,
    pub pin: &'a [String],
}

impl<'a> From<&'a ExecInputs> for Commands<'a> {
    fn from(x: &'a ExecInputs) -> Self {
        Commands {
            command: &x.command,
            preview: &x.preview,
            before_image: x.before_image.as_deref(),
            verify: x.verify.as_deref(),
            pin: &x.pin,
        }
    }
}

/// A word to rewrite: its byte range in a command string and the pinned entry it names.
type Span = (usize, usize, usize);

/// Every pinned file, and where each command line names one.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub pinned: Vec<Pinned>,
    /// Absolute path each pinned entry was read from.
    sources: Vec<PathBuf>,
    /// For each word of the command: the pinned entry it names.
    argv: Vec<Option<usize>>,
    /// For each command string: the words to rewrite.
    spans: Vec<(Script, Vec<Span>)>,
    /// The shell that runs the command strings.
    shell: usize,
    /// Literal words of the command strings that name a regular file of the work tree (not
    /// under `.git`) and are not pinned as a program or a script. Planning refuses them
    /// ([`Analysis::refuse_unpinned`]): guardctl cannot tell that they are not run. Apply
    /// does not (a file a before-image creates is data), it compares the pinned files.
    unpinned: Vec<(Script, String)>,
}

impl Analysis {
    /// At planning time: refuse a command string that names a file of the work tree that is
    /// not pinned (it could be a script run in a way not recognised, then unpinned).
    pub fn refuse_unpinned(&self) -> Result<()> {
        match self.unpinned.first() {
            None => Ok(()),
            Some((which, word)) => Err(Error::usage(format!(
                "the {} names {}, a file in the work tree that is not pinned: guardctl cannot tell that it is not run",
                which.label(),
                safe(word)
            ))
            .with_hint(
                "give a script as an interpreter's operand (`sh x.sh`, `env sh x.sh`); leave data files out of the command strings (name their directory, or read them from a script)",
            )),
        }
    }
}

/// `sha256:` and the first 12 characters of a digest, for messages (by characters: a digest
/// read from a plan is the planner's string until it is compared).
fn sha256_hex(bytes: &[u8]) -> String {
    crate::plan::envelope::hex(&Sha256::digest(bytes))
}

fn utf8(p: &Path) -> Result<String> {
    p.to_str()
        .map(String::from)
        .ok_or_else(|| Error::usage(format!("{} is not a UTF-8 path", safe(&p.to_string_lossy()))))
}

/// Relative to `top` when inside it, else absolute.
fn shown(top: &Path, p: &Path) -> Result<String> {
    match p.strip_prefix(top) {
        Ok(rel) if !rel.as_os_str().is_empty() => utf8(rel),
        _ => utf8(p),
    }
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `sh` would find the bare `name`: the first executable file of that name in `PATH`.
pub fn find_on_path(name: &str, path: Option<&OsStr>, dir: &Path) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .map(|d| {
            let d = if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d
            };
            dir.join(d).join(name)
        })
        .find(|c| is_executable_file(c))
}

/// `p` with its directory's symbolic links resolved, its last component kept (so a link to a
/// program is recorded as the link).
fn resolve_parent(p: &Path) -> Result<PathBuf> {
    let parent = p.parent().unwrap_or(Path::new("/"));
    let parent = std::fs::canonicalize(parent)
        .map_err(|e| Error::usage(format!("cannot resolve {}", safe(&p.to_string_lossy()))).caused_by(e))?;
    Ok(match p.file_name() {
        Some(name) => parent.join(name),
        None => parent,
    })
}

struct Budget {
    files: usize,
    bytes: u64,
}

impl Budget {
    fn take(&mut self, bytes: u64, what: &Path) -> Result<()> {
        self.files += 1;
        self.bytes += bytes;
        if self.files > MAX_FILES || self.bytes > MAX_BYTES {
            return Err(Error::usage(format!(
                "pinning {} goes over {MAX_FILES} files or {} MiB",
                safe(&what.to_string_lossy()),
                MAX_BYTES >> 20
            ))
            .with_hint("pin only what the commands run: the scripts and their helpers"));
        }
        Ok(())
    }
}

/// Read `p`, charging the budget for the bytes actually read (a file's size can say 0 and
/// its content not end: `/proc/self/pagemap`). Reads stop one buffer past what is left; the
/// buffer is whole (not `take(left + 1)`): some special files refuse reads of odd sizes.
fn read_file(p: &Path, budget: &mut Budget) -> Result<Vec<u8>> {
    use std::io::Read;
    let err =
        |e: std::io::Error| Error::usage(format!("cannot read {}", safe(&p.to_string_lossy()))).caused_by(e);
    let left = MAX_BYTES.saturating_sub(budget.bytes);
    let mut f = std::fs::File::open(p).map_err(err)?;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while bytes.len() as u64 <= left {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(e)),
        };
        bytes.extend_from_slice(&buf[..n]);
    }
    budget.take(bytes.len() as u64, p)?;
    Ok(bytes)
}

/// Every file under `dir`, sorted, relative and with its digest. Links to files count as
/// those files; links to anything else, and special files, are refused.
fn tree(dir: &Path, budget: &mut Budget) -> Result<Vec<FileDigest>> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<FileDigest>, budget: &mut Budget) -> Result<()> {
        let here = root.join(rel);
        let mut entries: Vec<_> = std::fs::read_dir(&here)
            .map_err(|e| Error::usage(format!("cannot list {}", safe(&here.to_string_lossy()))).caused_by(e))?
            .collect::<std::io::Result<_>>()
            .map_err(|e| {
                Error::usage(format!("cannot list {}", safe(&here.to_string_lossy()))).caused_by(e)
            })?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let rel = rel.join(e.file_name());
            let path = root.join(&rel);
            let kind = e
                .file_type()
                .map_err(|err| Error::usage("cannot read a directory entry").caused_by(err))?;
            if kind.is_dir() {
                walk(root, &rel, out, budget)?;
            } else if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                let bytes = read_file(&path, budget)?;
                out.push(FileDigest {
                    path: utf8(&rel)?,
                    sha256: sha256_hex(&bytes),
                });
            } else {
                return Err(Error::usage(format!(
                    "{} is neither a file nor a directory (a link to a directory, or a special file); pin its target instead",
                    safe(&path.to_string_lossy())
                )));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out, budget)?;
    Ok(out)
}

fn tree_digest(entries: &[FileDigest]) -> String {
    let mut h = Sha256::new();
    for e in entries {
        h.update(e.path.as_bytes());
        h.update([0]);
        h.update(e.sha256.as_bytes());
        h.update(b"\n");
    }
    crate::plan::envelope::hex(&h.finalize())
}

/// Record one file or directory as found at `abs`.
fn pin_one(
    top: &Path,
    name: &str,
    found: PinSource,
    abs: &Path,
    budget: &mut Budget,
) -> Result<(Pinned, PathBuf)> {
    let at = resolve_parent(abs)?;
    let meta = std::fs::symlink_metadata(&at)
        .map_err(|e| Error::usage(format!("cannot read {}", safe(&at.to_string_lossy()))).caused_by(e))?;
    let canonical = std::fs::canonicalize(&at)
        .map_err(|e| Error::usage(format!("cannot resolve {}", safe(&at.to_string_lossy()))).caused_by(e))?;
    let (link, target) = if meta.file_type().is_symlink() {
        let link = std::fs::read_link(&at).map_err(|e| Error::usage("cannot read a link").caused_by(e))?;
        (Some(utf8(&link)?), Some(shown(top, &canonical)?))
    } else {
        (None, None)
    };
    let real =
        std::fs::metadata(&canonical).map_err(|e| Error::usage("cannot read a pinned file").caused_by(e))?;
    let (sha256, tree) = if real.is_dir() {
        let entries = tree(&canonical, budget)?;
        (tree_digest(&entries), entries)
    } else if real.is_file() {
        (sha256_hex(&read_file(&canonical, budget)?), Vec::new())
    } else {
        return Err(Error::usage(format!(
            "{} is not a file or a directory",
            safe(&at.to_string_lossy())
        )));
    };
    Ok((
        Pinned {
            name: name.to_string(),
            found,
            path: shown(top, &at)?,
            link,
            target,
            sha256,
            executable: real.is_file() && real.permissions().mode() & 0o100 != 0,
            tree,
        },
        canonical,
    ))
}

struct Builder<'a> {
    top: &'a Path,
    dir: &'a Path,
    path_env: Option<&'a OsStr>,
    pinned: Vec<Pinned>,
    sources: Vec<PathBuf>,
    budget: Budget,
}

impl Builder<'_> {
    /// Pin `abs` (once, however often it is named); its index.
    fn add(&mut self, name: &str, found: PinSource, abs: &Path) -> Result<usize> {
        let (p, source) = pin_one(self.top, name, found, abs, &mut self.budget)?;
        if let Some(i) = self.pinned.iter().position(|q| q.path == p.path) {
            return Ok(i);
        }
        self.pinned.push(p);
        self.sources.push(source);
        Ok(self.pinned.len() - 1)
    }

    /// The program a command names: a path (relative to the working directory) or a bare
    /// name found through `PATH`. `None`: a builtin of the shell (`in_shell`), or nothing by
    /// that name.
    fn program(&mut self, word: &str, in_shell: bool) -> Result<Option<usize>> {
        if word.contains('/') {
            let abs = self.dir.join(word);
            return if abs.is_file() {
                self.add(word, PinSource::Argument, &abs).map(Some)
            } else {
                Ok(None)
            };
        }
        if in_shell && (BUILTINS.contains(&word) || word == "." || word == "source") {
            return Ok(None);
        }
        match find_on_path(word, self.path_env, self.dir) {
            Some(abs) => self.add(word, PinSource::Path, &abs).map(Some),
            None => Ok(None),
        }
    }

    /// For an interpreter, the script it runs: its first operand naming a file, unless an
    /// option says the code is on the command line. `words` start at the interpreter.
    /// Returns (word index, pinned entry).
    fn script(&mut self, words: &[Option<&str>]) -> Result<Option<(usize, usize)>> {
        let Some(Some(program)) = words.first() else {
            return Ok(None);
        };
        let base = program.rsplit('/').next().unwrap_or(program);
        if !(INTERPRETERS.contains(&base) || base.starts_with("python3.")) {
            return Ok(None);
        }
        for (i, w) in words.iter().enumerate().skip(1) {
            let Some(w) = w else { return Ok(None) };
            if w.starts_with('-') && *w != "-" {
                if is_code_option(base, w) {
                    return Ok(None);
                }
                continue;
            }
            let abs = self.dir.join(w);
            if abs.is_file() {
                return self.add(w, PinSource::Argument, &abs).map(|p| Some((i, p)));
            }
        }
        Ok(None)
    }

    /// Every program a simple command runs (through wrappers) and the script its last one
    /// runs: (word index, pinned entry) for each word to rewrite. The first word is pinned
    /// by the caller (`first`: whether to pin it here).
    fn command_words(
        &mut self,
        words: &[Option<&str>],
        in_shell: bool,
        first: bool,
    ) -> Result<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        let (programs, runs) = chain(words);
        let mut shell_lookup = in_shell;
        for (n, &i) in programs.iter().enumerate() {
            let Some(w) = words[i] else { break };
            if (n > 0 || first)
                && let Some(p) = self.program(w, shell_lookup)?
            {
                out.push((i, p));
            }
            // Only the shell's own `exec` and `command` run builtins; `env` and the
            // others look every name up in PATH.
            shell_lookup = in_shell && n == 0 && ["exec", "command"].contains(&w);
        }
        let last = *programs.last().unwrap_or(&0);
        if runs && let Some((i, p)) = self.script(&words[last..])? {
            out.push((last + i, p));
        }
        Ok(out)
    }
}

/// Whether `word` names a regular file inside the work tree `top` (not under `.git`).
fn names_work_tree_file(top: &Path, dir: &Path, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let abs = dir.join(word);
    if !std::fs::metadata(&abs).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(real) = std::fs::canonicalize(&abs) else {
        return false;
    };
    real.strip_prefix(top)
        .is_ok_and(|rel| rel.components().next() != Some(Component::Normal(OsStr::new(".git"))))
}

/// Every file the plan's commands run, found now, and where each command names one.
/// `path_env` is the `PATH` the commands get; `dir` the directory they run in.
pub fn analyze(top: &Path, dir: &Path, path_env: Option<&OsStr>, c: Commands) -> Result<Analysis> {
    let top =
        std::fs::canonicalize(top).map_err(|e| Error::usage("cannot resolve the work tree").caused_by(e))?;
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| Error::usage("cannot resolve the working directory").caused_by(e))?;
    let mut b = Builder {
        top: &top,
        dir: &dir,
        path_env,
        pinned: Vec::new(),
        sources: Vec::new(),
        budget: Budget { files: 0, bytes: 0 },
    };
    let (program, _) = c
        .command
        .split_first()
        .ok_or_else(|| Error::usage("give the command after `--`"))?;
    let mut argv = vec![None; c.command.len()];
    argv[0] = Some(b.program(program, false)?.ok_or_else(|| {
        Error::usage(format!("cannot find the program {}", safe(program))).with_hint(
            if program.contains('/') {
                "give a path to a file, relative to the working directory"
            } else {
                "it must be an executable file in a directory of PATH"
            },
        )
    })?);
    let words: Vec<Option<&str>> = c.command.iter().map(|w| Some(w.as_str())).collect();
    for (i, p) in b.command_words(&words, false, false)? {
        argv[i] = Some(p);
    }
    let shell = match find_on_path("sh", path_env, &dir) {
        Some(abs) => b.add("sh", PinSource::Path, &abs)?,
        None => {
            return Err(Error::usage(
                "cannot find sh in PATH: the preview runs with `sh -c`",
            ));
        }
    };
    let mut spans = Vec::new();
    let mut unpinned = Vec::new();
    for which in [Script::Preview, Script::BeforeImage, Script::Verify] {
        let Some(script) = which.of(&c) else { continue };
        let mut rewrites = Vec::new();
        for cmd in shell::commands(script) {
            let values: Vec<Option<&str>> = cmd.iter().map(|w| w.value.as_deref()).collect();
            let named = b.command_words(&values, true, true)?;
            for &(i, p) in &named {
                rewrites.push((cmd[i].start, cmd[i].end, p));
            }
            // The backstop: any other word naming a file of the work tree might be code
            // run in a way not recognised above, which would run unpinned (see `unpinned`).
            for (i, v) in values.iter().enumerate() {
                if let Some(v) = v
                    && !named.iter().any(|n| n.0 == i)
                    && names_work_tree_file(&top, &dir, v)
                {
                    unpinned.push((which, v.to_string()));
                }
            }
        }
        spans.push((which, rewrites));
    }
    for p in c.pin {
        let abs = dir.join(p);
        if std::fs::symlink_metadata(&abs).is_err() {
            return Err(Error::usage(format!(
                "cannot pin {}: no such file or directory",
                safe(p)
            )));
        }
        b.add(p, PinSource::Pin, &abs)?;
    }
    Ok(Analysis {
        pinned: b.pinned,
        sources: b.sources,
        argv,
        spans,
        shell,
        unpinned,
    })
}

/// The differences between the pinned files of the plan and those found now, as
/// (resource, field, planned, now), raw: the drift error escapes them, once.
pub fn differences(planned: &[Pinned], now: &[Pinned]) -> Vec<(String, String, String, String)> {
    let short = short_digest;
    let opt = |o: &Option<String>| o.as_deref().map_or("(none)".to_string(), str::to_string);
    let mut out = Vec::new();
    let key = |p: &Pinned| (p.name.clone(), p.found);
    let now_by: HashMap<_, &Pinned> = now.iter().map(|p| (key(p), p)).collect();
    for p in planned {
        let resource = format!("pinned {}", p.name);
        let Some(n) = now_by.get(&key(p)) else {
            out.push((resource, "found".into(), p.path.clone(), "(not found now)".into()));
            continue;
        };
        if p.path != n.path {
            out.push((resource.clone(), "path".into(), p.path.clone(), n.path.clone()));
        }
        if p.link != n.link {
            out.push((resource.clone(), "link".into(), opt(&p.link), opt(&n.link)));
        }
        if p.target != n.target {
            out.push((resource.clone(), "target".into(), opt(&p.target), opt(&n.target)));
        }
        if p.executable != n.executable {
            out.push((
                resource.clone(),
                "executable".into(),
                p.executable.to_string(),
                n.executable.to_string(),
            ));
        }
        if p.sha256 != n.sha256 {
            let changed: Vec<&str> = p
                .tree
                .iter()
                .filter(|f| !n.tree.contains(f))
                .chain(n.tree.iter().filter(|f| !p.tree.contains(f)))
                .map(|f| f.path.as_str())
                .collect();
            let mut now = short(&n.sha256);
            if let Some(first) = changed.first() {
                now += &format!(" ({first} changed)");
            }
            out.push((resource, "content".into(), short(&p.sha256), now));
        }
    }
    let planned_keys: Vec<_> = planned.iter().map(key).collect();
    for n in now.iter().filter(|n| !planned_keys.contains(&key(n))) {
        out.push((
            format!("pinned {}", n.name),
            "found".into(),
            "(not pinned in the plan)".into(),
            n.path.clone(),
        ));
    }
    out
}

/// The private copy: every pinned file under a fresh 0700 directory, checked.
#[derive(Debug)]
pub struct Staged {
    dir: tempfile::TempDir,
    analysis: Analysis,
    /// Where each pinned entry's copy is.
    copies: Vec<PathBuf>,
}

/// Where in the private directory a pinned path goes: `repo/<path>` or `root/<path>`,
/// plain components only.
fn copy_path(base: &Path, pinned_path: &str) -> Result<PathBuf> {
    let p = Path::new(pinned_path);
    match p.strip_prefix("/") {
        Ok(rest) => join_plain(&base.join("root"), &rest.to_string_lossy()),
        Err(_) => join_plain(&base.join("repo"), pinned_path),
    }
}

/// `base` joined with `rel`, which must hold only plain components.
fn join_plain(base: &Path, rel: &str) -> Result<PathBuf> {
    let pinned_path = rel;
    let mut out = base.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(n) => out.push(n),
            _ => {
                return Err(Error::invalid_plan(format!(
                    "the pinned path {} is not a plain path",
                    safe(pinned_path)
                )));
            }
        }
    }
    Ok(out)
}

fn write_copy(dest: &Path, bytes: &[u8], executable: bool) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| Error::internal("cannot write the private copy").caused_by(e);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let mode = if executable { 0o700 } else { 0o600 };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(dest)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    drop(f);
    // Read-only from here on: the copy is what was checked.
    std::fs::set_permissions(dest, std::fs::Permissions::from_mode(mode & 0o500)).map_err(err)
}

/// A drift-like difference: (resource, field, planned, now).
pub type Difference = (String, String, String, String);

impl Staged {
    /// Copy every pinned file of `analysis` into a fresh private directory and check each
    /// copy against `expected` (the plan's digests). Differences are returned, not copied.
    pub fn new(
        analysis: Analysis,
        expected: &[Pinned],
    ) -> Result<std::result::Result<Staged, Vec<Difference>>> {
        let dir = tempfile::Builder::new()
            .prefix("guardctl-exec-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| Error::internal("cannot create a private directory").caused_by(e))?;
        let mut copies = Vec::new();
        let mut diffs = Vec::new();
        let mut budget = Budget { files: 0, bytes: 0 };
        for (p, source) in analysis.pinned.iter().zip(&analysis.sources) {
            let want = expected.iter().find(|e| e.path == p.path);
            let dest = copy_path(dir.path(), &p.path)?;
            let files: Vec<(PathBuf, PathBuf, Option<&str>)> = if p.tree.is_empty() && !source.is_dir() {
                vec![(source.clone(), dest.clone(), want.map(|w| w.sha256.as_str()))]
            } else {
                p.tree
                    .iter()
                    .map(|f| {
                        let w = want.and_then(|w| w.tree.iter().find(|t| t.path == f.path));
                        Ok((
                            source.join(&f.path),
                            join_plain(&dest, &f.path)?,
                            w.map(|w| w.sha256.as_str()),
                        ))
                    })
                    .collect::<Result<_>>()?
            };
            for (from, to, want) in files {
                let bytes = read_file(&from, &mut budget)?;
                let got = sha256_hex(&bytes);
                if want != Some(got.as_str()) {
                    diffs.push((
                        format!("pinned {}", p.name),
                        "copy".into(),
                        want.map_or("(not pinned)".into(), short_digest),
                        format!("{} (changed while copying)", short_digest(&got)),
                    ));
                    continue;
                }
                // Already copied as part of another pinned entry (a file inside a pinned
                // directory): checked against its own digest above, so the same bytes.
                if std::fs::symlink_metadata(&to).is_ok() {
                    let there = std::fs::read(&to).map(|b| sha256_hex(&b)).unwrap_or_default();
                    if there != got {
                        return Err(Error::internal(format!(
                            "two pinned entries give {} different content",
                            safe(&p.name)
                        )));
                    }
                    continue;
                }
                let exec = if p.tree.is_empty() {
                    p.executable
                } else {
                    std::fs::metadata(&from).is_ok_and(|m| m.permissions().mode() & 0o100 != 0)
                };
                write_copy(&to, &bytes, exec)?;
            }
            copies.push(dest);
        }
        if !diffs.is_empty() {
            return Ok(Err(diffs));
        }
        Ok(Ok(Staged {
            dir,
            analysis,
            copies,
        }))
    }

    /// Check the copies again (after a command that ran before the next one).
    pub fn recheck(&self) -> Vec<Difference> {
        let mut out = Vec::new();
        for (p, copy) in self.analysis.pinned.iter().zip(&self.copies) {
            let files: Vec<(PathBuf, &str)> = if p.tree.is_empty() && copy.is_file() {
                vec![(copy.clone(), p.sha256.as_str())]
            } else {
                p.tree
                    .iter()
                    .map(|f| (copy.join(&f.path), f.sha256.as_str()))
                    .collect()
            };
            for (f, want) in files {
                let got = std::fs::read(&f).map(|b| sha256_hex(&b)).unwrap_or_default();
                if got != want {
                    out.push((
                        format!("pinned {}", p.name),
                        "copy".into(),
                        short_digest(want),
                        "changed in the private copy".into(),
                    ));
                }
            }
        }
        out
    }

    /// The private directory (for messages and tests).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn copy_str(&self, i: usize) -> Result<String> {
        utf8(&self.copies[i]).map_err(|e| {
            Error::internal("the temporary directory's path is not UTF-8")
                .caused_by(e.message)
                .with_hint("set TMPDIR to a UTF-8 path")
        })
    }

    /// The shell that runs the command strings (its copy).
    pub fn shell(&self) -> &Path {
        &self.copies[self.analysis.shell]
    }

    /// The command with every word that named a pinned file naming its copy.
    pub fn command(&self, command: &[String]) -> Result<Vec<String>> {
        command
            .iter()
            .zip(&self.analysis.argv)
            .map(|(w, p)| match p {
                Some(i) => self.copy_str(*i),
                None => Ok(w.clone()),
            })
            .collect()
    }

    /// A command string with every literal word that named a pinned file naming its copy.
    pub fn script(&self, which: Script, script: &str) -> Result<String> {
        let Some((_, spans)) = self.analysis.spans.iter().find(|(w, _)| *w == which) else {
            return Ok(script.to_string());
        };
        let mut out = String::new();
        let mut at = 0;
        let mut spans = spans.clone();
        spans.sort();
        for (start, end, i) in spans {
            if start < at || end > script.len() {
                continue;
            }
            out += &script[at..start];
            out += &shell::quote(&self.copy_str(i)?);
            at = end;
        }
        out += &script[at..];
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(top.join("scripts/lib")).unwrap();
        std::fs::write(top.join("scripts/prune.sh"), "echo prune\n").unwrap();
        std::fs::write(top.join("scripts/lib/a.sh"), "a=1\n").unwrap();
        std::os::unix::fs::symlink("prune.sh", top.join("scripts/run")).unwrap();
        (t, top)
    }

    fn commands<'a>(command: &'a [String], preview: &'a str, pin: &'a [String]) -> Commands<'a> {
        Commands {
            command,
            preview,
            before_image: None,
            verify: None,
            pin,
        }
    }

    #[test]
    fn pins_programs_scripts_links_and_trees_and_rewrites_to_copies() {
        let (_t, top) = setup();
        let path = std::env::var_os("PATH");
        let command = vec!["sh".to_string(), "scripts/run".to_string(), "trash".to_string()];
        let pin = vec!["scripts/lib".to_string()];
        let a = analyze(
            &top,
            &top,
            path.as_deref(),
            commands(&command, "sh scripts/prune.sh --dry-run | sort", &pin),
        )
        .unwrap();
        // A file also inside a pinned directory is copied once.
        let both = vec!["scripts".to_string()];
        let overlap = analyze(&top, &top, path.as_deref(), commands(&command, "true", &both)).unwrap();
        assert!(Staged::new(overlap.clone(), &overlap.pinned).unwrap().is_ok());
        let names: Vec<(&str, PinSource)> = a.pinned.iter().map(|p| (p.name.as_str(), p.found)).collect();
        assert_eq!(
            names,
            [
                ("sh", PinSource::Path),
                ("scripts/run", PinSource::Argument),
                ("scripts/prune.sh", PinSource::Argument),
                ("sort", PinSource::Path),
                ("scripts/lib", PinSource::Pin),
            ]
        );
        let run = &a.pinned[1];
        assert_eq!(run.link.as_deref(), Some("prune.sh"));
        assert_eq!(run.target.as_deref(), Some("scripts/prune.sh"));
        assert_eq!(run.sha256, a.pinned[2].sha256);
        assert!(a.pinned[0].path.starts_with('/'));
        assert_eq!(a.pinned[4].tree.len(), 1);

        let staged = Staged::new(a.clone(), &a.pinned).unwrap().unwrap();
        let argv = staged.command(&command).unwrap();
        assert!(argv[0].starts_with(staged.path().to_str().unwrap()));
        assert_eq!(argv[1], format!("{}/repo/scripts/run", staged.path().display()));
        assert_eq!(argv[2], "trash");
        let script = staged
            .script(Script::Preview, "sh scripts/prune.sh --dry-run | sort")
            .unwrap();
        assert!(script.contains(&format!(
            "'{}/repo/scripts/prune.sh' --dry-run | '",
            staged.path().display()
        )));
        assert_eq!(
            std::fs::read_to_string(staged.path().join("repo/scripts/lib/a.sh")).unwrap(),
            "a=1\n"
        );
        assert!(staged.recheck().is_empty());
        let mode = std::fs::metadata(staged.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_re_pointed_link_and_an_edited_helper_are_differences() {
        let (_t, top) = setup();
        let path = std::env::var_os("PATH");
        let command = vec!["scripts/run".to_string()];
        let pin = vec!["scripts/lib".to_string()];
        let c = commands(&command, "true", &pin);
        let before = analyze(&top, &top, path.as_deref(), c).unwrap();
        std::fs::write(top.join("scripts/evil.sh"), "echo evil\n").unwrap();
        std::fs::remove_file(top.join("scripts/run")).unwrap();
        std::os::unix::fs::symlink("evil.sh", top.join("scripts/run")).unwrap();
        std::fs::write(top.join("scripts/lib/a.sh"), "a=2\n").unwrap();
        let after = analyze(&top, &top, path.as_deref(), c).unwrap();
        let d = differences(&before.pinned, &after.pinned);
        let fields: Vec<(&str, &str)> = d.iter().map(|d| (d.0.as_str(), d.1.as_str())).collect();
        assert!(fields.contains(&("pinned scripts/run", "link")), "{d:?}");
        assert!(fields.contains(&("pinned scripts/run", "content")), "{d:?}");
        assert!(fields.contains(&("pinned scripts/lib", "content")), "{d:?}");
        assert!(d.iter().any(|d| d.3.contains("a.sh changed")), "{d:?}");
        // Copying against the old digests refuses the changed files.
        assert!(Staged::new(after, &before.pinned).unwrap().is_err());
    }

    #[test]
    fn interpreters_pin_their_script_but_not_code_from_the_command_line() {
        let (_t, top) = setup();
        let path = std::env::var_os("PATH");
        let command: Vec<String> = ["sh", "-c", "scripts/prune.sh"].map(String::from).to_vec();
        let a = analyze(
            &top,
            &top,
            path.as_deref(),
            commands(&command, ". scripts/prune.sh", &[]),
        )
        .unwrap();
        assert_eq!(a.argv[2], None);
        // `. file` sources a file: pinned, from the preview.
        assert!(a.pinned.iter().any(|p| p.name == "scripts/prune.sh"));
    }

    #[test]
    fn code_options_are_per_interpreter() {
        for (base, w) in [
            ("sh", "-c"),
            ("bash", "-ec"),
            ("dash", "-xc"),
            ("perl", "-e"),
            ("perl", "-E"),
            ("perl", "-ne"),
            ("ruby", "-e"),
            ("node", "-e"),
            ("node", "--eval"),
            ("python3", "-c"),
            ("python3", "-m"),
            ("python", "-Bc"),
        ] {
            assert!(is_code_option(base, w), "{base} {w}");
        }
        for (base, w) in [
            ("sh", "-e"),
            ("sh", "-eu"),
            ("bash", "--norc"),
            ("bash", "-o"),
            ("zsh", "-E"),
            ("python3", "-E"),
            ("python3", "-u"),
            ("python3", "-Werror"),
            ("perl", "-Ilib"),
            ("perl", "-w"),
            ("ruby", "-E"),
            ("node", "--inspect"),
        ] {
            assert!(!is_code_option(base, w), "{base} {w}");
        }
    }

    #[test]
    fn wrappers_are_looked_through_to_the_command_they_run() {
        fn programs(line: &str) -> (Vec<&str>, bool) {
            let words: Vec<Option<&str>> = line.split(' ').map(Some).collect();
            let (at, runs) = chain(&words);
            (at.iter().map(|&i| words[i].unwrap()).collect(), runs)
        }
        assert_eq!(programs("sh x.sh"), (vec!["sh"], true));
        assert_eq!(programs("exec sh x.sh"), (vec!["exec", "sh"], true));
        assert_eq!(programs("command -p sh x.sh"), (vec!["command", "sh"], true));
        assert_eq!(
            programs("env -i -u HOME A=1 B=2 sh x.sh"),
            (vec!["env", "sh"], true)
        );
        assert_eq!(
            programs("timeout -s KILL --preserve-status 60 sh x.sh"),
            (vec!["timeout", "sh"], true)
        );
        assert_eq!(programs("nice -n 5 sh x.sh"), (vec!["nice", "sh"], true));
        assert_eq!(programs("nice -5 sh x.sh"), (vec!["nice", "sh"], true));
        assert_eq!(
            programs("nohup stdbuf -oL -e 0 setsid time -p sh x.sh"),
            (vec!["nohup", "stdbuf", "setsid", "time", "sh"], true)
        );
        assert_eq!(programs("xargs -0 -n 1 sh x.sh"), (vec!["xargs", "sh"], true));
        // GNU xargs' -i, -e and -l take their argument in the same word, if any.
        assert_eq!(programs("xargs -i sh x.sh"), (vec!["xargs", "sh"], true));
        assert_eq!(programs("nice -- sh x.sh"), (vec!["nice", "sh"], true));
        // Runs no command, or one guardctl cannot read.
        assert_eq!(programs("command -v sh"), (vec!["command"], false));
        assert_eq!(programs("env -S sh x.sh"), (vec!["env"], false));
        let words = [Some("env"), None, Some("x.sh")];
        assert_eq!(chain(&words), (vec![0], false));
    }

    #[test]
    fn scripts_are_pinned_after_options_and_through_wrappers() {
        let (_t, top) = setup();
        let path = std::env::var_os("PATH");
        let command: Vec<String> = ["env", "A=1", "sh", "-e", "scripts/prune.sh"]
            .map(String::from)
            .to_vec();
        let preview = "timeout 60 sh -eu scripts/run; exec sh scripts/lib/a.sh";
        let a = analyze(&top, &top, path.as_deref(), commands(&command, preview, &[])).unwrap();
        let at = |name: &str| a.pinned.iter().position(|p| p.name == name);
        assert_eq!(a.argv[2], at("sh"));
        assert_eq!(a.argv[4], at("scripts/prune.sh"));
        assert!(at("timeout").is_some());
        assert!(at("scripts/run").is_some() && at("scripts/lib/a.sh").is_some());
        assert!(a.refuse_unpinned().is_ok());
        // A file named where guardctl cannot tell it is not run is refused at planning.
        let a = analyze(
            &top,
            &top,
            path.as_deref(),
            commands(
                &command,
                "env -S 'sh scripts/lib/a.sh' ; cat scripts/lib/a.sh",
                &[],
            ),
        )
        .unwrap();
        let e = a.refuse_unpinned().unwrap_err();
        assert!(e.message.contains("scripts/lib/a.sh"), "{}", e.message);
        // A directory, or a file under .git, is not refused.
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "x").unwrap();
        let a = analyze(
            &top,
            &top,
            path.as_deref(),
            commands(&command, "ls scripts .git/HEAD", &[]),
        )
        .unwrap();
        assert!(a.refuse_unpinned().is_ok());
    }

    #[test]
    fn a_program_shadowed_by_an_earlier_path_entry_is_a_difference() {
        let (_t, top) = setup();
        for d in ["early", "late"] {
            std::fs::create_dir_all(top.join(d)).unwrap();
        }
        let tool = |d: &str| {
            let p = top.join(d).join("tool");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        tool("late");
        let path =
            std::env::join_paths([top.join("early"), top.join("late"), PathBuf::from("/usr/bin")]).unwrap();
        let command = vec!["tool".to_string()];
        let c = commands(&command, "true", &[]);
        let before = analyze(&top, &top, Some(&path), c).unwrap();
        assert_eq!(before.pinned[0].path, "late/tool");
        tool("early");
        let after = analyze(&top, &top, Some(&path), c).unwrap();
        let d = differences(&before.pinned, &after.pinned);
        assert_eq!(
            d,
            [(
                "pinned tool".to_string(),
                "path".to_string(),
                "late/tool".to_string(),
                "early/tool".to_string()
            )]
        );
    }

    #[test]
    fn copies_stay_inside_the_private_directory() {
        let base = Path::new("/p");
        assert_eq!(copy_path(base, "a/b").unwrap(), Path::new("/p/repo/a/b"));
        assert_eq!(
            copy_path(base, "/usr/bin/sh").unwrap(),
            Path::new("/p/root/usr/bin/sh")
        );
        assert!(copy_path(base, "../x").is_err());
        assert!(copy_path(base, "/usr/../../x").is_err());
    }
}
