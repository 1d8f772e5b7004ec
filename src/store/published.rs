//! Plans, approvals, rejections and consumed markers published on a git remote under
//! `refs/guardctl/` (docs/remote.md): the layout, publishing (create-only, atomic) and
//! reading back, where everything is untrusted input.
//!
//! Layout (`<id>`: the plan id's 64 hex digits; `<fpr>`: the hex SHA-256 of the signer's
//! public key blob, the digest of its `SHA256:` fingerprint):
//!
//! | ref | file in its one-file commit |
//! |---|---|
//! | `refs/guardctl/plans/<id>` | `plan.json`: the plan file as signed, without approvals |
//! | `refs/guardctl/approvals/<id>/<fpr>` | `approval.json`: one signed approval |
//! | `refs/guardctl/rejections/<id>/<fpr>` | `rejection.json`: one signed rejection |
//! | `refs/guardctl/withdrawals/<id>/<fpr>` | `withdrawal.json`: one signed withdrawal |
//!
//! A decision whose `<fpr>` name someone else took first (with anything but that key's own
//! decision of that kind for that plan) is published under `<fpr>-<digest>` instead, where
//! `<digest>` is the first 16 hex digits of the SHA-256 of its file: a name nobody can take
//! before the envelope exists ([`publish_decision`]).
//! | `refs/guardctl/consumed/<id>` | `consumed.json`: the signed consumed marker (who applied it, when) |
//! | `refs/guardctl/receipts/<id>` | `receipt.json`: the signed receipt (what happened), after the apply |
//!
//! Writing: [`publish`] sends items (create-only) and any other ref updates (each guarded by
//! its own expected value, e.g. a remote branch deletion leased on its tip) in **one atomic
//! push**: all land or none does. Reading: [`Snapshot::fetch`] lists, then fetches, the refs
//! of one plan or all of them; [`Snapshot::consumed`] reads a plan's consumed marker.
//!
//! What this module checks when reading: a plan is read exactly as a plan file
//! (`planfile`: size cap, strict parse, signature, validation) and must have the id its ref
//! names; an envelope must verify, be about the plan its ref names, carry the decision its
//! ref kind names, and be signed by the key its ref names. Anything else is left out with a
//! warning, except under `rejections/<id>/`: there, anything that is not a rejection this
//! module can verify is *blocking* ([`Decisions::blocking`]), and `verify` and `apply`
//! refuse the plan while it is there (fail closed: junk could be a veto someone damaged or
//! replaced). Who a key speaks for, and whether an approval counts, is the gate's business,
//! exactly as for an envelope in a plan file.

use crate::error::{Error, Kind, Result};
use crate::plan::approval::{APPROVAL_NAMESPACE, Approval, Decision};
use crate::plan::envelope::{APPROVAL_PAYLOAD_TYPE, Envelope, MAX_FILE_BYTES, PlanFile};
use crate::planfile::Loaded;
use crate::repo::Oid;
use crate::repo::backups::BACKUPS_REF;
use crate::repo::publish::{self, RefOutcome, RefUpdate, Scratch};
use crate::sign::dsse;
use crate::store::ledger::{LEDGER_REF, Ledger};
use crate::text::safe;
use std::path::Path;

/// Where everything guardctl publishes lives.
pub const ROOT: &str = "refs/guardctl/";
/// Envelopes larger than this are not decisions guardctl wrote.
const MAX_ENVELOPE_BYTES: u64 = 1024 * 1024;
/// A consumed marker is a small signed envelope: the most of `consumed.json` any reader
/// (`Snapshot::consumed`, `consumption::read`) takes.
pub const MAX_MARKER_BYTES: u64 = 64 * 1024;

/// The kinds of published items, each with its ref directory and its one file's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Plan,
    Approval,
    Rejection,
    Withdrawal,
    Consumed,
    Receipt,
}

impl ItemKind {
    pub fn dir(self) -> &'static str {
        match self {
            ItemKind::Plan => "plans",
            ItemKind::Approval => "approvals",
            ItemKind::Rejection => "rejections",
            ItemKind::Withdrawal => "withdrawals",
            ItemKind::Consumed => "consumed",
            ItemKind::Receipt => "receipts",
        }
    }

    pub fn file(self) -> &'static str {
        match self {
            ItemKind::Plan => "plan.json",
            ItemKind::Approval => "approval.json",
            ItemKind::Rejection => "rejection.json",
            ItemKind::Withdrawal => "withdrawal.json",
            ItemKind::Consumed => "consumed.json",
            ItemKind::Receipt => "receipt.json",
        }
    }

    /// The decision kind an envelope under this directory must carry.
    pub fn of_decision(d: Decision) -> ItemKind {
        match d {
            Decision::Approve => ItemKind::Approval,
            Decision::Reject => ItemKind::Rejection,
            Decision::Withdraw => ItemKind::Withdrawal,
        }
    }

    const DECISIONS: [ItemKind; 3] = [ItemKind::Approval, ItemKind::Rejection, ItemKind::Withdrawal];
}

/// `refs/guardctl/plans/<id>`.
pub fn plan_ref(id_hex: &str) -> String {
    format!("{ROOT}plans/{id_hex}")
}

/// `refs/guardctl/consumed/<id>`.
pub fn consumed_ref(id_hex: &str) -> String {
    format!("{ROOT}consumed/{id_hex}")
}

/// `refs/guardctl/receipts/<id>`.
pub fn receipt_ref(id_hex: &str) -> String {
    format!("{ROOT}receipts/{id_hex}")
}

/// `refs/guardctl/{approvals,rejections,withdrawals}/<id>/<fpr>`.
pub fn decision_ref(kind: ItemKind, id_hex: &str, fpr_hex: &str) -> String {
    format!("{ROOT}{}/{id_hex}/{fpr_hex}", kind.dir())
}

/// `refs/guardctl/{approvals,rejections,withdrawals}/<id>/<fpr>-<digest>`: where a decision
/// goes when its `<fpr>` name was taken by something else; `<digest>` is the first 16 hex
/// digits of the SHA-256 of `bytes`, the decision's file.
pub fn fallback_decision_ref(kind: ItemKind, id_hex: &str, fpr_hex: &str, bytes: &[u8]) -> String {
    let digest = crate::plan::envelope::sha256_id(bytes);
    let digest = digest.trim_start_matches("sha256:");
    format!(
        "{}-{}",
        decision_ref(kind, id_hex, fpr_hex),
        &digest[..DIGEST_HEX]
    )
}

/// Hex digits of the file's SHA-256 in a fallback decision name (64 bits: nobody can take
/// the name of an envelope before it exists, and none collides by chance).
const DIGEST_HEX: usize = 16;

/// The key fingerprint a decision ref's last component names: `<fpr>` or `<fpr>-<digest>`.
fn fpr_of_name(name: &str) -> Option<&str> {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let (fpr, digest) = match name.split_once('-') {
        Some((f, d)) => (f, Some(d)),
        None => (name, None),
    };
    (hex(fpr, 64) && digest.is_none_or(|d| hex(d, DIGEST_HEX))).then_some(fpr)
}

/// The ref-safe fingerprint of a key: hex of the SHA-256 of its public key blob (what the
/// `SHA256:` base64 form encodes, which has `/` and `+` in it).
pub fn key_hex(key: &ssh_key::PublicKey) -> String {
    crate::plan::envelope::hex(key.fingerprint(ssh_key::HashAlg::Sha256).as_bytes())
}

