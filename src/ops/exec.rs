//! The `exec` operation: any destructive command, gated by its preview.
//!
//! The plan records exactly what runs (the argument vector, no shell), where (relative to the
//! work tree's top), with which environment (only the allowlisted variables, each recorded as
//! the sha256 of its value), which repository files its arguments name (with content
//! digests), every file that runs (`pin`: programs resolved through `PATH`, scripts, links and
//! their targets, `--pin` trees), and what the preview printed: that output is the manifest a
//! reviewer approves and the policy sees (`plan::manifest`).
//!
//! Everything runs from a private copy of the pinned files ([`pin::Staged`]), at planning
//! time as at apply time, so what the preview, the before-image command, the command and the
//! verify command run is the content that was hashed. `recheck` re-derives the pinned files
//! and re-runs the preview at apply time; any difference is drift and the command does not
//! run.

use super::pin::{self, Commands, Script, Staged};
pub use super::stale_branches::Drift;
use crate::error::{Error, Result};
use crate::plan::approval::Verification;
use crate::plan::model::{EnvEntry, ExecInputs, FileDigest, PreviewOutput, VerifyPrints};
use crate::process::{Output, Process};
use crate::sandbox::{Ran, Sandbox};
use crate::text::safe;
use sha2::{Digest, Sha256};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

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
    pub pin: Vec<String>,
    pub verify: Option<String>,
    pub verify_prints: Option<VerifyPrints>,
    /// The manifest is the command's own effect, observed by running it in the trial
    /// sandbox (`crate::trial`), not a preview's output: the hook's plans of lines it could
    /// only judge by effect. `preview` is then empty.
    pub trial: bool,
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::plan::envelope::hex(&Sha256::digest(bytes))
}

/// A file's digest, streamed: an argument naming a large data file costs time, not memory.
fn file_sha256(path: &Path) -> Result<String> {
    let cannot = |e: std::io::Error| Error::usage(format!("cannot read {}", path.display())).caused_by(e);
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking open and a regular-file check on the open file: a FIFO swapped in after
    // the caller's check must not hang planning or apply.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(Error::usage(format!("{} is not a regular file", path.display())));
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(cannot)?;
    Ok(crate::plan::envelope::hex(&hasher.finalize()))
}

