//! The `stale-branches` operation: which local branches are safe to delete, and why.
//!
//! `observe` reads the repository (read-only, through `repo/`); `screen` and `classify` are
//! pure and take `now`, so every rule below is unit-tested without git.
//!
//! Rules (docs/guide.md "Selecting branches"): never the base, the checked-out branch, a branch checked out in any
//! worktree, a protected pattern, or a name git would reject. Weak criteria (`gone`,
//! `older-than`) never plan a branch that holds unmerged work unless `include_unmerged`.
//! Every branch not planned is reported with its reason.

use crate::error::{Error, Result};
use crate::ops::progress::Progress;
use crate::plan::model::{
    BranchFacts, ConfigEntry, Criterion, History, Person, Resource, ResourceFacts, SkipReason, Skipped,
    SquashedInto, StaleBranchesInputs, TagFacts, TagObject, Upstream,
};
use crate::repo::{BranchRef, CheckedOut, CommitFacts, Reachable, Reader, Reads, RemoteRefs, Repo};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use time::OffsetDateTime;

/// What the user asked for, before normalisation.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub base: Option<String>,
    pub merged: bool,
    pub squash_merged: bool,
    pub gone: bool,
    pub older_than: Option<Duration>,
    pub include_unmerged: bool,
    pub match_globs: Vec<String>,
    pub exclude: Vec<String>,
    pub protect: Vec<String>,
    /// Select exactly the branches `match_globs` names, whatever their state (criterion
    /// `matched`): the agent-shell hook's plan of `git branch -D NAMES`. Unmerged work is
    /// still planned only with `include_unmerged`, flagged as lost.
    pub named: bool,
}

/// Sorted, de-duplicated inputs: the same request always normalises to the same value, so
/// the plan hash depends on what was asked, not how it was spelled.
pub fn normalize(req: &Request, base_ref: String, policy_protected: &[String]) -> StaleBranchesInputs {
    let mut criteria = Vec::new();
    if req.merged {
        criteria.push(Criterion::Merged);
    }
    if req.squash_merged {
        criteria.push(Criterion::SquashMerged);
    }
    if req.gone {
        criteria.push(Criterion::Gone);
    }
    if req.older_than.is_some() {
        criteria.push(Criterion::OlderThan);
    }
    if criteria.is_empty() {
        criteria.push(Criterion::Merged);
    }
    if req.named {
        criteria = vec![Criterion::Matched];
    }
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v.dedup();
        v
    };
    let mut protect = req.protect.clone();
    protect.extend_from_slice(policy_protected);
    StaleBranchesInputs {
        base: base_ref,
        criteria,
        older_than_secs: req.older_than.map(|d| d.as_secs()),
        include_unmerged: req.include_unmerged,
        match_globs: sorted(&req.match_globs),
        exclude: sorted(&req.exclude),
        protect: sorted(&protect),
    }
}

/// Compiled patterns. Like git's wildmatch with pathname semantics: `*` stops at `/`.
pub struct Patterns {
    matching: Option<GlobSet>,
    exclude: GlobSet,
    protect: GlobSet,
}

fn glob(p: &str) -> std::result::Result<Glob, globset::Error> {
    GlobBuilder::new(p).literal_separator(true).build()
}

fn set(patterns: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(glob(p).map_err(|e| Error::usage(format!("invalid pattern `{p}`")).caused_by(e))?);
    }
    b.build()
        .map_err(|e| Error::usage("invalid patterns").caused_by(e))
}

impl Patterns {
    pub fn compile(inputs: &StaleBranchesInputs) -> Result<Patterns> {
        Ok(Patterns {
            matching: if inputs.match_globs.is_empty() {
                None
            } else {
                Some(set(&inputs.match_globs)?)
            },
            exclude: set(&inputs.exclude)?,
            protect: set(&inputs.protect)?,
        })
    }

    pub fn is_protected(&self, name: &str) -> bool {
        self.protect.is_match(name)
    }
}

/// The first reason a branch is out of consideration before any history is read.
pub fn screen(
    branch: &BranchRef,
    base_ref: &str,
    checked_out: &CheckedOut,
    patterns: &Patterns,
) -> Option<(SkipReason, Option<String>)> {
    let name = crate::plan::model::short_name(&branch.refname);
    if !branch.valid {
        return Some((SkipReason::InvalidName, None));
    }
    if branch.refname == base_ref {
        return Some((SkipReason::Base, None));
    }
    if checked_out.here.as_deref() == Some(branch.refname.as_str()) {
        return Some((SkipReason::CheckedOut, None));
    }
    if checked_out.remote_head.as_deref() == Some(branch.refname.as_str()) {
        return Some((SkipReason::RemoteHead, None));
    }
    if let Some(where_) = checked_out.elsewhere.get(&branch.refname) {
        return Some((SkipReason::Worktree, Some(where_.clone())));
    }
    if patterns.is_protected(name) {
        return Some((SkipReason::Protected, None));
    }
    if patterns.matching.as_ref().is_some_and(|m| !m.is_match(name)) {
        return Some((SkipReason::NotMatched, None));
    }
    if patterns.exclude.is_match(name) {
        return Some((SkipReason::Excluded, None));
    }
    if branch.oid.is_none() {
        return Some((SkipReason::Unreadable, Some("symbolic ref".into())));
    }
    None
}

/// Everything observed about one branch that passed `screen`.
#[derive(Debug, Clone)]
pub struct Observed {
    pub refname: String,
    pub oid: String,
    pub facts: CommitFacts,
    pub merged: bool,
    /// `None` when not counted: a branch that is not merged and that no selected criterion
    /// selects (skipped as `not_stale`; nothing shows or decides on the count, and counting
    /// reads every commit beyond the base that any such branch reaches).
    pub commits_not_in_base: Option<u64>,
    /// `Some` only when squash detection was requested and the branch is not merged.
    pub squash_merged: Option<bool>,
    /// The base commit that carries a squash-merged branch's change.
    pub squashed_into: Option<SquashedInto>,
    pub upstream: Option<Upstream>,
    pub config: Vec<ConfigEntry>,
    /// For a tag (see `ops::tags`): its kind and the commit it names.
    pub tag: Option<TagObject>,
}

pub enum Verdict {
    Delete(Box<Resource>),
    Skip(SkipReason, Option<String>),
}

