//! The effect trial: judge a command line by its effect, not by its spelling. The agent-shell
//! hook hands a line its static reader cannot prove harmless to [`run`], which runs it as
//! `bash -c LINE` in the sandbox's overlay mode (`sandbox::Overlay`: the whole machine as a
//! copy-on-write view, no credentials, no network unless the trusted policy allows it, no
//! UNIX sockets, killed with its PID namespace at the time limit), then compares before and
//! after and reports what the line would have destroyed ([`Effect`]).
//!
//! ```text
//! pub struct Request { line, cwd, env, timeout, regenerable, gate, network }
//! pub fn run(&Request) -> Result<Effect>
//! pub struct Effect { outcome, destroyed, gate, created, exempt, moved, stderr_tail, blocked }
//! pub struct Change { what: ChangeKind, path_or_ref, detail }
//! Effect::manifest() -> String; Effect::destroys_nothing() -> bool
//! ```
//!
//! How a change is judged (`view` reads the uppers, `classify` decides, `repo::trial` reads
//! the repository found from `cwd`):
//! 1. the gate first: `.claude/settings*.json`, `.gemini/settings.json`, `.guardctl/**` of the
//!    work tree and of `$HOME`, `~/.config/guardctl/**`, `~/.gitconfig`, `~/.config/git/**`,
//!    [`Request::gate`]; the repository's git config outside
//!    an allowlist, hooks, `info/`, `.git/guardctl/`: created, changed, deleted or chmod-ed;
//! 2. temporary paths (`/tmp`, `/var/tmp`, `$TMPDIR`): exempt;
//! 3. the git directories: refs deleted or rewritten (not a fast-forward; a tag moved at all),
//!    reflog entries dropped, staged changes lost, objects deleted and kept nowhere;
//! 4. the work tree: a deleted or overwritten path that matches [`Request::regenerable`] *and*
//!    that git ignores is exempt (an ignored `.env` is not); a deleted file is destroyed unless
//!    a new file elsewhere (not temporary) holds the same bytes (moved); an overwritten file is
//!    destroyed unless its old content is a blob in the object database after the trial
//!    (`sed -i` on a clean tracked file, `git stash`); created files are counted;
//! 5. regenerable caches under `$HOME` (`~/.cache`, `~/.cargo/registry`, …): exempt;
//! 6. anything else on the machine: deleted or overwritten is destroyed, created is counted.
//!
//! The manifest ([`Effect::manifest`]) is the text a reviewer approves and apply re-derives
//! and compares byte for byte: one line per destroyed or gate change, sorted, each
//! `VERB SUBJECT[ DETAIL]`:
//!
//! ```text
//! delete file src/a.rs sha256:<64 hex of the old bytes>
//! delete symlink bin/tool sha256:<of the old target>
//! delete file big/f09999 unhashed           (past the first 10,000 deleted files)
//! delete tree /usr unlisted                  (a directory deleted past 100,000 listed changes)
//! overwrite file notes.txt sha256:<old>
//! delete branch refs/heads/x <old id>
//! delete ref refs/notes/commits <old id>
//! rewrite branch refs/heads/main <old id> -> <new id>
//! move tag refs/tags/v1 <old id> -> <new id>
//! drop reflog refs/stash 2 entries
//! discard staged change src/b.rs <staged blob id>
//! delete objects 12
//! gate: create .claude/settings.json          (also change, delete, chmod)
//! gate: change git config alias.zap
//! gate: install git hook pre-commit           (also change git hook, remove git hook)
//! and 17 more
//! ```
//!
//! Paths are relative to the work tree's top inside it, absolute elsewhere; a path holding a
//! space, a quote, a backslash or a control character is written in double quotes with C
//! escapes (as git's `core.quotePath`), so one change is always one line. At most
//! [`MANIFEST_LINES`] lines; the rest is counted by a last `and N more` line. The manifest is
//! data: escape it ([`crate::text::safe`]) before showing it.
//!
//! What it is not: a prediction of remote effects (a push, an API call: the network is off,
//! and those stay exact rules of the static reader), nor a proof: a line may act differently
//! when run for real (time, the network, a race), so apply re-derives the manifest.
//!
//! What the line sees that it would see for real: a `/proc` (of the trial's own PID
//! namespace: its own processes and environment, never the host's), `/dev/fd`,
//! `/dev/stdin|stdout|stderr`, pseudo-terminals. What it cannot reach is reported as
//! [`Effect::blocked`]: a DNS query (the trial's resolver is the launcher, which notes the
//! names) is the network whatever the line printed and however it ended (`curl … || true`).
//!
//! Residual gaps (known, not detected): a connection to an address without a name lookup
//! (`connect()` fails in the trial and nothing records it; only a failed line's stderr can
//! say so); a resolver that does not use `/etc/resolv.conf` (DNS over HTTPS to an address,
//! nsswitch without `dns`); the machine's processes (`pkill NAME` finds nothing in the trial,
//! ends 1 silently and is not blocked; `kill PID` is, by its "No such process"); the
//! uppers live in `/dev/shm` without a size bound, so a line that writes gigabytes in the
//! trial uses that much memory until the trial ends (the time limit bounds how long).
//!
//! Invariants: the host is never written (every write lands in the uppers in
//! `/dev/shm/guardctl-trial-*`, removed on every way out); nothing the line started survives
//! the trial; the same changes give the same manifest.

