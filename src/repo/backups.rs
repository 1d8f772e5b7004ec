//! The backups branch on the team remote (`refs/heads/guardctl/backups`): what a remote's
//! plan deleted stays reachable on the remote itself, so `rollback` works from any clone
//! once the clone that applied it is gone (a CI runner).
//!
//! Each apply that deletes a remote's branches or tags adds one commit to the branch, in the
//! same atomic push as the deletions and the ledger's consumed marker: its parents are the
//! branch's tip (none: the first) and the apply's backup commit (whose parents are every
//! deleted tip, `RepoMut::write_backup_commit`), its tree the empty tree. The branch only
//! ever moves forward, so a host's ordinary branch protection (no deletion, no force push)
//! keeps every backup; nothing reads it but `rollback`, which only takes objects from it,
//! each by the id a verified receipt and plan name (content-addressed: no trust in what the
//! branch says).
//!
//! Building on the tip needs only the tip's commit object (fetched one commit deep into the
//! push's scratch repository, which is why that push runs there: see
//! `RepoMut::push_atomic`): the histories the branch keeps are never fetched by an apply.

use super::publish::{Fetch, Scratch};
use crate::error::{Error, Kind, Result};
use crate::text::safe;
use git2::Oid;

/// The backups branch on the team remote. Never a branch a plan may delete: remote branch
/// listings leave it out, as they leave out the ledger.
pub const BACKUPS_REF: &str = "refs/heads/guardctl/backups";

/// The largest file the fetch of the branch's tip may bring: its commit and empty tree are
/// a few hundred bytes; anything more was pushed there by someone else.
const TIP_LIMIT: u64 = 64 * 1024;

impl Scratch {
    /// The tip of the backups branch at `url`, `listed` (`None`: there is none yet; listed
    /// with the ledger, `store::ledger::Ledger::list_and_fetch`), its commit fetched into
    /// this repository one commit deep. Refuses (14, naming the ref) a tip that is no commit
    /// or could not be fetched within the cap: a backup cannot be chained onto it, and an
    /// apply does not delete without its backup.
    pub fn backups_tip(&self, url: &str, listed: Option<Oid>) -> Result<Option<Oid>> {
        let Some(tip) = listed else {
            return Ok(None);
        };
        // Capped at TIP_LIMIT itself: `fetch_commits` would allow a pack of a megabyte more
        // (room for an item's commit and tree), so a junk tip of up to ~1 MiB was fetched by
        // every apply (tests/cli/rollback.rs).
        let fetched = self.fetch_commits_within(url, &[tip], TIP_LIMIT);
        if matches!(fetched, Ok(Fetch::Capped)) {
            return Err(unusable(url, "its tip is larger than a backup commit can be"));
        }
        match self.git2().find_object(tip, None).ok().and_then(|o| o.kind()) {
            Some(git2::ObjectType::Commit) => Ok(Some(tip)),
            // A fetch one commit deep of what is no commit fails: the failure is the cause.
            _ => {
                let e = unusable(url, &format!("its tip {tip} is no commit that could be fetched"));
                Err(match fetched {
                    Err(cause) => e.caused_by(cause.message),
                    Ok(_) => e,
                })
            }
        }
    }

    /// The commit that adds `backup` (an apply's backup commit, in the applying clone's
    /// object store) to the backups branch at `tip`: empty tree, fixed identity, the time
    /// `when` (the before-image's), and a message naming the plan. Built from its text, so
    /// neither parent needs to be in this repository.
    pub fn backups_commit(&self, tip: Option<Oid>, backup: Oid, plan_id: &str, when: i64) -> Result<Oid> {
        let git = self.git2();
        let tree = git.treebuilder(None)?.write()?;
        let mut body = format!("tree {tree}\n");
        for parent in tip.iter().chain(std::iter::once(&backup)) {
            body += &format!("parent {parent}\n");
        }
        body += &format!(
            "author guardctl <guardctl@localhost> {when} +0000\ncommitter guardctl <guardctl@localhost> {when} +0000\n\nguardctl backup of plan sha256:{plan_id}\n"
        );
        Ok(git.odb()?.write(git2::ObjectType::Commit, body.as_bytes())?)
    }
}

fn unusable(url: &str, why: &str) -> Error {
    Error::new(
        Kind::Policy,
        format!(
            "the remote {}'s backups branch {BACKUPS_REF} cannot take this apply's backup: {why}; nothing was changed",
            safe(url)
        ),
    )
    .with_hint(
        "guardctl only ever moves that branch forward; someone else pushed there. Ask the remote's administrator to restore it (docs/remote.md, Backups on the remote)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bare() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init_bare(dir.path()).unwrap();
        let url = format!("file://{}", dir.path().display());
        (dir, url)
    }

    #[test]
    fn a_remote_without_the_branch_has_no_tip_and_a_backup_commit_chains_on_the_tip() {
        let (_remote, url) = bare();
        let scratch = Scratch::new(Vec::new()).unwrap();
        assert_eq!(scratch.backups_tip(&url, None).unwrap(), None);
        let backup = Oid::from_str(&"1".repeat(40)).unwrap();
        let first = scratch.backups_commit(None, backup, "ab", 0).unwrap();
        let second = scratch.backups_commit(Some(first), backup, "cd", 0).unwrap();
        let odb = scratch.git2().odb().unwrap();
        let text = odb.read(second).unwrap();
        let text = String::from_utf8_lossy(text.data()).into_owned();
        assert!(
            text.contains(&format!("parent {first}\nparent {backup}\n")),
            "{text}"
        );
        assert!(text.ends_with("guardctl backup of plan sha256:cd\n"), "{text}");
    }

    #[test]
    fn a_tip_that_is_no_commit_is_refused_naming_the_branch() {
        let (remote, url) = bare();
        let repo = git2::Repository::open(remote.path()).unwrap();
        let blob = repo.blob(b"junk").unwrap();
        repo.reference(BACKUPS_REF, blob, true, "junk").unwrap();
        let scratch = Scratch::new(Vec::new()).unwrap();
        let e = scratch.backups_tip(&url, Some(blob)).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert!(e.message.contains(BACKUPS_REF), "{}", e.message);
    }
}
