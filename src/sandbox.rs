//! The preview sandbox: every command guardctl runs to compute or check a preview (an exec
//! plan's `--preview` at plan, verify and apply time, and its `--verify` command) runs here,
//! without the user's credentials.
//!
//! How: guardctl runs itself (`/proc/self/exe`) as a launcher ([`LAUNCHER`], dispatched by
//! `main.rs` before anything else, so the launcher is single-threaded as `unshare` needs).
//! The launcher
//! 1. enters new user, mount, IPC, UTS and PID namespaces, and a new network namespace (nothing
//!    but a loopback that is down) unless the trusted policy allows the network;
//! 2. builds a new root on an empty tmpfs holding only an allowlist, each entry bound
//!    read-only at its own path: the system's program and library directories, a few files
//!    of `/etc` (no host keys, no shadow), `/dev/null` and its kin, the work tree and git
//!    directories, the private copy of the pinned programs, and what the trusted policy
//!    adds (`[sandbox] read`); `/tmp` is a private, empty, writable tmpfs of bounded size;
//!    nothing else exists: no home directory, no `$XDG_RUNTIME_DIR`, no ssh-agent socket, no
//!    `/proc`; secrets inside a bound path (a work tree that is `$HOME` holds `~/.ssh`, the
//!    agent's socket, the key) are covered by an empty directory or `/dev/null`;
//! 3. pivots into it and detaches the old root, so no path leads back out;
//! 4. restricts itself with Landlock (the same allowlist: read and run, write only `/tmp`;
//!    TCP bind/connect when the network is off; abstract UNIX sockets and signals scoped to
//!    the sandbox), which also sets `no_new_privs` and forbids any later mount;
//! 5. runs the command, as the first process of its PID namespace (whatever it leaves
//!    running dies with it), with exactly the environment the caller gave (exec plans build
//!    it from their allowlist).
//!
//! Why a new root and not Landlock alone: on the kernels this runs on, Landlock does not
//! govern `connect()` to a pathname UNIX socket, so an ssh-agent socket anywhere would stay
//! reachable; a socket that is not in the mount namespace cannot be reached at all.
//!
//! The effect trial (`src/trial/`) uses a second mode of the same launcher ([`Overlay`],
//! [`run_overlay`]): the whole machine as a copy-on-write view instead of an allowlist, the
//! same namespaces and hiding, Landlock allowing writes into the overlays, a seccomp filter
//! refusing UNIX sockets, a `/proc` of the trial's own PID namespace, and, without the
//! network, a DNS socket that notes the names the line asks for (`launch_overlay`). There
//! the line's first process (not the launcher) pivots and restricts itself, because it must
//! mount that `/proc` first.
//!
//! What it is not: a sandbox for the approved command or the before-image command, which
//! act by design and run as approved (`execute`).
//!
//! Invariants: [`Sandbox::run`] never runs the command outside the sandbox unless the
//! trusted policy opted out (`[sandbox] required = false`) *and* the probe found that this
//! kernel cannot sandbox; the caller records that ([`Ran::sandboxed`]). A launcher that
//! fails after the probe succeeded is an error, never a reason to run unsandboxed (the
//! command itself could fake a launcher failure).

use crate::error::{Error, Result};
use crate::process::{Output, Process};
use serde::{Deserialize, Serialize};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The first argument that makes the binary the sandbox's launcher (not a command users
/// type: clap never sees it).
pub const LAUNCHER: &str = "__guardctl-sandbox";

/// The exit status of a launcher that could not build the sandbox; its stderr then starts
/// with [`MARKER`].
const SETUP_FAILED: u8 = 125;
const MARKER: &str = "guardctl sandbox: ";

/// The system directories every sandboxed command may read and run (those that exist).
const SYSTEM: [&str; 9] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix/store",
    "/gnu/store",
];

/// What of `/etc` a command may read: what the dynamic loader, user and host lookups, time
/// zones, TLS roots and git's system config need. No host keys, no shadow, no guardctl config.
const ETC: [&str; 29] = [
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/alternatives",
    // The trust roots, not the whole of /etc/ssl and /etc/pki: their `private` directories
    // hold the host's TLS keys (readable by root and the ssl-cert group).
    "/etc/ssl/certs",
    "/etc/ssl/cert.pem",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/pki/ca-trust",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/tls/openssl.cnf",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/protocols",
    "/etc/services",
    "/etc/locale.alias",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/terminfo",
    "/etc/inputrc",
];

/// Secrets of the system hidden wherever a bound directory holds them (a repository at `/`
/// or `/etc`, a `[sandbox] read` of `/etc`): an empty directory or `/dev/null` in their place.
const SECRET: [&str; 6] = [
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/ssh",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
];

/// Size of the command's `/tmp` (a tmpfs of its own: memory, bounded, gone with the sandbox;
/// not the host's disk).
const TMP_SIZE: &str = "size=512m,nr_inodes=65536,mode=0700";

/// The trial's links to the line's own descriptors (through its own `/proc`).
const STDIO_LINKS: [(&str, &str); 4] = [
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// Device files a command may read and write.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What the trusted policy says about previews (`[sandbox]` in the policy file; the policy
/// comes only from the trust roots, never the work tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Refuse to run a preview where the kernel cannot sandbox it (the default). Off: run it
    /// unsandboxed there, and say so in the plan and in `show`.
    pub required: bool,
    /// More paths a preview may read (absolute; bound read-only).
    pub read: Vec<String>,
    /// Previews may use the network.
    pub network: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            required: true,
            read: Vec::new(),
            network: false,
        }
    }
}

impl Settings {
    /// Whether these are the defaults (kept out of the policy hash then, so policies written
    /// before the section keep their hash).
    pub fn is_default(&self) -> bool {
        *self == Settings::default()
    }
}

/// The sandbox for one operation's previews: the trusted settings and the paths the
/// operation adds (the work tree, the git directories).
#[derive(Debug, Clone)]
pub struct Sandbox {
    settings: Settings,
    readable: Vec<PathBuf>,
    /// Hidden where a bound directory holds them: keys, agent sockets, guardctl's data.
    hidden: Vec<PathBuf>,
}

/// How a command ran.
#[derive(Debug)]
pub struct Ran {
    pub output: Output,
    /// `false` only where the policy opted out and this kernel cannot sandbox.
    pub sandboxed: bool,
}

