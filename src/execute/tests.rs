//! The sequences against a real repository: each protocol's journal, a crash at each step
//! and what `recover` makes of it, and the records read back.

use super::records::signed_state;
use super::*;
use crate::error::{Error, Kind};
use crate::plan::approval::APPLY_NAMESPACE;
use crate::plan::approval::DeletedRef;
use crate::render::recovery::describe;
use crate::repo::Repo;
use crate::repo::mutate::RefOp;
use crate::sign::key::{KeySource, load};
use crate::sign::{AllowedSigners, dsse};
use crate::store::BeforeImage;
use crate::store::recovered::{Completed, RecoveryOutcome};
use crate::store::state::{self, Consumed, Step};
use std::path::Path;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);
const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A real repository: `main` with one commit, `topic` one commit ahead of it; alice's
/// key (the executor's) and bob's.
struct Fixture {
    /// Holds the repository and the keys' copies until the test ends.
    _dir: tempfile::TempDir,
    repo: Repo,
    store: Store,
    topic: String,
    alice: SigningKey,
    bob: SigningKey,
}

impl Fixture {
    /// alice may apply; bob is listed too.
    fn signers(&self) -> AllowedSigners {
        let line = |who: &str, k: &SigningKey| format!("{who} {}\n", k.public.to_openssh().unwrap());
        AllowedSigners::parse(&(line("alice", &self.alice) + &line("bob", &self.bob))).unwrap()
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(dir.path().join("r")).unwrap();
    let sig = git2::Signature::new("A", "a@x", &git2::Time::new(1_780_000_000, 0)).unwrap();
    let tree = git.find_tree(git.index().unwrap().write_tree().unwrap()).unwrap();
    let base = git
        .commit(Some("refs/heads/main"), &sig, &sig, "base", &tree, &[])
        .unwrap();
    let parent = git.find_commit(base).unwrap();
    let topic = git
        .commit(Some("refs/heads/topic"), &sig, &sig, "topic", &tree, &[&parent])
        .unwrap();
    let repo = Repo::open(Some(&dir.path().join("r"))).unwrap();
    let store = Store::new(repo.state_dir());
    let (alice, bob) = (key(dir.path(), "alice_ed25519"), key(dir.path(), "bob_ed25519"));
    Fixture {
        _dir: dir,
        repo,
        store,
        topic: topic.to_string(),
        alice,
        bob,
    }
}

/// A fixture key copied where ssh-keygen accepts it (owner-only).
fn key(dir: &Path, name: &str) -> SigningKey {
    use std::os::unix::fs::PermissionsExt;
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/keys")
        .join(name);
    let dst = dir.join(name);
    std::fs::copy(&src, &dst).unwrap();
    std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o600)).unwrap();
    load(&dst, KeySource::Flag).unwrap()
}

/// What `apply` writes for a plan deleting `topic`, applied by alice.
fn image(f: &Fixture) -> BeforeImage {
    BeforeImage {
        plan_id: format!("sha256:{ID}"),
        plan_hash: "sha256:h".into(),
        repository: "r".into(),
        executor: "alice".into(),
        approved_by: vec!["bob".into()],
        created_at: NOW,
        retention_days: 30,
        remote: None,
        refs: vec![DeletedRef {
            refname: "refs/heads/topic".into(),
            oid: f.topic.clone(),
        }],
        backup_ref: Some(format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE)),
        backup_commit: None,
        config: vec![],
        tag_objects: vec![],
        command: None,
        consumed_on: None,
    }
}

fn executor<'a>(f: &'a Fixture, key: &'a SigningKey) -> Executor<'a> {
    Executor {
        repo: f.store.lock(&f.repo).unwrap(),
        store: &f.store,
        now: NOW,
        key: Some(key),
        principal: Some("alice".into()),
        unlogged: false,
        published: None,
    }
}

fn backup(f: &Fixture) -> Option<git2::Oid> {
    f.repo
        .ref_target(&format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE))
}

#[test]
fn apply_journals_each_step_in_order_and_deletes_with_a_backup() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    let receipt = ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
    assert_eq!(
        f.store.journal_steps(ID).unwrap(),
        [
            Step::BeforeImageWritten,
            Step::Consumed,
            Step::RefsCommitted,
            Step::ConfigRemoved,
            Step::Done
        ]
    );
    assert!(receipt.verified, "{:?}", receipt.mismatches);
    assert_eq!(f.repo.ref_target("refs/heads/topic"), None);
    assert!(backup(&f).is_some());
    assert!(f.store.is_consumed(ID));
    // What a replay prints is rebuilt from the signed receipt.
    let (replay, _) = recorded(&f.store, ID, &f.signers()).unwrap();
    assert_eq!(replay, receipt);
}

