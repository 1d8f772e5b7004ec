//! Changing a remote's branches: ONE `git push --atomic` per apply or rollback, every update
//! leased on the object id guardctl observed (`--force-with-lease=<ref>:<expected>`; an empty
//! expectation means "must not exist"). The remote applies all of it or none of it, and none
//! of it if any ref moved since it was observed: the remote's own compare-and-swap.

use crate::error::{Error, Kind, Result};
use crate::text::safe;

/// One change to a remote branch.
#[derive(Debug, Clone)]
pub enum RemoteOp {
    /// Delete `refname` only if it still points at `old`.
    Delete { refname: String, old: String },
    /// Create `refname` at `oid` only if it does not exist.
    Create { refname: String, oid: String },
    /// Move `refname` from `old` (`None`: it must not exist) to `new` (the ledger's
    /// fast-forward that adds a consumed marker).
    Update {
        refname: String,
        old: Option<String>,
        new: String,
    },
}

/// Linux caps the whole argument list (2 MB with the environment); a push of tens of
/// thousands of branches must be split into several plans.
const MAX_ARGS_BYTES: usize = 1 << 20;

/// The options and refspecs of the push, or why it cannot be one command.
pub fn push_args(ops: &[RemoteOp]) -> Result<Vec<String>> {
    let mut leases = Vec::with_capacity(ops.len());
    let mut specs = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            RemoteOp::Delete { refname, old } => {
                leases.push(format!("--force-with-lease={refname}:{old}"));
                specs.push(format!(":{refname}"));
            }
            RemoteOp::Create { refname, oid } => {
                leases.push(format!("--force-with-lease={refname}:"));
                specs.push(format!("{oid}:{refname}"));
            }
            RemoteOp::Update { refname, old, new } => {
                leases.push(format!(
                    "--force-with-lease={refname}:{}",
                    old.as_deref().unwrap_or_default()
                ));
                specs.push(format!("{new}:{refname}"));
            }
        }
    }
    let bytes: usize = leases.iter().chain(&specs).map(|a| a.len() + 1).sum();
    if bytes > MAX_ARGS_BYTES {
        return Err(Error::new(
            Kind::Policy,
            format!(
                "{} remote branch updates do not fit in one git push ({bytes} bytes of arguments)",
                ops.len()
            ),
        )
        .with_hint("plan fewer branches at a time (--match, or max_affected in the policy)"));
    }
    leases.extend(specs);
    Ok(leases)
}

impl super::RepoMut<'_> {
    /// Push `ops` to the repository at `url` (always a URL, the one the plan is bound to,
    /// never a remote's name: git would push to its `pushurl` or every `url`) in one atomic
    /// push. A lease that no longer holds is `drift`
    /// (nothing changed on the remote); `spawned` learns git's process id before git runs,
    /// so a recovery after our death can wait for the push to end.
    ///
    /// `via`: a scratch repository holding objects built for the push (a ledger commit, a
    /// commit on the backups branch, `repo::backups`). The push then runs there, reading
    /// this repository's objects as an alternate: the scratch repository knows that the
    /// backups branch's tip it fetched is one commit deep (its `shallow` file), which a push
    /// from here would not, and nothing is written into this repository's object store.
    pub fn push_atomic(
        &self,
        url: &str,
        ops: &[RemoteOp],
        via: Option<&crate::repo::publish::Scratch>,
        spawned: &mut dyn FnMut(u32) -> Result<()>,
    ) -> Result<()> {
        let args = push_args(ops)?;
        let git = match via {
            Some(scratch) => scratch.pushing_with(&self.common_dir().join("objects")),
            None => self.git(),
        };
        let mut child = git
            .env("GIT_TERMINAL_PROMPT", "0")
            // git's own receive-pack, never the clone's `remote.<url>.receivepack` (git
            // looks the URL up as a remote's name; for a local remote it runs here).
            .args([
                "push",
                "--atomic",
                "--porcelain",
                "--receive-pack=git-receive-pack",
            ])
            .args(&args[..ops.len()])
            .arg("--")
            .arg(url)
            .args(&args[ops.len()..])
            .spawn(false)?;
        if let Err(e) = spawned(child.id()) {
            child.kill();
            return Err(e);
        }
        let out = child.finish();
        // Whatever the push did, the run's listing of the remote is from before it.
        self.forget_listing(url);
        let out = out?;
        if out.status.success() {
            return Ok(());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let rejected: Vec<&str> = stdout.lines().filter(|l| l.starts_with('!')).collect();
        if rejected.iter().any(|l| l.contains("stale info")) {
            let mut e = Error::new(
                Kind::Drift,
                "a remote branch moved between the check and the push; the remote changed nothing",
            );
            for l in rejected.iter().filter(|l| l.contains("stale info")) {
                e = e.caused_by(safe(l.trim_start_matches('!').trim()));
            }
            return Err(e.with_hint("re-run `guardctl plan remote-branches`"));
        }
        let mut e = Error::internal("git push failed; the remote changed nothing (atomic push)");
        for l in rejected {
            e = e.caused_by(safe(l.trim_start_matches('!').trim()));
        }
        Err(e.caused_by(safe(stderr.trim())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_update_is_leased_and_creates_lease_absence() {
        let args = push_args(&[
            RemoteOp::Delete {
                refname: "refs/heads/a".into(),
                old: "1111".into(),
            },
            RemoteOp::Create {
                refname: "refs/heads/b".into(),
                oid: "2222".into(),
            },
        ])
        .unwrap();
        assert_eq!(
            args,
            [
                "--force-with-lease=refs/heads/a:1111",
                "--force-with-lease=refs/heads/b:",
                ":refs/heads/a",
                "2222:refs/heads/b"
            ]
        );
    }

    #[test]
    fn a_push_too_large_for_one_command_is_refused_before_it_runs() {
        let ops: Vec<RemoteOp> = (0..20_000)
            .map(|i| RemoteOp::Delete {
                refname: format!("refs/heads/topic/{i:06}"),
                old: "a".repeat(40),
            })
            .collect();
        assert_eq!(push_args(&ops).unwrap_err().kind, Kind::Policy);
    }
}