/// What the launcher is told (one JSON argument).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    /// An empty directory the new root is built on.
    root: PathBuf,
    /// Bound read-only at their own paths.
    read: Vec<PathBuf>,
    /// Replaced by an empty directory or `/dev/null` where they lie inside a bound path
    /// (canonical; a work tree that is `$HOME` holds `~/.ssh`).
    hide: Vec<PathBuf>,
    network: bool,
    /// Where the command starts (inside the sandbox: the same path).
    cwd: PathBuf,
    /// Build the sandbox, then exit 0 without running anything.
    probe: bool,
    /// The effect trial's mode ([`Overlay`]) instead of the preview's allowlist.
    #[serde(default)]
    overlay: Option<Overlay>,
}

/// The effect trial's mode (`src/trial/`): instead of an allowlist bound read-only, the
/// machine as a copy-on-write view. Each of `layers` (the host's top-level directories and
/// the mounts below them, parents first) is an overlay at its own path whose lower layer is
/// the host path and whose upper layer (where every write lands) is `<state>/<n>/upper`;
/// `sealed` paths (mounts that cannot be overlaid) are covered by an empty, read-only,
/// mode-0 tmpfs, so that a line fails there instead of seeing nothing to delete; `files`
/// (file mounts such as `/etc/hosts`) are bound read-only; `links` are the top-level
/// symlinks (`/bin -> usr/bin`). `/dev` holds only the preview's devices, `fd`, `stdin`,
/// `stdout` and `stderr` (links into `/proc/self/fd`) and a devpts instance of its own;
/// `/proc` is a procfs of the trial's PID namespace (only the line's processes; read-only
/// under Landlock); there is no `/sys` or `/run`. Without the network, `lo` is up,
/// `/etc/resolv.conf` (where it is a file) names 127.0.0.1, and the launcher's DNS socket
/// there answers REFUSED and reports the names asked ([`Tried::looked_up`]). A connection to
/// an address (no name) is refused (Landlock, no route) and not recorded. Landlock allows
/// writing anywhere in the layers (the writes land in the uppers), a seccomp filter refuses
/// `socket(AF_UNIX, …)` and io_uring, and the launcher and the line die with guardctl
/// (`PR_SET_PDEATHSIG`). The line is killed, with its whole PID namespace, after `timeout_ms`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    pub state: PathBuf,
    pub layers: Vec<PathBuf>,
    pub sealed: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    pub links: Vec<(PathBuf, PathBuf)>,
    pub timeout_ms: u64,
    /// guardctl's process id: a launcher whose parent is another (guardctl died before the
    /// parent-death signal was set) gives up.
    pub parent: u32,
}

/// The launcher's exit status when the line ran out of time (its stderr then ends with
/// [`MARKER`] `timed out`).
const TIMED_OUT: u8 = 124;

/// How a trial's line ran ([`run_overlay`]).
#[derive(Debug)]
pub struct Tried {
    /// `None`: killed at the time limit.
    pub status: Option<i32>,
    /// The last 64 KiB of the line's stderr.
    pub stderr: Vec<u8>,
    /// The names the line asked DNS for (without the network), escaped: `a.example,
    /// b.example and 2 more`.
    pub looked_up: Option<String>,
}

/// The upper and work directories of layer `n` of `state`.
pub fn overlay_dirs(state: &Path, n: usize) -> (PathBuf, PathBuf) {
    let dir = state.join(n.to_string());
    (dir.join("upper"), dir.join("work"))
}

/// Run `bash` (`arg0`, `args`) in the trial's copy-on-write view ([`Overlay`]), its root
/// built at `root` (an empty directory), with exactly `env`, starting in `cwd`, hiding
/// `hide` (the secrets; see [`secret_paths`]). The sandbox is required: a kernel that cannot
/// build it is an error.
#[allow(clippy::too_many_arguments)]
pub fn run_overlay(
    overlay: &Overlay,
    root: &Path,
    hide: Vec<PathBuf>,
    network: bool,
    cwd: &Path,
    program: &Path,
    args: &[OsString],
    env: &[(String, OsString)],
) -> Result<Tried> {
    let spec = Spec {
        root: root.to_path_buf(),
        read: Vec::new(),
        hide,
        network,
        cwd: cwd.to_path_buf(),
        probe: false,
        overlay: Some(overlay.clone()),
    };
    let p = launcher(&spec)?
        .arg(program)
        .arg(program.file_name().unwrap_or(program.as_os_str()))
        .args(args)
        .current_dir("/");
    let p = env.iter().fold(p.env_clear(), |p, (k, v)| p.env(k, v));
    // The launcher kills the line at the limit; this is only the backstop for a launcher
    // that hangs (it dies then, and the line with it: PR_SET_PDEATHSIG).
    let limit = std::time::Duration::from_millis(overlay.timeout_ms) + std::time::Duration::from_secs(10);
    let out = p.bounded(limit, 4096, 64 << 10)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The launcher's last words: the names asked, then `timed out`. A line that prints
    // them itself only makes its trial say more than it did (blocked, never cleared).
    let mut last_lines = stderr.trim_end().rsplit('\n').filter(|l| !l.is_empty());
    let last = last_lines.next().unwrap_or("");
    let looked_up = [last, last_lines.next().unwrap_or("")]
        .iter()
        .find_map(|l| l.strip_prefix(MARKER)?.strip_prefix(LOOKED_UP))
        .map(|names| {
            // The launcher's escaping leaves only these; anything else was printed by the line.
            let names = names.trim();
            if names
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_., \\".contains(c))
            {
                names.to_string()
            } else {
                crate::text::safe(names)
            }
        });
    let Some(status) = out.status else {
        return Ok(Tried {
            status: None,
            stderr: out.stderr,
            looked_up,
        });
    };
    match (status.code(), last.strip_prefix(MARKER)) {
        (Some(code), Some(what)) if code == i32::from(SETUP_FAILED) => Err(Error::internal(
            "the effect trial's sandbox could not be built; the line did not run",
        )
        .caused_by(crate::text::safe(what.trim()))),
        (Some(code), Some("timed out")) if code == i32::from(TIMED_OUT) => Ok(Tried {
            status: None,
            stderr: out.stderr,
            looked_up,
        }),
        (code, _) => Ok(Tried {
            status: Some(code.unwrap_or(1)),
            stderr: out.stderr,
            looked_up,
        }),
    }
}

