//! A strict parser for git's allowed-signers file (`gpg.ssh.allowedSignersFile`, the format of
//! ssh-keygen(1) ALLOWED SIGNERS), and the lookup "which principal does this key speak for,
//! in this namespace, at this time".
//!
//! Stricter than OpenSSH on purpose: a principal must be exact (a line with a wildcard or
//! negated pattern would let one line speak for anyone: it is ignored, and named in
//! [`AllowedSigners::ignored`] so callers can warn), two principals that differ only by ASCII
//! case are refused as ambiguous (naming both lines), and an unknown option is an error rather
//! than ignored. `valid-after`/`valid-before` without a trailing `Z` are read as UTC.
//!
//! `cert-authority` lines work as in `ssh-keygen -Y verify`: a user certificate signed by the
//! line's CA key speaks for each of the line's principals that the certificate lists, while
//! both the line (`valid-*`, `namespaces=`) and the certificate (its validity) hold.
//!
//! Lookups take every time that must hold: guardctl checks a key at the time its signature
//! claims *and* at the time of the check, so a retired key cannot back-date a signature.

use ssh_key::certificate::CertType;
use ssh_key::{Certificate, PublicKey};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

#[derive(Debug, Clone)]
pub struct Entry {
    pub line: usize,
    pub principals: Vec<String>,
    pub namespaces: Option<Vec<String>>,
    pub valid_after: Option<OffsetDateTime>,
    pub valid_before: Option<OffsetDateTime>,
    pub cert_authority: bool,
    pub key: PublicKey,
}

#[derive(Debug, Clone, Default)]
pub struct AllowedSigners {
    pub entries: Vec<Entry>,
    /// Lines skipped because guardctl cannot honour them (wildcard or negated principals).
    pub ignored: Vec<ParseError>,
}

/// Who signed: a plain key, or a certificate (whose subject key made the signature).
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    pub key: &'a PublicKey,
    pub certificate: Option<&'a Certificate>,
}

