//! SSHSIG signatures: made by `ssh-keygen -Y sign` (so keys in ssh-agent, passphrase-protected
//! keys and hardware keys work exactly as for git's SSH signing), verified in-process with the
//! `ssh-key` crate.
//!
//! A signature made with an OpenSSH certificate carries the certificate where a plain
//! signature carries the key; the `ssh-key` crate cannot read that, so such a signature is
//! verified here with the certificate's subject key, and the certificate is handed back for
//! the allowed-signers lookup (`cert-authority` lines) to judge.

use super::key::SigningKey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ssh_key::{Certificate, HashAlg, PublicKey, SshSig};
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
    let sig = match SshSig::from_pem(armored.as_bytes()) {
        Ok(sig) => sig,
        Err(e) => match with_subject_key(armored) {
            Some((sig, _)) => sig,
            None => return Err(VerifyError::Malformed(e.to_string())),
        },
    };
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

/// The certificate an armored SSHSIG was made with, if it was made with one (the signature
/// itself is checked by [`verify`]).
pub fn certificate_of(armored: &str) -> Option<Certificate> {
    with_subject_key(armored).map(|(_, cert)| cert)
}

/// An SSHSIG whose public key is a certificate, rewritten to carry the certificate's subject
/// key (what made the signature), with the certificate.
fn with_subject_key(armored: &str) -> Option<(SshSig, Certificate)> {
    let body: String = armored
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    let blob = B64.decode(body).ok()?;
    let rest = blob.strip_prefix(b"SSHSIG")?;
    let (version, rest) = rest.split_at_checked(4)?;
    let (key_blob, tail) = ssh_string(rest)?;
    let (algorithm, _) = ssh_string(key_blob)?;
    if !algorithm.ends_with(b"-cert-v01@openssh.com") {
        return None;
    }
    let cert = Certificate::from_bytes(key_blob).ok()?;
    let subject = PublicKey::from(cert.public_key().clone()).to_bytes().ok()?;
    let mut plain = b"SSHSIG".to_vec();
    plain.extend_from_slice(version);
    plain.extend_from_slice(&u32::try_from(subject.len()).ok()?.to_be_bytes());
    plain.extend_from_slice(&subject);
    plain.extend_from_slice(tail);
    let encoded = B64.encode(&plain);
    let mut pem = String::from("-----BEGIN SSH SIGNATURE-----\n");
    for chunk in encoded.as_bytes().chunks(70) {
        pem.push_str(std::str::from_utf8(chunk).ok()?);
        pem.push('\n');
    }
    pem.push_str("-----END SSH SIGNATURE-----\n");
    Some((SshSig::from_pem(pem.as_bytes()).ok()?, cert))
}

/// One SSH wire-format string (u32 length, bytes) and what follows it.
fn ssh_string(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = b.split_at_checked(4)?;
    let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
    rest.split_at_checked(len)
}

/// `SHA256:<base64>`, the form ssh-keygen prints and DSSE `keyid` carries.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}
