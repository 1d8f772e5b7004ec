//! The git mechanics of publishing to a remote (docs/remote.md): items as parentless commits,
//! create-only atomic pushes, fetches of `refs/guardctl/*`. All of it happens in a
//! [`Scratch`] repository, a private bare repository in a temporary directory: the user's
//! repository (its refs, config, reflogs, objects) is never written for this.
//!
//! A remote URL is untrusted input: one that starts with `-` or names a transport that runs
//! a program (`ext::`, `fd::`) is refused, it is passed after `--`, and git is told never to
//! allow those transports (`-c protocol.ext.allow=never`, `protocol.fd.allow=never`).
//! Nothing here prompts: no terminal prompt for credentials, ssh in batch mode unless the
//! user chose an ssh command of their own.
//!
//! Not here: the layout of `refs/guardctl/` and what an item must contain to count
//! (`store::published`), and which remote (`context`).

use super::Repo;
use crate::error::{Error, Result};
use crate::process::Process;
use crate::text::safe;
use git2::{Oid, Repository};
use std::path::Path;

/// The identity and time of every published commit: the same bytes give the same commit id
/// in any clone, so publishing an item twice is "already published", not a conflict.
const AUTHOR: (&str, &str) = ("guardctl", "guardctl@invalid");

/// The three objects of a published item (blob, tree, commit), as raw object bodies, and
/// the commit's id: exactly what [`Scratch::item`] builds, computed without a repository, so
/// an item can be written into another object store (the consumed marker that `apply`
/// pushes from the user's repository, `repo::mutate`) and recognised by its id.
pub struct ItemObjects {
    pub blob: Vec<u8>,
    pub tree: Vec<u8>,
    pub commit: Vec<u8>,
    pub oid: Oid,
}

/// The objects of the one-file item `name` holding `bytes` (see [`ItemObjects`]).
pub fn item_objects(name: &str, bytes: &[u8]) -> Result<ItemObjects> {
    let blob_id = Oid::hash_object(git2::ObjectType::Blob, bytes)?;
    let mut tree = format!("100644 {name}\0").into_bytes();
    tree.extend_from_slice(blob_id.as_bytes());
    let tree_id = Oid::hash_object(git2::ObjectType::Tree, &tree)?;
    let who = format!("{} <{}> 0 +0000", AUTHOR.0, AUTHOR.1);
    let commit = format!("tree {tree_id}\nauthor {who}\ncommitter {who}\n\nguardctl {name}\n").into_bytes();
    let oid = Oid::hash_object(git2::ObjectType::Commit, &commit)?;
    Ok(ItemObjects {
        blob: bytes.to_vec(),
        tree,
        commit,
        oid,
    })
}

/// A private bare repository in a temporary directory, removed when dropped.
pub struct Scratch {
    dir: tempfile::TempDir,
    git: Repository,
    /// `(key, value)` settings passed to git through `GIT_CONFIG_*` (never on the command
    /// line, where a token in an `http.extraHeader` would be visible to every user).
    transport: Vec<(String, String)>,
}

/// One ref update of an atomic push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub refname: String,
    /// The new value; `None` deletes the ref.
    pub new: Option<Oid>,
    /// What the ref must be on the remote for the update to land: `None` means it must not
    /// exist (create only), `Some(oid)` that it must point at `oid`.
    pub expect: Option<Oid>,
}

impl RefUpdate {
    /// Create `refname` at `new`; refused when it exists with another value.
    pub fn create(refname: impl Into<String>, new: Oid) -> RefUpdate {
        RefUpdate {
            refname: refname.into(),
            new: Some(new),
            expect: None,
        }
    }
}

/// How the remote took one ref of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefOutcome {
    /// Created, updated or deleted now.
    Done,
    /// Already had exactly the new value: nothing was sent.
    AlreadyThere,
    /// The ref is not what the update expected (for a create: it exists with other content).
    Stale,
    /// The remote (a hook, a protection rule) refused it, with its reason.
    Refused(String),
    /// Not attempted because another ref of the atomic push failed.
    AtomicAbort,
}