/// A plan id as given (`sha256:<hex>` or hex) as its 64 hex digits, if it is one.
pub fn id_hex_of(arg: &str) -> Option<String> {
    let hex = arg.strip_prefix("sha256:").unwrap_or(arg).to_ascii_lowercase();
    crate::store::state::is_plan_id_hex(&hex).then_some(hex)
}

/// The remote published items go to and come from, resolved to its one URL.
#[derive(Debug, Clone)]
pub struct Remote {
    pub name: String,
    pub url: String,
    pub transport: Vec<(String, String)>,
}

impl Remote {
    fn describe(&self) -> String {
        format!("remote `{}` ({})", safe(&self.name), safe(&self.url))
    }
}

/// One item to publish: its ref and the bytes of its one file.
#[derive(Clone)]
pub struct Item {
    pub kind: ItemKind,
    pub refname: String,
    pub bytes: Vec<u8>,
}

impl Item {
    /// The plan `id_hex` as signed, without approvals (pretty JSON, as `plan` writes a file).
    pub fn plan(id_hex: &str, file: &PlanFile) -> Result<Item> {
        let file = PlanFile {
            approvals: Vec::new(),
            ..file.clone()
        };
        Ok(Item {
            kind: ItemKind::Plan,
            refname: plan_ref(id_hex),
            bytes: json_file(&file)?,
        })
    }
}

/// The kind of a signed decision and the ref-safe fingerprint of the key that signed it.
/// The rank of a source among items of one name: the ledger's first.
fn source_rank(s: &Source) -> u8 {
    match s {
        Source::Ledger { .. } => 0,
        Source::Ref(_) => 1,
    }
}

fn decision_of(env: &Envelope) -> Result<(ItemKind, String)> {
    let v = dsse::verify(env, APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE)
        .map_err(|e| Error::internal("cannot read back the envelope just signed").caused_by(e))?;
    let a: Approval = serde_json::from_slice(&v.payload)
        .map_err(|e| Error::internal("cannot read back the envelope just signed").caused_by(e))?;
    Ok((ItemKind::of_decision(a.decision), key_hex(&v.signer)))
}

fn json_file(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::internal("cannot serialise JSON").caused_by(e))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// What a publication did: the refs created now and those that already held these bytes.
#[derive(Debug, Default)]
pub struct Published {
    pub created: Vec<String>,
    pub already: Vec<String>,
}

/// Publish `items` and `extra` updates in one atomic push: each item create-only (a ref that
/// exists with other content refuses the whole push: `policy`, 14), `extra` guarded by their
/// own expectations. A remote or hook that refuses a ref is `policy` too, naming the ref, the
/// remote's message and the file fallback. Nothing is half-published.
pub fn publish(remote: &Remote, items: &[Item], extra: &[RefUpdate]) -> Result<Published> {
    publish_on(remote, items, extra, None)
}

/// [`publish`], the first attempt built on `known`, the run's snapshot of `remote` (see
/// [`Snapshot::prepare`]).
pub fn publish_on(
    remote: &Remote,
    items: &[Item],
    extra: &[RefUpdate],
    known: Option<&Snapshot>,
) -> Result<Published> {
    let report = push(remote, items, extra, known)?;
    outcome(remote, items, &report)
}

/// Where a decision was published (its ref) and what the push did.
#[derive(Debug)]
pub struct PublishedDecision {
    pub refname: String,
    pub published: Published,
    /// The decision's own name, when someone else had taken it first (with anything but this
    /// key's own decision of this kind for this plan): the decision went to `refname`, its
    /// fallback name, instead.
    pub taken: Option<String>,
    /// The decision's own name held this key's own decision of this kind only as a ref from
    /// before the ledger (which anyone who can push can delete): this one went onto the
    /// ledger, at `refname`, its fallback name.
    pub before_ledger: Option<String>,
}

/// Publish a signed decision of plan `id_hex` (with `plan` first, when the remote does not
/// have the plan yet) in one atomic push, create-only, under `<kind>/<id>/<fpr>`. When that
/// name is taken by this key's own earlier decision of this kind for this plan, it stands:
/// `policy` (14), as for any published item. When it is taken by anything else (anyone who
/// can push can create it first, to silence this key's veto), the decision is published
/// under its fallback name `<fpr>-<digest>` ([`fallback_decision_ref`]), which nobody can
/// take before the envelope exists; readers read both names. `known`: the run's snapshot
/// of `remote`, which the first attempt builds on (see [`Snapshot::prepare`]).
pub fn publish_decision(
    remote: &Remote,
    id_hex: &str,
    env: &Envelope,
    plan: Option<Item>,
    known: Option<&Snapshot>,
) -> Result<PublishedDecision> {
    let (kind, fpr) = decision_of(env)?;
    let bytes = json_file(env)?;
    let primary = decision_ref(kind, id_hex, &fpr);
    let mut items: Vec<Item> = plan.into_iter().collect();
    items.push(Item {
        kind,
        refname: primary.clone(),
        bytes: bytes.clone(),
    });
    let report = push(remote, &items, &[], known)?;
    let taken = !report.ok && report.outcome(&primary) == Some(&RefOutcome::Stale);
    if !taken {
        return Ok(PublishedDecision {
            published: outcome(remote, &items, &report)?,
            refname: primary,
            taken: None,
            before_ledger: None,
        });
    }
    // What holds the name: this key's own decision on the ledger stands as it is; anything
    // else does not keep this one off the ledger. Its own decision only as a ref from before
    // the ledger does not either: that ref can be deleted by anyone who can push, and
    // publishing again is how a veto gets onto the ledger (docs/remote.md, "Before the
    // ledger").
    let there = Snapshot::fetch(remote, Scope::Plan(id_hex.to_string()))?;
    let (mut on_ledger, mut before) = (false, false);
    for source in there.exactly(&primary)? {
        if there.decision(kind, id_hex, &fpr, &primary, &source).is_ok() {
            match source {
                Source::Ledger { .. } => on_ledger = true,
                Source::Ref(_) => before = true,
            }
        }
    }
    if on_ledger {
        outcome(remote, &items, &report)?;
        return Err(Error::internal("git refused the push but reported no refusal"));
    }
    let fallback = fallback_decision_ref(kind, id_hex, &fpr, &bytes);
    if let Some(last) = items.last_mut() {
        last.refname = fallback.clone();
    }
    let report = push(remote, &items, &[], None)?;
    let (taken, before_ledger) = match before {
        true => (None, Some(primary)),
        false => (Some(primary), None),
    };
    Ok(PublishedDecision {
        published: outcome(remote, &items, &report)?,
        refname: fallback,
        taken,
        before_ledger,
    })
}

/// How many times a write that lost the race for the ledger's tip to an unrelated write is
/// built again on the new tip before it gives up.
const LEDGER_ATTEMPTS: u32 = 40;

