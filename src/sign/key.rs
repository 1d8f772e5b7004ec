//! Which key signs: `--key`, then `GUARDCTL_KEY`, then git's `user.signingKey` (when
//! `gpg.format=ssh`), else the per-user ed25519 key in guardctl's data directory when one was
//! made (`guardctl whoami --generate`). A key is never generated implicitly: a user who signs
//! commits with a key in ssh-agent would otherwise get a second, unprotected key nobody asked for. A key may be a private key file, a public key file whose private half is in
//! ssh-agent, or git's `key::<public key>` literal.

use ssh_key::{PrivateKey, PublicKey};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct SigningKey {
    /// What `ssh-keygen -f` gets.
    pub path: PathBuf,
    pub public: PublicKey,
    /// True when `path` holds only a public key (the private half is in ssh-agent).
    pub in_agent: bool,
    /// Where the key came from, for `whoami` and error messages.
    pub source: KeySource,
    /// The OpenSSH certificate `path` holds, when it holds one (`public` is its subject key).
    pub certificate: Option<ssh_key::Certificate>,
    /// `path` is a passphrase-protected private key: signing needs it in ssh-agent, or a
    /// prompt on a terminal.
    pub encrypted: bool,
    /// The command's private agent holding this key, once unlocked (`sign::unlock`): every
    /// signature goes through it, so the passphrase is asked once per command.
    pub unlocked: Option<std::sync::Arc<super::unlock::Unlocked>>,
}