#[test]
fn a_refused_drift_check_changes_nothing_and_is_journaled_as_refused() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    let e = ex
        .apply(ID, image(&f), alice, &mut || {
            Err(Error::new(Kind::Drift, "moved"))
        })
        .unwrap_err();
    assert_eq!(e.kind, Kind::Drift);
    assert_eq!(f.store.journal_steps(ID).unwrap(), [Step::Refused]);
    assert_eq!(
        f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
        Some(f.topic.clone())
    );
    assert_eq!(backup(&f), None);
    assert!(!f.store.is_consumed(ID));
    assert_eq!(f.store.read_file(ID, "before-image.json").unwrap(), None);
}

/// The state a crash right after `steps` leaves: the before-image, the journal, and
/// (from `Consumed` on) alice's consumed marker.
fn crashed_after(ex: &Executor, f: &Fixture, steps: &[Step], alice: &SigningKey) {
    f.store.write_before_image(ID, &image(f)).unwrap();
    for step in steps {
        if *step == Step::Consumed {
            ex.consume(ID, alice).unwrap();
        }
        f.store.journal(ID, *step, NOW).unwrap();
    }
}

#[test]
fn recover_forgets_an_apply_interrupted_before_it_consumed_the_plan() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten], alice);
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert_eq!(done.len(), 1);
    assert!(
        describe(&done[0].outcome).contains("nothing had changed"),
        "{:?}",
        done
    );
    assert_eq!(
        f.store.journal_steps(ID).unwrap(),
        [Step::BeforeImageWritten, Step::RecoveredUnstarted]
    );
    assert_eq!(f.store.read_file(ID, "before-image.json").unwrap(), None);
    assert!(f.repo.ref_target("refs/heads/topic").is_some());
}

#[test]
fn recover_abandons_a_consumed_apply_whose_refs_were_never_committed() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert!(
        describe(&done[0].outcome).contains("nothing was deleted"),
        "{:?}",
        done
    );
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Aborted));
    assert!(f.repo.ref_target("refs/heads/topic").is_some());
    // The plan stays spent: it is never silently retried.
    assert!(f.store.is_consumed(ID));
    assert!(f.store.read_file(ID, "aborted.json").unwrap().is_some());
}

/// Delete topic and create the backup, as the committed transaction does.
fn commit_refs(ex: &Executor, f: &Fixture) {
    let commit = ex.write_backup_commit(&image(f)).unwrap();
    ex.repo
        .ref_transaction(&[
            RefOp::Delete {
                refname: "refs/heads/topic".into(),
                old: f.topic.clone(),
            },
            RefOp::Create {
                refname: format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE),
                oid: commit.oid,
            },
        ])
        .unwrap();
}

#[test]
fn recover_completes_an_apply_whose_refs_were_committed_before_it_said_so() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    commit_refs(&ex, &f);
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert!(
        describe(&done[0].outcome).contains("completed the apply"),
        "{:?}",
        done
    );
    assert_eq!(
        f.store.journal_steps(ID).unwrap()[2..],
        [Step::RefsCommitted, Step::ConfigRemoved, Step::Done]
    );
    assert!(f.store.read_file(ID, "receipt.json").unwrap().is_some());
}

#[test]
fn recover_finishes_after_refs_committed_only_with_the_key_that_consumed() {
    let f = fixture();
    let (alice, bob) = (&f.alice, &f.bob);
    let ex = executor(&f, alice);
    let steps = [Step::BeforeImageWritten, Step::Consumed, Step::RefsCommitted];
    crashed_after(&ex, &f, &steps, alice);
    commit_refs(&ex, &f);
    let e = ex.recover(Some(bob), &f.signers()).unwrap_err();
    assert_eq!(e.kind, Kind::NeedsRecovery);
    assert!(
        e.message.contains("only the key that applied it"),
        "{}",
        e.message
    );
    assert_eq!(f.store.journal_steps(ID).unwrap(), steps, "nothing journaled");
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert_eq!(done[0].outcome, RecoveryOutcome::Completed(Completed::Committed));
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Done));
    // Settled: a second recover has nothing to do.
    assert!(ex.recover(Some(alice), &f.signers()).unwrap().is_empty());
}