/// What a push did to each ref, and the remote's own messages (escaped).
#[derive(Debug, Clone)]
pub struct PushReport {
    pub refs: Vec<(String, RefOutcome)>,
    /// `remote: …` lines of git's stderr (a hook's message), escaped.
    pub remote_messages: Vec<String>,
    /// Whether git reported success.
    pub ok: bool,
}

impl PushReport {
    pub fn outcome(&self, refname: &str) -> Option<&RefOutcome> {
        self.refs.iter().find(|(r, _)| r == refname).map(|(_, o)| o)
    }
}

/// Refuse a URL that git could take for an option or for a transport that runs a program.
pub fn check_url(url: &str) -> Result<()> {
    let lower = url.to_ascii_lowercase();
    let bad = url.is_empty()
        || url.starts_with('-')
        || lower.starts_with("ext::")
        || lower.starts_with("fd::")
        || url.chars().any(|c| c.is_control());
    if bad {
        return Err(Error::usage(format!(
            "refusing the remote URL `{}`: guardctl publishes only through git's ordinary transports",
            safe(url)
        ))
        .with_hint("give the remote an ssh, https or file URL (`git remote set-url`)"));
    }
    Ok(())
}

impl Repo {
    /// The settings a [`Scratch`] repository needs to reach a remote as this one does:
    /// `http.*` of any scope (a CI's `extraHeader` is in the repository's own config), and the
    /// user's own `core.sshCommand` (system or global config). Nothing that runs a program
    /// comes from the repository's own config: its credential helpers and ssh command are
    /// the planner's (the scratch repository's git reads the user's own helpers itself).
    pub fn transport_settings(&self) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = self
            .settings()?
            .iter()
            .filter(|(k, _)| k.starts_with("http."))
            .cloned()
            .collect();
        out.extend(
            self.admin_settings()?
                .iter()
                .filter(|(k, _)| k == "core.sshcommand")
                .cloned(),
        );
        Ok(out)
    }
}

impl Scratch {
    /// A new empty scratch repository; `transport` as from [`Repo::transport_settings`].
    pub fn new(transport: Vec<(String, String)>) -> Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("guardctl-remote-")
            .tempdir()
            .map_err(|e| Error::internal("cannot create a temporary directory").caused_by(e))?;
        let git = Repository::init_bare(dir.path())?;
        Ok(Scratch { dir, git, transport })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Its object store, for [`super::ledger`]'s reads and writes.
    pub(super) fn git2(&self) -> &Repository {
        &self.git
    }

