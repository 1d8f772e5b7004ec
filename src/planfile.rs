//! Reading and writing plan files. A plan file is untrusted input until its signature checks
//! out: it is read without following symlinks and with a size cap, parsed strictly, its
//! envelope signature verified over the PAE bytes, and only then is the payload parsed.
//! Approvals are appended under a lock on the plan's directory, so two approvers writing to
//! one file at once never lose each other's approval.
//!
//! Every failure here is `invalid_plan` (exit 65) with a hint on what to do, but a file that
//! does not exist, which is `not_found` (66).

use crate::error::{Error, Kind, Result};
use crate::plan::envelope::{self, Envelope, PLAN_NAMESPACE, PLAN_PAYLOAD_TYPE, PlanFile};
use crate::plan::{self, Plan};
use crate::sign::{SigningKey, dsse};
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
    /// The plan id's hex digits, as used in backup ref names and state files.
    pub fn id_hex(&self) -> &str {
        self.plan_id.trim_start_matches("sha256:")
    }
}

fn invalid(path: &Path, what: impl Into<String>) -> Error {
    Error::invalid_plan(format!("{}: {}", path.display(), what.into()))
        .with_hint("use the plan file exactly as `guardctl plan` wrote it, or re-run `guardctl plan`")
}

/// Read an untrusted file: no symlinks, bounded size; failures are `invalid_plan`.
pub fn read_untrusted(path: &Path) -> Result<Vec<u8>> {
    crate::fsutil::read_bounded(path, envelope::MAX_FILE_BYTES).map_err(|e| match e {
        crate::fsutil::ReadError::NotFound(_) => Error::new(Kind::NotFound, e.to_string())
            .with_hint("check the path; plans are made by `guardctl plan`"),
        _ => Error::invalid_plan(e.to_string()).with_hint("pass the file itself, as guardctl wrote it"),
    })
}

pub fn load(path: &Path) -> Result<Loaded> {
    // The raw bytes go as soon as they are parsed: at 50,000 branches every copy of a plan
    // costs tens of megabytes.
    let file = plan_file(path, read_untrusted(path)?)?;
    from_file(path, file)
}

/// A plan file's bytes from elsewhere than a file (a plan published on a remote), checked
/// exactly as [`load`] checks a file; `name` says where they came from in messages.
pub fn load_bytes(name: &Path, bytes: &[u8]) -> Result<Loaded> {
    if bytes.len() as u64 > envelope::MAX_FILE_BYTES {
        return Err(invalid(
            name,
            format!("larger than {} bytes", envelope::MAX_FILE_BYTES),
        ));
    }
    from_file(name, plan_file(name, bytes.to_vec())?)
}

/// How many approvals the file at `path` carries when it is a plan file: the plan envelope,
/// its signature verifying over its payload; else `None`. The payload is neither parsed nor
/// validated: this is `plan -o`'s guard against replacing another file, an edited plan or an
/// approved plan by accident, which runs before and after every plan and must not cost a
/// plan's whole load (a 7,000-branch plan: about 15 ms each time, most of it the payload's
/// parse and checks). A payload the planner's own key re-signed is a plan here; what it
/// says is judged by every command that reads it.
pub fn peek_approvals(path: &Path) -> Option<usize> {
    let file = plan_file(path, read_untrusted(path).ok()?).ok()?;
    let payload = plan_payload(&file).ok()?;
    dsse::verify_decoded(&file.payload_type, &file.signatures, &payload, PLAN_NAMESPACE).ok()?;
    Some(file.approvals.len())
}

/// The payload of a plan envelope, decoded (its signature not checked yet).
fn plan_payload(file: &PlanFile) -> std::result::Result<Vec<u8>, dsse::EnvelopeError> {
    if file.payload_type != PLAN_PAYLOAD_TYPE {
        return Err(dsse::EnvelopeError::PayloadType(crate::text::safe(
            &file.payload_type,
        )));
    }
    envelope::decode_payload(&file.payload).map_err(|e| dsse::EnvelopeError::Base64(e.to_string()))
}

/// A plan file's bytes parsed (the payload kept in them: `envelope::parse_plan_file_owned`).
fn plan_file(path: &Path, bytes: Vec<u8>) -> Result<PlanFile> {
    envelope::parse_plan_file_owned(bytes)
        .map_err(|e| invalid(path, format!("not a guardctl plan file ({e})")))
}

