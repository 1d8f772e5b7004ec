//! Applying an exec plan: the command runs from a private copy of the approved files,
//! exactly once. Its journal is `before-image-written`, `consumed`, `command-started`,
//! `command-finished`: a crash between the last two is recorded as interrupted by `recover`
//! and the command is never run again. Bound to a remote, the consumed marker is created
//! there before `command-started`: a clone whose push is refused runs nothing.

use super::records::signed_state;
use super::{EXEC_RESULT, EXEC_RESULT_PAYLOAD_TYPE, Executor, Run, crash_point};
use crate::error::{Error, Result};
use crate::ops::exec;
use crate::ops::pin::Script;
use crate::plan::approval::{ExecResult, Receipt};
use crate::sign::SigningKey;
use crate::store::BeforeImage;
use crate::text::safe;

impl Executor<'_> {
    /// A command (exec): check drift (the preview re-run), copy the pinned files into a
    /// private directory (each copy checked against the plan), run the before-image command
    /// from it, which must succeed, check the copies again, write the before-image, mark
    /// consumed, then run the command from the copy exactly once, run the verify command, and
    /// record how both ended. A failing command or verification is a receipt that says so
    /// (exit 15). Whatever happens to the repository's files once they are copied, what runs
    /// is the approved content.
    pub fn apply_exec(
        &self,
        id: &str,
        image: BeforeImage,
        key: &SigningKey,
        run: Run<'_>,
        drift_check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Receipt> {
        let Run { inputs, top, sandbox } = run;
        let journal = self.journal(id);
        drift_check()?;
        let names: Vec<String> = inputs.env.iter().map(|e| e.name.clone()).collect();
        let env = exec::environment(&names);
        let dir = exec::workdir(top, inputs)?;
        let staged = exec::prepare(top, inputs)?.map_err(|d| {
            crate::ops::stale_branches::drift_error(&d).with_hint(
                "the command was not run; re-run `guardctl plan exec` and have the new plan approved",
            )
        })?;
        // Once more now that the private copy exists: nothing the command can load from the
        // work tree changed since the drift check.
        let d = exec::content_changes(top, inputs, &|rel| self.repo.work_tree_files(rel))?;
        if !d.is_empty() {
            return Err(crate::ops::stale_branches::drift_error(&d).with_hint(
                "the command was not run; re-run `guardctl plan exec` and have the new plan approved",
            ));
        }
        if let Some(script) = &inputs.before_image {
            let out = without_signing(key, || {
                exec::run_script(&staged, Script::BeforeImage, script, &dir, &env)
            })??;
            self.store.write_file(id, "before-image-output", &out.stdout)?;
            if !out.status.success() {
                // Nothing destructive ran and the plan is not used: it can be applied again.
                journal.refused()?;
                return Err(Error::internal(format!(
                    "the before-image command failed ({}); the command was not run",
                    out.status
                ))
                .caused_by(safe(String::from_utf8_lossy(&out.stderr).trim()))
                .with_hint("fix what it needs and apply again: the plan was not used"));
            }
            let changed: Vec<exec::Drift> = staged
                .recheck()
                .into_iter()
                .map(|(refname, field, planned, now)| exec::Drift {
                    refname,
                    field,
                    planned,
                    now,
                })
                .collect();
            if !changed.is_empty() {
                journal.refused()?;
                return Err(crate::ops::stale_branches::drift_error(&changed).with_hint(
                    "the before-image command changed the private copy; the command was not run",
                ));
            }
        }
        self.store.write_before_image(id, &image)?;
        let journal = journal.before_image_written()?;
        self.consume(id, key)?;
        let journal = journal.consumed()?;
        // Bound to a remote: the consumed marker is created there (create-only) before the
        // command runs; a clone that finds it taken runs nothing. Without the marker (the
        // policy's `[remote] consumed_marker = false`), the plan is consumed here only.
        if let Some(at) = image.consumed_on.as_ref().filter(|c| c.marker) {
            if let Err(e) = self.push_consuming(id, &at.url, &[], true, None) {
                self.abort(journal, &e)?;
                return Err(e);
            }
            crash_point("pushed");
        }
        let journal = journal.command_started()?;
        let ran = without_signing(key, || exec::run_command(&staged, &inputs.command, &dir, &env))?;
        let mut result = match ran {
            Ok(out) => {
                self.store.write_file(id, "command-stdout", &out.stdout)?;
                self.store.write_file(id, "command-stderr", &out.stderr)?;
                ExecResult {
                    command: inputs.command.clone(),
                    status: out.status.code(),
                    error: None,
                    stdout: exec::digest(&out.stdout),
                    stdout_bytes: out.stdout.len() as u64,
                    stderr: exec::digest(&out.stderr),
                    stderr_bytes: out.stderr.len() as u64,
                    verification: None,
                }
            }
            Err(e) => ExecResult {
                command: inputs.command.clone(),
                status: None,
                error: Some(e.message),
                stdout: exec::digest(b""),
                stdout_bytes: 0,
                stderr: exec::digest(b""),
                stderr_bytes: 0,
                verification: None,
            },
        };
        result.verification = exec::verify(sandbox, &staged, inputs, &dir, &env)?;
        // Signed like the consumed marker: a recovery that finishes this apply puts the
        // result into a receipt signed with this key, so it must be this run's own, not a
        // file someone wrote into the state directory ("status 0") after a crash.
        let bytes = signed_state(EXEC_RESULT_PAYLOAD_TYPE, &result, key, EXEC_RESULT)?;
        self.store.write_file(id, EXEC_RESULT, &bytes)?;
        let journal = journal.command_finished()?;
        self.settle(journal, &image, key)
    }
}

/// Run `f` (a program that runs unsandboxed, as this user) with the command's own agent, if
/// the key is unlocked in one, locked meanwhile: the program can reach its socket, and must
/// not sign with the key (`sign::unlock`).
fn without_signing<T>(key: &SigningKey, f: impl FnOnce() -> T) -> Result<T> {
    let Some(unlocked) = key.unlocked.as_deref() else {
        return Ok(f());
    };
    let suspended = unlocked.suspend()?;
    let out = f();
    suspended.resume()?;
    Ok(out)
}