impl Sandbox {
    /// `readable`: the paths this operation's previews must read (they need not exist).
    pub fn new(settings: &Settings, readable: Vec<PathBuf>) -> Sandbox {
        Sandbox {
            settings: settings.clone(),
            readable,
            hidden: secrets(),
        }
    }

    /// Also hide `paths` (the signing key named for this run) wherever a bound path holds them.
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Sandbox {
        self.hidden.extend(paths);
        self
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Run `program` (as `arg0`, with `args`) in `cwd`, with exactly `env`, stdin closed,
    /// inside the sandbox; `also_readable` adds paths for this run (a private copy of the
    /// programs). Fails when the kernel cannot sandbox and the policy requires it.
    pub fn run(
        &self,
        program: &Path,
        arg0: &OsStr,
        args: &[OsString],
        cwd: &Path,
        env: &[(String, OsString)],
        also_readable: &[PathBuf],
    ) -> Result<Ran> {
        let missing = match probe() {
            Probe::Ready => None,
            Probe::Missing(what) => Some(what),
            Probe::Broken(why) => {
                return Err(
                    Error::internal("cannot check whether this system can sandbox the preview")
                        .caused_by(why)
                        .with_hint("the preview did not run; check TMPDIR and free space, then plan again"),
                );
            }
        };
        if let Some(missing) = missing {
            if self.settings.required {
                return Err(Error::new(crate::error::Kind::Policy, format!(
                    "this system cannot sandbox the preview: {missing}"
                ))
                .with_hint(
                    "previews need Linux 5.13 or later with Landlock enabled and user namespaces allowed; \
                     to run previews unsandboxed here, set `[sandbox] required = false` in the trusted policy \
                     (plans and `guardctl show` then say that the preview ran unsandboxed)",
                ));
            }
            let p = env.iter().fold(
                Process::new(program)
                    .arg0(arg0)
                    .args(args)
                    .current_dir(cwd)
                    .env_clear(),
                |p, (k, v)| p.env(k, v),
            );
            return Ok(Ran {
                output: p.output(None)?,
                sandboxed: false,
            });
        }
        let jail = Jail::new()?;
        let mut read = self.read_paths();
        read.extend(also_readable.iter().cloned());
        let hide = self
            .hidden
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        let spec = jail.spec(read, hide, self.settings.network, cwd, false);
        let p = launcher(&spec)?
            .arg(program)
            .arg(arg0)
            .args(args)
            .current_dir(cwd);
        let p = env.iter().fold(p.env_clear(), |p, (k, v)| p.env(k, v));
        let output = p.output(None)?;
        setup_failure(&output)?;
        Ok(Ran {
            output,
            sandboxed: true,
        })
    }

    /// Every path the commands may read: the system's, the policy's and the operation's.
    fn read_paths(&self) -> Vec<PathBuf> {
        let mut read = system_paths();
        read.extend(self.settings.read.iter().map(PathBuf::from));
        read.extend(self.readable.iter().cloned());
        read
    }
}

/// What is hidden whatever the operation: the system's secrets, the user's ssh and gpg
/// directories, agent sockets, the runtime directory, guardctl's data directory and key.
fn secrets() -> Vec<PathBuf> {
    secret_paths(&[])
}

/// The credential stores under a home directory, hidden from the effect trial (which sees
/// the whole machine, not an allowlist).
const CREDENTIALS: [&str; 17] = [
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".1password",
    ".password-store",
    ".local/share/keyrings",
    ".config/guardctl",
];

/// What [`secrets`] hides, plus, for each of `homes` (the trial's `$HOME`s: guardctl's own and
/// the line's), its ssh and gpg directories and the credential stores of [`CREDENTIALS`].
/// `.config/guardctl` holds guardctl's keys and trust files: hidden whole.
pub fn secret_paths(homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = base_secrets();
    for home in homes {
        out.extend([".ssh", ".gnupg"].map(|d| home.join(d)));
        out.extend(CREDENTIALS.iter().map(|d| home.join(d)));
    }
    if !homes.is_empty()
        && let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty())
    {
        out.extend(CREDENTIALS.iter().map(|d| Path::new(&home).join(d)));
    }
    out
}

fn base_secrets() -> Vec<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut out: Vec<PathBuf> = SECRET.iter().map(PathBuf::from).collect();
    if let Some(home) = var("HOME") {
        out.extend([".ssh", ".gnupg"].map(|d| home.join(d)));
    }
    out.extend(
        ["SSH_AUTH_SOCK", "GNUPGHOME", "XDG_RUNTIME_DIR", "GUARDCTL_KEY"]
            .into_iter()
            .filter_map(var),
    );
    if let Some(dirs) = directories::ProjectDirs::from("", "", "guardctl") {
        out.push(dirs.data_dir().to_path_buf());
    }
    out
}

fn system_paths() -> Vec<PathBuf> {
    SYSTEM
        .iter()
        .chain(ETC.iter())
        .chain(DEVICES.iter())
        .map(PathBuf::from)
        .collect()
}

/// A private directory holding the new root's mount point; removed when dropped.
struct Jail {
    base: tempfile::TempDir,
}

