//! `Ctx`: what every command needs from the outside world, gathered once per run.
//!
//! It owns the one `now` of the run (logic never reads the clock itself), opens the
//! repository lazily (so `show` and `whoami` work outside one), and performs the contract's
//! lookups for the signing key and the allowed-signers file (docs/trust-model.md).
//!
//! Test hooks (a clock override) exist only with the `test-hooks` cargo feature, which release
//! builds never enable: a shipped binary honouring a clock override would revive expired plans.

use crate::error::{Error, Kind, Result};
use crate::plan::model::{PolicySource, PolicySourceKind};
use crate::policy::file::PolicyError;
use crate::policy::{InForce, Policy};
use crate::repo::Repo;
use crate::sign::key::KeyLookup;
use crate::sign::{AllowedSigners, SigningKey};
use crate::store::published::{Remote, Scope, Snapshot};
use crate::text::safe;
use crate::ui::Ui;
use std::cell::{OnceCell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use time::OffsetDateTime;

pub struct Ctx {
    pub now: OffsetDateTime,
    repo_path: Option<PathBuf>,
    repo: OnceCell<Repo>,
    key_flag: Option<PathBuf>,
    allowed_signers_flag: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    policy: OnceCell<InForce>,
    /// The policy of a plan bound to a remote other than the default policy remote.
    remote_policy: OnceCell<(String, InForce)>,
    signers: OnceCell<(AllowedSigners, Option<SignersSource>)>,
    /// The team remote for reading published items (`None`: there is none), resolved once.
    team_remote: OnceCell<Option<Remote>>,
    /// What was fetched from the team remote this run (docs/remote.md).
    published: RefCell<Vec<Rc<Snapshot>>>,
    /// Warnings about published items left out, not yet printed (`report_published`).
    published_notes: RefCell<Vec<String>>,
    /// The notes already kept (a set: 50,000 junk refs are as many warnings, and a search
    /// of the list for each was quadratic, most of a `verify`'s time).
    published_noted: RefCell<std::collections::HashSet<String>>,
    /// Warnings that a whole part of what the team remote publishes was left out (it could
    /// not be read, or its ledger was rewound): printed in full, before the capped notes,
    /// so that junk anyone can push never hides them.
    published_alerts: RefCell<Vec<String>>,
    /// Whether this run records the ledger tips it sees (`store::ledger::record_seen`): a
    /// command that writes this clone's state anyway (`approve`, `reject`, `apply`,
    /// `recover`, `rollback`); the preview path writes nothing.
    records_ledger: std::cell::Cell<bool>,
}

/// Where the trusted identities came from: a file, or `<base>:.guardctl/allowed_signers`.
#[derive(Debug, Clone)]
pub struct SignersSource {
    pub location: String,
    pub how: &'static str,
    /// sha256 of the bytes read, so a work-tree copy can be compared without reading the
    /// source again (for a committed file, that is another `git ls-remote`).
    pub sha256: String,
}

impl Ctx {
    pub fn new(repo_path: Option<PathBuf>, key: Option<PathBuf>, allowed_signers: Option<PathBuf>) -> Ctx {
        Ctx {
            // Whole seconds: plans carry RFC 3339 times without fractions.
            now: clock()
                .replace_nanosecond(0)
                .unwrap_or(OffsetDateTime::UNIX_EPOCH),
            repo_path,
            repo: OnceCell::new(),
            key_flag: key,
            allowed_signers_flag: allowed_signers,
            data_dir: directories::ProjectDirs::from("", "", "guardctl").map(|d| d.data_dir().to_path_buf()),
            policy: OnceCell::new(),
            remote_policy: OnceCell::new(),
            signers: OnceCell::new(),
            team_remote: OnceCell::new(),
            published: RefCell::new(Vec::new()),
            published_notes: RefCell::new(Vec::new()),
            published_noted: RefCell::new(Default::default()),
            published_alerts: RefCell::new(Vec::new()),
            records_ledger: std::cell::Cell::new(false),
        }
    }

    /// Where the user runs guardctl: `-C PATH`, else the current directory.
    pub fn start_dir(&self) -> Result<PathBuf> {
        let cwd = std::env::current_dir()
            .map_err(|e| crate::error::Error::internal("cannot read the current directory").caused_by(e))?;
        Ok(match &self.repo_path {
            Some(p) => cwd.join(p),
            None => cwd,
        })
    }

    /// The repository (`-C` or discovered from the working directory), opened on first use.
    pub fn repo(&self) -> Result<&Repo> {
        if let Some(r) = self.repo.get() {
            return Ok(r);
        }
        let repo = Repo::open(self.repo_path.as_deref())?;
        Ok(self.repo.get_or_init(|| repo))
    }

    /// The repository if there is one; `None` outside a repository.
    fn try_repo(&self) -> Option<&Repo> {
        self.repo().ok()
    }

    /// The signing key per docs/trust-model.md, and only if it can sign now without a prompt nobody can answer: no agent, a key not in the
    /// agent, or a passphrase needed where no one may be asked fail here, before any work.
    pub fn signing_key(&self, ui: &mut Ui) -> Result<SigningKey> {
        let key = self.signing_key_as_is()?;
        let ready = crate::sign::agent::readiness(&key, ui.may_prompt());
        match ready {
            crate::sign::agent::Readiness::Ready | crate::sign::agent::Readiness::WillPrompt => Ok(key),
            other => {
                let mut e = Error::usage(format!(
                    "signing key {} ({}) cannot sign: {}",
                    key.path.display(),
                    crate::sign::sshsig::fingerprint(&key.public),
                    other.describe()
                ))
                .with_hint(other.hint(&key));
                if let crate::sign::agent::Readiness::AgentUnreachable(why) = &other {
                    e = e.caused_by(crate::text::safe(why));
                }
                Err(e)
            }
        }
    }

    /// The signing key of a command that signs more than once, unlocked for the whole command
    /// before its first write: a passphrase-protected key that no agent holds is asked for
    /// once, here, and every signature goes through the command's own agent (`sign::unlock`).
    pub fn unlocked_signing_key(&self, ui: &mut Ui) -> Result<SigningKey> {
        let mut key = self.signing_key(ui)?;
        self.unlock(&mut key, ui)?;
        Ok(key)
    }

    /// Unlock `key` for the rest of the command (see [`Ctx::unlocked_signing_key`]): for a
    /// command whose checks come first, so that nobody types a passphrase for a refusal.
    pub fn unlock(&self, key: &mut SigningKey, ui: &mut Ui) -> Result<()> {
        if key.unlocked.is_none()
            && crate::sign::agent::readiness(key, ui.may_prompt())
                == crate::sign::agent::Readiness::WillPrompt
        {
            let dir = self.data_dir.clone().unwrap_or_else(std::env::temp_dir);
            key.unlocked = Some(std::sync::Arc::new(crate::sign::unlock::unlock(key, &dir)?));
        }
        Ok(())
    }

    /// The signing key per docs/trust-model.md, whether or not it can sign now (`whoami` says).
    pub fn signing_key_as_is(&self) -> Result<SigningKey> {
        self.resolve_key()?.map_err(|e| match e {
            crate::sign::key::KeyError::NotConfigured => no_key_configured(),
            e => Error::usage("no usable signing key")
                .caused_by(e)
                .with_hint("pass --key <path>, set GUARDCTL_KEY, or configure git's user.signingKey"),
        })
    }

    /// The key lookup's own answer (git's config read on the way may fail first).
    fn resolve_key(&self) -> Result<std::result::Result<SigningKey, crate::sign::key::KeyError>> {
        let env = std::env::var_os("GUARDCTL_KEY").map(PathBuf::from);
        // git's config is consulted only when it can matter: reading it means a process.
        // Outside a repository the user's own (system and global) config still says which
        // key they sign with: the same key inside and outside a repository.
        let choose = self.key_flag.is_none() && env.as_deref().is_none_or(|p| p.as_os_str().is_empty());
        let git_signing_key = match self.try_repo() {
            Some(repo) if choose && repo.config_string("gpg.format")?.as_deref() == Some("ssh") => {
                repo.config_string("user.signingKey")?
            }
            None if choose && crate::repo::admin_config("gpg.format")?.as_deref() == Some("ssh") => {
                crate::repo::admin_config("user.signingKey")?
            }
            _ => None,
        };
        Ok(crate::sign::key::resolve(KeyLookup {
            flag: self.key_flag.as_deref(),
            env,
            git_signing_key,
            data_dir: self.data_dir.clone(),
        }))
    }

    /// `whoami --generate`: make guardctl's per-user key, only when nothing names a key (a
    /// key named by `--key`, `GUARDCTL_KEY` or git's config would outrank it, unused). `true`
    /// when it was made now, `false` when it already existed.
    pub fn generate_key(&self) -> Result<bool> {
        match self.resolve_key()? {
            Ok(key) if key.source == crate::sign::key::KeySource::Default => Ok(false),
            Ok(key) => Err(Error::usage(format!(
                "a signing key is already configured: {} (from {})",
                key.path.display(),
                key.source.describe()
            ))
            .with_hint("--generate makes guardctl a key of its own only when no key is configured")),
            Err(crate::sign::key::KeyError::NotConfigured) => {
                crate::sign::key::generate_default(self.data_dir.as_deref())
                    .map_err(|e| Error::usage("cannot make a signing key").caused_by(e))
            }
            Err(_) => self.signing_key_as_is().map(|_| false),
        }
    }

    /// Locate the trusted identities (docs/trust-model.md), never from anything the planner can
    /// write: `--allowed-signers`, `GUARDCTL_ALLOWED_SIGNERS` (the caller's own choice), the
    /// file named by `gpg.ssh.allowedSignersFile` in system or global git config (read outside
    /// the repository, as the policy is), then `.guardctl/allowed_signers` as committed on the
    /// default branch (as the policy). Never the work tree, never the repository's own config.
    /// An explicitly named file that is missing is an error; no source at all is `None`.
    pub fn allowed_signers_source(&self) -> Result<Option<SignersSource>> {
        Ok(self.signers()?.1.clone())
    }

    /// `-C`, `--key` and `--allowed-signers` as given: a long-running `guardctl mcp` makes a
    /// `Ctx` of them per tool call, so each call reads the clock once, as a command does.
    pub fn flags(&self) -> (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>) {
        (
            self.repo_path.clone(),
            self.key_flag.clone(),
            self.allowed_signers_flag.clone(),
        )
    }

    /// The parsed allowed-signers file, or an empty one when none is configured. Read once
    /// per run.
    pub fn allowed_signers(&self) -> Result<(AllowedSigners, Option<SignersSource>)> {
        let (signers, source) = self.signers()?;
        Ok((signers.clone(), source.clone()))
    }

    fn signers(&self) -> Result<&(AllowedSigners, Option<SignersSource>)> {
        if let Some(s) = self.signers.get() {
            return Ok(s);
        }
        let loaded = match self.find_signers()? {
            None => (AllowedSigners::default(), None),
            Some((location, how, bytes)) => {
                let src = SignersSource {
                    location,
                    how,
                    sha256: crate::plan::envelope::sha256_id(&bytes),
                };
                let text = String::from_utf8(bytes)
                    .map_err(|_| Error::usage(format!("{} is not UTF-8", src.location)))?;
                let signers = AllowedSigners::parse(&text).map_err(|e| {
                    Error::usage(format!("invalid allowed-signers file {}", src.location))
                        .caused_by(e)
                        .with_hint(format!("fix the file named by {}", src.how))
                })?;
                (signers, Some(src))
            }
        };
        Ok(self.signers.get_or_init(|| loaded))
    }

    /// Where the trusted identities are (location, how it was found) and their bytes.
    fn find_signers(&self) -> Result<Option<(String, &'static str, Vec<u8>)>> {
        let from_file =
            |path: PathBuf, how: &'static str| -> Result<Option<(String, &'static str, Vec<u8>)>> {
                let bytes = crate::fsutil::read_bounded(&path, SIGNERS_MAX_BYTES as u64).map_err(|e| {
                    Error::usage(format!("cannot read the allowed-signers file named by {how}")).caused_by(e)
                })?;
                Ok(Some((path.display().to_string(), how, bytes)))
            };
        // Trust roots an administrator named in the system git config (root-owned) are not
        // widened by whoever runs guardctl: a flag or variable naming another file (an
        // agent's own, listing a key it holds as an approver) is refused, not obeyed.
        if let Some(repo) = self.try_repo()
            && let Some(p) = repo.system_config("gpg.ssh.allowedSignersFile")?
        {
            let system = expand_home(&p);
            let given = self
                .allowed_signers_flag
                .clone()
                .map(|f| (f, "--allowed-signers"))
                .or_else(|| {
                    std::env::var_os("GUARDCTL_ALLOWED_SIGNERS")
                        .filter(|v| !v.is_empty())
                        .map(|v| (PathBuf::from(v), "GUARDCTL_ALLOWED_SIGNERS"))
                });
            if let Some((f, how)) = given {
                let same = matches!(
                    (std::fs::canonicalize(&f), std::fs::canonicalize(&system)),
                    (Ok(a), Ok(b)) if a == b
                );
                if !same {
                    return Err(Error::usage(format!(
                        "{how} names {}, but the system git config names the trusted identities ({}): \
                         they are not replaced by a flag or variable",
                        crate::text::safe(&f.display().to_string()),
                        crate::text::safe(&system.display().to_string())
                    ))
                    .with_hint(format!("drop {how}; an administrator changes the system config")));
                }
            }
            return from_file(system, "system git config gpg.ssh.allowedSignersFile");
        }
        if let Some(p) = &self.allowed_signers_flag {
            return from_file(p.clone(), "--allowed-signers");
        }
        if let Some(p) = std::env::var_os("GUARDCTL_ALLOWED_SIGNERS").filter(|p| !p.is_empty()) {
            return from_file(p.into(), "GUARDCTL_ALLOWED_SIGNERS");
        }
        let Some(repo) = self.try_repo() else {
            // Outside a repository (a reviewer approving a downloaded plan file): the user's
            // own system or global config, as inside one.
            return match crate::repo::admin_config("gpg.ssh.allowedSignersFile")? {
                Some(p) => from_file(
                    expand_home(&p),
                    "system or global git config gpg.ssh.allowedSignersFile",
                ),
                None => Ok(None),
            };
        };
        if let Some(p) = repo.admin_config("gpg.ssh.allowedSignersFile")? {
            return from_file(
                expand_home(&p),
                "system or global git config gpg.ssh.allowedSignersFile",
            );
        }
        self.committed_signers(repo)
    }

    /// The team's identities, `.guardctl/allowed_signers` as committed on the default branch:
    /// as the policy, on the shared remote's default branch as the remote reports it, never a
    /// ref or setting of this clone that the planner can move.
    fn committed_signers(&self, repo: &Repo) -> Result<Option<(String, &'static str, Vec<u8>)>> {
        if let Some(name) = policy_remote(repo)? {
            return Ok(
                committed_on_remote(repo, &name, SIGNERS_PATH, SIGNERS_MAX_BYTES, Kind::Usage)?
                    .map(|(location, bytes)| (location, COMMITTED, bytes)),
            );
        }
        // A repository with no remote: its own default branch, which whoever can commit to it
        // controls (the source says so).
        if let Ok((base, oid)) = repo.resolve_base(None)
            && let Some(bytes) = repo.committed_file(oid, SIGNERS_PATH, SIGNERS_MAX_BYTES)?
        {
            return Ok(Some((format!("{base}:{SIGNERS_PATH}"), COMMITTED_LOCAL, bytes)));
        }
        Ok(None)
    }

    /// The committed team file (location, sha256) when a higher-ranked source (a flag, the
    /// environment, global git config) is in force instead and says something else: the team
    /// file is then not read at all, which nobody should learn from a refused approval.
    pub fn shadowed_team_file(&self) -> Option<(String, String)> {
        let (_, source) = self.signers().ok()?;
        let source = source.as_ref()?;
        if source.how == COMMITTED || source.how == COMMITTED_LOCAL {
            return None;
        }
        let (location, _, bytes) = self.committed_signers(self.try_repo()?).ok()??;
        let sha = crate::plan::envelope::sha256_id(&bytes);
        (sha != source.sha256).then_some((location, sha))
    }

    /// Whether the repository has a committed team file (whoami's advice names it).
    pub fn has_team_file(&self) -> bool {
        self.try_repo()
            .and_then(|repo| self.committed_signers(repo).ok().flatten())
            .is_some()
    }

    /// The principal `key` speaks for in `namespace` now, required by commands that record a
    /// signed audit entry (rollback, recover, gc): an entry no trusted identity vouches for
    /// would make the log fail `guardctl log --verify`.
    pub fn require_principal(&self, key: &SigningKey, namespace: &str, what: &str) -> Result<String> {
        let (signers, _) = self.signers()?;
        // The principal the entry names (the first, when a key speaks for several).
        let Some(principal) = signers
            .principals_at(key.signer(), namespace, &[self.now])
            .into_iter()
            .next()
        else {
            return Err(Error::new(
                Kind::WrongPrincipal,
                format!(
                    "{what} records a signed audit entry, and key {} speaks for no principal in {namespace}",
                    crate::sign::sshsig::fingerprint(&key.public)
                ),
            )
            .with_hint("use a key the trusted identities list (see `guardctl whoami`)"));
        };
        Ok(principal)
    }

    /// Say where trusted identities come from (`announce`), and warn about what is not used:
    /// ignored lines of the file, and untrusted places that hold an allowed-signers file (the
    /// work tree, the repository's own config) which guardctl never reads.
    pub fn report_signers(&self, ui: &mut Ui, announce: bool) -> Result<()> {
        let (signers, source) = self.signers()?;
        if announce {
            ui.status(&match source {
                // The caller named the file: its path is theirs to know.
                Some(s) if s.how.starts_with("--") || s.how.starts_with("GUARDCTL") => {
                    format!("Trusted identities from {}.", s.how)
                }
                Some(s) => format!(
                    "Trusted identities from {} ({}).",
                    crate::text::safe(&s.location),
                    s.how
                ),
                None => "Trusted identities: none configured; no key speaks for any principal.".to_string(),
            });
        }
        for i in &signers.ignored {
            ui.warn(&format!("allowed-signers line {} ignored: {}", i.line, i.message));
        }
        let Some(repo) = self.try_repo() else {
            return Ok(());
        };
        let from_config = source.as_ref().is_some_and(|s| s.how.contains("git config"));
        if !from_config
            && self.allowed_signers_flag.is_none()
            && let Some(p) = repo.config_string("gpg.ssh.allowedSignersFile")?
            && repo.admin_config("gpg.ssh.allowedSignersFile")?.is_none()
        {
            ui.warn(&format!(
                "gpg.ssh.allowedSignersFile ({}) is set in the repository's own config, which anyone who can write the repository can change: guardctl ignores it",
                crate::text::safe(&p)
            ));
        }
        let shadowed = self.shadowed_team_file();
        if let (Some((team, _)), Some(s)) = (&shadowed, source) {
            ui.warn(&format!(
                "the trusted identities are {} (from {}), which shadows the team's committed {}: approvals are judged by the first file only; add your line to the team file and remove the other source, or keep the two the same",
                crate::text::safe(&s.location),
                s.how,
                crate::text::safe(team),
            ));
        }
        // Read as any file anyone may have put there: not through a link, a regular file of
        // bounded size (a FIFO, or a link to /dev/zero, would hang every command here).
        let in_tree =
            crate::fsutil::read_bounded(&repo.display_path().join(SIGNERS_PATH), SIGNERS_MAX_BYTES as u64);
        if let Err(
            crate::fsutil::ReadError::Symlink(_)
            | crate::fsutil::ReadError::NotFile(_)
            | crate::fsutil::ReadError::TooLarge { .. },
        ) = &in_tree
        {
            ui.warn(&format!(
                "{SIGNERS_PATH} in the work tree is not a regular file of at most {SIGNERS_MAX_BYTES} bytes and is ignored: only what is committed on the default branch counts, when no other source is set"
            ));
        }
        if let Ok(in_tree) = in_tree {
            // The work-tree copy is worth a word only when it says something the trusted
            // identities do not: a copy of the committed (or the shadowing) file is expected.
            let sha = crate::plan::envelope::sha256_id(&in_tree);
            let known = source.as_ref().is_some_and(|s| s.sha256 == sha)
                || shadowed.as_ref().is_some_and(|(_, team)| *team == sha);
            if !known {
                ui.warn(&format!(
                    "{SIGNERS_PATH} in the work tree differs from the trusted identities and is ignored: only what is committed on the default branch counts (commit and push it), when no other source is set"
                ));
            }
        }
        Ok(())
    }
}