/// What the remote's ledger (and, from before it, its refs) holds at the names of `items`,
/// and a commit adding those it does not hold yet, built in a scratch repository on the
/// ledger's current tip.
pub struct Prepared {
    pub scratch: std::rc::Rc<Scratch>,
    /// Per item: `Done` (to be added by `update`), `AlreadyThere` (these very bytes are
    /// published) or `Stale` (that name holds something else: a published item is never
    /// replaced).
    pub refs: Vec<(String, RefOutcome)>,
    /// The fast-forward of the ledger adding the `Done` items, leased on the tip it was built
    /// on (`expect: None`: the remote has no ledger yet); `None` when there is nothing to add.
    pub update: Option<RefUpdate>,
    /// The ledger as it is once `update` lands (see [`Snapshot::landed`]).
    pub after: Option<Ledger>,
    /// The tip of the remote's backups branch as listed with the ledger (`repo::backups`;
    /// `None`: there was none).
    pub backups: Option<Oid>,
}

/// Fetch the remote's ledger and build the commit that publishes `items` (see [`Prepared`]).
pub fn prepare(remote: &Remote, items: &[Item]) -> Result<Prepared> {
    prepare_holding(remote, items, None)
}

/// [`prepare`] on a ledger that must still hold `seen` (the tip this run's snapshot saw): a
/// retry after a lost race must not build on a ledger rewound while the command ran, where
/// the snapshot's check against the tip this clone saw before no longer applies (16).
pub fn prepare_holding(remote: &Remote, items: &[Item], seen: Option<Oid>) -> Result<Prepared> {
    let scratch = Scratch::new(remote.transport.clone())?;
    let names: Vec<String> = items.iter().map(|i| i.refname.clone()).collect();
    let (listed, ledger) = Ledger::list_and_fetch(&scratch, &remote.url, &names)?;
    if let Some(seen) = seen {
        super::ledger::refuse_rewound(&scratch, &ledger, seen, &remote.url)?;
    }
    let before = |name: &str| listed.iter().find(|(r, _)| r == name).map(|(_, o)| *o);
    Ok(Prepared {
        backups: before(BACKUPS_REF),
        ..build(std::rc::Rc::new(scratch), &ledger, before, items)?
    })
}

/// The commit publishing `items` on `ledger` (as fetched into `scratch`), `before` naming
/// the ref of each name published before the ledger, if any.
fn build(
    scratch: std::rc::Rc<Scratch>,
    ledger: &Ledger,
    before: impl Fn(&str) -> Option<Oid>,
    items: &[Item],
) -> Result<Prepared> {
    let mut refs = Vec::new();
    let mut new: Vec<(&str, &str, &[u8])> = Vec::new();
    for item in items {
        let blob = crate::repo::blob_id(&item.bytes)?;
        let before = before(&item.refname);
        let outcome = match (ledger.first(&item.refname), before) {
            (Some(e), _) if e.blob == blob && e.file == item.kind.file() && e.regular => {
                RefOutcome::AlreadyThere
            }
            (Some(_), _) => RefOutcome::Stale,
            // A plan held only by a ref from before the ledger goes onto the ledger all the
            // same (a second item of its name, each tried by readers: `Snapshot::plan`):
            // anyone who can push can delete that ref, and a plan applied must stay counted
            // for the bulk class across its planner's plans in every clone.
            (None, Some(_)) if item.kind == ItemKind::Plan => {
                new.push((item.refname.as_str(), item.kind.file(), item.bytes.as_slice()));
                RefOutcome::Done
            }
            (None, Some(oid)) if oid == publish::item_objects(item.kind.file(), &item.bytes)?.oid => {
                RefOutcome::AlreadyThere
            }
            (None, Some(_)) => RefOutcome::Stale,
            (None, None) => {
                new.push((item.refname.as_str(), item.kind.file(), item.bytes.as_slice()));
                RefOutcome::Done
            }
        };
        refs.push((item.refname.clone(), outcome));
    }
    let (update, after) = match new.is_empty() {
        true => (None, None),
        false => {
            let commit = ledger.append(&scratch, &new)?;
            let update = RefUpdate {
                refname: LEDGER_REF.to_string(),
                new: Some(commit),
                expect: ledger.tip,
            };
            (Some(update), Some(ledger.appended(commit, &new)?))
        }
    };
    Ok(Prepared {
        scratch,
        refs,
        update,
        after,
        backups: None,
    })
}

/// Publish `items` on the ledger (one commit, a fast-forward leased on the tip it was built
/// on) with `extra` in one atomic push; a push that lost the race for the tip to another
/// writer is built again on the new tip, so that of several writers of one name exactly one
/// lands and the others find it there. The first attempt builds on `known` (a snapshot of
/// `remote` fetched earlier in the run) when given: what it holds is still there (nothing
/// published is taken away, and a rewound ledger was refused when it was read), and a write
/// since fails the lease, after which every attempt reads the remote.
fn push(
    remote: &Remote,
    items: &[Item],
    extra: &[RefUpdate],
    known: Option<&Snapshot>,
) -> Result<publish::PushReport> {
    let mut pause = std::time::Duration::from_millis(25);
    let mut attempt = 0;
    let known = known.filter(|s| s.remote.url == remote.url);
    loop {
        attempt += 1;
        let on_known = known.filter(|_| attempt == 1);
        let prepared = match on_known {
            Some(s) => s.prepare(items)?,
            None => prepare_holding(remote, items, known.and_then(|s| s.ledger_tip()))?,
        };
        let (scratch, after) = (prepared.scratch.clone(), prepared.after.clone());
        let mut refs = prepared.refs;
        if refs.iter().any(|(_, o)| *o == RefOutcome::Stale) {
            for (_, o) in refs.iter_mut().filter(|(_, o)| *o != RefOutcome::Stale) {
                *o = RefOutcome::AtomicAbort;
            }
            return Ok(publish::PushReport {
                refs,
                remote_messages: vec![],
                ok: false,
            });
        }
        let mut updates: Vec<RefUpdate> = extra.to_vec();
        updates.extend(prepared.update);
        if updates.is_empty() {
            return Ok(publish::PushReport {
                refs,
                remote_messages: vec![],
                ok: true,
            });
        }
        let report = scratch.push(&remote.url, &updates)?;
        if let (true, Some(s)) = (report.ok, on_known) {
            s.landed(&scratch, after.as_ref());
        }
        let ledger = report.outcome(LEDGER_REF).cloned();
        let extras_held = extra
            .iter()
            .all(|u| report.outcome(&u.refname) != Some(&RefOutcome::Stale));
        if !report.ok && ledger == Some(RefOutcome::Stale) && extras_held && attempt < LEDGER_ATTEMPTS {
            // Another write moved the tip first: build on the new one (after a short,
            // randomised pause, so that racing writers do not meet again at once).
            let jitter = crate::fsutil::random_bytes::<1>()
                .map(|b| b[0] as u32)
                .unwrap_or(0);
            std::thread::sleep(pause + pause * jitter / 255);
            pause = (pause * 2).min(std::time::Duration::from_secs(1));
            continue;
        }
        for (_, o) in refs.iter_mut() {
            *o = match (&*o, &ledger) {
                (RefOutcome::Done, Some(RefOutcome::Stale)) => RefOutcome::Refused(format!(
                    "the ledger {LEDGER_REF} kept moving: {attempt} attempts lost the race to other writers"
                )),
                (RefOutcome::Done, Some(l)) => l.clone(),
                (RefOutcome::Done, None) => RefOutcome::AtomicAbort,
                (_, _) if !report.ok => RefOutcome::AtomicAbort,
                (other, _) => other.clone(),
            };
        }
        refs.extend(
            report
                .refs
                .iter()
                .filter(|(r, _)| extra.iter().any(|u| u.refname == *r))
                .cloned(),
        );
        return Ok(publish::PushReport {
            refs,
            remote_messages: report.remote_messages,
            ok: report.ok,
        });
    }
}