impl Jail {
    fn new() -> Result<Jail> {
        use std::os::unix::fs::PermissionsExt;
        let cannot =
            |e: std::io::Error| Error::internal("cannot create the preview's sandbox directory").caused_by(e);
        let base = tempfile::Builder::new()
            .prefix("guardctl-sandbox-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(cannot)?;
        std::fs::create_dir(base.path().join("root")).map_err(cannot)?;
        Ok(Jail { base })
    }

    fn spec(&self, read: Vec<PathBuf>, hide: Vec<PathBuf>, network: bool, cwd: &Path, probe: bool) -> Spec {
        Spec {
            root: self.base.path().join("root"),
            read,
            hide,
            network,
            cwd: cwd.to_path_buf(),
            probe,
            overlay: None,
        }
    }
}

/// The launcher's process, told `spec`; the command follows as arguments.
fn launcher(spec: &Spec) -> Result<Process> {
    let spec = serde_json::to_string(spec).map_err(|e| {
        Error::usage("a path the preview needs is not UTF-8; it cannot be sandboxed").caused_by(e)
    })?;
    Ok(Process::new(launcher_program())
        .arg0("guardctl")
        .arg(LAUNCHER)
        .arg(spec))
}

/// guardctl itself: the launcher is the running binary.
fn launcher_program() -> PathBuf {
    #[cfg(feature = "test-hooks")]
    if let Some(path) = TEST_LAUNCHER.get() {
        return path.clone();
    }
    PathBuf::from("/proc/self/exe")
}

#[cfg(feature = "test-hooks")]
static TEST_LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Test hook: the binary to run as the launcher, for tests whose own executable is a test
/// harness (which cannot dispatch [`LAUNCHER`]); they name the built `guardctl`.
#[cfg(feature = "test-hooks")]
pub fn use_launcher_for_tests(path: PathBuf) {
    let _ = TEST_LAUNCHER.set(path);
}

/// A launcher that could not build the sandbox, as an error naming what failed.
fn setup_failure(out: &Output) -> Result<()> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    match (out.status.code(), stderr.strip_prefix(MARKER)) {
        (Some(code), Some(what)) if code == i32::from(SETUP_FAILED) => Err(Error::internal(
            "the preview's sandbox could not be built; the preview did not run",
        )
        .caused_by(crate::text::safe(what.trim()))),
        _ => Ok(()),
    }
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Ready,
    /// The kernel cannot sandbox: what is missing (the launcher said so).
    Missing(String),
    /// guardctl could not even ask (no temporary directory, the launcher did not start or
    /// died): never a reason to run unsandboxed.
    Broken(String),
}

/// Whether this system can sandbox: the launcher builds an empty sandbox once per process.
pub fn probe() -> Probe {
    static PROBED: OnceLock<Probe> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            if unavailable_for_tests() {
                return Probe::Missing("user namespaces are not available (GUARDCTL_TEST_NO_SANDBOX)".into());
            }
            let jail = match Jail::new() {
                Ok(j) => j,
                Err(e) => return Probe::Broken(e.chain()),
            };
            let spec = jail.spec(system_paths(), Vec::new(), false, Path::new("/"), true);
            let out = match launcher(&spec).and_then(|p| p.current_dir("/").env_clear().output(None)) {
                Ok(out) => out,
                Err(e) => return Probe::Broken(e.chain()),
            };
            classify(&out)
        })
        .clone()
}

/// What the probe's launcher said: only its own words for a missing feature make the
/// kernel's answer "cannot sandbox".
fn classify(out: &Output) -> Probe {
    let stderr = String::from_utf8_lossy(&out.stderr);
    match (out.status.code(), stderr.strip_prefix(MARKER)) {
        (Some(0), _) => Probe::Ready,
        (Some(code), Some(what)) if code == i32::from(SETUP_FAILED) => {
            Probe::Missing(crate::text::safe(what.trim()))
        }
        _ => Probe::Broken(format!(
            "the sandbox's launcher ended with {}: {}",
            out.status,
            crate::text::safe(stderr.trim())
        )),
    }
}

/// Test hook: a system that cannot sandbox, for the tests of `[sandbox] required`.
#[cfg(feature = "test-hooks")]
fn unavailable_for_tests() -> bool {
    std::env::var_os("GUARDCTL_TEST_NO_SANDBOX").is_some()
}

#[cfg(not(feature = "test-hooks"))]
fn unavailable_for_tests() -> bool {
    false
}

// ---- the launcher (a separate process; see the module doc) ---------------------------------

/// If `args` (the process's whole argument vector) asks for the launcher, build the sandbox
/// and run the command in it: returns only on failure, with the exit status to leave with
/// (after saying on stderr what failed). `None`: not the launcher.
pub fn launch_if_asked(args: &[OsString]) -> Option<u8> {
    if args.get(1).map(OsString::as_os_str) != Some(OsStr::new(LAUNCHER)) {
        return None;
    }
    let failure = match launch(&args[2..]) {
        Ok(code) => return Some(code),
        Err(f) => f,
    };
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{MARKER}{failure}");
    }
    Some(SETUP_FAILED)
}

/// What a launcher step failed at.
#[derive(Debug)]
struct Failure(String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn step<E: std::fmt::Display>(what: impl std::fmt::Display) -> impl FnOnce(E) -> Failure {
    move |e| Failure(format!("cannot {what}: {e}"))
}

/// `[spec, program, arg0, args...]`: the command's exit status (0 after a probe).
fn launch(args: &[OsString]) -> std::result::Result<u8, Failure> {
    let spec: Spec = args
        .first()
        .and_then(|s| s.to_str())
        .ok_or_else(|| Failure("no sandbox specification".into()))
        .and_then(|s| serde_json::from_str(s).map_err(step("read the sandbox specification")))?;
    if spec.overlay.is_some() {
        // The trial's launcher dies with guardctl (the thread that started it), and the
        // line with the launcher (run_as_until).
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .map_err(step("set the parent-death signal"))?;
        let parent = spec.overlay.as_ref().map_or(0, |o| o.parent);
        if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(parent) {
            return Err(Failure("guardctl exited before the trial started".into()));
        }
    }
    enter_namespaces(spec.network)?;
    if let Some(overlay) = &spec.overlay {
        return launch_overlay(&spec, overlay, &args[1..]);
    }
    build_root(&spec)?;
    enter_root(&spec)?;
    restrict(&spec)?;
    if spec.probe {
        return Ok(0);
    }
    let [program, arg0, rest @ ..] = &args[1..] else {
        return Err(Failure("no command to run".into()));
    };
    // The command is the first process of the new PID namespace: when it ends, the kernel
    // kills whatever it left running (nothing outlives the preview, or its /tmp). The
    // environment is the launcher's own: exactly what the caller gave it.
    let status = crate::process::run_as(program, arg0, rest).map_err(|e| {
        Failure(format!(
            "cannot run {}: {e}",
            crate::text::safe(&program.to_string_lossy())
        ))
    })?;
    Ok(exit_code(status))
}

/// The trial's launcher, in its new namespaces: listen for the line's DNS queries (without
/// the network), build the trial's root, then start the line as the first process of the
/// new PID namespace, which mounts its own `/proc` (a procfs of that PID namespace, mounted
/// from inside it: it shows only the line's processes), pivots into the root, detaches the
/// old one and restricts itself (Landlock, seccomp) before it runs the line. The launcher
/// answers DNS queries while the line runs and says, after it, which names were asked.
///
/// Why the line's first process mounts `/proc`: a procfs shows the PID namespace of the
/// process that mounts it, so the launcher (outside the new PID namespace) would show the
/// host's processes; and the kernel refuses a new procfs in a user namespace unless a fully
/// visible one is in the mount namespace (`mount_too_revealing`), so it is mounted while the
/// host's `/proc` is still there, before the old root is detached.
fn launch_overlay(spec: &Spec, overlay: &Overlay, command: &[OsString]) -> std::result::Result<u8, Failure> {
    let mut dns = if spec.network { None } else { Some(Dns::listen()?) };
    build_overlay_root(spec, overlay, dns.is_some())?;
    if spec.probe {
        enter_root(spec)?;
        restrict_overlay(spec)?;
        refuse_unix_sockets()?;
        return Ok(0);
    }
    let [program, arg0, rest @ ..] = command else {
        return Err(Failure("no command to run".into()));
    };
    let limit = std::time::Duration::from_millis(overlay.timeout_ms);
    let inside = spec.clone();
    let setup = move || -> std::result::Result<(), String> {
        let words = |f: Failure| format!("{MARKER}{f}");
        mount_proc(&inside).map_err(words)?;
        enter_root(&inside).map_err(words)?;
        restrict_overlay(&inside).map_err(words)?;
        refuse_unix_sockets().map_err(words)
    };
    let mut wait = |pause: std::time::Duration| match dns.as_mut() {
        Some(dns) => dns.serve(pause),
        None => std::thread::sleep(pause),
    };
    let status = crate::process::run_as_until(
        program,
        arg0,
        rest,
        limit,
        setup,
        i32::from(SETUP_FAILED),
        &mut wait,
    )
    .map_err(|e| {
        Failure(format!(
            "cannot run {}: {e}",
            crate::text::safe(&program.to_string_lossy())
        ))
    })?;
    if let Some(dns) = dns.as_mut() {
        dns.serve(std::time::Duration::ZERO);
        if let Some(names) = dns.asked() {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("\n{MARKER}{LOOKED_UP}{names}");
            }
        }
    }
    let Some(status) = status else {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("\n{MARKER}timed out");
        }
        return Ok(TIMED_OUT);
    };
    Ok(exit_code(status))
}

