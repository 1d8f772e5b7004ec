//! A shallow clone's boundary (`shallow`): the listed commits have no parents here, their
//! parents' objects were never fetched.
//!
//! git and libgit2 (since 1.7) cut history there when they walk it; guardctl's own parent
//! reader (`graph::Parents`) reads commit objects raw, so it must too. Without this, a plan in
//! a shallow clone (CI's usual checkout) stopped at the boundary with "object not found".
//! Cutting history never makes a branch look merged that is not: reachability through a cut
//! graph is reachability through the whole one. `verify`/`apply` read the same file, so a
//! plan and its re-derivation agree.
//!
//! The older `info/grafts` file is refused instead: a graft can *add* parents, so a line in it
//! makes any unmerged branch look merged to git and libgit2. git deprecated it in 2.18; a
//! deletion tool has no business judging history through it.

use crate::error::{Error, Result};
use git2::Oid;
use std::collections::HashSet;
use std::path::Path;

/// The commits whose parents this clone does not have.
#[derive(Debug, Default)]
pub struct Shallow(HashSet<Oid>);

impl Shallow {
    /// The boundary of the repository whose common git dir is `common`; `None` when it is not
    /// shallow (the usual case). A line git would reject is an error here too, and so is an
    /// `info/grafts` file.
    pub fn load(common: &Path) -> Result<Option<Shallow>> {
        let grafts_file = common.join("info/grafts");
        if grafts_file.exists() {
            return Err(Error::usage(format!(
                "{} exists: a graft can make unmerged work look merged, so guardctl will not judge history through it",
                grafts_file.display()
            ))
            .with_hint("git deprecated grafts: `git replace --convert-graft-file` turns them into replace refs (which guardctl, like libgit2, does not follow), or remove the file"));
        }
        let path = common.join("shallow");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path)(e)),
        };
        let mut shallow = Shallow::default();
        shallow.parse(&text).map_err(|line| {
            Error::usage(format!(
                "{} has a line git cannot read (line {line})",
                path.display()
            ))
            .with_hint("this is git's own file: `git fetch --unshallow` or a fresh clone repairs it")
        })?;
        Ok((!shallow.0.is_empty()).then_some(shallow))
    }

    /// Whether git treats `commit` as having no parents here.
    pub fn is_boundary(&self, commit: Oid) -> bool {
        self.0.contains(&commit)
    }

    /// Add the commits of a `shallow` file, one per line; `Err(n)` names the first bad line
    /// (1-based).
    fn parse(&mut self, text: &str) -> std::result::Result<(), usize> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let commit = (line.len() == 40 || line.len() == 64)
                .then(|| Oid::from_str(line).ok())
                .flatten()
                .ok_or(n + 1)?;
            self.0.insert(commit);
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
    fn the_boundary_is_every_listed_commit_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shallow"), format!("{A}\n{B}\n")).unwrap();
        let s = Shallow::load(dir.path()).unwrap().unwrap();
        assert!(s.is_boundary(oid(A)) && s.is_boundary(oid(B)));
        assert!(!s.is_boundary(oid(C)));
    }

    #[test]
    fn a_grafts_file_is_refused_because_it_can_add_parents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("info")).unwrap();
        std::fs::write(dir.path().join("info/grafts"), format!("{A} {B}\n")).unwrap();
        let e = Shallow::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("unmerged work look merged"), "{e}");
    }

    #[test]
    fn a_clone_that_is_not_shallow_has_no_boundary() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Shallow::load(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join("shallow"), "\n").unwrap();
        assert!(Shallow::load(dir.path()).unwrap().is_none());
    }

    #[test]
    fn a_line_git_would_reject_is_an_error_naming_it() {
        for (text, line) in [
            (format!("{A}\nnot-an-id\n"), 2),
            (format!("{A} {B}\n"), 1),
            (format!("{}\n", &B[..39]), 1),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("shallow"), text).unwrap();
            let e = Shallow::load(dir.path()).unwrap_err();
            assert!(e.to_string().contains(&format!("(line {line})")), "{e}");
        }
    }
}
