//! The two peer agent-shell guards' own regression lines (destructive_command_guard and
//! claude-code-safety-net), fed to `guardctl hook claude-code` in the agent-shell fixture
//! (`hook_fixture`). The lines are the peers', so they are not in this repository:
//! `scripts/peer-cases.py` extracts them from the peers' repositories, with the verdict each
//! peer expects by its default settings, into `*.jsonl` files in a cache directory that
//! `GUARDCTL_PEER_CASES` names (docs/development.md says how). Without it the test cannot run,
//! so it is ignored; `.ci/run` runs it with `--ignored` when the cache exists.
//!
//! It reports, per peer, the lines the peer blocks that guardctl allows (false negatives) and
//! the lines the peer allows that guardctl blocks (false positives), as a table on stderr and
//! in full in `target/peer-cases-report/`. It holds guardctl to issue 54: no false negative
//! and at most `BETTER_PEER_FALSE_POSITIVES` false positives, apart from the deliberate
//! differences in `tests/corpus/hook/differences.toml` (each with its reason, our words).

use crate::hook_fixture::{Verdict, judge_all, threads};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The better peer's false positives on the two suites' allow lines (issue 54: 23 of 758,
/// claude-code-safety-net's).
const BETTER_PEER_FALSE_POSITIVES: usize = 23;

#[derive(Deserialize, Clone)]
struct PeerCase {
    peer: String,
    commit: String,
    file: String,
    line: u64,
    command: String,
    expect: String,
    #[serde(default)]
    note: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Differences {
    difference: Vec<Difference>,
}

/// A documented difference: an exact `line` or a `glob` (`*` matches anything, `/` included),
/// the peers' verdict guardctl departs from (`block`: guardctl allows it; `allow`: guardctl
/// denies it) and why.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Difference {
    line: Option<String>,
    glob: Option<String>,
    peer_expects: String,
    why: String,
}

/// How a difference names its lines.
enum Lines {
    Exact(String),
    Glob(globset::GlobMatcher),
}

impl Lines {
    fn is_match(&self, line: &str) -> bool {
        match self {
            Lines::Exact(exact) => exact == line,
            Lines::Glob(glob) => glob.is_match(line),
        }
    }
}

fn differences() -> Vec<(Lines, String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/hook/differences.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed: Differences = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parsed
        .difference
        .into_iter()
        .map(|d| {
            assert!(!d.why.trim().is_empty(), "a difference without a reason");
            assert!(
                d.peer_expects == "block" || d.peer_expects == "allow",
                "peer_expects is block or allow: {}",
                d.peer_expects
            );
            let lines = match (d.line, d.glob) {
                (Some(line), None) => Lines::Exact(line),
                (None, Some(glob)) => Lines::Glob(
                    globset::GlobBuilder::new(&glob)
                        .literal_separator(false)
                        .backslash_escape(true)
                        .build()
                        .unwrap_or_else(|e| panic!("{glob}: {e}"))
                        .compile_matcher(),
                ),
                _ => panic!("a difference has a line or a glob: {}", d.why),
            };
            (lines, d.peer_expects, d.why)
        })
        .collect()
}

fn cases(dir: &Path) -> Vec<PeerCase> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.jsonl in {}", dir.display());
    let mut out = Vec::new();
    for f in files {
        for (n, l) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            let c: PeerCase =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", f.display(), n + 1));
            out.push(c);
        }
    }
    out
}

fn report_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    target.join("peer-cases-report")
}

fn one_line(s: &str) -> String {
    s.replace('\n', "\\n")
}

#[derive(Default)]
struct Tally {
    commit: String,
    block: usize,
    allow: usize,
    false_negatives: Vec<String>,
    false_positives: Vec<String>,
    documented_fn: usize,
    documented_fp: usize,
    changed: Vec<String>,
}

