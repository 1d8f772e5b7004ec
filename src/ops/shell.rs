//! Just enough of the POSIX shell grammar to pin what a `sh -c` string runs: its simple
//! commands, each as the words it would run (redirections and leading assignments left out),
//! with each word's byte span and, when the word is a plain literal, its value.
//!
//! Not a shell: expansions (`$x`, `$(...)`, backquotes, globs, `~`) make a word non-literal
//! and are never guessed at; what runs inside a command substitution is not listed. Used
//! only to find programs and scripts to pin and to rewrite literal words that name them.

/// One word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub start: usize,
    pub end: usize,
    /// The word's value after quote removal; `None` when it holds an expansion or a glob.
    pub value: Option<String>,
}

#[derive(Debug)]
enum Token {
    Word(Word),
    /// An operator; `glued` when it directly follows the previous word (as in `2>`).
    Op {
        op: String,
        glued: bool,
    },
}

const SEPARATORS: [&str; 9] = [";", "&", "&&", "|", "||", "(", ")", ";;", "\n"];
/// Reserved words after which a command starts.
const OPENERS: [&str; 13] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done", "esac",
];

fn tokens(s: &str) -> Vec<Token> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut pending_body: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'\n'
            && let Some(body_end) = pending_body.take()
        {
            // A here-document's body is data, not commands.
            out.push(Token::Op {
                op: "\n".into(),
                glued: false,
            });
            i = body_end;
            continue;
        }
        if c == b'\n' || b";&|()<>".contains(&c) {
            let two = s.get(i..i + 2).unwrap_or("");
            let op = if ["&&", "||", ";;", ">>", "<<", ">&", "<&", "<>", ">|"].contains(&two) {
                two
            } else {
                &s[i..i + 1]
            };
            let glued = matches!(out.last(), Some(Token::Word(w)) if w.end == i);
            out.push(Token::Op {
                op: op.to_string(),
                glued,
            });
            i += op.len();
            if op == "<<" {
                let (word_end, body_end) = here_document(s, i);
                // The delimiter is the redirection's target: a word, skipped like any.
                out.push(Token::Word(Word {
                    start: i,
                    end: word_end,
                    value: None,
                }));
                i = word_end;
                pending_body = Some(body_end);
            }
            continue;
        }
        let (word, next) = word_at(s, i);
        out.push(Token::Word(word));
        i = next;
    }
    out
}

/// After `<<` at `i`: the end of the delimiter word, and where the document's body ends
/// (the end of the delimiter line). The body starts at the next newline.
fn here_document(s: &str, mut i: usize) -> (usize, usize) {
    let b = s.as_bytes();
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    let (word, end) = word_at(s, i);
    let delimiter: String = s[word.start..word.end]
        .chars()
        .filter(|c| !"'\"\\".contains(*c))
        .collect();
    let mut at = s[end..].find('\n').map_or(s.len(), |n| end + n);
    while at < s.len() {
        let start = at + 1;
        let stop = s[start..].find('\n').map_or(s.len(), |n| start + n);
        if s[start..stop].trim_start_matches('\t') == delimiter {
            return (end, stop);
        }
        at = stop;
    }
    (end, s.len())
}

/// The word starting at `start` and the index after it.
fn word_at(s: &str, start: usize) -> (Word, usize) {
    let chars: Vec<(usize, char)> = s[start..].char_indices().map(|(j, c)| (start + j, c)).collect();
    let mut value = String::new();
    let mut literal = true;
    let mut k = 0;
    let mut end = s.len();
    let mut depth = 0usize;
    while k < chars.len() {
        let (pos, c) = chars[k];
        if depth == 0 && (c == ' ' || c == '\t' || c == '\n' || ";&|()<>".contains(c)) {
            end = pos;
            break;
        }
        match c {
            '\\' => {
                k += 1;
                if let Some((_, n)) = chars.get(k) {
                    value.push(*n);
                }
            }
            '\'' => {
                k += 1;
                while k < chars.len() && chars[k].1 != '\'' {
                    value.push(chars[k].1);
                    k += 1;
                }
            }
            '"' => {
                k += 1;
                while k < chars.len() && chars[k].1 != '"' {
                    match chars[k].1 {
                        '\\' if chars.get(k + 1).is_some_and(|n| "$`\"\\\n".contains(n.1)) => {
                            k += 1;
                            value.push(chars[k].1);
                        }
                        '$' | '`' => {
                            literal = false;
                            value.push(chars[k].1);
                        }
                        other => value.push(other),
                    }
                    k += 1;
                }
            }
            '$' if chars.get(k + 1).is_some_and(|n| n.1 == '(') => {
                literal = false;
                depth += 1;
                k += 1;
            }
            ')' if depth > 0 => {
                depth -= 1;
            }
            '(' if depth > 0 => depth += 1,
            '`' => {
                literal = false;
                k += 1;
                while k < chars.len() && chars[k].1 != '`' {
                    k += 1;
                }
            }
            '$' | '*' | '?' | '[' => {
                literal = false;
                value.push(c);
            }
            '~' if k == 0 => {
                literal = false;
                value.push(c);
            }
            other => value.push(other),
        }
        k += 1;
    }
    if k >= chars.len() {
        end = s.len();
    }
    (
        Word {
            start,
            end,
            value: literal.then_some(value),
        },
        end,
    )
}

