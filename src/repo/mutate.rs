//! The ONE module that changes the repository. Everything else reads.
//!
//! Refs change through `git update-ref --stdin` in one transaction: per-ref compare-and-swap
//! (`delete <ref> <old>`, `create <ref> <new>` which requires absence), all or nothing, one
//! packed-refs rewrite, run with `core.fsync` for refs. libgit2 is not used for this: its
//! transaction has no compare-and-swap and a failed delete still drops the reflog.
//! `apply` hands git the transaction first and commits it only after its own checks, so the
//! refs stay locked in between. Config sections are removed in one rewrite of the config
//! file under git's own `config.lock`. The backup commit is written with `git hash-object`.
//! A `.lock` file is removed only when the git of a guardctl that died holding guardctl's lock
//! left it (`stale_locks`, when the lock is taken); any other is reported, never removed. A
//! remote's branches change
//! through one atomic, leased `git push` (`push.rs`).
//!
//! Mutation is a type, not a convention: every method here is on [`RepoMut`], which exists
//! only while guardctl's repository lock is held ([`RepoMut::lock`], through
//! `store::Store::lock`). A `&Repo` can only read; `plan`, `show` and `verify` never take the
//! lock, so they cannot obtain a `RepoMut` at all. `tests/cli/layers.rs` checks that only the
//! modules that legitimately mutate name it.

mod push;
mod stale_locks;

pub use push::{RemoteOp, push_args};
pub use stale_locks::Cleared;

use super::Repo;
use crate::error::{Error, Kind, Result};
use crate::process::{ChildStdin, ChildStdout, Running};
use git2::Oid;
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

/// The ref that anchors the audit log's head outside its file (`store::audit`).
pub const ANCHOR_REF: &str = "refs/guardctl/audit";

/// The repository with the right to change it, and guardctl's repository lock, held until
/// it is dropped. Reads go through to [`Repo`] (`Deref`).
pub struct RepoMut<'r> {
    repo: &'r Repo,
    /// The `mutating` marker this holder wrote, removed on release (`stale_locks`); `None`
    /// when it kept a dead holder's marker because some of its locks could not be cleared.
    marker: Option<std::path::PathBuf>,
    /// What the lock files a dead holder's git left came to.
    cleared: Cleared,
    // Declared last, so it is released after `Drop` removed the marker.
    _lock: std::fs::File,
}

impl<'r> RepoMut<'r> {
    /// Take the `flock` on `lock_path` (waiting for another guardctl to finish), then hand
    /// out the mutating handle that holds it.
    pub fn lock(repo: &'r Repo, lock_path: &std::path::Path) -> Result<RepoMut<'r>> {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link: `.git/guardctl` is anyone's with write access to `.git`.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(lock_path)
            .map_err(Error::io("open", lock_path))?;
        file.lock()
            .map_err(|e| Error::internal(format!("cannot lock {}", lock_path.display())).caused_by(e))?;
        // A marker left by the last holder: it died holding the lock (see `stale_locks`).
        let marker = lock_path.with_file_name(stale_locks::MARKER);
        let (written, cleared) =
            stale_locks::take_over(&marker, repo.common_dir(), repo.work_tree().as_deref())?;
        Ok(RepoMut {
            repo,
            marker: written.then_some(marker),
            cleared,
            _lock: file,
        })
    }

    /// The lock files a guardctl that died holding the lock had left, removed or left (and
    /// why), when this holder took the lock.
    pub fn stale_locks(&self) -> &Cleared {
        &self.cleared
    }
}

impl Drop for RepoMut<'_> {
    fn drop(&mut self) {
        if let Some(marker) = &self.marker {
            let _ = std::fs::remove_file(marker);
        }
    }
}

impl std::ops::Deref for RepoMut<'_> {
    type Target = Repo;

    fn deref(&self) -> &Repo {
        self.repo
    }
}

#[derive(Debug, Clone)]
pub enum RefOp {
    /// Create `refname` at `oid`; fails if it exists.
    Create { refname: String, oid: String },
    /// Delete `refname` only if it still points at `old`.
    Delete { refname: String, old: String },
}