/// The selected criteria this observation meets, sorted. Pure.
pub fn criteria_met(inputs: &StaleBranchesInputs, o: &Observed, now: OffsetDateTime) -> Vec<Criterion> {
    let mut reasons = Vec::new();
    for c in &inputs.criteria {
        let met = match c {
            Criterion::Merged => o.merged,
            Criterion::SquashMerged => o.squash_merged == Some(true),
            Criterion::Gone => o.upstream.as_ref().is_some_and(|u| u.gone),
            Criterion::OlderThan => inputs
                .older_than_secs
                .and_then(|limit| i64::try_from(limit).ok())
                .is_some_and(|limit| now.unix_timestamp().saturating_sub(o.facts.time) > limit),
            // Selected by name alone (tags; branches a command named): `screen` has already
            // applied --match.
            Criterion::Matched => true,
        };
        if met {
            reasons.push(*c);
        }
    }
    reasons.sort();
    reasons
}

/// Decide one branch from its observation. Pure.
pub fn classify(inputs: &StaleBranchesInputs, o: &Observed, now: OffsetDateTime) -> Verdict {
    let squash = o.squash_merged == Some(true);
    let reasons = criteria_met(inputs, o, now);
    if reasons.is_empty() {
        let detail = (!o.merged).then(not_merged);
        return Verdict::Skip(SkipReason::NotStale, detail);
    }
    let unmerged = match (o.merged, o.commits_not_in_base) {
        (true, _) => 0,
        (false, Some(n)) => n,
        // `run` counts every branch a criterion selects; one it did not is never planned.
        (false, None) => return Verdict::Skip(SkipReason::Unmerged, Some(not_merged())),
    };
    let loses_work = !o.merged && !squash && unmerged > 0;
    if loses_work && !inputs.include_unmerged {
        return Verdict::Skip(SkipReason::Unmerged, Some(not_in_base(unmerged)));
    }
    let last_commit_time =
        OffsetDateTime::from_unix_timestamp(o.facts.time).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    Verdict::Delete(Box::new(Resource {
        refname: o.refname.clone(),
        oid: o.oid.clone(),
        reasons,
        last_commit_time,
        author: Person {
            name: o.facts.author_name.clone(),
            email: o.facts.author_email.clone(),
        },
        subject: o.facts.subject.clone(),
        facts: resource_facts(o, unmerged, loses_work),
    }))
}

/// The kind-specific part of a planned resource: a tag's object, or a branch's upstream and
/// config (`people_not_in_base` is filled in after classification).
fn resource_facts(o: &Observed, commits_not_in_base: u64, loses_work: bool) -> ResourceFacts {
    let history = History {
        commits_not_in_base,
        loses_work,
    };
    match &o.tag {
        Some(object) => ResourceFacts::Tag(TagFacts {
            history,
            object: object.clone(),
        }),
        None => ResourceFacts::Branch(BranchFacts {
            history,
            upstream: o.upstream.clone(),
            config: o.config.clone(),
            people_not_in_base: vec![],
            squashed_into: o.squashed_into.clone(),
        }),
    }
}

/// A branch left alone as `not_stale` that is not merged: how far it is ahead is not counted.
fn not_merged() -> String {
    "not merged into base".to_string()
}

fn not_in_base(n: u64) -> String {
    format!(
        "{n} {} not in base",
        crate::plan::derive::plural(n, "commit", "commits")
    )
}

/// The outcome of planning: what to delete and what was left alone.
#[derive(Default)]
pub struct Outcome {
    pub affected: Vec<Resource>,
    pub skipped: Vec<Skipped>,
}

/// Observe the repository and classify every local branch. Read-only.
/// Whose branches: this repository's, or a remote's as `git ls-remote` listed them (judged
/// with this clone's objects; a remote branch has no config and nothing checks it out).
#[derive(Clone, Copy)]
pub enum Branches<'a> {
    Local,
    Remote(&'a RemoteRefs),
}

impl<'a> From<Option<&'a RemoteRefs>> for Branches<'a> {
    fn from(remote: Option<&'a RemoteRefs>) -> Self {
        remote.map_or(Branches::Local, Branches::Remote)
    }
}

pub fn run(
    repo: &Repo,
    inputs: &StaleBranchesInputs,
    source: Branches,
    base_oid: crate::repo::Oid,
    now: OffsetDateTime,
    progress: &dyn Progress,
) -> Result<Outcome> {
    let patterns = Patterns::compile(inputs)?;
    let (branches, checked_out) = match source {
        Branches::Local => (repo.local_branches()?, repo.checked_out()?),
        Branches::Remote(r) => (r.branches.clone(), CheckedOut::remote(r.head.as_deref())),
    };
    let want_squash = inputs.criteria.contains(&Criterion::SquashMerged);
    if want_squash {
        refuse_partial_clone(repo)?;
    }
    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    for b in &branches {
        if let Some((reason, detail)) = screen(b, &inputs.base, &checked_out, &patterns) {
            skipped.push(Skipped {
                refname: b.refname.clone(),
                oid: b.oid.map(|o| o.to_string()),
                reason,
                detail,
            });
            continue;
        }
        if let Some(oid) = b.oid {
            candidates.push((b.refname.as_str(), oid));
        }
    }
    let tips: Vec<crate::repo::Oid> = candidates.iter().map(|(_, oid)| *oid).collect();
    // Planning reads fast (the commit-graph); `recheck` re-derives with the objects.
    let mut lookups = Lookups::new(repo, source, base_oid, &tips, want_squash, Reads::Fast)?;
    let all_facts = needs_facts_unmerged(inputs);
    // Squash detection needs every unmerged branch's fork point, so it walks them all; else
    // only the branches a criterion selects are counted, after classification's screens.
    let count = if want_squash { Count::All } else { Count::Later };
    let readings = read_tips(&lookups, &tips, all_facts, count, progress)?;
    // Every commit gix reads for the plan has been read: what its mapping touched need not
    // stay resident under squash detection's libgit2 diffs.
    if want_squash {
        repo.release_fast_reads();
    }
    let mut observed = Vec::new();
    for ((refname, oid), reading) in candidates.into_iter().zip(readings) {
        match reading {
            Ok(Tip { facts: None, .. }) => skipped.push(Skipped {
                refname: refname.to_string(),
                oid: Some(oid.to_string()),
                reason: SkipReason::NotStale,
                detail: Some(not_merged()),
            }),
            Ok(tip) => observed.push(observe_one(&mut lookups, refname, oid, tip)?),
            Err(e) => skipped.push(Skipped {
                refname: refname.to_string(),
                oid: Some(oid.to_string()),
                reason: SkipReason::Unreadable,
                detail: Some(e.causes.join("; ")),
            }),
        }
    }

    if want_squash {
        detect_squash_merges(repo, Reads::Fast, &lookups.reachable, &mut observed, progress)?;
    }
    count_selected(&lookups, inputs, &mut observed, now)?;

    let mut affected = Vec::new();
    for (o, _) in &observed {
        match classify(inputs, o, now) {
            Verdict::Delete(a) => affected.push(*a),
            Verdict::Skip(reason, detail) => skipped.push(Skipped {
                refname: o.refname.clone(),
                oid: Some(o.oid.clone()),
                reason,
                detail,
            }),
        }
    }
    skipped.sort_by(|a, b| a.refname.cmp(&b.refname));
    Ok(Outcome { affected, skipped })
}

