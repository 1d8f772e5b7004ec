//! What `recover` did, in words: one sentence per [`RecoveryOutcome`], the same for the
//! notice an apply or rollback prints, `recover`'s own output and the detail of the audit
//! entry that records it (so the words are part of the signed log: keep them stable).

use crate::store::recovered::{Abandoned, Completed, Recovered, RecoveryOutcome};
use crate::text::safe;
use serde::Serialize;

/// `recover --json`'s document, its keys in alphabetical order as it has always been written.
#[derive(Debug, Serialize)]
pub struct RecoverView {
    pub recovered: Vec<RecoveredView>,
}

/// One plan `recover` settled.
#[derive(Debug, Serialize)]
pub struct RecoveredView {
    pub outcome: String,
    /// `sha256:<hex>`.
    pub plan_id: String,
}

impl RecoverView {
    pub fn of(done: &[Recovered]) -> RecoverView {
        RecoverView {
            recovered: done
                .iter()
                .map(|r| RecoveredView {
                    outcome: describe(&r.outcome),
                    plan_id: format!("sha256:{}", r.id),
                })
                .collect(),
        }
    }
}

/// `recover`'s human output: a line per plan settled, or that there was nothing to settle.
pub fn human(done: &[Recovered]) -> String {
    if done.is_empty() {
        return "Nothing to recover: no apply or rollback was interrupted.\n".into();
    }
    done.iter()
        .map(|r| {
            format!(
                "Plan {}: {}.\n",
                super::view::short_id(&r.id),
                describe(&r.outcome)
            )
        })
        .collect()
}

/// The notice an apply or rollback prints for a plan its session recovered first.
pub fn notice(r: &Recovered) -> String {
    format!("recovered plan sha256:{}: {}", r.id, describe(&r.outcome))
}

/// The sentence for `outcome` (no final period: `recover` adds one, the notice does not).
pub fn describe(outcome: &RecoveryOutcome) -> String {
    match outcome {
        RecoveryOutcome::Forgotten => {
            "abandoned an apply interrupted before it began; nothing had changed".into()
        }
        RecoveryOutcome::Completed(c) => match c {
            Completed::Committed => "completed the interrupted apply".into(),
            Completed::CommandFinished => "completed the interrupted apply (the command had finished)".into(),
            Completed::PushLanded => "the push had landed: completed the apply".into(),
            Completed::DeletionsCommitted => "the deletions had been committed: completed the apply".into(),
            Completed::UnmarkedPushLanded => {
                "every planned ref is gone from the remote: the push had landed; completed the apply".into()
            }
            Completed::PushFinished { deleted } => format!(
                "the push had landed with {deleted} of its deletions not yet made on the remote: deleted {}, each still at its planned commit; completed the apply",
                if *deleted == 1 { "it" } else { "them" }
            ),
            Completed::CommitFinished { deleted } => format!(
                "git's commit of the deletions was killed midway: deleted the {deleted} planned branch{} it had not yet deleted, each still at its planned commit; completed the apply",
                if *deleted == 1 { "" } else { "es" }
            ),
        },
        RecoveryOutcome::Abandoned(a) => match a {
            Abandoned::PushNotLanded => {
                "the push had not landed: abandoned the apply; nothing was deleted".into()
            }
            Abandoned::DeletionsNotCommitted => {
                "the deletions had not been committed: abandoned the apply; nothing was deleted".into()
            }
            Abandoned::CommitAbandoned => {
                "git's commit of the deletions was killed before it deleted anything and a planned branch has moved since: abandoned the apply; nothing was deleted (its backup ref stays until gc)".into()
            }
            Abandoned::UnmarkedPushNotLanded => {
                "no planned ref is gone from the remote: the push had not landed; abandoned the apply; nothing was deleted".into()
            }
            Abandoned::UnmarkedNotPushed => {
                "the apply had not pushed yet (its backup was not made): abandoned the apply; nothing was deleted by it".into()
            }
            Abandoned::CommandNotStarted { published_on } => published(
                "the command had not started: abandoned the apply; it was not run",
                published_on.as_deref(),
            ),
            Abandoned::CommandInterrupted { published_on } => published(
                "the command was interrupted while it ran; it was not run again: check its effects by hand",
                published_on.as_deref(),
            ),
        },
        RecoveryOutcome::RolledBack { config_only: true } => "completed the interrupted rollback".into(),
        RecoveryOutcome::RolledBack { config_only: false } => {
            "the branches had been restored: completed the rollback".into()
        }
        RecoveryOutcome::RollbackFinished { restored } => format!(
            "the rollback was interrupted before it restored {restored} branch{}: restored {}; completed the rollback",
            if *restored == 1 { "" } else { "es" },
            if *restored == 1 { "it" } else { "them" }
        ),
    }
}

/// `what`, and where the abandonment was published for other clones, if it was.
fn published(what: &str, remote: Option<&str>) -> String {
    match remote {
        Some(remote) => format!(
            "{what} (its consumed marker is on remote `{}`: the abandonment is published there for other clones)",
            safe(remote)
        ),
        None => what.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are part of the signed audit log: they stay what they were.
    #[test]
    fn outcomes_keep_their_words() {
        let published = RecoveryOutcome::Abandoned(Abandoned::CommandInterrupted {
            published_on: Some("origin".into()),
        });
        assert_eq!(
            describe(&published),
            "the command was interrupted while it ran; it was not run again: check its effects by hand (its consumed marker is on remote `origin`: the abandonment is published there for other clones)"
        );
        assert_eq!(
            describe(&RecoveryOutcome::Completed(Completed::Committed)),
            "completed the interrupted apply"
        );
        let done = [Recovered {
            id: "ab".repeat(32),
            outcome: RecoveryOutcome::RollbackFinished { restored: 2 },
        }];
        assert_eq!(
            human(&done),
            "Plan sha256:abababababab…: the rollback was interrupted before it restored 2 branches: restored them; completed the rollback.\n"
        );
        assert_eq!(
            serde_json::to_string(&RecoverView::of(&done)).unwrap(),
            format!(
                "{{\"recovered\":[{{\"outcome\":\"{}\",\"plan_id\":\"sha256:{}\"}}]}}",
                describe(&done[0].outcome),
                done[0].id
            )
        );
    }
}
