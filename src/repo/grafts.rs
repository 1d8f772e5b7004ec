//! The parents git substitutes for some commits: a shallow clone's boundary (`shallow`: the
//! listed commits have no parents here, their parents' objects were never fetched) and the
//! old `info/grafts` file (a commit followed by the parents to use instead of its own).
//!
//! git and libgit2 (since 1.7) honour both when they walk history; guardctl's own parent
//! reader (`graph::Parents`) reads commit objects raw, so it must too. Without this, a plan in
//! a shallow clone (CI's usual checkout) stopped at the boundary with "object not found".
//!
//! A substituted history can only be the repository's own (whoever can write these files can
//! write its refs too), and `verify`/`apply` read the same files: a plan and its re-derivation
//! agree. Cutting history never makes a branch look merged that is not: reachability through a
//! cut graph is reachability through the whole one.

use crate::error::{Error, Result};
use git2::Oid;
use std::collections::HashMap;
use std::path::Path;

/// Commit → the parents git uses for it.
#[derive(Debug, Default)]
pub struct Grafts(HashMap<Oid, Vec<Oid>>);

impl Grafts {
    /// The substitutions of the repository whose common git dir is `common`; `None` when it
    /// has none (the usual case). A line git would reject is an error here too.
    pub fn load(common: &Path) -> Result<Option<Grafts>> {
        let mut grafts = Grafts::default();
        // `info/grafts` first: git lets a shallow boundary override a graft of the same commit.
        for name in ["info/grafts", "shallow"] {
            let path = common.join(name);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("read", &path)(e)),
            };
            grafts.parse(&text, name == "shallow").map_err(|line| {
                Error::usage(format!(
                    "{} has a line git cannot read (line {line})",
                    path.display()
                ))
                .with_hint("this is git's own file: `git fsck` or a fresh clone repairs it")
            })?;
        }
        Ok((!grafts.0.is_empty()).then_some(grafts))
    }

    /// The parents git uses for `commit`, when they are not the object's own.
    pub fn get(&self, commit: Oid) -> Option<&[Oid]> {
        self.0.get(&commit).map(Vec::as_slice)
    }

    /// Add the lines of one file; `Err(n)` names the first bad line (1-based). In `shallow`
    /// a line is one commit; in `info/grafts` a commit and its parents, `#` starts a comment.
    fn parse(&mut self, text: &str, shallow: bool) -> std::result::Result<(), usize> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || (!shallow && line.starts_with('#')) {
                continue;
            }
            let mut ids = line.split(' ').map(|hex| {
                (hex.len() == 40 || hex.len() == 64)
                    .then(|| Oid::from_str(hex).ok())
                    .flatten()
            });
            let commit = ids.next().flatten().ok_or(n + 1)?;
            let parents: Vec<Oid> = ids.collect::<Option<_>>().ok_or(n + 1)?;
            if shallow && !parents.is_empty() {
                return Err(n + 1);
            }
            self.0.insert(commit, parents);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";
    const C: &str = "3333333333333333333333333333333333333333";

    fn oid(s: &str) -> Oid {
        Oid::from_str(s).unwrap()
    }

    #[test]
    fn a_shallow_commit_has_no_parents_and_a_graft_has_its_listed_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("info")).unwrap();
        std::fs::write(
            dir.path().join("info/grafts"),
            format!("# note\n{A} {B} {C}\n{B} {C}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("shallow"), format!("{B}\n")).unwrap();
        let g = Grafts::load(dir.path()).unwrap().unwrap();
        assert_eq!(g.get(oid(A)), Some(&[oid(B), oid(C)][..]));
        assert_eq!(
            g.get(oid(B)),
            Some(&[][..]),
            "the shallow boundary wins over the graft"
        );
        assert_eq!(g.get(oid(C)), None);
    }

    #[test]
    fn no_files_means_no_substitutions() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Grafts::load(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join("shallow"), "\n").unwrap();
        assert!(Grafts::load(dir.path()).unwrap().is_none());
    }

    #[test]
    fn a_line_git_would_reject_is_an_error_naming_it() {
        for (file, text, line) in [
            ("shallow", format!("{A}\nnot-an-id\n"), 2),
            ("shallow", format!("{A} {B}\n"), 1),
            ("info/grafts", format!("{A} {}\n", &B[..39]), 1),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("info")).unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
            let e = Grafts::load(dir.path()).unwrap_err();
            assert!(e.to_string().contains(&format!("(line {line})")), "{e}");
        }
    }
}
