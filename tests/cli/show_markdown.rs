//! `show --format markdown|summary` and `--step-summary`: plans rendered where reviewers read
//! them (pull-request comments, CI job summaries). The output is checked by parsing it with
//! a real GFM parser (comrak, a port of GitHub's cmark-gfm), never by matching strings: a
//! byte budget kept at any plan size, the structure a reviewer expects, and every repository
//! string inert (no live HTML, link, image or mention).

use crate::fixtures::{TestEnv, affected_refs, skip_heavy, standard_repo};
use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use std::io::Write;
use std::process::{Command, Stdio};

/// GitHub's extensions, as its comments and job summaries render them.
fn gfm() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.extension.tasklist = true;
    o.extension.footnotes = true;
    o
}

/// What a reviewer would see of a document, as the parser reads it.
#[derive(Debug, Default)]
struct Parsed {
    headings: Vec<String>,
    /// Each table's body rows (the header row left out), each row its cells' text.
    tables: Vec<Vec<Vec<String>>>,
    html_blocks: Vec<String>,
    inline_html: Vec<String>,
    links: Vec<String>,
    images: Vec<String>,
    /// Text outside code (where GitHub finds mentions, references and bare links).
    text: Vec<String>,
    code: Vec<String>,
    code_blocks: Vec<String>,
    block_quotes: Vec<String>,
}

fn text_of<'a>(node: &'a AstNode<'a>) -> String {
    let mut out = String::new();
    for d in node.descendants() {
        match &d.data().value {
            NodeValue::Text(t) => out += t,
            NodeValue::Code(c) => out += &c.literal,
            NodeValue::SoftBreak | NodeValue::LineBreak => out += " ",
            _ => {}
        }
    }
    out
}

fn parse(md: &str) -> Parsed {
    let arena = Arena::new();
    let root = parse_document(&arena, md, &gfm());
    let mut p = Parsed::default();
    for node in root.descendants() {
        match &node.data().value {
            NodeValue::Heading(_) => p.headings.push(text_of(node)),
            NodeValue::Table(_) => p.tables.push(
                node.children()
                    .skip(1)
                    .map(|row| row.children().map(text_of).collect())
                    .collect(),
            ),
            NodeValue::HtmlBlock(h) => p.html_blocks.push(h.literal.clone()),
            NodeValue::HtmlInline(h) => p.inline_html.push(h.clone()),
            NodeValue::Link(l) => p.links.push(l.url.clone()),
            NodeValue::Image(l) => p.images.push(l.url.clone()),
            NodeValue::Text(t) => p.text.push(t.to_string()),
            NodeValue::Code(c) => p.code.push(c.literal.clone()),
            NodeValue::CodeBlock(c) => p.code_blocks.push(c.literal.clone()),
            NodeValue::BlockQuote => p.block_quotes.push(text_of(node)),
            _ => {}
        }
    }
    p
}

/// Nothing in the document is live: no link, image or raw HTML but guardctl's own
/// `<details>`/`<summary>` wrapper, and no `@`, `#n`, `:` or `www.` outside code where GitHub
/// would turn it into a mention, a reference, an emoji or a link.
fn assert_inert(p: &Parsed, md: &str) {
    assert!(p.links.is_empty(), "links {:?} in:\n{md}", p.links);
    assert!(p.images.is_empty(), "images {:?} in:\n{md}", p.images);
    assert!(
        p.inline_html.is_empty(),
        "inline HTML {:?} in:\n{md}",
        p.inline_html
    );
    for h in &p.html_blocks {
        let summary = h
            .strip_prefix("<details>\n<summary>The ")
            .and_then(|s| s.strip_suffix("</summary>\n"));
        let ours = h == "</details>\n" || summary.is_some_and(|s| !s.contains(['<', '>', '&', '@']));
        assert!(ours, "HTML block not guardctl's own: {h:?}");
    }
    for t in &p.text {
        assert!(!t.contains('@'), "a mention outside code: {t:?}");
        assert!(
            !t.contains('<') && !t.contains('>'),
            "angle brackets outside code: {t:?}"
        );
        assert!(
            !t.to_ascii_lowercase().contains("www."),
            "a bare link outside code: {t:?}"
        );
        assert!(!t.contains("javascript"), "{t:?}");
    }
}