/// What a push of `items` did, or why it did not land (see [`publish`]).
fn outcome(remote: &Remote, items: &[Item], report: &publish::PushReport) -> Result<Published> {
    let mut out = Published::default();
    if report.ok {
        for (r, o) in &report.refs {
            match o {
                RefOutcome::AlreadyThere => out.already.push(r.clone()),
                _ => out.created.push(r.clone()),
            }
        }
        return Ok(out);
    }
    let stale: Vec<&str> = report
        .refs
        .iter()
        .filter(|(_, o)| *o == RefOutcome::Stale)
        .map(|(r, _)| r.as_str())
        .collect();
    if !stale.is_empty() {
        let is_item = |r: &str| items.iter().any(|i| i.refname == r);
        let what = if stale.iter().all(|r| is_item(r)) {
            "is already published with other content; a published item is never overwritten"
        } else {
            "is not what this push expected (another guardctl changed it first)"
        };
        return Err(Error::new(
            Kind::Policy,
            format!(
                "nothing was published to {}: {} {what}",
                remote.describe(),
                stale.iter().map(|r| safe(r)).collect::<Vec<_>>().join(", ")
            ),
        )
        .with_details(serde_json::json!({"refs": stale, "remote": remote.name}))
        // A decision whose name someone else took goes under its fallback name
        // (`publish_decision`): a decision refused here is held off by this key's own.
        .with_hint(format!(
            "see what is there with `guardctl show`, or `git log --stat {}/guardctl/ledger` after a fetch. A decision of yours published earlier stands as it is (to change your mind, `guardctl reject --withdraw`, or ask for a new plan); anything else there must be deleted by whoever administers the remote",
            safe(&remote.name)
        )));
    }
    let refused: Vec<(&str, &str)> = report
        .refs
        .iter()
        .filter_map(|(r, o)| match o {
            RefOutcome::Refused(why) => Some((r.as_str(), why.as_str())),
            _ => None,
        })
        .collect();
    let mut e = Error::new(
        Kind::Policy,
        format!(
            "{} refused {}: nothing was published",
            remote.describe(),
            match refused.as_slice() {
                [] => "the push".to_string(),
                some => some
                    .iter()
                    .map(|(r, why)| format!("{} {why}", safe(r)))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        ),
    )
    .with_details(serde_json::json!({
        "refs": refused.iter().map(|(r, _)| r).collect::<Vec<_>>(),
        "remote": remote.name,
        "remote_messages": report.remote_messages,
    }))
    .with_hint(
        "the remote does not take pushes of the ledger branch guardctl/ledger: pass files instead (`guardctl plan --out FILE`, `guardctl approve FILE --out APPROVAL`, `guardctl apply FILE --approval APPROVAL`), or ask its administrator to allow fast-forward pushes of guardctl/ledger (docs/remote.md)",
    );
    for m in &report.remote_messages {
        e = e.caused_by(format!("remote: {m}"));
    }
    Err(e)
}

/// What to fetch: everything under `refs/guardctl/`, what concerns one plan, or every
/// plan with its consumed marker (the bulk class across plans: `gate::part_of`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    All,
    Plan(String),
    Plans,
}

impl Scope {
    /// `git ls-remote` patterns for the scope's refs (git matches them against the end of
    /// each name: [`Scope::holds`] keeps only the layout's own).
    fn patterns(&self) -> Vec<String> {
        match self {
            Scope::All => vec![format!("{ROOT}*")],
            Scope::Plan(id) => vec![format!("{ROOT}*/{id}"), format!("{ROOT}*/{id}/*")],
            Scope::Plans => vec![format!("{ROOT}plans/*"), format!("{ROOT}consumed/*")],
        }
    }

    /// Whether a snapshot of this scope holds everything `other` would fetch.
    pub fn includes(&self, other: &Scope) -> bool {
        match (self, other) {
            (Scope::All, _) => true,
            (Scope::Plans, Scope::Plans) => true,
            (Scope::Plan(a), Scope::Plan(b)) => a == b,
            _ => false,
        }
    }

    /// Whether `refname` is one of the layout's refs within this scope.
    pub fn holds(&self, refname: &str) -> bool {
        let Some(rest) = refname.strip_prefix(ROOT) else {
            return false;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let id_ok = |id: &str| crate::store::state::is_plan_id_hex(id) && self.covers(id);
        match parts.as_slice() {
            [dir, id] if *self == Scope::Plans => (*dir == "plans" || *dir == "consumed") && id_ok(id),
            [dir, id] => (*dir == "plans" || *dir == "consumed" || *dir == "receipts") && id_ok(id),
            // Anything under a plan's rejections is read: what cannot be verified there
            // blocks the plan (`Decisions::blocking`), whatever its name.
            ["rejections", id, _, ..] => *self != Scope::Plans && id_ok(id),
            [dir, id, name] => {
                *self != Scope::Plans
                    && ItemKind::DECISIONS.iter().any(|k| k.dir() == *dir)
                    && id_ok(id)
                    && fpr_of_name(name).is_some()
            }
            _ => false,
        }
    }

    pub fn covers(&self, id_hex: &str) -> bool {
        match self {
            Scope::All | Scope::Plans => true,
            Scope::Plan(id) => id == id_hex,
        }
    }
}

/// Where a published item was read from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A file the ledger holds (`store::ledger`): its blob, its file's name, whether it is a
    /// regular file. Sorted first: the ledger is where items are published now.
    Ledger { blob: Oid, file: String, regular: bool },
    /// A ref under `refs/guardctl/` (as published before the ledger), at its item's commit.
    Ref(Oid),
}

/// Published items fetched into a scratch repository: read them from here.
pub struct Snapshot {
    pub remote: Remote,
    pub scope: Scope,
    scratch: std::rc::Rc<Scratch>,
    /// The ledger as fetched (its tip, its warnings); its entries are in `refs`.
    ledger: Ledger,
    /// Refs listed but not fetched: what they hold is larger than any item can be.
    too_large: Vec<(String, Oid)>,
    /// Every ref fetched and every ref left out as too large, sorted by name: read once
    /// after the fetch. Looking each prefix up in the scratch repository instead walked all
    /// of its refs every time (`inbox` reads several prefixes per plan), so that 8000 junk
    /// refs anyone can push made every `inbox` take minutes (quadratic in the refs).
    /// The ledger's entries are here too, by their item's ref name, before any ref of the
    /// same name.
    refs: Vec<(String, Source)>,
    /// [`Snapshot::plans`], read once.
    plans: std::cell::OnceCell<PublishedPlans>,
    /// The ledger after this run's own pushes built on the snapshot ([`Snapshot::landed`]).
    landed: std::cell::RefCell<Option<Ledger>>,
    /// The tip of the backups branch, listed with the ledger ([`Prepared::backups`]).
    backups: Option<Oid>,
}

/// The largest file of any published item (a plan file or a receipt): what one fetch of
/// published items may bring per file (`Scratch::fetch`).
pub const MAX_ITEM_BYTES: u64 = MAX_FILE_BYTES;

