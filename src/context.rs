//! `Ctx`: what every command needs from the outside world, gathered once per run.
//!
//! It owns the one `now` of the run (logic never reads the clock itself), opens the
//! repository lazily (so `show` and `whoami` work outside one), and performs the contract's
//! lookups for the signing key and the allowed-signers file (CONTRACT.md §5).
//!
//! Test hooks (a clock override) exist only with the `test-hooks` cargo feature, which release
//! builds never enable: a shipped binary honouring a clock override would revive expired plans.

use crate::error::{Error, Kind, Result};
use crate::plan::model::{PolicySource, PolicySourceKind};
use crate::policy::file::PolicyError;
use crate::policy::{InForce, Policy};
use crate::repo::Repo;
use crate::sign::key::{KeyLookup, KeySource};
use crate::sign::{AllowedSigners, SigningKey};
use crate::ui::Ui;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use time::OffsetDateTime;

pub struct Ctx {
    pub now: OffsetDateTime,
    repo_path: Option<PathBuf>,
    repo: OnceCell<Repo>,
    key_flag: Option<PathBuf>,
    allowed_signers_flag: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    policy: OnceCell<InForce>,
}

/// Where the allowed-signers file came from.
#[derive(Debug, Clone)]
pub struct SignersSource {
    pub path: PathBuf,
    pub how: &'static str,
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

    /// The signing key per CONTRACT.md §5, announcing a freshly generated default key.
    pub fn signing_key(&self, ui: &mut Ui) -> Result<SigningKey> {
        let env = std::env::var_os("GUARDCTL_KEY").map(PathBuf::from);
        // git's config is consulted only when it can matter: reading it means a process.
        let git_signing_key = match self.try_repo() {
            Some(repo)
                if self.key_flag.is_none()
                    && env.as_deref().is_none_or(|p| p.as_os_str().is_empty())
                    && repo.config_string("gpg.format")?.as_deref() == Some("ssh") =>
            {
                repo.config_string("user.signingKey")?
            }
            _ => None,
        };
        let key = crate::sign::key::resolve(KeyLookup {
            flag: self.key_flag.as_deref(),
            env,
            git_signing_key,
            data_dir: self.data_dir.clone(),
        })
        .map_err(|e| {
            Error::usage("no usable signing key")
                .caused_by(e)
                .with_hint("pass --key <path>, set GUARDCTL_KEY, or configure git's user.signingKey")
        })?;
        if key.source == (KeySource::Default { generated: true }) {
            ui.notice(&format!(
                "generated a signing key for you at {} ({}); add it to your allowed-signers file to give it a principal",
                key.path.display(),
                crate::sign::sshsig::fingerprint(&key.public)
            ));
        }
        Ok(key)
    }

    /// Locate the allowed-signers file: `--allowed-signers`, `GUARDCTL_ALLOWED_SIGNERS`, git
    /// config `gpg.ssh.allowedSignersFile`, `.guardctl/allowed_signers` in the work tree.
    /// An explicitly named file that is missing is an error; no file at all is `None`.
    pub fn allowed_signers_source(&self) -> Result<Option<SignersSource>> {
        if let Some(p) = &self.allowed_signers_flag {
            return Ok(Some(SignersSource {
                path: p.clone(),
                how: "--allowed-signers",
            }));
        }
        if let Some(p) = std::env::var_os("GUARDCTL_ALLOWED_SIGNERS").filter(|p| !p.is_empty()) {
            return Ok(Some(SignersSource {
                path: p.into(),
                how: "GUARDCTL_ALLOWED_SIGNERS",
            }));
        }
        let Some(repo) = self.try_repo() else {
            return Ok(None);
        };
        if let Some(p) = repo.config_string("gpg.ssh.allowedSignersFile")? {
            return Ok(Some(SignersSource {
                path: expand_home(&p),
                how: "git config gpg.ssh.allowedSignersFile",
            }));
        }
        let in_tree = repo.display_path().join(".guardctl/allowed_signers");
        Ok(in_tree.is_file().then_some(SignersSource {
            path: in_tree,
            how: ".guardctl/allowed_signers",
        }))
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

    /// The parsed allowed-signers file, or an empty one when none is configured.
    pub fn allowed_signers(&self) -> Result<(AllowedSigners, Option<SignersSource>)> {
        let Some(src) = self.allowed_signers_source()? else {
            return Ok((AllowedSigners::default(), None));
        };
        let signers =
            load_signers(&src.path).map_err(|e| e.with_hint(format!("fix the file named by {}", src.how)))?;
        Ok((signers, Some(src)))
    }
}

impl Ctx {
    /// The policy in force (see [`load_policy`]), read once per run.
    pub fn policy(&self) -> Result<&InForce> {
        if let Some(p) = self.policy.get() {
            return Ok(p);
        }
        let p = load_policy(self.repo()?)?;
        Ok(self.policy.get_or_init(|| p))
    }
}

/// Where the policy comes from, never the planner's uncommitted work tree: the file named by
/// `guardctl.policy` in system or global git config (set by an administrator), else
/// `.guardctl/policy.toml` as committed on the default branch (what `plan` uses as base when
/// `--base` is not given, so a planner cannot pick a branch with a weaker policy), else the
/// built-in default.
fn load_policy(repo: &Repo) -> Result<InForce> {
    if let Some(p) = repo.admin_config("guardctl.policy")? {
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
    if let Ok((base, oid)) = repo.resolve_base(None)
        && let Some(bytes) = repo.committed_file(oid, POLICY_PATH, POLICY_MAX_BYTES)?
    {
        return parse_policy(
            bytes,
            PolicySourceKind::Committed,
            format!("{base}:{POLICY_PATH}"),
        );
    }
    let policy = Policy::default();
    Ok(InForce {
        hash: policy.hash(),
        policy,
        source: PolicySource {
            kind: PolicySourceKind::BuiltIn,
            location: None,
        },
    })
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
            hash: policy.hash(),
            policy,
            source: PolicySource {
                kind,
                location: Some(location),
            },
        }),
        Err(e) => Err(Error::new(Kind::Policy, format!("invalid policy {location}"))
            .caused_by(e)
            .with_hint(
                "fix the policy file (see the README's Policy section); nothing can be planned or applied until then",
            )),
    }
}

/// Where a repository keeps its policy (committed, read from the default branch).
pub const POLICY_PATH: &str = ".guardctl/policy.toml";
const POLICY_MAX_BYTES: usize = 1024 * 1024;

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

fn load_signers(path: &Path) -> Result<AllowedSigners> {
    let bytes = crate::fsutil::read_bounded(path, 16 * 1024 * 1024)
        .map_err(|e| Error::usage("cannot read the allowed-signers file").caused_by(e))?;
    let text =
        String::from_utf8(bytes).map_err(|_| Error::usage(format!("{} is not UTF-8", path.display())))?;
    AllowedSigners::parse(&text)
        .map_err(|e| Error::usage(format!("invalid allowed-signers file {}", path.display())).caused_by(e))
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