    /// Its object directory: a push from another repository that must carry objects built
    /// here (a ledger commit) names it as an alternate.
    pub fn objects_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("objects")
    }

    fn git(&self) -> Process {
        self.git_env(super::gitenv::git())
    }

    /// git for `RepoMut::push_atomic` from here, reading `objects` (the pushing clone's
    /// object store) as an alternate.
    pub(in crate::repo) fn pushing_with(&self, objects: &Path) -> Process {
        self.git().env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects)
    }

    /// git, run through `sh` with no file it writes allowed to grow past `max_file_bytes`
    /// (`ulimit -f`, in 512-byte blocks): a write beyond it kills that git process
    /// (`SIGXFSZ`). A lower limit already in force stays (raising it is not allowed, and
    /// not wanted). Through `sh` because the crate runs no `unsafe` code to set the limit
    /// itself.
    fn git_capped(&self, max_file_bytes: u64) -> Process {
        self.git_env(super::gitenv::environment(Process::new("sh")).args([
            "-c",
            "ulimit -f \"$0\" 2>/dev/null; exec git \"$@\"",
            &max_file_bytes.div_ceil(512).to_string(),
        ]))
    }

    fn git_env(&self, p: Process) -> Process {
        // The environment is `gitenv`'s already (no inherited location variable).
        let mut p = p
            .current_dir(self.dir.path())
            // A filtered fetch (below) leaves large blobs out and marks the remote a promisor:
            // nothing may fetch them later behind guardctl's back.
            .env("GIT_NO_LAZY_FETCH", "1");
        let own_ssh = std::env::var_os("GIT_SSH_COMMAND").is_some()
            || std::env::var_os("GIT_SSH").is_some()
            || self.transport.iter().any(|(k, _)| k == "core.sshcommand");
        if !own_ssh {
            p = p.env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes");
        }
        // GIT_CONFIG_COUNT replaces any the caller set: ours are the only ones.
        p = p.env("GIT_CONFIG_COUNT", self.transport.len().to_string());
        for (i, (k, v)) in self.transport.iter().enumerate() {
            p = p
                .env(format!("GIT_CONFIG_KEY_{i}"), k)
                .env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
        p.args([
            "--git-dir",
            ".",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "protocol.fd.allow=never",
            "-c",
            "core.hooksPath=/dev/null",
        ])
    }

    /// A parentless commit whose tree holds one file, `name`, with `bytes`; fixed author,
    /// committer, time and message, so equal content gives an equal id everywhere.
    pub fn item(&self, name: &str, bytes: &[u8]) -> Result<Oid> {
        let blob = self.git.blob(bytes)?;
        let mut tree = self.git.treebuilder(None)?;
        tree.insert(name, blob, 0o100644)?;
        let tree = self.git.find_tree(tree.write()?)?;
        let sig = git2::Signature::new(AUTHOR.0, AUTHOR.1, &git2::Time::new(0, 0))?;
        Ok(self
            .git
            .commit(None, &sig, &sig, &format!("guardctl {name}\n"), &tree, &[])?)
    }

    /// Push `updates` to `url` in one atomic push (all land or none does), each guarded by
    /// `--force-with-lease` with its expected value. Returns what happened to each ref; fails
    /// only when git could not reach the remote or said nothing about a ref.
    pub fn push(&self, url: &str, updates: &[RefUpdate]) -> Result<PushReport> {
        check_url(url)?;
        let mut p = self
            .git()
            .args(["push", "--atomic", "--porcelain", "--no-verify"]);
        for u in updates {
            p = p.arg(format!(
                "--force-with-lease={}:{}",
                u.refname,
                u.expect.map(|o| o.to_string()).unwrap_or_default()
            ));
        }
        p = p.args(["--", url]);
        for u in updates {
            p = p.arg(match u.new {
                Some(oid) => format!("{oid}:{}", u.refname),
                None => format!(":{}", u.refname),
            });
        }
        let line = p.line().to_string();
        let out = p.output(None)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let refs = parse_porcelain(&stdout);
        let remote_messages = remote_lines(&out.stderr);
        if updates.iter().any(|u| !refs.iter().any(|(r, _)| *r == u.refname)) {
            // Nothing was said about a ref: the remote was not reached (no such repository,
            // no access, no network).
            return Err(crate::process::failed(&line, &out)
                .with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)"));
        }
        Ok(PushReport {
            refs,
            remote_messages,
            ok: out.status.success(),
        })
    }

    /// Fetch the refs named by `patterns` (names, or globs such as `refs/guardctl/plans/*`)
    /// from `url` into this repository under the same names. A glob matching nothing is no
    /// error; a name that does not exist is.
    ///
    /// `limit` is the largest file anything fetched may hold; what a hostile ref can make
    /// this fetch bring is capped, not only what is read afterwards:
    /// - blobs larger than `limit` are not sent at all by a server that takes filters
    ///   (`--filter=blob:limit`; [`Scratch::read_item`] then says the file is too large);
    /// - from one that does not, the pack is written as one file (`transfer.unpackLimit=1`),
    ///   and no file may grow past [`fetch_cap`]`(limit)`: git is stopped there, what it
    ///   wrote is removed, and the answer is [`Fetch::Capped`] (nothing of this fetch is
    ///   kept; fetch fewer refs).
    pub fn fetch(&self, url: &str, patterns: &[String], limit: u64) -> Result<Fetch> {
        // Published items are parentless commits: one commit deep is all of one, and a
        // hostile ref pointing into a long history brings no more.
        self.fetch_specs(url, patterns, limit, fetch_cap(limit), Some(1))
    }

    /// Fetch `commits` (each the tip of a ref `url` lists) one commit deep, no blob of more
    /// than `limit` bytes, and write no ref: what holds them is the caller's listing.
    pub fn fetch_commits(&self, url: &str, commits: &[Oid], limit: u64) -> Result<Fetch> {
        let specs: Vec<String> = commits.iter().map(|o| o.to_string()).collect();
        self.fetch_refspecs(url, &specs, limit, fetch_cap(limit), Some(1))
    }

    /// [`Scratch::fetch_commits`] with no file allowed past `cap` itself (not
    /// [`fetch_cap`]`(cap)`, which leaves a megabyte for a commit and tree beside an item):
    /// for a commit that should be a few hundred bytes with its tree (`repo::backups`).
    pub(in crate::repo) fn fetch_commits_within(
        &self,
        url: &str,
        commits: &[Oid],
        cap: u64,
    ) -> Result<Fetch> {
        let specs: Vec<String> = commits.iter().map(|o| o.to_string()).collect();
        self.fetch_refspecs(url, &specs, cap, cap, Some(1))
    }

    /// Fetch `refname` from `url` with its whole history (the ledger, `store::ledger`), no
    /// blob of more than `limit` bytes and no pack of more than `cap`, as [`Scratch::fetch`]
    /// caps a fetch of items.
    pub fn fetch_history(&self, url: &str, refname: &str, limit: u64, cap: u64) -> Result<Fetch> {
        self.fetch_specs(url, &[refname.to_string()], limit, cap, None)
    }

    fn fetch_specs(
        &self,
        url: &str,
        patterns: &[String],
        limit: u64,
        cap: u64,
        depth: Option<u32>,
    ) -> Result<Fetch> {
        let specs: Vec<String> = patterns.iter().map(|pat| format!("+{pat}:{pat}")).collect();
        self.fetch_refspecs(url, &specs, limit, cap, depth)
    }

    fn fetch_refspecs(
        &self,
        url: &str,
        specs: &[String],
        limit: u64,
        cap: u64,
        depth: Option<u32>,
    ) -> Result<Fetch> {
        check_url(url)?;
        // The refspecs go on standard input: thousands of refs (anyone who can push can
        // create them) as arguments would exceed the kernel's limit on a command line.
        let specs: String = specs.iter().map(|spec| format!("{spec}\n")).collect();
        let p = self
            .git_capped(cap)
            .args([
                "-c",
                "fetch.unpackLimit=1",
                "-c",
                "transfer.unpackLimit=1",
                "fetch",
                "--quiet",
                "--stdin",
            ])
            .args(depth.map(|d| format!("--depth={d}")))
            .args([
                &format!("--filter=blob:limit={limit}"),
                "--no-tags",
                "--no-write-fetch-head",
                "--no-auto-gc",
                "--",
                url,
            ]);
        match p.checked(Some(specs.as_bytes())) {
            Ok(_) => Ok(Fetch::Done),
            Err(e) => {
                if self.remove_capped(cap)? {
                    return Ok(Fetch::Capped);
                }
                Err(e.with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)"))
            }
        }
    }

    /// After a failed fetch: whether it stopped at the cap (a file it was writing reached
    /// `cap` bytes); the files it left behind are removed either way.
    fn remove_capped(&self, cap: u64) -> Result<bool> {
        let dir = self.dir.path().join("objects/pack");
        let mut capped = false;
        let entries = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io("read the directory", &dir)(e)),
        };
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with("tmp_") {
                continue;
            }
            let path = entry.path();
            capped |= entry.metadata().is_ok_and(|m| m.len() >= cap.div_ceil(512) * 512);
            std::fs::remove_file(&path).map_err(Error::io("remove", &path))?;
        }
        Ok(capped)
    }

    /// The refs under `prefix` here, sorted by name, with what they point at. Names that are
    /// not valid ref names (a crafted remote) are left out.
    pub fn refs(&self, prefix: &str) -> Result<Vec<(String, Oid)>> {
        let mut out = Vec::new();
        for r in self.git.references_glob(&format!("{prefix}*"))? {
            let r = r?;
            if let (Ok(name), Some(oid)) = (std::str::from_utf8(r.name_bytes()), r.target())
                && super::is_valid_refname(name)
            {
                out.push((name.to_string(), oid));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The one file of a published item: the commit `oid` must have no parent and a tree of
    /// exactly one regular file named `name`, of at most `limit` bytes. `Err` says why not.
    pub fn read_item(&self, oid: Oid, name: &str, limit: u64) -> std::result::Result<Vec<u8>, String> {
        let commit = self
            .git
            .find_commit(oid)
            .map_err(|_| format!("{oid} is not a commit"))?;
        if commit.parent_count() != 0 {
            return Err(format!("commit {oid} has parents"));
        }
        let tree = commit.tree().map_err(|e| e.message().to_string())?;
        let entry = match (tree.len(), tree.get(0)) {
            (1, Some(e)) if e.name_bytes() == name.as_bytes() && e.filemode() == 0o100644 => e,
            _ => return Err(format!("commit {oid} does not hold exactly one file `{name}`")),
        };
        let odb = self.git.odb().map_err(|e| e.message().to_string())?;
        if !odb.exists(entry.id()) {
            // A filtered fetch leaves out only blobs over its limit.
            return Err(format!(
                "`{name}` in commit {oid} is too large: the fetch left it out"
            ));
        }
        let (size, kind) = odb.read_header(entry.id()).map_err(|e| e.message().to_string())?;
        if kind != git2::ObjectType::Blob {
            return Err(format!("`{name}` in commit {oid} is not a file"));
        }
        if size as u64 > limit {
            return Err(format!("`{name}` in commit {oid} is larger than {limit} bytes"));
        }
        let blob = self
            .git
            .find_blob(entry.id())
            .map_err(|e| e.message().to_string())?;
        Ok(blob.content().to_vec())
    }
}

/// What a [`Scratch::fetch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// Every ref asked for is here.
    Done,
    /// The pack would have been larger than the cap: nothing was kept.
    Capped,
}

/// The most a fetch of files of at most `limit` bytes may write to one file: a pack holding
/// such a file compressed (zlib can grow incompressible data a little), its commit and tree,
/// with room to spare.
pub fn fetch_cap(limit: u64) -> u64 {
    limit + limit / 64 + 1024 * 1024
}

/// The refs `git ls-remote` lists at `url` for `patterns`, validated (nothing is stored).
pub fn ls_remote(
    transport: Vec<(String, String)>,
    url: &str,
    patterns: &[String],
) -> Result<Vec<(String, Oid)>> {
    Scratch::new(transport)?.ls_remote(url, patterns)
}

impl Scratch {
    /// `git ls-remote --symref` of `patterns` at `url`, as it ran (`Repo::listing` parses
    /// its output and says its failure).
    pub fn ls_remote_raw(&self, url: &str, patterns: &[String]) -> Result<std::process::Output> {
        check_url(url)?;
        self.git()
            .env("GIT_TERMINAL_PROMPT", "0")
            .args(["ls-remote", "--symref", "--", url])
            .args(patterns)
            .output(None)
    }

    /// The refs `git ls-remote` lists at `url` for `patterns`, sorted; names that are not
    /// valid ref names are left out.
    pub fn ls_remote(&self, url: &str, patterns: &[String]) -> Result<Vec<(String, Oid)>> {
        check_url(url)?;
        let out = self
            .git()
            .args(["ls-remote", "--", url])
            .args(patterns)
            .checked(None)
            .map_err(|e| {
                e.with_hint("check the remote's URL and your access to it (`git ls-remote <remote>`)")
            })?;
        let mut refs = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((oid, name)) = line.split_once('\t')
                && let Ok(oid) = Oid::from_str(oid)
                && super::is_valid_refname(name)
            {
                refs.push((name.to_string(), oid));
            }
        }
        refs.sort();
        Ok(refs)
    }
}