impl<'a> Signer<'a> {
    pub fn plain(key: &'a PublicKey) -> Signer<'a> {
        Signer {
            key,
            certificate: None,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl AllowedSigners {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut ignored = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line) {
                Ok(mut entry) => {
                    entry.line = i + 1;
                    entries.push(entry);
                }
                Err(LineError::Pattern(message)) => ignored.push(ParseError { line: i + 1, message }),
                Err(LineError::Invalid(message)) => return Err(ParseError { line: i + 1, message }),
            }
        }
        check_case_ambiguity(&entries)?;
        Ok(AllowedSigners { entries, ignored })
    }

    /// The distinct principals `key` may speak for in `namespace` at `at`.
    pub fn principals_for(&self, key: &PublicKey, namespace: &str, at: OffsetDateTime) -> Vec<String> {
        self.principals_at(Signer::plain(key), namespace, &[at])
    }

    /// The distinct principals `signer` may speak for in `namespace` at every one of `times`
    /// (a key's line, or a certificate and its CA's line, must hold at each).
    pub fn principals_at(&self, signer: Signer, namespace: &str, times: &[OffsetDateTime]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.entries {
            if !e.holds(namespace, times) {
                continue;
            }
            let speaks: Vec<&String> = match (e.cert_authority, signer.certificate) {
                (false, None) if e.key.key_data() == signer.key.key_data() => e.principals.iter().collect(),
                (true, Some(cert)) if cert_valid(cert, signer.key, &e.key, times) => e
                    .principals
                    .iter()
                    .filter(|p| cert.valid_principals().contains(p))
                    .collect(),
                _ => continue,
            };
            for p in speaks {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

    /// Every principal a plain line lists `fingerprint` under, whatever its options: all the
    /// names that key's holder goes by.
    pub fn principals_of_key(&self, fingerprint: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self
            .entries
            .iter()
            .filter(|e| !e.cert_authority && super::sshsig::fingerprint(&e.key) == fingerprint)
        {
            for p in &e.principals {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

    /// Whether any line lists `signer` at all, whatever its principals, namespaces and
    /// validity: its plain key, or (signed with a certificate) the certificate's authority on
    /// a `cert-authority` line. A key no line lists is a stranger, or a retired teammate's.
    pub fn mentions(&self, signer: Signer) -> bool {
        self.entries
            .iter()
            .any(|e| match (e.cert_authority, signer.certificate) {
                (false, None) => e.key.key_data() == signer.key.key_data(),
                (true, Some(cert)) => cert.signature_key() == e.key.key_data(),
                _ => false,
            })
    }

    /// Whether any line (a plain key or a certificate authority) names `principal` exactly:
    /// a principal no line names can never sign anything.
    pub fn lists(&self, principal: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.principals.iter().any(|p| p == principal))
    }

    /// Fingerprints of every plain key listed for `principal` (ignoring ASCII case), under
    /// any options: whatever such a key signs is that principal's doing.
    pub fn keys_of(&self, principal: &str) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| !e.cert_authority && e.principals.iter().any(|p| p.eq_ignore_ascii_case(principal)))
            .map(|e| super::sshsig::fingerprint(&e.key))
            .collect()
    }
}

impl Entry {
    /// Whether the line's `namespaces=` admits `namespace` and its validity covers `times`.
    fn holds(&self, namespace: &str, times: &[OffsetDateTime]) -> bool {
        if let Some(ns) = &self.namespaces
            && !ns.iter().any(|n| n == namespace)
        {
            return false;
        }
        times.iter().all(|&at| {
            !(self.valid_after.is_some_and(|t| at < t) || self.valid_before.is_some_and(|t| at >= t))
        })
    }
}

/// A user certificate for `subject`, signed by `ca`, valid at each of `times` (what
/// `ssh-keygen -Y verify` checks of a certificate, principals aside). The CA's signature over
/// the certificate was checked when it was read (`sshsig::certificate`); here, that the CA is
/// this line's.
fn cert_valid(cert: &Certificate, subject: &PublicKey, ca: &PublicKey, times: &[OffsetDateTime]) -> bool {
    if cert.cert_type() != CertType::User
        || cert.public_key() != subject.key_data()
        || cert.signature_key() != ca.key_data()
    {
        return false;
    }
    times.iter().all(|t| {
        u64::try_from(t.unix_timestamp())
            .is_ok_and(|secs| cert.valid_after() <= secs && secs < cert.valid_before())
    })
}

/// Two spellings of one principal (differing only by ASCII case) would count as two people:
/// refuse the file, naming both lines.
fn check_case_ambiguity(entries: &[Entry]) -> Result<(), ParseError> {
    let mut seen: std::collections::HashMap<String, (&str, usize)> = std::collections::HashMap::new();
    for e in entries {
        for p in &e.principals {
            match seen.get(&p.to_ascii_lowercase()) {
                Some((other, line)) if *other != p.as_str() => {
                    return Err(ParseError {
                        line: e.line,
                        message: format!(
                            "principal `{}` differs only by case from `{}` on line {line}: guardctl would count one person twice; spell it one way",
                            crate::text::safe(p),
                            crate::text::safe(other)
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    seen.insert(p.to_ascii_lowercase(), (p.as_str(), e.line));
                }
            }
        }
    }
    Ok(())
}

/// Why a line is not used: a principal pattern guardctl ignores (with a warning), or an
/// error that refuses the whole file.
enum LineError {
    Pattern(String),
    Invalid(String),
}

impl From<String> for LineError {
    fn from(s: String) -> Self {
        LineError::Invalid(s)
    }
}

impl From<&str> for LineError {
    fn from(s: &str) -> Self {
        LineError::Invalid(s.to_string())
    }
}

/// Split off one whitespace-delimited token, honouring double quotes.
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let mut in_quotes = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            c if c.is_whitespace() && !in_quotes => return (&s[..i], &s[i..]),
            _ => {}
        }
    }
    (s, "")
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s)
}

fn is_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-")
}

fn parse_line(line: &str) -> Result<Entry, LineError> {
    let (principals_tok, rest) = token(line);
    let principals: Vec<String> = unquote(principals_tok)
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    if principals.is_empty() {
        return Err("no principal".into());
    }
    for p in &principals {
        if p.contains(['*', '?']) || p.starts_with('!') {
            return Err(LineError::Pattern(format!(
                "principal pattern `{}` ignored: guardctl needs exact principals (no wildcards or negation)",
                crate::text::safe(p)
            )));
        }
    }
    let (mut next, mut rest) = token(rest);
    let mut entry_opts = Options::default();
    if !is_key_type(next) {
        entry_opts = parse_options(next)?;
        (next, rest) = token(rest);
    }
    if !is_key_type(next) {
        return Err(format!("expected a key type (ssh-ed25519, ecdsa-sha2-..., ...), found `{next}`").into());
    }
    let (blob, _comment) = token(rest);
    if blob.is_empty() {
        return Err("missing key data".into());
    }
    let key =
        PublicKey::from_openssh(&format!("{next} {blob}")).map_err(|e| format!("invalid {next} key: {e}"))?;
    Ok(Entry {
        line: 0,
        principals,
        namespaces: entry_opts.namespaces,
        valid_after: entry_opts.valid_after,
        valid_before: entry_opts.valid_before,
        cert_authority: entry_opts.cert_authority,
        key,
    })
}

#[derive(Default)]
struct Options {
    namespaces: Option<Vec<String>>,
    valid_after: Option<OffsetDateTime>,
    valid_before: Option<OffsetDateTime>,
    cert_authority: bool,
}

fn parse_options(s: &str) -> Result<Options, String> {
    let mut opts = Options::default();
    // Split on commas outside quotes.
    let mut parts = Vec::new();
    let (mut start, mut in_quotes) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ',' if !in_quotes => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    for part in parts {
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n.to_ascii_lowercase(), Some(unquote(v))),
            None => (part.to_ascii_lowercase(), None),
        };
        match (name.as_str(), value) {
            ("cert-authority", None) => opts.cert_authority = true,
            ("namespaces", Some(v)) => {
                opts.namespaces = Some(v.split(',').map(|n| n.trim().to_string()).collect())
            }
            ("valid-after", Some(v)) => opts.valid_after = Some(parse_time(v)?),
            ("valid-before", Some(v)) => opts.valid_before = Some(parse_time(v)?),
            _ => return Err(format!("unknown or malformed option `{part}`")),
        }
    }
    Ok(opts)
}