/// What the launcher's line after a trial starts with when the line asked DNS for names
/// (after [`MARKER`]; the names follow, escaped, comma-separated).
const LOOKED_UP: &str = "looked up ";

/// The trial's DNS server without the network: a UDP socket on 127.0.0.1:53 of the trial's
/// network namespace (the trial's `/etc/resolv.conf` names it). It answers every query
/// REFUSED at once (so a resolver fails as fast as offline, not after its timeouts) and
/// notes the names asked: a line that asks for a name meant to reach the network, whatever
/// it printed and however it ended.
struct Dns {
    socket: std::net::UdpSocket,
    /// The first names asked (escaped), in order, without repeats.
    names: Vec<String>,
    /// The other distinct names asked (at most [`DNS_OTHERS`], to count them).
    others: std::collections::BTreeSet<String>,
}

/// At most this many names are reported, and this many more counted.
const DNS_NAMES: usize = 3;
const DNS_OTHERS: usize = 10_000;

impl Dns {
    fn listen() -> std::result::Result<Dns, Failure> {
        loopback_up()?;
        let socket = std::net::UdpSocket::bind((std::net::Ipv4Addr::LOCALHOST, 53))
            .map_err(step("listen on 127.0.0.1:53 in the trial's network"))?;
        Ok(Dns {
            socket,
            names: Vec::new(),
            others: std::collections::BTreeSet::new(),
        })
    }

    /// Answer and note the queries that arrive within `for_at_most` (zero: those already
    /// queued, without waiting).
    fn serve(&mut self, for_at_most: std::time::Duration) {
        let deadline = std::time::Instant::now() + for_at_most;
        let mut buf = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let ready = if left.is_zero() {
                self.socket.set_nonblocking(true)
            } else {
                self.socket
                    .set_nonblocking(false)
                    .and_then(|()| self.socket.set_read_timeout(Some(left)))
            };
            if ready.is_err() {
                return;
            }
            let Ok((n, from)) = self.socket.recv_from(&mut buf) else {
                return;
            };
            let Some((name, end)) = dns_question(&buf[..n]) else {
                continue;
            };
            if !self.names.contains(&name) {
                if self.names.len() < DNS_NAMES {
                    self.names.push(name);
                } else if self.others.len() < DNS_OTHERS {
                    self.others.insert(name);
                }
            }
            let _ = self.socket.send_to(&dns_refused(&buf[..end]), from);
        }
    }

    /// The names asked, for the launcher's last words: `a.example, b.example and 2 more`.
    fn asked(&self) -> Option<String> {
        if self.names.is_empty() {
            return None;
        }
        let mut out = self.names.join(", ");
        if !self.others.is_empty() {
            out.push_str(&format!(" and {} more", self.others.len()));
        }
        Some(out)
    }
}

/// A DNS query's first question name (escaped: letters, digits, `-` and `_` as they are,
/// labels joined by `.`, any other byte as `\xNN`) and where its question ends.
fn dns_question(packet: &[u8]) -> Option<(String, usize)> {
    let header = packet.get(..12)?;
    // A query (QR clear) with at least one question.
    if header[2] & 0x80 != 0 || u16::from_be_bytes([header[4], header[5]]) == 0 {
        return None;
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*packet.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 || name.len() > 1024 {
            return None;
        }
        if !name.is_empty() {
            name.push('.');
        }
        for &b in packet.get(at..at + len)? {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                name.push(char::from(b));
            } else {
                name.push_str(&format!("\\x{b:02x}"));
            }
        }
        at += len;
    }
    let end = at + 4; // the type and the class
    if packet.len() < end {
        return None;
    }
    Some((if name.is_empty() { ".".into() } else { name }, end))
}

