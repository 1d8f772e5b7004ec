//! Text helpers every layer uses, so that none has to import another layer for them (a leaf:
//! it imports no other guardctl module): terminal-safe escaping, JSON output, RFC 3339 times,
//! short digests and line changes for views.
//!
//! Terminal-safe text. Every string that comes from a repository (branch names, authors,
//! subjects) or from a file is passed through `safe` before any human output, terminal or
//! not, so a crafted name can neither drive the terminal (ESC, OSC, C1 controls) nor hide or
//! reorder what a reviewer reads (bidi overrides, zero-width characters).
//!
//! `flags` names what was suspicious so the renderer can point it out, including names that
//! mix scripts or look like a protected name ("mаin" with a Cyrillic а).

use serde::Serialize;
use unicode_script::{Script, UnicodeScript};

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that render as nothing (or nothing a reviewer can read) yet make two names
/// differ: every format character (General_Category Cf: zero-width spaces and joiners, word
/// joiners, the tag characters U+E0000–E007F, interlinear annotation marks, musical format
/// controls), the line and paragraph separators (Zl, Zp), and the default-ignorable code
/// points that are not Cf — variation selectors (U+FE00–FE0F, U+E0100–E01EF), Mongolian free
/// variation selectors, the combining grapheme joiner, Hangul and Khmer fillers — with the
/// unassigned ranges Unicode reserves as default-ignorable, so a later version's assignments
/// are caught too. Bidi controls are Cf as well but are reported as bidi (`is_bidi`).
fn is_invisible(c: char) -> bool {
    use unicode_general_category::{GeneralCategory, get_general_category};
    if is_bidi(c) {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Format | GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator
    ) || matches!(
        c,
        '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{2065}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The string with every control, bidi and invisible character made visible.
/// ASCII controls become `\n`, `\t`, `\xHH`; others `<U+XXXX>`; a backslash is doubled and a
/// literal `<U+` written `\x3cU+`, so neither kind of escape can be forged by typing it (git
/// allows `<` in a branch name: `ma<U+200B>in` typed would read as a hidden character).
pub fn safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        match c {
            '<' if s[i + 1..].starts_with("U+") => out.push_str("\\x3c"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || is_bidi(c) || is_invisible(c) => {
                out.push_str(&format!("<U+{:04X}>", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// What a reviewer should be told about a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    Control,
    Bidi,
    Invisible,
    NonAscii,
    MixedScripts,
    LooksProtected,
}

impl Flag {
    pub fn describe(self) -> &'static str {
        match self {
            Flag::Control => "control characters",
            Flag::Bidi => "bidi override",
            Flag::Invisible => "invisible characters",
            Flag::NonAscii => "non-ASCII",
            Flag::MixedScripts => "mixed scripts",
            Flag::LooksProtected => "looks like a protected name",
        }
    }
}

/// Flags for `name`; `protected` are the literal protected names (`main`, `master`, ...).
pub fn flags(name: &str, protected: &[&str]) -> Vec<Flag> {
    let mut out = Vec::new();
    if name.chars().any(char::is_control) {
        out.push(Flag::Control);
    }
    if name.chars().any(is_bidi) {
        out.push(Flag::Bidi);
    }
    if name.chars().any(is_invisible) {
        out.push(Flag::Invisible);
    }
    if !name.is_ascii() {
        out.push(Flag::NonAscii);
    }
    let mut scripts: Vec<Script> = Vec::new();
    for c in name.chars().filter(|c| c.is_alphabetic()) {
        let s = c.script();
        if !matches!(s, Script::Common | Script::Inherited | Script::Unknown) && !scripts.contains(&s) {
            scripts.push(s);
        }
    }
    if scripts.len() > 1 {
        out.push(Flag::MixedScripts);
    }
    let skel = skeleton(name);
    if protected.iter().any(|p| *p != name && skeleton(p) == skel) {
        out.push(Flag::LooksProtected);
    }
    out
}

/// A rough confusables skeleton: lower case, common homoglyphs folded to ASCII, invisible
/// characters dropped, `rn` read as `m`. Enough to catch `mаin`, `maın`, `Main`, `rnain`.
fn skeleton(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_invisible(c) || is_bidi(c) {
            continue;
        }
        let folded = match c {
            'а' | 'α' | 'ɑ' => 'a',
            'е' | 'ε' | 'ё' => 'e',
            'о' | 'ο' | 'σ' | '0' => 'o',
            'і' | 'ı' | 'ι' | 'ї' | '1' | 'l' | '|' | 'ӏ' => 'i',
            'р' | 'ρ' => 'p',
            'с' | 'ϲ' => 'c',
            'у' | 'γ' => 'y',
            'х' | 'χ' => 'x',
            'ѕ' => 's',
            'ј' => 'j',
            'ԁ' => 'd',
            'ν' | 'ѵ' => 'v',
            'м' => 'm',
            'т' | 'τ' => 't',
            'к' | 'κ' => 'k',
            'н' | 'η' => 'n',
            'в' => 'b',
            c => c.to_lowercase().next().unwrap_or(c),
        };
        out.push(folded);
    }
    out.replace("rn", "m")
}

/// Whether a character must never reach a terminal raw: controls (C0, DEL, C1), bidi
/// overrides and isolates, zero-width and other invisible characters.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi(c) || is_invisible(c)
}

/// A serde_json formatter that writes every `is_unsafe` character as a `\uXXXX` escape.
/// serde_json escapes only C0 controls; C1 controls and bidi characters would otherwise reach
/// the terminal of whoever reads `--json` output. The JSON means exactly the same string.
struct SafeFormatter<'a>(serde_json::ser::PrettyFormatter<'a>);

impl serde_json::ser::Formatter for SafeFormatter<'_> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(w, "\\u{:04x}", u)?;
                }
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Pretty JSON of `value` that is safe to print on a terminal (see `SafeFormatter`).
/// RFC 3339 UTC, as plans, journals and audit entries write times.
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub fn json_pretty(value: &impl serde::Serialize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, SafeFormatter(Default::default()));
    value.serialize(&mut ser)?;
    Ok(out)
}

