//! The signed records an apply writes and every later reader verifies, each against what
//! binds it, in one place: the before-image and its consumed marker (this clone's), the
//! receipt (this clone's and the one published on the remote), the record of an abandoned
//! exec apply (published), the command's result, and the consumed marker as published. A
//! record that does not verify is `needs_recovery` (16) naming its file or ref; nothing is
//! believed from its bytes before that.

use super::shared::encode_failed;
use super::{EXEC_RESULT, EXEC_RESULT_PAYLOAD_TYPE, Executor};
use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPLY_NAMESPACE, ExecResult, RECEIPT_PAYLOAD_TYPE, Receipt};
use crate::plan::envelope::Envelope;
use crate::sign::{AllowedSigners, SigningKey, dsse};
use crate::store::state::{CONSUMED_PAYLOAD_TYPE, Consumed};
use crate::store::{BeforeImage, Store, state};
use crate::text::safe;
use time::OffsetDateTime;

impl Executor<'_> {
    /// The command's result as the applying run recorded it: an envelope signed by `key`
    /// (the key this apply or recovery signs the receipt with, the consumed marker's). A
    /// result that does not verify is 16, naming the file: it decides what the receipt says.
    pub(super) fn signed_exec_result(&self, id: &str, bytes: &[u8], key: &SigningKey) -> Result<ExecResult> {
        let path = self.store.plan_dir(id).join(EXEC_RESULT);
        let (result, v, _) = verified_state(&path, bytes, EXEC_RESULT_PAYLOAD_TYPE, "result")?;
        if v.fingerprint != crate::sign::sshsig::fingerprint(&key.public) {
            return Err(state::inconsistent(
                &path,
                format!(
                    "signed by {}, not by the key that consumed the plan",
                    v.fingerprint
                ),
            ));
        }
        Ok(result)
    }
}

