//! Where a new plan may be written: `plan -o FILE` on the command line, and the `out` of the
//! MCP plan tools, which an agent chooses.
//!
//! Never guardctl's own state (`<git dir>/guardctl`, the audit log among it) or a trust file
//! (the allowed-signers file in use, the policy named by git config, the signing key,
//! anything under the work tree's `.guardctl/`): a plan written there would break the audit
//! log or make the planner's key an approver.
//!
//! The CLI (a person at a terminal) may also replace a file that is not a plan, or a plan
//! that carries approvals, but only with `--force`. An agent gets less: a new file inside
//! guardctl's plan directory or inside the work tree outside `.git`, reached through no
//! symbolic link, replacing nothing but a plan of the same id.

use crate::context::Ctx;
use crate::error::{Error, Result};
use std::path::{Component, Path, PathBuf};

/// What is at a destination now.
enum Existing {
    Nothing,
    Plan { id: String, approvals: usize },
    Other,
}

/// What is at `path`, a plan there loaded and verified (an agent may replace only the plan of
/// the same id).
fn existing(path: &Path) -> Existing {
    existing_by(path, |p| {
        let loaded = crate::planfile::load(p).ok()?;
        Some((loaded.file.approvals.len(), loaded.plan_id))
    })
}

/// What is at `path` as far as the CLI's guard needs: a plan file (its signature verifying)
/// and its approvals, the payload unread (`planfile::peek_approvals`; the id is not read).
fn existing_unverified(path: &Path) -> Existing {
    existing_by(path, |p| {
        Some((crate::planfile::peek_approvals(p)?, String::new()))
    })
}

/// What is at `path`, a regular file read by `plan` (its approvals and id when a plan).
fn existing_by(path: &Path, plan: impl Fn(&Path) -> Option<(usize, String)>) -> Existing {
    match std::fs::symlink_metadata(path) {
        Err(_) => Existing::Nothing,
        Ok(m) if !m.is_file() => Existing::Other,
        Ok(_) => match plan(path) {
            Some((approvals, id)) => Existing::Plan { id, approvals },
            None => Existing::Other,
        },
    }
}

/// `path` made absolute (against the working directory) and resolved as far as it exists:
/// the parent canonicalized, the file name kept (it may not exist yet).
fn resolved(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or(abs.clone()),
        _ => abs,
    }
}

/// guardctl's state and the trust files of this run, canonical where they exist. Whole
/// directories are those nothing may be written into.
fn protected(ctx: &Ctx) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    if let Ok(repo) = ctx.repo() {
        dirs.push(canon(repo.state_dir()));
        if let Some(top) = repo.work_tree() {
            dirs.push(canon(top.join(".guardctl")));
        }
        if let Ok(Some(p)) = repo.system_config("guardctl.policy") {
            files.push(canon(crate::context::expand_home(&p)));
        }
    }
    if let Ok(Some(source)) = ctx.allowed_signers_source() {
        files.push(canon(PathBuf::from(source.location)));
    }
    let (_, key, _) = ctx.flags();
    for key in key
        .into_iter()
        .chain(std::env::var_os("GUARDCTL_KEY").map(PathBuf::from))
    {
        let public = PathBuf::from(format!("{}.pub", key.display()));
        files.push(canon(key));
        files.push(canon(public));
    }
    if let Some(data) = directories::ProjectDirs::from("", "", "guardctl") {
        let data = data.data_dir().to_path_buf();
        for name in ["id_ed25519", "id_ed25519.pub", "id_ed25519-cert.pub"] {
            files.push(canon(data.join(name)));
        }
    }
    (dirs, files)
}

fn refuse_protected(ctx: &Ctx, path: &Path) -> Result<()> {
    let (dirs, files) = protected(ctx);
    if dirs.iter().any(|d| path.starts_with(d)) || files.iter().any(|f| f == path) {
        return Err(Error::usage(format!(
            "{} is guardctl's own state or a trust file; a plan is never written there",
            path.display()
        ))
        .with_hint("write the plan elsewhere (`-o plan.json`)"));
    }
    Ok(())
}

/// `plan -o FILE`: refuse guardctl's state and trust files always, and, without `force`, a
/// file that is not a plan or a plan that carries approvals. Returns what was found there,
/// for [`recheck_cli`].
pub fn check_cli(ctx: &Ctx, out: &Path, force: bool) -> Result<Checked> {
    let path = resolved(out);
    refuse_protected(ctx, &path)?;
    if force {
        return Ok(Checked(None));
    }
    let stamp = Stamp::of(&path);
    judge(out, existing_unverified(&path))?;
    Ok(Checked(stamp))
}

/// [`check_cli`] again, just before the plan is written (the file may have been put there
/// while planning took): the file is read again only if it is not the one `checked` judged
/// (a plan file's signature is checked over megabytes of payload).
pub fn recheck_cli(ctx: &Ctx, out: &Path, force: bool, checked: &Checked) -> Result<()> {
    let path = resolved(out);
    refuse_protected(ctx, &path)?;
    if force || (checked.0.is_some() && Stamp::of(&path) == checked.0) {
        return Ok(());
    }
    judge(out, existing_unverified(&path))
}

