//! `guardctl whoami`: the signing key in use, its fingerprint, whether it can sign now (and
//! why not), the principal it maps to for each kind of signature guardctl makes, and the
//! exact allowed-signers line that gives it one, with the file that line belongs in. Never
//! mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::sign::sshsig::fingerprint;
use crate::ui::Ui;
use serde::Serialize;

/// Show the key in use, its fingerprint, and the principal it maps to.
#[derive(Debug, clap::Args)]
pub struct Args {}

#[derive(Serialize)]
struct WhoamiView {
    key: String,
    key_source: &'static str,
    in_agent: bool,
    fingerprint: String,
    allowed_signers: Option<String>,
    allowed_signers_source: Option<&'static str>,
    /// Principals per signature namespace, valid now.
    principals: Vec<NamespacePrincipals>,
    /// `ready`, or why the key cannot sign now (no agent, not in the agent, passphrase).
    ready: &'static str,
    /// The allowed-signers line that maps this key to its principal.
    allowed_signers_line: String,
    /// Where that line belongs (and how to make guardctl read it, when nothing is configured).
    allowed_signers_file: String,
}

#[derive(Serialize)]
struct NamespacePrincipals {
    namespace: &'static str,
    principals: Vec<String>,
}

const NAMESPACES: [&str; 3] = ["guardctl-plan", "guardctl-approval", "guardctl-apply"];

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let key = ctx.signing_key_as_is(ui)?;
    let ready = crate::sign::agent::readiness(&key, ui.may_prompt());
    let (signers, source) = ctx.allowed_signers()?;
    ctx.report_signers(ui, false)?;
    let known: Vec<String> = NAMESPACES
        .iter()
        .flat_map(|ns| signers.principals_at(key.signer(), ns, &[ctx.now]))
        .collect();
    let principal = match known.first() {
        Some(p) => p.clone(),
        None => your_email(ctx),
    };
    let public = key.public.to_openssh().unwrap_or_default();
    // The key type and base64 only: a comment would be read as part of the line's key.
    let public: String = public.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let view = WhoamiView {
        ready: ready.describe(),
        allowed_signers_line: format!("{principal} {public}"),
        allowed_signers_file: match &source {
            Some(s) if s.how.contains("default branch") => format!(
                "{} (commit it to the default branch and push)",
                crate::context::SIGNERS_PATH
            ),
            Some(s) => s.location.clone(),
            None => "~/.config/git/allowed_signers, then: git config --global gpg.ssh.allowedSignersFile ~/.config/git/allowed_signers".to_string(),
        },
        key: key.path.display().to_string(),
        key_source: key.source.describe(),
        in_agent: key.in_agent,
        fingerprint: fingerprint(&key.public),
        allowed_signers: source.as_ref().map(|s| s.location.clone()),
        allowed_signers_source: source.as_ref().map(|s| s.how),
        principals: NAMESPACES
            .iter()
            .map(|ns| NamespacePrincipals {
                namespace: ns,
                principals: signers
                    .principals_at(key.signer(), ns, &[ctx.now])
                    .iter()
                    .map(|p| crate::text::safe(p))
                    .collect(),
            })
            .collect(),
    };
    if ui.json {
        ui.json_doc(&view)?;
        return Ok(0);
    }
    let mut w = ui.out();
    let kind = if key.certificate.is_some() {
        "certificate"
    } else if view.in_agent {
        "public key; the private key must be in ssh-agent"
    } else if key.encrypted {
        "passphrase-protected private key"
    } else {
        "private key"
    };
    writeln!(w, "key          {} ({kind}; from {})", view.key, view.key_source)?;
    writeln!(w, "can sign     {}", view.ready)?;
    writeln!(w, "fingerprint  {}", view.fingerprint)?;
    match (&view.allowed_signers, view.allowed_signers_source) {
        (Some(p), Some(how)) => writeln!(w, "signers      {} (from {how})", crate::text::safe(p))?,
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
    let verb = if known.is_empty() {
        "To give this key a principal, add this line to"
    } else {
        "Its allowed-signers line, in"
    };
    writeln!(w, "{verb} {}:", crate::text::safe(&view.allowed_signers_file))?;
    writeln!(w, "  {}", crate::text::safe(&view.allowed_signers_line))?;
    Ok(0)
}

/// The principal to suggest for a key that has none: git's user.email, as people name
/// themselves in allowed-signers files.
fn your_email(ctx: &Ctx) -> String {
    let email = match ctx.repo() {
        Ok(repo) => repo.config_string("user.email").ok().flatten(),
        Err(_) => crate::repo::admin_config("user.email").ok().flatten(),
    };
    email
        .filter(|e| !e.trim().is_empty() && !e.contains(char::is_whitespace))
        .unwrap_or_else(|| "you@example.com".to_string())
}
