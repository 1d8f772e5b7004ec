//! The ONE module that changes the repository. Everything else reads.
//!
//! Refs change through `git update-ref --stdin` in one transaction: per-ref compare-and-swap
//! (`delete <ref> <old>`, `create <ref> <new>` which requires absence), all or nothing, one
//! packed-refs rewrite, run with `core.fsync` for refs. libgit2 is not used for this: its
//! transaction has no compare-and-swap and a failed delete still drops the reflog.
//! Config sections go through `git config`, which takes git's own config lock.
//! A `.lock` file left by a killed git is reported, never removed.

use super::Repo;
use crate::error::{Error, Kind, Result};
use std::io::Write;
use std::process::{Command, Stdio};

#[derive(Debug, Clone)]
pub enum RefOp {
    /// Create `refname` at `oid`; fails if it exists.
    Create { refname: String, oid: String },
    /// Delete `refname` only if it still points at `old`.
    Delete { refname: String, old: String },
}

impl Repo {
    fn git(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("--git-dir").arg(self.git.path());
        c
    }

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
        let mut input = String::from("start\n");
        for op in ops {
            match op {
                RefOp::Create { refname, oid } => input += &format!("create {refname} {oid}\n"),
                RefOp::Delete { refname, old } => input += &format!("delete {refname} {old}\n"),
            }
        }
        input += "prepare\ncommit\n";
        let mut child = self
            .git()
            .args(["-c", "core.fsync=committed,reference", "update-ref", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::internal("cannot run git update-ref").caused_by(e))?;
        if let Err(e) = spawned(child.id()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        if out.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let safe = crate::render::escape::safe(&stderr);
        if stderr.contains(".lock': File exists") || stderr.contains("Unable to create") {
            return Err(Error::new(Kind::NeedsRecovery, "a ref is locked by another process; nothing was changed")
                .caused_by(safe)
                .with_hint("wait for the other git process; if none runs, a killed git left the .lock file named above: remove it by hand"));
        }
        if stderr.contains("but expected")
            || stderr.contains("reference already exists")
            || stderr.contains("unable to resolve reference")
        {
            return Err(Error::new(
                Kind::Drift,
                "a ref changed between the check and the deletion; nothing was changed",
            )
            .caused_by(safe)
            .with_hint("re-run `guardctl plan`"));
        }
        Err(Error::internal("git update-ref failed; nothing was changed").caused_by(safe))
    }

    /// Remove the whole `[branch "<name>"]` section of each named branch.
    pub fn remove_branch_sections(&self, names: &[String]) -> Result<()> {
        for name in names {
            let out = self
                .git()
                .args(["config", "--local", "--remove-section", &format!("branch.{name}")])
                .output()?;
            // Exit 128 with "no such section" means there is nothing to remove.
            if !out.status.success() {
                let stderr = String::from_utf8_lossy(&out.stderr);
                if !stderr.contains("no such section") {
                    return Err(Error::internal(format!(
                        "cannot remove the config of branch {}",
                        crate::render::escape::safe(name)
                    ))
                    .caused_by(crate::render::escape::safe(stderr.trim())));
                }
            }
        }
        Ok(())
    }

    /// Add config entries back (multi-valued keys keep their order).
    pub fn add_config(&self, entries: &[(String, String)]) -> Result<()> {
        for (key, value) in entries {
            let out = self
                .git()
                .args(["config", "--local", "--add", key, value])
                .output()?;
            if !out.status.success() {
                return Err(Error::internal(format!(
                    "cannot restore config {}",
                    crate::render::escape::safe(key)
                ))
                .caused_by(crate::render::escape::safe(
                    String::from_utf8_lossy(&out.stderr).trim(),
                )));
            }
        }
        Ok(())
    }
}
