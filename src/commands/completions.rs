//! `guardctl completions SHELL`: print shell completions generated from the clap definition.
//! The same output is shipped pre-generated in `completions/` (a test keeps it current).

use crate::error::Result;
use crate::ui::Ui;

/// Print shell completions for SHELL on stdout.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate completions for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `cmd` is `cli::command()`, handed in by the dispatcher so that `commands` does not import
/// `cli` (which imports every command's `Args`).
pub fn run(args: Args, mut cmd: clap::Command, ui: &mut Ui) -> Result<u8> {
    if ui.json {
        // One JSON document on every path: the script as a string.
        let mut script = Vec::new();
        clap_complete::generate(args.shell, &mut cmd, "guardctl", &mut script);
        ui.json_doc(&serde_json::json!({
            "shell": args.shell.to_string(),
            "script": String::from_utf8_lossy(&script),
        }))?;
    } else {
        clap_complete::generate(args.shell, &mut cmd, "guardctl", ui.out().writer());
    }
    Ok(0)
}