mod classify;
mod view;

#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use classify::DEFAULT_REGENERABLE;

/// At most this many manifest lines (then `and N more`): a line that deletes a million files
/// is refused on its first lines anyway.
pub const MANIFEST_LINES: usize = 10_000;

/// A line to try.
#[derive(Debug, Clone)]
pub struct Request {
    /// Run as `bash -c LINE` (`bash` found on the `PATH` of `env`, else `/bin/bash`).
    pub line: String,
    /// Absolute; where the line starts.
    pub cwd: PathBuf,
    /// Exactly the environment the line gets.
    pub env: Vec<(String, OsString)>,
    /// The line is killed at the limit, with everything it started.
    pub timeout: Duration,
    /// gitignore-style patterns of regenerable build output ([`DEFAULT_REGENERABLE`]).
    pub regenerable: Vec<String>,
    /// More absolute paths whose change touches the gate (guardctl's binary, trust files).
    pub gate: Vec<PathBuf>,
    /// The line may use the network (off unless the trusted policy says otherwise).
    pub network: bool,
}

/// How the line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its exit status (a signal `n` as `128 + n`, as shells say it).
    Finished { status: i32 },
    /// Killed at the time limit (whatever it did until then is still judged).
    TimedOut,
}

/// What a change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// A file, symlink or empty directory deleted (the manifest says which).
    Delete,
    /// A file's content replaced.
    Overwrite,
    /// A ref deleted.
    DeleteRef,
    /// A branch or ref moved to a commit that does not descend from the old one; a tag moved.
    RewriteRef,
    /// Reflog entries dropped (`git stash drop`).
    DropReflog,
    /// A staged change lost.
    DiscardStaged,
    /// Objects deleted that no remaining pack or loose object holds.
    DeleteObjects,
    /// The gate changed: its settings, guardctl's files, git config outside the allowlist,
    /// hooks.
    Gate,
}

/// One destroyed or gate change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub what: ChangeKind,
    /// The manifest's verb phrase: `delete file`, `rewrite branch`, `change git config`, …
    pub verb: String,
    /// A path (relative to the work tree inside it, else absolute) or a ref name or key.
    pub path_or_ref: String,
    /// The rest of the manifest line: the old content's hash, object ids, a count.
    pub detail: String,
}

impl Change {
    /// The change's manifest line (without a newline).
    pub fn line(&self) -> String {
        let mut line = String::new();
        if self.what == ChangeKind::Gate {
            line.push_str("gate: ");
        }
        line.push_str(&self.verb);
        line.push(' ');
        line.push_str(&quote(&self.path_or_ref));
        if !self.detail.is_empty() {
            line.push(' ');
            line.push_str(&self.detail);
        }
        line
    }
}