/// `n` merged branches `topic/NNNNN` on a main of `n` commits, made by fast-import (one file
/// changed per commit, so trees stay small) with the branch refs written as packed-refs.
fn merged_branches(n: usize) -> TestEnv {
    let env = TestEnv::new();
    let mut stream = String::new();
    for i in 0..n {
        let when = crate::fixtures::NOW_UNIX - (n - i) as i64 * 600;
        let msg = format!("Work item {i}");
        stream += &format!(
            "commit refs/heads/main\nmark :{m}\nauthor Dev{a} <dev{a}@example.com> {when} +0000\ncommitter Dev{a} <dev{a}@example.com> {when} +0000\ndata {len}\n{msg}\n",
            m = i + 1,
            a = i % 7,
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
        refs += &format!("{oid} refs/heads/topic/{:05}\n", i - 1);
    }
    std::fs::write(&packed, refs).unwrap();
    env.git(&["reset", "-q", "--hard", "main"]);
    env
}

/// The rows of every table of what the plan deletes (the details table is left out).
fn resource_rows(p: &Parsed) -> Vec<&Vec<String>> {
    p.tables
        .iter()
        .filter(|t| t.first().is_some_and(|r| r.len() == 7))
        .flatten()
        .collect()
}

/// The number before `of <total>` in the note that says how many rows were left out.
fn left_out(p: &Parsed, total: usize) -> usize {
    p.block_quotes
        .iter()
        .find_map(|q| {
            let (n, rest) = q.split_once(" of ")?;
            rest.starts_with(&total.to_string()).then(|| n.parse().unwrap())
        })
        .unwrap_or(0)
}

/// A plan of `n` merged branches renders within each host's budget, parsed into the expected
/// structure, with the rows shown plus the rows said to be left out equal to the plan's.
fn renders_within_the_budget_with_the_plans_counts(n: usize) {
    let env = merged_branches(n);
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let planned = affected_refs(&env.repo.join("plan.json")).len();
    assert_eq!(planned, n);

    for (args, max) in [
        (&["show", "--format", "markdown"][..], 65_536),
        (&["show", "--format", "summary"], 1 << 20),
        (&["show", "--format", "markdown", "--max-bytes", "10000"], 10_000),
    ] {
        let r = env.run("bob", args);
        assert_eq!(r.code, 0, "{}", r.transcript());
        let md = &r.stdout;
        assert!(md.len() <= max, "{args:?}: {} bytes > {max}", md.len());
        let p = parse(md);
        assert_inert(&p, md);
        assert!(p.headings[0].starts_with("guardctl plan "), "{:?}", p.headings);
        assert!(
            p.headings
                .iter()
                .any(|h| h == &format!("The 20 riskiest of {n} branches"))
        );
        assert!(p.headings.iter().any(|h| h == "Review"), "{:?}", p.headings);
        let headline = &p.text.iter().find(|t| t.starts_with("Deletes ")).unwrap();
        assert_eq!(headline.as_str(), format!("Deletes {n} branches"));
        assert!(
            p.text.iter().any(|t| t.contains(&format!("({n} merged)"))),
            "{:?}",
            &p.text[..10]
        );
        let rows = resource_rows(&p);
        let hidden = left_out(&p, n);
        assert!(rows.len() >= 20, "{args:?}: {} rows", rows.len());
        assert_eq!(
            rows.len() + hidden,
            n,
            "{args:?}: shown {} + left out {hidden}",
            rows.len()
        );
        // The rest of the list is folded, in a second table inside `<details>`.
        if rows.len() > 20 {
            assert!(p.html_blocks.iter().any(|h| h.starts_with("<details>")));
            assert_eq!(resource_rows(&p).len(), rows.len());
        }
        // Every row is one resource of the plan, named once.
        let mut names: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), rows.len());
    }
}