/// What [`check_cli`] found at the destination, by its file's identity and last change.
pub struct Checked(Option<Stamp>);

/// A file's device, inode, size and modification time: another file, or this one written
/// since, has another stamp.
#[derive(PartialEq, Eq)]
struct Stamp(u64, u64, u64, i64, i64);

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stamp(m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    }
}

fn judge(out: &Path, existing: Existing) -> Result<()> {
    match existing {
        Existing::Nothing => Ok(()),
        Existing::Plan { approvals: 0, .. } => Ok(()),
        Existing::Plan { approvals, .. } => Err(Error::usage(format!(
            "{} holds a plan with {approvals} approval{}; writing a new plan there drops {}",
            out.display(),
            if approvals == 1 { "" } else { "s" },
            if approvals == 1 { "it" } else { "them" },
        ))
        .with_hint("write the new plan elsewhere (`-o FILE`), or pass --force to replace it")),
        Existing::Other => Err(
            Error::usage(format!("{} exists and is not a guardctl plan", out.display()))
                .with_hint("write the plan elsewhere (`-o FILE`), or pass --force to replace that file"),
        ),
    }
}

/// An MCP plan tool's `out`: relative to the work tree's top, or absolute inside `plans_dir`
/// or the work tree; plain components only; not under `.git` or `.guardctl`; no symbolic
/// link on the way; an existing file only when it is the plan `plan_id`. Returns where to
/// write. Every refusal is a usage error (the tool's error kind).
pub fn check_agent(ctx: &Ctx, plans_dir: Option<&Path>, out: &str, plan_id: &str) -> Result<PathBuf> {
    let refuse = |why: &str| {
        Error::usage(format!("`out` {}: {why}", crate::text::safe(out)))
            .with_hint("leave `out` out (plans go to guardctl's plan directory), or name a new file in the work tree such as `plans/cleanup.json`")
    };
    let given = Path::new(out);
    // By the text: `Path::components` would quietly drop a `.`.
    if out.is_empty() || out.split('/').any(|c| c == "." || c == "..") {
        return Err(refuse("only plain path components are allowed (no `..`, no `.`)"));
    }
    let top = ctx
        .repo()
        .ok()
        .and_then(|r| r.work_tree())
        .map(|t| std::fs::canonicalize(&t).unwrap_or(t));
    let plans = plans_dir.map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
    let (root, rest) = if given.is_absolute() {
        let inside = |r: &Option<PathBuf>| {
            r.as_ref().and_then(|r| {
                given
                    .strip_prefix(r)
                    .ok()
                    .map(|rest| (r.clone(), rest.to_path_buf()))
            })
        };
        inside(&plans)
            .or_else(|| inside(&top))
            .ok_or_else(|| refuse("outside guardctl's plan directory and the work tree"))?
    } else {
        (
            top.clone().ok_or_else(|| refuse("there is no work tree"))?,
            given.to_path_buf(),
        )
    };
    if Some(&root) == top.as_ref()
        && let Some(Component::Normal(first)) = rest.components().next()
        && (first == ".git" || first == ".guardctl")
    {
        return Err(refuse("inside .git or .guardctl"));
    }
    if rest.as_os_str().is_empty() {
        return Err(refuse("names a directory"));
    }
    // No link anywhere from the root down: the file lands where its name says.
    let mut at = root.clone();
    for c in rest.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(refuse("goes through a symbolic link")),
            Ok(_) => {}
            Err(_) if at == root.join(&rest) => {}
            Err(_) if Some(&root) == plans.as_ref() => {}
            Err(_) => return Err(refuse("its directory does not exist")),
        }
    }
    let path = root.join(&rest);
    refuse_protected(ctx, &path)?;
    match existing(&path) {
        Existing::Nothing => Ok(path),
        Existing::Plan { id, .. } if id == plan_id => Ok(path),
        Existing::Plan { .. } => Err(refuse("a file with another plan is there")),
        Existing::Other => Err(refuse("a file that is not a guardctl plan is there")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_before_writing_judges_a_file_put_there_while_planning() {
        let tmp = tempfile::tempdir().unwrap();
        git2::Repository::init(tmp.path()).unwrap();
        let ctx = Ctx::new(Some(tmp.path().to_path_buf()), None, None);
        let out = tmp.path().join("plan.json");
        let checked = check_cli(&ctx, &out, false).unwrap();
        // Nothing there at first; then a file that is not a plan appears.
        std::fs::write(&out, "notes\n").unwrap();
        let e = recheck_cli(&ctx, &out, false, &checked).unwrap_err();
        assert!(e.to_string().contains("is not a guardctl plan"), "{e}");
        // A first check finds it there and refuses it.
        assert!(check_cli(&ctx, &out, false).is_err());
        // With --force, neither looks.
        let forced = check_cli(&ctx, &out, true).unwrap();
        recheck_cli(&ctx, &out, true, &forced).unwrap();
    }
}
