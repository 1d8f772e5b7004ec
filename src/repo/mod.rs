//! The only code that touches git. Everything here reads (objects and refs through git2,
//! config through `git config`, see `config`; `plan`'s commits through gix, see `objects`),
//! except `mutate`, the one adapter module that changes refs and config (through git's own
//! commands).
//!
//! guardctl's own state lives in `<common git dir>/guardctl/`, shared by all worktrees.
//!
//! Ref names read from the repository are untrusted: libgit2 happily lists names from a
//! crafted `packed-refs` that git itself would reject, so every name is validated here and
//! invalid ones are reported as such, never used as a ref to act on.

pub mod backups;
mod change;
mod commit;
mod commit_graph;
mod config;
mod contained;
mod diff_budget;
pub mod gitenv;
mod graph;
pub mod ledger;
pub mod mutate;
mod objects;
mod parallel;
mod prefix;
pub mod publish;
mod refs;
mod remote;
mod shallow;
mod tags;
pub mod trial;
pub mod url;
mod walk;

pub use graph::{Beyond, Parents, Reachable, Reads, UnmergedCount, unmerged_after, unmerged_with};
pub use parallel::Reader;
pub use refs::{BranchRef, CheckedOut, is_valid_refname};
pub use remote::{Listing, RemoteRefs};
pub use tags::TagObservation;

use crate::error::{Error, Result};
use git2::{ErrorCode, Repository};

/// A git object id: the one type the rest of guardctl names objects by (git2's, re-exported
/// so that no module outside `repo` names a git library).
pub use git2::Oid;

impl From<git2::Error> for Error {
    fn from(e: git2::Error) -> Self {
        // An object the repository should have and does not: running again cannot help (the
        // generic hint says to), and the usual causes are a partial clone (libgit2 cannot
        // fetch from a promisor remote) or a damaged one.
        if e.code() == git2::ErrorCode::NotFound && e.class() == git2::ErrorClass::Odb {
            return Error::internal("git error: an object this repository needs is missing")
                .caused_by(e.message())
                .with_hint("`git fsck` lists what is missing; a partial clone gets it from its promisor remote through git only (`git fetch --refetch`), a damaged clone by fetching or cloning again");
        }
        Error::internal("git error").caused_by(e.message())
    }
}

/// The id git gives `bytes` as a blob (no repository needed, nothing written).
pub fn blob_id(bytes: &[u8]) -> Result<Oid> {
    Ok(Oid::hash_object(git2::ObjectType::Blob, bytes)?)
}

/// Process-wide libgit2 settings, chosen once by the entry point for the whole process.
pub mod settings {
    /// For a process that only plans (the CLI's `plan`): everything a plan says is
    /// re-derived with verified reads at `verify`/`apply`, so libgit2's re-hashing of every
    /// object it reads (SHA-1 with collision detection, a sixth of planning's time) buys
    /// nothing. Process-wide: never for `guardctl mcp`, whose apply shares the process, and
    /// never once a repository is open for anything else.
    pub fn planning_only_process() {
        git2::opts::strict_hash_verification(false);
    }
}
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The size of each window libgit2 maps of a pack file, and the most it keeps mapped in
/// all (set by the binary at start-up, see `src/main.rs`): a pack is read through a few
/// small windows rather than held in memory whole. 8 MiB windows keep the number of mmap
/// calls in the hundreds for a 120 MB pack; 32 MiB in all keeps planning 50,000 branches
/// well under 200 MB.
pub const PACK_WINDOW_BYTES: usize = 8 << 20;
pub const PACK_MAPPED_LIMIT_BYTES: usize = 32 << 20;

