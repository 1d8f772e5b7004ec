//! The signing key in use: its fingerprint, whether it can sign now (and why not), the
//! principal it maps to for each kind of signature guardctl makes, and the exact
//! allowed-signers line that gives it one, with the file that line belongs in. Never
//! mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::render::whoami::{KeyKind, NamespacePrincipals, WhoamiView};
use crate::sign::sshsig::fingerprint;
use crate::ui::Ui;

const NAMESPACES: [&str; 3] = ["guardctl-plan", "guardctl-approval", "guardctl-apply"];

/// The key in use, as `whoami` shows it.
pub fn whoami(ctx: &Ctx, ui: &mut Ui) -> Result<WhoamiView> {
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
    Ok(WhoamiView {
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
        kind: if key.certificate.is_some() {
            KeyKind::Certificate
        } else if key.in_agent {
            KeyKind::InAgent
        } else if key.encrypted {
            KeyKind::Encrypted
        } else {
            KeyKind::Private
        },
        has_principal: !known.is_empty(),
    })
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
