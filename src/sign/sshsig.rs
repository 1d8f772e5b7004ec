//! SSHSIG signatures: made by `ssh-keygen -Y sign` (so keys in ssh-agent, passphrase-protected
//! keys and hardware keys work exactly as for git's SSH signing), verified in-process with the
//! `ssh-key` crate.

use super::key::SigningKey;
use ssh_key::{HashAlg, PublicKey, SshSig};
use std::io::Write;
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("could not run ssh-keygen: {0}")]
    Spawn(std::io::Error),
    #[error("ssh-keygen -Y sign failed: {0}")]
    Failed(String),
    #[error("ssh-keygen produced an unreadable signature: {0}")]
    Garbled(String),
}

/// Sign `data` in `namespace` with `key`, returning the armored signature.
pub fn sign(key: &SigningKey, namespace: &str, data: &[u8]) -> Result<String, SignError> {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-Y", "sign", "-n", namespace, "-f"]).arg(&key.path);
    if key.in_agent {
        // The file holds only the public half: the private key is in ssh-agent.
        cmd.arg("-U");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(SignError::Spawn)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(data).map_err(SignError::Spawn)?;
    }
    let out = child.wait_with_output().map_err(SignError::Spawn)?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.starts_with("Signing data on standard input"))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(SignError::Failed(if msg.is_empty() {
            out.status.to_string()
        } else {
            msg
        }));
    }
    let armored = String::from_utf8(out.stdout).map_err(|e| SignError::Garbled(e.to_string()))?;
    // Check what we hand out: the right key, the right namespace, a valid signature.
    let signer = verify(&armored, namespace, data).map_err(|e| SignError::Garbled(e.to_string()))?;
    if signer.key_data() != key.public.key_data() {
        return Err(SignError::Garbled(
            "signed by a different key than requested".into(),
        ));
    }
    Ok(armored)
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("not an SSH signature: {0}")]
    Malformed(String),
    #[error("signature made for namespace `{found}`, expected `{expected}`")]
    Namespace { found: String, expected: String },
    #[error("signature does not match the signed bytes")]
    Invalid,
}

/// Verify an armored SSHSIG over `data` in `namespace`; returns the public key that signed.
/// Who that key belongs to is the allowed-signers file's business, not this function's.
pub fn verify(armored: &str, namespace: &str, data: &[u8]) -> Result<PublicKey, VerifyError> {
    let sig = SshSig::from_pem(armored.as_bytes()).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    if sig.namespace() != namespace {
        return Err(VerifyError::Namespace {
            found: sig.namespace().to_string(),
            expected: namespace.to_string(),
        });
    }
    let key = PublicKey::from(sig.public_key().clone());
    key.verify(namespace, data, &sig)
        .map_err(|_| VerifyError::Invalid)?;
    Ok(key)
}

/// `SHA256:<base64>`, the form ssh-keygen prints and DSSE `keyid` carries.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}