#[test]
#[ignore = "needs the peers' extracted suites: GUARDCTL_PEER_CASES=DIR of scripts/peer-cases.py's output (docs/development.md)"]
#[allow(clippy::print_stderr)] // the table is the test's report
fn the_peers_suites_through_the_hook_no_false_negative_and_no_more_false_positives_than_the_better_peer() {
    let dir = std::env::var_os("GUARDCTL_PEER_CASES").map(PathBuf::from).expect(
        "GUARDCTL_PEER_CASES names the directory of scripts/peer-cases.py's *.jsonl (docs/development.md)",
    );
    let cases = cases(&dir);
    let diffs = differences();
    let lines: Vec<String> = cases.iter().map(|c| c.command.clone()).collect();
    let verdicts: Vec<Verdict> = judge_all(&lines, threads());

    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut all = String::new();
    for (c, v) in cases.iter().zip(&verdicts) {
        let t = tallies.entry(c.peer.clone()).or_default();
        t.commit = c.commit[..12.min(c.commit.len())].to_string();
        let documented = diffs
            .iter()
            .find(|(m, expects, _)| *expects == c.expect && m.is_match(&c.command));
        let entry = format!(
            "{}\t{}:{}\texit {}\t{}{}\t{}",
            one_line(&c.command),
            c.file,
            c.line,
            v.code,
            if c.note.is_empty() {
                String::new()
            } else {
                format!("[{}] ", one_line(&c.note))
            },
            one_line(&v.reason),
            documented.map_or(String::new(), |(_, _, why)| format!("documented: {why}")),
        );
        let _ = writeln!(
            all,
            "{}",
            serde_json::json!({
                "peer": c.peer, "file": c.file, "line": c.line, "command": c.command,
                "expect": c.expect, "code": v.code, "reason": v.reason,
                "documented": documented.map(|(_, _, why)| why.clone()),
                "changed": v.changed,
            })
        );
        if let Some(change) = &v.changed {
            t.changed.push(format!("{entry}\t{change}"));
        }
        match (c.expect.as_str(), v.allowed()) {
            ("block", allowed) => {
                t.block += 1;
                if allowed {
                    if documented.is_some() {
                        t.documented_fn += 1;
                    } else {
                        t.false_negatives.push(entry);
                    }
                }
            }
            (_, allowed) => {
                t.allow += 1;
                if !allowed {
                    if documented.is_some() {
                        t.documented_fp += 1;
                    } else {
                        t.false_positives.push(entry);
                    }
                }
            }
        }
    }

    let out = report_dir();
    std::fs::create_dir_all(&out).unwrap();
    let mut table = String::from(
        "| peer | commit | block lines | guardctl allows (false negatives) | documented | allow lines | guardctl denies (false positives) | documented |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let (mut fns, mut fps, mut changed) = (0, 0, 0);
    for (peer, t) in &tallies {
        let _ = writeln!(
            table,
            "| {peer} | {} | {} | {} | {} | {} | {} | {} |",
            t.commit,
            t.block,
            t.false_negatives.len(),
            t.documented_fn,
            t.allow,
            t.false_positives.len(),
            t.documented_fp
        );
        fns += t.false_negatives.len();
        fps += t.false_positives.len();
        changed += t.changed.len();
        for (what, list) in [
            ("false-negatives", &t.false_negatives),
            ("false-positives", &t.false_positives),
            ("changed-the-fixture", &t.changed),
        ] {
            std::fs::write(
                out.join(format!("{peer}-{what}.tsv")),
                list.iter().map(|l| format!("{l}\n")).collect::<String>(),
            )
            .unwrap();
        }
    }
    std::fs::write(out.join("summary.md"), &table).unwrap();
    std::fs::write(out.join("verdicts.jsonl"), &all).unwrap();
    eprintln!("{table}\nfull lists: {}", out.display());

    assert_eq!(
        changed,
        0,
        "the hook changed the fixture on {changed} lines: {}/*-changed-the-fixture.tsv",
        out.display()
    );
    assert!(
        fns == 0 && fps <= BETTER_PEER_FALSE_POSITIVES,
        "{fns} false negatives (0 allowed) and {fps} false positives (at most {BETTER_PEER_FALSE_POSITIVES}) \
         beyond tests/corpus/hook/differences.toml; the lists: {}",
        out.display()
    );
}