/// A remote's refs are judged with this clone's objects: every branch tip (and, when its
/// tags are judged, every tag) must have been fetched. Names git would reject are left to
/// `screen` (they are skipped, not judged).
pub fn require_fetched(repo: &Repo, remote: &str, refs: &RemoteRefs, tags_too: bool) -> Result<()> {
    let tags = if tags_too { refs.tags.as_slice() } else { &[] };
    let missing: Vec<&BranchRef> = refs
        .branches
        .iter()
        .chain(tags)
        .filter(|b| b.valid && b.oid.is_some_and(|o| !repo.has_object(o)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut e = Error::usage(format!(
        "{} refs of remote `{}` point at objects this clone does not have",
        missing.len(),
        crate::text::safe(remote)
    ));
    for b in missing.iter().take(5) {
        e = e.caused_by(crate::text::safe(&b.refname));
    }
    Err(e.with_hint(format!(
        "run `git fetch --tags {}` first, then plan again",
        crate::text::safe(remote)
    )))
}

/// What observing branches needs, read once per run: the base's history, the `branch.*`
/// config, the remotes, and whether squash merges are looked for.
struct Lookups<'r> {
    repo: &'r Repo,
    reachable: Reachable,
    config: HashMap<String, Vec<(String, String)>>,
    /// Each branch's remote-tracking ref and whether it exists, read from git when a
    /// branch first needs it.
    upstreams: Option<HashMap<String, (String, bool)>>,
    want_squash: bool,
    reads: Reads,
    /// Parents of the commits beyond the base that unmerged branches reach, read once.
    beyond: crate::repo::Beyond,
    /// Facts of the tips the base's walk read (`Repo::history_noting`).
    tip_facts: HashMap<crate::repo::Oid, crate::repo::CommitFacts>,
}

impl<'r> Lookups<'r> {
    fn new(
        repo: &'r Repo,
        source: Branches,
        base_oid: crate::repo::Oid,
        tips: &[crate::repo::Oid],
        want_squash: bool,
        reads: Reads,
    ) -> Result<Self> {
        // git reads the branches' config while the history is walked.
        let config = match source {
            Branches::Local => Some(repo.branch_config_later()),
            Branches::Remote(_) => None,
        };
        // One walk (`repo::walk`: on every core for a plan); the levels it adds are for squash
        // detection. It notes the facts of the tips it reads (the merged ones).
        let tip_set: HashSet<crate::repo::Oid> = tips.iter().copied().collect();
        let (reachable, tip_facts) = repo.history_noting(base_oid, reads, &tip_set)?;
        let config = match config {
            Some(read) => read
                .join()
                .map_err(|_| Error::internal("the thread reading the branches' config panicked"))??,
            None => HashMap::new(),
        };
        Ok(Lookups {
            repo,
            reachable,
            config,
            upstreams: None,
            want_squash,
            reads,
            beyond: Default::default(),
            tip_facts,
        })
    }
}

/// Whether a branch that is not merged can be planned by `inputs`' criteria, so that its
/// tip's facts (time, author, subject) are needed. With `--merged` alone it never is
/// (`classify` skips it as `not_stale`, "N commits not in base"), and reading its commit would
/// only inflate an object nothing shows: 4 in 10 branches of a real-shaped repository.
fn needs_facts_unmerged(inputs: &StaleBranchesInputs) -> bool {
    inputs.criteria.iter().any(|c| *c != Criterion::Merged)
}

/// Which unmerged branches `read_tips` counts the commits of.
#[derive(Clone, Copy, PartialEq)]
enum Count {
    /// Every one (squash detection, which needs their fork points; a re-derivation, whose
    /// branches are all planned).
    All,
    /// None: `count_selected` counts those a criterion selects, once they are observed.
    Later,
}

/// What the history says about one branch tip: the part of observing that reads objects.
#[derive(Clone)]
struct Tip {
    /// `None` for a branch that is not merged when its facts are not needed (see
    /// [`needs_facts_unmerged`]).
    facts: Option<CommitFacts>,
    merged: bool,
    /// `None`: not merged, and not counted ([`Count::Later`]).
    commits_not_in_base: Option<u64>,
    /// Where its own history meets the base (squash detection only).
    fork: Option<crate::repo::Oid>,
}

/// Read every tip (its facts, merged or not, its own commits, its fork point): on every core
/// for a plan (gix), on one for a re-derivation (libgit2; see `repo::parallel`).
/// A tip whose commit cannot be read is an `Err` in its place; a broken history fails all.
fn read_tips(
    l: &Lookups,
    tips: &[crate::repo::Oid],
    all_facts: bool,
    count: Count,
    progress: &dyn Progress,
) -> Result<Vec<Result<Tip>>> {
    let (reachable, want_squash, reads, beyond) = (&l.reachable, l.want_squash, l.reads, &l.beyond);
    let noted = &l.tip_facts;
    // Branches at one commit (a release's branches, copies, ones never committed to) read it
    // once.
    let mut index: HashMap<crate::repo::Oid, usize> = HashMap::with_capacity(tips.len());
    let mut unique = Vec::with_capacity(tips.len());
    for &oid in tips {
        index.entry(oid).or_insert_with(|| {
            unique.push(oid);
            unique.len() - 1
        });
    }
    progress.begin("observed branches", unique.len() as u64);
    let readings = l.repo.in_parallel(&unique, reads.into(), |repo, &oid| {
        progress.advance(1);
        let merged = reachable.contains(oid);
        let read = || match noted.get(&oid) {
            Some(noted) => Ok(noted.clone()),
            None => repo.commit_facts_with(oid, reads),
        };
        let facts = match (merged || all_facts).then(read) {
            None => None,
            Some(Ok(f)) => Some(f),
            Some(Err(e)) => return Ok(Err(e)),
        };
        if merged {
            return Ok(Ok(Tip {
                facts,
                merged,
                commits_not_in_base: Some(0),
                fork: None,
            }));
        }
        // Without its facts, the tip must still be a commit: one that is not is skipped as
        // unreadable, with the same words, whatever the criteria.
        if count == Count::Later {
            let known = facts.is_some() || (reads == Reads::Fast && repo.is_commit_fast(oid) == Some(true));
            if !known && let Err(e) = repo.commit_facts(oid) {
                return Ok(Err(e));
            }
            return Ok(Ok(Tip {
                facts,
                merged,
                commits_not_in_base: None,
                fork: None,
            }));
        }
        let parents = repo.parents(reads)?;
        let first = match parents.of(oid) {
            Ok(ps) => ps,
            Err(e) => match facts {
                Some(_) => return Err(e),
                None => return Ok(Err(repo.commit_facts(oid).err().unwrap_or(e))),
            },
        };
        let unmerged = crate::repo::unmerged_after(&parents, beyond, oid, first, reachable)?;
        let fork = if want_squash {
            repo.fork_point(reachable, oid, &unmerged.boundary)
        } else {
            None
        };
        Ok(Ok(Tip {
            facts,
            merged,
            commits_not_in_base: Some(unmerged.commits),
            fork,
        }))
    })?;
    Ok(tips.iter().map(|oid| readings[index[oid]].clone()).collect())
}

/// Count the commits not in the base of every observed branch left uncounted
/// ([`Count::Later`]) that a selected criterion selects: whether deleting it loses work,
/// and how much, decides its verdict and is what the reviewer reads. The others stay
/// uncounted (`not_stale`, "not merged into base").
fn count_selected(
    l: &Lookups,
    inputs: &StaleBranchesInputs,
    observed: &mut [(Observed, Option<crate::repo::Oid>)],
    now: OffsetDateTime,
) -> Result<()> {
    let todo: Vec<(usize, crate::repo::Oid)> = observed
        .iter()
        .enumerate()
        .filter(|(_, (o, _))| o.commits_not_in_base.is_none() && !criteria_met(inputs, o, now).is_empty())
        .map(|(i, (o, _))| Ok((i, crate::repo::Oid::from_str(&o.oid)?)))
        .collect::<Result<_>>()?;
    if todo.is_empty() {
        return Ok(());
    }
    let (reachable, reads, beyond) = (&l.reachable, l.reads, &l.beyond);
    let counts = l.repo.in_parallel(&todo, reads.into(), |repo, &(_, oid)| {
        let parents = repo.parents(reads)?;
        let first = parents.of(oid)?;
        Ok(crate::repo::unmerged_after(&parents, beyond, oid, first, reachable)?.commits)
    })?;
    for ((i, _), n) in todo.into_iter().zip(counts) {
        observed[i].0.commits_not_in_base = Some(n);
    }
    Ok(())
}

/// Observe one branch that passed `screen`: its history (read by `read_tips`), its config.
fn observe_one(
    l: &mut Lookups,
    refname: &str,
    oid: crate::repo::Oid,
    tip: Tip,
) -> Result<(Observed, Option<crate::repo::Oid>)> {
    let name = refname.trim_start_matches("refs/heads/");
    let entries = l.config.remove(name).unwrap_or_default();
    let upstream = upstream_of(l, refname, &entries)?;
    let config = entries
        .into_iter()
        .map(|(key, value)| ConfigEntry { key, value })
        .collect();
    let observed = Observed {
        refname: refname.to_string(),
        oid: oid.to_string(),
        facts: tip
            .facts
            .ok_or_else(|| Error::internal(format!("the facts of {oid} were not read")))?,
        merged: tip.merged,
        commits_not_in_base: tip.commits_not_in_base,
        squash_merged: None,
        squashed_into: None,
        upstream,
        config,
        tag: None,
    };
    Ok((observed, tip.fork))
}

/// One planned resource whose state differs now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Drift {
    #[serde(rename = "ref")]
    pub refname: String,
    pub field: String,
    pub planned: String,
    pub now: String,
}

