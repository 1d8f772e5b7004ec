//! Rendering: view structs built from plan data (`view`, `since`), human text from those
//! views (`human`), and terminal-safe escaping of repository strings (`escape`).
//!
//! Invariant: human text is only ever rendered from a view that `--json` would print, so the
//! two cannot disagree.

pub mod escape;
pub mod human;
pub mod receipt;
pub mod since;
pub mod view;