/// Every simple command of `script`, as its words (the first is the program).
pub fn commands(script: &str) -> Vec<Vec<Word>> {
    let mut out: Vec<Vec<Word>> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    let mut redirect_target = false;
    // After `for` or `case`, words up to the next separator are not a command.
    let mut skipping = false;
    for t in tokens(script) {
        match t {
            Token::Op { op, glued } => {
                if SEPARATORS.contains(&op.as_str()) {
                    if !current.is_empty() {
                        out.push(std::mem::take(&mut current));
                    }
                    skipping = false;
                    redirect_target = false;
                } else {
                    // A redirection: `2>` names a descriptor, not an argument.
                    if glued
                        && current
                            .last()
                            .and_then(|w| w.value.as_deref())
                            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    {
                        current.pop();
                    }
                    redirect_target = true;
                }
            }
            Token::Word(w) => {
                if redirect_target {
                    redirect_target = false;
                    continue;
                }
                if skipping {
                    continue;
                }
                if current.is_empty() {
                    let v = w.value.as_deref().unwrap_or("");
                    if OPENERS.contains(&v) {
                        continue;
                    }
                    if v == "for" || v == "case" {
                        skipping = true;
                        continue;
                    }
                    if is_assignment(v) {
                        continue;
                    }
                }
                current.push(w);
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// `word` quoted for `sh`, so it is read back as exactly this string.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(script: &str) -> Vec<Vec<Option<String>>> {
        commands(script)
            .into_iter()
            .map(|c| c.into_iter().map(|w| w.value).collect())
            .collect()
    }

    fn lit(words: &[&str]) -> Vec<Option<String>> {
        words.iter().map(|w| Some(w.to_string())).collect()
    }

    #[test]
    fn splits_simple_commands_on_operators_and_drops_redirections() {
        assert_eq!(
            values("sh scripts/prune.sh --dry-run 2>/dev/null | sort && X=1 tar cf out.tar trash >log"),
            vec![
                lit(&["sh", "scripts/prune.sh", "--dry-run"]),
                lit(&["sort"]),
                lit(&["tar", "cf", "out.tar", "trash"]),
            ]
        );
    }

    #[test]
    fn quotes_are_removed_and_expansions_are_not_literal() {
        let c = commands(r#"'my script.sh' "a b" c\ d "$HOME/x" $(ls -1) *.tar"#);
        let v: Vec<Option<&str>> = c[0].iter().map(|w| w.value.as_deref()).collect();
        assert_eq!(
            v,
            [Some("my script.sh"), Some("a b"), Some("c d"), None, None, None]
        );
        // The span covers the word as written, quotes included.
        assert_eq!(c[0][0].start, 0);
        assert_eq!(c[0][0].end, "'my script.sh'".len());
    }

    #[test]
    fn reserved_words_and_loops_open_commands() {
        assert_eq!(
            values("if test -f x; then ./run.sh; fi; for f in a b; do rm \"$f\"; done # rm -rf /"),
            vec![
                lit(&["test", "-f", "x"]),
                lit(&["./run.sh"]),
                lit(&["rm"]).into_iter().chain([None]).collect(),
            ]
        );
    }

    #[test]
    fn a_wrapper_keeps_its_options_and_assignments_as_words() {
        // Only leading assignments are the shell's; after `env` they are the wrapper's words,
        // which pin.rs reads to find the command it runs.
        assert_eq!(
            values("A=1 env -i B=2 sh -e x.sh; timeout 60 nice -n 5 sh x.sh"),
            vec![
                lit(&["env", "-i", "B=2", "sh", "-e", "x.sh"]),
                lit(&["timeout", "60", "nice", "-n", "5", "sh", "x.sh"]),
            ]
        );
    }

    #[test]
    fn here_document_bodies_are_data() {
        assert_eq!(
            values("cat <<'EOF' | sort\nrm -rf x\nEOF\nls"),
            vec![lit(&["cat"]), lit(&["sort"]), lit(&["ls"])]
        );
    }

    #[test]
    fn quote_round_trips_through_the_tokenizer() {
        for w in ["plain", "it's", "a b", "$HOME"] {
            let c = commands(&quote(w));
            assert_eq!(c[0][0].value.as_deref(), Some(w));
        }
    }
}