#[test]
fn recover_refuses_a_journal_that_claims_a_commit_the_refs_do_not_show() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(
        &ex,
        &f,
        &[Step::BeforeImageWritten, Step::Consumed, Step::RefsCommitted],
        alice,
    );
    let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
    needs_recovery_because(&e, "0 of 1 refs are deleted");
    assert!(f.repo.ref_target("refs/heads/topic").is_some());
}

#[test]
fn recover_never_runs_an_interrupted_command_again() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    let image = BeforeImage {
        refs: vec![],
        backup_ref: None,
        command: Some(vec!["rm".into(), "-r".into(), "build".into()]),
        ..image(&f)
    };
    f.store.write_before_image(ID, &image).unwrap();
    f.store.journal(ID, Step::BeforeImageWritten, NOW).unwrap();
    ex.consume(ID, alice).unwrap();
    for step in [Step::Consumed, Step::CommandStarted] {
        f.store.journal(ID, step, NOW).unwrap();
    }
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert!(
        describe(&done[0].outcome).contains("it was not run again"),
        "{:?}",
        done
    );
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Aborted));
}

#[test]
fn a_damaged_journal_stops_recover_before_anything_changes() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    let journal = f.store.plan_dir(ID).join("journal");
    let good = std::fs::read(&journal).unwrap();
    // A step guardctl never writes; then steps out of order (done before any commit).
    let unknown =
        format!("{{\"plan\":\"sha256:{ID}\",\"step\":\"teleported\",\"time\":\"2026-06-01T12:00:00Z\"}}\n");
    let early = String::from_utf8(good.clone())
        .unwrap()
        .replace("\"consumed\"", "\"done\"");
    for damaged in [[good.clone(), unknown.into_bytes()].concat(), early.into_bytes()] {
        std::fs::write(&journal, &damaged).unwrap();
        let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
        assert_eq!((e.kind, e.exit_code()), (Kind::NeedsRecovery, 16));
        assert!(e.message.contains("journal"), "{}", e.message);
        assert!(
            e.causes
                .iter()
                .any(|c| c.contains("teleported") || c.contains("cannot follow")),
            "{e:?}"
        );
        assert_eq!(
            std::fs::read(&journal).unwrap(),
            damaged,
            "the journal is left as found"
        );
        assert!(f.repo.ref_target("refs/heads/topic").is_some());
    }
}

#[test]
fn a_before_image_whose_consumption_record_was_changed_after_consuming_stops_recover() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    let consumed_on = |marker| {
        Some(crate::store::RemoteConsumption {
            remote: "origin".into(),
            url: "file:///nowhere.git".into(),
            marker,
        })
    };
    let image = BeforeImage {
        remote: Some("origin".into()),
        consumed_on: consumed_on(true),
        ..image(&f)
    };
    f.store.write_before_image(ID, &image).unwrap();
    f.store.journal(ID, Step::BeforeImageWritten, NOW).unwrap();
    ex.consume(ID, alice).unwrap();
    f.store.journal(ID, Step::Consumed, NOW).unwrap();
    // Flipped to "no marker", recover would decide by the refs, which anyone could have
    // deleted: the signed marker binds the image as written, so it stops before looking.
    let tampered = BeforeImage {
        consumed_on: consumed_on(false),
        ..image
    };
    f.store.write_before_image(ID, &tampered).unwrap();
    let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
    needs_recovery_because(&e, "the before-image of this plan is");
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Consumed));
}

/// `e` stops recovery (16) and says why in one of its causes.
fn needs_recovery_because(e: &Error, why: &str) {
    assert_eq!(e.kind, Kind::NeedsRecovery, "{e:?}");
    assert!(e.causes.iter().any(|c| c.contains(why)), "{e:?}");
}

#[test]
fn a_consumed_marker_signed_by_another_key_stops_recover() {
    let f = fixture();
    let (alice, bob) = (&f.alice, &f.bob);
    let ex = executor(&f, alice);
    // bob consumed a plan alice is the executor of.
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], bob);
    let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
    needs_recovery_because(&e, "not by the plan's executor alice");
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Consumed));
}

#[test]
fn rollback_journals_its_steps_and_restores_the_branch() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
    let image = f.store.before_image(ID).unwrap().unwrap();
    assert_eq!(ex.rollback(ID, &image).unwrap(), (1, 0));
    assert_eq!(
        f.store.journal_steps(ID).unwrap()[5..],
        [
            Step::RollbackStarted,
            Step::RollbackRefsRestored,
            Step::RolledBack
        ]
    );
    assert_eq!(
        f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
        Some(f.topic.clone())
    );
}

