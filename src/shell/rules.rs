//! The rules that say which shell commands are destructive and what guardctl makes of each:
//! data, not code (`rules.toml` is the built-in set; a trusted policy's `[[hook.rule]]`
//! entries come first). Parsed strictly: an unknown key or a rule that could never match is
//! an error, never a rule silently ignored.
//!
//! The rules are not what makes a line pass: only the allowlist does (`super::allow`). A rule
//! makes its command Known (planned or refused without running anything), unless it is
//! `local`: then it only names the reason, and the sandbox's trial finds what it destroys.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in rules, compiled in: what a fresh install enforces with no policy at all.
pub const BUILT_IN: &str = include_str!("rules.toml");

/// What guardctl plans natively for a matched command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Native {
    /// `git branch -d/-D`: a stale-branches plan of the names given.
    Branches,
    /// `git tag -d`: a tags plan of the names given.
    Tags,
    /// `git push`: deletions become remote-branches or tags plans; force pushes an exec plan.
    Push,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub program: String,
    #[serde(default)]
    pub subcommand: Vec<String>,
    #[serde(default)]
    pub when: Vec<String>,
    #[serde(default)]
    pub unless: Vec<String>,
    pub native: Option<Native>,
    pub preview: Option<String>,
    #[serde(default)]
    pub replace: BTreeMap<String, String>,
    pub reason: String,
    /// Its effect is on the files and repository here, which the sandbox's trial observes
    /// exactly: a line with it is tried, not planned from the rule. The rule still gives the
    /// reason; a rule without `local` (a policy's own, a remote effect) stays Known.
    #[serde(default)]
    pub local: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
}

impl Rules {
    /// The built-in set (a unit test checks that it parses).
    pub fn built_in() -> Result<Rules, String> {
        parse(BUILT_IN).map_err(|e| format!("guardctl's built-in hook rules: {e}"))
    }

    /// `first` (a policy's rules) ahead of `self`.
    pub fn after(mut self, first: Vec<Rule>) -> Rules {
        let mut rules = first;
        rules.append(&mut self.rules);
        Rules { rules }
    }

    /// The first rule for `program` whose subcommand starts `operands` and whose `when` and
    /// `unless` hold for `args` (every argument after the program).
    pub fn find<'r>(
        &'r self,
        program: &str,
        subcommand_at: &dyn Fn(&[String]) -> Option<usize>,
        args: &[String],
    ) -> Option<(&'r Rule, usize)> {
        self.rules.iter().find_map(|r| {
            if !program_matches(&r.program, program) {
                return None;
            }
            let at = subcommand_at(&r.subcommand)?;
            let rest = &args[at..];
            let hit = |set: &[String], loose: bool| {
                set.iter().any(|p| {
                    rest.iter()
                        .enumerate()
                        .any(|(i, a)| arg_matches(p, a, i, rest, loose))
                })
            };
            let destructive = (r.when.is_empty() || hit(&r.when, true)) && !hit(&r.unless, false);
            destructive.then_some((r, at))
        })
    }

    /// A rule for `program` that could match once the shell has expanded the arguments only
    /// it knows (`None` in `args`, with the literal text each certainly starts with in
    /// `prefixes`): such a word could be the subcommand or an option a `when` names. `unless`
    /// is not relied on: an expansion may just as well not give it.
    pub fn could_match<'r>(
        &'r self,
        program: &str,
        args: &[Option<String>],
        prefixes: &[String],
        git: bool,
    ) -> Option<&'r Rule> {
        let fits = |i: usize, want: &str| match &args[i] {
            Some(a) => a == want,
            None => want.starts_with(prefixes[i].as_str()),
        };
        self.rules.iter().find(|r| {
            if !program_matches(&r.program, program) {
                return false;
            }
            let sub = &r.subcommand;
            let starts: Vec<usize> = if sub.is_empty() {
                vec![0]
            } else if git {
                let words: Vec<Option<&str>> = args.iter().map(Option::as_deref).collect();
                vec![git_subcommand_start(&words)]
            } else {
                (0..args.len()).collect()
            };
            starts.into_iter().any(|at| {
                let sub_fits =
                    args.len() >= at + sub.len() && sub.iter().enumerate().all(|(k, w)| fits(at + k, w));
                if !sub_fits {
                    return false;
                }
                // After the subcommand: a known word matches a `when` as `find` would match it;
                // an unknown one could be any word its literal prefix allows.
                let from = at + sub.len();
                let known: Vec<String> = args[from..]
                    .iter()
                    .map(|a| a.clone().unwrap_or_default())
                    .collect();
                r.when.is_empty()
                    || r.when.iter().any(|p| {
                        (0..known.len()).any(|i| match &args[from + i] {
                            Some(a) => arg_matches(p, a, i, &known, true),
                            None => {
                                let (p, prefix) = (p.trim_end_matches('*'), prefixes[from + i].as_str());
                                p.starts_with(prefix) || prefix.starts_with(p)
                            }
                        })
                    })
            })
        })
    }
}