impl Ctx {
    /// The policy in force for a local plan (see [`load_policy`]), read once per run.
    pub fn policy(&self) -> Result<&InForce> {
        if let Some(p) = self.policy.get() {
            return Ok(p);
        }
        let p = load_policy(self.repo()?, None)?;
        Ok(self.policy.get_or_init(|| p))
    }

    /// The sandbox previews of a plan bound to `remote` run in: that policy's `[sandbox]`
    /// settings and this repository's directories, hiding this run's signing key (`--key`,
    /// git's `user.signingKey`) should one of those directories hold it.
    pub fn preview_sandbox(&self, remote: Option<&str>) -> Result<crate::sandbox::Sandbox> {
        let repo = self.repo()?;
        let git_key = repo
            .config_string("user.signingKey")
            .ok()
            .flatten()
            .filter(|k| !k.starts_with("key::"))
            .map(|k| expand_home(&k));
        Ok(
            crate::sandbox::Sandbox::new(&self.policy_for(remote)?.policy.sandbox, repo.preview_readable())
                .hiding(self.key_flag.iter().cloned().chain(git_key)),
        )
    }

    /// The policy in force for a plan bound to `remote` (its remote's, read from that remote
    /// now); for `None`, [`Ctx::policy`]. One run judges one plan, so one remote's is kept.
    pub fn policy_for(&self, remote: Option<&str>) -> Result<&InForce> {
        let repo = self.repo()?;
        let Some(remote) = remote.filter(|r| policy_remote(repo).ok().flatten().as_deref() != Some(*r))
        else {
            return self.policy();
        };
        if let Some((name, p)) = self.remote_policy.get() {
            return match name == remote {
                true => Ok(p),
                false => Err(Error::internal("one run reads the policy of one remote")),
            };
        }
        let p = load_policy(repo, Some(remote))?;
        Ok(&self.remote_policy.get_or_init(|| (remote.to_string(), p)).1)
    }
}

