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

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("{0}")]
    Spawn(crate::error::Error),
    #[error("ssh-keygen -Y sign failed: {0}")]
    Failed(String),
    #[error("ssh-keygen produced an unreadable signature: {0}")]
    Garbled(String),
}

/// Sign `data` in `namespace` with `key`, returning the armored signature.
pub fn sign(key: &SigningKey, namespace: &str, data: &[u8]) -> Result<String, SignError> {
    if let Some(armored) = sign_in_process(key, namespace, data) {
        return Ok(armored);
    }
    let mut cmd = crate::process::Process::new("ssh-keygen")
        .args(["-Y", "sign", "-n", namespace, "-f"])
        .arg(&key.path);
    if key.in_agent {
        // The file holds only the public half: the private key is in ssh-agent.
        cmd = cmd.arg("-U");
    }
    if let Some(unlocked) = &key.unlocked {
        // The command's own agent holds the key (unlocked once): ssh-keygen signs with the
        // agent's copy of a key file it is given, without asking for the passphrase again.
        cmd = cmd.env("SSH_AUTH_SOCK", unlocked.socket());
    }
    // The data (a plan's PAE bytes: megabytes) goes in while the signature comes out, and
    // is hashed here meanwhile, on the other core, for the check below (what ssh-keygen
    // signs is the namespace and that hash: `ssh-keygen -Y sign` uses SHA-512).
    let (out, digest) = std::thread::scope(|s| {
        let digest = s.spawn(|| <sha2::Sha512 as sha2::Digest>::digest(data));
        let out = cmd.output(Some(data));
        (out, digest.join())
    });
    let out = out.map_err(SignError::Spawn)?;
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
    let signer = match digest {
        Ok(digest) => verify_sha512(&armored, namespace, &digest, data),
        Err(_) => verify(&armored, namespace, data),
    }
    .map_err(|e| SignError::Garbled(e.to_string()))?;
    if signer.key_data() != key.public.key_data() {
        return Err(SignError::Garbled(
            "signed by a different key than requested".into(),
        ));
    }
    Ok(armored)
}

/// The signature `ssh-keygen -Y sign` would make, made here where that is plain: a private
/// key file without a passphrase, of a kind the `ssh-key` crate signs with (Ed25519, ECDSA
/// P-256/P-384). Starting ssh-keygen was a fixed 7-8 ms of every plan, approval and apply,
/// a fifth of a plan of 5,000 branches. Anything else (ssh-agent, a passphrase, a
/// certificate, RSA, a hardware key, a file that will not parse) is `None`: ssh-keygen signs,
/// with its own words for what is wrong. The key is read when signing and dropped (zeroed by
/// the crate) when done; an Ed25519 signature is the very bytes ssh-keygen makes.
fn sign_in_process(key: &SigningKey, namespace: &str, data: &[u8]) -> Option<String> {
    if key.in_agent || key.encrypted || key.certificate.is_some() || key.unlocked.is_some() {
        return None;
    }
    let private = read_plain_key_file(&key.path)?;
    let supported = matches!(
        private.algorithm(),
        ssh_key::Algorithm::Ed25519 | ssh_key::Algorithm::Ecdsa { .. }
    );
    if private.is_encrypted() || !supported || private.public_key().key_data() != key.public.key_data() {
        return None;
    }
    // What SSHSIG signs is the namespace and the data's SHA-512 (PROTOCOL.sshsig): the data
    // is hashed once, for the signature and for its check (a plan of 50,000 branches signs
    // 17 MB; `SshSig::sign` would hash it again).
    let digest = <sha2::Sha512 as sha2::Digest>::digest(data);
    let signed = sha512_signed_data(namespace, &[], &digest)?;
    let signature = signature::Signer::try_sign(private.key_data(), &signed).ok()?;
    let public = private.public_key().key_data().clone();
    let sig = SshSig::new(public, namespace, HashAlg::Sha512, signature).ok()?;
    let armored = sig.to_pem(ssh_key::LineEnding::LF).ok()?;
    // What ssh-keygen's would be checked for: the right key, a valid signature.
    let signer = verify_sha512(&armored, namespace, &digest, data).ok()?;
    (signer.key_data() == key.public.key_data()).then_some(armored)
}