/// The answer REFUSED to `query` (its header and its question).
fn dns_refused(query: &[u8]) -> Vec<u8> {
    let mut out = query.to_vec();
    out[2] = 0x80 | (query[2] & 0x79); // QR, the opcode and RD kept
    out[3] = 0x05; // REFUSED
    out[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    out
}

/// Bring the loopback interface of the trial's (new) network namespace up, so that the
/// line's DNS queries reach [`Dns`].
#[allow(unsafe_code)]
fn loopback_up() -> std::result::Result<(), Failure> {
    use std::os::fd::AsRawFd;
    let socket = std::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))
        .map_err(step("open a socket to bring the loopback up"))?;
    let fd = socket.as_raw_fd();
    // SAFETY: `ifreq` is plain data (all zeroes is a valid value); both ioctls read and
    // write only that struct, which lives across the calls; the union's `ifru_flags` is
    // the member SIOCGIFFLAGS fills and SIOCSIFFLAGS reads.
    unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) != 0 {
            return Err(step("read the loopback's flags")(std::io::Error::last_os_error()));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &req) != 0 {
            return Err(step("bring the loopback up")(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// In the line's first process (the new PID namespace's), before the old root is detached:
/// a procfs of this PID namespace at the trial's `/proc`.
fn mount_proc(spec: &Spec) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    mount(
        Some("proc"),
        &under(&spec.root, Path::new("/proc")),
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        none,
    )
    .map_err(step("mount the trial's /proc"))
}

/// A child's status as the launcher's own exit code (a signal as 128 + its number, as shells
/// say it).
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
        (None, None) => 1,
    }
}

fn enter_namespaces(network: bool) -> std::result::Result<(), Failure> {
    use nix::sched::{CloneFlags, unshare};
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWPID;
    if !network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(step(
        "enter new user, mount, PID and network namespaces (user namespaces disabled?)",
    ))?;
    // The same ids inside as outside: files keep their owners (git checks them), and the
    // command gains no id it did not have.
    let write = |file: &str, text: String| std::fs::write(file, text).map_err(step(format!("write {file}")));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    Ok(())
}

/// `path` under the new root.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Both modes' start: this mount namespace's mounts made private (nothing propagates back to
/// the host), and a small empty tmpfs at `spec.root` to build the new root on.
fn fresh_root(spec: &Spec, whose: &str) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(step("make the mounts private"))?;
    mount(
        Some("tmpfs"),
        &spec.root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0755,size=4m"),
    )
    .map_err(step(format!("mount the {whose} root")))
}

fn build_root(spec: &Spec) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    fresh_root(spec, "sandbox's")?;
    // The command's /tmp first: paths under /tmp (a work tree there) are bound inside it.
    // A tmpfs of its own: bounded, in memory, gone with the last process of the sandbox.
    let tmp = under(&spec.root, Path::new("/tmp"));
    std::fs::create_dir(&tmp).map_err(step("create /tmp"))?;
    mount(
        Some("tmpfs"),
        &tmp,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(TMP_SIZE),
    )
    .map_err(step("mount /tmp"))?;
    // Parents before children, so that a path inside an already bound one is skipped.
    let mut read: Vec<&PathBuf> = spec.read.iter().filter(|p| p.is_absolute()).collect();
    read.sort_by_key(|p| p.components().count());
    read.dedup();
    let mut bound: Vec<&Path> = Vec::new();
    for path in read {
        if bound.iter().any(|b| path.starts_with(b)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue; // not on this system
        };
        let dest = under(&spec.root, path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(step(format!("create {}", parent.display())))?;
        }
        if meta.file_type().is_symlink() {
            // `/bin -> usr/bin`: the same link, so the path resolves as on the host.
            if std::fs::symlink_metadata(&dest).is_err() {
                let target = std::fs::read_link(path).map_err(step(format!("read {}", path.display())))?;
                std::os::unix::fs::symlink(target, &dest)
                    .map_err(step(format!("link {}", dest.display())))?;
            }
            continue;
        }
        if meta.is_dir() {
            std::fs::create_dir_all(&dest).map_err(step(format!("create {}", dest.display())))?;
        } else if std::fs::symlink_metadata(&dest).is_err() {
            std::fs::File::create(&dest).map_err(step(format!("create {}", dest.display())))?;
        }
        bind(path, &dest, true)?;
        bound.push(path);
    }
    hide(spec, &bound)?;
    // The root itself read-only: nothing can be added beside the allowlist.
    mount(
        none,
        &spec.root,
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        none,
    )
    .map_err(step("make the sandbox's root read-only"))?;
    Ok(())
}

/// The trial's root: an overlay per layer, sealed mounts, read-only file mounts, the devices,
/// the secrets hidden; then the root itself read-only ([`Overlay`]).
fn build_overlay_root(spec: &Spec, overlay: &Overlay, dns: bool) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    fresh_root(spec, "trial's")?;
    for (link, target) in &overlay.links {
        let dest = under(&spec.root, link);
        std::os::unix::fs::symlink(target, &dest).map_err(step(format!("link {}", dest.display())))?;
    }
    let mut bound: Vec<&Path> = Vec::new();
    for (n, layer) in overlay.layers.iter().enumerate() {
        let dest = under(&spec.root, layer);
        if std::fs::create_dir_all(&dest).is_err() {
            continue; // below a sealed mount
        }
        let (upper, work) = overlay_dirs(&overlay.state, n);
        for dir in [&upper, &work] {
            std::fs::create_dir_all(dir).map_err(step(format!("create {}", dir.display())))?;
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={},userxattr,metacopy=off",
            layer.display(),
            upper.display(),
            work.display()
        );
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        if mount(
            Some("overlay"),
            &dest,
            Some("overlay"),
            flags,
            Some(options.as_str()),
        )
        .is_ok()
        {
            bound.push(layer);
        } else {
            seal(&dest).map_err(|f| Failure(format!("seal {}: {f}", layer.display())))?;
        }
    }
    for path in &overlay.sealed {
        let dest = under(&spec.root, path);
        if std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_dir()) {
            seal(&dest).map_err(|f| Failure(format!("seal {}: {f}", path.display())))?;
        }
    }
    for path in &overlay.files {
        let dest = under(&spec.root, path);
        if std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_file()) {
            bind(path, &dest, true)?;
        }
    }
    let dev = under(&spec.root, Path::new("/dev"));
    std::fs::create_dir_all(&dev).map_err(step("create /dev"))?;
    for device in DEVICES {
        let dest = under(&spec.root, Path::new(device));
        std::fs::File::create(&dest).map_err(step(format!("create {device}")))?;
        bind(Path::new(device), &dest, false)?;
    }
    for (name, target) in STDIO_LINKS {
        std::os::unix::fs::symlink(target, dev.join(name)).map_err(step(format!("link /dev/{name}")))?;
    }
    // Pseudo-terminals of the trial's own (a new devpts instance); without it, only no tty.
    let pts = dev.join("pts");
    std::fs::create_dir(&pts).map_err(step("create /dev/pts"))?;
    if mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .is_ok()
    {
        std::os::unix::fs::symlink("pts/ptmx", dev.join("ptmx")).map_err(step("link /dev/ptmx"))?;
    }
    // The trial's own /proc is mounted by the line's first process (see `launch_overlay`).
    std::fs::create_dir_all(under(&spec.root, Path::new("/proc"))).map_err(step("create /proc"))?;
    if dns {
        // The resolver asks the launcher's DNS socket ([`Dns`]). Where the host's
        // /etc/resolv.conf is a link (to /run, which the trial has not), there is none in the
        // trial, and resolvers ask 127.0.0.1 by default.
        let dest = under(&spec.root, Path::new("/etc/resolv.conf"));
        if std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_file()) {
            let conf = overlay.state.join("resolv.conf");
            std::fs::write(&conf, "nameserver 127.0.0.1\n").map_err(step("write the trial's resolv.conf"))?;
            bind(&conf, &dest, true)?;
        }
    }
    hide(spec, &bound)?;
    mount(
        none,
        &spec.root,
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        none,
    )
    .map_err(step("make the trial's root read-only"))?;
    Ok(())
}