impl RepoMut<'_> {
    /// Apply every op in one all-or-nothing transaction. A compare-and-swap failure is
    /// `drift`; a ref lock held by another process is `needs_recovery`.
    pub fn ref_transaction(&self, ops: &[RefOp]) -> Result<()> {
        self.ref_transaction_watched(ops, &mut |_| Ok(()))
    }

    /// `ref_transaction`, telling `spawned` the git process id before git sees any command, so
    /// a recovery after our own death can wait for that orphaned git to finish.
    pub fn ref_transaction_watched(
        &self,
        ops: &[RefOp],
        spawned: &mut dyn FnMut(u32) -> Result<()>,
    ) -> Result<()> {
        self.begin_ref_transaction(ops, None, spawned)?
            .prepared()?
            .commit()
    }

    /// Start a transaction and return at once, while git locks every ref and checks its old
    /// value (the slow part: about 1.3 s of 1.9 s for 30,000 deletions). The caller can do
    /// its own checks meanwhile, then `prepared()` and `commit()` or drop to abort: git
    /// aborts a transaction whose input ends without `commit`, also when we are killed.
    /// `last`, when given, delivers one more op that is still being made (the backup ref's
    /// commit object is written while git reads the deletions); `None` on it aborts.
    pub fn begin_ref_transaction(
        &self,
        ops: &[RefOp],
        last: Option<Receiver<Option<RefOp>>>,
        spawned: &mut dyn FnMut(u32) -> Result<()>,
    ) -> Result<PendingTransaction> {
        let mut input = String::from("start\n");
        for op in ops {
            input += &op_line(op);
        }
        let mut child = self
            .git()
            .args(["-c", "core.fsync=committed,reference", "update-ref", "--stdin"])
            .spawn(true)?;
        if let Err(e) = spawned(child.id()) {
            child.kill();
            return Err(e);
        }
        let (Some(mut stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
            child.kill();
            return Err(Error::internal("cannot talk to git update-ref"));
        };
        // A thread feeds git, so a pipe full of commands never blocks the caller's checks.
        let writer = std::thread::spawn(move || {
            stdin.write_all(input.as_bytes())?;
            if let Some(last) = last {
                match last.recv() {
                    Ok(Some(op)) => stdin.write_all(op_line(&op).as_bytes())?,
                    // Dropping stdin here ends git's input without `prepare`: it aborts.
                    _ => return Err(std::io::Error::other("the transaction's last op never came")),
                }
            }
            stdin.write_all(b"prepare\n")?;
            Ok(stdin)
        });
        Ok(PendingTransaction {
            child,
            writer: Some(writer),
            stdout: BufReader::new(stdout),
        })
    }

    /// Write (but do not reference) one commit whose parents are `tips`: the backup of a plan.
    /// One object and one ref keep every tip reachable; one loose ref per deleted branch costs
    /// a file and an fsync each (measured: the dominant cost of apply at 10k branches).
    /// Its tree is the first tip's, so the commit is the only new object; `fresh` says whether
    /// it is new, so an apply refused before it referenced the commit can take it back.
    pub fn write_backup_commit(&self, tips: &[String], message: &str, when: i64) -> Result<BackupCommit> {
        let first = tips
            .first()
            .and_then(|t| Oid::from_str(t).ok())
            .ok_or_else(|| Error::internal("a backup commit needs at least one tip"))?;
        let tree = self.git.find_commit(first)?.tree_id();
        let mut body = format!("tree {tree}\n");
        let mut seen = std::collections::HashSet::new();
        for t in tips.iter().filter(|t| seen.insert(t.as_str())) {
            body += &format!("parent {t}\n");
        }
        body += &format!(
            "author guardctl <guardctl@localhost> {when} +0000\ncommitter guardctl <guardctl@localhost> {when} +0000\n\n{message}\n"
        );
        let expected = Oid::hash_object(git2::ObjectType::Commit, body.as_bytes())?;
        let fresh = !self.git.odb()?.exists(expected);
        let oid = self.hash_object("commit", body.as_bytes())?;
        // Only trust `fresh` when git named the object we hashed (not so for SHA-256 repos).
        let fresh = fresh && oid == expected.to_string();
        Ok(BackupCommit { oid, fresh })
    }

    /// Fetch `wanted` (commits a verified receipt and plan name) from the remote whose
    /// backups branch (`repo::backups`) keeps them into this repository's object store,
    /// writing no ref and no `FETCH_HEAD`: what a rollback pushes back is then here. Only
    /// what this clone lacks is sent (git negotiates against its own refs); the objects stay
    /// unreferenced until `git gc` prunes them. Returns whether the remote has the branch
    /// (none: nothing is fetched).
    ///
    /// The commits are asked for by id, not the branch: anyone who can push may
    /// fast-forward junk onto the branch (a huge tree, a deep history), and the branch
    /// grows by every history a plan ever deleted, none of which this rollback needs
    /// (tests/cli/rollback.rs). Only a server that takes no ids it did not advertise
    /// (protocol v0 without `uploadpack.allowReachableSHA1InWant`: git then refuses to ask)
    /// gets the branch fetched instead. Any other failure fetches nothing more: a server
    /// that takes ids and has not got one (pruned: an annotated tag's object, which the
    /// branch cannot keep) has not got it on the branch either, and the caller names what
    /// is missing (66).
    pub fn fetch_remote_backups(&self, url: &str, wanted: &[Oid]) -> Result<bool> {
        super::publish::check_url(url)?;
        let branch = [super::backups::BACKUPS_REF.to_string()];
        if self.listing(url)?.under(&[], &[branch[0].as_str()]).is_empty() {
            return Ok(false);
        }
        let fetch = |specs: &[String]| {
            // The refspecs go on standard input: a plan may delete thousands of refs.
            let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
            self.git()
                .env("GIT_TERMINAL_PROMPT", "0")
                // Untranslated: the refusal to ask by id is recognised by its words.
                .env("LC_ALL", "C")
                .args([
                    "fetch",
                    "--quiet",
                    "--stdin",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--no-auto-gc",
                    "--upload-pack=git-upload-pack",
                    "--",
                    url,
                ])
                .checked(Some(input.as_bytes()))
        };
        let mut ids: Vec<String> = wanted.iter().map(|o| o.to_string()).collect();
        ids.sort();
        ids.dedup();
        match fetch(&ids) {
            Err(e)
                if e.causes
                    .iter()
                    .any(|c| c.contains("allow request for unadvertised object")) =>
            {
                fetch(&branch)?;
            }
            _ => {}
        }
        Ok(true)
    }

    /// Remove the loose object of a backup commit this run wrote and never referenced (its
    /// message names the plan, so nothing else can point at it): a refused apply leaves the
    /// object store as it found it.
    pub fn discard_backup_commit(&self, commit: &BackupCommit) -> Result<()> {
        if !commit.fresh || commit.oid.len() < 3 {
            return Ok(());
        }
        let (dir, file) = commit.oid.split_at(2);
        let path = self.common_dir().join("objects").join(dir).join(file);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::internal(format!("cannot remove {}", path.display())).caused_by(e))
            }
            _ => Ok(()),
        }
    }

    /// Point `refs/guardctl/audit` at a new blob holding `content` (what the audit log's last
    /// entry is), compare-and-swap against `old` (`None`: the ref must not exist), with a
    /// reflog, so every earlier head stays on record. Returns the blob's id.
    pub fn advance_audit_anchor(&self, content: &[u8], old: Option<Oid>, message: &str) -> Result<Oid> {
        let new = self.hash_object("blob", content)?;
        let old = old.map(|o| o.to_string()).unwrap_or_default();
        let out = self
            .git()
            .args([
                "-c",
                "core.fsync=committed,reference",
                "update-ref",
                "--create-reflog",
                "-m",
                message,
                ANCHOR_REF,
                &new,
                &old,
            ])
            .output(None)?;
        if !out.status.success() {
            return Err(update_ref_error(String::from_utf8_lossy(&out.stderr).trim())
                .caused_by(format!("moving {}", ANCHOR_REF)));
        }
        Ok(Oid::from_str(&new)?)
    }

    /// Write an object (a saved tag, on rollback) durably; returns its id.
    pub fn write_object(&self, kind: &str, content: &[u8]) -> Result<String> {
        self.hash_object(kind, content)
    }

    fn hash_object(&self, kind: &str, content: &[u8]) -> Result<String> {
        let out = self
            .git()
            // Loose objects are not fsynced by default; the backup commit must be durable
            // before the ref that points at it is committed.
            .args([
                "-c",
                "core.fsync=committed,reference",
                "hash-object",
                "-t",
                kind,
                "-w",
                "--stdin",
            ])
            .output(Some(content))?;
        if !out.status.success() {
            return Err(Error::internal("git hash-object failed")
                .caused_by(crate::text::safe(String::from_utf8_lossy(&out.stderr).trim())));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Remove the whole `[branch "<name>"]` section of each named branch, in ONE rewrite of
    /// the repository's config under git's own `config.lock` (removing them one `git config`
    /// at a time rewrites the file per branch: quadratic at thousands of branches).
    pub fn remove_branch_sections(&self, names: &[String]) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let path = self.common_dir().join("config");
        let lock_path = self.common_dir().join("config.lock");
        let text = std::fs::read_to_string(&path).map_err(Error::io("read", &path))?;
        let drop: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        let kept = without_branch_sections(&text, &drop);
        if kept == text {
            return Ok(());
        }
        // A lock holding exactly what we mean to write is our own rewrite, interrupted between
        // taking the lock and renaming it into place: finish it. Any other lock is reported.
        if let Ok(existing) = std::fs::read(&lock_path) {
            if existing != kept.as_bytes() {
                return Err(Error::new(Kind::NeedsRecovery, format!("the config is locked: {} exists", lock_path.display()))
                    .with_hint("wait for the other git process; if none runs, remove that file by hand and run `guardctl recover`"));
            }
        } else {
            // The new content is complete before the lock appears: link() creates the lock
            // atomically and fails if another process holds it.
            let tmp = self.common_dir().join("config.guardctl-new");
            let _ = std::fs::remove_file(&tmp);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .map_err(Error::io("create", &tmp))?;
            f.write_all(kept.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(Error::io("write", &tmp))?;
            let linked = std::fs::hard_link(&tmp, &lock_path);
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(Error::new(
                        Kind::NeedsRecovery,
                        format!("the config is locked: {} exists", lock_path.display()),
                    )
                    .with_hint("wait for the other git process, then run `guardctl recover`"));
                }
                Err(e) => return Err(Error::internal("cannot lock the config").caused_by(e)),
            }
        }
        std::fs::rename(&lock_path, &path)
            .map_err(|e| Error::internal("cannot rewrite the config").caused_by(e))?;
        if let Ok(dir) = std::fs::File::open(self.common_dir()) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Add config entries back (multi-valued keys keep their order).
    pub fn add_config(&self, entries: &[(String, String)]) -> Result<()> {
        for (key, value) in entries {
            let out = self
                .git()
                .args(["config", "--local", "--add", key, value])
                .output(None)?;
            if !out.status.success() {
                return Err(
                    Error::internal(format!("cannot restore config {}", crate::text::safe(key)))
                        .caused_by(crate::text::safe(String::from_utf8_lossy(&out.stderr).trim())),
                );
            }
        }
        Ok(())
    }
}

