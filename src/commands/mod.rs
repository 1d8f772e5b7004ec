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