/// The largest file an item under `refname` may hold.
fn item_limit(refname: &str) -> u64 {
    let dir = refname.strip_prefix(ROOT).and_then(|r| r.split('/').next());
    match dir {
        Some("plans") | Some("receipts") => MAX_ITEM_BYTES,
        _ => MAX_ENVELOPE_BYTES,
    }
}

/// Why an item left unfetched cannot be read.
fn too_large_why(file: &str) -> String {
    format!(
        "its `{file}` is larger than any published item can be (the fetch stopped at {} bytes)",
        publish::fetch_cap(MAX_ITEM_BYTES)
    )
}

/// `(ref, commit)` as listed, for the `wanted` refs.
fn listed_of(listed: &[(String, Oid)], wanted: &[String]) -> Vec<(String, Oid)> {
    // A set: thousands of refs listed and wanted would otherwise be compared pairwise.
    let wanted: std::collections::HashSet<&String> = wanted.iter().collect();
    listed
        .iter()
        .filter(|(r, _)| wanted.contains(r))
        .cloned()
        .collect()
}

/// Fetch the commits of `refs` (as listed) from `url` into `scratch` by object id, each once
/// however many refs point at it, no file of more than an item's size cap: all in one fetch
/// when that stays within the cap of the largest item, else in groups of about √n commits,
/// and one at a time (within the largest cap of the kinds of refs at it) only inside a group
/// that reaches the cap. Returns the refs left unfetched because they hold more than that.
/// A hostile pusher's huge blob costs at most the cap three times (the first fetch, its
/// group's, its own) and about 2√n fetches; one at a time from the start would let one huge
/// blob beside thousands of small refs make every reader run a fetch, a round trip to the
/// remote, per ref. Any other failure is an error.
///
/// By id, not by name: fetched by name, git wrote one loose ref per item into the scratch
/// repository (50,000 junk refs pushed under `refs/guardctl/`, all at one commit, were
/// 50,000 lock files, writes and renames: seconds of every `verify`), and what a ref holds
/// is read from the commit the listing named, the snapshot's one view of the remote.
pub fn fetch_capped(scratch: &Scratch, url: &str, refs: &[(String, Oid)]) -> Result<Vec<(String, Oid)>> {
    let mut limits: std::collections::BTreeMap<Oid, u64> = Default::default();
    for (r, oid) in refs {
        let l = limits.entry(*oid).or_insert(0);
        *l = (*l).max(item_limit(r));
    }
    if limits.is_empty() {
        return Ok(vec![]);
    }
    let commits: Vec<Oid> = limits.keys().copied().collect();
    if scratch.fetch_commits(url, &commits, MAX_ITEM_BYTES)? == publish::Fetch::Done {
        return Ok(vec![]);
    }
    let mut capped = std::collections::HashSet::new();
    for group in commits.chunks(commits.len().isqrt().max(1)) {
        if group.len() > 1 && scratch.fetch_commits(url, group, MAX_ITEM_BYTES)? == publish::Fetch::Done {
            continue;
        }
        for oid in group {
            if scratch.fetch_commits(url, std::slice::from_ref(oid), limits[oid])? == publish::Fetch::Capped {
                capped.insert(*oid);
            }
        }
    }
    Ok(refs.iter().filter(|(_, o)| capped.contains(o)).cloned().collect())
}

/// Every plan published in a snapshot that verified as a plan file with the id its ref
/// names, each with its consumed marker if the remote has one (unverified: who signed it is
/// the caller's business); and warnings naming the refs that did not verify.
#[derive(Default)]
pub struct PublishedPlans {
    pub plans: Vec<(Loaded, Option<ConsumedItem>)>,
    pub warnings: Vec<String>,
}

/// A published plan's envelopes that passed this module's checks, and warnings about those
/// that did not.
#[derive(Debug, Default, Clone)]
pub struct Decisions {
    /// `(where, envelope)`: `where` names the ref for messages.
    pub envelopes: Vec<(String, Envelope)>,
    pub warnings: Vec<String>,
    /// Refs under `rejections/<id>/` that are not a rejection this module can verify, each
    /// `<ref> on <remote>: <why>` (escaped). Fail closed: `verify` and `apply` refuse the
    /// plan while one is there (it may be a damaged or replaced veto); only whoever
    /// administers the remote can remove it.
    pub blocking: Vec<String>,
}

/// A plan's consumed marker on the remote.
#[derive(Debug, Clone)]
pub struct ConsumedItem {
    pub refname: String,
    pub source: Source,
    /// Its `consumed.json` (the signed marker: `store::consumption`, `execute::remote_marker`
    /// verify it); `Err` says why it is not readable.
    pub marker: std::result::Result<Vec<u8>, String>,
}

/// A failed read of what `remote` publishes, said as such.
pub fn cannot_read(remote: &Remote, e: Error) -> Error {
    Error::new(e.kind, format!("cannot read refs/guardctl/ on {}", remote.describe()))
        .caused_by(e.message)
        .with_hint("check the remote's URL and your access to it (`git ls-remote <remote> guardctl/ledger`); guardctl needs it to see published approvals and rejections")
}

/// What a snapshot of everything needs of a listing of the remote ([`Snapshot::fetch_listed`]):
/// the refs under `refs/guardctl/`, the ledger's and the backups branch's.
pub fn listed_guardctl(listing: &crate::repo::Listing) -> Vec<(String, Oid)> {
    listing.under(&[ROOT], &[LEDGER_REF, BACKUPS_REF])
}

impl Snapshot {
    /// Fetch `scope` from `remote` into a new scratch repository: the refs are listed first
    /// (`git ls-remote`), and only when there are some is anything fetched.
    pub fn fetch(remote: &Remote, scope: Scope) -> Result<Snapshot> {
        Snapshot::fetch_listed(remote, scope, None)
    }

    /// [`Snapshot::fetch`] with the refs under `refs/guardctl/`, the ledger's and the backups
    /// branch's `listed` already (the run's one listing of the remote, `Repo::listing`;
    /// `None`: list them here).
    pub fn fetch_listed(
        remote: &Remote,
        scope: Scope,
        listed: Option<Vec<(String, Oid)>>,
    ) -> Result<Snapshot> {
        let scratch = Scratch::new(remote.transport.clone())?;
        let cannot = |e: Error| cannot_read(remote, e);
        let (listed, ledger) = match listed {
            Some(listed) => Ledger::fetch_listed(&scratch, &remote.url, listed),
            None => Ledger::list_and_fetch(&scratch, &remote.url, &scope.patterns()),
        }
        .map_err(cannot)?;
        let wanted: Vec<String> = listed
            .iter()
            .map(|(r, _)| r.clone())
            .filter(|r| scope.holds(r))
            .collect();
        let wanted = listed_of(&listed, &wanted);
        let too_large = fetch_capped(&scratch, &remote.url, &wanted).map_err(cannot)?;
        // Every ref as listed, those too large to fetch included (`too_large` says so when
        // one is read).
        let mut refs: Vec<(String, Source)> = wanted.into_iter().map(|(r, o)| (r, Source::Ref(o))).collect();
        refs.extend(ledger.entries.iter().filter(|e| scope.holds(&e.name)).map(|e| {
            (
                e.name.clone(),
                Source::Ledger {
                    blob: e.blob,
                    file: e.file.clone(),
                    regular: e.regular,
                },
            )
        }));
        // Stable: the ledger's entries of one name stay in the order they were added.
        refs.sort_by(|a, b| (&a.0, source_rank(&a.1)).cmp(&(&b.0, source_rank(&b.1))));
        Ok(Snapshot {
            remote: remote.clone(),
            scope,
            scratch: std::rc::Rc::new(scratch),
            ledger,
            too_large,
            refs,
            plans: std::cell::OnceCell::new(),
            landed: std::cell::RefCell::new(None),
            backups: listed.iter().find(|(r, _)| r == BACKUPS_REF).map(|(_, o)| *o),
        })
    }

