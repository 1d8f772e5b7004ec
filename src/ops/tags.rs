//! The `tags` operation: which tags, local or a remote's, to delete, and why.
//!
//! Tags are chosen by name (`--match`, `--exclude`), age (`--older-than`: the tagger's date,
//! else the commit's) and kind (`--annotated`, `--lightweight`). Signed tags are never planned
//! unless `--include-signed`. A tag whose commit no branch reaches is the only name of that
//! history: like an unmerged branch, it is planned only with `--include-unmerged`, and it is
//! flagged as losing work (the backup keeps it for the retention period). Screening and
//! classification are shared with `stale_branches`.

use super::stale_branches::{self, Drift, Observed, Outcome, Patterns, Verdict};
use crate::error::{Error, Result};
use crate::plan::model::{Criterion, Resource, SkipReason, Skipped, TagKind, TagObject, TagsInputs};
use crate::repo::{BranchRef, CheckedOut, CommitFacts, RemoteRefs, Repo};
use std::time::Duration;
use time::OffsetDateTime;

/// What `base` says for tags: commits are judged against every branch.
pub const EVERY_BRANCH: &str = crate::plan::model::TAG_BASE;

/// What the user asked for, before normalisation.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub remote: Option<String>,
    pub annotated: bool,
    pub lightweight: bool,
    pub include_signed: bool,
    pub include_unmerged: bool,
    pub older_than: Option<Duration>,
    pub match_globs: Vec<String>,
    pub exclude: Vec<String>,
    pub protect: Vec<String>,
}

/// Normalised inputs. Deleting every tag is never the default: a name or an age is required.
pub fn normalize(req: &Request, policy_protected: &[String]) -> Result<TagsInputs> {
    if req.match_globs.is_empty() && req.older_than.is_none() {
        return Err(Error::usage(
            "say which tags: --match GLOB and/or --older-than DUR",
        ));
    }
    let request = stale_branches::Request {
        base: None,
        merged: false,
        squash_merged: false,
        gone: false,
        older_than: req.older_than,
        include_unmerged: req.include_unmerged,
        match_globs: req.match_globs.clone(),
        exclude: req.exclude.clone(),
        protect: req.protect.clone(),
        named: false,
    };
    let mut selection = stale_branches::normalize(&request, EVERY_BRANCH.into(), policy_protected);
    // An age alone is the criterion; a name alone, or with an age, selects by name too.
    selection.criteria = match (req.match_globs.is_empty(), req.older_than.is_some()) {
        (false, false) => vec![Criterion::Matched],
        _ => vec![Criterion::OlderThan],
    };
    Ok(TagsInputs {
        remote: req.remote.clone(),
        kind: match (req.annotated, req.lightweight) {
            (true, false) => TagKind::Annotated,
            (false, true) => TagKind::Lightweight,
            _ => TagKind::All,
        },
        include_signed: req.include_signed,
        selection,
    })
}

/// Whose tags: this repository's, or a remote's as `git ls-remote` listed them.
#[derive(Clone, Copy)]
pub enum Tags<'a> {
    Local,
    Remote(&'a RemoteRefs),
}

impl<'a> From<Option<&'a RemoteRefs>> for Tags<'a> {
    fn from(remote: Option<&'a RemoteRefs>) -> Self {
        remote.map_or(Tags::Local, Tags::Remote)
    }
}

impl Tags<'_> {
    fn list(self, repo: &Repo) -> Result<(Vec<BranchRef>, Vec<crate::repo::Oid>)> {
        Ok(match self {
            Tags::Local => (
                repo.local_tags()?,
                repo.local_branches()?.iter().filter_map(|b| b.oid).collect(),
            ),
            Tags::Remote(r) => (r.tags.clone(), r.branches.iter().filter_map(|b| b.oid).collect()),
        })
    }
}