/// The before-image of `id` and its consumed marker, each cross-checked (see
/// `store::state`): the image names this plan and only what guardctl writes; the marker,
/// if any, is signed by a key of the image's executor and binds this image's bytes.
/// Anything else is `needs_recovery` naming the file; nothing has been changed.
pub fn trusted(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(BeforeImage, Option<Consumed>)> {
    let dir = store.plan_dir(id);
    let Some((image, digest)) = store.checked_before_image(id)? else {
        return Err(state::inconsistent(
            &dir,
            "it has a journal but no before-image.json",
        ));
    };
    let path = dir.join("consumed");
    let Some(bytes) = store.read_file(id, "consumed")? else {
        return Ok((image, None));
    };
    let bad = |why: String| state::inconsistent(&path, why);
    let (marker, verified, envelope): (Consumed, _, _) =
        verified_state(&path, &bytes, CONSUMED_PAYLOAD_TYPE, "marker")?;
    if marker.plan_id != image.plan_id || marker.before_image != digest {
        return Err(bad(format!(
            "it consumes {} with before-image {}, but the before-image of this plan is {digest}",
            marker.plan_id, marker.before_image
        )));
    }
    marker_signer(
        signers,
        &marker,
        (&verified, &envelope),
        Some(&image.executor),
        &image.executor,
    )
    .map_err(bad)?;
    Ok((image, Some(marker)))
}

/// The recorded receipt of an applied plan and its envelope, verified once: signed by the key
/// the consumed marker names, for this plan. What `apply` prints is rendered from it
/// (`render::receipt`), never the bytes of a result file, which anyone who can write
/// `.git/guardctl` could have written.
pub fn recorded(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(Receipt, Envelope)> {
    let (image, marker) = consumed(store, id, signers)?;
    let path = store.plan_dir(id).join("receipt.json");
    let bad = |why: String| state::inconsistent(&path, why);
    let bytes = store
        .read_file(id, "receipt.json")?
        .ok_or_else(|| bad("the plan is recorded as applied but has no receipt".into()))?;
    let (receipt, verified, envelope): (Receipt, _, _) =
        verified_state(&path, &bytes, RECEIPT_PAYLOAD_TYPE, "receipt")?;
    if verified.fingerprint != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if receipt.plan_id != image.plan_id {
        return Err(bad(format!("it is the receipt of {}", safe(&receipt.plan_id))));
    }
    Ok((receipt, envelope))
}

/// A plan's consumed marker as published on its remote (`consumed/<id>`), verified as the
/// local marker is, except for the before-image it binds (which lives in the clone that
/// applied): signed in `guardctl-apply` by the key it names, that key speaking for the
/// plan's `executor` when the marker says it was made, about this plan. Anything else is
/// `needs_recovery` (16) naming the ref: whoever can push there can block the plan, never
/// make an apply report it applied.
pub fn remote_marker(
    item: &crate::store::consumption::RemoteItem,
    plan_id: &str,
    executor: Option<&str>,
    made_within: std::ops::RangeInclusive<time::OffsetDateTime>,
    signers: &AllowedSigners,
) -> Result<Consumed> {
    let bad = |why: String| unverifiable(&item.refname, why);
    let (marker, verified, envelope): (Consumed, _, _) = published(item, CONSUMED_PAYLOAD_TYPE, "marker")?;
    if marker.plan_id != plan_id {
        return Err(bad(format!("it consumes {}", safe(&marker.plan_id))));
    }
    // The key is judged at the time the marker claims: without this bound, an executor key
    // retired since (`valid-before`) could back-date a marker and receipt to before its
    // retirement and make every clone print "replayed" for a plan never applied. A genuine
    // marker is made while the plan can be applied (from its creation to its expiry, give
    // or take the clock skew), so a key retired before the plan was made cannot sign one.
    if !made_within.contains(&marker.created_at) {
        return Err(bad(format!(
            "it claims to be made at {}, outside the plan's life ({} to {}, with the clock skew)",
            crate::text::rfc3339(marker.created_at),
            crate::text::rfc3339(*made_within.start()),
            crate::text::rfc3339(*made_within.end()),
        )));
    }
    let shown = safe(executor.unwrap_or("(none)"));
    marker_signer(signers, &marker, (&verified, &envelope), executor, &shown).map_err(bad)?;
    Ok(marker)
}

/// A consumed marker's signer, judged the same wherever the marker is read: the key it names
/// (`marker.key`) made the signature, and speaks for `executor` in `guardctl-apply` when the
/// marker says it was made. The refusal names the executor as `shown`.
fn marker_signer(
    signers: &AllowedSigners,
    marker: &Consumed,
    (verified, envelope): (&dsse::Verified, &crate::plan::envelope::Envelope),
    executor: Option<&str>,
    shown: &str,
) -> std::result::Result<(), String> {
    if marker.key != verified.fingerprint {
        return Err("it names another key than the one that signed it".into());
    }
    let principals = apply_principals(signers, verified, envelope, marker.created_at);
    match executor {
        Some(e) if principals.iter().any(|p| p == e) => Ok(()),
        _ => Err(format!(
            "it is signed by {} ({}), not by the plan's executor {shown}",
            verified.fingerprint,
            if principals.is_empty() {
                "no principal".to_string()
            } else {
                principals.join(", ")
            },
        )),
    }
}

/// Who the signer of a verified marker speaks for in `guardctl-apply` at `at`: its plain key,
/// or the certificate its signature carries (a `cert-authority` line naming a principal the
/// certificate lists, both valid at `at`), judged exactly as the gate judges the applying key.
/// Not the bare key alone: an executor applying with a certificate of the day signs with a key
/// no line lists, and its marker would read as nobody's.
pub fn apply_principals(
    signers: &AllowedSigners,
    verified: &dsse::Verified,
    envelope: &crate::plan::envelope::Envelope,
    at: OffsetDateTime,
) -> Vec<String> {
    let certificate = envelope
        .signatures
        .first()
        .and_then(|s| crate::sign::sshsig::certificate_of(&s.sig));
    let signer = crate::sign::allowed_signers::Signer {
        key: &verified.signer,
        certificate: certificate.as_ref(),
    };
    signers.principals_at(signer, APPLY_NAMESPACE, &[at])
}

/// The receipt of a plan applied elsewhere and its envelope, verified once (a replay renders
/// it as [`recorded`]'s, so every clone prints the same bytes): the receipt published at
/// `receipts/<id>`, signed by the key of `marker` (a marker [`remote_marker`] verified), for
/// this plan.
pub fn remote_result(
    item: &crate::store::consumption::RemoteItem,
    marker: &Consumed,
    plan_hash: &str,
) -> Result<(Receipt, Envelope)> {
    let bad = |why: String| unverifiable(&item.refname, why);
    let (receipt, verified, envelope): (Receipt, _, _) = published(item, RECEIPT_PAYLOAD_TYPE, "receipt")?;
    if verified.fingerprint != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if receipt.plan_id != marker.plan_id || receipt.plan_hash != plan_hash {
        return Err(bad(format!("it is the receipt of {}", safe(&receipt.plan_id))));
    }
    Ok((receipt, envelope))
}

/// The record that the apply which consumed a plan on its remote was abandoned (before or
/// while its command ran: `stage`), when that is what `receipts/<id>` holds (its payload type says so; `None`:
/// it claims to be something else, for [`remote_result`] to judge). Verified as a receipt is:
/// signed in `guardctl-apply` by the key of `marker` (a marker [`remote_marker`] verified),
/// naming that key and that consumption, for this plan and plan hash. Anything else is 16
/// naming the ref: junk or a foreign signature never reads as "abandoned".
pub fn remote_abandoned(
    item: &crate::store::consumption::RemoteItem,
    marker: &Consumed,
    plan_hash: &str,
) -> Result<Option<state::Abandoned>> {
    let Ok(bytes) = item.bytes.as_ref() else {
        return Ok(None);
    };
    let claims = serde_json::from_slice::<crate::plan::envelope::Envelope>(bytes)
        .is_ok_and(|e| e.payload_type == state::ABANDONED_PAYLOAD_TYPE);
    if !claims {
        return Ok(None);
    }
    let bad = |why: String| unverifiable(&item.refname, why);
    let (record, verified, _): (state::Abandoned, _, _) =
        published(item, state::ABANDONED_PAYLOAD_TYPE, "record")?;
    if verified.fingerprint != marker.key || record.key != marker.key {
        return Err(bad(format!(
            "signed by {}, not by {}, the key that consumed the plan",
            verified.fingerprint, marker.key
        )));
    }
    if record.plan_id != marker.plan_id || record.plan_hash != plan_hash {
        return Err(bad(format!("it is the record of {}", safe(&record.plan_id))));
    }
    if record.consumed_at != marker.created_at {
        return Err(bad("it abandons another consumption than the marker's".into()));
    }
    Ok(Some(record))
}

/// The failure for a published marker or receipt that does not verify: 16, naming the ref.
fn unverifiable(refname: &str, why: String) -> Error {
    Error::new(
        Kind::NeedsRecovery,
        format!(
            "{} on the remote is not a marker or receipt guardctl can verify; nothing was changed",
            safe(refname)
        ),
    )
    .caused_by(safe(&why))
    .with_hint(format!(
        "someone pushed it by hand or it was damaged: inspect it (`git fetch <remote> {0} && git show FETCH_HEAD --stat`); the plan cannot be applied while it is there: ask whoever administers the remote to remove it, or plan again",
        safe(refname)
    ))
}

/// A consumed plan's image and marker, for a step that comes after consumption.
pub(super) fn consumed(store: &Store, id: &str, signers: &AllowedSigners) -> Result<(BeforeImage, Consumed)> {
    match trusted(store, id, signers)? {
        (image, Some(marker)) => Ok((image, marker)),
        (_, None) => Err(state::inconsistent(
            &store.plan_dir(id).join("journal"),
            "it records steps after consumption, but the plan has no consumed marker",
        )),
    }
}

/// A state file that cannot be encoded is an error: an empty file in its place would read
/// back as "nothing recorded".
/// A state file guardctl signs (consumed marker, command result): `value` in a DSSE envelope
/// of `payload_type`, signed by `key` in `guardctl-apply`, as the bytes to write as `file`.
pub(super) fn signed_state(
    payload_type: &str,
    value: &impl serde::Serialize,
    key: &SigningKey,
    file: &str,
) -> Result<Vec<u8>> {
    let payload = serde_json::to_vec(value).map_err(|e| encode_failed(file, e))?;
    let envelope = dsse::sign(payload_type, APPLY_NAMESPACE, &payload, key)
        .map_err(|e| Error::internal(format!("cannot sign guardctl's state file {file}")).caused_by(e))?;
    serde_json::to_vec_pretty(&envelope).map_err(|e| encode_failed(file, e))
}

/// A signed state file read back (consumed marker, receipt, command result): its envelope
/// verified as `payload_type` in `guardctl-apply` and its payload parsed; anything else is
/// 16 naming `path`. Who signed it is the caller's to check. Returns the envelope too (a
/// replay prints the receipt's).
fn verified_state<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    bytes: &[u8],
    payload_type: &str,
    what: &str,
) -> Result<(T, dsse::Verified, crate::plan::envelope::Envelope)> {
    verified_with(bytes, payload_type, what, &|why| state::inconsistent(path, why))
}

/// [`verified_state`] for bytes from anywhere: `bad` makes the error.
fn verified_with<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    payload_type: &str,
    what: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<(T, dsse::Verified, crate::plan::envelope::Envelope)> {
    open(bytes, payload_type, what).map_err(bad)
}

/// An item published on a remote (`consumed/<id>`, `receipts/<id>`) verified as
/// [`verified_with`] does: unreadable or not verifying is 16 naming its ref ([`unverifiable`]).
fn published<T: serde::de::DeserializeOwned>(
    item: &crate::store::consumption::RemoteItem,
    payload_type: &str,
    what: &str,
) -> Result<(T, dsse::Verified, crate::plan::envelope::Envelope)> {
    let bad = |why: String| unverifiable(&item.refname, why);
    let bytes = item.bytes.as_ref().map_err(|why| bad(why.clone()))?;
    verified_with(bytes, payload_type, what, &bad)
}

/// The one reading of a signed record's bytes: a DSSE envelope of `payload_type`, verified in
/// `guardctl-apply`, its payload parsed as `T` (`what` names it in the reason). Who signed it
/// is the caller's to judge. `Err` says why not, for the caller to make a refusal of, or (in
/// `log --verify`'s reading of what a remote publishes) to pass over.
pub fn open<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    payload_type: &str,
    what: &str,
) -> std::result::Result<(T, dsse::Verified, crate::plan::envelope::Envelope), String> {
    let envelope: crate::plan::envelope::Envelope =
        serde_json::from_slice(bytes).map_err(|e| format!("not a signed {what} ({e})"))?;
    let verified = dsse::verify(&envelope, payload_type, APPLY_NAMESPACE).map_err(|e| e.to_string())?;
    let value = serde_json::from_slice(&verified.payload).map_err(|e| format!("malformed {what} ({e})"))?;
    Ok((value, verified, envelope))
}
