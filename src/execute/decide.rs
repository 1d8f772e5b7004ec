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
//! The rule: a commit that began is finished (every planned ref still at its planned id is
//! deleted with a lease on that id, the backup ref made first if missing); one that did not
//! begin is abandoned; one that deleted nothing but cannot be finished (a planned ref moved)
//! is rolled back exactly (its backup ref removed). Only where something was deleted *and* a
//! planned ref moved to an id nobody planned, or the backup ref holds an id nobody planned,
//! is a person needed: both name what moved.

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
    /// Finish the commit: delete the refs at these indexes (each leased on its planned id),
    /// creating the backup ref first in the same transaction when `make_backup`.
    Finish { delete: Vec<usize>, make_backup: bool },
    /// The commit never began: nothing to undo; abandon.
    Abandon,
    /// Nothing was deleted but the commit cannot be finished: remove the backup ref
    /// (leased on the backup commit) and abandon.
    RollBack,
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
    if backup == BackupNow::Foreign {
        return Decision::Person { moved: Vec::new() };
    }
    if deleted.is_empty() {
        return match (backup, moved.is_empty()) {
            // The commit never began (the backup is its first write): nothing changed.
            (BackupNow::Absent, _) => Decision::Abandon,
            // It began and nothing is in its way: finish what was approved.
            (_, true) => Decision::Finish {
                delete: planned,
                make_backup: false,
            },
            // It began, deleted nothing, and cannot finish: undo the backup, exactly.
            (_, false) => Decision::RollBack,
        };
    }
    if !moved.is_empty() {
        return Decision::Person { moved };
    }
    if planned.is_empty() && backup == BackupNow::Made {
        return Decision::Committed;
    }
    // Something is gone and the rest is where the plan saw it. Without the backup ref
    // (git writes it first, so another writer deleted what is gone) it is made now, from the
    // backup commit apply wrote before the transaction: nothing planned stays unkept.
    Decision::Finish {
        delete: planned,
        make_backup: backup == BackupNow::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::BackupNow::{Absent, Foreign, Made};
    use super::Decision::{self, Abandon, Committed, Finish, Person, RollBack};
    use super::RefNow::{Deleted as D, Moved as M, Planned as P};
    use super::{BackupNow, RefNow, decide};

    /// Every combination of three planned refs' states and the backup's, with the decision
    /// each must get (issue 35 item 1).
    #[test]
    fn recovery_decides_every_state_a_killed_transaction_can_leave() {
        let finish = |delete: &[usize], make_backup: bool| Finish {
            delete: delete.to_vec(),
            make_backup,
        };
        let person = |moved: &[usize]| Person {
            moved: moved.to_vec(),
        };
        let table: &[(&[RefNow], BackupNow, Decision)] = &[
            // The commit never began.
            (&[P, P, P], Absent, Abandon),
            (&[P, M, P], Absent, Abandon),
            (&[M, M, M], Absent, Abandon),
            // It began (the backup is in place): finish it, or undo it when it cannot finish.
            (&[P, P, P], Made, finish(&[0, 1, 2], false)),
            (&[P, M, P], Made, RollBack),
            (&[M, M, M], Made, RollBack),
            // Split midway: finish the rest.
            (&[D, P, P], Made, finish(&[1, 2], false)),
            (&[D, D, P], Made, finish(&[2], false)),
            (&[P, D, D], Made, finish(&[0], false)),
            // Done.
            (&[D, D, D], Made, Committed),
            // Gone without the backup: someone else deleted them; back up and finish.
            (&[D, P, P], Absent, finish(&[1, 2], true)),
            (&[D, D, D], Absent, finish(&[], true)),
            // Something was deleted and a ref moved: for a person, naming it.
            (&[D, M, P], Made, person(&[1])),
            (&[D, M, M], Absent, person(&[1, 2])),
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
    fn a_person_is_needed_only_where_something_was_deleted_and_something_moved() {
        let states = [P, D, M];
        for a in states {
            for b in states {
                for c in states {
                    for backup in [Absent, Made, Foreign] {
                        let refs = [a, b, c];
                        let d = decide(&refs, backup);
                        let needs = backup == Foreign || (refs.contains(&D) && refs.contains(&M));
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
