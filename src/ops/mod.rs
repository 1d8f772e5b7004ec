//! Operations guardctl can plan, one module each: `observe` reads the repository through
//! `repo/`, the decisions are pure functions of observations and `now`.

pub mod exec;
pub mod pin;
pub mod shell;
pub mod stale_branches;
pub mod tags;