/// ssh-keygen's rule for a private key file (`sshkey_perm_ok`): the user's own file must not
/// grant its group or others any access.
pub fn others_may_read(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    m.uid() == nix::unistd::getuid().as_raw() && m.mode() & 0o077 != 0
}

/// The private key file at `path`, read as ssh-keygen reads one it would sign with, or `None`
/// (ssh-keygen then signs, or refuses in its own words): a regular file of at most 1 MiB
/// (not a FIFO, a device or a process substitution, which would block or never end) that,
/// when it is the user's own, no one else may read. ssh-keygen ignores such a key file
/// ("UNPROTECTED PRIVATE KEY FILE!"); signing with it here would quietly accept a key that
/// is in a shared directory, a checkout or a world-readable home. Checked on the open file,
/// so a file swapped after the check is not the one read. The bytes are zeroed once parsed.
fn read_plain_key_file(path: &std::path::Path) -> Option<ssh_key::PrivateKey> {
    use std::io::Read;
    const MAX: u64 = 1 << 20;
    let plain = |m: &std::fs::Metadata| m.is_file() && m.len() <= MAX && !others_may_read(m);
    // Before opening: opening a FIFO waits for a writer.
    if !plain(&std::fs::metadata(path).ok()?) {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !plain(&meta) {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    let read = file.take(MAX + 1).read_to_end(&mut bytes);
    let private = match read {
        Ok(n) if n as u64 <= MAX => ssh_key::PrivateKey::from_openssh(&bytes).ok(),
        _ => None,
    };
    bytes.fill(0);
    std::hint::black_box(&bytes);
    private
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
    let sig = parse(armored, namespace)?;
    let key = PublicKey::from(sig.public_key().clone());
    key.verify(namespace, data, &sig)
        .map_err(|_| VerifyError::Invalid)?;
    Ok(key)
}

/// [`verify`] of `pieces` one after the other, without joining them where the signature is
/// over SHA-512 (every signature ssh-keygen and guardctl make): a plan's signed bytes are
/// megabytes, and at 50,000 branches every copy of them cost `show` thousands of page
/// faults.
pub fn verify_pieces(armored: &str, namespace: &str, pieces: &[&[u8]]) -> Result<PublicKey, VerifyError> {
    let sig = parse(armored, namespace)?;
    if sig.hash_alg() != HashAlg::Sha512 {
        return verify(armored, namespace, &pieces.concat());
    }
    let mut digest = <sha2::Sha512 as sha2::Digest>::new();
    for piece in pieces {
        sha2::Digest::update(&mut digest, piece);
    }
    // `data` is read only for a signature over another hash, which this one is not.
    verify_sha512(armored, namespace, &sha2::Digest::finalize(digest), &[])
}

/// [`verify`], given `data`'s SHA-512 digest already: what a signature with SHA-512 covers
/// is the namespace and that digest (PROTOCOL.sshsig), so `data` is not hashed again. A
/// signature over another hash is checked over `data` by [`verify`].
fn verify_sha512(
    armored: &str,
    namespace: &str,
    digest: &[u8],
    data: &[u8],
) -> Result<PublicKey, VerifyError> {
    let sig = parse(armored, namespace)?;
    if sig.hash_alg() != HashAlg::Sha512 {
        return verify(armored, namespace, data);
    }
    let signed = sha512_signed_data(namespace, sig.reserved(), digest).ok_or(VerifyError::Invalid)?;
    signature::Verifier::verify(sig.public_key(), &signed, sig.signature())
        .map_err(|_| VerifyError::Invalid)?;
    Ok(PublicKey::from(sig.public_key().clone()))
}

/// The bytes an SSHSIG over SHA-512 signs (PROTOCOL.sshsig): the magic, the namespace, the
/// reserved field, the hash's name and the data's digest, each field length-prefixed.
fn sha512_signed_data(namespace: &str, reserved: &[u8], digest: &[u8]) -> Option<Vec<u8>> {
    let mut signed = b"SSHSIG".to_vec();
    for field in [namespace.as_bytes(), reserved, b"sha512", digest] {
        signed.extend_from_slice(&u32::try_from(field.len()).ok()?.to_be_bytes());
        signed.extend_from_slice(field);
    }
    Some(signed)
}

/// An armored SSHSIG (one made with a certificate carries the certificate's subject key, see
/// [`with_subject_key`]) made in `namespace`.
fn parse(armored: &str, namespace: &str) -> Result<SshSig, VerifyError> {
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
    Ok(sig)
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
    let cert = certificate(key_blob)?;
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

/// A certificate from its wire encoding, returned only when the signature of the CA it names
/// verifies over exactly these bytes (whether that CA is trusted is the allowed-signers
/// lookup's business). A certificate valid "forever" (what `ssh-keygen -s` makes without `-V`:
/// `valid_before` = 2^64-1) is read with `valid_before` = `i64::MAX` seconds, which the `ssh-key`
/// crate can represent; its signature is still checked over the original bytes.
pub fn certificate(blob: &[u8]) -> Option<Certificate> {
    let layout = cert_layout(blob)?;
    let mut readable = blob.to_vec();
    if blob.get(layout.valid_before..layout.valid_before + 8)? == [0xff; 8] {
        readable[layout.valid_before..layout.valid_before + 8]
            .copy_from_slice(&(i64::MAX as u64).to_be_bytes());
    }
    let cert = Certificate::from_bytes(&readable).ok()?;
    let ca = cert.signature_key();
    signature::Verifier::verify(ca, &blob[..layout.signed_end], cert.signature()).ok()?;
    Some(cert)
}

/// Where a certificate's `valid_before` field starts and its CA-signed part ends
/// (PROTOCOL.certkeys): the key fields differ by algorithm.
struct CertLayout {
    valid_before: usize,
    signed_end: usize,
}

fn cert_layout(blob: &[u8]) -> Option<CertLayout> {
    let (algorithm, mut rest) = ssh_string(blob)?;
    let key_fields = match std::str::from_utf8(algorithm).ok()? {
        "ssh-ed25519-cert-v01@openssh.com" => 1,
        "ssh-rsa-cert-v01@openssh.com"
        | "sk-ssh-ed25519-cert-v01@openssh.com"
        | "ecdsa-sha2-nistp256-cert-v01@openssh.com"
        | "ecdsa-sha2-nistp384-cert-v01@openssh.com"
        | "ecdsa-sha2-nistp521-cert-v01@openssh.com" => 2,
        "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com" => 3,
        "ssh-dss-cert-v01@openssh.com" => 4,
        _ => return None,
    };
    // nonce, then the key's own fields
    for _ in 0..1 + key_fields {
        rest = ssh_string(rest)?.1;
    }
    rest = rest.get(8 + 4..)?; // serial, type
    rest = ssh_string(rest)?.1; // key id
    rest = ssh_string(rest)?.1; // valid principals
    rest = rest.get(8..)?; // valid after
    let valid_before = blob.len() - rest.len();
    rest = rest.get(8..)?;
    for _ in 0..4 {
        // critical options, extensions, reserved, signature key
        rest = ssh_string(rest)?.1;
    }
    let signed_end = blob.len() - rest.len();
    let (_, tail) = ssh_string(rest)?; // signature
    tail.is_empty().then_some(CertLayout {
        valid_before,
        signed_end,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    fn keygen(dir: &Path, args: &[&str]) {
        let out = Command::new("ssh-keygen")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn sign_with(path: &Path, data: &[u8]) -> String {
        let key = super::super::key::load(path, super::super::key::KeySource::Flag).unwrap();
        sign(&key, "guardctl-approval", data).unwrap()
    }

    /// ssh-keygen's output, for comparison with what `sign` makes in-process.
    fn keygen_sign(key: &Path, namespace: &str, data: &[u8]) -> String {
        use std::io::Write;
        let mut child = Command::new("ssh-keygen")
            .args(["-q", "-Y", "sign", "-n", namespace, "-f"])
            .arg(key)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(data).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_plain_key_file_signs_in_process_exactly_as_ssh_keygen_and_ssh_keygen_verifies_it() {
        let dir = tempfile::tempdir().unwrap();
        keygen(
            dir.path(),
            &["-q", "-t", "ed25519", "-N", "", "-C", "a@x", "-f", "ed"],
        );
        keygen(
            dir.path(),
            &[
                "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "a@x", "-f", "ec",
            ],
        );
        let data = b"a plan's bytes\n".repeat(500);
        for name in ["ed", "ec"] {
            let path = dir.path().join(name);
            let key = super::super::key::load(&path, super::super::key::KeySource::Flag).unwrap();
            let ours = sign_in_process(&key, "guardctl-plan", &data).expect("signed in-process");
            assert_eq!(sign(&key, "guardctl-plan", &data).unwrap().len(), ours.len());
            if name == "ed" {
                // Ed25519 is deterministic: the bytes ssh-keygen writes, armour included.
                assert_eq!(ours, keygen_sign(&path, "guardctl-plan", &data));
            }
            let pubkey = std::fs::read_to_string(dir.path().join(format!("{name}.pub"))).unwrap();
            let signers = dir.path().join("signers");
            std::fs::write(&signers, format!("a@x {pubkey}")).unwrap();
            std::fs::write(dir.path().join("sig"), &ours).unwrap();
            std::fs::write(dir.path().join("data"), &data).unwrap();
            let ok = Command::new("sh")
                .current_dir(dir.path())
                .args([
                    "-c",
                    "ssh-keygen -Y verify -f signers -I a@x -n guardctl-plan -s sig < data",
                ])
                .output()
                .unwrap();
            assert!(
                ok.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&ok.stderr)
            );
        }
    }

    #[test]
    fn keys_ssh_keygen_must_sign_with_are_not_signed_in_process() {
        let dir = tempfile::tempdir().unwrap();
        keygen(
            dir.path(),
            &["-q", "-t", "ed25519", "-N", "secret", "-f", "locked"],
        );
        keygen(
            dir.path(),
            &["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", "rsa"],
        );
        keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", "ca"]);
        keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", "user"]);
        keygen(
            dir.path(),
            &["-q", "-s", "ca", "-I", "u", "-n", "bob@x", "user.pub"],
        );
        for name in ["locked", "rsa", "user-cert.pub", "user.pub"] {
            let key = super::super::key::load(&dir.path().join(name), super::super::key::KeySource::Flag);
            if let Ok(key) = key {
                assert!(sign_in_process(&key, "guardctl-plan", b"x").is_none(), "{name}");
            }
        }
        // A key file swapped for another after it was loaded: not the key asked for.
        let key =
            super::super::key::load(&dir.path().join("user"), super::super::key::KeySource::Flag).unwrap();
        std::fs::copy(dir.path().join("ca"), dir.path().join("user")).unwrap();
        assert!(sign_in_process(&key, "guardctl-plan", b"x").is_none());
    }

    /// Attack on the in-process path: ssh-keygen refuses a key file of the user's that others
    /// may read ("UNPROTECTED PRIVATE KEY FILE!"), and the in-process path must not quietly
    /// sign with one; nor may it read what is not a regular file (a FIFO would block it).
    #[test]
    fn a_key_file_others_may_read_is_not_signed_in_process_and_ssh_keygen_refuses_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", "ed"]);
        keygen(
            dir.path(),
            &["-q", "-t", "ecdsa", "-b", "384", "-N", "", "-f", "ec"],
        );
        for name in ["ed", "ec"] {
            let path = dir.path().join(name);
            let key = super::super::key::load(&path, super::super::key::KeySource::Flag).unwrap();
            for mode in [0o644, 0o640, 0o604, 0o700 | 0o004] {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                assert!(
                    sign_in_process(&key, "guardctl-plan", b"x").is_none(),
                    "{name} {mode:o}"
                );
                let err = sign(&key, "guardctl-plan", b"x").unwrap_err().to_string();
                assert!(
                    err.contains("UNPROTECTED PRIVATE KEY FILE"),
                    "{name} {mode:o}: {err}"
                );
            }
            for mode in [0o600, 0o400] {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                assert!(
                    sign_in_process(&key, "guardctl-plan", b"x").is_some(),
                    "{name} {mode:o}"
                );
            }
        }
        // The loaded key's file replaced by a FIFO: not read here (it would wait for a writer).
        let path = dir.path().join("ed");
        let key = super::super::key::load(&path, super::super::key::KeySource::Flag).unwrap();
        std::fs::remove_file(&path).unwrap();
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(sign_in_process(&key, "guardctl-plan", b"x").is_none());
    }

    /// ECDSA signatures made in-process carry r and s as SSH mpints (a leading zero byte
    /// when the high bit is set, none when the value is shorter): ssh-keygen -Y verify
    /// accepts every one, on both curves, over many messages (so both cases occur).
    #[test]
    fn ecdsa_signatures_made_in_process_all_verify_with_ssh_keygen() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bits) in [("p256", "256"), ("p384", "384")] {
            // A fresh key, one the crate parses: about one in 256 has a private scalar
            // OpenSSH writes short, which ssh-keygen signs with (the next test).
            loop {
                keygen(
                    dir.path(),
                    &["-q", "-t", "ecdsa", "-b", bits, "-N", "", "-C", "a@x", "-f", name],
                );
                let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
                if ssh_key::PrivateKey::from_openssh(&text).is_ok() {
                    break;
                }
                std::fs::remove_file(dir.path().join(name)).unwrap();
                std::fs::remove_file(dir.path().join(format!("{name}.pub"))).unwrap();
            }
            let key =
                super::super::key::load(&dir.path().join(name), super::super::key::KeySource::Flag).unwrap();
            let pubkey = std::fs::read_to_string(dir.path().join(format!("{name}.pub"))).unwrap();
            std::fs::write(
                dir.path().join(format!("{name}.signers")),
                format!("a@x {pubkey}"),
            )
            .unwrap();
            let mut script = String::from("set -e\n");
            for i in 0..40 {
                let data = format!("message {i}\n");
                let sig = sign_in_process(&key, "guardctl-plan", data.as_bytes()).expect("in-process");
                std::fs::write(dir.path().join(format!("{name}.{i}.sig")), &sig).unwrap();
                std::fs::write(dir.path().join(format!("{name}.{i}")), &data).unwrap();
                script += &format!(
                    "ssh-keygen -Y verify -f {name}.signers -I a@x -n guardctl-plan \
                     -s {name}.{i}.sig < {name}.{i} >/dev/null\n"
                );
            }
            let out = Command::new("sh")
                .current_dir(dir.path())
                .args(["-c", &script])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// fixtures/keys/dave_ecdsa_p384: a P-384 key whose private scalar OpenSSH wrote in 47
    /// bytes (it begins with a zero byte). The crate refuses the file; guardctl used to call
    /// it "not an OpenSSH private key", one fresh ECDSA key in 256.
    #[test]
    fn an_ecdsa_key_the_crate_cannot_parse_loads_from_its_header_and_signs_through_ssh_keygen() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/keys");
        let text = std::fs::read_to_string(fixtures.join("dave_ecdsa_p384")).unwrap();
        assert!(
            ssh_key::PrivateKey::from_openssh(&text).is_err(),
            "the fixture must be one the crate refuses"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dave");
        std::fs::write(&path, &text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let key = super::super::key::load(&path, super::super::key::KeySource::Flag).unwrap();
        let public = std::fs::read_to_string(fixtures.join("dave_ecdsa_p384.pub")).unwrap();
        assert_eq!(
            key.public.key_data(),
            PublicKey::from_openssh(public.trim()).unwrap().key_data()
        );
        assert!(!key.in_agent && !key.encrypted);
        assert!(sign_in_process(&key, "guardctl-plan", b"x").is_none());
        let sig = sign(&key, "guardctl-plan", b"data\n").unwrap();
        std::fs::write(dir.path().join("signers"), format!("d@x {public}")).unwrap();
        std::fs::write(dir.path().join("sig"), &sig).unwrap();
        std::fs::write(dir.path().join("data"), "data\n").unwrap();
        let out = Command::new("sh")
            .current_dir(dir.path())
            .args([
                "-c",
                "ssh-keygen -Y verify -f signers -I d@x -n guardctl-plan -s sig < data",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn a_signature_checked_by_its_digest_is_judged_as_over_the_data() {
        let dir = tempfile::tempdir().unwrap();
        keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", "k"]);
        let data = b"a plan's bytes".repeat(1000);
        let armored = sign_with(&dir.path().join("k"), &data);
        let digest = <sha2::Sha512 as sha2::Digest>::digest(&data);
        let by_data = verify(&armored, "guardctl-approval", &data).unwrap();
        let by_digest = verify_sha512(&armored, "guardctl-approval", &digest, &data).unwrap();
        assert_eq!(by_data, by_digest);
        let other = <sha2::Sha512 as sha2::Digest>::digest(b"other bytes");
        assert_eq!(
            verify_sha512(&armored, "guardctl-approval", &other, &data),
            Err(VerifyError::Invalid)
        );
        assert!(matches!(
            verify_sha512(&armored, "guardctl-plan", &digest, &data),
            Err(VerifyError::Namespace { .. })
        ));
    }

    #[test]
    fn a_signature_checked_over_pieces_is_judged_as_over_their_concatenation() {
        let dir = tempfile::tempdir().unwrap();
        keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", "k"]);
        let data = b"DSSEv1 4 type 9000 "
            .iter()
            .chain(&b"a plan's bytes".repeat(600))
            .copied()
            .collect::<Vec<u8>>();
        let armored = sign_with(&dir.path().join("k"), &data);
        let whole = verify(&armored, "guardctl-approval", &data).unwrap();
        for cut in [0, 1, 19, data.len() - 1, data.len()] {
            let (a, b) = data.split_at(cut);
            assert_eq!(
                verify_pieces(&armored, "guardctl-approval", &[a, b]).unwrap(),
                whole
            );
        }
        // A byte moved from one piece to the other is the same bytes; one changed is not.
        let mut changed = data.clone();
        changed[25] ^= 1;
        let (a, b) = changed.split_at(10);
        assert_eq!(
            verify_pieces(&armored, "guardctl-approval", &[a, b]),
            Err(VerifyError::Invalid)
        );
        let (a, _) = data.split_at(data.len() - 1);
        assert_eq!(
            verify_pieces(&armored, "guardctl-approval", &[a]),
            Err(VerifyError::Invalid)
        );
        assert!(matches!(
            verify_pieces(&armored, "guardctl-plan", &[&data]),
            Err(VerifyError::Namespace { .. })
        ));
    }

    #[test]
    fn a_certificate_signature_verifies_with_its_subject_key_and_yields_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ca", "user"] {
            keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", name]);
        }
        keygen(
            dir.path(),
            &["-q", "-s", "ca", "-I", "u", "-n", "bob@x", "user.pub"],
        );
        let data = b"payload";
        let by_cert = sign_with(&dir.path().join("user-cert.pub"), data);
        let subject = verify(&by_cert, "guardctl-approval", data).unwrap();
        let user = std::fs::read_to_string(dir.path().join("user.pub")).unwrap();
        assert_eq!(
            subject.key_data(),
            PublicKey::from_openssh(user.trim()).unwrap().key_data()
        );
        let cert = certificate_of(&by_cert).unwrap();
        assert_eq!(cert.valid_principals(), ["bob@x".to_string()]);
        assert_eq!(
            verify(&by_cert, "guardctl-approval", b"other"),
            Err(VerifyError::Invalid)
        );
        // Made without -V: valid forever, which the ssh-key crate alone cannot read.
        assert_eq!(cert.valid_before(), i64::MAX as u64);
        let plain = sign_with(&dir.path().join("user"), data);
        assert!(certificate_of(&plain).is_none());
        assert!(verify(&plain, "guardctl-approval", data).is_ok());
    }

    #[test]
    fn a_certificate_whose_bytes_the_ca_did_not_sign_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["ca", "user"] {
            keygen(dir.path(), &["-q", "-t", "ed25519", "-N", "", "-f", name]);
        }
        keygen(
            dir.path(),
            &[
                "-q",
                "-s",
                "ca",
                "-I",
                "u",
                "-n",
                "bob@x",
                "-V",
                "20260101:20270101",
                "user.pub",
            ],
        );
        let text = std::fs::read_to_string(dir.path().join("user-cert.pub")).unwrap();
        let blob = B64.decode(text.split_whitespace().nth(1).unwrap()).unwrap();
        let cert = certificate(&blob).unwrap();
        assert_eq!(cert.valid_principals(), ["bob@x".to_string()]);
        // "bob@x" becomes "eve@x": the CA's signature no longer holds.
        let at = blob.windows(5).position(|w| w == b"bob@x").unwrap();
        let mut forged = blob.clone();
        forged[at..at + 3].copy_from_slice(b"eve");
        assert!(certificate(&forged).is_none());
        assert!(certificate(&blob[..blob.len() - 1]).is_none());
    }
}
