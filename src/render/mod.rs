//! Rendering: view structs built from plan data (`view`, `since`) and human text from those
//! views (`human`, `receipt`). Escaping lives in the leaf module [`crate::text`], which every
//! layer may use (`escape` re-exports it for old paths; new code names `crate::text`).
//!
//! Invariant: human text is only ever rendered from a view that `--json` would print, so the
//! two cannot disagree.

pub use crate::text as escape;
pub mod human;
pub mod receipt;
pub mod since;
pub mod verify;
pub mod view;