/// A plan's backup commit, and whether this run created it.
#[derive(Debug, Clone)]
pub struct BackupCommit {
    pub oid: String,
    pub fresh: bool,
}

/// A ref transaction handed to git and not yet committed. Dropped without `commit`, it is
/// aborted: nothing changes.
pub struct PendingTransaction {
    child: Running,
    writer: Option<JoinHandle<std::io::Result<ChildStdin>>>,
    stdout: BufReader<ChildStdout>,
}

/// A transaction in which every ref is locked and its old value checked: until `commit` or
/// drop, no other process can move those refs.
pub struct PreparedTransaction {
    // Declared first so it drops first: git must see the end of its input before the
    // pending transaction's drop waits for git to exit.
    stdin: ChildStdin,
    pending: PendingTransaction,
}

impl PendingTransaction {
    /// Wait until git has locked every ref and checked every old value; a compare-and-swap
    /// failure is `drift`, a lock held elsewhere `needs_recovery`.
    pub fn prepared(mut self) -> Result<PreparedTransaction> {
        let stdin = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(Ok(stdin))) => Some(stdin),
            _ => None,
        };
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).map_err(|e| {
                Error::internal("cannot read the output of git update-ref --stdin").caused_by(e)
            })?;
            if read == 0 {
                return Err(self.failed());
            }
            if line.trim_end() == "prepare: ok" {
                break;
            }
        }
        match stdin {
            Some(stdin) => Ok(PreparedTransaction { stdin, pending: self }),
            None => Err(self.failed()),
        }
    }

    /// Git ended without the answer we wanted: wait for it and say why.
    fn failed(&mut self) -> Error {
        drop(self.writer.take());
        let stderr = self.child.stderr();
        let _ = self.child.wait();
        update_ref_error(String::from_utf8_lossy(&stderr).trim())
    }
}

