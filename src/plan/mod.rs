//! Plans as plain data: the signed payload's serde types, the DSSE envelope, the plan hash
//! and the derived parts (diff, side effects, risk, summary).
//!
//! Not here: files, git, signatures, the clock. Nothing in `plan/` does I/O, so every rule
//! about the format can be unit-tested from bytes.

pub mod approval;
pub mod derive;
pub mod envelope;
pub mod hash;
pub mod manifest;
pub mod model;
pub mod validate;

pub use model::*;

/// Why a payload was refused.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("unknown plan format version {0} (this guardctl reads version {FORMAT_VERSION})")]
    UnknownVersion(u64),
    #[error("malformed plan payload: {0}")]
    Malformed(#[from] serde_json::Error),
}

/// Parse signed payload bytes: the format version first (so a newer plan gets a clear
/// "unknown version" rather than "unknown field"), then the whole payload strictly.
pub fn parse_payload(bytes: &[u8]) -> Result<Plan, PayloadError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        format_version: u64,
    }
    let probe: Probe = serde_json::from_slice(bytes)?;
    if probe.format_version != u64::from(FORMAT_VERSION) {
        return Err(PayloadError::UnknownVersion(probe.format_version));
    }
    Ok(serde_json::from_slice(bytes)?)
}