    /// [`prepare`] on what this snapshot fetched: no connection, a commit leased on the tip
    /// seen then. A write since makes its push fail on the lease; the caller then prepares
    /// again from the remote (`execute::Executor::push_consuming`).
    pub fn prepare(&self, items: &[Item]) -> Result<Prepared> {
        let landed = self.landed.borrow();
        let ledger = landed.as_ref().unwrap_or(&self.ledger);
        let before = |name: &str| {
            self.exactly(name).ok().and_then(|sources| {
                sources.into_iter().find_map(|s| match s {
                    Source::Ref(oid) => Some(oid),
                    Source::Ledger { .. } => None,
                })
            })
        };
        Ok(Prepared {
            backups: self.backups,
            ..build(self.scratch.clone(), ledger, before, items)?
        })
    }

    /// Record that a commit built on this snapshot ([`Snapshot::prepare`], in `scratch`) was
    /// pushed and landed, making the ledger `after`: the next [`Snapshot::prepare`] builds on the tip it made (the receipt after
    /// the deletions of an apply: no second read of the remote). Readers of the snapshot
    /// still see the items as fetched.
    pub fn landed(&self, scratch: &std::rc::Rc<Scratch>, after: Option<&Ledger>) {
        if std::rc::Rc::ptr_eq(scratch, &self.scratch)
            && let Some(after) = after
        {
            *self.landed.borrow_mut() = Some(after.clone());
        }
    }

    /// The ref `refname` if it was listed but left unfetched as too large, with its commit.
    fn too_large(&self, refname: &str) -> Option<Oid> {
        self.too_large.iter().find(|(r, _)| r == refname).map(|(_, o)| *o)
    }

    /// The items under `prefix`, sorted by name (the ledger's first within a name): those
    /// fetched, and those left out as too large.
    fn listed(&self, prefix: &str) -> Result<Vec<(String, Source)>> {
        let start = self.refs.partition_point(|(r, _)| r.as_str() < prefix);
        Ok(self.refs[start..]
            .iter()
            .take_while(|(r, _)| r.starts_with(prefix))
            .cloned()
            .collect())
    }

    /// The items named exactly `refname`, the ledger's first.
    fn exactly(&self, refname: &str) -> Result<Vec<Source>> {
        Ok(self
            .listed(refname)?
            .into_iter()
            .filter(|(r, _)| r == refname)
            .map(|(_, s)| s)
            .collect())
    }

    /// The one file `file` of the item `refname` from `source`, of at most `limit` bytes;
    /// `Err` says why it is not readable, a ref left unfetched as too large included.
    fn read(
        &self,
        refname: &str,
        source: &Source,
        file: &str,
        limit: u64,
    ) -> std::result::Result<Vec<u8>, String> {
        match source {
            Source::Ref(oid) => {
                if self.too_large(refname).is_some() {
                    return Err(too_large_why(file));
                }
                self.scratch.read_item(*oid, file, limit)
            }
            Source::Ledger {
                blob,
                file: held,
                regular,
            } => {
                if held != file || !regular {
                    return Err(format!(
                        "the ledger holds `{}` there, not the regular file `{file}`",
                        safe(held)
                    ));
                }
                self.scratch.read_blob(*blob, limit)
            }
        }
    }

    /// Every plan published here, each verified exactly as [`Snapshot::plan`] does (read
    /// once per snapshot: `inbox` judges every plan against all the others). One that does not
    /// verify is left out with a warning: it is not a plan anyone could apply.
    pub fn plans(&self) -> Result<&PublishedPlans> {
        if let Some(p) = self.plans.get() {
            return Ok(p);
        }
        let mut out = PublishedPlans::default();
        for id in self.plan_ids()? {
            match self.plan(&id) {
                Ok(Some(l)) => out.plans.push((l, self.consumed(&id)?)),
                Ok(None) => {}
                Err(e) => out.warnings.push(format!("ignored {}", e.message)),
            }
        }
        Ok(self.plans.get_or_init(|| out))
    }

    /// The ids (hex) of the plans published here, sorted, each once.
    pub fn plan_ids(&self) -> Result<Vec<String>> {
        self.ids_under(ItemKind::Plan)
    }

    /// The plan ids (hex) named by the items of `kind` published here, sorted, each once.
    fn ids_under(&self, kind: ItemKind) -> Result<Vec<String>> {
        let prefix = format!("{ROOT}{}/", kind.dir());
        let mut ids: Vec<String> = self
            .listed(&prefix)?
            .into_iter()
            .filter_map(|(r, _)| r.strip_prefix(&prefix).map(String::from))
            .filter(|id| crate::store::state::is_plan_id_hex(id))
            .collect();
        ids.dedup();
        Ok(ids)
    }

    /// The ids (hex) of the plans with a receipt published here, sorted, each once.
    pub fn receipt_ids(&self) -> Result<Vec<String>> {
        self.ids_under(ItemKind::Receipt)
    }

    /// The ids (hex) of the plans with a consumed marker published here, sorted, each once.
    pub fn consumed_ids(&self) -> Result<Vec<String>> {
        self.ids_under(ItemKind::Consumed)
    }

    /// Whether plan `id_hex` is published here (whatever it holds).
    pub fn has_plan(&self, id_hex: &str) -> bool {
        self.exactly(&plan_ref(id_hex)).is_ok_and(|s| !s.is_empty())
    }

    fn name(&self, refname: &str, source: &Source) -> String {
        match source {
            Source::Ref(_) => format!("{refname} on {}", self.remote.describe()),
            Source::Ledger { .. } => format!(
                "{refname} in the ledger ({LEDGER_REF}) of {}",
                self.remote.describe()
            ),
        }
    }

    /// The ledger's tip as fetched (`None`: the remote has no ledger).
    pub fn ledger_tip(&self) -> Option<Oid> {
        self.ledger.tip
    }

    /// Warnings about the ledger's shape (a merge commit, a file outside the layout).
    pub fn ledger_warnings(&self) -> &[String] {
        &self.ledger.warnings
    }

    /// Refuse (16) a ledger that does not hold `seen`, the tip this clone saw before
    /// (`store::ledger::check_seen`).
    pub fn check_seen(&self, seen: Oid, state_dir: &Path) -> Result<()> {
        super::ledger::check_seen(&self.scratch, &self.ledger, seen, &self.remote.url, state_dir)
    }

