//! One module per command: its `Args` (whose doc comment is the `--help` text) and `run`.

pub mod apply;
pub mod approve;
pub mod completions;
pub mod demo;
pub mod gc;
pub mod inbox;
pub mod log;
pub mod plan;
pub mod recover;
pub mod reject;
pub mod rollback;
pub mod show;
pub mod verify;
pub mod whoami;

use crate::context::Ctx;
use crate::error::Result;
use crate::ui::Ui;

/// How the commands that read published items and print one result (`show`, `inbox`,
/// `verify`) end, so that they cannot drift apart: the warnings about published items left
/// out are printed whether or not the command succeeded (`Ctx::report_published`), then a
/// failure is returned, else the result is printed as the one JSON document under `--json`
/// (`json` writes it with `Ui::json_doc`), or as text for a person (`human`). Exit 0.
pub fn finish<V>(
    ctx: &Ctx,
    ui: &mut Ui,
    result: Result<V>,
    json: impl FnOnce(&V, &mut Ui) -> Result<()>,
    human: impl FnOnce(&V, &mut Ui) -> Result<()>,
) -> Result<u8> {
    ctx.report_published(ui);
    let v = result?;
    if ui.json {
        json(&v, ui)?;
    } else {
        human(&v, ui)?;
    }
    Ok(0)
}

/// [`finish`] for a view that is its own JSON document and that `render` draws for a person
/// (`render::human`).
pub fn finish_view<V: serde::Serialize>(
    ctx: &Ctx,
    ui: &mut Ui,
    result: Result<V>,
    render: fn(&V, bool, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<u8> {
    finish(
        ctx,
        ui,
        result,
        |v, ui| ui.json_doc(v),
        |v, ui| {
            let color = ui.color;
            render(v, color, ui.out().writer()).map_err(crate::ui::output_error)
        },
    )
}
