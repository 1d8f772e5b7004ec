//! One module per command: its `Args` (whose doc comment is the `--help` text) and `run`, an
//! adapter: the arguments as the engine's typed request, the engine's typed outcome rendered
//! through `render`, the exit code. No command reaches `store`, `sign` or `repo` itself.

pub mod apply;
pub mod approve;
pub mod completions;
pub mod demo;
pub mod doctor;
pub mod explain;
pub mod gc;
pub mod guard;
pub mod hook;
pub mod hook_install;
pub mod inbox;
pub mod log;
pub mod plan;
pub mod recover;
pub mod reject;
pub mod rollback;
pub mod show;
pub mod verify;
pub mod wait;
pub mod whoami;

use crate::context::Ctx;
use crate::error::Result;
use crate::ui::Ui;

/// How the commands that read published items and print one view (`show`, `inbox`,
/// `verify`) end, so that they cannot drift apart: the warnings about published items left
/// out are printed whether or not the command succeeded (`Ctx::report_published`), then a
/// failure is returned, else the view is printed as the one JSON document under `--json`, or
/// as `render` draws it for a person. Exit 0.
pub fn finish_view<V: serde::Serialize>(
    ctx: &Ctx,
    ui: &mut Ui,
    result: Result<V>,
    render: fn(&V, bool, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<u8> {
    ctx.report_published(ui);
    let v = result?;
    if ui.json {
        ui.json_doc(&v)?;
    } else {
        let color = ui.color;
        render(&v, color, ui.out().writer()).map_err(crate::ui::output_error)?;
    }
    Ok(0)
}