fn from_file(path: &Path, file: PlanFile) -> Result<Loaded> {
    let bad_envelope = |e: dsse::EnvelopeError| invalid(path, format!("plan envelope: {e}"));
    let payload = plan_payload(&file).map_err(bad_envelope)?;
    // Parse the payload on a second core while the signature is checked and the plan id
    // hashed (a 50,000-branch plan is 15 MB: the parse takes longer than both digests); the
    // parse is used only once the signature has verified.
    let (verified, plan_id, parsed) = std::thread::scope(|s| {
        let parse = s.spawn(|| plan::parse_payload(&payload));
        let verified = dsse::verify_decoded(&file.payload_type, &file.signatures, &payload, PLAN_NAMESPACE);
        let plan_id = verified.is_ok().then(|| envelope::sha256_id(&payload));
        (verified, plan_id, parse.join())
    });
    let (signer, fingerprint) = verified.map_err(bad_envelope)?;
    let (Some(plan_id), Ok(plan)) = (plan_id, parsed) else {
        return Err(Error::internal("cannot parse the plan payload"));
    };
    let plan = plan.map_err(|e| invalid(path, e.to_string()))?;
    // Signed is not true: the planner could have written any of it. Derived fields must be
    // what guardctl computes, and every resource a ref of the operation's own namespace.
    if let Err(e) = plan::validate::check(&plan, crate::repo::is_valid_refname) {
        return Err(Error::invalid_plan(format!(
            "{}: not a plan guardctl would write: {e}",
            path.display()
        ))
        .with_details(serde_json::json!({"field": e.field}))
        .with_hint("re-run `guardctl plan`; do not edit or re-sign plan files"));
    }
    if plan.planner.key.as_deref() != Some(fingerprint.as_str()) {
        return Err(invalid(
            path,
            "plan names a different planner key than the one that signed it",
        ));
    }
    Ok(Loaded {
        plan_id,
        file,
        plan,
        signer,
    })
}

/// A detached approval file: exactly one envelope.
pub fn load_envelope(path: &Path) -> Result<Envelope> {
    let bytes = read_untrusted(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::invalid_plan(format!("{}: not a guardctl approval file ({e})", path.display()))
            .with_hint("pass the file `guardctl approve --out` wrote")
    })
}

/// Sign a plan payload and build the plan file (no approvals yet).
pub fn sign(plan: &Plan, key: &SigningKey) -> Result<(PlanFile, String)> {
    let payload =
        serde_json::to_vec(plan).map_err(|e| Error::internal("cannot serialise the plan").caused_by(e))?;
    // The plan id (a digest of megabytes) is computed while ssh-keygen signs.
    let (env, id) = std::thread::scope(|s| {
        let id = s.spawn(|| envelope::sha256_id(&payload));
        let env = dsse::sign(PLAN_PAYLOAD_TYPE, PLAN_NAMESPACE, &payload, key);
        (env, id.join())
    });
    let env = env.map_err(|e| Error::internal("cannot sign the plan").caused_by(e))?;
    let id = id.unwrap_or_else(|_| envelope::sha256_id(&payload));
    let file = PlanFile {
        payload_type: env.payload_type,
        payload: env.payload,
        signatures: env.signatures,
        approvals: vec![],
    };
    Ok((file, id))
}

/// A new plan file, as `plan` writes it: atomically, but not fsynced (see
/// [`crate::fsutil::write_replaceable_with`]; a plan lost in a crash is planned again, and a
/// damaged one is refused when read).
pub fn write(path: &Path, file: &PlanFile) -> Result<()> {
    crate::fsutil::write_replaceable_with(path, |w| {
        serde_json::to_writer_pretty(&mut *w, file)?;
        std::io::Write::write_all(w, b"\n")
    })
    .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))
}

/// Streamed into the file: a 20 MB plan is not serialised into memory first.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    crate::fsutil::write_atomic_with(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value)?;
        std::io::Write::write_all(w, b"\n")
    })
    .map_err(|e| Error::internal(format!("cannot write {}", path.display())).caused_by(e))
}

/// Append an approval or rejection to the plan file, atomically and under a lock, re-reading
/// the file inside the lock so concurrent approvers each keep their envelope.
pub fn append_approval(path: &Path, plan_id: &str, approval: Envelope) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let lock = std::fs::File::open(dir).map_err(Error::io("open", dir))?;
    lock.lock()
        .map_err(|e| Error::internal(format!("cannot lock {}", dir.display())).caused_by(e))?;
    let mut current = load(path)?;
    if current.plan_id != plan_id {
        return Err(
            Error::invalid_plan(format!("{} changed while approving", path.display()))
                .with_hint("review the new plan and approve again"),
        );
    }
    current.file.approvals.push(approval);
    write(path, &current.file)
    // The lock is released when `lock` is dropped.
}