#[test]
fn a_plan_of_3000_branches_renders_within_a_comment_with_the_plans_counts() {
    renders_within_the_budget_with_the_plans_counts(3_000);
}

mod heavy {
    use super::*;

    /// The issue's scale: GitHub's comment limit holds the start of a 50,000-branch plan.
    #[test]
    fn a_plan_of_50000_branches_renders_within_a_comment_with_the_plans_counts() {
        if skip_heavy("a_plan_of_50000_branches_renders_within_a_comment_with_the_plans_counts") {
            return;
        }
        renders_within_the_budget_with_the_plans_counts(50_000);
    }
}

/// Branch names and authors written to render (HTML, links, images, mentions, backticks,
/// pipes, bidi controls) stay text: the parser finds no live element, each hostile string
/// is one code span, and every table row keeps its seven cells.
#[test]
fn hostile_names_and_authors_are_inert_text_in_the_parsed_markdown() {
    let env = TestEnv::new();
    let names = [
        "x/<img/src=x/onerror=alert(1)>",
        "x/<script>alert(1)<",
        "x/@team-please-look",
        "x/``code``and`tick",
        "x/a|b|c",
        "x/\u{202E}txt.exe",
        "x/www.evil.example",
        "x/#123",
        "x/!emoji-tada",
        "x/-not-a-list",
        "x/&lt;b&gt;",
    ];
    let authors = [
        "[x](javascript:alert(1))",
        "![](http://evil.example/pixel.png)",
        "@org/security",
        ":tada:**bold**_em_",
        "a|b",
        "</details><details open>",
        "<!-- comment",
        "http://evil.example/",
        "`tick",
        "x\u{200B}y",
        "~~strike~~",
    ];
    for (name, author) in names.iter().zip(authors) {
        env.git(&["checkout", "-q", "-b", name, "main"]);
        env.git_full(
            &env.repo,
            &["commit", "-q", "--allow-empty", "-m", "work"],
            5,
            author,
        );
        env.git(&["checkout", "-q", "main"]);
        env.merge(name, 4);
    }
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = &r.stdout;
    let p = parse(md);
    assert_inert(&p, md);
    let rows = resource_rows(&p);
    assert_eq!(rows.len(), names.len(), "{md}");
    for row in &rows {
        assert_eq!(row.len(), 7, "a cell was split: {row:?}");
    }
    for name in names {
        // The name as `show` prints it (bidi controls spelled out), in exactly one cell.
        let shown = name.replace('\u{202E}', "<U+202E>");
        assert_eq!(
            rows.iter().filter(|r| r[1].starts_with(&shown)).count(),
            1,
            "{shown:?} not one name cell:\n{md}"
        );
        assert!(
            p.code.iter().any(|c| c == &shown),
            "{shown:?} not a code span:\n{md}"
        );
    }
    // The bidi name is flagged next to its span, in words.
    assert!(
        rows.iter()
            .any(|r| r[1].contains("<U+202E>") && r[1].contains("bidi override"))
    );
    // Each row says what `show --json` says, author included (git keeps the address as
    // given, less its angle brackets).
    let json = env.run("bob", &["--json", "show", "--all"]).json();
    for item in json["rows"]["items"].as_array().unwrap() {
        let name = item["name"].as_str().unwrap();
        let row = rows.iter().find(|r| r[1].starts_with(name)).unwrap();
        assert_eq!(row[4], item["author"].as_str().unwrap(), "{md}");
        assert_eq!(row[2], item["tip"].as_str().unwrap()[..12], "{md}");
    }
}

