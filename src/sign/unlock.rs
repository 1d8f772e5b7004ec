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

use super::key::SigningKey;
use crate::error::{Error, Kind, Result};
use crate::process::{Process, Running};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A command's private agent holding its unlocked key.
pub struct Unlocked {
    socket: PathBuf,
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
    let started = std::time::Instant::now();
    while !socket.exists() {
        if started.elapsed() > std::time::Duration::from_secs(5) {
            watchdog.kill();
            return Err(Error::internal(
                "ssh-agent did not start: cannot unlock the signing key",
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let unlocked = Unlocked {
        socket,
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
