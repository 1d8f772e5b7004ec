//! guardctl's own state files are untrusted input. Anyone who can write `.git/guardctl` could
//! craft a before-image, a journal or a consumed marker so that the *next* person to run
//! guardctl does damage with their own identity (`gc` deleting `main`, `recover` signing a
//! receipt for a plan never applied, a rollback writing `core.fsmonitor`). So every state file
//! that drives an action is parsed strictly and cross-checked here first:
//!
//! - a plan directory's name is a plan id (64 lowercase hex digits);
//! - every journal line is `{"plan", "step", "time"}` with the directory's plan id and a known
//!   step, and the steps follow the apply/rollback state machine ([`check_sequence`]);
//! - the before-image names the directory's plan, its backup ref is exactly
//!   `refs/guardctl/backup/<id>`, its refs are valid branch or tag names, and its saved config
//!   holds only `branch.<name>.<variable>` keys of branches it deleted ([`check_image`]);
//! - the consumed marker is a DSSE envelope signed by the applying key (namespace
//!   `guardctl-apply`) binding the plan id to the sha256 of the before-image's bytes
//!   ([`Consumed`]); `recover` signs a receipt only with that same key.
//!
//! Anything inconsistent is `needs_recovery` (exit 16) naming the file; nothing is changed.
//! Pure: no I/O here (the callers read the files).

use super::BeforeImage;
use crate::error::{Error, Kind};
use crate::text::safe;
use serde::{Deserialize, Serialize};
use std::path::Path;
use time::OffsetDateTime;

/// payloadType of the signed consumed marker.
pub const CONSUMED_PAYLOAD_TYPE: &str = "application/vnd.guardctl.consumed.v1+json";

/// Where guardctl keeps backups; fixed, never read from a plan or a state file.
pub const BACKUP_NAMESPACE: &str = "refs/guardctl/backup";

/// Every step an apply, rollback or recovery journals, in the journal as its kebab-case name.
/// `recover` matches on these exhaustively: a new step must say what recovery does after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    BeforeImageWritten,
    Consumed,
    BackupCreated,
    RefsCommitted,
    ConfigRemoved,
    Done,
    Refused,
    Aborted,
    RecoveredUnstarted,
    CommandStarted,
    CommandFinished,
    RollbackStarted,
    RollbackRefsRestored,
    RolledBack,
    RollbackAbandoned,
}