/// What `rollback` records before it restores: every ref of `image`, signed by `key`.
fn rollback_record(image: &BeforeImage, key: &SigningKey) -> Vec<u8> {
    let record = state::RollbackRecord {
        plan_id: image.plan_id.clone(),
        refs: image.refs.clone(),
        started_at: NOW,
    };
    signed_state(state::ROLLBACK_PAYLOAD_TYPE, &record, key, "rollback.json").unwrap()
}

#[test]
fn recover_after_rollback_started_decides_from_the_refs() {
    for restored_before_the_crash in [false, true] {
        let f = fixture();
        let alice = &f.alice;
        let ex = executor(&f, alice);
        ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
        let image = f.store.before_image(ID).unwrap().unwrap();
        f.store
            .write_file(ID, "rollback.json", &rollback_record(&image, alice))
            .unwrap();
        f.store.journal(ID, Step::RollbackStarted, NOW).unwrap();
        if restored_before_the_crash {
            ex.repo
                .ref_transaction(&[RefOp::Create {
                    refname: "refs/heads/topic".into(),
                    oid: f.topic.clone(),
                }])
                .unwrap();
        }
        let done = ex.recover(Some(alice), &f.signers()).unwrap();
        // Either way the rollback is finished: by the crashed run, or by recover now.
        let outcome = if restored_before_the_crash {
            "the branches had been restored: completed the rollback"
        } else {
            "the rollback was interrupted before it restored 1 branch: restored it; completed the rollback"
        };
        assert_eq!(describe(&done[0].outcome), outcome);
        assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::RolledBack));
        assert_eq!(
            f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
            Some(f.topic.clone())
        );
    }
}

/// A rollback interrupted before it restored a branch whose name someone has taken since
/// (another commit): recover cannot finish it and changes nothing (16, naming the branch).
#[test]
fn recover_leaves_an_interrupted_rollback_whose_name_was_taken_for_a_person() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    ex.apply(ID, image(&f), alice, &mut || Ok(())).unwrap();
    let image = f.store.before_image(ID).unwrap().unwrap();
    f.store
        .write_file(ID, "rollback.json", &rollback_record(&image, alice))
        .unwrap();
    f.store.journal(ID, Step::RollbackStarted, NOW).unwrap();
    let other = f.repo.ref_target("refs/heads/main").unwrap().to_string();
    assert_ne!(other, f.topic);
    ex.repo
        .ref_transaction(&[RefOp::Create {
            refname: "refs/heads/topic".into(),
            oid: other.clone(),
        }])
        .unwrap();
    let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
    assert_eq!(e.kind, Kind::NeedsRecovery, "{e:?}");
    assert!(e.message.contains("refs/heads/topic"), "{}", e.message);
    assert_eq!(
        f.store.journal_steps(ID).unwrap().last(),
        Some(&Step::RollbackStarted)
    );
    assert_eq!(
        f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
        Some(other)
    );
}

/// An abandonment record as `receipts/<id>` would hold it, signed by `signer`, claiming
/// `stage` for the consumption of `marker`.
fn abandonment_item(
    marker: &Consumed,
    stage: state::Stage,
    signer: &SigningKey,
) -> crate::store::consumption::RemoteItem {
    let record = state::Abandoned {
        plan_id: marker.plan_id.clone(),
        plan_hash: "sha256:h".into(),
        executor: "alice".into(),
        key: marker.key.clone(),
        consumed_at: marker.created_at,
        abandoned_at: NOW,
        stage,
        reason: "test".into(),
    };
    receipts_item(&record, signer)
}

/// `value` signed by `signer` as an abandonment record, as `receipts/<id>` would hold it.
fn receipts_item(
    value: &impl serde::Serialize,
    signer: &SigningKey,
) -> crate::store::consumption::RemoteItem {
    let bytes = signed_state(state::ABANDONED_PAYLOAD_TYPE, value, signer, ABANDONED).unwrap();
    crate::store::consumption::RemoteItem {
        refname: format!("refs/guardctl/receipts/{ID}"),
        bytes: Ok(bytes),
    }
}

