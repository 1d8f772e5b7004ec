//! DSSE envelopes (the in-toto/Sigstore standard) and the plan file around them.
//!
//! A signature covers DSSE's PAE bytes of the payload exactly as stored, never a
//! re-serialisation. This module only encodes and decodes; it does not verify signatures
//! (see `sign::verify`) and does no I/O.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const PLAN_PAYLOAD_TYPE: &str = "application/vnd.guardctl.plan.v1+json";
pub const APPROVAL_PAYLOAD_TYPE: &str = "application/vnd.guardctl.approval.v1+json";

/// SSHSIG namespace for plan signatures.
pub const PLAN_NAMESPACE: &str = "guardctl-plan";

/// Files larger than this are refused before parsing (a 50k-branch plan is ~30 MiB).
pub const MAX_FILE_BYTES: u64 = 128 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// `SHA256:<base64>` fingerprint of the signing key.
    pub keyid: String,
    /// Armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`).
    pub sig: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<Signature>,
}

/// A plan file: the plan envelope plus the approvals and rejections appended to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<Signature>,
    #[serde(default)]
    pub approvals: Vec<Envelope>,
}

impl PlanFile {
    pub fn envelope(&self) -> Envelope {
        Envelope {
            payload_type: self.payload_type.clone(),
            payload: self.payload.clone(),
            signatures: self.signatures.clone(),
        }
    }
}

/// DSSE's pre-authentication encoding:
/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = pae_prefix(payload_type, body.len());
    out.extend_from_slice(body);
    out
}

/// What [`pae`] puts before the body: the PAE is this, then the body, so a signature over it
/// can be checked without copying a body of megabytes after it.
pub fn pae_prefix(payload_type: &str, body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(body_len + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(body_len.to_string().as_bytes());
    out.push(b' ');
    out
}

pub fn encode_payload(body: &[u8]) -> String {
    B64.encode(body)
}

pub fn decode_payload(payload: &str) -> Result<Vec<u8>, base64::DecodeError> {
    B64.decode(payload)
}

/// `sha256:<hex>` of some bytes: plan ids and hashes use this form.
pub fn sha256_id(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Parse a whole plan file strictly: unknown fields, duplicate keys and trailing data are
/// errors (serde_json refuses trailing non-whitespace; derive refuses duplicates).
pub fn parse_plan_file(bytes: &[u8]) -> Result<PlanFile, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// [`parse_plan_file`] of a file's bytes, which become the payload's string in place: the
/// payload is nearly all of a plan file (20 MB at 50,000 branches), and a copy of it is as
/// many fresh pages to fault in. The same strict parse (unknown fields, duplicates and
/// trailing data refused).
pub fn parse_plan_file_owned(mut bytes: Vec<u8>) -> Result<PlanFile, serde_json::Error> {
    use std::borrow::Cow;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct View<'a> {
        #[serde(rename = "payloadType")]
        payload_type: String,
        #[serde(borrow)]
        payload: Cow<'a, str>,
        signatures: Vec<Signature>,
        #[serde(default)]
        approvals: Vec<Envelope>,
    }
    let view: View<'_> = serde_json::from_slice(&bytes)?;
    // Where the payload lies in `bytes`, when the parser could borrow it (no escapes in it,
    // as in every file guardctl writes).
    let span = match &view.payload {
        Cow::Borrowed(s) => Some((s.as_ptr() as usize - bytes.as_ptr() as usize, s.len())),
        Cow::Owned(_) => None,
    };
    let View {
        payload_type,
        payload,
        signatures,
        approvals,
    } = view;
    let payload = match span {
        None => payload.into_owned(),
        Some((start, len)) => {
            drop(payload);
            bytes.truncate(start + len);
            bytes.drain(..start);
            String::from_utf8(bytes).map_err(serde::de::Error::custom)?
        }
    };
    Ok(PlanFile {
        payload_type,
        payload,
        signatures,
        approvals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // From the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn a_plan_file_parsed_in_place_is_the_same_as_parsed_from_a_copy() {
        let files = [
            r#"{"payloadType":"t","payload":"eyJhIjoxfQ==","signatures":[{"keyid":"k","sig":"s"}],"approvals":[]}"#,
            // An escaped payload cannot be borrowed: it is copied, as before.
            r#"{"payloadType":"t","payload":"eyJhIjo\u0078fQ==","signatures":[]}"#,
            r#"{"approvals":[],"signatures":[],"payload":"","payloadType":"t"}"#,
        ];
        for f in files {
            assert_eq!(
                parse_plan_file_owned(f.as_bytes().to_vec()).unwrap(),
                parse_plan_file(f.as_bytes()).unwrap()
            );
        }
        for bad in [
            r#"{"payloadType":"t","payload":"","signatures":[],"extra":1}"#,
            r#"{"payloadType":"t","payload":"a","payload":"b","signatures":[]}"#,
            r#"{"payloadType":"t","payload":"","signatures":[]} {}"#,
            r#"{"payloadType":"t","payload":1,"signatures":[]}"#,
        ] {
            assert!(parse_plan_file_owned(bad.as_bytes().to_vec()).is_err(), "{bad}");
        }
    }

    #[test]
    fn plan_file_rejects_unknown_fields_duplicates_and_trailing_data() {
        let good = r#"{"payloadType":"t","payload":"","signatures":[],"approvals":[]}"#;
        assert!(parse_plan_file(good.as_bytes()).is_ok());
        let unknown = r#"{"payloadType":"t","payload":"","signatures":[],"extra":1}"#;
        assert!(parse_plan_file(unknown.as_bytes()).is_err());
        let dup = r#"{"payloadType":"t","payloadType":"u","payload":"","signatures":[]}"#;
        assert!(parse_plan_file(dup.as_bytes()).is_err());
        let trailing = format!("{good} {{}}");
        assert!(parse_plan_file(trailing.as_bytes()).is_err());
    }

    #[test]
    fn sha256_id_has_prefix_and_hex() {
        assert_eq!(
            sha256_id(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
