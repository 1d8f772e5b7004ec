//! Whether a key can sign right now without anyone typing anything: the private half in
//! ssh-agent (`ssh-add -L`), or a private key file without a passphrase. Asked before work
//! starts, so that "no agent", "key not in the agent" and "passphrase needed" fail at once,
//! with what to do, instead of as ssh-keygen's words after planning (or as a passphrase prompt
//! that hangs an agent or a CI job).
//!
//! Not here: signing itself (`sshsig::sign`), which key is in use (`key::resolve`).

use super::key::SigningKey;
use crate::process::Process;

/// What stands between the key and a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// A private key file without a passphrase, or the key is in the agent.
    Ready,
    /// A passphrase-protected key, not in the agent: ssh-keygen will ask on the terminal.
    WillPrompt,
    /// The private half must come from ssh-agent, and `SSH_AUTH_SOCK` names none.
    NoAgent,
    /// ssh-agent cannot be reached (a stale socket): `ssh-add`'s words.
    AgentUnreachable(String),
    /// The agent runs but does not hold this key.
    NotInAgent,
    /// A passphrase-protected key not in the agent, where no one may be asked (no terminal,
    /// `--json`, or CI).
    PassphraseNeeded,
    /// A private key file its group or others may read: ssh-keygen refuses to sign with one
    /// ("UNPROTECTED PRIVATE KEY FILE!"), and so does guardctl.
    Unprotected,
}

impl Readiness {
    /// For `whoami`: where the signature will come from, or why it cannot.
    pub fn describe(&self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::WillPrompt => "passphrase-protected: ssh-keygen will ask for the passphrase",
            Readiness::NoAgent => {
                "its private half must be in ssh-agent, but no agent is running (SSH_AUTH_SOCK is not set)"
            }
            Readiness::AgentUnreachable(_) => {
                "its private half must be in ssh-agent, but the agent cannot be reached"
            }
            Readiness::NotInAgent => "its private half must be in ssh-agent, but the agent does not hold it",
            Readiness::PassphraseNeeded => {
                "passphrase-protected and not in ssh-agent, and guardctl does not prompt here"
            }
            Readiness::Unprotected => {
                "its private key file may be read by others, and ssh-keygen signs with no such file"
            }
        }
    }

    /// What to do about it.
    pub fn hint(&self, key: &SigningKey) -> String {
        let private = if key.in_agent {
            key.path
                .to_str()
                .and_then(|p| p.strip_suffix(".pub"))
                .unwrap_or("<private key>")
                .to_string()
        } else {
            key.path.display().to_string()
        };
        match self {
            Readiness::NoAgent | Readiness::AgentUnreachable(_) => {
                format!("start an agent and add the key: eval \"$(ssh-agent)\" && ssh-add {private}")
            }
            Readiness::NotInAgent | Readiness::PassphraseNeeded => {
                format!("add the key to your agent: ssh-add {private}")
            }
            Readiness::Unprotected => format!(
                "make it readable by you alone: chmod 600 {private} (and replace the key if others may have read it)"
            ),
            Readiness::Ready | Readiness::WillPrompt => String::new(),
        }
    }
}

/// How `key` would sign now. `may_prompt`: a person may be asked (a terminal, no `--json`,
/// not CI). Runs `ssh-add -L` only for keys that need the agent (or may).
pub fn readiness(key: &SigningKey, may_prompt: bool) -> Readiness {
    if !key.in_agent && !key.encrypted {
        // A plain private key file (a certificate's path is the public certificate).
        let unprotected = key.certificate.is_none()
            && std::fs::metadata(&key.path).is_ok_and(|m| super::sshsig::others_may_read(&m));
        return if unprotected {
            Readiness::Unprotected
        } else {
            Readiness::Ready
        };
    }
    let listed = agent_keys();
    if key.in_agent {
        return match listed {
            Err(r) => r,
            Ok(keys) if holds(&keys, key) => Readiness::Ready,
            Ok(_) => Readiness::NotInAgent,
        };
    }
    // A passphrase-protected file: ssh-keygen uses the agent's copy when it has one.
    match listed {
        Ok(keys) if holds(&keys, key) => Readiness::Ready,
        _ if may_prompt => Readiness::WillPrompt,
        _ => Readiness::PassphraseNeeded,
    }
}

/// The keys ssh-agent holds, as `<type> <base64> [comment]` lines (none when there is no
/// agent or it cannot be reached): what a user with no configured key could sign with.
pub fn listed_keys() -> Vec<String> {
    if agent_keys().is_err() {
        return Vec::new();
    }
    match Process::new("ssh-add").arg("-L").output(None) {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| ssh_key::PublicKey::from_openssh(l.trim()).is_ok())
            .map(|l| l.trim().to_string())
            .collect(),
        _ => Vec::new(),
    }
}

fn holds(keys: &[ssh_key::PublicKey], key: &SigningKey) -> bool {
    keys.iter().any(|k| k.key_data() == key.public.key_data())
}

/// The public keys the agent holds (`ssh-add -L`: 0 listed, 1 none, 2 no agent).
fn agent_keys() -> Result<Vec<ssh_key::PublicKey>, Readiness> {
    if std::env::var_os("SSH_AUTH_SOCK").is_none_or(|s| s.is_empty()) {
        return Err(Readiness::NoAgent);
    }
    let out = Process::new("ssh-add").arg("-L").output(None).map_err(|e| {
        let causes: String = e.causes.iter().map(|c| format!(": {c}")).collect();
        Readiness::AgentUnreachable(format!("{}{causes}", e.message))
    })?;
    match out.status.code() {
        Some(0) | Some(1) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| ssh_key::PublicKey::from_openssh(l.trim()).ok())
            .collect()),
        _ => Err(Readiness::AgentUnreachable(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )),
    }
}