impl Step {
    pub const ALL: [Step; 15] = [
        Step::BeforeImageWritten,
        Step::Consumed,
        Step::BackupCreated,
        Step::RefsCommitted,
        Step::ConfigRemoved,
        Step::Done,
        Step::Refused,
        Step::Aborted,
        Step::RecoveredUnstarted,
        Step::CommandStarted,
        Step::CommandFinished,
        Step::RollbackStarted,
        Step::RollbackRefsRestored,
        Step::RolledBack,
        Step::RollbackAbandoned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::BeforeImageWritten => "before-image-written",
            Step::Consumed => "consumed",
            Step::BackupCreated => "backup-created",
            Step::RefsCommitted => "refs-committed",
            Step::ConfigRemoved => "config-removed",
            Step::Done => "done",
            Step::Refused => "refused",
            Step::Aborted => "aborted",
            Step::RecoveredUnstarted => "recovered-unstarted",
            Step::CommandStarted => "command-started",
            Step::CommandFinished => "command-finished",
            Step::RollbackStarted => "rollback-started",
            Step::RollbackRefsRestored => "rollback-refs-restored",
            Step::RolledBack => "rolled-back",
            Step::RollbackAbandoned => "rollback-abandoned",
        }
    }

    /// The step a journal line names; `None` for a name guardctl never writes.
    pub fn parse(name: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Which operations journal it: command steps belong to exec plans, ref steps to plans
    /// that delete refs, the rest to both.
    pub fn belongs_to(self) -> StepOf {
        match self {
            Step::CommandStarted | Step::CommandFinished => StepOf::Command,
            Step::BackupCreated
            | Step::RefsCommitted
            | Step::RollbackStarted
            | Step::RollbackRefsRestored
            | Step::RolledBack
            | Step::RollbackAbandoned => StepOf::Refs,
            Step::BeforeImageWritten
            | Step::Consumed
            | Step::ConfigRemoved
            | Step::Done
            | Step::Refused
            | Step::Aborted
            | Step::RecoveredUnstarted => StepOf::Any,
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of plan journals a step (see [`Step::belongs_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOf {
    Command,
    Refs,
    Any,
}

/// The signed statement "this key consumed plan `plan_id`, whose before-image has these
/// bytes", written before any ref changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consumed {
    pub plan_id: String,
    /// `sha256:<hex>` of `before-image.json` exactly as written.
    pub before_image: String,
    /// Fingerprint of the key that applied (and signed this).
    pub key: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// 32 random hex digits: two applies of one plan never write the same marker, even with
    /// one key at one instant (the same bytes would make the same commit, and a create-only
    /// push of what a ref already holds succeeds: `refs/guardctl/consumed/<id>` must tell
    /// the applies apart). Absent in markers written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// Where the apply stood in the applying clone's audit log when it consumed the plan
    /// (the receipt's entry comes at or after it). The marker reaches the remote with the
    /// deletions, before the receipt: whether the receipt follows is the executor's choice,
    /// and `log --verify` finds an apply erased from that log by this
    /// (`evidence::unlogged_published`). Absent in markers written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::plan::approval::AuditLink>,
}

/// payloadType of the signed record of what a rollback restores (`rollback.json`).
pub const ROLLBACK_PAYLOAD_TYPE: &str = "application/vnd.guardctl.rollback.v1+json";

/// The signed statement "I, allowed to apply, am rolling plan `plan_id` back: these refs are
/// to be restored", written by `rollback` before its restore. A journal line saying a
/// rollback started is not signed: `recover` finishes only a rollback whose record verifies
/// and names a key allowed to apply (a forged `rollback-started` is abandoned, restoring
/// nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackRecord {
    pub plan_id: String,
    pub refs: Vec<crate::plan::approval::DeletedRef>,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: time::OffsetDateTime,
}

/// payloadType of the signed record of an exec apply `recover` abandoned after its consumed
/// marker landed on the plan's remote.
pub const ABANDONED_PAYLOAD_TYPE: &str = "application/vnd.guardctl.abandoned.v1+json";

/// The signed statement "the apply that consumed plan `plan_id` with this key was abandoned
/// by `recover`", and at which [`Stage`]: before its command ran (the command was not run), or
/// while it ran (it may have partly run). Written next to the consumed marker when that marker
/// had landed on the plan's remote, and published at `refs/guardctl/receipts/<id>` in place of
/// a receipt, so every other clone learns the outcome instead of waiting for a receipt that
/// never comes (docs/remote.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Abandoned {
    pub plan_id: String,
    pub plan_hash: String,
    /// Who applied (the plan's executor), and the fingerprint of the key that consumed the
    /// plan and signs this.
    pub executor: String,
    pub key: String,
    /// When the plan was consumed (the marker's time) and when the apply was abandoned.
    #[serde(with = "time::serde::rfc3339")]
    pub consumed_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub abandoned_at: OffsetDateTime,
    /// How far the abandoned apply had got.
    pub stage: Stage,
    /// Why, in words.
    pub reason: String,
}

/// How far an abandoned exec apply had got: what another clone is told about its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Interrupted before its command started: the command never ran.
    BeforeCommand,
    /// Interrupted while its command ran: it may have partly run (or to the end).
    CommandStarted,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::BeforeCommand => "before_command",
            Stage::CommandStarted => "command_started",
        }
    }
}

/// One journal line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalLine {
    pub plan: String,
    pub step: String,
    pub time: String,
}

/// The failure for an inconsistent state file: exit 16, naming it; nothing was changed.
pub fn inconsistent(file: &Path, why: impl std::fmt::Display) -> Error {
    Error::new(
        Kind::NeedsRecovery,
        format!(
            "guardctl's state file {} is inconsistent; nothing was changed",
            file.display()
        ),
    )
    .caused_by(safe(&why.to_string()))
    .with_hint(
        "it was damaged or written by someone else: inspect it (and `guardctl log`); move that plan's directory out of .git/guardctl/plans once you know what happened",
    )
}

/// Whether `s` is the hex of a plan id (what a plan's state directory is named).
pub fn is_plan_id_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Parse a journal strictly: one JSON object per line, for this plan, with a known step and
/// an RFC 3339 time; the steps must follow [`check_sequence`].
pub fn parse_journal(bytes: &[u8], id_hex: &str) -> Result<Vec<Step>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the journal is not UTF-8".to_string())?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the journal's last line is incomplete".into());
    }
    let plan = format!("sha256:{id_hex}");
    let mut steps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l: JournalLine =
            serde_json::from_str(line).map_err(|e| format!("line {}: not a journal entry ({e})", i + 1))?;
        if l.plan != plan {
            return Err(format!("line {}: it journals plan {}", i + 1, l.plan));
        }
        let Some(step) = Step::parse(&l.step) else {
            return Err(format!("line {}: unknown step `{}`", i + 1, safe(&l.step)));
        };
        OffsetDateTime::parse(&l.time, &time::format_description::well_known::Rfc3339)
            .map_err(|_| format!("line {}: bad time `{}`", i + 1, l.time))?;
        steps.push(step);
    }
    check_sequence(&steps)?;
    Ok(steps)
}

/// Where a journal stands after its steps: the places of the apply/rollback state machine
/// ([`position`]). `execute::journal` has one type per place, so that the code writing a
/// journal can only append a step that may follow where it stands; reading one back (an
/// untrusted file) checks the same order here, at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    Idle,
    Written,
    Consumed,
    BackupCreated,
    CommandStarted,
    CommandFinished,
    Committed,
    ConfigRemoved,
    Settled,
    RollingBack,
    RefsRestored,
}

/// The steps must follow the order `execute` writes them in (recovery included): nothing
/// is committed before the plan is consumed, nothing follows an abort but a rollback, and so on.
pub fn check_sequence(steps: &[Step]) -> Result<(), String> {
    position(steps).map(|_| ())
}

/// Where `steps` leave a journal, when they follow [`check_sequence`]'s order.
pub fn position(steps: &[Step]) -> Result<Position, String> {
    use Position::*;
    let mut s = Idle;
    for (i, step) in steps.iter().enumerate() {
        s = match (s, *step) {
            (Idle, Step::BeforeImageWritten) => Written,
            (Idle | Written, Step::Refused) | (Written, Step::RecoveredUnstarted) => Idle,
            (Written, Step::Consumed) => Consumed,
            (Consumed, Step::BackupCreated) => BackupCreated,
            (Consumed, Step::CommandStarted) => CommandStarted,
            (CommandStarted, Step::CommandFinished) => CommandFinished,
            (Written | Consumed | BackupCreated, Step::RefsCommitted) => Committed,
            (Written | Consumed | BackupCreated | CommandStarted, Step::Aborted) => Settled,
            (Committed | CommandFinished | ConfigRemoved, Step::ConfigRemoved) => ConfigRemoved,
            (ConfigRemoved, Step::Done) => Settled,
            (Settled, Step::RollbackStarted) => RollingBack,
            (RollingBack, Step::RollbackRefsRestored) => RefsRestored,
            (RollingBack, Step::RollbackAbandoned) | (RefsRestored, Step::RolledBack) => Settled,
            (state, step) => {
                return Err(format!("line {}: step `{step}` cannot follow {state:?}", i + 1));
            }
        };
    }
    Ok(s)
}

/// A before-image must describe the plan of its directory and only what guardctl itself
/// would have written for it.
pub fn check_image(image: &BeforeImage, id_hex: &str) -> Result<(), String> {
    let plan_id = format!("sha256:{id_hex}");
    if image.plan_id != plan_id {
        return Err(format!("it names plan {}, not {plan_id}", image.plan_id));
    }
    let backup = format!("{BACKUP_NAMESPACE}/{id_hex}");
    match (&image.backup_ref, image.refs.is_empty()) {
        (Some(r), false) if *r == backup => {}
        (None, true) => {}
        (Some(r), _) => return Err(format!("its backup ref is {r}, not {backup}")),
        (None, false) => return Err("it deletes refs without a backup ref".into()),
    }
    if let Some(c) = &image.backup_commit
        && !is_oid(c)
    {
        return Err(format!("its backup commit `{c}` is not an object id"));
    }
    let mut seen = std::collections::HashSet::new();
    for r in &image.refs {
        let kind_ok = r.refname.starts_with("refs/heads/") || r.refname.starts_with("refs/tags/");
        if !kind_ok || !crate::repo::is_valid_refname(&r.refname) {
            return Err(format!("`{}` is not a branch or tag guardctl deletes", r.refname));
        }
        if !is_oid(&r.oid) {
            return Err(format!("the object id of {} is `{}`", r.refname, r.oid));
        }
        if !seen.insert(r.refname.as_str()) {
            return Err(format!("{} is listed twice", r.refname));
        }
    }
    for t in &image.tag_objects {
        if !image
            .refs
            .iter()
            .any(|r| r.oid == t.oid && r.refname.starts_with("refs/tags/"))
            || !is_oid(&t.commit)
        {
            return Err(format!("saved tag object {} belongs to no deleted tag", t.oid));
        }
    }
    if image.command.is_some() && !(image.refs.is_empty() && image.config.is_empty()) {
        return Err("an exec plan's before-image lists refs or config".into());
    }
    if image.remote.is_some() && !image.config.is_empty() {
        return Err("a remote's before-image holds local config".into());
    }
    match (&image.consumed_on, &image.remote, &image.command) {
        (None, _, _) => {}
        (Some(c), Some(remote), None) if c.remote == *remote => {}
        (Some(_), None, Some(_)) => {}
        (Some(c), _, _) => {
            return Err(format!(
                "it says the plan was consumed on remote `{}`, which is not this plan's",
                c.remote
            ));
        }
    }
    for (name, entries) in &image.config {
        if !seen.contains(format!("refs/heads/{name}").as_str()) {
            return Err(format!(
                "it saves config of branch `{name}`, which it did not delete"
            ));
        }
        for (key, _) in entries {
            if !is_branch_key(key, name) {
                return Err(format!(
                    "it saves config key `{key}`: only branch.{name}.<variable> may be restored"
                ));
            }
        }
    }
    Ok(())
}

/// `branch.<name>.<variable>`, the variable a plain config variable name.
pub fn is_branch_key(key: &str, branch: &str) -> bool {
    key.strip_prefix("branch.")
        .and_then(|k| k.strip_prefix(branch))
        .and_then(|k| k.strip_prefix('.'))
        .is_some_and(|var| {
            var.starts_with(|c: char| c.is_ascii_alphabetic())
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::approval::DeletedRef;

    const ID: &str = "a7262397b490c23eb1be94eeed151a0a8138abd2271934356445be590b777f14";

    fn steps(s: &[&str]) -> Vec<Step> {
        s.iter()
            .map(|s| Step::parse(s).unwrap_or_else(|| panic!("unknown step {s}")))
            .collect()
    }

    fn image() -> BeforeImage {
        BeforeImage {
            plan_id: format!("sha256:{ID}"),
            plan_hash: "sha256:00".into(),
            repository: "guardctl-repo:x".into(),
            executor: "alice@example.com".into(),
            approved_by: vec!["bob@example.com".into()],
            created_at: OffsetDateTime::UNIX_EPOCH,
            retention_days: 30,
            remote: None,
            refs: vec![DeletedRef {
                refname: "refs/heads/feature/x".into(),
                oid: "1".repeat(40),
            }],
            backup_ref: Some(format!("refs/guardctl/backup/{ID}")),
            backup_commit: Some("2".repeat(40)),
            config: vec![(
                "feature/x".into(),
                vec![("branch.feature/x.remote".into(), "origin".into())],
            )],
            tag_objects: vec![],
            command: None,
            consumed_on: None,
        }
    }

    #[test]
    fn the_sequences_execute_writes_are_accepted() {
        for ok in [
            &[
                "before-image-written",
                "consumed",
                "refs-committed",
                "config-removed",
                "done",
            ][..],
            &[
                "refused",
                "before-image-written",
                "refused",
                "before-image-written",
                "consumed",
                "aborted",
            ],
            &[
                "before-image-written",
                "consumed",
                "backup-created",
                "refs-committed",
                "config-removed",
                "config-removed",
                "done",
            ],
            &[
                "before-image-written",
                "consumed",
                "command-started",
                "command-finished",
                "config-removed",
                "done",
            ],
            &[
                "before-image-written",
                "refs-committed",
                "config-removed",
                "done",
                "rollback-started",
                "rollback-refs-restored",
                "rolled-back",
                "rollback-started",
                "rollback-abandoned",
            ],
            &["before-image-written", "recovered-unstarted"],
            &["before-image-written", "consumed", "command-started", "aborted"],
        ] {
            assert_eq!(check_sequence(&steps(ok)), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn a_commit_without_consumption_or_after_an_abort_is_refused() {
        for bad in [
            &["refs-committed"][..],
            &["before-image-written", "consumed", "aborted", "refs-committed"],
            &["consumed"],
            &["before-image-written", "consumed", "rollback-refs-restored"],
            &["rollback-started"],
            &[
                "before-image-written",
                "consumed",
                "command-started",
                "refs-committed",
            ],
        ] {
            assert!(check_sequence(&steps(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_step_round_trips_through_its_journal_name() {
        for step in Step::ALL {
            assert_eq!(Step::parse(step.as_str()), Some(step));
        }
        assert_eq!(Step::parse("teleported"), None);
    }

    #[test]
    fn journal_lines_are_strict_and_bound_to_the_plan() {
        let line = |plan: &str, step: &str| {
            format!("{{\"plan\":\"sha256:{plan}\",\"step\":\"{step}\",\"time\":\"2026-06-01T12:00:00Z\"}}\n")
        };
        let good = line(ID, "before-image-written") + &line(ID, "consumed");
        assert_eq!(
            parse_journal(good.as_bytes(), ID).unwrap(),
            [Step::BeforeImageWritten, Step::Consumed]
        );
        let other = "b".repeat(64);
        assert!(parse_journal(line(&other, "before-image-written").as_bytes(), ID).is_err());
        assert!(parse_journal(line(ID, "teleported").as_bytes(), ID).is_err());
        let extra = "{\"plan\":\"x\",\"step\":\"done\",\"time\":\"t\",\"more\":1}\n";
        assert!(parse_journal(extra.as_bytes(), ID).is_err());
        let torn = line(ID, "before-image-written");
        assert!(parse_journal(&torn.as_bytes()[..torn.len() - 3], ID).is_err());
    }

    #[test]
    fn an_image_guardctl_would_write_passes() {
        assert_eq!(check_image(&image(), ID), Ok(()));
    }

    #[test]
    fn a_crafted_image_is_refused() {
        let mut main_as_backup = image();
        main_as_backup.backup_ref = Some("refs/heads/main".into());
        let mut other_plan = image();
        other_plan.plan_id = format!("sha256:{}", "c".repeat(64));
        let mut fsmonitor = image();
        fsmonitor.config[0]
            .1
            .push(("core.fsmonitor".into(), "touch /tmp/pwned".into()));
        let mut sneaky = image();
        sneaky.config[0].1 = vec![("branch.feature/x.remote.x".into(), "o".into())];
        let mut undeleted = image();
        undeleted.config[0].0 = "main".into();
        undeleted.config[0].1 = vec![("branch.main.remote".into(), "evil".into())];
        let mut bad_ref = image();
        bad_ref.refs[0].refname = "refs/heads/../../config".into();
        let mut outside = image();
        outside.refs[0].refname = "refs/remotes/origin/main".into();
        // A local plan, or a remote's plan said to be consumed on another remote.
        let consumed_on = |remote: &str| {
            Some(crate::store::RemoteConsumption {
                remote: remote.into(),
                url: "file:///elsewhere".into(),
                marker: false,
            })
        };
        let mut local_consumed = image();
        local_consumed.consumed_on = consumed_on("origin");
        let mut remote_elsewhere = image();
        remote_elsewhere.config.clear();
        remote_elsewhere.remote = Some("origin".into());
        remote_elsewhere.consumed_on = consumed_on("mirror");
        let mut remote_ok = remote_elsewhere.clone();
        remote_ok.consumed_on = consumed_on("origin");
        assert_eq!(check_image(&remote_ok, ID), Ok(()));
        for (what, bad) in [
            ("a local plan consumed on a remote", local_consumed),
            ("consumed on another remote", remote_elsewhere),
            ("main as backup", main_as_backup),
            ("other plan", other_plan),
            ("fsmonitor", fsmonitor),
            ("nested key", sneaky),
            ("config of a branch not deleted", undeleted),
            ("bad ref", bad_ref),
            ("ref outside heads and tags", outside),
        ] {
            assert!(check_image(&bad, ID).is_err(), "{what}");
        }
    }

    #[test]
    fn branch_keys_are_exactly_branch_name_variable() {
        assert!(is_branch_key("branch.a.b.remote", "a.b"));
        assert!(is_branch_key("branch.x.pushRemote", "x"));
        assert!(!is_branch_key("branch.x.remote", "a"));
        assert!(!is_branch_key("core.fsmonitor", "x"));
        assert!(!is_branch_key("branch.x.", "x"));
        assert!(!is_branch_key("branch.x.a=b", "x"));
    }

    #[test]
    fn plan_directories_are_named_by_plan_id() {
        assert!(is_plan_id_hex(ID));
        assert!(!is_plan_id_hex("00ff"));
        assert!(!is_plan_id_hex(&ID.to_uppercase()));
    }
}
