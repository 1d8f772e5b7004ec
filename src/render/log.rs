//! What `log` prints: the audit trail's entries and whether they are intact (`log --json`'s
//! document, and the lines a person reads), and the details of a broken log's error.

use crate::store::audit::{ANCHOR_REF, Break, Record};
use crate::text::safe;
use serde::Serialize;
use std::io::{self, Write};

/// `log --json`'s document, its keys in alphabetical order at every level, as it has always
/// been written ([`crate::render::sorted`]).
#[derive(Debug, Serialize)]
pub struct LogView<'a> {
    #[serde(rename = "break", serialize_with = "crate::render::sorted")]
    pub brk: Option<&'a Break>,
    #[serde(serialize_with = "crate::render::sorted")]
    pub entries: &'a [Record],
    pub intact: bool,
    pub pending: bool,
    /// Intact, and every `--verify` check passed.
    pub verified: bool,
    /// Whether the `--verify` checks ran.
    #[serde(skip)]
    pub verify: bool,
}

/// The details of a broken log's error under `--json`: the break, and the entries that can
/// be trusted.
#[derive(Debug, Serialize)]
pub struct BrokenLog<'a> {
    #[serde(rename = "break")]
    pub brk: &'a Break,
    pub entries: &'a [Record],
}

/// One line per entry, then (when intact) what was checked.
pub fn render(v: &LogView, w: &mut dyn Write) -> io::Result<()> {
    for e in v.entries {
        let plan = e
            .plan_id
            .as_deref()
            .map(crate::render::view::short_id)
            .unwrap_or_default();
        let who = e.principal.as_deref().map(safe).unwrap_or_default();
        writeln!(
            w,
            "{:>4} {} {:<8} {plan} {who} {}",
            e.seq,
            e.time,
            e.event,
            safe(&e.detail)
        )?;
    }
    if v.brk.is_none() {
        let what = if v.verify {
            "; every key speaks for its principal and every receipt is in the log"
        } else {
            ""
        };
        writeln!(
            w,
            "{} entr{}, signed, chained and anchored by {}{what}.",
            v.entries.len(),
            if v.entries.len() == 1 { "y" } else { "ies" },
            ANCHOR_REF
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_has_the_bytes_json_wrote() {
        let b = Break {
            line: 3,
            reason: "x".into(),
        };
        for brk in [None, Some(&b)] {
            let v = LogView {
                brk,
                entries: &[],
                intact: brk.is_none(),
                pending: false,
                verified: false,
                verify: true,
            };
            let before = serde_json::json!({
                "entries": Vec::<Record>::new(),
                "intact": brk.is_none(),
                "verified": false,
                "break": brk,
                "pending": false,
            });
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                serde_json::to_string(&before).unwrap()
            );
        }
    }
}