/// A sha256 digest (hex) shortened for people: `sha256:` and its first 12 characters (by
/// character, so a crafted digest cannot split one).
pub fn short_digest(h: &str) -> String {
    format!("sha256:{}", h.chars().take(12).collect::<String>())
}

/// Lines only in `new` and lines only in `old`, in order (a line diff with `similar`).
pub fn line_changes(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let line = change.value().trim_end_matches('\n').to_string();
        match change.tag() {
            similar::ChangeTag::Insert => added.push(line),
            similar::ChangeTag::Delete => removed.push(line),
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crafted_digest_is_shortened_without_panicking() {
        assert_eq!(short_digest("ééééééééééééééé"), "sha256:éééééééééééé");
        assert_eq!(short_digest("ab"), "sha256:ab");
    }

    #[test]
    fn line_changes_name_the_added_and_removed_lines() {
        let (a, r) = line_changes("rm a\nrm b\nrm c\n", "rm a\nrm c\nrm d\n");
        assert_eq!(a, ["rm d"]);
        assert_eq!(r, ["rm b"]);
    }

    #[test]
    fn safe_escapes_controls_bidi_and_invisibles() {
        assert_eq!(safe("a\u{1b}[31mred"), "a\\x1b[31mred");
        assert_eq!(safe("x\u{9b}y"), "x<U+009B>y");
        assert_eq!(safe("evil\u{202E}txt"), "evil<U+202E>txt");
        assert_eq!(safe("zero\u{200B}width"), "zero<U+200B>width");
        assert_eq!(safe("tab\tnl\n"), "tab\\tnl\\n");
        assert_eq!(safe("back\\x1b"), "back\\\\x1b");
        assert_eq!(safe("ünïcødé/ok"), "ünïcødé/ok");
        // An escape typed into a name does not read as one.
        assert_eq!(safe("ma<U+200B>in"), "ma\\x3cU+200B>in");
        assert_ne!(safe("ma<U+200B>in"), safe("ma\u{200B}in"));
        assert_eq!(safe("a<b>"), "a<b>");
        assert!(
            !safe("\u{7f}\u{0}\u{1b}]8;;http://x\u{7}")
                .chars()
                .any(|c| c.is_control())
        );
    }

    /// Every character that renders as nothing is made visible and flagged, and dropped when
    /// comparing with a protected name: format characters beyond the zero-width ones (tags,
    /// interlinear annotations, musical controls), line and paragraph separators, and every
    /// variation selector.
    #[test]
    fn every_invisible_character_is_escaped_and_flagged() {
        let p = ["main"];
        for c in [
            '\u{E0001}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{180B}',
            '\u{180D}',
            '\u{180F}',
            '\u{206A}',
            '\u{206F}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{2028}',
            '\u{2029}',
            '\u{FE0F}',
            '\u{13430}',
        ] {
            let name = format!("ma{c}in");
            let shown = safe(&name);
            assert_eq!(shown, format!("ma<U+{:04X}>in", c as u32), "{c:?}");
            assert!(is_unsafe(c), "{c:?}");
            let f = flags(&name, &p);
            assert!(f.contains(&Flag::Invisible), "{c:?}: {f:?}");
            assert!(f.contains(&Flag::LooksProtected), "{c:?}: {f:?}");
        }
        // Bidi controls stay bidi, not also invisible; visible letters stay as they are.
        assert_eq!(flags("x\u{202E}y", &p), vec![Flag::Bidi, Flag::NonAscii]);
        assert_eq!(safe("日本語/ветка"), "日本語/ветка");
    }

    #[test]
    fn flags_name_what_is_suspicious() {
        let p = ["main", "master", "develop"];
        assert!(flags("feature/x", &p).is_empty());
        assert!(
            flags("main", &p).is_empty(),
            "the protected name itself is not a look-alike"
        );
        assert!(flags("m\u{0430}in", &p).contains(&Flag::LooksProtected));
        assert!(flags("m\u{0430}in", &p).contains(&Flag::MixedScripts));
        assert!(flags("Main", &p).contains(&Flag::LooksProtected));
        assert!(flags("rnaster", &p).contains(&Flag::LooksProtected));
        assert!(flags("ma\u{200B}in", &p).contains(&Flag::Invisible));
        assert!(flags("ma\u{200B}in", &p).contains(&Flag::LooksProtected));
        assert!(flags("x\u{202E}y", &p).contains(&Flag::Bidi));
        assert_eq!(flags("café", &p), vec![Flag::NonAscii]);
    }

    #[test]
    fn json_output_escapes_c1_bidi_and_invisible_characters_but_means_the_same() {
        let evil = "a\u{202E}b\u{9b}2J\u{200B}c\u{1b}d é";
        let bytes = json_pretty(&serde_json::json!({ "k": evil })).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            !text.contains(['\u{202E}', '\u{9b}', '\u{200B}', '\u{1b}']),
            "{text}"
        );
        assert!(text.contains("\\u202e") && text.contains("é"), "{text}");
        let back: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back["k"], evil);
    }
}