/// Where plans, approvals and rejections are published (docs/remote.md): the team remote,
/// the same one whose default branch holds the policy (`guardctl.remote` in system or global
/// config, else `origin`).
impl Ctx {
    /// The team remote as read from: `None` outside a repository or without a remote. Its
    /// fetch URL; a repository-config `insteadOf` rewriting it is refused (`policy`, 14), as
    /// for the policy: whoever can write this clone could hide published rejections.
    pub fn team_remote(&self) -> Result<Option<&Remote>> {
        if let Some(r) = self.team_remote.get() {
            return Ok(r.as_ref());
        }
        let found = match self.try_repo() {
            None => None,
            Some(repo) => match policy_remote(repo)? {
                None => None,
                Some(name) => Some(resolve_remote(repo, &name, false)?),
            },
        };
        Ok(self.team_remote.get_or_init(|| found).as_ref())
    }

    /// The remote to publish to: `name`, else the team remote's name. Its one URL (a push
    /// URL that differs from the fetch URL is refused: guardctl would publish where it does
    /// not read).
    pub fn publish_remote(&self, name: Option<&str>) -> Result<Remote> {
        let repo = self.repo()?;
        let name = match name {
            Some(n) => n.to_string(),
            None => policy_remote(repo)?.ok_or_else(|| {
                Error::usage("there is no remote to publish to: no `origin`, and no `guardctl.remote` in system or global git config")
                    .with_hint("name one (`--publish=REMOTE`), or pass plan and approval files instead (`--out FILE`)")
            })?,
        };
        resolve_remote(repo, &name, true)
    }