pub struct Repo {
    git: Repository,
    /// Every config entry, read once on first use (see `config.rs`).
    settings: std::sync::OnceLock<Vec<(String, String)>>,
    /// Every system and global config entry (see [`admin_entries`]), read once on first use.
    admin: std::sync::OnceLock<Vec<(String, String)>>,
    /// git's commit-graph file, loaded on first use by a [`Reads::Fast`] walk; shared with
    /// the worker handles of [`Repo::worker`].
    commit_graph: std::sync::OnceLock<Option<std::sync::Arc<commit_graph::CommitGraph>>>,
    /// gix's object database for [`Reads::Fast`] (`objects.rs`), opened on first use and
    /// shared with the worker handles of [`Repo::worker`], each of which reads through its
    /// own clone ([`Repo::fast_commit`]).
    fast_objects: std::sync::OnceLock<Option<objects::FastObjects>>,
    /// This handle's own reader, made from `fast_objects` on first use and dropped by
    /// [`Repo::release_fast_reads`].
    fast_reader: std::cell::RefCell<Option<objects::FastObjects>>,
    /// A shallow clone's boundary (`shallow.rs`), read on first use; shared with the worker
    /// handles.
    shallow: std::sync::OnceLock<Option<std::sync::Arc<shallow::Shallow>>>,
    /// Worker handles a parallel step is done with (`walk.rs` gives its own back), taken by
    /// [`Repo::worker`].
    spare: std::sync::Mutex<Vec<Repository>>,
    /// What each remote URL reported as its HEAD this run (`Repo::ls_remote_head`): the
    /// policy and the allowed-signers file are both read from the remote's default branch,
    /// and each asking again was another connection (an SSH handshake) for the same answer.
    remote_heads: std::sync::Mutex<HashMap<String, Option<(String, Oid)>>>,
    /// The run's listing of each remote URL (`Repo::listing`): the trust roots, the drift
    /// check and the team remote's snapshot are served by one `git ls-remote` (one
    /// connection) until this run pushes there.
    listings: std::sync::Mutex<HashMap<String, std::sync::Arc<remote::Listing>>>,
    /// What [`Repo::system_config`] read this run, by key: the policy's path is asked for by
    /// the trust roots and by both of `plan -o`'s destination checks, a git process each.
    system: std::sync::Mutex<HashMap<String, Option<String>>>,
}

/// Facts about one commit, as a plan records them.
#[derive(Debug, Clone)]
pub struct CommitFacts {
    /// Committer time, seconds since the epoch.
    pub time: i64,
    pub author_name: String,
    pub author_email: String,
    pub subject: String,
}

