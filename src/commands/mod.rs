//! One module per command: its `Args` (whose doc comment is the `--help` text) and `run`.

pub mod completions;
pub mod demo;
pub mod plan;
pub mod show;
pub mod whoami;