    /// Whether `--publish` is the default: `guardctl.remote` is set in system or global config.
    pub fn publish_by_default(&self) -> Result<bool> {
        Ok(match self.try_repo() {
            Some(repo) => repo.admin_config("guardctl.remote")?.is_some(),
            None => false,
        })
    }

    /// What the team remote has published about plan `id_hex`. `None` without a team
    /// remote. A remote that cannot be read is an error: it may hold a veto.
    ///
    /// Every read of a run is served by one snapshot of everything published (see
    /// [`Ctx::snapshot`]), so a run talks to the remote once for all of them.
    pub fn published(&self, id_hex: &str) -> Result<Option<Rc<Snapshot>>> {
        self.snapshot(Scope::Plan(id_hex.to_string()))
    }

    /// Everything the team remote has published (`inbox`).
    pub fn published_all(&self) -> Result<Option<Rc<Snapshot>>> {
        self.snapshot(Scope::All)
    }

    /// The run's snapshot of the team remote if one was fetched already (never fetches).
    pub fn fetched_published(&self) -> Option<Rc<Snapshot>> {
        self.published.borrow().first().cloned()
    }

    /// Every plan the team remote has published, with its consumed marker (the bulk class
    /// across plans).
    pub fn published_plans(&self) -> Result<Option<Rc<Snapshot>>> {
        self.snapshot(Scope::Plans)
    }