/// Re-derive the planned branches from the repository as it is now, with the plan's own
/// inputs: each must still exist at its planned id, pass every screen that made it eligible
/// (valid name in `refs/heads/`, not the base, not checked out here or in any worktree, not
/// protected, matched, not excluded), be classified for deletion again, and have the facts
/// the plan states (`compare`). A base that moved forward is not a difference; a planned
/// reason that no longer holds, or more work lost than planned, is.
pub fn recheck(
    repo: &Repo,
    inputs: &StaleBranchesInputs,
    planned: &[Resource],
    source: Branches,
    base_oid: crate::repo::Oid,
    now: OffsetDateTime,
) -> Result<Vec<Drift>> {
    let patterns = Patterns::compile(inputs)?;
    let checked_out = match source {
        Branches::Local => repo.checked_out()?,
        Branches::Remote(r) => CheckedOut::remote(r.head.as_deref()),
    };
    let want_squash = planned
        .iter()
        .any(|a| a.reasons.contains(&Criterion::SquashMerged));
    if want_squash {
        refuse_partial_clone(repo)?;
    }
    let mut drifts = Vec::new();
    let targets = match source {
        Branches::Local => repo.ref_targets(planned.iter().map(|a| a.refname.as_str()))?,
        Branches::Remote(r) => planned
            .iter()
            .filter_map(|a| Some((a.refname.clone(), r.target(&a.refname)?)))
            .collect(),
    };
    let mut candidates = Vec::new();
    for a in planned {
        let Some(&oid) = targets.get(&a.refname) else {
            drifts.push(Drift::new(a, "oid", a.oid.clone(), "(deleted)".into()));
            continue;
        };
        if oid.to_string() != a.oid {
            drifts.push(Drift::new(a, "oid", a.oid.clone(), oid.to_string()));
            continue;
        }
        let branch = BranchRef {
            refname: a.refname.clone(),
            valid: a.refname.starts_with("refs/heads/") && crate::repo::is_valid_refname(&a.refname),
            oid: Some(oid),
        };
        if let Some((reason, detail)) = screen(&branch, &inputs.base, &checked_out, &patterns) {
            drifts.push(Drift::not_eligible(a, reason, detail));
            continue;
        }
        candidates.push((a.refname.as_str(), oid));
    }
    let tips: Vec<crate::repo::Oid> = candidates.iter().map(|(_, oid)| *oid).collect();
    let mut lookups = Lookups::new(repo, source, base_oid, &tips, want_squash, Reads::Verified)?;
    let readings = read_tips(&lookups, &tips, true, Count::All, &crate::ops::progress::Silent)?;
    let mut observed = Vec::new();
    for ((refname, oid), reading) in candidates.into_iter().zip(readings) {
        observed.push(observe_one(&mut lookups, refname, oid, reading?)?);
    }
    if want_squash {
        detect_squash_merges(
            repo,
            Reads::Verified,
            &lookups.reachable,
            &mut observed,
            &crate::ops::progress::Silent,
        )?;
    }
    let by_name: HashMap<&str, &Resource> = planned.iter().map(|a| (a.refname.as_str(), a)).collect();
    for (o, _) in &observed {
        let Some(a) = by_name.get(o.refname.as_str()) else {
            continue;
        };
        drifts.extend(rejudge(inputs, a, o, now));
    }
    drifts.extend(recheck_people_not_in_base(repo, &lookups.reachable, planned)?);
    Ok(drifts)
}

