//! A commit's facts (committer time, author, subject) from its raw bytes, by libgit2's rules
//! (`commit_parse`, `git_signature__parse`, `git_commit_summary` in libgit2 1.9), so that a
//! plan reading its bytes through gix (`objects.rs`) and `verify` reading them through
//! libgit2 parse them with the same code and cannot disagree, and both say what
//! `git2::Commit` said before.
//!
//! Pure: no I/O. A commit libgit2 refuses to parse is `None` here (the branch is then skipped
//! as unreadable, as before).

use super::CommitFacts;

/// The facts of the commit whose object bytes (without git's `commit <size>` header) are
/// `data`, or `None` where libgit2 would refuse the commit.
pub fn facts(data: &[u8]) -> Option<CommitFacts> {
    let mut rest = oid_header(data, b"tree ")?;
    while let Some(after) = oid_header(rest, b"parent ") {
        rest = after;
    }
    let (author, mut rest) = signature(rest, b"author ")?;
    // "Some tools create multiple author fields, ignore the extra ones" (libgit2).
    while rest.starts_with(b"author ") {
        rest = signature(rest, b"author ")?.1;
    }
    let (committer, rest) = signature(rest, b"committer ")?;
    Some(CommitFacts {
        time: committer.time,
        author_name: lossy(author.name),
        author_email: lossy(author.email),
        subject: lossy(&summary(message(rest))),
    })
}

/// `<header><40 hex>\n` at the start of `data`: what follows it.
fn oid_header<'a>(data: &'a [u8], header: &[u8]) -> Option<&'a [u8]> {
    let hex = data.strip_prefix(header)?.get(..41)?;
    (hex[40] == b'\n' && hex[..40].iter().all(u8::is_ascii_hexdigit)).then(|| &data[header.len() + 41..])
}

struct Signature<'a> {
    name: &'a [u8],
    email: &'a [u8],
    time: i64,
}

/// One `<header>Name <email> <time> <tz>\n` line at the start of `data`, and what follows it.
fn signature<'a>(data: &'a [u8], header: &[u8]) -> Option<(Signature<'a>, &'a [u8])> {
    let end = data.iter().position(|&b| b == b'\n')?;
    let line = &data[..end];
    // libgit2 wants something after the header.
    if line.len() <= header.len() {
        return None;
    }
    let line = line.strip_prefix(header)?;
    let open = line.iter().rposition(|&b| b == b'<')?;
    let close = line.iter().rposition(|&b| b == b'>')?;
    if close <= open {
        return None;
    }
    // The time starts two bytes after the '>' (past the space), when there is one.
    let time = match line.get(close + 2..) {
        Some(t) if !t.is_empty() => strntol64(t)?,
        _ => 0,
    };
    let sig = Signature {
        name: until_nul(trim_crud(&line[..open])),
        email: until_nul(trim_crud(&line[open + 1..close])),
        time,
    };
    Some((sig, &data[end + 1..]))
}

/// libgit2's `is_crud`: what it trims from both ends of a name and an e-mail.
fn is_crud(c: u8) -> bool {
    c <= 32 || matches!(c, b',' | b':' | b';' | b'<' | b'>' | b'"' | b'\\' | b'\'')
}

fn trim_crud(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| !is_crud(c)).unwrap_or(s.len());
    let end = s.iter().rposition(|&c| !is_crud(c)).map_or(start, |i| i + 1);
    &s[start..end]
}

/// libgit2 keeps these as C strings: a NUL ends them.
fn until_nul(s: &[u8]) -> &[u8] {
    s.iter().position(|&c| c == 0).map_or(s, |i| &s[..i])
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' | b'\x0b')
}

/// libgit2's `git__strntol64` in base 10: leading white space, an optional sign, at least
/// one digit; trailing text is ignored; overflow is an error.
fn strntol64(s: &[u8]) -> Option<i64> {
    let mut s = &s[s.iter().position(|&c| !is_space(c)).unwrap_or(s.len())..];
    let neg = s.first() == Some(&b'-');
    if matches!(s.first(), Some(b'-' | b'+')) {
        s = &s[1..];
    }
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut n: i64 = 0;
    for &c in &s[..digits] {
        let v = i64::from(c - b'0');
        n = n.checked_mul(10)?;
        n = if neg { n.checked_sub(v)? } else { n.checked_add(v)? };
    }
    Some(n)
}