/// `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`, optionally followed by `Z`.
fn parse_time(v: &str) -> Result<OffsetDateTime, String> {
    let bad = || format!("invalid time `{v}` (expected YYYYMMDD[HHMM[SS]][Z])");
    let digits = v.strip_suffix('Z').unwrap_or(v);
    if !matches!(digits.len(), 8 | 12 | 14) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| digits.get(r).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
    let month = Month::try_from(num(4..6) as u8).map_err(|_| bad())?;
    let date = Date::from_calendar_date(num(0..4) as i32, month, num(6..8) as u8).map_err(|_| bad())?;
    let (h, m, s) = match digits.len() {
        8 => (0, 0, 0),
        12 => (num(8..10), num(10..12), 0),
        _ => (num(8..10), num(10..12), num(12..14)),
    };
    let time = Time::from_hms(h as u8, m as u8, s as u8).map_err(|_| bad())?;
    Ok(PrimitiveDateTime::new(date, time).assume_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGTadL/M/DkOA/fXlbJ/tydAM7nOwGrYDWAYSOfe2udh";

    fn key() -> PublicKey {
        PublicKey::from_openssh(KEY).unwrap()
    }

    #[test]
    fn plain_line_maps_key_to_principal() {
        let s = AllowedSigners::parse(&format!("# comment\n\nalice@example.com {KEY} laptop\n")).unwrap();
        assert_eq!(s.entries[0].line, 3);
        let now = datetime!(2026-01-01 0:00 UTC);
        assert_eq!(
            s.principals_for(&key(), "guardctl-plan", now),
            vec!["alice@example.com"]
        );
    }

    #[test]
    fn namespaces_option_limits_use() {
        let s = AllowedSigners::parse(&format!("agent@ci namespaces=\"guardctl-plan\" {KEY}")).unwrap();
        let now = datetime!(2026-01-01 0:00 UTC);
        assert_eq!(s.principals_for(&key(), "guardctl-plan", now).len(), 1);
        assert!(s.principals_for(&key(), "guardctl-approval", now).is_empty());
    }

    #[test]
    fn validity_window_is_honoured() {
        let s = AllowedSigners::parse(&format!(
            "bob@x valid-after=\"20260101\",valid-before=\"20260201120000Z\" {KEY}"
        ))
        .unwrap();
        assert!(
            s.principals_for(&key(), "n", datetime!(2025-12-31 23:59 UTC))
                .is_empty()
        );
        assert_eq!(
            s.principals_for(&key(), "n", datetime!(2026-01-01 0:00 UTC))
                .len(),
            1
        );
        assert!(
            s.principals_for(&key(), "n", datetime!(2026-02-01 12:00 UTC))
                .is_empty()
        );
    }

    #[test]
    fn wildcard_and_negated_lines_are_ignored_naming_the_line() {
        let s = AllowedSigners::parse(&format!("ok@x {KEY}\n*@example.com {KEY}\n!bad@x {KEY}\n")).unwrap();
        assert_eq!(s.entries.len(), 1);
        let lines: Vec<usize> = s.ignored.iter().map(|i| i.line).collect();
        assert_eq!(lines, vec![2, 3]);
        assert!(s.ignored[0].message.contains("ignored"));
        let now = datetime!(2026-01-01 0:00 UTC);
        assert_eq!(s.principals_for(&key(), "n", now), vec!["ok@x"]);
    }

    #[test]
    fn principals_differing_only_by_case_refuse_the_file_naming_both_lines() {
        let e = AllowedSigners::parse(&format!("alice@x {KEY}\n# c\nbob@x,Alice@X {KEY}\n")).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("line 1"), "{}", e.message);
        assert!(e.message.contains("Alice@X"), "{}", e.message);
        assert!(AllowedSigners::parse(&format!("alice@x {KEY}\nalice@x {KEY}\n")).is_ok());
    }

    #[test]
    fn validity_must_hold_at_every_time_asked() {
        let s = AllowedSigners::parse(&format!("bob@x valid-before=\"20260201\" {KEY}")).unwrap();
        let then = datetime!(2026-01-15 0:00 UTC);
        let now = datetime!(2026-02-15 0:00 UTC);
        assert_eq!(s.principals_at(Signer::plain(&key()), "n", &[then]).len(), 1);
        assert!(
            s.principals_at(Signer::plain(&key()), "n", &[then, now])
                .is_empty()
        );
    }

    #[test]
    fn keys_of_a_principal_ignore_case_and_options() {
        let s = AllowedSigners::parse(&format!(
            "alice@x namespaces=\"guardctl-plan\" {KEY}\nbob@x {KEY}\n"
        ))
        .unwrap();
        assert_eq!(s.keys_of("ALICE@x").len(), 1);
        assert!(s.keys_of("carol@x").is_empty());
    }

    #[test]
    fn garbage_and_unknown_options_are_errors() {
        assert!(AllowedSigners::parse("alice ssh-ed25519 notbase64").is_err());
        assert!(AllowedSigners::parse(&format!("alice frobnicate {KEY}")).is_err());
        assert!(AllowedSigners::parse(&format!("alice valid-after=\"2026\" {KEY}")).is_err());
    }

    #[test]
    fn cert_authority_lines_never_match_a_plain_key() {
        let s = AllowedSigners::parse(&format!("alice cert-authority {KEY}")).unwrap();
        assert!(
            s.principals_for(&key(), "n", datetime!(2026-01-01 0:00 UTC))
                .is_empty()
        );
    }
}