/// The digest of each of `files` (relative to `top`, from `Repo::work_tree_files`) as the
/// work tree holds it now: `missing` where nothing is there (a tracked file deleted) or
/// something neither a file, a link nor a directory. A symbolic link's digest is of what it
/// says and of the file it resolves to, so retargeting it is a change. A directory git lists
/// as one entry (a nested repository, a submodule) is every file under it, its `.git` left
/// out. guardctl's own plan and approval files are left out: approving changes them, and
/// one [`is_plan_file`] accepts holds only base64, fingerprints and armored signatures,
/// nothing an interpreter could run.
fn content(top: &Path, files: &[String]) -> Result<Vec<FileDigest>> {
    let mut out = Vec::new();
    for f in files {
        let f = f.trim_end_matches('/');
        let path = top.join(f);
        let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if regular && f.ends_with(".json") && is_plan_file(&path) {
            continue;
        }
        entry(&path, f, &mut out)?;
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// The digest of `path` (shown as `shown`), or of every file under it when it is a directory.
fn entry(path: &Path, shown: &str, out: &mut Vec<FileDigest>) -> Result<()> {
    let meta = std::fs::symlink_metadata(path);
    let sha256 = match &meta {
        Ok(m) if m.is_file() => file_sha256(path)?,
        Ok(m) if m.file_type().is_symlink() => {
            let link = std::fs::read_link(path).unwrap_or_default();
            let target = match std::fs::metadata(path) {
                Ok(t) if t.is_file() => file_sha256(path)?,
                _ => "not a file".into(),
            };
            let mut bytes = b"link\0".to_vec();
            bytes.extend_from_slice(link.as_os_str().as_encoded_bytes());
            bytes.push(0);
            bytes.extend_from_slice(target.as_bytes());
            sha256_hex(&bytes)
        }
        Ok(m) if m.is_dir() => {
            let mut names: Vec<OsString> = std::fs::read_dir(path)
                .map_err(|e| Error::usage(format!("cannot list {}", safe(shown))).caused_by(e))?
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .filter(|n| n != ".git")
                .collect();
            names.sort();
            for n in names {
                let shown = format!("{shown}/{}", n.to_string_lossy());
                entry(&path.join(&n), &shown, out)?;
            }
            return Ok(());
        }
        _ => "missing".into(),
    };
    out.push(FileDigest {
        path: shown.to_string(),
        sha256,
    });
    Ok(())
}

/// A plan or approval file as guardctl writes one: it parses strictly, its payload types are
/// guardctl's, and every string in it is base64, a key fingerprint or an armored signature
/// (a file that merely parses, with `$(…)` in a string, is content like any other: a shell
/// sourcing it would run that).
fn is_plan_file(path: &Path) -> bool {
    use crate::plan::envelope::{Envelope, Signature};
    let inert = |s: &str, extra: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c) || extra.contains(c))
    };
    let types = [
        crate::plan::envelope::PLAN_PAYLOAD_TYPE,
        crate::plan::envelope::APPROVAL_PAYLOAD_TYPE,
        crate::plan::approval::RECEIPT_PAYLOAD_TYPE,
    ];
    let signed = |t: &str, payload: &str, sigs: &[Signature]| {
        types.contains(&t)
            && inert(payload, "")
            && sigs.iter().all(|s| inert(&s.keyid, ":") && inert(&s.sig, "- \n"))
    };
    let envelope = |e: &Envelope| signed(&e.payload_type, &e.payload, &e.signatures);
    crate::fsutil::read_bounded(path, crate::plan::envelope::MAX_FILE_BYTES)
        .ok()
        .is_some_and(|bytes| {
            crate::plan::envelope::parse_plan_file(&bytes).is_ok_and(|p| {
                signed(&p.payload_type, &p.payload, &p.signatures) && p.approvals.iter().all(envelope)
            }) || serde_json::from_slice::<Envelope>(&bytes).is_ok_and(|e| envelope(&e))
        })
}

/// The work-tree content a plan pinned; a plan without the list is refused (made before
/// guardctl pinned the work tree, or re-signed without it).
fn planned_content(planned: &ExecInputs) -> Result<&[FileDigest]> {
    planned.content.as_deref().ok_or_else(|| {
        Error::invalid_plan("the plan records no work-tree content: nothing it may load is pinned")
            .with_hint("re-run `guardctl plan exec` and have the new plan approved")
    })
}

/// How the work tree under the plan's working directory differs from the content it pinned
/// (`files` lists it, as `Repo::work_tree_files`): the drift check's and, once the private
/// copy exists, apply's. Every byte the command can load from the repository is the
/// approved byte. An empty list is an empty working directory, checked like any other; no
/// list at all is never "nothing to check" (a hostile planner would re-sign the plan
/// without it).
pub fn content_changes(
    top: &Path,
    planned: &ExecInputs,
    files: &dyn Fn(&str) -> Result<Vec<String>>,
) -> Result<Vec<Drift>> {
    Ok(content_drifts(
        planned_content(planned)?,
        &content(top, &files(&planned.workdir)?)?,
    ))
}

/// Every difference between the planned content and `now`, one drift each (the first few
/// named, then how many more).
fn content_drifts(planned: &[FileDigest], now: &[FileDigest]) -> Vec<Drift> {
    let short = |d: &str| {
        if d == "missing" {
            d.to_string()
        } else {
            crate::text::short_digest(d)
        }
    };
    let was: std::collections::BTreeMap<&str, &str> = planned
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    let is: std::collections::BTreeMap<&str, &str> =
        now.iter().map(|f| (f.path.as_str(), f.sha256.as_str())).collect();
    let mut out = Vec::new();
    for path in was
        .keys()
        .chain(is.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (a, b) = (was.get(path), is.get(path));
        if a == b {
            continue;
        }
        out.push(drift(
            &safe(path),
            "content",
            a.map_or("(not there)".into(), |d| short(d)),
            b.map_or("(not there)".into(), |d| short(d)),
        ));
    }
    const NAMED: usize = 10;
    if out.len() > NAMED {
        let more = out.len() - NAMED;
        out.truncate(NAMED);
        out.push(drift(
            "work tree",
            "content",
            "as planned".into(),
            format!("{more} more files differ"),
        ));
    }
    out
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
        let rel = rel.to_string_lossy().into_owned();
        if !out.iter().any(|f| f.path == rel) {
            out.push(FileDigest {
                path: rel,
                sha256: file_sha256(&path)?,
            });
        }
    }
    Ok(out)
}