/// The message after the header's blank line (`git_commit_message`): up to a NUL, leading
/// newlines skipped. `rest` is what follows the committer line.
fn message(rest: &[u8]) -> &[u8] {
    // The header ends at its first empty line; without one there is no message.
    let mut at = 0;
    while at < rest.len() {
        if rest[at] == b'\n' {
            let msg = until_nul(&rest[at + 1..]);
            let lead = msg.iter().take_while(|&&c| c == b'\n').count();
            return &msg[lead..];
        }
        match rest[at..].iter().position(|&c| c == b'\n') {
            Some(i) => at += i + 1,
            None => break,
        }
    }
    b""
}

/// `git_commit_summary`: the first paragraph, each run of white space that holds a line
/// break folded into one space, other runs kept as they are (leading ones too), trailing
/// ones dropped.
fn summary(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len().min(128));
    let mut space: Option<(usize, bool)> = None;
    for (i, &c) in msg.iter().enumerate() {
        if c == b'\n' {
            // The paragraph ends at the message's end, an empty line or a blank one.
            let next = &msg[i + 1..];
            let blank = next
                .iter()
                .position(|&b| !matches!(b, b' ' | b'\t' | b'\x0c' | b'\r' | b'\x0b'))
                .is_none_or(|j| next[j] == b'\n');
            if blank {
                break;
            }
        }
        if is_space(c) {
            let (start, newline) = space.unwrap_or((i, false));
            space = Some((start, newline || c == b'\n'));
        } else {
            if let Some((start, newline)) = space.take() {
                if newline {
                    out.push(b' ');
                } else {
                    out.extend_from_slice(&msg[start..i]);
                }
            }
            out.push(c);
        }
    }
    out
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits written byte for byte, each parsed by libgit2 (`git2::Commit`, what guardctl
    /// used before) and by `facts`: the two must agree on every one, including which ones
    /// are refused.
    #[test]
    fn agrees_with_libgit2_on_crafted_commits() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(tmp.path()).unwrap();
        let odb = repo.odb().unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let parent = "1".repeat(40);
        let t = format!("tree {tree}\n");
        let a = "author A U Thor <a@example.com> 1700000000 +0100\n";
        let c = "committer C O Mitter <c@example.com> 1700000500 -0200\n";
        let cases: Vec<String> = vec![
            format!("{t}{a}{c}\nsubject\n\nbody\n"),
            format!("{t}parent {parent}\nparent {parent}\n{a}{c}\nmerge\n"),
            format!("{t}{a}{c}\n\n\n  leading\n  lines   folded\nstill first\n \t\nsecond\n"),
            format!("{t}{a}{c}\n  two  spaces kept\ttab\n"),
            format!("{t}{a}{c}encoding ISO-8859-1\ngpgsig -----BEGIN\n more\n\nafter headers\n"),
            format!("{t}{a}{c}"),
            format!("{t}{a}{c}\n"),
            format!("{t}{a}{c}\nno newline at end"),
            format!("{t}{a}{c}\nnul\0hidden\n"),
            format!("{t}{a}author Second <s@example.com> 1 +0000\n{c}\nextra author\n"),
            format!("{t}author  <>  ,Name; <\"mail\"> 5\n{c}\ncrud\n"),
            format!("{t}author Na\0me <e\0mail> 7 +0000\n{c}\nnul in name\n"),
            format!("{t}{a}committer NoTime <n@example.com>\n\nno time\n"),
            format!("{t}{a}committer X <x@example.com> -42 +0000\n\nnegative\n"),
            format!("{t}{a}committer X <x@example.com>  +17abc\n\nsign and junk\n"),
            format!("{t}{a}committer X <x@example.com> 99999999999999999999 +0000\n\noverflow\n"),
            format!("{t}{a}committer X <x@example.com> abc +0000\n\nnot a number\n"),
            format!("{t}{a}committer X x@example.com 5 +0000\n\nno brackets\n"),
            format!("{t}{a}committer X >x@example.com< 5 +0000\n\nreversed\n"),
            format!("{t}{a}committer \n\nempty committer\n"),
            format!("{t}{a}\nno committer\n"),
            format!("{t}{c}\nno author\n"),
            format!("tree {}\n{a}{c}\nbad tree\n", "z".repeat(40)),
            format!(
                "{t}parent {}\n{a}{c}\nbad parent stops the parents\n",
                "q".repeat(40)
            ),
            format!("{a}{c}\nno tree\n"),
            format!("{t}{a}{c}\r\nwindows\r\nlines\r\n"),
            format!("{t}{a}{c}\nline\n   \n"),
            format!("{t}{a}{c}\n\u{202e}bidi stays\u{200b}\n"),
            // Extra author lines are skipped to their newline, never parsed.
            format!("{t}{a}author not a signature\n{c}\nmalformed extra author\n"),
            format!("{t}{a}author \n{c}\nempty extra author\n"),
            format!("{t}{a}author Y <y@example.com> notime\n{c}\nextra author bad time\n"),
            format!("{t}{a}author x\n"),
            format!("{t}{a}authorX <x@example.com> 1 +0000\n{c}\nauthorX is no author line\n"),
            format!(
                "tree {}\n{a}{c}\nupper-case tree\n",
                tree.to_string().to_uppercase()
            ),
            format!(
                "tree {tree}\nparent {}\n{a}{c}\nupper-case parent\n",
                "A".repeat(40)
            ),
            format!("tree {tree}x\n{a}{c}\nlong tree\n"),
            format!("tree {tree}\r\n{a}{c}\ncr after tree\n"),
            format!("{t}author A <a@example.com>5 +0000\n{c}\nno space before time\n"),
            format!("{t}{a}committer X <x@example.com>\t 12 +0000\n\ntab and space\n"),
            format!("{t}{a}committer X <x@example.com> \n\ntrailing space only\n"),
            format!("{t}{a}committer X <x@example.com> 7\0 +0000\n\nnul after time\n"),
            format!("{t}{a}committer A <b> <c@example.com> 3 +0000\n\ntwo brackets\n"),
            format!("{t}{a}committer <c@example.com> 3 +0000\n\nno name\n"),
            format!("{t}{a}committer \u{e9}\u{301}t\u{e9} <\u{e9}@example.com> 3 +0000\n\nnon-ascii\n"),
            format!("{t}{a}{c}\n\r\nafter a cr line\n"),
            format!("{t}{a}{c}\r\nsubject after a cr header line\n"),
            format!("{t}{a}{c}\n\x0c\x0bform feeds\x0c\nnext\n"),
            format!("{t}{a}{c}\n \n\nblank first line\n"),
            format!("{t}{a}{c}\nline\n\t\nafter a tab line\n"),
            format!("{t}{a}{c}\nline\nnext\0rest\n"),
            format!("{t}{a}{c}\n\0\nnul first\n"),
            format!("{t}{a}{c}\n{}\n", "w ".repeat(5000)),
            format!("{t}{}{c}\nmany authors\n", a.repeat(300)),
            String::new(),
            format!("{t}"),
        ];
        let mut cases: Vec<Vec<u8>> = cases.into_iter().map(String::into_bytes).collect();
        // Not UTF-8: Latin-1 names and subjects, a lone continuation byte, an overlong NUL.
        for odd in [&b"\xe9t\xe9"[..], b"\xff\xfe", b"\x80", b"\xc0\x80"] {
            let mut raw = t.clone().into_bytes();
            raw.extend_from_slice(b"author N");
            raw.extend_from_slice(odd);
            raw.extend_from_slice(b" <e");
            raw.extend_from_slice(odd);
            raw.extend_from_slice(b"@example.com> 1 +0000\n");
            raw.extend_from_slice(c.as_bytes());
            raw.extend_from_slice(b"\nsub");
            raw.extend_from_slice(odd);
            raw.extend_from_slice(b"ject\n");
            cases.push(raw);
        }
        let mut differ = Vec::new();
        for (i, raw) in cases.iter().enumerate() {
            let oid = odb.write(git2::ObjectType::Commit, raw).unwrap();
            let theirs = repo.find_commit(oid).ok().map(|c| {
                (
                    c.committer().when().seconds(),
                    String::from_utf8_lossy(c.author().name_bytes()).into_owned(),
                    String::from_utf8_lossy(c.author().email_bytes()).into_owned(),
                    String::from_utf8_lossy(c.summary_bytes().unwrap_or_default()).into_owned(),
                )
            });
            let ours = facts(raw).map(|f| (f.time, f.author_name, f.author_email, f.subject));
            if ours != theirs {
                differ.push(format!(
                    "case {i}: {:?}\n  ours:    {ours:?}\n  libgit2: {theirs:?}",
                    String::from_utf8_lossy(raw)
                ));
            }
        }
        assert!(differ.is_empty(), "{}", differ.join("\n"));
    }

    #[test]
    fn strntol64_reads_like_libgit2() {
        assert_eq!(strntol64(b"  -12x"), Some(-12));
        assert_eq!(strntol64(b"+7"), Some(7));
        assert_eq!(strntol64(b"x"), None);
        assert_eq!(strntol64(b"-"), None);
        assert_eq!(strntol64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(strntol64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(strntol64(b"9223372036854775808"), None);
    }
}