/// Where git's subcommand is among its words once `git_globals` has kept only its plain
/// options (and `-c VALUE` pairs) in front; an unknown word (`None`) ends the options.
pub fn git_subcommand_start(words: &[Option<&str>]) -> usize {
    let mut i = 0;
    while let Some(Some(w)) = words.get(i) {
        if !w.starts_with('-') {
            break;
        }
        i += if matches!(*w, "-c" | "--config-env") { 2 } else { 1 };
    }
    i.min(words.len())
}

/// Rules from TOML text, checked.
pub fn parse(text: &str) -> Result<Rules, String> {
    let rules: Rules = toml::from_str(text).map_err(|e| e.to_string())?;
    for r in &rules.rules {
        check(r)?;
    }
    Ok(rules)
}

/// A rule that could never match, or that says two things at once, is refused.
pub fn check(r: &Rule) -> Result<(), String> {
    let name = format!("the rule for `{}`", r.program);
    if r.program.is_empty() || r.program.contains('/') {
        return Err(format!(
            "{name}: `program` is a command name, without a directory"
        ));
    }
    if r.native.is_some() && r.local {
        return Err(format!(
            "{name}: a `native` plan is Known, never tried: drop `local`"
        ));
    }
    if r.native.is_some() && r.preview.is_some() {
        return Err(format!("{name}: `native` and `preview` exclude each other"));
    }
    if r.reason.trim().is_empty() {
        return Err(format!("{name}: `reason` says what the command destroys"));
    }
    for p in r.when.iter().chain(&r.unless) {
        if p.is_empty() || p == "-" || p == "--*" {
            return Err(format!("{name}: `{p}` matches nothing or everything"));
        }
    }
    if let Some(preview) = &r.preview {
        let mut rest = preview.as_str();
        while let Some(i) = rest.find('{') {
            let end = rest[i..]
                .find('}')
                .ok_or_else(|| format!("{name}: an unclosed `{{` in the preview"))?;
            let field = &rest[i + 1..i + end];
            if !matches!(field, "args" | "rest" | "operands") {
                return Err(format!(
                    "{name}: the preview's `{{{field}}}` is none of {{args}}, {{rest}}, {{operands}}"
                ));
            }
            rest = &rest[i + end + 1..];
        }
    }
    Ok(())
}

fn program_matches(pattern: &str, program: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => program.starts_with(prefix),
        None => pattern == program,
    }
}