impl Drop for PendingTransaction {
    fn drop(&mut self) {
        // Our end of stdin closes with the writer; git then aborts the open transaction.
        drop(self.writer.take());
        let _ = self.child.wait();
    }
}

impl PreparedTransaction {
    pub fn commit(self) -> Result<()> {
        let PreparedTransaction {
            mut stdin,
            mut pending,
        } = self;
        let sent = stdin.write_all(b"commit\n");
        drop(stdin);
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut pending.stdout, &mut rest);
        if sent.is_ok() && rest.lines().any(|l| l == "commit: ok") {
            let _ = pending.child.wait();
            return Ok(());
        }
        Err(pending.failed())
    }
}

fn op_line(op: &RefOp) -> String {
    match op {
        RefOp::Create { refname, oid } => format!("create {refname} {oid}\n"),
        RefOp::Delete { refname, old } => format!("delete {refname} {old}\n"),
    }
}

/// What a failed `git update-ref --stdin` means, from its message.
fn update_ref_error(stderr: &str) -> Error {
    let safe = crate::text::safe(stderr);
    if stderr.contains(".lock': File exists") || stderr.contains("Unable to create") {
        return Error::new(Kind::NeedsRecovery, "a ref is locked by another process; nothing was changed")
            .caused_by(safe)
            .with_hint("wait for the other git process; if none runs, a killed git left the .lock file named above: remove it by hand");
    }
    if stderr.contains("but expected")
        || stderr.contains("reference already exists")
        || stderr.contains("unable to resolve reference")
    {
        return Error::new(
            Kind::Drift,
            "a ref changed between the check and the deletion; nothing was changed",
        )
        .caused_by(safe)
        .with_hint("re-run `guardctl plan`");
    }
    Error::internal("git update-ref failed; nothing was changed").caused_by(safe)
}