impl Repo {
    /// git, run inside the git dir with `--git-dir .`: every ref file it locks, renames and
    /// unlinks is then a short relative path. Measured: an absolute `--git-dir` makes a
    /// 6,000-ref update-ref transaction about 10% slower (extra path components per file).
    /// For commands that stay local (config reads): [`Repo::git`] adds the ssh policy.
    /// The repository's hooks never run for guardctl's git (`core.hooksPath` names no
    /// directory): a reviewer's `approve` moves `refs/guardctl/audit` through git, and a
    /// `reference-transaction` hook in a clone the planner prepared would run with the
    /// reviewer's key loaded.
    fn git_local(&self) -> crate::process::Process {
        gitenv::git().current_dir(self.git.path()).args([
            "--git-dir",
            ".",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
    }

    /// git for a command that may reach a remote. Never a password or host-key prompt from
    /// ssh (it would hang an agent or CI): ssh runs in batch mode and fails fast, unless the
    /// user chose an ssh command of their own (`GIT_SSH_COMMAND`, `GIT_SSH`, or
    /// `core.sshCommand` in any config git reads; libgit2's copy of the config is emptied on
    /// open, so git itself is asked).
    fn git(&self) -> crate::process::Process {
        // A remote URL is untrusted input (a plan names the one it is bound to): never a
        // transport that runs a program, whatever the repository's own config allows
        // (`protocol.ext.allow=always` there made `ext::sh -c …` as origin's URL run its
        // command when `plan` read the policy from the remote). As for publishing
        // (`repo::publish`), whose scratch git says the same.
        let mut c = self.git_local().args([
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "protocol.fd.allow=never",
            "-c",
            "core.gitProxy=",
            // The repository's own credential helpers never run; the user's (system and
            // global config) are given again after the reset.
            "-c",
            "credential.helper=",
        ]);
        let admin = self.admin_settings().unwrap_or_default();
        for (k, v) in admin.iter() {
            if k == "credential.helper" && !v.is_empty() {
                c = c.arg("-c").arg(format!("credential.helper={v}"));
            }
        }
        // GIT_SSH_COMMAND outranks every config: set, the repository's own core.sshCommand
        // never runs.
        match self.ssh_command() {
            Some(own) => c.env("GIT_SSH_COMMAND", own),
            None => c,
        }
    }

    /// The ssh command git is to use, when guardctl must set it: the user's (system or
    /// global `core.sshCommand`, or `GIT_SSH`), else ssh in batch mode. `None`: the caller's
    /// `GIT_SSH_COMMAND` stands.
    fn ssh_command(&self) -> Option<String> {
        if std::env::var_os("GIT_SSH_COMMAND").is_some() {
            return None;
        }
        let admin = self.admin_settings().ok().and_then(|s| {
            s.iter()
                .rev()
                .find(|(k, _)| k == "core.sshcommand")
                .map(|(_, v)| v.clone())
        });
        Some(match (admin, std::env::var_os("GIT_SSH")) {
            (Some(cmd), _) => cmd,
            (None, Some(program)) => {
                crate::plan::derive::shell_words(&[program.to_string_lossy().into_owned()])
            }
            (None, None) => "ssh -o BatchMode=yes".into(),
        })
    }

    /// Open the repository at `path`, or discover it from the working directory like git.
    pub fn open(path: Option<&Path>) -> Result<Repo> {
        gitenv::refuse_splitting()?;
        // Every commit is read about once per run, so libgit2's object cache (up to 256 MB)
        // buys nothing and dominated peak memory at 50k branches.
        git2::opts::enable_caching(false);
        let start = path.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        let git = Repository::discover(&start).map_err(|e| {
            let what = match path {
                Some(p) => format!("{} is not in a git repository", p.display()),
                None => "the current directory is not in a git repository".to_string(),
            };
            Error::usage(what)
                .caused_by(e.message())
                .with_hint("run guardctl inside a repository, or pass -C <path>")
        })?;
        // guardctl reads config only through git (`config.rs`), yet libgit2 keeps its own
        // parsed copy of the whole config for the repository's lifetime: about 70 MB at
        // 50,000 `[branch]` sections. The ref database takes its few settings (ignorecase,
        // precompose) when first used, so it is opened first; then the copy is replaced by
        // an empty config and freed.
        let _ = git.find_reference("HEAD");
        git.set_config(&git2::Config::new()?)?;
        Ok(Repo {
            git,
            settings: Default::default(),
            admin: Default::default(),
            commit_graph: Default::default(),
            fast_objects: Default::default(),
            fast_reader: Default::default(),
            shallow: Default::default(),
            spare: Default::default(),
            remote_heads: Default::default(),
            listings: Default::default(),
            system: Default::default(),
        })
    }

    /// Another handle on the same repository for a worker thread (a libgit2 repository must
    /// not be shared between threads), sharing the loaded commit-graph. Reads objects only.
    pub fn worker(&self) -> Result<Repo> {
        let spare = self.spare.lock().ok().and_then(|mut s| s.pop());
        let git = match spare {
            Some(git) => git,
            None => self.open_handle()?,
        };
        // What this handle has loaded is inherited (a `OnceLock` clones its value, if set).
        Ok(Repo {
            git,
            settings: Default::default(),
            admin: Default::default(),
            commit_graph: self.commit_graph.clone(),
            fast_objects: self.fast_objects.clone(),
            fast_reader: Default::default(),
            shallow: self.shallow.clone(),
            spare: Default::default(),
            remote_heads: Default::default(),
            listings: Default::default(),
            system: Default::default(),
        })
    }

    /// A handle on this repository with libgit2's copy of the config dropped (see
    /// [`Repo::open`]). Opening parses the whole config: tens of megabytes, for a moment, at
    /// 50,000 `[branch]` sections.
    fn open_handle(&self) -> Result<Repository> {
        let git = Repository::open(self.git.path())?;
        git.set_config(&git2::Config::new()?)?;
        Ok(git)
    }

    /// git's commit-graph, when the repository has a readable one. Not in a shallow
    /// repository or one with grafts: there git's parents are not the objects' parents.
    fn commit_graph(&self) -> Option<&commit_graph::CommitGraph> {
        self.commit_graph
            .get_or_init(|| {
                let common = self.git.commondir();
                if common.join("shallow").exists() || common.join("info/grafts").exists() {
                    return None;
                }
                commit_graph::CommitGraph::load(&common.join("objects")).map(std::sync::Arc::new)
            })
            .as_deref()
    }

    /// Whether `oid` names a commit, known without inflating it (the commit-graph holds it,
    /// or gix reads its kind from the pack entry's header); `None` where neither can tell.
    /// For [`Reads::Fast`] only: a plan's look at a branch nothing reads further.
    pub fn is_commit_fast(&self, oid: Oid) -> Option<bool> {
        if self.commit_graph().is_some_and(|g| g.parents(oid).is_some()) {
            return Some(true);
        }
        self.with_fast_reader(|r| r.is_commit(oid))
    }

    /// `f` over the bytes of commit `oid` as gix reads them (`objects.rs`, for
    /// [`Reads::Fast`] only), or `None` where gix cannot answer: the caller asks libgit2.
    pub(super) fn fast_commit<R>(&self, oid: Oid, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.with_fast_reader(|r| r.commit(oid).map(f))
    }

    /// The parents of commit `oid` from the start of its packed object (`prefix.rs`, for
    /// [`Reads::Fast`] only), or `None` where that does not settle them.
    pub(super) fn fast_parents(&self, oid: Oid) -> Option<Vec<Oid>> {
        self.with_fast_reader(|r| r.parents(oid))
    }

    /// `f` over the kind and bytes of object `oid` as gix reads them (for [`Reads::Fast`]
    /// only), or `None` where gix cannot answer: the caller asks libgit2.
    pub(super) fn fast_object<R>(&self, oid: Oid, f: impl FnOnce(gix_object::Kind, &[u8]) -> R) -> Option<R> {
        self.with_fast_reader(|r| r.object(oid).map(|(kind, data)| f(kind, data)))
    }

    /// The kind and size of object `oid` from its header as gix reads it (for
    /// [`Reads::Fast`] only), or `None` where gix cannot answer.
    pub(super) fn fast_header(&self, oid: Oid) -> Option<(gix_object::Kind, u64)> {
        self.with_fast_reader(|r| r.header(oid))
    }

    /// `f` with this handle's gix reader, made from `fast_objects` on first use; `None`
    /// where gix cannot open the repository's objects.
    fn with_fast_reader<R>(&self, f: impl FnOnce(&mut objects::FastObjects) -> Option<R>) -> Option<R> {
        let mut reader = self.fast_reader.borrow_mut();
        if reader.is_none() {
            *reader = self.fast_objects().clone();
        }
        f(reader.as_mut()?)
    }

    /// Drop this handle's gix reader and with it the pages its mapping touched (the next
    /// [`Repo::fast_commit`] opens a new one): for a step that reads nothing through gix.
    pub fn release_fast_reads(&self) {
        self.fast_reader.borrow_mut().take();
    }

    /// gix's object database, opened on first use (before the workers that share it).
    pub(super) fn fast_objects(&self) -> &Option<objects::FastObjects> {
        self.fast_objects
            .get_or_init(|| objects::FastObjects::open(&self.git.commondir().join("objects")))
    }

    /// A shallow clone's boundary, when the repository is shallow (see `shallow.rs`).
    fn shallow(&self) -> Result<Option<std::sync::Arc<shallow::Shallow>>> {
        if let Some(s) = self.shallow.get() {
            return Ok(s.clone());
        }
        let s = shallow::Shallow::load(self.git.commondir())?.map(std::sync::Arc::new);
        let _ = self.shallow.set(s.clone());
        Ok(s)
    }

    /// `<common git dir>/guardctl`: guardctl's own state, shared by every worktree.
    pub fn state_dir(&self) -> PathBuf {
        self.git.commondir().join("guardctl")
    }

    /// The common git dir (shared by all worktrees), where refs and lock files live.
    pub fn common_dir(&self) -> &Path {
        self.git.commondir()
    }

    /// What a preview run in this repository may read (src/sandbox.rs): the work tree, the
    /// git dir and the common git dir (a linked worktree's are elsewhere).
    pub fn preview_readable(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.git.workdir().into_iter().map(Path::to_path_buf).collect();
        paths.push(self.git.path().to_path_buf());
        paths.push(self.git.commondir().to_path_buf());
        paths
            .into_iter()
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            .collect()
    }

    /// Every file under `rel` (a directory relative to the work tree's top) that git tracks,
    /// and every untracked one it does not ignore, relative to the top, sorted: the files an
    /// exec plan's command could load from the repository (`ops::exec`). Read through git
    /// (no hook, no fsmonitor, no index write).
    ///
    /// Only `.gitignore` files decide what is ignored, and every one that does is listed
    /// itself (those in the directories above `rel`, and those that ignore themselves): an
    /// edit to one after approval is drift. `.git/info/exclude` and `core.excludesFile` are
    /// not read: they are not in the work tree, and a line added there after approval would
    /// hide a new file from the check.
    pub fn work_tree_files(&self, rel: &str) -> Result<Vec<String>> {
        let top = self
            .work_tree()
            .ok_or_else(|| Error::usage("an exec plan needs a work tree (this repository is bare)"))?;
        let mut files = self.ls_files(&top, rel, &["--cached", "--others", "--deduplicate"])?;
        files.extend(
            self.ls_files(&top, rel, &["--others", "--ignored", "--directory"])?
                .into_iter()
                .filter(|f| f == ".gitignore" || f.ends_with("/.gitignore")),
        );
        let mut above = String::new();
        for part in std::iter::once("").chain(rel.split('/').filter(|p| !p.is_empty() && *p != ".")) {
            if !part.is_empty() {
                above = format!("{above}{part}/");
            }
            files.push(format!("{above}.gitignore"));
        }
        // (A `.gitignore` above `rel` that is not there is pinned as missing: one made after
        // approval is drift.)
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// `git ls-files -z <how> --exclude-per-directory=.gitignore -- <rel>`, relative to the
    /// top.
    fn ls_files(&self, top: &Path, rel: &str, how: &[&str]) -> Result<Vec<String>> {
        let pathspec = format!(":(top,literal){}", if rel == "." { "" } else { rel });
        let out = gitenv::git()
            .current_dir(top)
            .arg("--git-dir")
            .arg(self.git.path())
            .arg("--work-tree")
            .arg(top)
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "--no-optional-locks",
            ])
            .args(["ls-files", "-z"])
            .args(how)
            .args(["--exclude-per-directory=.gitignore", "--"])
            .arg(pathspec)
            .checked(None)?;
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    }

    /// Whether git ignores `rel` (relative to the work tree's top), by every rule git reads
    /// (`.gitignore` files, `.git/info/exclude`, `core.excludesFile`).
    pub fn is_ignored(&self, rel: &Path) -> Result<bool> {
        self.git.is_path_ignored(rel).map_err(|e| {
            Error::internal(format!("cannot tell whether {} is ignored", rel.display())).caused_by(e)
        })
    }

    /// Add `line` to `.git/info/exclude` (created if missing) unless it is there already: a
    /// path ignored for this clone alone, never committed.
    pub fn exclude_locally(&self, line: &str) -> Result<()> {
        let file = self.git.commondir().join("info").join("exclude");
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        if have.lines().any(|l| l.trim() == line) {
            return Ok(());
        }
        let mut text = have;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line);
        text.push('\n');
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::internal(format!("cannot create {}", dir.display())).caused_by(e))?;
        }
        crate::fsutil::write_atomic(&file, text.as_bytes())
            .map_err(|e| Error::internal(format!("cannot write {}", file.display())).caused_by(e))
    }

    /// The work tree's top; `None` for a bare repository.
    pub fn work_tree(&self) -> Option<PathBuf> {
        self.git.workdir().map(Path::to_path_buf)
    }

    /// The work tree (or the git dir of a bare repository), for display.
    pub fn display_path(&self) -> PathBuf {
        self.git
            .workdir()
            .unwrap_or_else(|| self.git.path())
            .to_path_buf()
    }

    /// An identity for this repository that differs between clones and copies and needs no
    /// write to read: a digest of the common git dir's device, inode and birth time. A clone
    /// or a `cp -a` copy is a new directory (new inode, new birth time), so a plan made here
    /// is refused there; a `mv` within one file system keeps it. Moving to another file
    /// system, or restoring from a backup, is a copy: outstanding plans must be made again.
    /// Read-only, so `plan` works for a user who can only read the repository.
    pub fn identity(&self) -> Result<String> {
        use std::os::unix::fs::MetadataExt;
        let dir = self.common_dir();
        let meta = std::fs::metadata(dir)
            .map_err(|e| Error::internal(format!("cannot stat {}", dir.display())).caused_by(e))?;
        let born = meta
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let seed = format!("guardctl-repo-v2\0{}\0{}\0{born}", meta.dev(), meta.ino());
        let digest = <sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes());
        Ok(format!(
            "guardctl-repo:{}",
            crate::plan::envelope::hex(&digest[..16])
        ))
    }

    /// Resolve the comparison base: `--base` if given, else the remote HEAD's target, else
    /// `init.defaultBranch`, else `main` or `master`. Returns the full ref name (or the
    /// revision as given, when it is not a ref) and the commit.
    pub fn resolve_base(&self, base: Option<&str>) -> Result<(String, Oid)> {
        if let Some(spec) = base {
            return self.resolve_revision(spec);
        }
        for remote in self.remote_names()? {
            let head = format!("refs/remotes/{remote}/HEAD");
            if let Ok(r) = self.git.find_reference(&head)
                && let Ok(Some(target)) = r.symbolic_target()
                && let Ok(found) = self.resolve_revision(target)
            {
                return Ok(found);
            }
        }
        let mut candidates = Vec::new();
        if let Some(default) = self.config_string("init.defaultBranch")? {
            candidates.push(default);
        }
        candidates.extend(["main".to_string(), "master".to_string()]);
        for name in &candidates {
            if let Ok(found) = self.resolve_revision(&format!("refs/heads/{name}")) {
                return Ok(found);
            }
        }
        Err(Error::usage("cannot determine the base branch")
            .caused_by("no remote HEAD, no init.defaultBranch, no main or master branch")
            .with_hint("pass --base <ref>"))
    }

    fn resolve_revision(&self, spec: &str) -> Result<(String, Oid)> {
        let not_found = |e: git2::Error| {
            Error::usage(format!(
                "base `{}` does not name a commit",
                crate::text::safe(spec)
            ))
            .caused_by(e.message())
            .with_hint("pass --base a branch, tag or commit that exists here (`git branch -a` lists them)")
        };
        // A ref (short or full) resolves to its full name; anything else is kept as given.
        let (name, object) = match self.git.revparse_ext(spec) {
            Ok((obj, Some(r))) => (r.name().unwrap_or(spec).to_string(), obj),
            Ok((obj, None)) => (spec.to_string(), obj),
            Err(e) => return Err(not_found(e)),
        };
        let commit = object.peel_to_commit().map_err(not_found)?;
        Ok((name, commit.id()))
    }

    /// The object a ref points at now, if the ref exists.
    pub fn ref_target(&self, refname: &str) -> Option<Oid> {
        self.git.find_reference(refname).ok().and_then(|r| r.target())
    }

    /// The current target of each of `refnames` that exists. For many names, one pass over
    /// every ref: a lookup per name costs two `stat`s each (loose file, packed-refs freshness)
    /// and was a tenth of apply's time at 50,000 branches.
    pub fn ref_targets<'a>(
        &self,
        refnames: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<HashMap<String, Oid>> {
        const ONE_PASS_ABOVE: usize = 64;
        if refnames.len() <= ONE_PASS_ABOVE {
            return Ok(refnames
                .filter_map(|n| self.ref_target(n).map(|oid| (n.to_string(), oid)))
                .collect());
        }
        let wanted: std::collections::HashSet<&str> = refnames.collect();
        let mut out = HashMap::with_capacity(wanted.len());
        for r in self.git.references()? {
            let r = r?;
            if let (Ok(name), Some(oid)) = (std::str::from_utf8(r.name_bytes()), r.target())
                && wanted.contains(name)
            {
                out.insert(name.to_string(), oid);
            }
        }
        Ok(out)
    }

    /// The names of the refs under `prefix` (`refs/guardctl/backup/`), sorted.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for r in self.git.references_glob(&format!("{prefix}*"))? {
            if let Ok(name) = std::str::from_utf8(r?.name_bytes()) {
                out.push(name.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// The commits a plan's backup ref keeps: the parents of the commit it points at.
    pub fn backed_up(&self, backup_ref: &str) -> std::collections::HashSet<String> {
        self.ref_target(backup_ref)
            .and_then(|oid| self.git.find_commit(oid).ok())
            .map(|c| c.parent_ids().map(|p| p.to_string()).collect())
            .unwrap_or_default()
    }

    /// The content of `path` in the tree of commit `oid`, if it is a file there (at most
    /// `limit` bytes; larger is an error). Reads history only, never the work tree.
    pub fn committed_file(&self, oid: Oid, path: &str, limit: usize) -> Result<Option<Vec<u8>>> {
        let tree = self.git.find_commit(oid)?.tree()?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Ok(blob) = self.git.find_blob(entry.id()) else {
            return Err(Error::usage(format!("{path} is not a file in commit {oid}")));
        };
        if blob.size() > limit {
            return Err(Error::usage(format!(
                "{path} in commit {oid} is larger than {limit} bytes"
            )));
        }
        Ok(Some(blob.content().to_vec()))
    }

    /// The last value of `key` set in system or global git config (what an administrator
    /// controls), ignoring the repository's own config, which anyone who can write the
    /// repository can change. Read with git itself, so GIT_CONFIG_GLOBAL/SYSTEM/NOSYSTEM and
    /// plain includes behave exactly as for git. Every entry is read once per run, in one
    /// `git config` for every key (a run asks for up to four).
    pub fn admin_config(&self, key: &str) -> Result<Option<String>> {
        Ok(last_value(self.admin_settings()?, key))
    }

    /// Every entry of system and global git config (read once), keys in git's spelling.
    pub(crate) fn admin_settings(&self) -> Result<&[(String, String)]> {
        Ok(match self.admin.get() {
            Some(e) => e,
            None => {
                let read = admin_entries()?;
                self.admin.get_or_init(|| read)
            }
        })
    }

    /// A commit's committer time and its whole message (a backup commit's, for `gc`).
    pub fn commit_time_and_message(&self, oid: Oid) -> Result<(i64, String)> {
        let c = self.git.find_commit(oid)?;
        Ok((
            c.committer().when().seconds(),
            String::from_utf8_lossy(c.message_bytes()).into_owned(),
        ))
    }

    /// The last value of `key` in the **system** git config: the file git was built to read
    /// (`/etc/gitconfig` or its prefix's), which only an administrator writes.
    /// `GIT_CONFIG_SYSTEM` and `GIT_CONFIG_NOSYSTEM` are ignored: they are whoever runs
    /// guardctl, who may be the planner applying their own plan. (Test builds read the file
    /// named by `GUARDCTL_TEST_SYSTEM_GITCONFIG` instead.)
    pub fn system_config(&self, key: &str) -> Result<Option<String>> {
        let known = |r: &Repo| r.system.lock().map(|m| m.get(key).cloned()).ok().flatten();
        if let Some(value) = known(self) {
            return Ok(value);
        }
        // The admin settings and the repository's settings are read next by every command
        // that reads the system config: the three `git config` children run at once rather
        // than one after the other (about 6 ms of every plan, a tenth of a small
        // repository's). Each is the same read as when asked for on its own; a failed one
        // is dropped here, to be run again and reported when asked for.
        let value = std::thread::scope(|s| {
            let admin = self.admin.get().is_none().then(|| s.spawn(admin_entries));
            let settings = self.settings.get().is_none().then(|| {
                let git = self.settings_reader();
                s.spawn(move || config::config_output(git).map(config::settings_from))
            });
            let value = self.read_system_config(key);
            if let Some(Ok(Ok(read))) = admin.map(|h| h.join()) {
                let _ = self.admin.set(read);
            }
            if let Some(Ok(Ok(read))) = settings.map(|h| h.join()) {
                let _ = self.settings.set(read);
            }
            value
        })?;
        if let Ok(mut m) = self.system.lock() {
            m.insert(key.to_string(), value.clone());
        }
        Ok(value)
    }

    fn read_system_config(&self, key: &str) -> Result<Option<String>> {
        let c = gitenv::git()
            .current_dir("/")
            .env_remove("GIT_CONFIG_SYSTEM")
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .args(["config", "--system", "--includes", "--get-all", key]);
        #[cfg(feature = "test-hooks")]
        let c = match std::env::var_os("GUARDCTL_TEST_SYSTEM_GITCONFIG") {
            Some(p) => c.env("GIT_CONFIG_SYSTEM", p),
            None => c.env("GIT_CONFIG_NOSYSTEM", "1"),
        };
        let line = c.line().to_string();
        let out = c.output(None)?;
        match out.status.code() {
            Some(0) => {}
            Some(1) => return Ok(None),
            _ => {
                return Err(crate::process::failed(&line, &out));
            }
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .next_back()
            .map(String::from))
    }

    pub fn commit_facts(&self, oid: Oid) -> Result<CommitFacts> {
        self.commit_facts_with(oid, Reads::Verified)
    }

    /// A commit's facts, its bytes read as `reads` says and parsed by `commit.rs` either way,
    /// so that a plan and its re-derivation cannot parse one commit differently.
    pub fn commit_facts_with(&self, oid: Oid, reads: Reads) -> Result<CommitFacts> {
        if reads == Reads::Fast
            && let Some(Some(facts)) = self.fast_commit(oid, commit::facts)
        {
            return Ok(facts);
        }
        if let Ok(obj) = self.git.odb()?.read(oid)
            && obj.kind() == git2::ObjectType::Commit
            && let Some(facts) = commit::facts(obj.data())
        {
            return Ok(facts);
        }
        // Not a readable commit: libgit2's own words for why.
        self.git.find_commit(oid)?;
        Err(Error::internal(format!("commit {oid} is malformed")))
    }
}

/// [`Repo::admin_config`] without a repository: the last value of `key` in system or global
/// git config (outside a repository, the user's git config is exactly these).
pub fn admin_config(key: &str) -> Result<Option<String>> {
    Ok(last_value(&admin_entries()?, key))
}

/// The last value of `key` among `entries` (git's spelling of keys, see `config.rs`).
fn last_value(entries: &[(String, String)], key: &str) -> Option<String> {
    let key = config::canonical_key(key);
    entries
        .iter()
        .rev()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.clone())
}