/// Classify a planned resource's fresh observation with the plan's inputs: the differences
/// from the plan, or why it would not be planned now (its reasons then, as the plan's).
pub fn rejudge(
    inputs: &StaleBranchesInputs,
    planned: &Resource,
    o: &Observed,
    now: OffsetDateTime,
) -> Vec<Drift> {
    match classify(inputs, o, now) {
        Verdict::Delete(now_a) => compare(planned, &now_a),
        Verdict::Skip(reason, detail) => {
            let why = match detail {
                Some(d) => format!("{}: {d}", reason.describe()),
                None => reason.describe().to_string(),
            };
            vec![Drift::new(
                planned,
                "reasons",
                reason_names(&planned.reasons),
                format!(
                    "{} (not planned: {why})",
                    reason_names(&criteria_met(inputs, o, now))
                ),
            )]
        }
    }
}

fn reason_names(v: &[Criterion]) -> String {
    match v {
        [] => "(none)".to_string(),
        v => v.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", "),
    }
}

impl Drift {
    fn new(a: &Resource, field: &str, planned: String, now: String) -> Drift {
        Drift {
            refname: a.refname.clone(),
            field: field.to_string(),
            planned,
            now,
        }
    }

    /// A planned resource that the operation, run again now, would not plan.
    pub fn not_eligible(a: &Resource, reason: SkipReason, detail: Option<String>) -> Drift {
        let why = match detail {
            Some(d) => format!("{} ({d})", reason.describe()),
            None => reason.describe().to_string(),
        };
        Drift::new(a, "eligible", "delete".into(), format!("not planned: {why}"))
    }
}