/// `text` without the `[branch "<name>"]` sections whose name is in `drop`. Anything this does
/// not recognise exactly (old `[branch.x]` syntax, a key on the header line) is kept, and the
/// observation after apply reports it.
fn without_branch_sections(text: &str, drop: &std::collections::HashSet<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dropping = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            dropping = branch_header(line).is_some_and(|n| drop.contains(n.as_str()));
        }
        if !dropping {
            out.push_str(line);
        }
    }
    out
}

/// The branch name of a `[branch "name"]` header line (escapes `\"` and `\\` undone).
fn branch_header(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix('[')?;
    let (section, rest) = rest.split_once(char::is_whitespace)?;
    if !section.eq_ignore_ascii_case("branch") {
        return None;
    }
    let mut chars = rest.trim_start().strip_prefix('"')?.chars();
    let mut name = String::new();
    loop {
        match chars.next()? {
            '\\' => name.push(chars.next()?),
            '"' => break,
            c => name.push(c),
        }
    }
    let tail = chars.as_str().trim_start().strip_prefix(']')?.trim();
    (tail.is_empty() || tail.starts_with('#') || tail.starts_with(';')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_exactly_the_named_branch_sections_in_one_pass() {
        let text = "[core]\n\tbare = false\n[branch \"a\"]\n\tremote = origin\n\tmerge = refs/heads/a\n\
                    [branch \"a/b\"]  # tracked\n\tremote = o\n[Branch \"q\\\"x\"]\n\tremote = o\n\
                    [branch \"keep\"]\n\tremote = o\n[remote \"origin\"]\n\turl = x\n";
        let drop = ["a", "a/b", "q\"x"].into_iter().collect();
        assert_eq!(
            without_branch_sections(text, &drop),
            "[core]\n\tbare = false\n[branch \"keep\"]\n\tremote = o\n[remote \"origin\"]\n\turl = x\n"
        );
    }

    #[test]
    fn unrecognised_headers_are_kept() {
        let drop = ["a"].into_iter().collect();
        let text = "[branch.a]\n\tremote = o\n[branch \"a\"] remote = o\n";
        assert_eq!(without_branch_sections(text, &drop), text);
    }
}