/// Cover `dest` with an empty, read-only, mode-0 tmpfs.
fn seal(dest: &Path) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    mount(
        Some("tmpfs"),
        dest,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY,
        Some("size=4k,nr_inodes=1,mode=0"),
    )
    .map_err(step("mount an empty tmpfs"))
}

/// Landlock in the trial: read everything of the new root, write anywhere in the layers (the
/// writes land in the uppers), read and write the devices; TCP off without the network; no
/// signals or abstract sockets out of the sandbox.
fn restrict_overlay(spec: &Spec) -> std::result::Result<(), Failure> {
    use landlock::{ABI, Access, AccessFs, PathBeneath, PathFd, RulesetCreatedAttr, RulesetStatus};
    let abi = ABI::V6;
    let fail = |e: landlock::RulesetError| Failure(format!("cannot restrict the trial with Landlock: {e}"));
    let mut created = landlock_ruleset(spec.network, &fail)?;
    let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> =
        vec![(PathBuf::from("/"), AccessFs::from_read(abi))];
    if let Some(overlay) = &spec.overlay {
        rules.extend(
            overlay
                .layers
                .iter()
                .map(|l| (l.clone(), AccessFs::from_all(abi))),
        );
    }
    rules.extend(
        DEVICES
            .iter()
            .map(|d| (PathBuf::from(d), AccessFs::ReadFile | AccessFs::WriteFile)),
    );
    rules.push((
        PathBuf::from("/dev/pts"),
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev,
    ));
    for (path, access) in rules {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        let Ok(fd) = PathFd::new(&path) else {
            continue; // sealed
        };
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(&fail)?;
    }
    let status = created.restrict_self().map_err(&fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Failure(
            "Landlock is not enabled in this kernel (Linux 5.13 or later with lsm=landlock)".into(),
        ));
    }
    if !status.no_new_privs {
        return Err(Failure("cannot set no_new_privs".into()));
    }
    Ok(())
}

/// A seccomp filter (inherited by everything the line starts): `socket(AF_UNIX, …)` fails with
/// EACCES, so no pathname UNIX socket (an agent under any name) can be reached, and so does
/// `io_uring_setup` (io_uring can open sockets without the `socket` call). `socketpair`
/// stays allowed: it reaches nothing outside.
fn refuse_unix_sockets() -> std::result::Result<(), Failure> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let fail = step("install the trial's seccomp filter");
    let build = || -> std::result::Result<BpfProgram, seccompiler::BackendError> {
        let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?;
        let rules = [
            (libc::SYS_socket, vec![SeccompRule::new(vec![unix])?]),
            (libc::SYS_io_uring_setup, Vec::new()),
        ];
        let arch = TargetArch::try_from(std::env::consts::ARCH)?;
        SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )?
        .try_into()
    };
    let program = build().map_err(fail)?;
    seccompiler::apply_filter(&program).map_err(step("install the trial's seccomp filter"))
}

/// Cover each path of `spec.hide` that lies inside a bound path: an empty read-only
/// directory over a directory, `/dev/null` over anything else (a key, an agent's socket).
fn hide(spec: &Spec, bound: &[&Path]) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    let mut hide: Vec<&PathBuf> = spec.hide.iter().filter(|p| p.is_absolute()).collect();
    hide.sort_by_key(|p| p.components().count());
    hide.dedup();
    let mut hidden: Vec<&Path> = Vec::new();
    for path in hide {
        if !bound.iter().any(|b| path.starts_with(b)) || hidden.iter().any(|h| path.starts_with(h)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let dest = under(&spec.root, path);
        if meta.is_dir() {
            mount(
                Some("tmpfs"),
                &dest,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY,
                Some("size=4k,nr_inodes=1,mode=0"),
            )
            .map_err(step(format!("hide {}", path.display())))?;
        } else if !meta.file_type().is_symlink() {
            bind(Path::new("/dev/null"), &dest, true)
                .map_err(|f| Failure(format!("hide {}: {f}", path.display())))?;
        }
        hidden.push(path);
    }
    Ok(())
}

/// Bind `source` at `dest`, read-only unless `!read_only`. The flags the source's mount
/// already has (noexec, atime) are kept: a user namespace may not clear them.
fn bind(source: &Path, dest: &Path, read_only: bool) -> std::result::Result<(), Failure> {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};
    let none: Option<&str> = None;
    mount(Some(source), dest, none, MsFlags::MS_BIND | MsFlags::MS_REC, none)
        .map_err(step(format!("bind {}", source.display())))?;
    let have = statvfs(source).map(|s| s.flags()).unwrap_or(FsFlags::empty());
    let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID;
    for (fs, ms) in [
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if have.contains(fs) {
            flags |= ms;
        }
    }
    if read_only {
        flags |= MsFlags::MS_RDONLY;
    }
    mount(none, dest, none, flags, none).map_err(step(format!("make {} read-only", source.display())))
}

