//! Reading and writing plan files. A plan file is untrusted input until its signature checks
//! out: it is read without following symlinks and with a size cap, parsed strictly, its
//! envelope signature verified over the PAE bytes, and only then is the payload parsed.
//!
//! Every failure here is `invalid_plan` (exit 65) with a hint on what to do.

use crate::error::{Error, Result};
use crate::plan::envelope::{self, PLAN_NAMESPACE, PLAN_PAYLOAD_TYPE, PlanFile, Signature};
use crate::plan::{self, Plan};
use crate::sign::{SigningKey, sshsig};
use ssh_key::PublicKey;
use std::path::Path;

/// A plan file whose envelope signature has been verified.
pub struct Loaded {
    pub file: PlanFile,
    pub plan: Plan,
    /// `sha256:<hex>` of the payload bytes.
    pub plan_id: String,
    /// The key that signed the plan envelope (who it belongs to is checked elsewhere).
    pub signer: PublicKey,
}

impl Loaded {
    /// The plan id's hex digits, as used in backup ref names.
    pub fn id_hex(&self) -> &str {
        self.plan_id.trim_start_matches("sha256:")
    }
}

fn invalid(path: &Path, what: impl Into<String>) -> Error {
    Error::invalid_plan(format!("{}: {}", path.display(), what.into()))
        .with_hint("use the plan file exactly as `guardctl plan` wrote it, or re-run `guardctl plan`")
}

pub fn load(path: &Path) -> Result<Loaded> {
    let bytes = crate::fsutil::read_bounded(path, envelope::MAX_FILE_BYTES).map_err(|e| {
        let hint = match e {
            crate::fsutil::ReadError::NotFound(_) => "create one with `guardctl plan`",
            _ => "pass the plan file itself, as `guardctl plan` wrote it",
        };
        Error::invalid_plan(e.to_string()).with_hint(hint)
    })?;
    parse(path, &bytes)
}

/// Verify and parse plan file bytes (`path` only names the file in messages).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Loaded> {
    let file = envelope::parse_plan_file(bytes)
        .map_err(|e| invalid(path, format!("not a guardctl plan file ({e})")))?;
    if file.payload_type != PLAN_PAYLOAD_TYPE {
        return Err(invalid(
            path,
            format!(
                "unknown payloadType `{}`",
                crate::render::escape::safe(&file.payload_type)
            ),
        ));
    }
    let payload = envelope::decode_payload(&file.payload)
        .map_err(|e| invalid(path, format!("payload is not base64 ({e})")))?;
    let [Signature { keyid, sig }] = file.signatures.as_slice() else {
        return Err(invalid(
            path,
            format!(
                "expected exactly one plan signature, found {}",
                file.signatures.len()
            ),
        ));
    };
    let pae = envelope::pae(&file.payload_type, &payload);
    let signer = sshsig::verify(sig, PLAN_NAMESPACE, &pae)
        .map_err(|e| invalid(path, format!("plan signature does not verify: {e}")))?;
    let fingerprint = sshsig::fingerprint(&signer);
    if *keyid != fingerprint {
        return Err(invalid(path, "signature keyid does not match the signing key"));
    }
    let plan = plan::parse_payload(&payload).map_err(|e| invalid(path, e.to_string()))?;
    if plan.planner.key.as_deref() != Some(fingerprint.as_str()) {
        return Err(invalid(
            path,
            "plan names a different planner key than the one that signed it",
        ));
    }
    Ok(Loaded {
        plan_id: envelope::sha256_id(&payload),
        file,
        plan,
        signer,
    })
}

/// Sign a plan payload and build the plan file (no approvals yet).
pub fn sign(plan: &Plan, key: &SigningKey) -> Result<(PlanFile, String)> {
    let payload =
        serde_json::to_vec(plan).map_err(|e| Error::internal("cannot serialise the plan").caused_by(e))?;
    let pae = envelope::pae(PLAN_PAYLOAD_TYPE, &payload);
    let sig = sshsig::sign(key, PLAN_NAMESPACE, &pae)
        .map_err(|e| Error::internal("cannot sign the plan").caused_by(e))?;
    let file = PlanFile {
        payload_type: PLAN_PAYLOAD_TYPE.to_string(),
        payload: envelope::encode_payload(&payload),
        signatures: vec![Signature {
            keyid: sshsig::fingerprint(&key.public),
            sig,
        }],
        approvals: vec![],
    };
    Ok((file, envelope::sha256_id(&payload)))
}

pub fn write(path: &Path, file: &PlanFile) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(file)
        .map_err(|e| Error::internal("cannot serialise the plan file").caused_by(e))?;
    bytes.push(b'\n');
    crate::fsutil::write_atomic(path, &bytes)
        .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))
}
