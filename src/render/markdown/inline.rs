//! Inline Markdown that stays text: every string that came from the repository (names,
//! authors, subjects, commands, URLs) reaches a comment or job summary through here.
//!
//! Backslash escapes are not enough on GitHub: mentions (`@team`), issue references (`#12`),
//! bare-URL and e-mail autolinks and emoji are found in the *text* after Markdown is parsed,
//! so an escaped `\@team` still pings the team. Inside a code span none of that happens, and
//! no HTML, link or image is recognised. So a repository string is always a code span, and
//! prose that mixes guardctl's words with such strings keeps only plain words outside one.
//!
//! The input is already terminal-safe (`crate::text::safe`): no newline or control character
//! is left in it, and bidi or invisible characters are spelled out as `<U+XXXX>`.

/// Characters of one repository string shown in Markdown; longer ones are cut in the middle,
/// with `…` and how many characters were cut (the terminal `show` has them whole). Bounds
/// every row, so a budget can be kept. The middle, not the end: the end of a command is where
/// `; rm -rf /` goes.
pub const MAX_CHARS: usize = 200;

/// Where the text goes: a table cell must also escape `|`, which ends a cell even inside a
/// code span (GFM tables split rows before inline parsing; `\|` is the one escape that works
/// there, and it shows as `|`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Text,
    Cell,
}

/// `s` as a code span: shown verbatim, never a link, mention, image or HTML.
pub fn code(s: &str, place: Place) -> String {
    code_up_to(s, place, MAX_CHARS)
}

/// Characters of a command an exec plan runs (the command, its before-image, verify and
/// preview commands) shown in Markdown: what the reviewer approves is shown whole, unless it
/// is longer than any command a person reads.
pub const COMMAND_CHARS: usize = 4_000;

/// [`code`] with room for `max` characters.
pub fn code_up_to(s: &str, place: Place, max: usize) -> String {
    let (s, hidden) = cut(s, max);
    let span = span(s, place);
    if hidden > 0 {
        format!("{span} (**{hidden} characters cut**: `guardctl show` has it whole)")
    } else {
        span
    }
}

fn span(s: String, place: Place) -> String {
    if s.is_empty() {
        return "*(empty)*".to_string();
    }
    // The fence is one backtick longer than the longest run inside, so no run can close it.
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // CommonMark strips one space from each end when both are present; pad when the content
    // starts or ends with a backtick (it would join the fence) or a space (it would be lost).
    let pad = s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']);
    let body = if place == Place::Cell {
        s.replace('|', "\\|")
    } else {
        s
    };
    if pad {
        format!("{fence} {body} {fence}")
    } else {
        format!("{fence}{body}{fence}")
    }
}

/// A sentence that mixes guardctl's words with repository strings (a side effect naming a
/// command, a risk reason naming a branch): plain words stay prose, any other word becomes a
/// code span. Consecutive non-plain words share one span, so `rm -rf x` reads as one.
pub fn prose(s: &str, place: Place) -> String {
    let (s, _) = cut(s, MAX_CHARS * 2);
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for (i, word) in s.split(' ').enumerate() {
        // An empty word (two spaces in a row) joins whatever run it is in.
        if word.is_empty() && !run.is_empty() {
            run.push(word);
            continue;
        }
        if word.is_empty() || is_plain(word, i == 0) {
            if !run.is_empty() {
                out.push(code(&run.join(" "), place));
                run.clear();
            }
            out.push(word.to_string());
        } else {
            run.push(word);
        }
    }
    if !run.is_empty() {
        out.push(code(&run.join(" "), place));
    }
    out.join(" ")
}

