//! The signing key in use: its fingerprint, whether it can sign now (and why not), the
//! principal it maps to for each kind of signature guardctl makes, and the exact
//! allowed-signers line that gives it one, with the file that line belongs in; and the MCP
//! server's check that its key may not approve. Never mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::plan::approval::{APPLY_NAMESPACE, APPROVAL_NAMESPACE};
use crate::plan::envelope::PLAN_NAMESPACE;
use crate::render::whoami::{KeyKind, NamespacePrincipals, WhoamiView};
use crate::sign::sshsig::fingerprint;
use crate::ui::Ui;

const NAMESPACES: [&str; 3] = ["guardctl-plan", "guardctl-approval", "guardctl-apply"];

/// The key in use, as `whoami` shows it.
pub fn whoami(ctx: &Ctx, ui: &mut Ui) -> Result<WhoamiView> {
    let key = ctx.signing_key_as_is()?;
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
    let team = ctx.has_team_file();
    let public = key.public.to_openssh().unwrap_or_default();
    // The key type and base64 only: a comment would be read as part of the line's key.
    let public: String = public.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    Ok(WhoamiView {
        ready: ready.describe(),
        allowed_signers_line: format!("{principal} {public}"),
        // The team's committed file when the repository has one, even when another source
        // shadows it (that source is named, and warned about, separately): a line in a
        // personal file would count for this person's commands only.
        allowed_signers_file: match &source {
            _ if team => crate::context::SIGNERS_PATH.to_string(),
            Some(s) if s.how.contains("default branch") => crate::context::SIGNERS_PATH.to_string(),
            Some(s) => s.location.clone(),
            None => "~/.config/git/allowed_signers".to_string(),
        },
        allowed_signers_then: match &source {
            _ if team => Some("commit it to the default branch and push".to_string()),
            Some(s) if s.how.contains("default branch") => {
                Some("commit it to the default branch and push".to_string())
            }
            Some(_) => None,
            None => Some(
                "git config --global gpg.ssh.allowedSignersFile ~/.config/git/allowed_signers (or commit the line to .guardctl/allowed_signers on the default branch, for the whole team)"
                    .to_string(),
            ),
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
        refusal: match ready {
            crate::sign::agent::Readiness::Ready | crate::sign::agent::Readiness::WillPrompt => None,
            _ => Some(ctx.signing_key(ui).err().unwrap_or_else(|| {
                crate::error::Error::usage(format!("this key cannot sign: {}", ready.describe()))
            })),
        },
    })
}

/// `whoami --generate`: make guardctl's own key when no key is configured, and say so.
pub fn generate(ctx: &Ctx, ui: &mut Ui) -> Result<()> {
    let made = ctx.generate_key()?;
    let key = ctx.signing_key_as_is()?;
    ui.notice(&format!(
        "{} signing key at {} ({}); its allowed-signers line is below",
        if made { "made a" } else { "guardctl already has a" },
        key.path.display(),
        fingerprint(&key.public)
    ));
    Ok(())
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

/// Refuse a key that may sign approvals (a plain line or a certificate), unless the trusted
/// policy's `[agents] may_approve` lists every principal it may approve as; say on stderr
/// when it may not plan or apply (the tools would fail later). The key's fingerprint, or
/// `None` when there is no usable key or allowed-signers file (said on stderr: the tools
/// fail until there is).
pub fn check_server_key(ctx: &Ctx, ui: &mut Ui, agents: &crate::policy::Agents) -> Result<Option<String>> {
    check_agent_key(ctx, ui, agents, AgentFront::Mcp)
}

/// Which agent front end holds the key, for the words of [`check_agent_key`].
#[derive(Debug, Clone, Copy)]
pub enum AgentFront {
    /// `guardctl mcp`.
    Mcp,
    /// `guardctl hook` and `guardctl guard`.
    Hook,
}

/// [`check_server_key`], in the words of the front end that holds the key.
pub fn check_agent_key(
    ctx: &Ctx,
    ui: &mut Ui,
    agents: &crate::policy::Agents,
    front: AgentFront,
) -> Result<Option<String>> {
    let (holder, refusal, start) = match front {
        AgentFront::Mcp => ("this server's key", "no tool is served", "start the server with"),
        AgentFront::Hook => ("the hook's key", "it makes no plan", "run the hook with"),
    };
    let key = match ctx.signing_key(ui) {
        Ok(k) => k,
        Err(e) => {
            ui.warn(&format!(
                "no usable signing key ({}): planning and applying will fail until one is configured",
                e.message
            ));
            return Ok(None);
        }
    };
    let fp = fingerprint(&key.public);
    let signers = match ctx.allowed_signers() {
        Ok((s, _)) => s,
        Err(e) => {
            ui.warn(&format!("cannot read the allowed-signers file: {}", e.message));
            return Ok(None);
        }
    };
    // Now, and every later moment at which a line or the certificate becomes valid: a line
    // `valid-after` tomorrow is an approving key tomorrow, for a server still running.
    let mut times = vec![ctx.now];
    times.extend(signers.entries.iter().filter_map(|e| e.valid_after));
    if let Some(cert) = &key.certificate
        && let Ok(secs) = i64::try_from(cert.valid_after())
        && let Ok(t) = time::OffsetDateTime::from_unix_timestamp(secs)
    {
        times.push(t);
    }
    times.retain(|t| *t >= ctx.now);
    let may_at = |ns: &str, times: &[time::OffsetDateTime]| {
        let mut out: Vec<String> = Vec::new();
        for &at in times {
            let mut now = signers.principals_for(&key.public, ns, at);
            if let Some(cert) = &key.certificate {
                let signer = crate::sign::allowed_signers::Signer {
                    key: &key.public,
                    certificate: Some(cert),
                };
                now.extend(signers.principals_at(signer, ns, &[at]));
            }
            for p in now {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    };
    let may = |ns: &str| may_at(ns, &[ctx.now]);
    let approves: Vec<String> = may_at(APPROVAL_NAMESPACE, &times)
        .into_iter()
        .filter(|p| !agents.may_approve.contains(p))
        .collect();
    if !approves.is_empty() {
        let names = approves
            .iter()
            .map(|p| crate::text::safe(p))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(crate::error::Error::new(
            crate::error::Kind::Policy,
            format!(
                "{holder} {fp} may sign approvals (as {names}): an agent holding it could approve plans, its own included; {refusal}"
            ),
        )
        .with_hint(format!(
            "give the agent a key of its own that may only plan and apply: `ssh-keygen -t ed25519 -f ~/.ssh/agent_ed25519`, then in the allowed-signers file \
             `<agent principal> namespaces=\"guardctl-plan,guardctl-apply\" <its public key>`, and {start} `--key ~/.ssh/agent_ed25519` \
             (to accept this key anyway, the trusted policy lists its principals in `[agents] may_approve`)"
        )));
    }
    if may(PLAN_NAMESPACE).is_empty() {
        ui.warn(&format!(
            "{holder} {fp} maps to no principal for {PLAN_NAMESPACE}: its plans can be shown but never applied"
        ));
    }
    if may(APPLY_NAMESPACE).is_empty() {
        ui.warn(&format!(
            "{holder} {fp} maps to no principal for {APPLY_NAMESPACE}: it cannot apply its plans"
        ));
    }
    Ok(Some(fp))
}
