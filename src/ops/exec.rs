//! The `exec` operation: any destructive command, gated by its preview.
//!
//! The plan records exactly what runs (the argument vector, no shell), where (relative to the
//! work tree's top), with which environment (only the allowlisted variables, each recorded as
//! the sha256 of its value), which repository files its arguments name (with content
//! digests), and what the preview printed: that output is the manifest a reviewer approves.
//! `recheck` re-runs the preview at apply time; any difference is drift and the command does
//! not run.

use super::stale_branches::Drift;
use crate::error::{Error, Result};
use crate::plan::model::{EnvEntry, ExecInputs, FileDigest, PreviewOutput};
use crate::render::escape::safe;
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The variables every command gets, besides those the planner allowlists.
pub const ALWAYS: [&str; 1] = ["PATH"];

/// A preview larger than this cannot be a manifest anyone reviews (and would not fit a plan).
const MAX_PREVIEW_BYTES: usize = 8 << 20;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub remote: Option<String>,
    pub command: Vec<String>,
    pub preview: String,
    pub before_image: Option<String>,
    pub env: Vec<String>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::plan::envelope::hex(&Sha256::digest(bytes))
}

/// `cwd` relative to the work tree's `top`, which it must be inside.
fn relative_workdir(top: &Path, cwd: &Path) -> Result<String> {
    let (top, cwd) = (canonical(top)?, canonical(cwd)?);
    let rel = cwd.strip_prefix(&top).map_err(|_| {
        Error::usage(format!(
            "the working directory {} is outside the repository",
            cwd.display()
        ))
    })?;
    let rel = rel.to_string_lossy().into_owned();
    Ok(if rel.is_empty() { ".".into() } else { rel })
}

fn canonical(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| Error::usage(format!("cannot resolve {}", p.display())).caused_by(e))
}

/// The directory the commands run in: the recorded work directory under `top`. A recorded
/// path that climbs out of the work tree is refused (the plan is signed, but still checked).
pub fn workdir(top: &Path, inputs: &ExecInputs) -> Result<PathBuf> {
    let rel = Path::new(&inputs.workdir);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(Error::invalid_plan(format!(
            "the plan's working directory {} leaves the work tree",
            safe(&inputs.workdir)
        )));
    }
    Ok(top.join(rel))
}

/// The allowlisted variables' current values (`None`: unset).
pub fn environment(names: &[String]) -> Vec<(String, Option<OsString>)> {
    names.iter().map(|n| (n.clone(), std::env::var_os(n))).collect()
}

fn env_entries(env: &[(String, Option<OsString>)]) -> Vec<EnvEntry> {
    env.iter()
        .map(|(name, v)| EnvEntry {
            name: name.clone(),
            sha256: v.as_ref().map(|v| sha256_hex(v.as_encoded_bytes())),
        })
        .collect()
}

/// Every argument that names a regular file inside the work tree, with its digest.
fn file_digests(top: &Path, dir: &Path, command: &[String]) -> Result<Vec<FileDigest>> {
    let top = canonical(top)?;
    let mut out: Vec<FileDigest> = Vec::new();
    for arg in command {
        let Ok(path) = std::fs::canonicalize(dir.join(arg)) else {
            continue;
        };
        let Ok(rel) = path.strip_prefix(&top) else {
            continue;
        };
        if !path.is_file() || rel.starts_with(".git") {
            continue;
        }
        let bytes = std::fs::read(&path)
            .map_err(|e| Error::usage(format!("cannot read {}", path.display())).caused_by(e))?;
        let rel = rel.to_string_lossy().into_owned();
        if !out.iter().any(|f| f.path == rel) {
            out.push(FileDigest {
                path: rel,
                sha256: sha256_hex(&bytes),
            });
        }
    }
    Ok(out)
}

fn with_env<'c>(c: &'c mut Command, dir: &Path, env: &[(String, Option<OsString>)]) -> &'c mut Command {
    c.current_dir(dir).env_clear().stdin(Stdio::null());
    for (name, value) in env {
        if let Some(v) = value {
            c.env(name, v);
        }
    }
    c
}

/// `sh -c script` in `dir` with only `env`, output captured.
pub fn run_shell(script: &str, dir: &Path, env: &[(String, Option<OsString>)]) -> Result<Output> {
    with_env(Command::new("sh").arg("-c").arg(script), dir, env)
        .output()
        .map_err(|e| Error::internal("cannot run sh").caused_by(e))
}

/// The planned command itself (no shell) in `dir` with only `env`, output captured.
pub fn run_command(command: &[String], dir: &Path, env: &[(String, Option<OsString>)]) -> Result<Output> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| Error::invalid_plan("the plan has no command"))?;
    with_env(Command::new(program).args(args), dir, env)
        .output()
        .map_err(|e| Error::internal(format!("cannot run {}", safe(program))).caused_by(e))
}