/// What the line did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    pub outcome: Outcome,
    /// Sorted by manifest line.
    pub destroyed: Vec<Change>,
    /// Changes to the gate itself, sorted by manifest line.
    pub gate: Vec<Change>,
    /// New files.
    pub created: usize,
    /// Changes that destroy nothing by rule: temporary paths, regenerable output and caches,
    /// git's bookkeeping, overwritten content git still stores.
    pub exempt: usize,
    /// Files deleted whose bytes a new file elsewhere holds.
    pub moved: usize,
    /// The last 20 lines of the line's stderr, escaped (`text::safe`).
    pub stderr_tail: String,
    /// The line needed something outside the trial's view: it asked DNS for a name (whatever
    /// its exit status), or it failed and its stderr says it needed the network, `/sys`, a
    /// hidden path, a read-only mount, the machine's processes. What, in a few words.
    pub blocked: Option<String>,
}

impl Effect {
    /// One line per destroyed or gate change, sorted, each ending in a newline; stable for the
    /// same changes (see the module doc for the format).
    pub fn manifest(&self) -> String {
        let mut lines: Vec<String> = self
            .destroyed
            .iter()
            .chain(&self.gate)
            .map(Change::line)
            .collect();
        lines.sort();
        lines.dedup();
        let more = lines.len().saturating_sub(MANIFEST_LINES);
        lines.truncate(MANIFEST_LINES);
        if more > 0 {
            lines.push(format!("and {more} more"));
        }
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Nothing destroyed and the gate untouched.
    pub fn destroys_nothing(&self) -> bool {
        self.destroyed.is_empty() && self.gate.is_empty()
    }

    /// Why the trial does not say all the line would do, when it does not: it was killed at
    /// the time limit, or it failed needing something outside the trial's view. What it did
    /// until then is still in `destroyed`, but a line that would go further for real cannot
    /// be cleared (nor planned) on it.
    pub fn incomplete(&self) -> Option<String> {
        match (&self.outcome, &self.blocked) {
            (Outcome::TimedOut, _) => Some("it did not end within the trial's time limit".into()),
            (_, Some(what)) => Some(format!("it needed {what}, which the trial does not have")),
            _ => None,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line())
    }
}

/// The built-in regenerable patterns ([`DEFAULT_REGENERABLE`]), as a request takes them.
pub fn default_regenerable() -> Vec<String> {
    DEFAULT_REGENERABLE.iter().map(|s| s.to_string()).collect()
}

/// The gate paths every trial watches besides the settings files: the running guardctl's
/// binary (as started and as resolved), so that a line that removes, replaces or `chmod -x`es
/// it is a change to the gate.
pub fn default_gate() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Ok(real) = std::fs::canonicalize(&exe) {
            out.push(real);
        }
        out.push(exe);
    }
    out.sort();
    out.dedup();
    out
}

