//! `.guardctl/policy.toml`: the schema, parsed strictly (unknown keys, wrong types and
//! duplicate keys are errors) and validated; every error names its line.
//!
//! Pure: takes the file's text, returns a [`Policy`] or a [`PolicyError`]. docs/policy.md's
//! "Policy" section documents the same schema; keep the two in step.

use super::{Bulk, DEFAULT_BULK_THRESHOLD, Policy, RESERVED_GROUPS, Requirement, Route};
use crate::plan::model::RiskLevel;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use toml::Spanned;

/// The schema version this guardctl reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// 1-based line of the offending value, when known.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for PolicyError {}

type List = Option<Vec<Spanned<String>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    version: Spanned<u32>,
    protected: List,
    max_affected: Option<Spanned<u64>>,
    clock_skew: Option<Spanned<String>>,
    executors: List,
    expiry: Option<RawExpiry>,
    backups: Option<RawBackups>,
    #[serde(default)]
    groups: BTreeMap<String, Spanned<Vec<Spanned<String>>>>,
    approvals: Option<RawRequirement>,
    bulk: Option<RawBulk>,
    #[serde(default)]
    route: Vec<RawRoute>,
    remote: Option<RawRemote>,
    sandbox: Option<RawSandbox>,
    agents: Option<RawAgents>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    required: Option<bool>,
    read: List,
    network: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgents {
    exec: Option<bool>,
    may_approve: List,
    regenerable: List,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRemote {
    consumed_marker: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpiry {
    default: Option<Spanned<String>>,
    max: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackups {
    retention_days: Spanned<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    required: Spanned<u32>,
    from: List,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBulk {
    threshold: Option<Spanned<u64>>,
    required: Spanned<u32>,
    from: List,
    across_plans: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: Spanned<String>,
    refs: List,
    authors: List,
    risk: Option<Vec<Spanned<RiskLevel>>>,
    required: Spanned<u32>,
    from: List,
}

/// Parse and validate a policy file's text.
pub fn parse(text: &str) -> Result<Policy, PolicyError> {
    let raw: RawPolicy = toml::from_str(text).map_err(|e| PolicyError {
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().trim_end().to_string(),
    })?;
    Validator { text }.policy(raw)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(offset)
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

struct Validator<'t> {
    text: &'t str,
}

impl Validator<'_> {
    fn err<T>(&self, at: &Spanned<T>, message: impl Into<String>) -> PolicyError {
        PolicyError {
            line: Some(line_of(self.text, at.span().start)),
            message: message.into(),
        }
    }

    fn policy(&self, raw: RawPolicy) -> Result<Policy, PolicyError> {
        if *raw.version.get_ref() != VERSION {
            return Err(self.err(
                &raw.version,
                format!(
                    "unsupported policy version {} (this guardctl reads version {VERSION})",
                    raw.version.get_ref()
                ),
            ));
        }
        let mut p = Policy::default();
        if let Some(list) = raw.protected {
            p.protected = self.globs(list, false)?;
        }
        if let Some(n) = raw.max_affected {
            if *n.get_ref() == 0 {
                return Err(self.err(&n, "max_affected must be at least 1"));
            }
            p.max_affected = Some(n.into_inner());
        }
        if let Some(s) = raw.clock_skew {
            p.clock_skew_secs = self.duration(&s)?;
        }
        if let Some(e) = raw.expiry {
            if let Some(d) = &e.default {
                p.default_expiry_secs = self.positive_duration(d)?;
            }
            if let Some(m) = &e.max {
                p.max_expiry_secs = self.positive_duration(m)?;
            }
            if p.default_expiry_secs > p.max_expiry_secs {
                let at = e.default.as_ref().or(e.max.as_ref());
                let msg = "expiry.default is longer than expiry.max";
                return Err(match at {
                    Some(at) => self.err(at, msg),
                    None => PolicyError {
                        line: None,
                        message: msg.into(),
                    },
                });
            }
        }
        if let Some(b) = raw.backups {
            if *b.retention_days.get_ref() == 0 {
                return Err(self.err(&b.retention_days, "backups.retention_days must be at least 1"));
            }
            p.retention_days = b.retention_days.into_inner();
        }
        for (name, members) in raw.groups {
            if !valid_name(&name) {
                return Err(self.err(&members, format!("group name `{name}`: {NAME_RULE}")));
            }
            if members.get_ref().is_empty() {
                return Err(self.err(&members, format!("group `{name}` has no members")));
            }
            let mut list = Vec::new();
            for m in members.into_inner() {
                let s = m.get_ref();
                if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(self.err(&m, format!("`{}` is not a principal", s.escape_debug())));
                }
                list.push(m.into_inner());
            }
            list.sort();
            list.dedup();
            p.groups.insert(name, list);
        }
        if let Some(list) = raw.executors {
            p.executors = self.group_names(&p, list)?;
        }
        if let Some(r) = raw.approvals {
            p.approvals = self.requirement(&p, r.required, r.from)?;
        }
        if let Some(b) = raw.bulk {
            if let Some(t) = &b.threshold
                && *t.get_ref() == 0
            {
                return Err(self.err(t, "bulk.threshold must be at least 1"));
            }
            p.bulk = Bulk {
                threshold: b
                    .threshold
                    .map(Spanned::into_inner)
                    .unwrap_or(DEFAULT_BULK_THRESHOLD),
                approvals: Some(self.requirement(&p, b.required, b.from)?),
                across_plans: b.across_plans.unwrap_or(true),
            };
        }
        if let Some(r) = raw.remote {
            p.consumed_marker = r.consumed_marker.unwrap_or(true);
        }
        if let Some(s) = raw.sandbox {
            p.sandbox.required = s.required.unwrap_or(true);
            p.sandbox.network = s.network.unwrap_or(false);
            for path in s.read.unwrap_or_default() {
                // By the text: `Path::components` would quietly drop a `.`.
                let plain = path.get_ref().split('/').all(|c| c != "." && c != "..");
                if !path.get_ref().starts_with('/') || !plain {
                    return Err(self.err(
                        &path,
                        format!(
                            "sandbox.read: `{}` is not an absolute path without `.` or `..`",
                            path.get_ref().escape_debug()
                        ),
                    ));
                }
                p.sandbox.read.push(path.into_inner());
            }
            p.sandbox.read.sort();
            p.sandbox.read.dedup();
        }
        if let Some(a) = raw.agents {
            p.agents.exec = a.exec.unwrap_or(false);
            for m in a.may_approve.unwrap_or_default() {
                let s = m.get_ref();
                if s.is_empty()
                    || s.contains('*')
                    || s.contains('?')
                    || s.chars().any(|c| c.is_whitespace() || c.is_control())
                {
                    return Err(self.err(
                        &m,
                        format!(
                            "agents.may_approve: `{}` is not an exact principal",
                            s.escape_debug()
                        ),
                    ));
                }
                p.agents.may_approve.push(m.into_inner());
            }
            if let Some(list) = a.regenerable {
                let mut patterns = Vec::new();
                for r in list {
                    let t = r.get_ref();
                    // Relative patterns within the work tree: a `/`-rooted or `..` one would
                    // make paths outside it (or all of it) "regenerable".
                    if t.is_empty()
                        || t.starts_with('/')
                        || t.split('/').any(|c| c == "..")
                        || t.chars().any(char::is_control)
                    {
                        return Err(self.err(
                            &r,
                            format!(
                                "agents.regenerable: `{}` is not a pattern relative to the work tree",
                                t.escape_debug()
                            ),
                        ));
                    }
                    patterns.push(r.into_inner());
                }
                p.agents.regenerable = Some(patterns);
            }
        }
        let mut names = BTreeSet::new();
        for r in raw.route {
            let name = r.name.get_ref().clone();
            if !valid_name(&name) {
                return Err(self.err(
                    &r.name,
                    format!("route name `{}`: {NAME_RULE}", name.escape_debug()),
                ));
            }
            if RESERVED_GROUPS.contains(&name.as_str()) {
                return Err(self.err(&r.name, format!("route name `{name}` is reserved")));
            }
            if !names.insert(name.clone()) {
                return Err(self.err(&r.name, format!("a second route named `{name}`")));
            }
            if r.refs.is_none() && r.authors.is_none() && r.risk.is_none() {
                return Err(self.err(
                    &r.name,
                    format!("route `{name}` selects nothing: give refs, authors or risk"),
                ));
            }
            let refs = self.globs(r.refs.unwrap_or_default(), false)?;
            let authors = self.globs(r.authors.unwrap_or_default(), true)?;
            let mut risk: Vec<RiskLevel> = r
                .risk
                .unwrap_or_default()
                .into_iter()
                .map(Spanned::into_inner)
                .collect();
            risk.sort();
            risk.dedup();
            let approvals = self.requirement(&p, r.required, r.from)?;
            p.routes.push(Route {
                name,
                refs,
                authors,
                risk,
                approvals,
            });
        }
        Ok(p)
    }

    fn requirement(
        &self,
        p: &Policy,
        required: Spanned<u32>,
        from: List,
    ) -> Result<Requirement, PolicyError> {
        if *required.get_ref() == 0 {
            return Err(self.err(&required, "required must be at least 1"));
        }
        let from = self.group_names(p, from.unwrap_or_default())?;
        let members = p.members(&from);
        if !from.is_empty() && (members.len() as u64) < u64::from(*required.get_ref()) {
            return Err(self.err(
                &required,
                format!(
                    "{} approvals required but {} {} only {} {}: it could never be met",
                    required.get_ref(),
                    if from.len() == 1 { "group" } else { "groups" },
                    from.join(", "),
                    members.len(),
                    if members.len() == 1 { "member" } else { "members" },
                ),
            ));
        }
        Ok(Requirement {
            required: required.into_inner(),
            from,
        })
    }

    fn group_names(&self, p: &Policy, list: Vec<Spanned<String>>) -> Result<Vec<String>, PolicyError> {
        let mut out = Vec::new();
        for g in list {
            if !p.groups.contains_key(g.get_ref()) {
                return Err(self.err(
                    &g,
                    format!(
                        "unknown group `{}` (define it under [groups])",
                        g.get_ref().escape_debug()
                    ),
                ));
            }
            out.push(g.into_inner());
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn globs(&self, list: Vec<Spanned<String>>, case_insensitive: bool) -> Result<Vec<String>, PolicyError> {
        let mut out = Vec::new();
        for g in list {
            globset::GlobBuilder::new(g.get_ref())
                .literal_separator(true)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| self.err(&g, format!("invalid pattern: {e}")))?;
            out.push(g.into_inner());
        }
        Ok(out)
    }

    fn duration(&self, s: &Spanned<String>) -> Result<u64, PolicyError> {
        crate::duration::parse(s.get_ref())
            .map(|d| d.as_secs())
            .map_err(|e| self.err(s, e))
    }

    fn positive_duration(&self, s: &Spanned<String>) -> Result<u64, PolicyError> {
        match self.duration(s)? {
            0 => Err(self.err(s, "the duration must be longer than 0s")),
            n => Ok(n),
        }
    }
}

const NAME_RULE: &str = "use letters, digits, `.`, `_` and `-`, starting with a letter or digit";

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name.len() <= 64
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
version = 1
protected = ["main", "release/*"]
max_affected = 1000
clock_skew = "2m"
executors = ["ci"]

[expiry]
default = "30m"
max = "1d"

[backups]
retention_days = 90

[groups]
release = ["alice@example.com", "bob@example.com"]
ci = ["ci@example.com"]
team-a = ["bob@example.com"]

[approvals]
required = 1

[bulk]
threshold = 100
required = 2
from = ["release"]

[[route]]
name = "team-a"
authors = ["*@team-a.example.com"]
required = 1
from = ["team-a"]

[[route]]
name = "risky"
risk = ["high", "medium"]
required = 1
"#;

    #[test]
    fn parses_every_section() {
        let p = parse(FULL).unwrap();
        assert_eq!(p.protected, vec!["main", "release/*"]);
        assert_eq!(p.max_affected, Some(1000));
        assert_eq!(p.clock_skew_secs, 120);
        assert_eq!((p.default_expiry_secs, p.max_expiry_secs), (1800, 86_400));
        assert_eq!(p.retention_days, 90);
        assert_eq!(p.executors, vec!["ci"]);
        assert_eq!(p.bulk.threshold, 100);
        assert_eq!(p.bulk.approvals.as_ref().unwrap().required, 2);
        assert_eq!(p.routes.len(), 2);
        assert_eq!(p.routes[1].risk, vec![RiskLevel::Medium, RiskLevel::High]);
        assert!(p.routes[1].approvals.from.is_empty());
    }

    #[test]
    fn sandbox_settings_parse_strictly_and_only_non_defaults_change_the_hash() {
        let plain = parse("version = 1\n").unwrap();
        let same = parse("version = 1\n[sandbox]\nrequired = true\nnetwork = false\n").unwrap();
        assert_eq!(plain.hash().unwrap(), same.hash().unwrap());
        let open = parse("version = 1\n[sandbox]\nnetwork = true\nread = [\"/opt/tools\"]\n").unwrap();
        assert!(open.sandbox.network);
        assert_eq!(open.sandbox.read, ["/opt/tools"]);
        assert_ne!(plain.hash().unwrap(), open.hash().unwrap());
        let off = parse("version = 1\n[sandbox]\nrequired = false\n").unwrap();
        assert!(!off.sandbox.required);
        for bad in ["\"opt\"", "\"/opt/../home\"", "\"/opt/./x\""] {
            let (line, m) = line_and_message(&format!("version = 1\n[sandbox]\nread = [{bad}]\n"));
            assert_eq!(line, Some(3), "{m}");
            assert!(m.contains("absolute path"), "{m}");
        }
        let (_, m) = line_and_message("version = 1\n[sandbox]\nwrite = [\"/\"]\n");
        assert!(m.contains("unknown field"), "{m}");
    }

    #[test]
    fn agent_settings_are_off_by_default_exact_and_outside_the_hash() {
        let plain = parse("version = 1\n").unwrap();
        assert!(!plain.agents.exec);
        assert!(plain.agents.may_approve.is_empty());
        let on =
            parse("version = 1\n[agents]\nexec = true\nmay_approve = [\"alice@example.com\"]\n").unwrap();
        assert!(on.agents.exec);
        assert_eq!(on.agents.may_approve, ["alice@example.com"]);
        assert_eq!(plain.agents.regenerable, None);
        let own = parse("version = 1\n[agents]\nregenerable = [\"out/\", \"*.o\"]\n").unwrap();
        assert_eq!(
            own.agents.regenerable,
            Some(vec!["out/".to_string(), "*.o".to_string()])
        );
        let none = parse("version = 1\n[agents]\nregenerable = []\n").unwrap();
        assert_eq!(none.agents.regenerable, Some(vec![]));
        for bad in ["\"/\"", "\"../x\"", "\"\""] {
            assert!(
                parse(&format!("version = 1\n[agents]\nregenerable = [{bad}]\n")).is_err(),
                "{bad}"
            );
        }
        assert_eq!(plain.hash().unwrap(), on.hash().unwrap());
        let (line, m) = line_and_message("version = 1\n[agents]\nmay_approve = [\"*@example.com\"]\n");
        assert_eq!(line, Some(3), "{m}");
        assert!(m.contains("exact principal"), "{m}");
    }

    #[test]
    fn the_consumed_marker_is_on_by_default_and_only_off_changes_the_hash() {
        let on = parse("version = 1\n[remote]\nconsumed_marker = true\n").unwrap();
        assert!(on.consumed_marker);
        assert_eq!(on.hash().unwrap(), Policy::default().hash().unwrap());
        let off = parse("version = 1\n[remote]\nconsumed_marker = false\n").unwrap();
        assert!(!off.consumed_marker);
        assert_ne!(off.hash().unwrap(), Policy::default().hash().unwrap());
        let (line, m) = line_and_message("version = 1\n[remote]\nconsumed = false\n");
        assert_eq!(line, Some(3), "{m}");
    }

    #[test]
    fn minimal_file_is_the_default_policy() {
        assert_eq!(parse("version = 1\n").unwrap(), Policy::default());
        assert_eq!(
            parse("# comment\nversion = 1\n").unwrap().hash().unwrap(),
            Policy::default().hash().unwrap()
        );
    }

    fn line_and_message(text: &str) -> (Option<usize>, String) {
        let e = parse(text).unwrap_err();
        (e.line, e.message)
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("version = 1\nfrom = 2\n", 2, "unknown field"),
            (
                "version = 1\n[approvals]\nrequired = 1\nfrm = []\n",
                4,
                "unknown field",
            ),
            ("version = 1\n[approvals]\nrequired = -1\n", 3, ""),
            ("version = 2\n", 1, "unsupported policy version 2"),
            (
                "version = 1\n[approvals]\nrequired = 1\nfrom = [\"nobody\"]\n",
                4,
                "unknown group `nobody`",
            ),
            (
                "version = 1\n[expiry]\ndefault = \"2d\"\nmax = \"1d\"\n",
                3,
                "longer than expiry.max",
            ),
            ("version = 1\n[expiry]\nmax = \"1x\"\n", 3, "unknown unit"),
            (
                "version = 1\n\n[[route]]\nname = \"bulk\"\nrefs = [\"x\"]\nrequired = 1\n",
                4,
                "reserved",
            ),
            (
                "version = 1\n[[route]]\nname = \"a\"\nrequired = 1\n",
                3,
                "selects nothing",
            ),
            (
                "version = 1\n[[route]]\nname = \"a\"\nrefs = [\"[\"]\nrequired = 1\n",
                4,
                "invalid pattern",
            ),
            (
                "version = 1\n[[route]]\nname = \"a\"\nrisk = [\"extreme\"]\nrequired = 1\n",
                4,
                "",
            ),
            (
                "version = 1\n[groups]\nx = [\"a\"]\n[bulk]\nrequired = 2\nfrom = [\"x\"]\n",
                5,
                "could never be met",
            ),
            ("version = 1\n[groups]\nx = []\n", 3, "no members"),
            ("version = 1\nversion = 1\n", 2, "duplicate key"),
            ("version = 1\n[approvals]\nrequired = 0\n", 3, "at least 1"),
        ];
        for (text, line, needle) in cases {
            let (l, m) = line_and_message(text);
            assert_eq!(l, Some(*line), "{text:?}: {m}");
            assert!(m.contains(needle), "{text:?}: {m}");
        }
        assert!(parse("").unwrap_err().message.contains("version"));
    }
}
