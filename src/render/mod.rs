//! Rendering: view structs built from plan data (`view`, `since`) and human text from those
//! views (`human`, `receipt`). Escaping lives in the leaf module [`crate::text`], which every
//! layer may use (`escape` re-exports it for old paths; new code names `crate::text`).
//!
//! Invariant: human text is only ever rendered from a view that `--json` would print, so the
//! two cannot disagree.

pub use crate::text as escape;
pub mod gc;
pub mod guard;
pub mod human;
pub mod log;
pub mod markdown;
pub mod receipt;
pub mod recovery;
pub mod review;
pub mod rollback;
pub mod since;
pub mod verify;
pub mod view;
pub mod wait;
pub mod whoami;

/// Serialize `value` with its keys in alphabetical order at every level, as a JSON document
/// built with `serde_json::json!` is written (serde_json's map is sorted). The documents of
/// `verify`, `approve`/`reject` and `log` were built that way and keep their exact bytes:
/// their views declare their own fields in alphabetical order and pass nested values
/// through this (`#[serde(serialize_with = "crate::render::sorted")]`).
pub fn sorted<T: serde::Serialize, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}