/// Observe and classify every tag. Read-only.
pub fn run(repo: &Repo, inputs: &TagsInputs, source: Tags, now: OffsetDateTime) -> Result<Outcome> {
    let patterns = Patterns::compile(&inputs.selection)?;
    let (tags, tips) = source.list(repo)?;
    let reachable = repo.reachable_from_all(&tips)?;
    let none_checked_out = CheckedOut::default();
    let (mut affected, mut skipped) = (Vec::new(), Vec::new());
    for t in &tags {
        let skip = |reason, detail| Skipped {
            refname: t.refname.clone(),
            oid: t.oid.map(|o| o.to_string()),
            reason,
            detail,
        };
        if let Some((reason, detail)) =
            stale_branches::screen(t, &inputs.selection.base, &none_checked_out, &patterns)
        {
            skipped.push(skip(reason, detail));
            continue;
        }
        let Some(oid) = t.oid else { continue };
        match observe(repo, inputs, &reachable, &t.refname, oid) {
            Err(e) => skipped.push(skip(SkipReason::Unreadable, Some(e.causes.join("; ")))),
            Ok(Err((reason, detail))) => skipped.push(skip(reason, detail)),
            Ok(Ok(o)) => match stale_branches::classify(&inputs.selection, &o, now) {
                Verdict::Delete(a) => affected.push(*a),
                Verdict::Skip(reason, detail) => skipped.push(skip(reason, detail)),
            },
        }
    }
    skipped.sort_by(|a, b| a.refname.cmp(&b.refname));
    Ok(Outcome { affected, skipped })
}

type Screened = std::result::Result<Observed, (SkipReason, Option<String>)>;

/// One tag's facts, or why its kind keeps it out.
fn observe(
    repo: &Repo,
    inputs: &TagsInputs,
    reachable: &crate::repo::Reachable,
    refname: &str,
    oid: crate::repo::Oid,
) -> Result<Screened> {
    let t = repo.tag_facts(oid)?;
    let wrong_kind = match inputs.kind {
        TagKind::All => false,
        TagKind::Annotated => !t.annotated,
        TagKind::Lightweight => t.annotated,
    };
    if wrong_kind {
        let kind = if t.annotated { "annotated" } else { "lightweight" };
        return Ok(Err((SkipReason::OtherKind, Some(kind.into()))));
    }
    if t.signed && !inputs.include_signed {
        return Ok(Err((SkipReason::Signed, None)));
    }
    let merged = reachable.contains(t.commit);
    let commits_not_in_base = if merged {
        0
    } else {
        repo.unmerged(t.commit, reachable)?.commits
    };
    Ok(Ok(Observed {
        refname: refname.to_string(),
        oid: oid.to_string(),
        facts: CommitFacts {
            time: t.time,
            author_name: t.name,
            author_email: t.email,
            subject: t.subject,
        },
        merged,
        commits_not_in_base: Some(commits_not_in_base),
        squash_merged: None,
        squashed_into: None,
        upstream: None,
        config: vec![],
        tag: Some(TagObject {
            annotated: t.annotated,
            signed: t.signed,
            commit: t.commit.to_string(),
        }),
    }))
}

/// Re-derive the planned tags from the repository (or the remote) as it is now, with the
/// plan's own inputs: each must still exist at its planned id, pass the screens (valid name
/// in `refs/tags/`, protected, matched, not excluded), be of the kind asked for, signed only
/// if allowed, classified for deletion again, and have the facts the plan states.
pub fn recheck(
    repo: &Repo,
    inputs: &TagsInputs,
    planned: &[Resource],
    source: Tags,
    now: OffsetDateTime,
) -> Result<Vec<Drift>> {
    let patterns = Patterns::compile(&inputs.selection)?;
    let (tags, tips) = source.list(repo)?;
    let reachable = repo.reachable_from_all(&tips)?;
    let none_checked_out = CheckedOut::default();
    let now_at: std::collections::HashMap<&str, crate::repo::Oid> = tags
        .iter()
        .filter_map(|t| Some((t.refname.as_str(), t.oid?)))
        .collect();
    let mut drifts = Vec::new();
    for a in planned {
        let drift = |now: String| Drift {
            refname: a.refname.clone(),
            field: "oid".into(),
            planned: a.oid.clone(),
            now,
        };
        let oid = match now_at.get(a.refname.as_str()) {
            None => {
                drifts.push(drift("(deleted)".into()));
                continue;
            }
            Some(o) if o.to_string() != a.oid => {
                drifts.push(drift(o.to_string()));
                continue;
            }
            Some(o) => *o,
        };
        let tag = BranchRef {
            refname: a.refname.clone(),
            valid: a.refname.starts_with("refs/tags/") && crate::repo::is_valid_refname(&a.refname),
            oid: Some(oid),
        };
        let screened =
            match stale_branches::screen(&tag, &inputs.selection.base, &none_checked_out, &patterns) {
                Some(why) => Err(why),
                None => observe(repo, inputs, &reachable, &a.refname, oid)?,
            };
        match screened {
            Ok(o) => drifts.extend(stale_branches::rejudge(&inputs.selection, a, &o, now)),
            Err((reason, detail)) => drifts.push(Drift::not_eligible(a, reason, detail)),
        }
    }
    Ok(drifts)
}