    /// The run's one snapshot of the team remote, fetched on first use. It is of everything
    /// (`Scope::All`) whatever `scope` asks: the ledger is fetched whole by every scope, so
    /// a narrower one saves only the refs published before the ledger, and a run that reads
    /// one plan, then the plans for the bulk class, then resolves an id, would otherwise list
    /// and fetch three times (each an SSH connection: 7 for `show <id>`).
    fn snapshot(&self, scope: Scope) -> Result<Option<Rc<Snapshot>>> {
        if let Some(s) = self.published.borrow().iter().find(|s| s.scope.includes(&scope)) {
            return Ok(Some(s.clone()));
        }
        let Some(remote) = self.team_remote()? else {
            return Ok(None);
        };
        // The run's one listing of the remote serves the snapshot too (`Repo::listing`).
        let listed = match self.try_repo() {
            Some(repo) => {
                let listing = repo
                    .listing(&remote.url)
                    .map_err(|e| crate::store::published::cannot_read(remote, e))?;
                Some(crate::store::published::listed_guardctl(&listing))
            }
            None => None,
        };
        let s = Rc::new(Snapshot::fetch_listed(remote, Scope::All, listed)?);
        self.check_ledger(&s)?;
        self.published.borrow_mut().push(s.clone());
        Ok(Some(s))
    }