/// `p` in `dir` with exactly `env` (nothing inherited), stdin closed, run to the end; a
/// program that cannot run is an error headed `what`, naming the command line.
fn run_in(p: Process, what: String, dir: &Path, env: &[(String, Option<OsString>)]) -> Result<Output> {
    let p = env
        .iter()
        .filter_map(|(name, value)| Some((name, value.as_ref()?)))
        .fold(p.current_dir(dir).env_clear(), |p, (name, v)| p.env(name, v));
    p.output(None).map_err(|e| headed(what, e))
}

/// `e` under the heading `what`: its message and causes become the causes.
fn headed(what: String, e: Error) -> Error {
    let mut headed = Error::internal(what).caused_by(e.message);
    headed.causes.extend(e.causes);
    headed
}

/// What is wrong with each directory of `path` that someone other than root or this user
/// could write (or create): a program dropped there after approval would run where the
/// approved one was found. A relative or empty entry is the working directory's.
pub fn unsafe_path_dirs(path: &OsStr) -> Vec<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let mut out = Vec::new();
    for dir in std::env::split_paths(path) {
        let shown = dir.display().to_string();
        if !dir.is_absolute() {
            out.push((shown, "is relative (the working directory)".into()));
            continue;
        }
        // A missing directory is as safe as its nearest existing parent: whoever can write
        // that parent can create it.
        let mut at = dir.as_path();
        let meta = loop {
            match std::fs::metadata(at) {
                Ok(m) => break Some(m),
                Err(_) => match at.parent() {
                    Some(p) => at = p,
                    None => break None,
                },
            }
        };
        let Some(meta) = meta else { continue };
        let why = if meta.uid() != 0 && meta.uid() != me {
            Some(format!("is owned by uid {}", meta.uid()))
        } else if meta.mode() & 0o022 != 0 {
            Some(format!(
                "is writable by {}",
                if meta.mode() & 0o002 != 0 {
                    "anyone"
                } else {
                    "its group"
                }
            ))
        } else {
            None
        };
        if let Some(why) = why {
            let why = if at == dir.as_path() {
                why
            } else {
                format!("does not exist, and {} {why}", at.display())
            };
            out.push((shown, why));
        }
    }
    out
}

/// The `PATH` the commands get (what bare program names are looked up in).
fn path_of(env: &[(String, Option<OsString>)]) -> Option<&OsStr> {
    env.iter()
        .find(|(n, _)| n == "PATH")
        .and_then(|(_, v)| v.as_deref())
}

/// A command string run by the private copy of `sh`, its pinned words naming their copies.
/// Unsandboxed: for the before-image command, which acts by design.
pub fn run_script(
    staged: &Staged,
    which: Script,
    script: &str,
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<Output> {
    let script = staged.script(which, script)?;
    let p = Process::new(staged.shell()).arg0("sh").arg("-c").arg(script);
    run_in(p, format!("cannot run the {}", which.label()), dir, env)
}

/// A command string as [`run_script`] runs it, inside the preview sandbox: for the preview
/// and the verify command, which only look.
fn run_sandboxed(
    sandbox: &Sandbox,
    staged: &Staged,
    which: Script,
    script: &str,
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<Ran> {
    let script = staged.script(which, script)?;
    let env: Vec<(String, OsString)> = env
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.clone()?)))
        .collect();
    sandbox
        .run(
            staged.shell(),
            OsStr::new("sh"),
            &["-c".into(), script.into()],
            dir,
            &env,
            &[staged.path().to_path_buf()],
        )
        .map_err(|e| match e.kind {
            // A policy refusal (no sandbox here) says so itself.
            crate::error::Kind::Internal => headed(format!("cannot run the {}", which.label()), e),
            _ => e,
        })
}

