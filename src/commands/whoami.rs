//! `guardctl whoami`: the signing key in use, its fingerprint, whether it can sign now (and
//! why not), the principal it maps to for each kind of signature guardctl makes, and the
//! exact allowed-signers line that gives it one, with the file that line belongs in
//! (`engine::whoami`). Never mutates.

use crate::context::Ctx;
use crate::error::Result;
use crate::ui::Ui;

/// Show the key in use, its fingerprint, and the principal it maps to.
///
/// Exits 64 when the key cannot sign now (no agent, not in the agent, a passphrase where no
/// one may be asked) or when no key is configured: the error every signing command would give.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Make guardctl a signing key of its own (an unprotected ed25519 key in its data
    /// directory), only when no key is configured; guardctl never makes one unasked
    #[arg(long)]
    pub generate: bool,
}

pub fn run(args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    if args.generate {
        crate::engine::whoami::generate(ctx, ui)?;
    }
    let mut view = crate::engine::whoami::whoami(ctx, ui)?;
    let refusal = view.refusal.take();
    match refusal {
        // One document with --json: the error, carrying what whoami would have shown.
        Some(e) if ui.json => {
            let doc = serde_json::to_value(&view)
                .map_err(|e| crate::error::Error::internal("cannot render whoami").caused_by(e))?;
            let mut details = e.details.clone();
            if let serde_json::Value::Object(map) = &mut details {
                map.insert("whoami".into(), doc);
            }
            Err(e.with_details(details))
        }
        refusal => {
            if !ui.json {
                let color = ui.color;
                crate::render::whoami::render(&view, color, ui.out().writer())
                    .map_err(crate::ui::output_error)?;
            } else {
                ui.json_doc(&view)?;
            }
            refusal.map_or(Ok(0), Err)
        }
    }
}