/// A small plan in full: the snapshot is the example README.md shows.
#[test]
fn a_small_plan_as_markdown() {
    let env = standard_repo();
    let r = env.run(
        "alice",
        &["plan", "stale-branches", "--merged", "--squash-merged", "--gone"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_inert(&parse(&r.stdout), &r.stdout);
    insta::assert_snapshot!("show_small_plan_markdown", env.stable(&r.stdout));
}

/// `--step-summary` appends to the file GitHub Actions names, after what the step wrote
/// there already, and keeps the whole file within GitHub's 1 MiB.
#[test]
fn step_summary_appends_within_githubs_limit() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let summary = env.path().join("step_summary.md");
    std::fs::write(&summary, "# Earlier output\n\n").unwrap();
    let file = summary.to_str().unwrap();
    let r = env.run_env(
        "bob",
        &[("GITHUB_STEP_SUMMARY", file)],
        &["show", "--step-summary"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(r.stdout, "", "the summary went to stdout too");
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("# Earlier output\n\n## guardctl plan "),
        "{text}"
    );
    assert_inert(&parse(&text), &text);

    // After output that ends mid-line, the summary still starts a block of its own.
    std::fs::write(&summary, "no newline at the end").unwrap();
    let r = env.run_env(
        "bob",
        &[("GITHUB_STEP_SUMMARY", file)],
        &["show", "--step-summary"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("no newline at the end\n\n## guardctl plan "),
        "{text}"
    );
    assert!(parse(&text).headings[0].starts_with("guardctl plan "));

    // A summary file already near the limit: refused, the file untouched.
    std::fs::write(&summary, "x".repeat((1 << 20) - 1000)).unwrap();
    let r = env.run_env(
        "bob",
        &[("GITHUB_STEP_SUMMARY", file)],
        &["show", "--step-summary"],
    );
    assert_eq!(r.code, 64, "{}", r.transcript());
    assert_eq!(std::fs::metadata(&summary).unwrap().len(), (1 << 20) - 1000);

    // Outside a job the summary is printed, with a warning.
    let r = env.run_env("bob", &[("GITHUB_STEP_SUMMARY", "")], &["show", "--step-summary"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(r.stdout.starts_with("## guardctl plan "), "{}", r.stdout);
    assert!(
        r.stderr.contains("GITHUB_STEP_SUMMARY is not set"),
        "{}",
        r.stderr
    );
}

/// Formats that ask for two outputs, or options that mean nothing for Markdown, are usage
/// errors (64), not one of the two silently.
#[test]
fn conflicting_format_options_are_usage_errors() {
    let env = standard_repo();
    let r = env.run("alice", &["plan", "stale-branches", "--merged"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    for args in [
        &["--json", "show", "--format", "markdown"][..],
        &["--json", "show", "--step-summary"],
        &["show", "--format", "text", "--max-bytes", "10000"],
        &["show", "--format", "markdown", "--all"],
        &["show", "--format", "markdown", "--max-bytes", "100"],
        &["show", "--format", "json", "--step-summary"],
    ] {
        let r = env.run("bob", args);
        assert_eq!(r.code, 64, "{args:?}: {}", r.transcript());
        assert_eq!(
            r.stdout.trim_start().chars().next().filter(|c| *c == '#'),
            None,
            "{args:?}"
        );
    }
    // `--format json` is `--json`.
    let a = env.run("bob", &["show", "--format", "json"]).json();
    let b = env.run("bob", &["--json", "show"]).json();
    assert_eq!(a, b);
}

/// A command's preview lines go in a fenced block no line can close, and the command in a
/// code span: hostile output stays text.
#[test]
fn an_exec_plans_preview_is_fenced_and_inert() {
    let env = TestEnv::new();
    let lines = "```\n<img src=x onerror=alert(1)>\n@team [x](javascript:alert(1))\n````\n</details>\n";
    std::fs::write(env.repo.join("list.sh"), format!("cat <<'EOF'\n{lines}EOF\n")).unwrap();
    let r = env.run(
        "alice",
        &[
            "plan",
            "exec",
            "--preview",
            "sh list.sh",
            "--",
            "echo",
            "<b>@team</b>",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["show", "--format", "markdown"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let md = &r.stdout;
    let p = parse(md);
    assert_inert(&p, md);
    assert_eq!(
        p.code_blocks.iter().filter(|b| b.as_str() == lines).count(),
        1,
        "{md}"
    );
    assert!(p.code.iter().any(|c| c.contains("<b>@team</b>")), "{md}");
}