/// The planned command itself (no shell), from the private copy, in `dir` with only `env`.
pub fn run_command(
    staged: &Staged,
    command: &[String],
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<Output> {
    let argv = staged.command(command)?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::invalid_plan("the plan has no command"))?;
    let p = Process::new(program).arg0(&command[0]).args(args);
    run_in(p, format!("cannot run {}", safe(&command[0])), dir, env)
}

/// The preview's output, and whether it ran sandboxed.
fn preview(
    sandbox: &Sandbox,
    staged: &Staged,
    script: &str,
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<(PreviewOutput, bool)> {
    let Ran {
        output: out,
        sandboxed,
    } = run_sandboxed(sandbox, staged, Script::Preview, script, dir, env)?;
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
    // The reviewer reads the text and apply compares the digest: they must be of the same
    // bytes, so a manifest is UTF-8 text.
    let sha256 = sha256_hex(&out.stdout);
    let text = String::from_utf8(out.stdout).map_err(|_| {
        Error::usage("the preview printed bytes that are not UTF-8 text; a manifest must be text")
    })?;
    Ok((PreviewOutput { sha256, text }, sandboxed))
}

/// The most a trial may run before it is killed and the plan refused.
pub const TRIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A trial plan's manifest: the effect of its command (`bash -c LINE`), run on a
/// copy-on-write view of the machine in the trial sandbox with the plan's environment, as
/// `crate::trial` lists it. A trial that cannot finish there (the network, a hidden path, the
/// time limit) is an error: nothing would say what the command destroys.
fn trial_manifest(
    sandbox: &Sandbox,
    command: &[String],
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<PreviewOutput> {
    let line = crate::plan::model::trial_line(command)
        .ok_or_else(|| Error::invalid_plan("a trial plan's command is `bash -c LINE`"))?;
    let env: Vec<(String, OsString)> = env
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.clone()?)))
        .collect();
    let effect = crate::trial::run(&crate::trial::Request {
        line: line.to_string(),
        cwd: dir.to_path_buf(),
        env,
        timeout: TRIAL_TIMEOUT,
        regenerable: crate::trial::default_regenerable(),
        gate: crate::trial::default_gate(),
        network: sandbox.settings().network,
    })?;
    if let Some(why) = effect.incomplete() {
        return Err(
            Error::usage(format!("the trial of the command could not finish: {why}"))
                .caused_by(effect.stderr_tail.clone()),
        );
    }
    let text = effect.manifest();
    Ok(PreviewOutput {
        sha256: sha256_hex(text.as_bytes()),
        text,
    })
}