    /// The plan published as `id_hex`, verified as a plan file: `None` when none is
    /// published; `Err` (invalid_plan, 65) when nothing there is a valid plan with that id.
    /// Several items of that name (a ref and the ledger's copy, or a junk file added first)
    /// are each tried: every valid one is the same plan, the one its id hashes.
    pub fn plan(&self, id_hex: &str) -> Result<Option<Loaded>> {
        let refname = plan_ref(id_hex);
        let mut first_error = None;
        for source in self.exactly(&refname)? {
            match self.plan_from(id_hex, &refname, &source) {
                Ok(l) => return Ok(Some(l)),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(None), Err)
    }

    fn plan_from(&self, id_hex: &str, refname: &str, source: &Source) -> Result<Loaded> {
        let name = self.name(refname, source);
        let bytes = self
            .read(refname, source, ItemKind::Plan.file(), MAX_FILE_BYTES)
            .map_err(|why| {
                Error::invalid_plan(format!("{name}: {why}")).with_hint(
                    "what is published there is not a plan guardctl published; ask the planner to plan again",
                )
            })?;
        let loaded = crate::planfile::load_bytes(Path::new(&name), &bytes)?;
        if loaded.id_hex() != id_hex {
            return Err(Error::invalid_plan(format!(
                "{name} holds another plan ({}): a plan is published under its own id",
                loaded.plan_id
            ))
            .with_hint("ask the planner to publish the plan again (`guardctl plan … --publish`)"));
        }
        Ok(loaded)
    }

    /// The approvals, rejections and withdrawals published for plan `id_hex` that are what
    /// their refs say (see the module doc); the others are warnings.
    pub fn decisions(&self, id_hex: &str) -> Result<Decisions> {
        let mut out = Decisions::default();
        for kind in ItemKind::DECISIONS {
            let dir = format!("{ROOT}{}/{id_hex}/", kind.dir());
            for (refname, source) in self.listed(&dir)? {
                let checked = match fpr_of_name(&refname[dir.len()..]) {
                    Some(fpr) => self.decision(kind, id_hex, fpr, &refname, &source),
                    None => Err("its name is not a key fingerprint (`<fpr>` or `<fpr>-<digest>`)".into()),
                };
                match checked {
                    Ok(env) => out.envelopes.push((self.name(&refname, &source), env)),
                    Err(why) if kind == ItemKind::Rejection => out
                        .blocking
                        .push(format!("{}: {why}", safe(&self.name(&refname, &source)))),
                    Err(why) => out
                        .warnings
                        .push(format!("ignored {}: {why}", safe(&self.name(&refname, &source)))),
                }
            }
        }
        Ok(out)
    }

    fn decision(
        &self,
        kind: ItemKind,
        id_hex: &str,
        fpr: &str,
        refname: &str,
        source: &Source,
    ) -> std::result::Result<Envelope, String> {
        let bytes = self.read(refname, source, kind.file(), MAX_ENVELOPE_BYTES)?;
        let env: Envelope =
            serde_json::from_slice(&bytes).map_err(|e| format!("not a signed envelope ({e})"))?;
        let v = dsse::verify(&env, APPROVAL_PAYLOAD_TYPE, APPROVAL_NAMESPACE).map_err(|e| e.to_string())?;
        let a: Approval = serde_json::from_slice(&v.payload).map_err(|e| format!("malformed ({e})"))?;
        if key_hex(&v.signer) != fpr {
            return Err(format!(
                "signed by key {}, not the key the ref names",
                v.fingerprint
            ));
        }
        if a.plan_id != format!("sha256:{id_hex}") {
            return Err(format!("it is about another plan ({})", safe(&a.plan_id)));
        }
        if ItemKind::of_decision(a.decision) != kind {
            return Err(format!("it is a {:?} decision, not a {}", a.decision, kind.dir()));
        }
        Ok(env)
    }

    /// The consumed marker of plan `id_hex`, if the remote has one: the first added (a
    /// marker is never replaced; a later one at the same name is not the one that consumed).
    pub fn consumed(&self, id_hex: &str) -> Result<Option<ConsumedItem>> {
        self.first_item(consumed_ref(id_hex), ItemKind::Consumed, MAX_MARKER_BYTES)
    }

    /// The receipt (or abandonment record) of plan `id_hex`, if the remote has one: the
    /// first added.
    pub fn receipt(&self, id_hex: &str) -> Result<Option<ConsumedItem>> {
        self.first_item(receipt_ref(id_hex), ItemKind::Receipt, MAX_ITEM_BYTES)
    }

    /// The first item named `refname`, its `kind`'s file read within `limit` bytes.
    fn first_item(&self, refname: String, kind: ItemKind, limit: u64) -> Result<Option<ConsumedItem>> {
        Ok(self
            .exactly(&refname)?
            .into_iter()
            .next()
            .map(|source| ConsumedItem {
                marker: self.read(&refname, &source, kind.file(), limit),
                refname,
                source,
            }))
    }
}

/// Whether `remote` has plan `id_hex` published (whatever it holds).
pub fn has_plan(remote: &Remote, id_hex: &str) -> Result<bool> {
    Ok(Snapshot::fetch(remote, Scope::Plan(id_hex.to_string()))?.has_plan(id_hex))
}

impl Snapshot {
    /// The published plan `arg` names: a plan id (`sha256:<hex>` or 64 hex digits) or a
    /// unique prefix of at least 8 hex digits among the plans published here. None is
    /// `not_found` (66); several is `usage` (64), listing them.
    pub fn resolve(&self, arg: &str) -> Result<String> {
        let wanted = arg.strip_prefix("sha256:").unwrap_or(arg).to_ascii_lowercase();
        if wanted.len() < 8 || wanted.len() > 64 || !wanted.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::new(
                Kind::NotFound,
                format!("{} is neither a file nor a plan id", safe(arg)),
            )
            .with_hint("pass a plan file, a plan id, or at least 8 hex digits of a published plan's id (`guardctl inbox` lists them)"));
        }
        let ids: Vec<String> = self
            .plan_ids()?
            .into_iter()
            .filter(|id| id.starts_with(&wanted))
            .collect();
        match ids.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::new(
                Kind::NotFound,
                format!(
                    "no file {} and no plan published on {} with that id",
                    safe(arg),
                    self.remote.describe()
                ),
            )
            .with_hint("check the path or the id (`guardctl inbox` lists the published plans)")),
            many => Err(Error::usage(format!(
                "{} matches {} published plans: {}",
                safe(arg),
                many.len(),
                many.iter()
                    .map(|i| format!("sha256:{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_details(
                serde_json::json!({"candidates": many.iter().map(|i| format!("sha256:{i}")).collect::<Vec<_>>()}),
            )
            .with_hint("give more hex digits of the plan id")),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn refs_follow_the_documented_layout() {
        let id = "a".repeat(64);
        assert_eq!(plan_ref(&id), format!("refs/guardctl/plans/{id}"));
        assert_eq!(consumed_ref(&id), format!("refs/guardctl/consumed/{id}"));
        assert_eq!(
            decision_ref(ItemKind::Rejection, &id, "ff"),
            format!("refs/guardctl/rejections/{id}/ff")
        );
        for k in ItemKind::DECISIONS {
            assert!(crate::repo::is_valid_refname(&decision_ref(
                k,
                &id,
                &"0".repeat(64)
            )));
        }
        let fpr = "0".repeat(64);
        let fallback = fallback_decision_ref(ItemKind::Rejection, &id, &fpr, b"x");
        let digest = crate::plan::envelope::sha256_id(b"x");
        assert_eq!(
            fallback,
            format!("refs/guardctl/rejections/{id}/{fpr}-{}", &digest[7..23])
        );
        assert!(crate::repo::is_valid_refname(&fallback));
        assert_eq!(
            fpr_of_name(fallback.rsplit('/').next().unwrap()),
            Some(fpr.as_str())
        );
        assert_eq!(fpr_of_name(&fpr), Some(fpr.as_str()));
        for bad in [
            "",
            "junk",
            &fpr[1..],
            &format!("{fpr}-"),
            &format!("{fpr}-0123456789ABCDEF"),
        ] {
            assert_eq!(fpr_of_name(bad), None, "{bad}");
        }
        assert_eq!(id_hex_of(&format!("sha256:{}", "A".repeat(64))), Some(id.clone()));
        assert_eq!(id_hex_of("abc"), None);
    }

    /// An empty bare repository standing in for the team remote (also used by
    /// `consumption`'s tests).
    pub(in crate::store) fn bare() -> (tempfile::TempDir, Remote) {
        let d = tempfile::tempdir().unwrap();
        git2::Repository::init_bare(d.path()).unwrap();
        let remote = Remote {
            name: "origin".into(),
            url: d.path().display().to_string(),
            transport: vec![],
        };
        (d, remote)
    }

    fn item(refname: &str, bytes: &[u8]) -> Item {
        Item {
            kind: ItemKind::Plan,
            refname: refname.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn publishing_again_is_already_published_and_other_content_is_refused() {
        let (_d, remote) = bare();
        let r = plan_ref(&"c".repeat(64));
        let first = publish(&remote, &[item(&r, b"one")], &[]).unwrap();
        assert_eq!(first.created, vec![r.clone()]);
        let again = publish(&remote, &[item(&r, b"one")], &[]).unwrap();
        assert_eq!(again.already, vec![r.clone()]);
        let e = publish(&remote, &[item(&r, b"two")], &[]).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert!(
            e.message.contains("already published with other content"),
            "{}",
            e.message
        );
        assert!(e.message.contains(&r), "{}", e.message);
        let snap = Snapshot::fetch(&remote, Scope::All).unwrap();
        assert_eq!(snap.plan_ids().unwrap(), vec!["c".repeat(64)]);
    }

    #[test]
    fn a_remote_that_refuses_the_refs_is_named_with_its_message_and_the_fallback() {
        let (d, remote) = bare();
        let hook = d.path().join("hooks/pre-receive");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(
            &hook,
            "#!/bin/sh\necho 'custom refs are not allowed here'\nexit 1\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = plan_ref(&"d".repeat(64));
        let e = publish(&remote, &[item(&r, b"x")], &[]).unwrap_err();
        assert_eq!(e.kind, Kind::Policy);
        assert!(
            e.message.contains(&r) && e.message.contains("refused"),
            "{}",
            e.message
        );
        assert!(
            e.causes
                .iter()
                .any(|c| c.contains("custom refs are not allowed here")),
            "{:?}",
            e.causes
        );
        assert!(e.hint().contains("--out FILE"), "{}", e.hint());
        assert!(
            Snapshot::fetch(&remote, Scope::All)
                .unwrap()
                .plan_ids()
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_plans_scope_holds_plans_and_markers_only_and_everything_includes_it() {
        let (id, fpr) = ("b".repeat(64), "0".repeat(64));
        assert!(Scope::Plans.holds(&plan_ref(&id)));
        assert!(Scope::Plans.holds(&consumed_ref(&id)));
        assert!(!Scope::Plans.holds(&receipt_ref(&id)));
        assert!(!Scope::Plans.holds(&decision_ref(ItemKind::Rejection, &id, &fpr)));
        assert!(Scope::All.includes(&Scope::Plans));
        assert!(Scope::All.includes(&Scope::Plan(id.clone())));
        // Neither has the other's refs: one plan's decisions, or every plan.
        assert!(!Scope::Plans.includes(&Scope::Plan(id.clone())));
        assert!(!Scope::Plan(id).includes(&Scope::Plans));
    }

    #[test]
    fn a_published_plan_that_is_not_a_plan_counts_for_nothing_and_is_named() {
        let (_d, remote) = bare();
        let r = plan_ref(&"e".repeat(64));
        publish(&remote, &[item(&r, b"{\"not\": \"a plan\"}")], &[]).unwrap();
        let snap = Snapshot::fetch(&remote, Scope::Plans).unwrap();
        let read = snap.plans().unwrap();
        assert!(read.plans.is_empty());
        assert_eq!(read.warnings.len(), 1);
        assert!(read.warnings[0].contains(&r), "{:?}", read.warnings);
    }

    #[test]
    fn a_consumed_marker_over_the_markers_cap_is_unreadable_in_a_snapshot_as_when_read_alone() {
        let (_d, remote) = bare();
        let (small, large) = ("1".repeat(64), "2".repeat(64));
        let s = Scratch::new(vec![]).unwrap();
        let fits = s
            .item(ItemKind::Consumed.file(), &vec![b'm'; MAX_MARKER_BYTES as usize])
            .unwrap();
        let over = s
            .item(
                ItemKind::Consumed.file(),
                &vec![b'm'; MAX_MARKER_BYTES as usize + 1],
            )
            .unwrap();
        s.push(
            &remote.url,
            &[
                RefUpdate::create(consumed_ref(&small), fits),
                RefUpdate::create(consumed_ref(&large), over),
            ],
        )
        .unwrap();
        let snap = Snapshot::fetch(&remote, Scope::Plans).unwrap();
        let marker = |id: &str| snap.consumed(id).unwrap().unwrap().marker;
        assert_eq!(marker(&small).unwrap().len(), MAX_MARKER_BYTES as usize);
        let why = marker(&large).unwrap_err();
        assert!(
            why.contains(&format!("larger than {MAX_MARKER_BYTES} bytes")),
            "{why}"
        );
        let alone = crate::store::consumption::read(&remote, &large).unwrap().unwrap();
        assert_eq!(alone.consumed.bytes.unwrap_err(), why, "one cap for every reader");
    }

    #[test]
    fn scope_of_one_plan_fetches_only_its_refs() {
        let id = "b".repeat(64);
        let p = Scope::Plan(id.clone()).patterns();
        assert!(p.iter().all(|x| x.contains(&id)), "{p:?}");
        assert_eq!(Scope::All.patterns(), vec!["refs/guardctl/*".to_string()]);
        let fpr = "0".repeat(64);
        let other = "c".repeat(64);
        let mine = Scope::Plan(id.clone());
        assert!(mine.holds(&plan_ref(&id)));
        assert!(mine.holds(&decision_ref(ItemKind::Approval, &id, &fpr)));
        assert!(!mine.holds(&plan_ref(&other)));
        assert!(!mine.holds(&format!("refs/other/refs/guardctl/plans/{id}")));
        assert!(!mine.holds(&format!("refs/guardctl/approvals/{id}/short")));
        assert!(mine.holds(&format!("refs/guardctl/approvals/{id}/{fpr}-0123456789abcdef")));
        assert!(!mine.holds(&format!("refs/guardctl/approvals/{id}/{fpr}-0123")));
        // Under rejections, anything is read (and blocks unless it verifies).
        assert!(mine.holds(&format!("refs/guardctl/rejections/{id}/short")));
        assert!(mine.holds(&format!("refs/guardctl/rejections/{id}/a/b")));
        assert!(!mine.holds(&format!("refs/guardctl/rejections/{other}/short")));
        assert!(!mine.holds(&format!("refs/guardctl/junk/{id}")));
        assert!(Scope::All.holds(&consumed_ref(&other)));
    }
}
