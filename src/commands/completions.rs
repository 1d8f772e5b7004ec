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
pub fn run(args: Args, cmd: clap::Command, ui: &mut Ui) -> Result<u8> {
    let script = script(args.shell, cmd);
    if ui.json {
        // One JSON document on every path: the script as a string.
        ui.json_doc(&serde_json::json!({
            "shell": args.shell.to_string(),
            "script": script,
        }))?;
    } else {
        ui.out()
            .writer()
            .write_all(script.as_bytes())
            .map_err(crate::ui::output_error)?;
    }
    Ok(0)
}

/// The commands whose first argument is a plan (a file, or a plan's id).
const PLAN_COMMANDS: [&str; 6] = ["apply", "approve", "reject", "show", "verify", "rollback"];

/// The completion script for `shell`. clap's bash script offers only flags where a command's
/// first argument goes: for the commands that take a plan, bash completes plan files there
/// too, and the ids of the plans this clone's guardctl state knows (zsh and fish complete
/// files from the definition's value hints).
pub fn script(shell: clap_complete::Shell, mut cmd: clap::Command) -> String {
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut cmd, "guardctl", &mut bytes);
    let mut script = String::from_utf8_lossy(&bytes).into_owned();
    if shell == clap_complete::Shell::Bash {
        const FLAGS_ONLY: &str = "            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then\n                COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )\n                return 0\n            fi\n";
        const PLANS: &str = "            if [[ ${cur} == -* ]] ; then\n                COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )\n                return 0\n            fi\n            if [[ ${COMP_CWORD} -eq 2 ]] ; then\n                _guardctl_plans\n                return 0\n            fi\n";
        for command in PLAN_COMMANDS {
            let head = format!("        guardctl__subcmd__{command})\n");
            if let Some(at) = script.find(&head)
                && let Some(rel) = script[at..].find(FLAGS_ONLY)
            {
                let start = at + rel;
                script.replace_range(start..start + FLAGS_ONLY.len(), PLANS);
            }
        }
        script.push_str(BASH_PLANS);
    }
    script
}

/// Plan files, and the ids of the plans in this clone's guardctl state (`rollback`'s ids).
const BASH_PLANS: &str = r#"
_guardctl_plans() {
    local IFS=$'\n' dir
    COMPREPLY=( $(compgen -f -- "${cur}") )
    dir="$(git rev-parse --git-common-dir 2>/dev/null)/guardctl/plans"
    if [[ -d "${dir}" ]]; then
        COMPREPLY+=( $(compgen -W "$(ls -1 "${dir}" 2>/dev/null)" -- "${cur}") )
    fi
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        compopt -o filenames
    fi
}
"#;
