//! The manifest of an exec plan: the resources its preview lists, as ids the policy can see.
//!
//! A preview's output is read as a list: JSON lines when every non-empty line is a JSON object
//! with a string `id` (other fields are allowed and ignored), otherwise one resource a line
//! (trailing whitespace and `\r` dropped). Empty lines are skipped and a repeated id counts
//! once, in the order first printed. The same rule reads a `--verify` command's output.
//!
//! Derived from the signed `preview_output` every time it is needed, never stored beside it:
//! nothing a planner writes into a plan can make the policy see another list than the preview
//! printed.

use super::model::Operation;
use std::collections::HashSet;

/// How a list was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Lines,
    JsonLines,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Lines => "lines",
            Format::JsonLines => "json-lines",
        }
    }
}

#[derive(serde::Deserialize)]
struct JsonLine {
    id: String,
}

/// The ids a list names, and how it was read.
pub fn read(text: &str) -> (Vec<String>, Format) {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .collect();
    let json: Option<Vec<String>> = lines
        .iter()
        .map(|l| {
            l.starts_with('{')
                .then(|| serde_json::from_str::<JsonLine>(l).ok().map(|j| j.id))
                .flatten()
        })
        .collect();
    let (ids, format) = match json {
        Some(ids) if !ids.is_empty() => (ids, Format::JsonLines),
        _ => (lines.iter().map(|l| l.to_string()).collect(), Format::Lines),
    };
    let mut seen = HashSet::new();
    let ids = ids.into_iter().filter(|id| seen.insert(id.clone())).collect();
    (ids, format)
}

/// The ids a list names.
pub fn ids(text: &str) -> Vec<String> {
    read(text).0
}

/// An exec plan's manifest (its preview's ids); `None` for any other operation.
pub fn of(op: &Operation) -> Option<Vec<String>> {
    match op {
        Operation::Exec(x) => Some(ids(&x.preview_output.text)),
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_resource_a_line_skipping_blanks_and_repeats() {
        let (ids, f) = read("releases/a.tar\r\n\nreleases/b.tar  \nreleases/a.tar\n");
        assert_eq!(ids, ["releases/a.tar", "releases/b.tar"]);
        assert_eq!(f, Format::Lines);
        assert!(read("").0.is_empty());
    }

    #[test]
    fn json_lines_by_id_when_every_line_has_one() {
        let (ids, f) = read("{\"id\":\"a\",\"size\":3}\n{\"id\":\"b\"}\n");
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(f, Format::JsonLines);
        // One line without an id: the whole output is read as plain lines.
        let (ids, f) = read("{\"id\":\"a\"}\n{\"name\":\"b\"}\n");
        assert_eq!(ids, ["{\"id\":\"a\"}", "{\"name\":\"b\"}"]);
        assert_eq!(f, Format::Lines);
        // A duplicate `id` key is not a JSON line (serde refuses it): no guessing which.
        assert_eq!(read("{\"id\":\"a\",\"id\":\"b\"}\n").1, Format::Lines);
    }
}
