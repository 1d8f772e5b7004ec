//! Signing and verifying DSSE envelopes with SSHSIG: one signature over the PAE bytes of the
//! payload as stored, in a namespace that says what the envelope is (plan, approval, receipt),
//! so a signature made for one purpose never verifies as another.

use super::key::SigningKey;
use super::sshsig::{self, SignError};
use crate::plan::envelope::{self, Envelope, Signature};
use ssh_key::PublicKey;

#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("unexpected payloadType `{0}`")]
    PayloadType(String),
    #[error("payload is not base64 ({0})")]
    Base64(String),
    #[error("expected exactly one signature, found {0}")]
    SignatureCount(usize),
    #[error("signature does not verify: {0}")]
    Signature(#[from] sshsig::VerifyError),
    #[error("signature keyid does not match the signing key")]
    KeyId,
}

/// A verified envelope: the payload bytes and the key that signed them.
pub struct Verified {
    pub payload: Vec<u8>,
    pub signer: PublicKey,
    pub fingerprint: String,
}

pub fn sign(
    payload_type: &str,
    namespace: &str,
    payload: &[u8],
    key: &SigningKey,
) -> Result<Envelope, SignError> {
    // A plan's payload is megabytes: it is encoded while ssh-keygen signs.
    let (sig, encoded) = std::thread::scope(|s| {
        let encoded = s.spawn(|| envelope::encode_payload(payload));
        let sig = sshsig::sign(key, namespace, &envelope::pae(payload_type, payload));
        (sig, encoded.join())
    });
    let sig = sig?;
    let encoded = encoded.unwrap_or_else(|_| envelope::encode_payload(payload));
    Ok(Envelope {
        payload_type: payload_type.to_string(),
        payload: encoded,
        signatures: vec![Signature {
            keyid: sshsig::fingerprint(&key.public),
            sig,
        }],
    })
}

pub fn verify(env: &Envelope, payload_type: &str, namespace: &str) -> Result<Verified, EnvelopeError> {
    if env.payload_type != payload_type {
        return Err(EnvelopeError::PayloadType(crate::text::safe(&env.payload_type)));
    }
    let payload = envelope::decode_payload(&env.payload).map_err(|e| EnvelopeError::Base64(e.to_string()))?;
    let (signer, fingerprint) = verify_decoded(&env.payload_type, &env.signatures, &payload, namespace)?;
    Ok(Verified {
        payload,
        signer,
        fingerprint,
    })
}

/// The signature check of `verify`, over an already decoded payload (the caller checked the
/// payload type), so a large plan's payload is decoded once and never copied.
pub fn verify_decoded(
    payload_type: &str,
    signatures: &[Signature],
    payload: &[u8],
    namespace: &str,
) -> Result<(PublicKey, String), EnvelopeError> {
    let [Signature { keyid, sig }] = signatures else {
        return Err(EnvelopeError::SignatureCount(signatures.len()));
    };
    // The PAE in two pieces, not one copy: a plan's payload is megabytes (`verify_pieces`).
    let prefix = envelope::pae_prefix(payload_type, payload.len());
    let signer = sshsig::verify_pieces(sig, namespace, &[&prefix, payload])?;
    let fingerprint = sshsig::fingerprint(&signer);
    if *keyid != fingerprint {
        return Err(EnvelopeError::KeyId);
    }
    Ok((signer, fingerprint))
}