/// Every entry of system and global git config, in the order git reads them (later ones
/// override earlier ones), with includes.
fn admin_entries() -> Result<Vec<(String, String)>> {
    // Run outside the repository: inside, git would parse the repository's own config
    // first (megabytes with 50,000 `[branch]` sections) for values it must not use
    // anyway. (So `includeIf "gitdir:..."` does not apply here.)
    let git =
        gitenv::git()
            .current_dir("/")
            .args(["config", "--includes", "--show-scope", "--null", "--list"]);
    let line = git.line().to_string();
    let out = git.output(None)?;
    match out.status.code() {
        Some(0) => {}
        // No config file at all.
        Some(1) => return Ok(vec![]),
        _ => return Err(crate::process::failed(&line, &out)),
    }
    // `-c` and GIT_CONFIG_PARAMETERS ("command" scope) are whoever runs guardctl, not an
    // administrator.
    Ok(config::scoped_entries(&out.stdout)
        .into_iter()
        .filter(|(scope, _, _)| matches!(scope.as_str(), "system" | "global"))
        .map(|(_, k, v)| (k, v))
        .collect())
}

/// What the tests of this module's files share.
#[cfg(test)]
mod test_support {
    use std::path::Path;

    /// git in `dir`, config and dates pinned (no user's or system's config is read); its
    /// trimmed stdout. A failure fails the test with git's words.
    pub fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .args(["-c", "user.name=t", "-c", "user.email=t@x"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_fast_reads_unmap_and_the_next_read_opens_a_new_reader() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        let tree = git
            .find_tree(git.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let oid = git.commit(None, &sig, &sig, "one", &tree, &[]).unwrap();
        let repo = Repo::open(Some(dir.path())).unwrap();
        let subject = |r: &Repo| r.fast_commit(oid, |b| commit::facts(b).map(|f| f.subject));
        assert_eq!(subject(&repo), Some(Some("one".to_string())));
        assert!(repo.fast_reader.borrow().is_some());
        repo.release_fast_reads();
        assert!(
            repo.fast_reader.borrow().is_none(),
            "the reader and its mappings are gone"
        );
        assert_eq!(subject(&repo), Some(Some("one".to_string())));
    }

    /// `core.sshCommand` (e.g. a CI's deploy key) is seen although libgit2's copy of the
    /// config is emptied on open: guardctl then leaves ssh to it instead of forcing batch mode.
    #[test]
    fn the_repositorys_own_ssh_command_never_runs() {
        // The repository's config is the planner's: its core.sshCommand is outranked by the
        // GIT_SSH_COMMAND guardctl sets (the caller's own, when set, stands).
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        let status = std::process::Command::new("git")
            .args(["config", "core.sshCommand", "touch /tmp/pwned-by-repo-config"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let repo = Repo::open(Some(dir.path())).unwrap();
        match std::env::var_os("GIT_SSH_COMMAND") {
            Some(_) => assert_eq!(repo.ssh_command(), None),
            None => {
                let cmd = repo.ssh_command().unwrap();
                assert!(!cmd.contains("pwned"), "{cmd}");
            }
        }
    }
}
