//! What `whoami` prints: the key in use, whether it can sign, the principal it maps to per
//! signature namespace and the allowed-signers line that gives it one (`whoami --json`'s
//! document, and the lines a person reads).

use crate::text::safe;
use serde::Serialize;
use std::io::{self, Write};

/// `whoami --json`'s document.
#[derive(Debug, Serialize)]
pub struct WhoamiView {
    pub key: String,
    pub key_source: &'static str,
    pub in_agent: bool,
    pub fingerprint: String,
    pub allowed_signers: Option<String>,
    pub allowed_signers_source: Option<&'static str>,
    /// Principals per signature namespace, valid now.
    pub principals: Vec<NamespacePrincipals>,
    /// `ready`, or why the key cannot sign now (no agent, not in the agent, passphrase).
    pub ready: &'static str,
    /// The allowed-signers line that maps this key to its principal.
    pub allowed_signers_line: String,
    /// Where that line belongs: the team's committed file when the repository has one.
    pub allowed_signers_file: String,
    /// What to do once the line is in that file (commit and push it, or point git at it).
    pub allowed_signers_then: Option<String>,
    /// What the key file is: a certificate, a public key whose private key is in ssh-agent, a
    /// passphrase-protected or a plain private key.
    #[serde(skip)]
    pub kind: KeyKind,
    /// Whether the key maps to a principal in any namespace.
    #[serde(skip)]
    pub has_principal: bool,
    /// Why the key cannot sign now, as the error every signing command would give (`whoami`
    /// then exits with its code).
    #[serde(skip)]
    pub refusal: Option<crate::error::Error>,
}

/// What the key file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Certificate,
    InAgent,
    Encrypted,
    Private,
}

#[derive(Debug, Serialize)]
pub struct NamespacePrincipals {
    pub namespace: &'static str,
    pub principals: Vec<String>,
}

/// The lines a person reads.
pub fn render(view: &WhoamiView, _color: bool, w: &mut dyn Write) -> io::Result<()> {
    let kind = match view.kind {
        KeyKind::Certificate => "certificate",
        KeyKind::InAgent => "public key; the private key must be in ssh-agent",
        KeyKind::Encrypted => "passphrase-protected private key",
        KeyKind::Private => "private key",
    };
    writeln!(w, "key          {} ({kind}; from {})", view.key, view.key_source)?;
    writeln!(w, "can sign     {}", view.ready)?;
    writeln!(w, "fingerprint  {}", view.fingerprint)?;
    match (&view.allowed_signers, view.allowed_signers_source) {
        (Some(p), Some(how)) => writeln!(w, "signers      {} (from {how})", safe(p))?,
        _ => writeln!(
            w,
            "signers      none configured: this key speaks for no principal"
        )?,
    }
    for ns in &view.principals {
        let who = if ns.principals.is_empty() {
            "(no principal)".to_string()
        } else {
            ns.principals.join(", ")
        };
        writeln!(w, "{:<18} {who}", ns.namespace)?;
    }
    let verb = if view.has_principal {
        "Its allowed-signers line, in"
    } else {
        "To give this key a principal, add this line to"
    };
    writeln!(w, "{verb} {}:", safe(&view.allowed_signers_file))?;
    writeln!(w, "  {}", safe(&view.allowed_signers_line))?;
    if let Some(then) = &view.allowed_signers_then
        && !view.has_principal
    {
        writeln!(w, "then: {}", safe(then))?;
    }
    Ok(())
}