/// `git push --porcelain` lines: `<flag>\t<from>:<to>\t<summary>`.
fn parse_porcelain(stdout: &str) -> Vec<(String, RefOutcome)> {
    let mut out = Vec::new();
    for line in stdout.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(flag), Some(spec), summary) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some((_, to)) = spec.rsplit_once(':') else {
            continue;
        };
        let summary = summary.unwrap_or_default();
        let outcome = match flag {
            " " | "+" | "-" | "*" => RefOutcome::Done,
            "=" => RefOutcome::AlreadyThere,
            "!" if summary.contains("stale info") => RefOutcome::Stale,
            "!" if summary.contains("atomic push failed")
                || summary.contains("atomic transaction failed") =>
            {
                RefOutcome::AtomicAbort
            }
            "!" => RefOutcome::Refused(safe(summary)),
            _ => continue,
        };
        out.push((to.to_string(), outcome));
    }
    out
}

/// The `remote: ` lines of git's stderr, escaped.
fn remote_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("remote:"))
        .map(|l| safe(l.trim()))
        .filter(|l| !l.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare() -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        Repository::init_bare(d.path()).unwrap();
        let url = format!("file://{}", d.path().display());
        (d, url)
    }

    #[test]
    fn equal_content_gives_an_equal_commit_in_any_scratch_repository() {
        let a = Scratch::new(vec![]).unwrap();
        let b = Scratch::new(vec![]).unwrap();
        assert_eq!(
            a.item("plan.json", b"x").unwrap(),
            b.item("plan.json", b"x").unwrap()
        );
        assert_ne!(
            a.item("plan.json", b"x").unwrap(),
            a.item("plan.json", b"y").unwrap()
        );
        assert_ne!(
            a.item("plan.json", b"x").unwrap(),
            a.item("approval.json", b"x").unwrap()
        );
    }

    #[test]
    fn item_objects_computed_without_a_repository_are_the_scratch_items() {
        let s = Scratch::new(vec![]).unwrap();
        for (name, bytes) in [("consumed.json", &b"{}\n"[..]), ("receipt.json", b"x")] {
            let o = item_objects(name, bytes).unwrap();
            assert_eq!(o.oid, s.item(name, bytes).unwrap());
            assert_eq!(s.read_item(o.oid, name, 10).unwrap(), bytes);
        }
    }

    #[test]
    fn a_create_only_push_lands_once_and_never_overwrites() {
        let (_remote, url) = bare();
        let s = Scratch::new(vec![]).unwrap();
        let one = s.item("plan.json", b"one").unwrap();
        let two = s.item("plan.json", b"two").unwrap();
        let r = s
            .push(&url, &[RefUpdate::create("refs/guardctl/plans/aa", one)])
            .unwrap();
        assert!(r.ok);
        assert_eq!(r.outcome("refs/guardctl/plans/aa"), Some(&RefOutcome::Done));
        // The same content again: already there, nothing sent.
        let again = s
            .push(&url, &[RefUpdate::create("refs/guardctl/plans/aa", one)])
            .unwrap();
        assert!(again.ok);
        assert_eq!(
            again.outcome("refs/guardctl/plans/aa"),
            Some(&RefOutcome::AlreadyThere)
        );
        // Other content under the same name: the lease refuses it.
        let other = s
            .push(&url, &[RefUpdate::create("refs/guardctl/plans/aa", two)])
            .unwrap();
        assert!(!other.ok);
        assert_eq!(other.outcome("refs/guardctl/plans/aa"), Some(&RefOutcome::Stale));
        let listed = ls_remote(vec![], &url, &["refs/guardctl/*".into()]).unwrap();
        assert_eq!(listed, vec![("refs/guardctl/plans/aa".to_string(), one)]);
    }

    #[test]
    fn an_atomic_push_lands_all_of_its_refs_or_none() {
        let (_remote, url) = bare();
        let s = Scratch::new(vec![]).unwrap();
        let a = s.item("approval.json", b"a").unwrap();
        let b = s.item("approval.json", b"b").unwrap();
        s.push(&url, &[RefUpdate::create("refs/guardctl/x/taken", a)])
            .unwrap();
        let r = s
            .push(
                &url,
                &[
                    RefUpdate::create("refs/guardctl/x/new", a),
                    RefUpdate::create("refs/guardctl/x/taken", b),
                ],
            )
            .unwrap();
        assert!(!r.ok);
        assert_eq!(r.outcome("refs/guardctl/x/taken"), Some(&RefOutcome::Stale));
        assert_ne!(r.outcome("refs/guardctl/x/new"), Some(&RefOutcome::Done));
        let listed = ls_remote(vec![], &url, &["refs/guardctl/*".into()]).unwrap();
        assert_eq!(listed, vec![("refs/guardctl/x/taken".to_string(), a)]);
        // An update guarded by its current value, with a deletion, in one push.
        let r = s
            .push(
                &url,
                &[
                    RefUpdate::create("refs/guardctl/x/new", b),
                    RefUpdate {
                        refname: "refs/guardctl/x/taken".into(),
                        new: None,
                        expect: Some(a),
                    },
                ],
            )
            .unwrap();
        assert!(r.ok, "{r:?}");
        let listed = ls_remote(vec![], &url, &["refs/guardctl/*".into()]).unwrap();
        assert_eq!(listed, vec![("refs/guardctl/x/new".to_string(), b)]);
    }

    #[test]
    fn fetched_items_are_read_back_and_malformed_ones_are_named() {
        let (_remote, url) = bare();
        let s = Scratch::new(vec![]).unwrap();
        let good = s.item("plan.json", b"{}").unwrap();
        s.push(&url, &[RefUpdate::create("refs/guardctl/plans/aa", good)])
            .unwrap();
        let r = Scratch::new(vec![]).unwrap();
        let fetched = r
            .fetch(
                &url,
                &["refs/guardctl/plans/*".into(), "refs/guardctl/none/*".into()],
                1024,
            )
            .unwrap();
        assert_eq!(fetched, Fetch::Done);
        let refs = r.refs("refs/guardctl/plans/").unwrap();
        assert_eq!(refs, vec![("refs/guardctl/plans/aa".to_string(), good)]);
        assert_eq!(r.read_item(good, "plan.json", 10).unwrap(), b"{}");
        assert!(
            r.read_item(good, "approval.json", 10)
                .unwrap_err()
                .contains("exactly one file")
        );
        assert!(
            r.read_item(good, "plan.json", 1)
                .unwrap_err()
                .contains("larger than")
        );
    }

    #[test]
    fn urls_that_could_run_a_program_or_pass_for_an_option_are_refused() {
        for u in ["-uhack", "ext::sh -c id", "EXT::x", "fd::3", "", "a\nb"] {
            assert!(check_url(u).is_err(), "{u}");
        }
        for u in ["/srv/x.git", "file:///srv/x", "git@host:o/r.git", "https://h/o/r"] {
            assert!(check_url(u).is_ok(), "{u}");
        }
    }

    #[test]
    fn porcelain_lines_give_each_refs_outcome() {
        let out = "To /srv/r\n*\tabc:refs/guardctl/a\t[new reference]\n=\tabc:refs/guardctl/b\t[up to date]\n!\tabc:refs/guardctl/c\t[rejected] (stale info)\n!\tabc:refs/guardctl/d\t[remote rejected] (pre-receive hook declined)\n!\tabc:refs/guardctl/e\t[rejected] (atomic push failed)\nDone\n";
        let got = parse_porcelain(out);
        assert_eq!(
            got,
            vec![
                ("refs/guardctl/a".to_string(), RefOutcome::Done),
                ("refs/guardctl/b".to_string(), RefOutcome::AlreadyThere),
                ("refs/guardctl/c".to_string(), RefOutcome::Stale),
                (
                    "refs/guardctl/d".to_string(),
                    RefOutcome::Refused("[remote rejected] (pre-receive hook declined)".into())
                ),
                ("refs/guardctl/e".to_string(), RefOutcome::AtomicAbort),
            ]
        );
    }
}