impl SigningKey {
    /// The key as the allowed-signers lookup sees it (with its certificate, if any).
    pub fn signer(&self) -> super::allowed_signers::Signer<'_> {
        super::allowed_signers::Signer {
            key: &self.public,
            certificate: self.certificate.as_ref(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Flag,
    Env,
    GitConfig,
    /// The per-user key in guardctl's data directory (`whoami --generate` made it).
    Default,
}

impl KeySource {
    pub fn describe(&self) -> &'static str {
        match self {
            KeySource::Flag => "--key",
            KeySource::Env => "GUARDCTL_KEY",
            KeySource::GitConfig => "git config user.signingKey",
            KeySource::Default => "guardctl's per-user key (whoami --generate)",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read signing key {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("could not generate the default key at {path}: {reason}")]
    Generate { path: String, reason: String },
    #[error("no data directory for the default key (is HOME set?)")]
    NoDataDir,
    /// Nothing names a key and `whoami --generate` never made one.
    #[error("no signing key is configured")]
    NotConfigured,
}

/// Inputs of the lookup, gathered by the caller (the git config comes through `repo/`).
pub struct KeyLookup<'a> {
    pub flag: Option<&'a Path>,
    pub env: Option<PathBuf>,
    /// `user.signingKey`, only when `gpg.format` is `ssh`.
    pub git_signing_key: Option<String>,
    /// Where guardctl keeps its own files (`directories` data dir).
    pub data_dir: Option<PathBuf>,
}

pub fn resolve(lookup: KeyLookup) -> Result<SigningKey, KeyError> {
    if let Some(p) = lookup.flag {
        return load(p, KeySource::Flag);
    }
    if let Some(p) = lookup.env.filter(|p| !p.as_os_str().is_empty()) {
        return load(&p, KeySource::Env);
    }
    if let Some(value) = lookup.git_signing_key.filter(|v| !v.is_empty()) {
        return from_git_config(&value, lookup.data_dir.as_deref());
    }
    let path = default_path(lookup.data_dir.as_deref())?;
    if !path.exists() {
        return Err(KeyError::NotConfigured);
    }
    load(&path, KeySource::Default)
}

/// Where `whoami --generate` keeps the per-user key.
pub fn default_path(data_dir: Option<&Path>) -> Result<PathBuf, KeyError> {
    Ok(data_dir.ok_or(KeyError::NoDataDir)?.join("id_ed25519"))
}

/// `whoami --generate`: make the per-user key unless it exists; `true` when it was made now.
pub fn generate_default(data_dir: Option<&Path>) -> Result<bool, KeyError> {
    let path = default_path(data_dir)?;
    if path.exists() {
        return Ok(false);
    }
    generate(&path)?;
    Ok(true)
}

fn from_git_config(value: &str, data_dir: Option<&Path>) -> Result<SigningKey, KeyError> {
    let literal = value.strip_prefix("key::").or_else(|| {
        // git also accepts a bare `ssh-...` public key.
        value
            .starts_with("ssh-")
            .then_some(value)
            .or(value.starts_with("ecdsa-").then_some(value))
    });
    let Some(literal) = literal else {
        let path = expand_home(value);
        return load(&path, KeySource::GitConfig);
    };
    let public = PublicKey::from_openssh(literal.trim()).map_err(|e| KeyError::Unreadable {
        path: "user.signingKey".into(),
        reason: e.to_string(),
    })?;
    // ssh-keygen needs a file: keep the literal as a public key file in our data directory.
    let dir = data_dir.ok_or(KeyError::NoDataDir)?;
    let fp = super::sshsig::fingerprint(&public).replace(['/', '+', ':'], "_");
    let path = dir.join(format!("agent-{fp}.pub"));
    let text = public.to_openssh().map_err(|e| KeyError::Unreadable {
        path: "user.signingKey".into(),
        reason: e.to_string(),
    })?;
    crate::fsutil::write_atomic(&path, format!("{text}\n").as_bytes()).map_err(|e| KeyError::Unreadable {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(SigningKey {
        path,
        public,
        in_agent: true,
        source: KeySource::GitConfig,
        certificate: None,
        encrypted: false,
        unlocked: None,
    })
}

fn expand_home(value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(value),
    }
}

/// Load a private key file (encrypted ones too: the public half is stored in clear), or a
/// public key file (then the private half must be in ssh-agent).
pub fn load(path: &Path, source: KeySource) -> Result<SigningKey, KeyError> {
    let unreadable = |reason: String| KeyError::Unreadable {
        path: path.display().to_string(),
        reason,
    };
    let text = read_key_file(path).map_err(unreadable)?;
    if let Ok(private) = PrivateKey::from_openssh(&text) {
        return Ok(SigningKey {
            path: path.to_path_buf(),
            public: private.public_key().clone(),
            in_agent: false,
            source,
            certificate: None,
            encrypted: private.is_encrypted(),
            unlocked: None,
        });
    }
    // A private key file the crate will not parse whole: its public half is in clear, and
    // ssh-keygen signs with it (`sshsig::sign`).
    if let Some((public, encrypted)) = private_key_header(&text) {
        return Ok(SigningKey {
            path: path.to_path_buf(),
            public,
            in_agent: false,
            source,
            certificate: None,
            encrypted,
            unlocked: None,
        });
    }
    if let Ok(public) = PublicKey::from_openssh(text.trim()) {
        return Ok(SigningKey {
            path: path.to_path_buf(),
            public,
            in_agent: true,
            source,
            certificate: None,
            encrypted: false,
            unlocked: None,
        });
    }
    // An OpenSSH user certificate (`id_ed25519-cert.pub`): ssh-keygen signs with it and the
    // private key beside it (`id_ed25519`), or the one in ssh-agent.
    if let Some(cert) = certificate_file(&text) {
        let beside = path
            .to_str()
            .and_then(|p| p.strip_suffix("-cert.pub"))
            .is_some_and(|p| Path::new(p).is_file());
        return Ok(SigningKey {
            path: path.to_path_buf(),
            public: PublicKey::from(cert.public_key().clone()),
            in_agent: !beside,
            source,
            certificate: Some(cert),
            // The private key beside a certificate is checked when signing (ssh-keygen's own
            // message): guardctl does not read it.
            encrypted: false,
            unlocked: None,
        });
    }
    Err(unreadable(
        "not an OpenSSH private key, public key or certificate".into(),
    ))
}

/// A key file's text: a regular file (a symbolic link to one is fine) of at most 1 MiB.
/// A FIFO would block with no writer and a device such as /dev/zero never end; neither could
/// ssh-keygen read it again when signing. Opened without blocking, and checked again once
/// open, so a file swapped after the first check is still refused.
fn read_key_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const MAX: u64 = 1 << 20;
    let regular = |m: std::fs::Metadata| -> Result<(), String> {
        match m.is_file() {
            true => Ok(()),
            false => {
                Err("not a regular file (a key is a file ssh-keygen can read again when signing)".into())
            }
        }
    };
    regular(std::fs::metadata(path).map_err(|e| e.to_string())?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    regular(file.metadata().map_err(|e| e.to_string())?)?;
    let mut text = String::new();
    file.take(MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX {
        return Err("larger than 1 MiB: not a key file".into());
    }
    Ok(text)
}

/// The public key and whether the private half is encrypted, from the clear header of an
/// OpenSSH private key file (PROTOCOL.key: `openssh-key-v1\0`, then the cipher, KDF and its
/// options, the number of keys, and the first public key). Only for files the `ssh-key`
/// crate refuses although OpenSSH wrote them: about one ECDSA P-384 key in 256 (and P-256
/// likewise), whose private scalar begins with a zero byte that OpenSSH's mpint encoding
/// drops, where the crate wants the full width.
fn private_key_header(text: &str) -> Option<(PublicKey, bool)> {
    use base64::Engine;
    const BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
    const END: &str = "-----END OPENSSH PRIVATE KEY-----";
    let body = text.trim().strip_prefix(BEGIN)?.strip_suffix(END)?;
    let b64: String = body.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let mut rest = bytes.strip_prefix(b"openssh-key-v1\0")?;
    fn u32_at(rest: &mut &[u8]) -> Option<usize> {
        let (n, tail) = rest.split_first_chunk::<4>()?;
        *rest = tail;
        Some(u32::from_be_bytes(*n) as usize)
    }
    fn field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32_at(rest)?;
        let (value, tail) = (rest.get(..len)?, &rest[len..]);
        *rest = tail;
        Some(value)
    }
    let cipher = field(&mut rest)?;
    let (_kdf, _options) = (field(&mut rest)?, field(&mut rest)?);
    if u32_at(&mut rest)? != 1 {
        return None;
    }
    let blob = field(&mut rest)?;
    let public = PublicKey::from_bytes(blob).ok()?;
    Some((public, cipher != b"none"))
}

/// An OpenSSH certificate file (`<type>-cert-v01@openssh.com <base64> [comment]`), read as
/// `sshsig::certificate` reads one (so a certificate valid forever works too).
fn certificate_file(text: &str) -> Option<ssh_key::Certificate> {
    use base64::Engine;
    let mut parts = text.split_whitespace();
    let kind = parts.next()?;
    if !kind.ends_with("-cert-v01@openssh.com") {
        return None;
    }
    let blob = base64::engine::general_purpose::STANDARD
        .decode(parts.next()?)
        .ok()?;
    super::sshsig::certificate(&blob)
}

fn generate(path: &Path) -> Result<(), KeyError> {
    let err = |reason: String| KeyError::Generate {
        path: path.display().to_string(),
        reason,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let out = crate::process::Process::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C"])
        .arg(format!("guardctl default key of {user}"))
        .arg("-f")
        .arg(path)
        .output(None)
        .map_err(|e| err(e.to_string() + &e.causes.iter().map(|c| format!(": {c}")).collect::<String>()))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::private_key_header;
    use ssh_key::{PrivateKey, PublicKey};

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{}/fixtures/keys/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn the_header_gives_the_public_key_the_crate_reads_from_the_whole_file() {
        for name in ["alice_ed25519", "carol_ecdsa"] {
            let text = fixture(name);
            let (public, encrypted) = private_key_header(&text).unwrap();
            assert_eq!(
                public.key_data(),
                PrivateKey::from_openssh(&text).unwrap().public_key().key_data()
            );
            assert!(!encrypted);
        }
        let (public, _) = private_key_header(&fixture("dave_ecdsa_p384")).unwrap();
        let expected = PublicKey::from_openssh(fixture("dave_ecdsa_p384.pub").trim()).unwrap();
        assert_eq!(public.key_data(), expected.key_data());
    }

    #[test]
    fn a_key_that_is_a_fifo_a_device_or_huge_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let huge = dir.path().join("huge");
        std::fs::write(&huge, vec![b'a'; (1 << 20) + 1]).unwrap();
        for path in [fifo, std::path::PathBuf::from("/dev/zero"), huge] {
            // A thread, so that a regression blocks this test, not the whole suite.
            let (tx, rx) = std::sync::mpsc::channel();
            let p = path.clone();
            std::thread::spawn(move || {
                let _ = tx.send(super::load(&p, super::KeySource::Flag).is_err());
            });
            let refused = rx.recv_timeout(std::time::Duration::from_secs(30));
            assert_eq!(refused, Ok(true), "{}", path.display());
        }
        // A symbolic link to a key file is a key file.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(
            format!("{}/fixtures/keys/alice_ed25519", env!("CARGO_MANIFEST_DIR")),
            &link,
        )
        .unwrap();
        assert!(super::load(&link, super::KeySource::Flag).is_ok());
    }

    #[test]
    fn a_truncated_or_garbled_key_file_has_no_header_and_no_panic() {
        use base64::Engine;
        let text = fixture("dave_ecdsa_p384");
        let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        let file = |bytes: &[u8]| {
            let body = base64::engine::general_purpose::STANDARD.encode(bytes);
            format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n")
        };
        // The clear header: magic, cipher, KDF, options, the count, the public key blob.
        let header = 15 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 136;
        assert!(private_key_header(&file(&bytes[..header])).is_some());
        for cut in 0..header {
            assert!(private_key_header(&file(&bytes[..cut])).is_none(), "cut at {cut}");
        }
        let mut two_keys = bytes.clone();
        two_keys[15 + 4 + 4 + 4 + 4 + 4 + 3] = 2;
        assert!(private_key_header(&file(&two_keys)).is_none());
        let mut lengths_past_the_end = bytes.clone();
        lengths_past_the_end[15..19].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(private_key_header(&file(&lengths_past_the_end)).is_none());
        assert!(
            private_key_header("-----BEGIN OPENSSH PRIVATE KEY-----\n!!\n-----END OPENSSH PRIVATE KEY-----")
                .is_none()
        );
    }
}
