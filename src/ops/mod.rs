//! Operations guardctl can plan, one module each: `observe` reads the repository through
//! `repo/`, the decisions are pure functions of observations and `now`. `pin` (the files an
//! exec plan runs, and the private copy they run from) and `shell` (the words of a `sh -c`
//! string) serve `exec`. `assemble` makes a plan of an observation: the decisions of
//! `guardctl plan` between its arguments and the signature.

pub mod assemble;
pub mod exec;
pub mod pin;
pub mod progress;
pub mod shell;
pub mod stale_branches;
pub mod tags;
