//! Our own corpus of agent-shell lines (`tests/corpus/hook/*.toml`, written by hand for
//! guardctl, never copied from a peer): each line is fed to `guardctl hook claude-code` in the
//! agent-shell fixture (`hook_fixture`: the state every line is judged on is described there)
//! and must get its expected verdict — `deny` (exit 2) for a line that would destroy something
//! there, `allow` (exit 0) for one that destroys nothing. The hook itself must change nothing.
//!
//! A case: `line`, `expect = "allow" | "deny"`, optional `why` (what the line destroys, or why
//! it destroys nothing in the fixture's state).

use crate::hook_fixture::{judge_all, threads};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    case: Vec<Case>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub line: String,
    pub expect: Expect,
    #[serde(default)]
    pub why: String,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Allow,
    Deny,
}

/// Every case of every `tests/corpus/hook/*.toml` file, with its file's name.
pub fn corpus() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/hook");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && !p.ends_with("differences.toml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed: CorpusFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        out.extend(parsed.case.into_iter().map(|c| (name.clone(), c)));
    }
    out
}

#[test]
fn every_line_of_our_corpus_gets_its_verdict_and_the_hook_changes_nothing() {
    let cases = corpus();
    assert!(cases.len() >= 100, "the corpus has {} cases", cases.len());
    let lines: Vec<String> = cases.iter().map(|(_, c)| c.line.clone()).collect();
    let verdicts = judge_all(&lines, threads());
    let mut wrong = Vec::new();
    for ((file, case), v) in cases.iter().zip(&verdicts) {
        let got = match v.code {
            0 => Expect::Allow,
            _ => Expect::Deny,
        };
        if let Some(change) = &v.changed {
            wrong.push(format!("{file}: `{}` CHANGED THE FIXTURE: {change}", case.line));
        } else if got != case.expect {
            wrong.push(format!(
                "{file}: `{}` expected {:?}, got {:?} (exit {}): {}{}",
                case.line,
                case.expect,
                got,
                v.code,
                v.reason,
                if case.why.is_empty() {
                    String::new()
                } else {
                    format!(" [why: {}]", case.why)
                }
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} corpus lines judged wrongly:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
