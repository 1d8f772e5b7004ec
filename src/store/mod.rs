//! guardctl's own state in `<common git dir>/guardctl/`: the repository lock, per-plan state
//! (before-image manifest, journal, consumed marker, receipt) and the audit log.
//!
//! Invariants: every write is atomic (temp + rename + fsync) or an fsynced append; the lock is
//! a real `flock` on `guardctl/lock`, held for the whole of an apply or rollback; nothing here
//! touches refs or config (that is `repo::mutate`'s job alone: the audit log's anchor ref is
//! moved through it). Recorded rejections live in [`decisions`].

pub mod audit;
pub mod consumption;
pub mod decisions;
pub mod ledger;
pub mod published;
pub mod recovered;
pub mod seen;
pub mod state;

use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::repo::mutate::RepoMut;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest state file guardctl reads back: a before-image or receipt of a 50,000-branch
/// plan is tens of megabytes.
pub const MAX_STATE_BYTES: u64 = 512 << 20;

pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: PathBuf) -> Store {
        Store { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Take the repository's guardctl lock, waiting for another guardctl to finish. The lock
    /// is the mutating handle: it is held while the returned `RepoMut` lives.
    pub fn lock<'r>(&self, repo: &'r Repo) -> Result<RepoMut<'r>> {
        std::fs::create_dir_all(&self.dir).map_err(Error::io("create", &self.dir))?;
        RepoMut::lock(repo, &self.dir.join("lock"))
    }

    /// The directory holding one plan's state.
    pub fn plan_dir(&self, id_hex: &str) -> PathBuf {
        self.dir.join("plans").join(id_hex)
    }

    pub fn is_consumed(&self, id_hex: &str) -> bool {
        self.plan_dir(id_hex).join("consumed").exists()
    }

    /// Durably mark a plan consumed with `marker` (a signed [`state::Consumed`] envelope):
    /// from here on, no second apply of it may mutate.
    pub fn mark_consumed(&self, id_hex: &str, marker: &[u8]) -> Result<()> {
        crate::fsutil::write_atomic(&self.plan_dir(id_hex).join("consumed"), marker)
            .map_err(|e| Error::internal("cannot mark the plan consumed").caused_by(e))
    }

    pub fn write_file(&self, id_hex: &str, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.plan_dir(id_hex).join(name);
        crate::fsutil::write_atomic(&path, bytes)
            .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))
    }

    pub fn remove_file(&self, id_hex: &str, name: &str) -> Result<()> {
        let path = self.plan_dir(id_hex).join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &path)(e)),
            _ => Ok(()),
        }
    }

    /// A plan's state file, read as the untrusted input it is: a regular file (no link, no
    /// FIFO, no device), at most `MAX_STATE_BYTES`; anything else is an inconsistent state (16).
    pub fn read_file(&self, id_hex: &str, name: &str) -> Result<Option<Vec<u8>>> {
        let path = self.plan_dir(id_hex).join(name);
        match crate::fsutil::read_bounded(&path, MAX_STATE_BYTES) {
            Ok(b) => Ok(Some(b)),
            Err(crate::fsutil::ReadError::NotFound(_)) => Ok(None),
            Err(e) => Err(state::inconsistent(&path, e)),
        }
    }

    /// Append one fsynced line to a plan's journal: what step is about to happen or happened.
    /// `execute::journal` calls it, in an order its types check.
    pub fn journal(&self, id_hex: &str, step: state::Step, now: time::OffsetDateTime) -> Result<()> {
        let dir = self.plan_dir(id_hex);
        std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;
        let line = serde_json::json!({
            "plan": format!("sha256:{id_hex}"),
            "step": step.as_str(),
            "time": crate::text::rfc3339(now),
        });
        let path = dir.join("journal");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(Error::io("open", &path))?;
        f.write_all(format!("{line}\n").as_bytes())
            .and_then(|()| f.sync_data())
            .map_err(Error::io("append to", &path))?;
        Ok(())
    }

    /// The steps journaled for a plan, in order, parsed strictly (`state::parse_journal`):
    /// a journal that is not exactly what guardctl writes is `needs_recovery`, naming it.
    pub fn journal_steps(&self, id_hex: &str) -> Result<Vec<state::Step>> {
        let path = self.plan_dir(id_hex).join("journal");
        if !state::is_plan_id_hex(id_hex) {
            return Err(state::inconsistent(
                &self.plan_dir(id_hex),
                "not named by a plan id",
            ));
        }
        let Some(bytes) = self.read_file(id_hex, "journal")? else {
            return Ok(vec![]);
        };
        state::parse_journal(&bytes, id_hex).map_err(|why| state::inconsistent(&path, why))
    }

    /// Sign an entry with `key` and append it to the audit log, moving its anchor ref
    /// (through `repo::mutate`); the caller holds the store lock.
    pub fn audit(&self, repo: &RepoMut, key: &crate::sign::SigningKey, e: audit::Event) -> Result<()> {
        audit::append(repo, &self.audit_path(), key, e)
    }

    /// Sign an entry for the audit log without appending it yet ([`audit::Prepared`]); the
    /// caller holds the store lock until it appends it.
    pub fn prepare_audit(
        &self,
        repo: &RepoMut,
        key: &crate::sign::SigningKey,
        e: audit::Event,
    ) -> Result<audit::Prepared> {
        audit::prepare(repo, &self.audit_path(), key, e)
    }

    /// Append an entry signed by [`Store::prepare_audit`] under the same lock.
    pub fn append_prepared(&self, repo: &RepoMut, prepared: audit::Prepared) -> Result<()> {
        prepared.append(repo, &self.audit_path())
    }

    /// `audit.log`: see [`audit`].
    pub fn audit_path(&self) -> PathBuf {
        self.dir.join("audit.log")
    }

    /// Refuse (exit 65) when the audit log is broken, or when an entry's key does not speak
    /// for its principal per `signers`: checked before anything is changed, so a command that
    /// could not record what it did does not do it, and a rewritten log is not extended.
    /// Returns the keys `signers` no longer lists at all, with their entries' count
    /// ([`audit::retired`]): for the caller to warn about, never a refusal.
    pub fn audit_intact(
        &self,
        repo: &Repo,
        signers: &crate::sign::AllowedSigners,
    ) -> Result<Vec<(String, usize)>> {
        let path = self.audit_path();
        let log = audit::read(repo, &path)?;
        log.refuse_if_broken(&path)?;
        match audit::check_trust(&log.records, signers) {
            None => Ok(audit::retired(&log.records, signers)),
            Some(b) => Err(audit::broken(&path, &b)),
        }
    }

    /// Plan ids (hex) with state in the store.
    pub fn plan_ids(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let dir = self.dir.join("plans");
        match std::fs::read_dir(&dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    out.push(e.file_name().to_string_lossy().into_owned());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("read the directory", &dir)(e)),
        }
        out.sort();
        Ok(out)
    }
}

