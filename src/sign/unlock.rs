//! One passphrase prompt per command. A command that signs more than once (`approve`: the
//! approval and its audit entry; `apply`: its records, receipt and audit entries) with a
//! passphrase-protected key that no ssh-agent holds would make ssh-keygen ask once per
//! signature, and a second prompt that fails leaves the command half done. Instead, before
//! its first write, such a command starts an ssh-agent of its own, has `ssh-add` ask for the
//! passphrase once, and signs everything through that agent ([`super::sshsig::sign`] points
//! ssh-keygen at it).
//!
//! The agent lives no longer than the command: its socket is in a 0700 directory under
//! guardctl's data directory (which the preview sandbox hides, like every agent socket); it
//! runs as `ssh-agent -a SOCKET cat`, so that the agent exits (within its 10-second parent
//! check) as soon as `cat` does, and `cat` exits when its stdin, a pipe only this process
//! holds, closes: on drop, or when guardctl dies however it dies. On drop the key is also
//! removed from the agent at once (`ssh-add -D`).
//!
//! The programs an apply runs unsandboxed, as the same user (an exec plan's command and its
//! before-image command), could reach that socket (its directory keeps out other users, not
//! this one) and sign with the unlocked key. While one runs, the agent is locked
//! ([`Unlocked::suspend`]): with a random password, sent over a connection opened before any
//! such program ran (so a socket replaced meanwhile never receives it), and unlocked over the
//! same connection once the program has exited. What the program leaves running after it
//! exits is not covered: it could use the agent while the apply signs its result.

use super::key::SigningKey;
use crate::error::{Error, Kind, Result};
use crate::process::{Process, Running};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// ssh-agent protocol (draft-miller-ssh-agent): lock and unlock requests, and the answers.
const SSH_AGENTC_LOCK: u8 = 22;
const SSH_AGENTC_UNLOCK: u8 = 23;
const SSH_AGENT_SUCCESS: u8 = 6;

/// A command's private agent holding its unlocked key.
pub struct Unlocked {
    socket: PathBuf,
    /// A connection to the agent, opened as it started: locking and unlocking go through it.
    control: Mutex<UnixStream>,
    watchdog: Mutex<Running>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Unlocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unlocked").field("socket", &self.socket).finish()
    }
}

impl Unlocked {
    /// The agent's socket, for `SSH_AUTH_SOCK`.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Lock the agent (it then lists and signs nothing) until [`Suspended::resume`]: for the
    /// time a program runs that must not sign with this key.
    pub fn suspend(&self) -> Result<Suspended<'_>> {
        let password = crate::plan::envelope::hex(&crate::fsutil::random_bytes::<32>()?);
        self.request(SSH_AGENTC_LOCK, password.as_bytes())
            .map_err(|e| Error::internal("cannot lock the command's ssh-agent").caused_by(e))?;
        Ok(Suspended {
            unlocked: self,
            password: Some(password),
        })
    }

    /// Send one request with a string argument over the control connection; `Ok` when the
    /// agent answers success.
    fn request(&self, kind: u8, arg: &[u8]) -> std::io::Result<()> {
        let bad = |what: &str| std::io::Error::other(what.to_string());
        let mut conn = self
            .control
            .lock()
            .map_err(|_| bad("the agent connection is poisoned"))?;
        let arg_len = u32::try_from(arg.len()).map_err(|_| bad("argument too long"))?;
        let mut msg = Vec::with_capacity(9 + arg.len());
        msg.extend_from_slice(&(arg_len + 5).to_be_bytes());
        msg.push(kind);
        msg.extend_from_slice(&arg_len.to_be_bytes());
        msg.extend_from_slice(arg);
        conn.write_all(&msg)?;
        let mut len = [0u8; 4];
        conn.read_exact(&mut len)?;
        let len = u32::from_be_bytes(len) as usize;
        if len == 0 || len > 4096 {
            return Err(bad("malformed answer from ssh-agent"));
        }
        let mut answer = vec![0u8; len];
        conn.read_exact(&mut answer)?;
        if answer[0] == SSH_AGENT_SUCCESS {
            Ok(())
        } else {
            Err(bad("ssh-agent refused"))
        }
    }
}

/// The agent locked by [`Unlocked::suspend`]; unlocked by [`Suspended::resume`], or (best
/// effort) when dropped.
pub struct Suspended<'a> {
    unlocked: &'a Unlocked,
    password: Option<String>,
}

impl Suspended<'_> {
    /// Unlock the agent again: the key signs for this command once more.
    pub fn resume(mut self) -> Result<()> {
        match self.password.take() {
            Some(p) => self
                .unlocked
                .request(SSH_AGENTC_UNLOCK, p.as_bytes())
                .map_err(|e| Error::internal("cannot unlock the command's ssh-agent").caused_by(e)),
            None => Ok(()),
        }
    }
}

impl Drop for Suspended<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.password.take() {
            let _ = self.unlocked.request(SSH_AGENTC_UNLOCK, p.as_bytes());
        }
    }
}

impl Drop for Unlocked {
    fn drop(&mut self) {
        let _ = Process::new("ssh-add")
            .arg("-D")
            .env("SSH_AUTH_SOCK", &self.socket)
            .output(None);
        if let Ok(mut w) = self.watchdog.lock() {
            w.kill();
        }
    }
}

/// Start a private agent in `dir_in` and add `key` to it, `ssh-add` asking for the passphrase
/// on the terminal (once; it asks again after a wrong one, and gives up on an empty one).
pub fn unlock(key: &SigningKey, dir_in: &Path) -> Result<Unlocked> {
    std::fs::create_dir_all(dir_in).map_err(Error::io("create", dir_in))?;
    let dir = tempfile::Builder::new()
        .prefix("unlock-")
        .tempdir_in(dir_in)
        .map_err(Error::io("create a private directory in", dir_in))?;
    let socket = dir.path().join("agent.sock");
    let mut watchdog = Process::new("ssh-agent")
        .arg("-a")
        .arg(&socket)
        .arg("cat")
        .env_remove("SSH_AUTH_SOCK")
        .spawn(true)?;
    // The agent is up once its socket accepts a connection; this one, opened before any
    // other program can have replaced the socket, is the one locking goes through.
    let started = std::time::Instant::now();
    let control = loop {
        match UnixStream::connect(&socket) {
            Ok(c) => break c,
            Err(e) if started.elapsed() > std::time::Duration::from_secs(5) => {
                watchdog.kill();
                return Err(
                    Error::internal("ssh-agent did not start: cannot unlock the signing key").caused_by(e),
                );
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    };
    let unlocked = Unlocked {
        socket,
        control: Mutex::new(control),
        watchdog: Mutex::new(watchdog),
        _dir: dir,
    };
    let out = Process::new("ssh-add")
        .arg(&key.path)
        .env("SSH_AUTH_SOCK", &unlocked.socket)
        .on_terminal()?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(Error::new(
            Kind::Declined,
            format!("the signing key {} was not unlocked: nothing was signed or changed", key.path.display()),
        )
        .caused_by(crate::text::safe(&why))
        .with_hint("run the command again and enter the key's passphrase, or add the key to your ssh-agent first (ssh-add)"));
    }
    Ok(unlocked)
}