fn enter_root(spec: &Spec) -> std::result::Result<(), Failure> {
    use nix::mount::{MntFlags, umount2};
    nix::unistd::chdir(&spec.root).map_err(step("enter the sandbox's root"))?;
    // pivot_root(".", "."): the old root is stacked under the new one, then detached
    // (pivot_root(2)), so nothing outside the allowlist stays reachable by any path.
    nix::unistd::pivot_root(".", ".").map_err(step("pivot into the sandbox's root"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(step("detach the old root"))?;
    nix::unistd::chdir("/").map_err(step("enter /"))?;
    nix::unistd::chdir(&spec.cwd).map_err(step(format!("enter {}", spec.cwd.display())))?;
    Ok(())
}

/// The Landlock ruleset both modes start from: every filesystem access handled (each mode
/// then grants its own), TCP bind and connect handled without the network, abstract UNIX
/// sockets and signals scoped to the sandbox.
fn landlock_ruleset(
    network: bool,
    fail: &dyn Fn(landlock::RulesetError) -> Failure,
) -> std::result::Result<landlock::RulesetCreated, Failure> {
    use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, Scope};
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V6))
        .map_err(fail)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(fail)?;
    }
    ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)
}

/// Landlock over the new root: read and run the allowlist, write only `/tmp` and the
/// devices; TCP off with the network; no signals or abstract sockets out of the sandbox.
fn restrict(spec: &Spec) -> std::result::Result<(), Failure> {
    use landlock::{ABI, Access, AccessFs, PathBeneath, PathFd, RulesetCreatedAttr, RulesetStatus};
    let abi = ABI::V6;
    let fail = |e: landlock::RulesetError| Failure(format!("cannot restrict the sandbox with Landlock: {e}"));
    let mut created = landlock_ruleset(spec.network, &fail)?;
    let rule = |path: &Path, access| -> std::result::Result<Option<PathBeneath<PathFd>>, Failure> {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        let fd = PathFd::new(path).map_err(step(format!("open {}", path.display())))?;
        Ok(Some(PathBeneath::new(fd, access)))
    };
    for path in spec
        .read
        .iter()
        .filter(|p| !DEVICES.iter().any(|d| Path::new(d) == p.as_path()))
    {
        if let Some(r) = rule(path, AccessFs::from_read(abi))? {
            created = created.add_rule(r).map_err(&fail)?;
        }
    }
    for device in DEVICES {
        if let Some(r) = rule(Path::new(device), AccessFs::ReadFile | AccessFs::WriteFile)? {
            created = created.add_rule(r).map_err(&fail)?;
        }
    }
    if let Some(r) = rule(Path::new("/tmp"), AccessFs::from_all(abi))? {
        created = created.add_rule(r).map_err(&fail)?;
    }
    let status = created.restrict_self().map_err(&fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(Failure(
            "Landlock is not enabled in this kernel (Linux 5.13 or later with lsm=landlock)".into(),
        ));
    }
    if !status.no_new_privs {
        return Err(Failure("cannot set no_new_privs".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_failure_is_an_error_and_a_command_failing_is_not() {
        use std::os::unix::process::ExitStatusExt;
        let out = |code: i32, stderr: &str| Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let e = setup_failure(&out(125, "guardctl sandbox: cannot pivot: EPERM\n")).unwrap_err();
        assert!(e.causes[0].contains("cannot pivot"), "{e:?}");
        assert!(setup_failure(&out(125, "some tool's own complaint")).is_ok());
        assert!(setup_failure(&out(1, "guardctl sandbox: x")).is_ok());
        assert!(setup_failure(&out(0, "")).is_ok());
    }

    #[test]
    fn the_probe_calls_the_kernel_unable_only_on_the_launchers_own_words() {
        use std::os::unix::process::ExitStatusExt;
        let out = |raw: i32, stderr: &str| Output {
            status: std::process::ExitStatus::from_raw(raw),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        };
        assert_eq!(classify(&out(0, "")), Probe::Ready);
        assert_eq!(
            classify(&out(
                125 << 8,
                "guardctl sandbox: cannot enter namespaces: EPERM\n"
            )),
            Probe::Missing("cannot enter namespaces: EPERM".into())
        );
        // Killed, or another failure: broken, never "run it unsandboxed".
        assert!(matches!(classify(&out(9, "")), Probe::Broken(_)));
        assert!(matches!(
            classify(&out(1 << 8, "guardctl sandbox: x")),
            Probe::Broken(_)
        ));
    }

    #[test]
    fn only_the_defaults_are_default() {
        assert!(Settings::default().is_default());
        assert!(Settings::default().required);
        let open = Settings {
            network: true,
            ..Settings::default()
        };
        assert!(!open.is_default());
    }

    #[test]
    fn paths_land_under_the_new_root() {
        assert_eq!(
            under(Path::new("/r"), Path::new("/usr/bin")),
            Path::new("/r/usr/bin")
        );
    }

    #[test]
    fn a_dns_query_names_its_question_escaped_and_is_refused() {
        let query = [
            &[0x12, 0x34, 0x01, 0x20, 0, 1, 0, 0, 0, 0, 0, 1][..],
            b"\x07example\x03com\x00\x00\x01\x00\x01",
            b"\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00", // an EDNS record
        ]
        .concat();
        let (name, end) = dns_question(&query).unwrap();
        assert_eq!(name, "example.com");
        assert_eq!(end, 12 + 13 + 4);
        let answer = dns_refused(&query[..end]);
        assert_eq!(&answer[..12], &[0x12, 0x34, 0x81, 0x05, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&answer[12..], &query[12..end]);
        let odd = [&query[..12], b"\x03a\x1b.\x00\x00\x01\x00\x01"].concat();
        assert_eq!(dns_question(&odd).unwrap().0, "a\\x1b\\x2e");
        // An answer, a truncated name, no question: not a query.
        let mut answer = query.clone();
        answer[2] |= 0x80;
        assert_eq!(dns_question(&answer), None);
        assert_eq!(dns_question(&query[..20]), None);
        assert_eq!(dns_question(&[0u8; 12]), None);
    }

    #[test]
    fn the_launcher_is_asked_for_only_by_its_word() {
        assert_eq!(launch_if_asked(&["guardctl".into(), "plan".into()]), None);
        assert_eq!(launch_if_asked(&["guardctl".into()]), None);
    }
}
