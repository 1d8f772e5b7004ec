//! Rejections and withdrawals kept in guardctl's state (`<state>/decisions/<plan id hex>/`),
//! besides the plan file: anyone can strip an envelope from a plan file (the approvals list
//! is covered by no signature), not from here. `approve`, `verify` and `apply` count both.
//!
//! Each envelope is one file named after its payload's id (so recording twice is harmless),
//! written atomically. Nothing here judges an envelope: the gate verifies each one.

use crate::error::{Error, Result};
use crate::plan::envelope::Envelope;
use std::path::{Path, PathBuf};

/// Envelopes larger than this are not decisions guardctl wrote.
const MAX_BYTES: u64 = 1024 * 1024;

fn plan_dir(state_dir: &Path, plan_id_hex: &str) -> PathBuf {
    state_dir.join("decisions").join(plan_id_hex)
}

/// Record a signed rejection or withdrawal of a plan (`payload_id` = `sha256:<hex>`).
pub fn record(state_dir: &Path, plan_id_hex: &str, payload_id: &str, env: &Envelope) -> Result<PathBuf> {
    let name = format!("{}.json", payload_id.trim_start_matches("sha256:"));
    let path = plan_dir(state_dir, plan_id_hex).join(name);
    let bytes = serde_json::to_vec_pretty(env)
        .map_err(|e| Error::internal("cannot encode the decision").caused_by(e))?;
    crate::fsutil::write_atomic(&path, &bytes)
        .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))?;
    Ok(path)
}

/// Every decision recorded for a plan, each with a name for messages, in a stable order.
/// An unreadable file is an error naming it: a damaged veto must not silently vanish.
pub fn load(state_dir: &Path, plan_id_hex: &str) -> Result<Vec<(String, Envelope)>> {
    let dir = plan_dir(state_dir, plan_id_hex);
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io("read the directory", &dir)(e)),
    };
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let bad = |why: String| {
                Error::invalid_plan(format!("{}: {why}", p.display()))
                    .with_hint("a recorded rejection is damaged: restore it, or plan again")
            };
            let bytes = crate::fsutil::read_bounded(&p, MAX_BYTES).map_err(|e| bad(e.to_string()))?;
            let env: Envelope = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
            Ok((format!("recorded decision {}", p.display()), env))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(n: u8) -> Envelope {
        Envelope {
            payload_type: "t".into(),
            payload: format!("p{n}"),
            signatures: vec![],
        }
    }

    #[test]
    fn records_once_per_payload_and_loads_in_order() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path(), "ab").unwrap().is_empty());
        record(dir.path(), "ab", "sha256:02", &env(2)).unwrap();
        record(dir.path(), "ab", "sha256:01", &env(1)).unwrap();
        record(dir.path(), "ab", "sha256:01", &env(1)).unwrap();
        let got: Vec<Envelope> = load(dir.path(), "ab")
            .unwrap()
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        assert_eq!(got, vec![env(1), env(2)]);
        assert!(load(dir.path(), "cd").unwrap().is_empty());
        std::fs::write(dir.path().join("decisions/ab/03.json"), "{").unwrap();
        assert!(load(dir.path(), "ab").is_err());
    }
}