#[test]
fn an_abandonment_record_is_believed_only_when_signed_by_the_key_that_consumed_the_plan() {
    let f = fixture();
    let marker = Consumed {
        plan_id: format!("sha256:{ID}"),
        before_image: "sha256:b".into(),
        key: crate::sign::sshsig::fingerprint(&f.alice.public),
        created_at: NOW,
        nonce: None,
        audit: None,
    };
    for stage in [state::Stage::BeforeCommand, state::Stage::CommandStarted] {
        let genuine = remote_abandoned(&abandonment_item(&marker, stage, &f.alice), &marker, "sha256:h")
            .unwrap()
            .unwrap();
        assert_eq!(genuine.stage, stage);
    }
    // Bob claims alice's apply never ran its command (10, "spent, nothing ran"), which
    // would hide that it may have partly run (16, "check by hand"): refused, naming the ref.
    let forged = abandonment_item(&marker, state::Stage::BeforeCommand, &f.bob);
    let e = remote_abandoned(&forged, &marker, "sha256:h").unwrap_err();
    assert_eq!(e.kind, Kind::NeedsRecovery);
    assert!(e.message.contains(&forged.refname), "{}", e.message);
    assert!(
        e.causes
            .iter()
            .any(|c| c.contains("not by") && c.contains(&marker.key)),
        "{:?}",
        e.causes
    );
    // A record without its stage is no record guardctl writes.
    let genuine = abandonment_item(&marker, state::Stage::BeforeCommand, &f.alice);
    let envelope: crate::plan::envelope::Envelope =
        serde_json::from_slice(genuine.bytes.as_ref().unwrap()).unwrap();
    let payload = dsse::verify(&envelope, state::ABANDONED_PAYLOAD_TYPE, APPLY_NAMESPACE)
        .unwrap()
        .payload;
    let mut value: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert!(value.as_object_mut().unwrap().remove("stage").is_some());
    let stageless = receipts_item(&value, &f.alice);
    let e = remote_abandoned(&stageless, &marker, "sha256:h").unwrap_err();
    assert_eq!(e.kind, Kind::NeedsRecovery);
}

/// The backup ref in place, as the first rename of git's commit makes it.
fn backup_made(ex: &Executor, f: &Fixture) {
    let commit = ex.write_backup_commit(&image(f)).unwrap();
    ex.repo
        .ref_transaction(&[RefOp::Create {
            refname: format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE),
            oid: commit.oid,
        }])
        .unwrap();
}

#[test]
fn recover_finishes_a_commit_git_was_killed_in_midway() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    backup_made(&ex, &f);
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert_eq!(
        done[0].outcome,
        RecoveryOutcome::Completed(Completed::CommitFinished { deleted: 1 })
    );
    assert_eq!(f.repo.ref_target("refs/heads/topic"), None);
    assert!(backup(&f).is_some());
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Done));
}

#[test]
fn recover_abandons_a_commit_that_deleted_nothing_once_a_branch_moved() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    backup_made(&ex, &f);
    // Someone moves topic (git no longer locks it): deleted, then made again at main.
    let main = f.repo.ref_target("refs/heads/main").unwrap().to_string();
    ex.repo
        .ref_transaction(&[RefOp::Delete {
            refname: "refs/heads/topic".into(),
            old: f.topic.clone(),
        }])
        .unwrap();
    ex.repo
        .ref_transaction(&[RefOp::Create {
            refname: "refs/heads/topic".into(),
            oid: main.clone(),
        }])
        .unwrap();
    let done = ex.recover(Some(alice), &f.signers()).unwrap();
    assert_eq!(
        done[0].outcome,
        RecoveryOutcome::Abandoned(crate::store::recovered::Abandoned::CommitAbandoned)
    );
    assert!(backup(&f).is_some(), "the backup it made stays until gc");
    assert_eq!(
        f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
        Some(main)
    );
    assert_eq!(f.store.journal_steps(ID).unwrap().last(), Some(&Step::Aborted));
}

#[test]
fn a_backup_ref_that_keeps_nothing_planned_is_left_for_a_person() {
    let f = fixture();
    let alice = &f.alice;
    let ex = executor(&f, alice);
    crashed_after(&ex, &f, &[Step::BeforeImageWritten, Step::Consumed], alice);
    let main = f.repo.ref_target("refs/heads/main").unwrap().to_string();
    ex.repo
        .ref_transaction(&[RefOp::Create {
            refname: format!("{}/{ID}", crate::plan::model::BACKUP_NAMESPACE),
            oid: main,
        }])
        .unwrap();
    let e = ex.recover(Some(alice), &f.signers()).unwrap_err();
    assert_eq!(e.kind, Kind::NeedsRecovery);
    assert!(
        e.message.contains("does not keep every planned branch"),
        "{}",
        e.message
    );
    assert_eq!(
        f.repo.ref_target("refs/heads/topic").map(|o| o.to_string()),
        Some(f.topic.clone())
    );
}