/// The before-image of one apply: what was deleted and where its backup lives, written
/// durably before any deletion. `rollback` restores from it; `gc` expires it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeforeImage {
    pub plan_id: String,
    pub plan_hash: String,
    pub repository: String,
    /// Who applies, and who approved: what the receipt will say.
    pub executor: String,
    pub approved_by: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    pub retention_days: u32,
    /// The remote whose branches `refs` are (remote-branches); `None` for local branches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    pub refs: Vec<crate::plan::approval::DeletedRef>,
    /// `refs/guardctl/backup/<plan id>`: points at `backup_commit`, one commit whose parents
    /// are every deleted tip, keeping them all reachable with one ref instead of one per
    /// branch. `None` when nothing is deleted.
    pub backup_ref: Option<String>,
    pub backup_commit: Option<String>,
    /// The `branch.<name>.*` entries removed with each branch, by branch name.
    pub config: Vec<(String, Vec<(String, String)>)>,
    /// Annotated tag objects deleted with their refs, byte for byte: a tag object cannot be
    /// a commit's parent, so the backup commit keeps the commit each names, and a rollback
    /// writes these back and gets the very same ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tag_objects: Vec<SavedTag>,
    /// For an exec plan, the command it runs (nothing to restore: no ref is deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// For a plan bound to a remote: where and how this apply consumed it beyond this clone,
    /// recorded by the apply itself, so that `recover` never reads today's policy to interpret
    /// yesterday's apply. Absent in images written before it existed (a remote's refs were
    /// then always consumed with the marker; an exec plan's remote was not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumed_on: Option<RemoteConsumption>,
}

/// Where an apply consumed a plan bound to a remote (docs/remote.md). Untrusted on read like
/// the rest of the image (bound to the consumed marker's signature once the plan is
/// consumed): guardctl only ever pushes to the URL the clone's config for `remote` resolves
/// to now, and only when that is the same repository as `url`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteConsumption {
    /// The remote's name in this clone.
    pub remote: String,
    /// The one URL the plan was bound to, as the apply pushed to it.
    pub url: String,
    /// Whether the apply created `refs/guardctl/consumed/<id>` there (the policy's
    /// `[remote] consumed_marker`). Without it the plan is consumed in this clone only, and
    /// `recover` decides a remote's push by its refs (`git ls-remote`) instead.
    pub marker: bool,
}

/// One annotated tag object of a before-image.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedTag {
    pub oid: String,
    /// The commit the tag names (what the backup commit keeps).
    pub commit: String,
    /// The object's bytes, base64.
    pub data: String,
}

impl BeforeImage {
    /// The commit the backup keeps for a deleted ref: the ref's target, or for an annotated
    /// tag the commit the tag names.
    pub fn backup_tip<'a>(&'a self, r: &'a crate::plan::approval::DeletedRef) -> &'a str {
        self.tag_objects
            .iter()
            .find(|t| t.oid == r.oid)
            .map_or(r.oid.as_str(), |t| t.commit.as_str())
    }
}

impl Store {
    pub fn write_before_image(&self, id_hex: &str, image: &BeforeImage) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(image)
            .map_err(|e| Error::internal("cannot encode the before-image").caused_by(e))?;
        self.write_file(id_hex, "before-image.json", &bytes)
    }

    /// The before-image, parsed strictly and cross-checked with its directory
    /// (`state::check_image`), with the sha256 of its bytes; inconsistent is `needs_recovery`.
    pub fn checked_before_image(&self, id_hex: &str) -> Result<Option<(BeforeImage, String)>> {
        let path = self.plan_dir(id_hex).join("before-image.json");
        if !state::is_plan_id_hex(id_hex) {
            return Err(state::inconsistent(
                &self.plan_dir(id_hex),
                "not named by a plan id",
            ));
        }
        let Some(bytes) = self.read_file(id_hex, "before-image.json")? else {
            return Ok(None);
        };
        let image: BeforeImage = serde_json::from_slice(&bytes).map_err(|e| state::inconsistent(&path, e))?;
        state::check_image(&image, id_hex).map_err(|why| state::inconsistent(&path, why))?;
        Ok(Some((image, crate::plan::envelope::sha256_id(&bytes))))
    }

    pub fn before_image(&self, id_hex: &str) -> Result<Option<BeforeImage>> {
        let Some(bytes) = self.read_file(id_hex, "before-image.json")? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::internal(format!("the before-image of plan {id_hex} is corrupt")).caused_by(e)
        })
    }
}