    /// Keep, in this clone's state, the ledger tip each read sees (see `records_ledger`).
    pub fn record_ledger_tips(&self) {
        self.records_ledger.set(true);
    }

    /// Refuse (16) a ledger that no longer holds the tip this clone saw last; record the tip
    /// seen now when this run records them. Warnings about the ledger's shape are kept for
    /// [`Ctx::report_published`].
    fn check_ledger(&self, s: &Snapshot) -> Result<()> {
        self.note_published(s.ledger_warnings().iter().cloned());
        let Some(repo) = self.try_repo() else {
            return Ok(());
        };
        let state = repo.state_dir();
        let seen = crate::store::ledger::seen(&state, &s.remote.url);
        if let Some(seen) = seen {
            s.check_seen(seen, &state)?;
        }
        if let Some(tip) = s
            .ledger_tip()
            .filter(|t| self.records_ledger.get() && Some(*t) != seen)
        {
            crate::store::ledger::record_seen(&state, &s.remote.url, tip)?;
        }
        Ok(())
    }

    /// Keep a warning about a published item left out, for [`Ctx::report_published`].
    pub fn note_published(&self, warnings: impl IntoIterator<Item = String>) {
        let mut notes = self.published_notes.borrow_mut();
        let mut noted = self.published_noted.borrow_mut();
        for w in warnings {
            if noted.insert(w.clone()) {
                notes.push(w);
            }
        }
    }

    /// Keep a warning that a whole part of what the team remote publishes was left out (the
    /// published decisions, the plans for the bulk class), for [`Ctx::report_published`],
    /// which prints every one of them first.
    pub fn alert_published(&self, warning: String) {
        let mut alerts = self.published_alerts.borrow_mut();
        if !alerts.contains(&warning) {
            alerts.push(warning);
        }
    }

    /// Print (once) the warnings about published items that were left out: every alert
    /// ([`Ctx::alert_published`]) first, then the first [`MAX_PUBLISHED_NOTES`] notes and
    /// how many more (junk anyone can push must not bury the rest of the output under
    /// thousands of lines, nor push an alert out of what is printed).
    pub fn report_published(&self, ui: &mut Ui) {
        for a in self.published_alerts.borrow_mut().drain(..) {
            ui.warn(&a);
        }
        let notes: Vec<String> = self.published_notes.borrow_mut().drain(..).collect();
        for n in notes.iter().take(MAX_PUBLISHED_NOTES) {
            ui.warn(n);
        }
        if notes.len() > MAX_PUBLISHED_NOTES {
            ui.warn(&format!(
                "and {} more items published on the team remote were left out (junk, or items this version cannot read)",
                notes.len() - MAX_PUBLISHED_NOTES
            ));
        }
    }
}

/// How many warnings about published items [`Ctx::report_published`] prints one by one.
pub const MAX_PUBLISHED_NOTES: usize = 20;

/// A remote by name, with its URL and the settings git would reach it with from this clone.
fn resolve_remote(repo: &Repo, name: &str, push: bool) -> Result<Remote> {
    let url = if push {
        repo.remote_url(name)?
    } else {
        repo.remote_fetch_url(name)?
    };
    refuse_local_rewrite(repo, name, "published plans and decisions", Kind::Policy)?;
    crate::repo::publish::check_url(&url)?;
    Ok(Remote {
        name: name.to_string(),
        url,
        transport: repo.transport_settings()?,
    })
}