/// A word Markdown and GitHub leave as it is: letters, digits and sentence punctuation, and
/// nothing GitHub turns into a link: not `www.`, a scheme's `:`, `@` or `#`, nor a reference
/// without a sign (`GH-26`, a repository's own `JIRA-12`, a commit id like `defaced` or
/// `cafe1234`), so no word mixes letters and digits or holds 7 hex digits in a row. The first
/// word of a sentence starts with a letter or is a number, so it never opens a list (`-`,
/// `1.`) or a heading. A colon may end a word (`first:`), never start or split one
/// (`:tada:`, `javascript:x`).
fn is_plain(word: &str, first: bool) -> bool {
    const PUNCT: &[char] = &[',', '.', ';', '(', ')', '\'', '/', '-', '=', '?', '!'];
    if let Some(stem) = word.strip_suffix(':') {
        return !stem.is_empty() && is_plain(stem, first);
    }
    let letters = word.chars().any(|c| c.is_ascii_alphabetic());
    let digits = word.chars().any(|c| c.is_ascii_digit());
    let reference = (letters && digits)
        || word
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|run| run.len() >= 7);
    let link = word.to_ascii_lowercase().contains("www.");
    let starts_ok = !first
        || word.starts_with(|c: char| c.is_ascii_alphabetic())
        || word.chars().all(|c| c.is_ascii_digit());
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || PUNCT.contains(&c))
        && !reference
        && !link
        && starts_ok
}

/// At most `max` characters, with `…` when cut. The input is escaped already, so a cut can at
/// worst split a `<U+XXXX>` spelling, never let a raw character through.
/// `s` in at most `max` characters and a `…`: its first three fifths and its last two; and
/// how many characters were left out.
fn cut(s: &str, max: usize) -> (String, usize) {
    let n = s.chars().count();
    if n <= max {
        return (s.to_string(), 0);
    }
    let head = max * 3 / 5;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - (max - head)).collect();
    (format!("{start}…{end}"), n - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_span_is_longer_than_any_backtick_run_inside() {
        assert_eq!(code("a``b", Place::Text), "```a``b```");
        assert_eq!(code("`x", Place::Text), "`` `x ``");
        assert_eq!(code("x ", Place::Text), "` x  `");
        assert_eq!(code("a|b", Place::Cell), "`a\\|b`");
        assert_eq!(code("", Place::Text), "*(empty)*");
    }

    #[test]
    fn prose_keeps_plain_words_and_spans_the_rest() {
        assert_eq!(
            prose("Runs rm -rf x in /repo with only PATH set.", Place::Text),
            "Runs rm -rf x in /repo with only PATH set."
        );
        assert_eq!(
            prose("ping @team about www.x.io now", Place::Text),
            "ping `@team` about `www.x.io` now"
        );
        assert_eq!(prose("- item", Place::Text), "`-` item");
        assert_eq!(prose("a <b> c", Place::Text), "a `<b>` c");
        assert_eq!(
            prose("see GH-26 and JIRA-12 at cafe1234 defaced", Place::Text),
            "see `GH-26` and `JIRA-12` at `cafe1234 defaced`"
        );
        assert_eq!(prose("a  b", Place::Text), "a  b");
        assert_eq!(prose("x 'a  b' y", Place::Text), "x 'a  b' y");
    }

    #[test]
    fn long_strings_are_cut_on_a_character() {
        let long = "é".repeat(MAX_CHARS + 5);
        let span = code(&long, Place::Text);
        assert_eq!(span.chars().filter(|c| *c == 'é').count(), MAX_CHARS);
        assert!(
            span.ends_with("` (**5 characters cut**: `guardctl show` has it whole)"),
            "{span}"
        );
    }

    /// The end of a long command is where the damage goes (`…; rm -rf /`): a cut keeps it.
    #[test]
    fn a_long_string_keeps_its_end() {
        let long = format!("echo {}; rm -rf /", "harmless-".repeat(25));
        let span = code(&long, Place::Text);
        assert!(span.contains("; rm -rf /`"), "{span}");
        assert!(span.starts_with("`echo harmless-"), "{span}");
        assert!(span.contains('…'), "{span}");
    }
}
