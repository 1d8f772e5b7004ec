//! `guardctl whoami`: the signing key in use, its fingerprint, and the principal it maps to
//! for each kind of signature guardctl makes. Never mutates.

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
}

#[derive(Serialize)]
struct NamespacePrincipals {
    namespace: &'static str,
    principals: Vec<String>,
}

const NAMESPACES: [&str; 3] = ["guardctl-plan", "guardctl-approval", "guardctl-apply"];

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    let key = ctx.signing_key(ui)?;
    let (signers, source) = ctx.allowed_signers()?;
    ctx.report_signers(ui, false)?;
    let view = WhoamiView {
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
    let agent = if view.in_agent {
        ", private key in ssh-agent"
    } else {
        ""
    };
    writeln!(w, "key          {} (from {}{agent})", view.key, view.key_source)?;
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
    Ok(0)
}
