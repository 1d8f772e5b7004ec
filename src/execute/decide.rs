//! What `recover` does with a local apply killed around its ref transaction, decided from
//! what is on disk now, as a pure function (its table of cases is the test below).
//!
//! git's files backend commits a transaction in steps a SIGKILL can split: it renames each
//! created ref's lock into place (the backup ref first, being the one creation), then
//! rewrites `packed-refs` without the deleted refs, then removes each deleted loose ref, then
//! its locks. A kill of the whole process group, git included, can stop it between any two
//! (measured: about one kill in 200 landed there; issue 35). So the backup ref's presence
//! says git's commit began, and each planned ref may be deleted or not. Other writers may
//! have deleted or moved a planned ref since, too (a ref git no longer locks is anyone's).
//!
//! The rule: a commit that began (the backup ref is there) is finished, every planned ref
//! still at its planned id deleted with a lease on that id; one that never began is
//! abandoned, whatever others did to the planned refs since (nothing of it was deleted by
//! this apply); one that began, deleted nothing and cannot finish (a planned ref moved) is
//! abandoned too, its backup ref kept (it may be all that keeps a moved ref's old commit; gc
//! removes it after its retention). Only where something was deleted *and* a planned ref
//! moved to an id nobody planned, or the backup ref holds an id nobody planned, is a person
//! needed: both name what moved.

/// A planned ref as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefNow {
    /// At the id the plan deleted it at.
    Planned,
    /// Gone.
    Deleted,
    /// At another id.
    Moved,
}

/// The plan's backup ref as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupNow {
    Absent,
    /// At the backup commit this apply wrote (which keeps every planned tip).
    Made,
    /// At another commit, or one that does not keep every planned tip.
    Foreign,
}

/// What `recover` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Everything was committed: settle (config, receipt).
    Committed,
    /// Finish the commit: delete the refs at these indexes, each leased on its planned id.
    Finish { delete: Vec<usize> },
    /// Nothing was deleted by this apply and nothing will be: abandon (a backup ref, if made,
    /// stays).
    Abandon,
    /// For a person: the refs at these indexes moved after something was deleted (empty:
    /// the backup ref is foreign).
    Person { moved: Vec<usize> },
}

pub fn decide(refs: &[RefNow], backup: BackupNow) -> Decision {
    let indexes = |want: RefNow| -> Vec<usize> {
        refs.iter()
            .enumerate()
            .filter(|(_, r)| **r == want)
            .map(|(i, _)| i)
            .collect()
    };
    let (deleted, moved, planned) = (
        indexes(RefNow::Deleted),
        indexes(RefNow::Moved),
        indexes(RefNow::Planned),
    );
    match backup {
        BackupNow::Foreign => Decision::Person { moved: Vec::new() },
        // git writes the backup ref first: without it, its commit never began, and what is
        // gone was deleted by someone else.
        BackupNow::Absent => Decision::Abandon,
        BackupNow::Made if deleted.is_empty() && !moved.is_empty() => Decision::Abandon,
        BackupNow::Made if !moved.is_empty() => Decision::Person { moved },
        BackupNow::Made if planned.is_empty() => Decision::Committed,
        BackupNow::Made => Decision::Finish { delete: planned },
    }
}

#[cfg(test)]
mod tests {
    use super::BackupNow::{Absent, Foreign, Made};
    use super::Decision::{self, Abandon, Committed, Finish, Person};
    use super::RefNow::{Deleted as D, Moved as M, Planned as P};
    use super::{BackupNow, RefNow, decide};

    /// Every combination of three planned refs' states and the backup's, with the decision
    /// each must get (issue 35 item 1).
    #[test]
    fn recovery_decides_every_state_a_killed_transaction_can_leave() {
        let finish = |delete: &[usize]| Finish {
            delete: delete.to_vec(),
        };
        let person = |moved: &[usize]| Person {
            moved: moved.to_vec(),
        };
        let table: &[(&[RefNow], BackupNow, Decision)] = &[
            // The commit never began, whatever others did since.
            (&[P, P, P], Absent, Abandon),
            (&[P, M, P], Absent, Abandon),
            (&[M, M, M], Absent, Abandon),
            (&[D, P, P], Absent, Abandon),
            (&[D, D, D], Absent, Abandon),
            (&[D, M, P], Absent, Abandon),
            // It began (the backup is in place): finish it, or abandon it when it deleted
            // nothing and cannot finish.
            (&[P, P, P], Made, finish(&[0, 1, 2])),
            (&[P, M, P], Made, Abandon),
            (&[M, M, M], Made, Abandon),
            // Split midway: finish the rest.
            (&[D, P, P], Made, finish(&[1, 2])),
            (&[D, D, P], Made, finish(&[2])),
            (&[P, D, D], Made, finish(&[0])),
            // Done.
            (&[D, D, D], Made, Committed),
            // Something was deleted and a ref moved: for a person, naming it.
            (&[D, M, P], Made, person(&[1])),
            (&[D, M, M], Made, person(&[1, 2])),
            // A backup ref nobody planned.
            (&[P, P, P], Foreign, person(&[])),
            (&[D, D, D], Foreign, person(&[])),
        ];
        for (refs, backup, want) in table {
            assert_eq!(
                &decide(refs, *backup),
                want,
                "{refs:?} with the backup {backup:?}"
            );
        }
    }

    /// The table above, exhaustively: every state of three refs gets some decision, and a
    /// person only where something was deleted and something moved, or the backup is foreign.
    #[test]
    fn a_person_is_needed_only_where_the_commit_deleted_something_and_something_moved() {
        let states = [P, D, M];
        for a in states {
            for b in states {
                for c in states {
                    for backup in [Absent, Made, Foreign] {
                        let refs = [a, b, c];
                        let d = decide(&refs, backup);
                        let needs =
                            backup == Foreign || (backup == Made && refs.contains(&D) && refs.contains(&M));
                        assert_eq!(matches!(d, Person { .. }), needs, "{refs:?} {backup:?}: {d:?}");
                        if let Finish { delete, .. } = &d {
                            assert!(delete.iter().all(|i| refs[*i] == P), "{refs:?}: {d:?}");
                        }
                    }
                }
            }
        }
    }
}