fn preview(script: &str, dir: &Path, env: &[(String, Option<OsString>)]) -> Result<PreviewOutput> {
    let out = run_shell(script, dir, env)?;
    if !out.status.success() {
        return Err(Error::usage(format!("the preview failed ({})", out.status))
            .caused_by(safe(String::from_utf8_lossy(&out.stderr).trim()))
            .with_hint("a preview must succeed: its output is what the reviewer approves"));
    }
    if out.stdout.len() > MAX_PREVIEW_BYTES {
        return Err(Error::usage(format!(
            "the preview printed {} bytes; at most {MAX_PREVIEW_BYTES} make a manifest",
            out.stdout.len()
        )));
    }
    Ok(PreviewOutput {
        sha256: sha256_hex(&out.stdout),
        text: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// Observe at planning time: resolve the directory, environment and files, run the preview.
pub fn observe(top: &Path, cwd: &Path, req: &Request) -> Result<ExecInputs> {
    if req.command.is_empty() {
        return Err(Error::usage("give the command after `--`"));
    }
    let mut names: Vec<String> = ALWAYS.iter().map(|s| s.to_string()).collect();
    names.extend(req.env.iter().cloned());
    names.sort();
    names.dedup();
    let env = environment(&names);
    let workdir = relative_workdir(top, cwd)?;
    let dir = top.join(&workdir);
    Ok(ExecInputs {
        files: file_digests(top, &dir, &req.command)?,
        preview_output: preview(&req.preview, &dir, &env)?,
        remote: req.remote.clone(),
        command: req.command.clone(),
        preview: req.preview.clone(),
        before_image: req.before_image.clone(),
        workdir,
        env: env_entries(&env),
    })
}

/// Re-observe at apply time: every difference from the plan, the preview's output last.
pub fn recheck(top: &Path, planned: &ExecInputs) -> Result<Vec<Drift>> {
    let names: Vec<String> = planned.env.iter().map(|e| e.name.clone()).collect();
    let env = environment(&names);
    let dir = workdir(top, planned)?;
    let mut drifts = Vec::new();
    let drift = |resource: &str, field: &str, planned: String, now: String| Drift {
        refname: resource.to_string(),
        field: field.to_string(),
        planned,
        now,
    };
    let short = |d: &Option<String>| {
        d.as_deref()
            .map_or("(unset)".into(), |h| format!("sha256:{}", &h[..12.min(h.len())]))
    };
    for (p, now) in planned.env.iter().zip(env_entries(&env)) {
        if p.sha256 != now.sha256 {
            drifts.push(drift(
                &format!("env {}", p.name),
                "value",
                short(&p.sha256),
                short(&now.sha256),
            ));
        }
    }
    for f in &planned.files {
        let now = std::fs::read(top.join(&f.path)).ok().map(|b| sha256_hex(&b));
        if now.as_deref() != Some(f.sha256.as_str()) {
            drifts.push(drift(
                &f.path,
                "content",
                short(&Some(f.sha256.clone())),
                short(&now),
            ));
        }
    }
    if !drifts.is_empty() {
        // The inputs changed: running even the preview with them is not what was approved.
        return Ok(drifts);
    }
    let now = preview(&planned.preview, &dir, &env).map_err(|e| {
        Error::new(
            crate::error::Kind::Drift,
            "the preview no longer succeeds; the command was not run",
        )
        .caused_by(e.message)
    })?;
    if now.sha256 != planned.preview_output.sha256 {
        let (added, removed) = line_changes(&planned.preview_output.text, &now.text);
        let mut d = drift(
            "preview",
            "output",
            format!("{} lines", planned.preview_output.text.lines().count()),
            format!(
                "{} lines ({} added, {} removed)",
                now.text.lines().count(),
                added.len(),
                removed.len()
            ),
        );
        if let Some(first) = added.first().or(removed.first()) {
            d.now += &format!("; first difference: {}", safe(first));
        }
        drifts.push(d);
    }
    Ok(drifts)
}

/// Lines only in `new` and lines only in `old`, in order (a line diff with `similar`).
pub fn line_changes(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let line = change.value().trim_end_matches('\n').to_string();
        match change.tag() {
            similar::ChangeTag::Insert => added.push(line),
            similar::ChangeTag::Delete => removed.push(line),
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// The digest of bytes, for receipts.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_changes_name_the_added_and_removed_lines() {
        let (a, r) = line_changes("rm a\nrm b\nrm c\n", "rm a\nrm c\nrm d\n");
        assert_eq!(a, ["rm d"]);
        assert_eq!(r, ["rm b"]);
    }

    #[test]
    fn a_planned_workdir_may_not_leave_the_work_tree() {
        let inputs = |w: &str| ExecInputs {
            remote: None,
            command: vec!["true".into()],
            preview: "true".into(),
            before_image: None,
            workdir: w.into(),
            env: vec![],
            files: vec![],
            preview_output: PreviewOutput {
                sha256: String::new(),
                text: String::new(),
            },
        };
        assert!(workdir(Path::new("/r"), &inputs("scripts")).is_ok());
        assert!(workdir(Path::new("/r"), &inputs(".")).is_ok());
        assert!(workdir(Path::new("/r"), &inputs("../etc")).is_err());
        assert!(workdir(Path::new("/r"), &inputs("/etc")).is_err());
    }
}