/// Every difference between a planned resource and the same resource classified now. Each
/// field of `Resource`, and of each kind's facts, is named here (the destructuring and the
/// match make a new field or a new kind a compile error until it is decided). Facts fixed by the object id must be exactly what the plan says:
/// review routing (by author, by risk) and the reviewer relied on them. What the base's
/// moving forward changes is judged by direction: every planned reason must still hold (a
/// squash-merged branch since merged for real gains one: fine), and no more work may be lost
/// than the plan says.
pub fn compare(planned: &Resource, now: &Resource) -> Vec<Drift> {
    let Resource {
        refname: _,
        oid,
        reasons,
        last_commit_time,
        author,
        subject,
        facts,
    } = planned;
    let mut out = Vec::new();
    let mut differ = |field: &str, p: String, n: String| {
        if p != n {
            out.push(Drift::new(planned, field, p, n));
        }
    };
    if !reasons.iter().all(|r| now.reasons.contains(r)) {
        differ("reasons", reason_names(reasons), reason_names(&now.reasons));
    }
    differ("oid", oid.clone(), now.oid.clone());
    differ(
        "last_commit_time",
        last_commit_time.unix_timestamp().to_string(),
        now.last_commit_time.unix_timestamp().to_string(),
    );
    differ("author", author.email.clone(), now.author.email.clone());
    differ("author_name", author.name.clone(), now.author.name.clone());
    differ("subject", subject.clone(), now.subject.clone());
    let lost = |l: bool, n: u64| {
        if l {
            format!("{n} commits")
        } else {
            "nothing".into()
        }
    };
    let (was, is) = (planned.history(), now.history());
    if is.loses_work && (!was.loses_work || is.commits_not_in_base > was.commits_not_in_base) {
        differ(
            "loses_work",
            lost(was.loses_work, was.commits_not_in_base),
            lost(true, is.commits_not_in_base),
        );
    }
    let show_tag = |t: Option<&TagObject>| {
        t.map_or("(none)".to_string(), |t| {
            format!(
                "annotated={} signed={} commit={}",
                t.annotated, t.signed, t.commit
            )
        })
    };
    match (facts, &now.facts) {
        (ResourceFacts::Branch(p), ResourceFacts::Branch(n)) => {
            let BranchFacts {
                history: _,
                upstream,
                config,
                // Re-derived by `recheck_people_not_in_base` (one walk for all branches).
                people_not_in_base: _,
                squashed_into,
            } = p;
            // The evidence the reviewer read must be what guardctl finds now, while the branch
            // is still judged squash-merged (merged for real since: no evidence needed).
            if planned.reasons.contains(&Criterion::SquashMerged)
                && now.reasons.contains(&Criterion::SquashMerged)
            {
                let show = |s: &Option<SquashedInto>| {
                    s.as_ref()
                        .map_or("(none)".to_string(), |s| format!("{} {}", s.commit, s.subject))
                };
                differ("squashed_into", show(squashed_into), show(&n.squashed_into));
            }
            let show_config = |c: &[ConfigEntry]| {
                c.iter()
                    .map(|e| format!("{}={}", e.key, e.value))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            differ("config", show_config(config), show_config(&n.config));
            // Whether the upstream is gone is a reason (compared above), not a fact of its own.
            let show_upstream = |u: &Option<Upstream>| {
                u.as_ref().map_or("(none)".to_string(), |u| {
                    format!("{} {} {:?}", u.remote, u.merge, u.tracking_ref)
                })
            };
            differ("upstream", show_upstream(upstream), show_upstream(&n.upstream));
        }
        (ResourceFacts::Tag(p), ResourceFacts::Tag(n)) => {
            let TagFacts { history: _, object } = p;
            differ("tag", show_tag(Some(object)), show_tag(Some(&n.object)));
        }
        // A ref that changed kind (a plan's kinds come from its operation: only a forged plan).
        (ResourceFacts::Branch(_), ResourceFacts::Tag(n)) => {
            differ("tag", show_tag(None), show_tag(Some(&n.object)));
        }
        (ResourceFacts::Tag(p), ResourceFacts::Branch(_)) => {
            differ("tag", show_tag(Some(&p.object)), show_tag(None));
        }
    }
    out
}

/// Fill `people_not_in_base` (every author and committer of the commits not in the base) of
/// each planned branch holding such commits: review routes match any of them. A pass over
/// the planned branches after classification; a plan of merged branches costs nothing.
pub fn fill_people_not_in_base(
    repo: &Repo,
    base_oid: crate::repo::Oid,
    affected: &mut [Resource],
) -> Result<()> {
    if affected.iter().all(|a| a.commits_not_in_base() == 0) {
        return Ok(());
    }
    // Plan time: `recheck_people_not_in_base` re-derives it with the objects.
    let reachable = repo.history(base_oid, Reads::Fast)?;
    for a in affected.iter_mut() {
        let oid = crate::repo::Oid::from_str(&a.oid)?;
        match &mut a.facts {
            ResourceFacts::Branch(b) if !reachable.contains(oid) => {
                b.people_not_in_base = repo.people_not_in(oid, &reachable)?;
            }
            // Merged: routed by the tip's author. A tag routes by its own author alone.
            ResourceFacts::Branch(_) | ResourceFacts::Tag(_) => {}
        }
    }
    Ok(())
}

/// The `people_not_in_base` each planned branch states, against the repository now (from
/// the tip's object id, whatever else the plan claims): routing relied on it, and a planner
/// signs whatever they like. Each difference is drift. `reachable` is the base's history as
/// `recheck` read it: one walk serves both.
fn recheck_people_not_in_base(
    repo: &Repo,
    reachable: &Reachable,
    affected: &[Resource],
) -> Result<Vec<Drift>> {
    let mut drifts = Vec::new();
    for a in affected {
        let oid = crate::repo::Oid::from_str(&a.oid)
            .ok()
            .filter(|o| repo.has_object(*o));
        let now = match oid {
            None => vec!["(the commit is not in this clone)".to_string()],
            Some(oid) if reachable.contains(oid) => vec![],
            Some(oid) => repo.people_not_in(oid, reachable)?,
        };
        if now != a.people_not_in_base() {
            drifts.push(Drift {
                refname: a.refname.clone(),
                field: "people_not_in_base".into(),
                planned: a.people_not_in_base().join(" "),
                now: now.join(" "),
            });
        }
    }
    Ok(drifts)
}

/// Squash detection diffs the files each branch and each base commit change, and a partial
/// clone leaves file contents on its promisor remote: libgit2 cannot fetch them, and the
/// detection stopped minutes in with "object not found". Refused before any work instead,
/// saying what to do; `plan` never fetches (the preview path writes nothing).
fn refuse_partial_clone(repo: &Repo) -> Result<()> {
    let Some((remote, filter)) = repo.partial_clone()? else {
        return Ok(());
    };
    // The hint is a command to copy: a name that is not plain becomes a placeholder.
    let plain = |n: &str| {
        n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let (remote, name) = match plain(&remote) {
        true => (remote.clone(), remote),
        false => (crate::text::safe(&remote), "<remote>".to_string()),
    };
    let filter = filter
        .map(|f| format!(", filter `{}`", crate::text::safe(&f)))
        .unwrap_or_default();
    Err(Error::usage(format!(
        "--squash-merged compares the files branches change, and this is a partial clone (promisor remote `{remote}`{filter}) that has left file contents on the remote"
    ))
    .with_hint(format!(
        "plan without --squash-merged (merged branches are found from history alone), or make this a full clone first: `git -c remote.{name}.partialclonefilter= fetch --refetch {name} && git config --unset remote.{name}.promisor`"
    )))
}

/// A branch is squash-merged when its whole change (fork point to tip) is a single commit
/// of the base made after its fork (not an ancestor of it), found by patch-id:
///
/// - git's patch-id (3 lines of context) equal: the squash commit is exactly the change; or
/// - the same lines added in the same files (main changed the replaced lines, or lines next
///   to them, between the fork and the squash), **and** that commit holds the branch's
///   change: merging the tip into it changes nothing (a tree merge from the fork point: no
///   conflict, that commit's tree), or, where that merge conflicts because main had changed
///   lines next to the branch's, every line the branch wrote is in it where the branch
///   wrote it, and it differs from the tip only in lines the branch never changed
///   (`Repo::change_is_in`, whose comment argues why that is sound). Both the candidate and
///   the confirmation must agree, so a commit with the same lines somewhere else is never
///   taken for the branch's work. (Into that commit, not into today's base: main changing
///   the same lines later is no reason to keep a branch whose work landed.)
///
/// The base's patch-ids are computed once for all branches, for the commits at or above the
/// lowest fork point's level (a squash commit descends from the fork it was forked at), in
/// history order; then one diff per branch. A plan ([`Reads::Fast`]) reads trees and blobs
/// through gix on every core; a re-derivation ([`Reads::Verified`]) through libgit2 on one
/// (`repo::change`, `repo::parallel`). Cost: the base's history since the oldest fork plus
/// the branches' own changes, never branches × history.
fn detect_squash_merges(
    repo: &Repo,
    reads: Reads,
    reachable: &Reachable,
    observed: &mut [(Observed, Option<crate::repo::Oid>)],
    progress: &dyn Progress,
) -> Result<()> {
    let todo: Vec<(usize, crate::repo::Oid, crate::repo::Oid)> = observed
        .iter()
        .enumerate()
        .filter(|(_, (o, _))| !o.merged)
        .filter_map(|(i, (o, fork))| Some((i, (*fork)?, crate::repo::Oid::from_str(&o.oid).ok()?)))
        .collect();
    for (o, fork) in observed.iter_mut() {
        if !o.merged && fork.is_none() {
            o.squash_merged = Some(false);
        }
    }
    let Some(min_level) = todo.iter().filter_map(|(_, f, _)| reachable.level(*f)).min() else {
        return Ok(());
    };
    let window = reachable.single_parent_commits_from(min_level);
    progress.begin("patch-ids of base commits", window.len() as u64);
    // A plan reads trees and blobs through gix, on every core; a re-derivation through
    // libgit2, on one (`repo::change`).
    let ids = repo.in_parallel(&window, Reader::from(reads), |r, &(commit, parent)| {
        progress.advance(1);
        r.change_ids(parent, commit, reads)
    })?;
    let (mut exact, mut added): (HashMap<_, Vec<_>>, HashMap<_, Vec<_>>) = Default::default();
    for (&(commit, _), id) in window.iter().zip(ids) {
        if let Some(id) = id {
            exact.entry(id.exact).or_default().push(commit);
            added.entry(id.added).or_default().push(commit);
        }
    }
    progress.begin("compared branches with the base", todo.len() as u64);
    // Each verdict is the base commit that carries the branch's change: the first in the
    // window's (history) order, so planning and re-deriving name the same one.
    let verdicts = repo.in_parallel(&todo, Reader::from(reads), |r, &(_, fork, tip)| {
        progress.advance(1);
        let Some(id) = r.change_ids(fork, tip, reads)? else {
            return Ok(None);
        };
        let after_fork = |c: &&crate::repo::Oid| !reachable.is_ancestor(**c, fork);
        if let Some(&c) = exact
            .get(&id.exact)
            .and_then(|found| found.iter().find(|c| after_fork(c)))
        {
            return Ok(Some(c));
        }
        for &c in added.get(&id.added).into_iter().flatten().filter(after_fork) {
            if r.merge_changes_nothing(fork, c, tip)? || r.change_is_in(fork, tip, c)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    })?;
    for ((i, _, _), found) in todo.into_iter().zip(verdicts) {
        let o = &mut observed[i].0;
        o.squash_merged = Some(found.is_some());
        o.squashed_into = match found {
            Some(c) => Some(SquashedInto {
                commit: c.to_string(),
                subject: repo.commit_facts(c)?.subject,
            }),
            None => None,
        };
    }
    Ok(())
}

fn upstream_of(l: &mut Lookups, refname: &str, entries: &[(String, String)]) -> Result<Option<Upstream>> {
    let last = |suffix: &str| {
        entries
            .iter()
            .rev()
            .find(|(k, _)| k.ends_with(suffix))
            .map(|(_, v)| v.clone())
    };
    let (Some(remote), Some(merge)) = (last(".remote"), last(".merge")) else {
        return Ok(None);
    };
    if l.upstreams.is_none() {
        l.upstreams = Some(l.repo.upstream_refs()?);
    }
    let tracking = l.upstreams.as_ref().and_then(|u| u.get(refname));
    Ok(Some(Upstream {
        remote,
        merge,
        tracking_ref: tracking.map(|(t, _)| t.clone()),
        gone: !tracking.is_some_and(|(_, exists)| *exists),
    }))
}

/// The error for a repository that no longer matches the plan (`drift`, 10), naming each
/// drifted resource escaped with what was planned and what is there now.
pub fn drift_error(drifts: &[Drift]) -> Error {
    let mut e = Error::new(
        crate::error::Kind::Drift,
        format!(
            "the repository no longer matches the plan ({} {} drifted); nothing was changed",
            drifts.len(),
            crate::plan::derive::plural(drifts.len() as u64, "resource", "resources")
        ),
    );
    for d in drifts {
        e = e.caused_by(format!(
            "{} {}: planned {}, now {}",
            crate::text::safe(&d.refname),
            d.field,
            crate::text::safe(&d.planned),
            crate::text::safe(&d.now)
        ));
    }
    e.with_details(serde_json::json!({"drift": drifts}))
        .with_hint("re-run `guardctl plan` and have the new plan approved")
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-06-01 0:00 UTC);

    fn inputs(criteria: &[Criterion], include_unmerged: bool) -> StaleBranchesInputs {
        StaleBranchesInputs {
            base: "refs/heads/main".into(),
            criteria: criteria.to_vec(),
            older_than_secs: Some(90 * 86_400),
            include_unmerged,
            match_globs: vec![],
            exclude: vec![],
            protect: vec!["main".into(), "release/*".into()],
        }
    }

    fn obs(merged: bool, unmerged: u64, age_days: i64, gone: Option<bool>) -> Observed {
        Observed {
            refname: "refs/heads/x".into(),
            oid: "a".repeat(40),
            facts: CommitFacts {
                time: NOW.unix_timestamp() - age_days * 86_400,
                author_name: "A".into(),
                author_email: "a@x".into(),
                subject: "s".into(),
            },
            merged,
            commits_not_in_base: Some(unmerged),
            squash_merged: None,
            squashed_into: None,
            upstream: gone.map(|g| Upstream {
                remote: "origin".into(),
                merge: "refs/heads/x".into(),
                tracking_ref: Some("refs/remotes/origin/x".into()),
                gone: g,
            }),
            config: vec![],
            tag: None,
        }
    }

    fn reasons(v: Verdict) -> Result<Vec<Criterion>, SkipReason> {
        match v {
            Verdict::Delete(a) => Ok(a.reasons),
            Verdict::Skip(r, _) => Err(r),
        }
    }

    #[test]
    fn merged_branch_is_planned_unmerged_is_not_stale() {
        let i = inputs(&[Criterion::Merged], false);
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 1, None), NOW)),
            Ok(vec![Criterion::Merged])
        );
        assert_eq!(
            reasons(classify(&i, &obs(false, 2, 1, None), NOW)),
            Err(SkipReason::NotStale)
        );
    }

    /// `run` skips an unmerged branch without reading its tip when `needs_facts_unmerged` says
    /// so: whatever its facts, `classify` must skip it with those very words.
    #[test]
    fn an_unmerged_branch_is_judged_without_its_facts_only_under_merged_alone() {
        for include_unmerged in [false, true] {
            let i = inputs(&[Criterion::Merged], include_unmerged);
            assert!(!needs_facts_unmerged(&i));
            for (n, age, gone) in [(1, 1, None), (3, 4000, Some(true)), (7, 0, Some(false))] {
                match classify(&i, &obs(false, n, age, gone), NOW) {
                    Verdict::Skip(reason, detail) => {
                        assert_eq!(reason, SkipReason::NotStale);
                        assert_eq!(detail, Some(not_merged()));
                    }
                    Verdict::Delete(a) => panic!("planned: {:?}", a.reasons),
                }
            }
        }
        for other in [Criterion::SquashMerged, Criterion::Gone, Criterion::OlderThan] {
            assert!(needs_facts_unmerged(&inputs(&[Criterion::Merged, other], false)));
            assert!(needs_facts_unmerged(&inputs(&[other], false)));
        }
    }

    /// `count_selected` counts every unmerged branch a criterion selects; one it missed must
    /// still never be planned (deleting it would lose an unknown amount of work).
    #[test]
    fn an_uncounted_unmerged_branch_is_never_planned() {
        let i = inputs(&[Criterion::Gone, Criterion::OlderThan], true);
        let mut o = obs(false, 3, 400, Some(true));
        o.commits_not_in_base = None;
        match classify(&i, &o, NOW) {
            Verdict::Skip(reason, detail) => {
                assert_eq!(reason, SkipReason::Unmerged);
                assert_eq!(detail.as_deref(), Some("not merged into base"));
            }
            Verdict::Delete(a) => panic!("planned: {:?}", a.reasons),
        }
        o.commits_not_in_base = Some(3);
        assert!(matches!(classify(&i, &o, NOW), Verdict::Delete(_)));
    }

    #[test]
    fn weak_criteria_never_plan_unmerged_work_without_include_unmerged() {
        let i = inputs(&[Criterion::Gone, Criterion::OlderThan], false);
        assert_eq!(
            reasons(classify(&i, &obs(false, 3, 400, Some(true)), NOW)),
            Err(SkipReason::Unmerged)
        );
        let i = inputs(&[Criterion::Gone, Criterion::OlderThan], true);
        match classify(&i, &obs(false, 3, 400, Some(true)), NOW) {
            Verdict::Delete(a) => {
                assert!(a.loses_work());
                assert_eq!(a.reasons, vec![Criterion::Gone, Criterion::OlderThan]);
            }
            Verdict::Skip(r, _) => panic!("skipped: {r:?}"),
        }
    }

    #[test]
    fn gone_needs_a_gone_upstream_and_older_than_a_real_age() {
        let i = inputs(&[Criterion::Gone], false);
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 1, Some(false)), NOW)),
            Err(SkipReason::NotStale)
        );
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 1, None), NOW)),
            Err(SkipReason::NotStale)
        );
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 1, Some(true)), NOW)),
            Ok(vec![Criterion::Gone])
        );
        let i = inputs(&[Criterion::OlderThan], false);
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 90, None), NOW)),
            Err(SkipReason::NotStale)
        );
        assert_eq!(
            reasons(classify(&i, &obs(true, 0, 91, None), NOW)),
            Ok(vec![Criterion::OlderThan])
        );
    }

    #[test]
    fn squash_merged_branch_loses_no_work() {
        let i = inputs(&[Criterion::SquashMerged], false);
        let mut o = obs(false, 4, 1, None);
        o.squash_merged = Some(true);
        match classify(&i, &o, NOW) {
            Verdict::Delete(a) => assert!(!a.loses_work()),
            Verdict::Skip(r, _) => panic!("skipped: {r:?}"),
        }
    }

    fn branch(name: &str) -> BranchRef {
        BranchRef {
            refname: format!("refs/heads/{name}"),
            valid: true,
            oid: Some(crate::repo::Oid::ZERO_SHA1),
        }
    }

    #[test]
    fn screen_applies_reasons_in_order() {
        let mut i = inputs(&[Criterion::Merged], false);
        i.match_globs = vec!["feature/*".into()];
        i.exclude = vec!["feature/keep-*".into()];
        let p = Patterns::compile(&i).unwrap();
        let mut co = CheckedOut {
            here: Some("refs/heads/feature/here".into()),
            ..Default::default()
        };
        co.elsewhere
            .insert("refs/heads/feature/wt".into(), "worktree w".into());
        let reason = |b: &BranchRef| screen(b, &i.base, &co, &p).map(|(r, _)| r);
        assert_eq!(reason(&branch("main")), Some(SkipReason::Base));
        assert_eq!(reason(&branch("feature/here")), Some(SkipReason::CheckedOut));
        assert_eq!(reason(&branch("feature/wt")), Some(SkipReason::Worktree));
        assert_eq!(reason(&branch("release/1.0")), Some(SkipReason::Protected));
        assert_eq!(reason(&branch("bugfix/x")), Some(SkipReason::NotMatched));
        assert_eq!(
            reason(&branch("feature/a/b")),
            Some(SkipReason::NotMatched),
            "* stops at /"
        );
        assert_eq!(reason(&branch("feature/keep-me")), Some(SkipReason::Excluded));
        assert_eq!(reason(&branch("feature/x")), None);
        let invalid = BranchRef {
            valid: false,
            ..branch("feature/x")
        };
        assert_eq!(reason(&invalid), Some(SkipReason::InvalidName));
    }

    #[test]
    fn normalize_sorts_dedups_and_defaults_to_merged() {
        let req = Request {
            named: false,
            protect: vec!["b".into(), "a".into(), "a".into()],
            exclude: vec!["z".into(), "y".into()],
            ..Default::default()
        };
        let n = normalize(&req, "refs/heads/main".into(), &["main".into()]);
        assert_eq!(n.criteria, vec![Criterion::Merged]);
        assert_eq!(n.protect, vec!["a", "b", "main"]);
        assert_eq!(n.exclude, vec!["y", "z"]);
    }
}