/// Observe at planning time: resolve the directory, environment, files and pinned files,
/// copy the pinned files privately and run the preview from that copy.
pub fn observe(
    top: &Path,
    cwd: &Path,
    req: &Request,
    sandbox: &Sandbox,
    files: &dyn Fn(&str) -> Result<Vec<String>>,
) -> Result<ExecInputs> {
    if req.command.is_empty() {
        return Err(Error::usage("give the command after `--`"));
    }
    if req.verify_prints.is_some() && req.verify.is_none() {
        return Err(Error::usage("--verify-prints needs --verify"));
    }
    if let Some(bad) = req.env.iter().find(|n| !crate::plan::validate::is_env_name(n)) {
        return Err(Error::usage(format!(
            "--env {}: not a variable name (letters, digits and `_`, not starting with a digit)",
            crate::text::safe(bad)
        )));
    }
    let mut names: Vec<String> = ALWAYS.iter().map(|s| s.to_string()).collect();
    names.extend(req.env.iter().cloned());
    names.sort();
    names.dedup();
    let env = environment(&names);
    if let Some(path) = path_of(&env)
        && let Some((dir, why)) = unsafe_path_dirs(path).into_iter().next()
    {
        return Err(Error::usage(format!(
            "the PATH directory {} {why}: a program put there after approval would run as approved",
            safe(&dir)
        ))
        .with_hint("plan with a PATH of directories only root (or you) can write, e.g. `PATH=/usr/bin:/bin guardctl plan exec …`"));
    }
    let workdir = relative_workdir(top, cwd)?;
    let dir = top.join(&workdir);
    let mut pins = req.pin.clone();
    pins.dedup();
    let commands = Commands {
        command: &req.command,
        preview: &req.preview,
        before_image: req.before_image.as_deref(),
        verify: req.verify.as_deref(),
        pin: &pins,
    };
    let analysis = pin::analyze(top, &dir, path_of(&env), commands)?;
    analysis.refuse_unpinned()?;
    let pinned = analysis.pinned.clone();
    let staged = Staged::new(analysis, &pinned)?.map_err(|d| {
        Error::usage("a pinned file changed while it was copied; plan again")
            .caused_by(d.first().map(|d| d.0.clone()).unwrap_or_default())
    })?;
    let (preview_output, sandboxed) = if req.trial {
        (trial_manifest(sandbox, &req.command, &dir, &env)?, true)
    } else {
        preview(sandbox, &staged, &req.preview, &dir, &env)?
    };
    let path_dirs = path_of(&env)
        .map(|p| {
            std::env::split_paths(p)
                .map(|d| d.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let content = content(top, &files(&workdir)?)?;
    Ok(ExecInputs {
        path_dirs,
        content: Some(content),
        files: file_digests(top, &dir, &req.command)?,
        preview_output,
        preview_unsandboxed: !sandboxed,
        remote: req.remote.clone(),
        command: req.command.clone(),
        preview: req.preview.clone(),
        before_image: req.before_image.clone(),
        workdir,
        env: env_entries(&env),
        pin: pins,
        verify: req.verify.clone(),
        verify_prints: req.verify_prints,
        pinned,
        trial: req.trial,
    })
}

fn drift(resource: &str, field: &str, planned: String, now: String) -> Drift {
    Drift {
        refname: resource.to_string(),
        field: field.to_string(),
        planned,
        now,
    }
}

/// At apply time: re-derive the pinned files from the plan's commands, compare them with the
/// plan's, and copy them privately, each copy checked against the plan's digest. `Err`: the
/// differences (nothing may run).
pub fn prepare(top: &Path, planned: &ExecInputs) -> Result<std::result::Result<Staged, Vec<Drift>>> {
    let names: Vec<String> = planned.env.iter().map(|e| e.name.clone()).collect();
    let env = environment(&names);
    let dir = workdir(top, planned)?;
    let analysis = match pin::analyze(top, &dir, path_of(&env), planned.into()) {
        Ok(a) => a,
        Err(e) => {
            let now = e.chain();
            return Ok(Err(vec![drift(
                "pinned files",
                "found",
                "as planned".into(),
                now,
            )]));
        }
    };
    let to_drifts = |d: Vec<pin::Difference>| {
        d.into_iter()
            .map(|(r, f, p, n)| drift(&r, &f, p, n))
            .collect::<Vec<_>>()
    };
    let differences = pin::differences(&planned.pinned, &analysis.pinned);
    if !differences.is_empty() {
        return Ok(Err(to_drifts(differences)));
    }
    Ok(Staged::new(analysis, &planned.pinned)?.map_err(to_drifts))
}

/// Re-observe at apply time: every difference from the plan, the preview's output last. This
/// is the one entry point of the drift check for exec plans.
pub fn recheck(
    top: &Path,
    planned: &ExecInputs,
    sandbox: &Sandbox,
    files: &dyn Fn(&str) -> Result<Vec<String>>,
) -> Result<Vec<Drift>> {
    let names: Vec<String> = planned.env.iter().map(|e| e.name.clone()).collect();
    let env = environment(&names);
    let dir = workdir(top, planned)?;
    let mut drifts = Vec::new();
    let short = |d: &Option<String>| d.as_deref().map_or("(unset)".into(), crate::text::short_digest);
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
    // The PATH as the plan shows it must be the PATH it recorded (a re-signed plan could
    // show the reviewer other directories), and no directory of it may have become
    // writable by others since.
    // Always checked: a plan re-signed with no directories would show the reviewer no PATH.
    if let Some(p) = planned.env.iter().find(|e| e.name == "PATH") {
        let shown = std::env::join_paths(&planned.path_dirs)
            .map_err(|_| Error::invalid_plan("the plan's PATH directories cannot form a PATH"))?;
        let matches = match p.sha256.as_deref() {
            // PATH unset: no directory may be shown.
            None => planned.path_dirs.is_empty(),
            Some(d) => !planned.path_dirs.is_empty() && d == sha256_hex(shown.as_encoded_bytes()),
        };
        if !matches {
            return Err(Error::invalid_plan(
                "the plan's PATH directories are not the PATH it recorded",
            ));
        }
    }
    if let Some(path) = path_of(&env) {
        for (d, why) in unsafe_path_dirs(path) {
            drifts.push(drift(
                // Raw: the drift error escapes it (escaping twice spells a hidden character
                // as if it had been typed).
                &format!("PATH directory {d}"),
                "writable",
                "by root or the executor only".into(),
                why,
            ));
        }
    }
    drifts.extend(content_changes(top, planned, files)?);
    // Which files the command's arguments name is derived again, never taken from the plan:
    // a plan that leaves a script out of `files` (or names a file outside the work tree)
    // differs from what guardctl finds.
    let files_now = file_digests(top, &dir, &planned.command)?;
    let paths = |v: &[FileDigest]| v.iter().map(|f| f.path.clone()).collect::<Vec<_>>().join(" ");
    if paths(&planned.files) != paths(&files_now) {
        drifts.push(drift(
            "files",
            "named by the command",
            paths(&planned.files),
            paths(&files_now),
        ));
    }
    for (f, now) in planned.files.iter().zip(&files_now) {
        if f.sha256 != now.sha256 {
            drifts.push(drift(
                &f.path,
                "content",
                short(&Some(f.sha256.clone())),
                short(&Some(now.sha256.clone())),
            ));
        }
    }
    let staged = match prepare(top, planned)? {
        Ok(s) if drifts.is_empty() => s,
        Ok(_) => return Ok(drifts),
        Err(d) => {
            drifts.extend(d);
            return Ok(drifts);
        }
    };
    // The inputs are as planned: the preview runs from the private copy.
    let observed = if planned.trial {
        trial_manifest(sandbox, &planned.command, &dir, &env).map(|m| (m, true))
    } else {
        preview(sandbox, &staged, &planned.preview, &dir, &env)
    };
    let (now, _) = observed.map_err(|e| {
        if matches!(e.kind, crate::error::Kind::Policy | crate::error::Kind::Internal) {
            // Not the preview's answer: the sandbox could not be had or built.
            return e;
        }
        Error::new(
            crate::error::Kind::Drift,
            "the preview no longer succeeds; the command was not run",
        )
        .caused_by(e.message)
    })?;
    if now.sha256 != planned.preview_output.sha256 {
        let (added, removed) = crate::text::line_changes(&planned.preview_output.text, &now.text);
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

/// Run the `--verify` command from the private copy, in the preview sandbox, and compare
/// what it printed with the manifest (the preview's ids).
pub fn verify(
    sandbox: &Sandbox,
    staged: &Staged,
    planned: &ExecInputs,
    dir: &Path,
    env: &[(String, Option<OsString>)],
) -> Result<Option<Verification>> {
    let Some(script) = &planned.verify else {
        return Ok(None);
    };
    let prints = planned.verify_prints.unwrap_or(VerifyPrints::State);
    let expected = crate::plan::manifest::ids(&planned.preview_output.text);
    let (status, text) = match run_sandboxed(sandbox, staged, Script::Verify, script, dir, env) {
        Ok(Ran { output: out, .. }) => (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        Err(_) => (None, String::new()),
    };
    Ok(Some(compare(script, prints, status, expected, &text)))
}

/// Expected against observed: for `state`, the manifest ids still listed; for `diff`, the
/// manifest ids missing from the changes and the changes not in the manifest.
pub fn compare(
    script: &str,
    prints: VerifyPrints,
    status: Option<i32>,
    expected: Vec<String>,
    observed_text: &str,
) -> Verification {
    let observed = crate::plan::manifest::ids(observed_text);
    let seen: std::collections::HashSet<&str> = observed.iter().map(String::as_str).collect();
    let wanted: std::collections::HashSet<&str> = expected.iter().map(String::as_str).collect();
    let (remaining, unexpected, prints) = match prints {
        VerifyPrints::State => (
            expected
                .iter()
                .filter(|e| seen.contains(e.as_str()))
                .cloned()
                .collect(),
            Vec::new(),
            "state",
        ),
        VerifyPrints::Diff => (
            expected
                .iter()
                .filter(|e| !seen.contains(e.as_str()))
                .cloned()
                .collect(),
            observed
                .iter()
                .filter(|o| !wanted.contains(o.as_str()))
                .cloned()
                .collect(),
            "diff",
        ),
    };
    Verification {
        command: script.to_string(),
        prints: prints.to_string(),
        status,
        expected,
        observed,
        remaining,
        unexpected,
    }
}

/// What a verification says is wrong; empty when verified.
pub fn verification_mismatches(v: &Verification) -> Vec<String> {
    let mut out = Vec::new();
    let list = |ids: &[String]| {
        let mut s: Vec<String> = ids.iter().take(5).map(|i| safe(i)).collect();
        if ids.len() > 5 {
            s.push(format!("... ({} more in the receipt)", ids.len() - 5));
        }
        s.join(", ")
    };
    match v.status {
        Some(0) => {}
        Some(code) => out.push(format!("the verify command exited with status {code}")),
        None => out.push("the verify command did not run to the end".into()),
    }
    if !v.remaining.is_empty() {
        out.push(if v.prints == "diff" {
            format!(
                "{} of {} manifest resources are not among the changes: {}",
                v.remaining.len(),
                v.expected.len(),
                list(&v.remaining)
            )
        } else {
            format!(
                "{} of {} manifest resources are still present: {}",
                v.remaining.len(),
                v.expected.len(),
                list(&v.remaining)
            )
        });
    }
    if !v.unexpected.is_empty() {
        out.push(format!(
            "{} changes the manifest did not list: {}",
            v.unexpected.len(),
            list(&v.unexpected)
        ));
    }
    out
}

/// The digest of bytes, for receipts.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_compares_the_manifest_with_the_observed_state_or_diff() {
        let expected: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let v = compare("ls", VerifyPrints::State, Some(0), expected.clone(), "c\nd\nx\n");
        assert_eq!(v.remaining, ["c", "d"]);
        assert_eq!(verification_mismatches(&v).len(), 1);
        let v = compare("ls", VerifyPrints::State, Some(0), expected.clone(), "x\n");
        assert!(verification_mismatches(&v).is_empty());
        let v = compare("ls", VerifyPrints::State, Some(2), expected.clone(), "");
        assert_eq!(
            verification_mismatches(&v),
            ["the verify command exited with status 2"]
        );
        let v = compare("d", VerifyPrints::Diff, Some(0), expected.clone(), "a\nb\nc\nd\n");
        assert!(verification_mismatches(&v).is_empty());
        let v = compare("d", VerifyPrints::Diff, Some(0), expected, "a\nb\ne\n");
        assert_eq!(v.remaining, ["c", "d"]);
        assert_eq!(v.unexpected, ["e"]);
        assert_eq!(verification_mismatches(&v).len(), 2);
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
            pin: vec![],
            verify: None,
            verify_prints: None,
            pinned: vec![],
            preview_unsandboxed: false,
            trial: false,
            path_dirs: vec![],
            content: Some(vec![]),
        };
        assert!(workdir(Path::new("/r"), &inputs("scripts")).is_ok());
        assert!(workdir(Path::new("/r"), &inputs(".")).is_ok());
        assert!(workdir(Path::new("/r"), &inputs("../etc")).is_err());
        assert!(workdir(Path::new("/r"), &inputs("/etc")).is_err());
    }
}
