//! `guardctl mcp`: serve plan, show, status, verify and apply as MCP tools over stdio (see
//! `crate::mcp`). Checks the server's key first and warns on stderr when it could approve.

use crate::context::Ctx;
use crate::error::Result;
use crate::plan::approval::{APPLY_NAMESPACE, APPROVAL_NAMESPACE};
use crate::plan::envelope::PLAN_NAMESPACE;
use crate::sign::sshsig::fingerprint;
use crate::ui::{ColorChoice, Ui};

/// Serve guardctl as a Model Context Protocol server on stdin/stdout, for AI agents.
///
/// Tools: plan_stale_branches, plan_remote_branches, plan_tags, plan_exec, show_plan,
/// plan_status, verify_plan, apply_plan. There is no approve or reject tool: a human approves
/// with `guardctl approve` in a terminal. Plans are signed with this server's key (--key,
/// GUARDCTL_KEY, ...) and written to guardctl's data directory unless a call names `out`.
/// Give the agent's key namespaces="guardctl-plan,guardctl-apply" in the allowed-signers file;
/// the server warns at start when its key may also approve. stdout carries only protocol
/// messages; status goes to stderr. Stops when the client closes stdin.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    check_key(ctx, ui);
    let (repo, key, allowed_signers) = ctx.flags();
    crate::mcp::serve(crate::mcp::Settings {
        repo,
        key,
        allowed_signers,
        quiet: ui.quiet,
        color: if ui.err_color {
            ColorChoice::Always
        } else {
            ColorChoice::Never
        },
        plans_dir: crate::mcp::default_plans_dir(),
    })?;
    Ok(0)
}

/// Say on stderr what the server's key may do: a key that may approve is the warning the
/// agent set-up needs; one that may not plan or apply makes the tools fail later.
fn check_key(ctx: &Ctx, ui: &mut Ui) {
    let key = match ctx.signing_key(ui) {
        Ok(k) => k,
        Err(e) => {
            ui.warn(&format!(
                "no usable signing key ({}): the plan and apply tools will fail until one is configured",
                e.message
            ));
            return;
        }
    };
    let fp = fingerprint(&key.public);
    let signers = match ctx.allowed_signers() {
        Ok((s, _)) => s,
        Err(e) => {
            ui.warn(&format!("cannot read the allowed-signers file: {}", e.message));
            return;
        }
    };
    let may = |ns: &str| signers.principals_for(&key.public, ns, ctx.now);
    let approves = may(APPROVAL_NAMESPACE);
    if !approves.is_empty() {
        ui.warn(&format!(
            "this server's key {fp} may also sign approvals (as {}): anyone holding it could approve other principals' plans; \
             limit it in the allowed-signers file with namespaces=\"guardctl-plan,guardctl-apply\"",
            approves
                .iter()
                .map(|p| crate::render::escape::safe(p))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if may(PLAN_NAMESPACE).is_empty() {
        ui.warn(&format!(
            "this server's key {fp} maps to no principal for {PLAN_NAMESPACE}: its plans can be shown but never applied"
        ));
    }
    if may(APPLY_NAMESPACE).is_empty() {
        ui.warn(&format!(
            "this server's key {fp} maps to no principal for {APPLY_NAMESPACE}: apply_plan will refuse"
        ));
    }
    ui.status(&format!("guardctl mcp: serving on stdio with key {fp}"));
}