/// Whether argument `a` (the `i`th of `all`) is what `pattern` names. Arguments after `--`
/// are operands. `loose` (for `when`) also takes an unambiguous-looking abbreviation of a
/// long option, as git's option parser does: a command guardctl misses is worse than one it
/// plans needlessly.
fn arg_matches(pattern: &str, a: &str, i: usize, all: &[String], loose: bool) -> bool {
    let after_dashes = all[..i].iter().any(|x| x == "--");
    let is_option = !after_dashes && a.starts_with('-') && a != "-" && a != "--";
    if pattern == "--" {
        return a == "--" && !after_dashes;
    }
    // `unless` exempts only on exactly what it names: `-n` inside `git clean -en` is `-e`'s
    // value, and `--dry-run=none` is no dry run.
    if !loose {
        return a == pattern && (is_option || !pattern.starts_with('-'));
    }
    if let Some(long) = pattern.strip_prefix("--") {
        if !is_option || !a.starts_with("--") {
            return false;
        }
        let given = a[2..].split('=').next().unwrap_or("");
        // git (and most parsers) take any unambiguous prefix: `--dele`, `--ha`, `--forc`.
        return match long.strip_suffix('*') {
            Some(prefix) => given.starts_with(prefix),
            None => given == long || (!given.is_empty() && long.starts_with(given)),
        };
    }
    if let Some(short) = pattern.strip_prefix('-') {
        if !is_option {
            return false;
        }
        // A single-letter option, alone or in a cluster (`-fdx`); a longer single-dash
        // option (`-destroy`, `-delete`) as itself, or with two dashes as Go's flags allow.
        return if short.chars().count() == 1 {
            !a.starts_with("--")
                && a[1..].contains(short)
                && a[1..].chars().all(|c| c.is_ascii_alphanumeric())
        } else {
            let bare = a.trim_start_matches('-');
            bare == short || bare.starts_with(&format!("{short}="))
        };
    }
    if is_option {
        return false;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => a.starts_with(prefix),
        None => a == pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn first(program: &str, a: &[&str]) -> Option<String> {
        let rules = Rules::built_in().unwrap();
        let a = args(a);
        let at = |sub: &[String]| (a.len() >= sub.len() && a[..sub.len()] == *sub).then_some(sub.len());
        rules.find(program, &at, &a).map(|(r, _)| r.reason.clone())
    }

    #[test]
    fn the_built_in_rules_parse_and_pass_their_checks() {
        let rules = Rules::built_in().unwrap();
        assert!(rules.rules.len() > 30);
    }

    #[test]
    fn options_match_alone_in_clusters_and_as_abbreviations() {
        assert!(first("git", &["clean", "-fdx"]).is_some());
        assert!(first("git", &["clean", "--forc"]).is_some());
        assert!(
            first("git", &["clean", "-fdn"]).is_some(),
            "only -n on its own exempts: in a cluster it may be another option's value"
        );
        assert!(
            first("git", &["clean", "-fdx", "-en"]).is_some(),
            "-en is -e's value, not -n"
        );
        assert!(first("git", &["clean", "--fo", "-dx"]).is_some());
        assert!(first("git", &["branch", "--de", "x"]).is_some());
        assert!(first("git", &["reset", "--h"]).is_some());
        assert!(first("terraform", &["apply", "--auto-approve"]).is_some());
        assert!(first("kubectl", &["delete", "pod", "x", "--dry-run=none"]).is_some());
        assert!(first("kubectl", &["delete", "pod", "x", "--dry-run=server"]).is_none());
        assert!(first("git", &["clean", "-f", "--dry-run"]).is_none());
        assert!(first("git", &["clean", "-x"]).is_none(), "git refuses without -f");
        assert!(
            first("git", &["clean", "--", "-f"]).is_none(),
            "after --, -f is a path"
        );
        assert!(first("find", &[".", "-name", "x", "-delete"]).is_some());
        assert!(first("find", &[".", "-name", "-delete.txt"]).is_none());
    }

    #[test]
    fn a_rule_without_when_always_matches_and_unless_exempts() {
        assert!(first("rm", &["x"]).is_some());
        assert!(first("git", &["restore", "src/a.rs"]).is_some());
        assert!(first("git", &["restore", "--staged", "src/a.rs"]).is_none());
        assert!(first("mkfs.ext4", &["/dev/sdb1"]).is_some());
        assert!(first("ls", &["-la"]).is_none());
    }

    #[test]
    fn rules_that_cannot_work_are_refused() {
        for bad in [
            "[[rule]]\nprogram = \"x\"\nreason = \"r\"\nnative = \"branches\"\npreview = \"p\"\n",
            "[[rule]]\nprogram = \"/bin/x\"\nreason = \"r\"\n",
            "[[rule]]\nprogram = \"x\"\nreason = \"\"\n",
            "[[rule]]\nprogram = \"x\"\nreason = \"r\"\npreview = \"ls {paths}\"\n",
            "[[rule]]\nprogram = \"x\"\nreason = \"r\"\nwhen = [\"\"]\n",
            "[[rule]]\nprogram = \"x\"\nreason = \"r\"\ncolour = \"red\"\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