/// Refused when the repository's own config rewrites the URL of remote `name`
/// (`url.*.insteadOf`): whoever can write this clone could point it at a repository of their
/// own.
fn refuse_local_rewrite(repo: &Repo, name: &str, what: &str, kind: Kind) -> Result<()> {
    let raw = repo
        .config_string(&format!("remote.{name}.url"))?
        .unwrap_or_default();
    if let Some(prefix) = repo
        .local_url_rewrites()?
        .into_iter()
        .find(|p| !p.is_empty() && raw.starts_with(p.as_str()))
    {
        return Err(Error::new(
            kind,
            format!(
                "the repository's own config rewrites the URL of remote `{}` (url.*.insteadOf {}): guardctl reads {what} only from the remote itself",
                safe(name),
                safe(&prefix)
            ),
        )
        .with_hint("move the insteadOf rule to your global git config, or remove it"));
    }
    Ok(())
}

/// The remote whose default branch holds the policy of local plans: the one named by
/// `guardctl.remote`, else `origin` if there is one; `None` for a local-only repository.
pub fn policy_remote(repo: &Repo) -> Result<Option<String>> {
    // An administrator's choice (system or global config), never the repository's own config,
    // which the planner can point at a remote of their own.
    if let Some(name) = repo.admin_config("guardctl.remote")? {
        return Ok(Some(name));
    }
    Ok(repo.remote_names()?.into_iter().find(|n| n == "origin"))
}

/// A trust root committed on the shared default branch: `path` as committed on the default
/// branch of remote `name` **as the remote reports it now** (`git ls-remote`, then this
/// clone's objects at that id). Returns where it was read (`<url> <branch>:<path>`) and its
/// bytes; `None` when the remote has no HEAD or the file is not committed there. Refused when
/// the repository's own config rewrites the remote's URL (`insteadOf`: whoever can write
/// this clone could point it at a repository of their own), or when the commit is not fetched.
pub fn committed_on_remote(
    repo: &Repo,
    name: &str,
    path: &str,
    max: usize,
    kind: Kind,
) -> Result<Option<(String, Vec<u8>)>> {
    let url = repo.remote_fetch_url(name)?;
    refuse_local_rewrite(repo, name, path, kind)?;
    let Some((head, oid)) = repo.ls_remote_head(&url)? else {
        return Ok(None);
    };
    if !repo.has_object(oid) {
        return Err(Error::new(
            kind,
            format!(
                "{path} in force is on {} of remote `{}` at {oid}, which this clone has not fetched",
                safe(&head),
                safe(name)
            ),
        )
        .with_hint(format!("run `git fetch {}`, then run guardctl again", safe(name))));
    }
    Ok(repo
        .committed_file(oid, path, max)?
        .map(|bytes| (format!("{url} {head}:{path}"), bytes)))
}

/// Where the policy comes from, never the planner's uncommitted work tree nor a ref the
/// planner's clone records:
///
/// 1. the file named by `guardctl.policy` in the **system** git config, the file git was
///    built to read (`GIT_CONFIG_SYSTEM` and `GIT_CONFIG_NOSYSTEM` are ignored for it): only
///    an administrator writes it. Global config and the environment are whoever runs
///    guardctl, who may be the planner applying their own plan.
/// 2. for a plan bound to a remote (`remote`), or a local plan in a repository with the
///    policy remote ([`policy_remote`]): `.guardctl/policy.toml` as committed on that
///    remote's default branch **as the remote reports it now** (`git ls-remote`, then this
///    clone's objects at that id: refused with a fetch hint when they are missing);
/// 3. in a local-only repository, `.guardctl/policy.toml` committed on the local default
///    branch: a local policy, which the planner controls (`show` says so);
/// 4. else the built-in default.
fn load_policy(repo: &Repo, remote: Option<&str>) -> Result<InForce> {
    if let Some(p) = repo.system_config("guardctl.policy")? {
        let path = expand_home(&p);
        let bytes = crate::fsutil::read_bounded(&path, POLICY_MAX_BYTES as u64).map_err(|e| {
            Error::new(
                Kind::Policy,
                format!(
                    "cannot read the policy file {} named by git config guardctl.policy",
                    path.display()
                ),
            )
            .caused_by(e)
        })?;
        return parse_policy(bytes, PolicySourceKind::GitConfig, path.display().to_string());
    }
    let remote = match remote {
        Some(r) => Some(r.to_string()),
        None => policy_remote(repo)?,
    };
    if let Some(name) = remote {
        // Read only: the push URL does not matter here (a remote's own plan is refused
        // elsewhere when it differs).
        return match committed_on_remote(repo, &name, POLICY_PATH, POLICY_MAX_BYTES, Kind::Policy)? {
            Some((location, bytes)) => parse_policy(bytes, PolicySourceKind::Committed, location),
            None => built_in(),
        };
    }
    if let Ok((base, oid)) = repo.resolve_base(None)
        && let Some(bytes) = repo.committed_file(oid, POLICY_PATH, POLICY_MAX_BYTES)?
    {
        return parse_policy(bytes, PolicySourceKind::Local, format!("{base}:{POLICY_PATH}"));
    }
    built_in()
}