/// `s` as is, or in double quotes with C escapes when it holds a space, a quote, a backslash
/// or a control character.
fn quote(s: &str) -> String {
    if !s
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\')
    {
        return s.to_string();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Try `req.line` and say what it did. Fails when the trial cannot be built (the kernel, a
/// reftable repository, no `/dev/shm`), never because of what the line did.
pub fn run(req: &Request) -> Result<Effect> {
    if !req.cwd.is_absolute() {
        return Err(Error::usage("the trial's working directory must be absolute"));
    }
    let repo = crate::repo::trial::TrialRepo::discover(&req.cwd)?;
    // Layers of their own (see `Layers::of_this_machine`): where the line works, its git
    // directory if outside the work tree, its home, the temporary directories.
    let mut extra: Vec<PathBuf> = vec![PathBuf::from("/var/tmp")];
    match repo.as_ref().and_then(|r| r.work_tree.as_ref()) {
        Some(top) => extra.push(top.clone()),
        None => extra.push(req.cwd.clone()),
    }
    if let Some(repo) = &repo
        && !repo
            .work_tree
            .as_ref()
            .is_some_and(|w| repo.common_dir.starts_with(w))
    {
        extra.push(repo.common_dir.clone());
    }
    extra.extend(
        ["HOME", "TMPDIR"]
            .iter()
            .filter_map(|v| env_var(&req.env, v))
            .map(PathBuf::from),
    );
    let layers = view::Layers::of_this_machine(&extra)?;
    let state = view::State::new()?;
    let homes: Vec<PathBuf> = env_var(&req.env, "HOME").map(PathBuf::from).into_iter().collect();
    let hide: Vec<PathBuf> = crate::sandbox::secret_paths(&homes)
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let overlay = crate::sandbox::Overlay {
        state: state.path().to_path_buf(),
        layers: layers.layers.clone(),
        sealed: layers.sealed.clone(),
        files: layers.files.clone(),
        links: layers.links.clone(),
        timeout_ms: u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX),
        parent: std::process::id(),
    };
    let tried = crate::sandbox::run_overlay(
        &overlay,
        &state.root(),
        hide.clone(),
        req.network,
        &req.cwd,
        &bash(&req.env),
        &["-c".into(), req.line.clone().into()],
        &req.env,
    )?;
    let view = view::View::new(&layers.layers, state.path());
    let ctx = classify::Context::new(req, repo.as_ref());
    let mut effect = ctx.judge(&view)?;
    drop(state);
    let stderr = String::from_utf8_lossy(&tried.stderr).into_owned();
    effect.outcome = match tried.status {
        Some(status) => Outcome::Finished { status },
        None => Outcome::TimedOut,
    };
    // A DNS query is the network whatever the line printed and however it ended (`curl …
    // || true`); otherwise a failed line's stderr says what it missed.
    effect.blocked = match (&tried.looked_up, effect.outcome) {
        (Some(names), _) => Some(format!("the network (it looked up {names})")),
        (None, Outcome::Finished { status }) if status != 0 => blocked(&stderr, &hide),
        _ => None,
    };
    effect.stderr_tail = tail(&stderr, 20);
    Ok(effect)
}

/// The last `n` lines of `text`, escaped, without the launcher's own last words.
fn tail(text: &str, n: usize) -> String {
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.starts_with("guardctl sandbox: timed out") && !l.starts_with("guardctl sandbox: looked up ")
        })
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| crate::text::safe(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a failed line's stderr says it needed from outside the trial's view.
fn blocked(stderr: &str, hidden: &[PathBuf]) -> Option<String> {
    let has = |needles: &[&str]| needles.iter().any(|n| stderr.contains(n));
    if has(&[
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Network is unreachable",
        "network is unreachable",
        "Connection refused",
    ]) {
        return Some("the network".into());
    }
    // The trial's /proc is its own (its processes only); /sys and /run are not there.
    if has(&["/sys/", "/run/"]) {
        return Some("/sys or /run".into());
    }
    // `kill PID` of a process of the machine: the trial has only its own processes.
    if has(&["No such process", "no process found"]) {
        return Some("processes of the machine (the trial sees only its own)".into());
    }
    if has(&["Permission denied", "EACCES", "Errno 13"]) {
        if let Some(p) = hidden.iter().find(|p| stderr.contains(&*p.to_string_lossy())) {
            return Some(format!(
                "a hidden path: {}",
                crate::text::safe(&p.to_string_lossy())
            ));
        }
        // Landlock refuses TCP connections with EACCES; the seccomp filter refuses UNIX
        // sockets at socket().
        if has(&["connect"]) {
            return Some("the network (connections are refused in the trial)".into());
        }
        if has(&["socket"]) {
            return Some("a UNIX socket (the trial allows none)".into());
        }
        return Some("a hidden path (permission denied)".into());
    }
    // EOVERFLOW: overlayfs cannot copy up below a directory whose owner the unprivileged
    // user namespace does not map (see `view::Layers::of_this_machine`).
    if has(&["Value too large for defined data type"]) {
        return Some("a path below another user's directory (the trial cannot copy it)".into());
    }
    if has(&["Read-only file system"]) {
        return Some("a path the trial cannot copy (read-only file system)".into());
    }
    None
}

fn env_var<'a>(env: &'a [(String, OsString)], name: &str) -> Option<&'a OsString> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// `bash` on the `PATH` of `env`, else `/bin/bash`.
fn bash(env: &[(String, OsString)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    env_var(env, "PATH")
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("bash"))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .unwrap_or_else(|| Path::new("/bin/bash").to_path_buf())
}