fn built_in() -> Result<InForce> {
    let policy = Policy::default();
    Ok(InForce {
        hash: hash_of(&policy)?,
        policy,
        source: PolicySource {
            kind: PolicySourceKind::BuiltIn,
            location: None,
        },
    })
}

fn hash_of(policy: &Policy) -> Result<String> {
    policy
        .hash()
        .map_err(|e| Error::internal("cannot hash the policy").caused_by(e))
}

fn parse_policy(bytes: Vec<u8>, kind: PolicySourceKind, location: String) -> Result<InForce> {
    let parsed = String::from_utf8(bytes)
        .map_err(|_| PolicyError {
            line: None,
            message: "the file is not UTF-8".into(),
        })
        .and_then(|text| crate::policy::file::parse(&text));
    match parsed {
        Ok(policy) => Ok(InForce {
            hash: hash_of(&policy)?,
            policy,
            source: PolicySource {
                kind,
                location: Some(location),
            },
        }),
        Err(e) => Err(Error::new(Kind::Policy, format!("invalid policy {location}"))
            .caused_by(e)
            .with_hint(
                "fix the policy file (see docs/policy.md); nothing can be planned or applied until then",
            )),
    }
}

/// Where a repository keeps its policy (committed, read from the default branch).
pub const POLICY_PATH: &str = ".guardctl/policy.toml";
const POLICY_MAX_BYTES: usize = 1024 * 1024;

/// The default place for the plans an agent makes (the MCP server, the shell hook):
/// guardctl's data directory, outside any repository (`~/.local/share/guardctl/plans` on
/// Linux).
pub fn default_plans_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "guardctl").map(|d| d.data_dir().join("plans"))
}

pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// How the committed identities are described (`SignersSource::how`).
const COMMITTED: &str = "the default branch";
/// A local-only repository's committed identities: whoever can commit there controls them.
const COMMITTED_LOCAL: &str = "the local default branch (local: the planner controls it)";

/// Where a repository keeps its trusted identities (committed, read from the default branch).
pub const SIGNERS_PATH: &str = ".guardctl/allowed_signers";
const SIGNERS_MAX_BYTES: usize = 16 * 1024 * 1024;

impl Ctx {
    /// The clock read again when a plan is written: its lifetime starts then, not when
    /// observing started (a squash detection over thousands of branches takes a while).
    /// Never before `now`; whole seconds.
    pub fn written_at(&self) -> OffsetDateTime {
        (clock() + observing_took())
            .replace_nanosecond(0)
            .unwrap_or(self.now)
            .max(self.now)
    }
}

/// Test hook: pretend observing took `GUARDCTL_TEST_OBSERVING_SECS` seconds.
#[cfg(feature = "test-hooks")]
fn observing_took() -> time::Duration {
    std::env::var("GUARDCTL_TEST_OBSERVING_SECS")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .map_or(time::Duration::ZERO, time::Duration::seconds)
}

#[cfg(not(feature = "test-hooks"))]
fn observing_took() -> time::Duration {
    time::Duration::ZERO
}

#[cfg(feature = "test-hooks")]
fn clock() -> OffsetDateTime {
    use time::format_description::well_known::Rfc3339;
    std::env::var("GUARDCTL_TEST_NOW")
        .ok()
        .and_then(|s| OffsetDateTime::parse(&s, &Rfc3339).ok())
        .unwrap_or_else(OffsetDateTime::now_utc)
}

#[cfg(not(feature = "test-hooks"))]
fn clock() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// Whether this build honours test hooks (the CLI tests check it before relying on them).
pub fn test_hooks_enabled() -> bool {
    cfg!(feature = "test-hooks")
}

/// No key anywhere: the keys ssh-agent holds and the exact `git config` lines that sign with
/// one (git's own SSH signing set-up, which guardctl then shares), else how to make one.
fn no_key_configured() -> Error {
    let agent = crate::sign::agent::listed_keys();
    let mut hint = String::new();
    if agent.is_empty() {
        hint.push_str(
            "ssh-agent holds no key. Sign with a key you have (git's own SSH signing set-up):\n  \
             git config --global gpg.format ssh\n  \
             git config --global user.signingKey ~/.ssh/id_ed25519.pub\n\
             or make guardctl a key of its own: guardctl whoami --generate",
        );
    } else {
        hint.push_str(&format!(
            "ssh-agent holds {} {}; to sign with one, as git signs commits:\n  git config --global gpg.format ssh",
            agent.len(),
            crate::plan::derive::plural(agent.len() as u64, "key", "keys")
        ));
        for line in &agent {
            let mut parts = line.split_whitespace();
            let (kind, blob) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            let comment: Vec<&str> = parts.collect();
            let comment = if comment.is_empty() {
                String::new()
            } else {
                format!("   # {}", crate::text::safe(&comment.join(" ")))
            };
            hint.push_str(&format!(
                "\n  git config --global user.signingKey 'key::{kind} {blob}'{comment}"
            ));
        }
        hint.push_str("\nor pass --key <path> / set GUARDCTL_KEY; `guardctl whoami --generate` makes a key of guardctl's own");
    }
    Error::usage("no signing key is configured: guardctl never makes one unasked")
        .with_hint(hint)
        .with_details(serde_json::json!({ "agent_keys": agent }))
}
