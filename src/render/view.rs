//! The view of a plan: one struct built from the signed plan data, printed as JSON by
//! `--json` and rendered as text by `human`, so the two can never disagree.
//!
//! Every string that came from the repository is escaped here, once, so neither output
//! carries a raw control, bidi or invisible character.

use crate::duration::humanize;
use crate::plan::derive::plural;
use crate::plan::model::{
    Criterion, Operation, Plan, Resource, ResourceFacts, ReviewKind, SideEffectKind, SkipReason,
};
use crate::policy::ApprovalReport;
use crate::text::{Flag, flags, safe};
use serde::Serialize;
use time::OffsetDateTime;

/// Rows per page; plans with at most this many affected branches are shown whole.
pub const PAGE_SIZE: usize = 50;
/// Rows in the sample of a large plan.
const SAMPLE: usize = 10;
/// Names in each list of extremes.
const EXTREMES: usize = 3;
/// Characters of a commit subject shown.
const SUBJECT_CHARS: usize = 40;
/// Skipped branches listed before falling back to counts.
const SKIPPED_LISTED: usize = 50;

#[derive(Debug, Clone, Copy, Default)]
pub enum Paging {
    /// Whole when small; counts, a sample and the extremes when large.
    #[default]
    Auto,
    All,
    Page(usize),
}

#[derive(Debug, Serialize)]
pub struct ShowView {
    pub plan_id: String,
    pub plan_hash: String,
    pub summary: String,
    pub operation: String,
    /// What the plan deletes: `branch`/`branches` or `tag`/`tags`.
    pub resource: &'static str,
    pub resources: &'static str,
    pub repository: String,
    /// The remote whose branches are deleted (remote-branches only), and its URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    pub base: String,
    pub criteria: Vec<&'static str>,
    /// Every other input, as the flags that give it (patterns escaped).
    pub selection: Vec<String>,
    pub planner: PartyView,
    pub executor: PartyView,
    pub created_at: String,
    pub expires_at: String,
    pub expires_in_secs: i64,
    pub expired: bool,
    pub approvals: ApprovalsView,
    pub policy: PolicyView,
    pub risk: RiskView,
    pub total_affected: usize,
    pub counts_by_reason: Vec<Count>,
    pub rows: RowsView,
    pub extremes: Extremes,
    pub side_effects: Vec<String>,
    pub before_image: String,
    pub skipped: SkippedView,
    /// For an exec plan: the command and the preview's output (the manifest), paged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<super::since::SinceView>,
    /// For a plan bound to a remote, under the policy in force: `remote` (consumed there,
    /// `refs/guardctl/consumed/<id>`: one apply across every clone) or `clone` (the policy
    /// sets `[remote] consumed_marker = false`: consumed in the applying clone only).
    /// Absent for a local plan, or where that policy cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_on: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct PartyView {
    pub principal: Option<String>,
    pub key: Option<String>,
}

/// Where the plan stands on approvals, as `apply` would count them now.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApprovalsView {
    /// Every review group the policy routed the plan into, with its standing.
    pub groups: Vec<GroupView>,
    /// Distinct principals whose approval counts in at least one group.
    pub approved_by: Vec<String>,
    /// Distinct principals whose rejection counts (any one vetoes).
    pub rejected_by: Vec<String>,
    /// Approvals that verified but do not count, and why.
    pub not_counted: Vec<String>,
    /// Attached envelopes whose signature or payload is invalid.
    pub invalid: usize,
    /// Refs under the plan's `rejections/` on the team remote that cannot be verified, each
    /// with why (docs/remote.md): taken for a veto, `verify` and `apply` refuse the plan.
    pub blocked_by: Vec<String>,
    /// The planner's other live plans this clone has seen (`bulk.across_plans`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_of: Option<PartOfView>,
    /// What each counted approval and standing rejection said (`--comment`).
    pub comments: Vec<CommentView>,
    /// The plan changes nothing, so `apply` needs no approval (a rejection still stands).
    pub not_needed: bool,
}

/// "Part of N plans by alice totalling M": what the bulk class counts across plans.
#[derive(Debug, Clone, Serialize)]
pub struct PartOfView {
    /// This plan and the planner's other live plans.
    pub plans: usize,
    /// The resources they affect together.
    pub resources: u64,
    /// Whether they are all plans of this one's kind (resources all branches, or all tags).
    pub same_kind: bool,
    pub planner: String,
    /// The other plans' ids.
    pub others: Vec<String>,
    /// Whether they make this plan need the bulk group (listed with the other groups).
    pub needs_bulk: bool,
}

impl PartOfView {
    pub fn new(plan: &Plan, p: &crate::policy::across::PartOf) -> PartOfView {
        PartOfView {
            plans: p.plans,
            resources: p.resources,
            same_kind: p.same_kind,
            planner: safe(plan.planner.principal.as_deref().unwrap_or("(no principal)")),
            others: p.others.clone(),
            needs_bulk: p.group.is_some(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CommentView {
    pub principal: String,
    /// `approve` or `reject`.
    pub decision: &'static str,
    pub comment: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupView {
    pub name: String,
    /// `route`, `default` or `bulk`.
    pub kind: &'static str,
    /// Resource resources the group covers.
    pub resources: u64,
    pub required: u32,
    /// The policy's principal groups that may approve; empty = any principal but the planner.
    pub from: Vec<String>,
    pub approvers: Vec<String>,
    pub approved_by: Vec<String>,
    pub missing: u32,
}

impl GroupView {
    /// Who can still add an approval: the approvers who have not approved yet; `None` when
    /// any principal but the planner may.
    pub fn open_approvers(&self) -> Option<Vec<&str>> {
        (!self.approvers.is_empty()).then(|| {
            self.approvers
                .iter()
                .filter(|p| !self.approved_by.contains(p))
                .map(String::as_str)
                .collect()
        })
    }
}

impl ApprovalsView {
    /// The standing of a plan nobody has approved yet.
    pub fn unapproved(plan: &Plan) -> ApprovalsView {
        let report = crate::policy::evaluate_approvals(plan, "", &[], &[], 0, plan.created_at);
        ApprovalsView::new(plan, &report, 0)
    }

    pub fn new(plan: &Plan, report: &ApprovalReport, invalid: usize) -> ApprovalsView {
        let esc = |v: &[String]| v.iter().map(|p| safe(p)).collect::<Vec<_>>();
        ApprovalsView {
            groups: plan
                .review
                .iter()
                .zip(&report.groups)
                .map(|(g, s)| GroupView {
                    name: safe(&g.name),
                    kind: match g.kind {
                        ReviewKind::Route => "route",
                        ReviewKind::Default => "default",
                        ReviewKind::Bulk => "bulk",
                    },
                    resources: g.resources,
                    required: g.required,
                    from: esc(&g.from),
                    approvers: esc(&g.approvers),
                    approved_by: esc(&s.approved_by),
                    missing: s.missing,
                })
                .collect(),
            approved_by: esc(&report.approved_by),
            rejected_by: esc(&report.rejected_by),
            not_counted: report
                .ignored
                .iter()
                .map(|(p, why)| format!("{} ({})", safe(p), why.describe()))
                .collect(),
            invalid,
            blocked_by: Vec::new(),
            part_of: None,
            not_needed: crate::policy::changes_nothing(plan),
            comments: report
                .comments
                .iter()
                .map(|c| CommentView {
                    principal: safe(&c.principal),
                    decision: c.decision,
                    comment: safe(&c.comment),
                })
                .collect(),
        }
    }

    /// Only the default group, open to anyone: a one-line standing says it all.
    pub fn is_simple(&self) -> bool {
        matches!(self.groups.as_slice(), [g] if g.kind == "default" && g.from.is_empty())
    }

    /// "1/1", or "2/3 review groups" when the plan is routed.
    pub fn tally(&self) -> String {
        match self.groups.as_slice() {
            [g] if self.is_simple() => format!("{}/{}", g.approved_by.len(), g.required),
            groups => format!(
                "{}/{} review groups",
                groups.iter().filter(|g| g.missing == 0).count(),
                groups.len()
            ),
        }
    }
}

/// The policy a plan was made under, and whether it is still the one in force.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyView {
    pub source: String,
    pub hash: String,
    /// `in_force`, `changed`, `unreadable` or `unchecked` (not in the plan's repository).
    pub status: &'static str,
    pub detail: Option<String>,
}

impl PolicyView {
    /// `now`: the hash of the policy in force, or why it could not be read; `None` when the
    /// plan's repository is not at hand.
    pub fn new(plan: &Plan, now: Option<Result<&str, String>>) -> PolicyView {
        let (status, detail) = match now {
            None => ("unchecked", Some("not run in the plan's repository".to_string())),
            Some(Ok(h)) if h == plan.policy_hash => ("in_force", None),
            Some(Ok(_)) => (
                "changed",
                Some("the policy in force differs: apply will refuse (exit 14); re-plan".to_string()),
            ),
            Some(Err(e)) => ("unreadable", Some(safe(&e))),
        };
        PolicyView {
            source: safe(&plan.policy_source.describe()),
            hash: plan.policy_hash.clone(),
            status,
            detail,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct RiskView {
    pub level: &'static str,
    pub reasons: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Count {
    pub reason: &'static str,
    pub count: usize,
}

impl Count {
    /// "3 merged", one for each count, in order: how every text view states counts.
    pub fn phrases(counts: &[Count]) -> Vec<String> {
        counts
            .iter()
            .map(|c| format!("{} {}", c.count, c.reason))
            .collect()
    }
}

#[derive(Debug, Serialize)]
pub struct RowsView {
    /// `all`, `page` or `sample`.
    pub mode: &'static str,
    pub page: Option<usize>,
    pub pages: usize,
    pub shown: usize,
    pub items: Vec<Row>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What the row is: `branch`, `tag`, `remote branch`, `remote tag` (the plan's
    /// operation says; validation made sure every ref is in that operation's namespace).
    pub kind: &'static str,
    pub name: String,
    /// The full object id (the human table abbreviates it).
    pub tip: String,
    pub last_commit: String,
    pub age: String,
    pub author: String,
    pub subject: String,
    pub commits_not_in_base: u64,
    pub loses_work: bool,
    pub reasons: Vec<&'static str>,
    pub flags: Vec<Flag>,
    /// A squash-merged branch's evidence: the base commit that carries its change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub squashed_into: Option<SquashedView>,
}

/// The base commit a squash-merged branch landed as, its subject escaped.
#[derive(Debug, Clone, Serialize)]
pub struct SquashedView {
    pub commit: String,
    pub subject: String,
}

#[derive(Debug, Serialize)]
pub struct Extremes {
    pub most_recent: Vec<Row>,
    pub oldest: Vec<Row>,
    pub most_unmerged: Vec<Row>,
    pub suspicious_names: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct SkippedView {
    pub total: usize,
    pub counts: Vec<Count>,
    pub items: Vec<SkippedRow>,
}

#[derive(Debug, Serialize)]
pub struct SkippedRow {
    pub name: String,
    pub reason: &'static str,
    pub detail: Option<String>,
    pub flags: Vec<Flag>,
}

pub use crate::text::rfc3339;

fn protected_literals(plan: &Plan) -> Vec<&str> {
    let protect = plan.operation.selection().map(|i| i.protect.as_slice());
    protect
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .filter(|p| !p.contains(['*', '?', '[']))
        .collect()
}

/// What a row is: the operation's kind of resource, and for a tag which kind of tag (a signed
/// release tag must not look like any other).
fn row_kind(op: &crate::plan::model::Operation, a: &Resource) -> &'static str {
    let remote = op.remote().is_some();
    match (&a.facts, remote) {
        (ResourceFacts::Tag(t), false) if t.object.signed => "signed tag",
        (ResourceFacts::Tag(t), true) if t.object.signed => "remote signed tag",
        (ResourceFacts::Tag(t), false) if t.object.annotated => "annotated tag",
        (ResourceFacts::Tag(t), true) if t.object.annotated => "remote annotated tag",
        (ResourceFacts::Tag(_), false) => "lightweight tag",
        (ResourceFacts::Tag(_), true) => "remote lightweight tag",
        (ResourceFacts::Branch(_), _) => op.resource_kind(),
    }
}

/// The inputs besides base and criteria, as the flags that give them (escaped).
fn selection_flags(op: &crate::plan::model::Operation) -> Vec<String> {
    use crate::plan::model::{Operation, TagKind};
    let Some(i) = op.selection() else {
        return vec![];
    };
    let mut out = Vec::new();
    if let Some(secs) = i.older_than_secs {
        // The threshold in words too: `6m` once meant six minutes to a reviewer reading months.
        let what = match op {
            Operation::Tags(_) => "older than",
            _ => "inactive for more than",
        };
        out.push(format!(
            "--older-than {} ({what} {})",
            crate::duration::humanize(i64::try_from(secs).unwrap_or(i64::MAX)),
            crate::duration::words(secs)
        ));
    }
    for (flag, globs) in [
        ("--match", &i.match_globs),
        ("--exclude", &i.exclude),
        ("--protect", &i.protect),
    ] {
        out.extend(globs.iter().map(|g| format!("{flag} {}", safe(g))));
    }
    if i.include_unmerged {
        out.push("--include-unmerged".into());
    }
    if !matches!(op, Operation::Tags(_)) && i.criteria.contains(&crate::plan::model::Criterion::Matched) {
        out.push("--named".into());
    }
    match op {
        Operation::Tags(t) => {
            if t.include_signed {
                out.push("--include-signed".into());
            }
            match t.kind {
                TagKind::All => {}
                TagKind::Annotated => out.push("--annotated".into()),
                TagKind::Lightweight => out.push("--lightweight".into()),
            }
        }
        Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Exec(_) => {}
    }
    out
}

fn row(a: &Resource, kind: &'static str, now: OffsetDateTime, protected: &[&str]) -> Row {
    // Cut before escaping, so an escape is never cut in half.
    let mut subject: String = a.subject.chars().take(SUBJECT_CHARS).collect();
    if a.subject.chars().nth(SUBJECT_CHARS).is_some() {
        subject.push('…');
    }
    Row {
        kind,
        name: safe(a.name()),
        tip: a.oid.clone(),
        last_commit: rfc3339(a.last_commit_time),
        age: humanize((now - a.last_commit_time).whole_seconds()),
        author: safe(&a.author.email),
        subject: safe(&subject),
        commits_not_in_base: a.commits_not_in_base(),
        loses_work: a.loses_work(),
        reasons: a.reasons.iter().map(|r| r.as_str()).collect(),
        flags: flags(a.name(), protected),
        squashed_into: a.squashed_into().map(|s| SquashedView {
            commit: safe(&s.commit),
            subject: safe(&s.subject),
        }),
    }
}

pub struct ViewInput<'a> {
    pub plan: &'a Plan,
    pub plan_id: &'a str,
    pub approvals: ApprovalsView,
    pub policy: PolicyView,
    pub now: OffsetDateTime,
    pub paging: Paging,
    pub show_all_skipped: bool,
}

/// The view of `input.plan`: each part from its own section below.
pub fn build(input: ViewInput) -> ShowView {
    let ViewInput {
        plan, plan_id, now, ..
    } = input;
    let protected = protected_literals(plan);
    let inputs = plan.operation.selection();
    let expires_in = (plan.expires_at - now).whole_seconds();
    ShowView {
        plan_id: plan_id.to_string(),
        plan_hash: plan.plan_hash.clone(),
        summary: summary(plan, plan_id, expires_in, &input.approvals),
        operation: plan.operation.kind().to_string(),
        resource: plan.operation.nouns().0,
        resources: plan.operation.nouns().1,
        repository: safe(&plan.repository),
        remote: plan.operation.remote().map(safe),
        base: inputs.map(|i| safe(&i.base)).unwrap_or_default(),
        criteria: inputs
            .map(|i| i.criteria.iter().map(|c| c.as_str()).collect())
            .unwrap_or_default(),
        selection: selection_flags(&plan.operation),
        planner: party(&plan.planner),
        executor: party(&plan.executor),
        created_at: rfc3339(plan.created_at),
        expires_at: rfc3339(plan.expires_at),
        expires_in_secs: expires_in,
        expired: expires_in <= 0,
        approvals: input.approvals.clone(),
        policy: input.policy.clone(),
        risk: RiskView {
            level: plan.risk.level.as_str(),
            reasons: plan.risk.reasons.iter().map(|r| safe(r)).collect(),
        },
        total_affected: plan.affected.len(),
        counts_by_reason: counts_by_reason(plan),
        rows: rows(plan, input.paging, now, &protected),
        extremes: extremes(plan, now, &protected),
        side_effects: side_effects(plan, plan_id),
        before_image: before_image(plan, plan_id),
        skipped: skipped(plan, &protected, input.show_all_skipped),
        exec: match &plan.operation {
            Operation::Exec(x) => Some(exec_view(x, &input.paging)),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => None,
        },
        since: None,
        consumed_on: None,
    }
}

/// The one-line summary: id, what the plan does, expiry, approvals.
fn summary(plan: &Plan, plan_id: &str, expires_in: i64, approvals: &ApprovalsView) -> String {
    format!(
        "Plan {}: {}. {}. Approvals {}{}.",
        short_id(plan_id),
        // Already escaped: a loaded plan's summary is checked equal to `derive::summary`,
        // which escapes what it quotes; escaping again would spell a hidden character as a
        // typed one.
        plan.summary,
        if expires_in <= 0 {
            format!("Expired {} ago", humanize(-expires_in))
        } else {
            format!("Expires in {}", humanize(expires_in))
        },
        approvals.tally(),
        if !approvals.rejected_by.is_empty() {
            ", REJECTED"
        } else if !approvals.blocked_by.is_empty() {
            ", BLOCKED"
        } else {
            ""
        },
    )
}

/// The affected resources shown: all of a small plan, an even sample of a large one, or one
/// page.
fn rows(plan: &Plan, paging: Paging, now: OffsetDateTime, protected: &[&str]) -> RowsView {
    let n = plan.affected.len();
    let pages = n.div_ceil(PAGE_SIZE).max(1);
    let (mode, page, picked): (&str, Option<usize>, Vec<&Resource>) = match paging {
        Paging::All => ("all", None, plan.affected.iter().collect()),
        Paging::Auto if n <= PAGE_SIZE => ("all", None, plan.affected.iter().collect()),
        Paging::Auto => {
            // An even spread across the manifest, deterministic.
            let step = n.div_ceil(SAMPLE);
            (
                "sample",
                None,
                plan.affected.iter().step_by(step.max(1)).collect(),
            )
        }
        Paging::Page(p) => {
            let p = p.clamp(1, pages);
            (
                "page",
                Some(p),
                plan.affected
                    .iter()
                    .skip((p - 1) * PAGE_SIZE)
                    .take(PAGE_SIZE)
                    .collect(),
            )
        }
    };
    let items: Vec<Row> = picked
        .iter()
        .map(|a| row(a, row_kind(&plan.operation, a), now, protected))
        .collect();
    RowsView {
        mode,
        page,
        pages,
        shown: items.len(),
        items,
    }
}

/// What a reviewer must not miss, whatever is shown: the most recently active, the oldest,
/// the most unmerged, and every name that needs a second look.
fn extremes(plan: &Plan, now: OffsetDateTime, protected: &[&str]) -> Extremes {
    let row = |a: &&Resource| row(a, row_kind(&plan.operation, a), now, protected);
    let mut by_time: Vec<&Resource> = plan.affected.iter().collect();
    by_time.sort_by_key(|a| std::cmp::Reverse(a.last_commit_time));
    let mut by_unmerged: Vec<&Resource> = plan
        .affected
        .iter()
        .filter(|a| a.commits_not_in_base() > 0)
        .collect();
    by_unmerged.sort_by_key(|a| std::cmp::Reverse(a.commits_not_in_base()));
    Extremes {
        most_recent: by_time.iter().take(EXTREMES).map(row).collect(),
        oldest: by_time.iter().rev().take(EXTREMES).map(row).collect(),
        most_unmerged: by_unmerged.iter().take(EXTREMES).map(row).collect(),
        // Flags first, rows only for the flagged: a row escapes and formats every field,
        // and building one per resource was a sixth of `show`'s time at 20,000 branches.
        suspicious_names: plan
            .affected
            .iter()
            .filter(|a| !flags(a.name(), protected).is_empty())
            .map(|a| row(&a))
            .collect(),
    }
}

/// How many affected resources each criterion (the first that matched) selected.
fn counts_by_reason(plan: &Plan) -> Vec<Count> {
    [
        Criterion::Merged,
        Criterion::SquashMerged,
        Criterion::Gone,
        Criterion::OlderThan,
    ]
    .into_iter()
    .filter_map(|c| {
        let count = plan
            .affected
            .iter()
            .filter(|a| a.main_reason() == Some(c))
            .count();
        (count > 0).then(|| Count {
            reason: c.as_str(),
            count,
        })
    })
    .collect()
}

fn before_image(plan: &Plan, plan_id: &str) -> String {
    format!(
        "{}/{} (one commit keeping every deleted tip), kept {} days",
        crate::plan::model::BACKUP_NAMESPACE,
        plan_id.trim_start_matches("sha256:"),
        plan.before_image.retention_days
    )
}

/// What a trial plan shows where a preview command would be.
pub const TRIAL_PREVIEW: &str = "the command itself, tried in guardctl's trial sandbox \
    (a copy-on-write view of the machine, no network, no keys): the manifest is what it destroyed there";

#[derive(Debug, Clone, Serialize)]
pub struct ExecView {
    pub command: String,
    pub workdir: String,
    pub env: Vec<String>,
    /// Every directory of the recorded `PATH`, in order (escaped).
    pub path: Vec<String>,
    /// How many work-tree files the plan pins by content (tracked, or untracked and not
    /// ignored, under the working directory).
    pub content_files: usize,
    /// `path (sha256:<12 hex>)` for each repository file the command names.
    pub files: Vec<String>,
    /// The preview command; for a trial plan (`trial`), what stands in its place.
    pub preview: String,
    /// The manifest is the command's own effect, observed in the trial sandbox.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trial: bool,
    /// How the preview ran at planning time: `sandboxed`, or `unsandboxed` (only where the
    /// trusted policy allows it and the planner's system could not sandbox).
    pub preview_sandbox: &'static str,
    pub before_image: Option<String>,
    /// The `--verify` command and what it prints (`state` or `diff`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// Every pinned file, as one line each: what runs from the private copy at apply.
    pub pinned: Vec<String>,
    /// Programs found through `PATH`: `name -> path`.
    pub on_path: Vec<String>,
    /// What guardctl does not pin, said plainly.
    pub not_pinned: &'static str,
    /// The manifest the policy sees: how many resources the preview lists, and how it was
    /// read (`lines` or `json-lines`).
    pub resources: usize,
    pub manifest_format: &'static str,
    pub total_lines: usize,
    /// `all`, `first` (the first page of a longer output) or `page`.
    pub mode: &'static str,
    pub page: Option<usize>,
    pub pages: usize,
    pub lines: Vec<String>,
}

/// What `show` says guardctl does not pin.
pub const NOT_PINNED: &str = "anything the command calls by name or reads outside these files";

/// One line per pinned entry: `path (sha256:…)`, a link with its target, a tree's files.
fn pinned_lines(x: &crate::plan::model::ExecInputs) -> Vec<String> {
    let short = crate::text::short_digest;
    let mut out = Vec::new();
    for p in &x.pinned {
        // A path that starts or ends with a blank (or is empty, in a forged plan) is quoted:
        // blanks at the edge are invisible, and a line starting with one reads as one of a
        // tree's files (they are indented).
        let mut line = if p.path.trim() != p.path || p.path.is_empty() {
            safe(&crate::plan::derive::shell_words(std::slice::from_ref(&p.path)))
        } else {
            safe(&p.path)
        };
        if let (Some(link), Some(target)) = (&p.link, &p.target) {
            line += &format!(" -> {} (= {})", safe(link), safe(target));
        }
        if p.tree.is_empty() {
            line += &format!(" {}", short(&p.sha256));
        } else {
            line += &format!(
                "/ tree {} ({} {})",
                short(&p.sha256),
                p.tree.len(),
                plural(p.tree.len() as u64, "file", "files")
            );
        }
        line += &format!(" [{}]", p.found.as_str());
        out.push(line);
        for f in &p.tree {
            out.push(format!(
                "  {}/{} {}",
                safe(&p.path),
                safe(&f.path),
                short(&f.sha256)
            ));
        }
    }
    out
}

fn exec_view(x: &crate::plan::model::ExecInputs, paging: &Paging) -> ExecView {
    let all: Vec<&str> = x.preview_output.text.lines().collect();
    let manifest = crate::plan::manifest::read(&x.preview_output.text);
    let pages = all.len().div_ceil(PAGE_SIZE).max(1);
    let (mode, page, shown): (&str, Option<usize>, &[&str]) = match paging {
        Paging::All => ("all", None, &all),
        Paging::Auto if all.len() <= PAGE_SIZE => ("all", None, &all),
        Paging::Auto => ("first", None, &all[..PAGE_SIZE]),
        Paging::Page(p) => {
            let p = (*p).clamp(1, pages);
            let start = ((p - 1) * PAGE_SIZE).min(all.len());
            ("page", Some(p), &all[start..(start + PAGE_SIZE).min(all.len())])
        }
    };
    ExecView {
        command: safe(&crate::plan::derive::shell_words(&x.command)),
        workdir: safe(&x.workdir),
        env: x.env.iter().map(|e| safe(&e.name)).collect(),
        path: x.path_dirs.iter().map(|d| safe(d)).collect(),
        content_files: x.content.as_ref().map_or(0, Vec::len),
        files: x
            .files
            .iter()
            .map(|f| format!("{} ({})", safe(&f.path), crate::text::short_digest(&f.sha256)))
            .collect(),
        preview: if x.trial {
            TRIAL_PREVIEW.to_string()
        } else {
            safe(&x.preview)
        },
        trial: x.trial,
        preview_sandbox: if x.preview_unsandboxed {
            "unsandboxed"
        } else {
            "sandboxed"
        },
        before_image: x.before_image.as_deref().map(safe),
        verify: x.verify.as_deref().map(|v| {
            let prints = match x.verify_prints {
                Some(crate::plan::model::VerifyPrints::Diff) => "diff",
                _ => "state",
            };
            format!("{} (prints the {prints})", safe(v))
        }),
        pinned: pinned_lines(x),
        on_path: x
            .pinned
            .iter()
            .filter(|p| p.found == crate::plan::model::PinSource::Path)
            .map(|p| format!("{} -> {}", safe(&p.name), safe(&p.path)))
            .collect(),
        not_pinned: NOT_PINNED,
        resources: manifest.0.len(),
        manifest_format: manifest.1.as_str(),
        total_lines: all.len(),
        mode,
        page,
        pages,
        lines: shown.iter().map(|l| safe(l)).collect(),
    }
}

/// `sha256:` and the first 12 hex digits, for summaries.
pub fn short_id(id: &str) -> String {
    let hex = id.trim_start_matches("sha256:");
    format!("sha256:{}…", hex.chars().take(12).collect::<String>())
}

fn party(p: &crate::plan::model::Party) -> PartyView {
    PartyView {
        principal: p.principal.as_deref().map(safe),
        key: p.key.as_deref().map(safe),
    }
}

/// An exec plan's side effect of running its command, from its parts (escaped, or already
/// made inert for Markdown: `render::markdown` builds the same sentence from code spans).
pub fn command_runs(command: &str, workdir: &str, env: &str) -> String {
    format!(
        "Runs {command} in {workdir} with only {env} set; guardctl cannot undo it: its effect is what the preview lists."
    )
}

/// An exec plan's side effect of its `--before-image` command, from its part.
pub fn before_image_runs(command: &str) -> String {
    format!("First runs {command} (it must succeed; its output is kept with the plan's state).")
}

fn side_effects(plan: &Plan, plan_id: &str) -> Vec<String> {
    let days = plan.before_image.retention_days;
    let mut out: Vec<String> = plan
        .side_effects
        .iter()
        .map(|e| {
            let b = e.branches;
            let branches = plural(b, "branch", "branches");
            match e.kind {
                SideEffectKind::ReflogDeleted => {
                    format!("Deleting {b} {branches} also deletes {} reflog{}.", if b == 1 { "its" } else { "their" }, if b == 1 { "" } else { "s" })
                }
                SideEffectKind::UpstreamConfigRemoved => {
                    format!("The upstream tracking config of {b} {branches} is removed (kept in the before-image).")
                }
                SideEffectKind::BranchConfigRemoved => {
                    format!("Other branch config (description, ...) of {b} {branches} is removed (kept in the before-image).")
                }
                SideEffectKind::ClonesLoseBranch => {
                    format!("Other clones lose their copy of {b} {branches} on their next `git fetch --prune`.")
                }
                SideEffectKind::PullRequestsClosed => {
                    format!("Hosting services (GitHub, GitLab, ...) close open pull requests whose head is one of these {b} {branches}.")
                }
                SideEffectKind::ClonesKeepTags => {
                    format!("Other clones keep {b} {} until they run `git fetch --prune --prune-tags`; `git push --tags` from such a clone brings {} back.", plural(b, "tag", "tags"), plural(b, "it", "them"))
                }
                SideEffectKind::CommandRuns => match &plan.operation {
                    Operation::Exec(x) => {
                        let env: Vec<String> = x.env.iter().map(|e| safe(&e.name)).collect();
                        command_runs(
                            &safe(&crate::plan::derive::shell_words(&x.command)),
                            &safe(&x.workdir),
                            &env.join(", "),
                        )
                    }
                    Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
                        String::new()
                    }
                },
                SideEffectKind::BeforeImageCommand => match &plan.operation {
                    Operation::Exec(x) => {
                        before_image_runs(&safe(x.before_image.as_deref().unwrap_or_default()))
                    }
                    Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => {
                        String::new()
                    }
                },
                SideEffectKind::UnmergedCommitsBackupOnly => {
                    let c = e.commits.unwrap_or(0);
                    format!(
                        "{c} unmerged {} on {b} {branches} {} reachable only through the backup refs, for {days} days; then {} lost.",
                        plural(c, "commit", "commits"),
                        plural(c, "remains", "remain"),
                        plural(c, "it is", "they are")
                    )
                }
            }
        })
        .collect();
    if !plan.affected.is_empty() {
        let backup = format!(
            "{}/{}",
            crate::plan::model::BACKUP_NAMESPACE,
            plan_id.trim_start_matches("sha256:")
        );
        out.push(match plan.operation {
            Operation::Tags(_) => format!(
                "Backups are written first: {backup} keeps the commit of every deleted tag, and the before-image the annotated tag objects themselves, for {days} days."
            ),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Exec(_) => {
                format!("Backups are written first: {backup} keeps every deleted tip, for {days} days.")
            }
        });
    }
    out
}

fn skip_label(r: SkipReason) -> &'static str {
    match r {
        SkipReason::InvalidName => "invalid_name",
        SkipReason::Base => "base",
        SkipReason::CheckedOut => "checked_out",
        SkipReason::Worktree => "worktree",
        SkipReason::RemoteHead => "remote_head",
        SkipReason::Protected => "protected",
        SkipReason::NotMatched => "not_matched",
        SkipReason::Excluded => "excluded",
        SkipReason::NotStale => "not_stale",
        SkipReason::Unmerged => "unmerged",
        SkipReason::Unreadable => "unreadable",
        SkipReason::Signed => "signed",
        SkipReason::OtherKind => "other_kind",
    }
}

fn skipped(plan: &Plan, protected: &[&str], all: bool) -> SkippedView {
    let mut reasons: Vec<SkipReason> = plan.skipped.iter().map(|s| s.reason).collect();
    reasons.sort();
    reasons.dedup();
    let counts = reasons
        .iter()
        .map(|r| Count {
            reason: skip_label(*r),
            count: plan.skipped.iter().filter(|s| s.reason == *r).count(),
        })
        .collect();
    let limit = if all { usize::MAX } else { SKIPPED_LISTED };
    let items = plan
        .skipped
        .iter()
        .take(limit)
        .map(|s| {
            let name = crate::plan::model::short_name(&s.refname);
            let mut detail = s.detail.as_deref().map(safe);
            if detail.is_none() {
                detail = Some(s.reason.describe().to_string());
            }
            SkippedRow {
                name: safe(name),
                reason: skip_label(s.reason),
                detail,
                flags: flags(name, protected),
            }
        })
        .collect();
    SkippedView {
        total: plan.skipped.len(),
        counts,
        items,
    }
}

/// `guardctl inbox`: the plans published on the team remote that wait for approvals, and
/// which of them the key in use may approve (docs/remote.md). Strings are as published
/// (escaped when rendered as text).
#[derive(Debug, Clone, Serialize)]
pub struct InboxView {
    /// The team remote's name and URL.
    pub remote: String,
    pub url: String,
    /// The principal the key in use approves as (`guardctl-approval`), if any.
    pub principal: Option<String>,
    /// The key in use (`SHA256:` fingerprint), if there is one.
    pub key: Option<String>,
    /// Published plans for this repository, neither consumed nor expired, oldest first.
    pub plans: Vec<InboxPlan>,
    /// How many published plans are not listed, by reason.
    pub left_out: InboxLeftOut,
}

#[derive(Debug, Clone, Serialize)]
pub struct InboxPlan {
    pub plan_id: String,
    pub summary: String,
    pub operation: &'static str,
    /// The remote a remote plan is bound to; `None` for a plan of the planner's clone.
    pub remote: Option<String>,
    pub planner: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub expires_in_secs: i64,
    /// Each review group that still needs approvals: `group`, `missing`, `from`.
    pub still_needed: Vec<StillNeeded>,
    pub rejected_by: Vec<String>,
    /// Whether the key in use may add an approval that counts.
    pub may_approve: bool,
    /// Why not, when it may not.
    pub why_not: Option<String>,
    /// The standing as `show` reports it.
    pub approvals: ApprovalsView,
}

#[derive(Debug, Clone, Serialize)]
pub struct StillNeeded {
    pub group: String,
    pub missing: u32,
    /// Who may still approve; `None`: any principal but the planner.
    pub from: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct InboxLeftOut {
    pub consumed: usize,
    pub expired: usize,
    /// Plans bound to another repository than this clone's remote.
    pub other_repository: usize,
    /// Plans that change nothing (nothing to approve).
    pub empty: usize,
    /// Refs that do not hold a valid plan with their id (each also a warning).
    pub invalid: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::test_data;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-06-01 12:05 UTC);

    /// `n` merged branches `b00`, `b01`, ..., `b<i>` last active `i` days before NOW and
    /// `i` commits not in base.
    fn plan_of(n: usize) -> Plan {
        let affected = (0..n)
            .map(|i| {
                let mut a = test_data::branch(&format!("b{i:02}"), i as u64);
                a.last_commit_time = NOW - time::Duration::days(i as i64);
                a
            })
            .collect();
        let mut plan = test_data::plan(affected, "sha256:p");
        plan.review =
            crate::policy::route::review(&crate::policy::Policy::default(), &plan.affected).unwrap();
        plan
    }

    fn names(rows: &[Row]) -> Vec<&str> {
        rows.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn a_small_plan_is_shown_whole() {
        let r = rows(&plan_of(3), Paging::Auto, NOW, &[]);
        assert_eq!((r.mode, r.page, r.pages, r.shown), ("all", None, 1, 3));
        assert_eq!(names(&r.items), ["b00", "b01", "b02"]);
        assert_eq!(r.items[1].age, "1d");
        assert_eq!(r.items[1].kind, "branch");
    }

    #[test]
    fn a_large_plan_is_sampled_evenly_and_paged_on_request() {
        let plan = plan_of(120);
        let r = rows(&plan, Paging::Auto, NOW, &[]);
        assert_eq!((r.mode, r.pages), ("sample", 3));
        assert_eq!(r.shown, 10);
        assert_eq!(&names(&r.items)[..3], ["b00", "b12", "b24"]);
        let last = rows(&plan, Paging::Page(3), NOW, &[]);
        assert_eq!((last.mode, last.page, last.shown), ("page", Some(3), 20));
        assert_eq!(last.items[0].name, "b100");
        // A page past the end is the last page.
        let past = rows(&plan, Paging::Page(9), NOW, &[]);
        assert_eq!(past.page, Some(3));
        assert_eq!(rows(&plan, Paging::All, NOW, &[]).shown, 120);
    }

    #[test]
    fn extremes_name_the_newest_oldest_most_unmerged_and_suspicious() {
        let mut plan = plan_of(5);
        plan.affected.push(test_data::branch("mаin", 0)); // Cyrillic а
        let x = extremes(&plan, NOW, &["main"]);
        // `branch` made mаin last active in January, before every b.
        assert_eq!(names(&x.most_recent), ["b00", "b01", "b02"]);
        assert_eq!(names(&x.oldest), ["mаin", "b04", "b03"]);
        assert_eq!(names(&x.most_unmerged), ["b04", "b03", "b02"]);
        assert_eq!(names(&x.suspicious_names), ["mаin"]);
        assert!(x.suspicious_names[0].flags.contains(&Flag::LooksProtected));
    }

    #[test]
    fn counts_by_reason_go_by_each_resource_s_first_reason() {
        let mut plan = plan_of(3);
        plan.affected[0].reasons = vec![Criterion::Gone, Criterion::Merged];
        let counts: Vec<(&str, usize)> = counts_by_reason(&plan)
            .iter()
            .map(|c| (c.reason, c.count))
            .collect();
        assert_eq!(counts, [("merged", 2), ("gone", 1)]);
    }

    #[test]
    fn the_summary_says_expiry_and_rejection() {
        let plan = plan_of(1);
        let mut approvals = ApprovalsView::unapproved(&plan);
        let live = summary(&plan, "sha256:0123456789abcdef", 90, &approvals);
        assert!(live.starts_with("Plan sha256:0123456789ab…: "), "{live}");
        assert!(live.ends_with(". Expires in 1m. Approvals 0/1."), "{live}");
        approvals.rejected_by = vec!["bob".into()];
        let dead = summary(&plan, "sha256:0123456789abcdef", -7200, &approvals);
        assert!(
            dead.ends_with(". Expired 2h ago. Approvals 0/1, REJECTED."),
            "{dead}"
        );
    }

    #[test]
    fn side_effects_end_with_the_backup_and_none_without_changes() {
        let plan = plan_of(2);
        let effects = side_effects(&plan, "sha256:abc");
        assert_eq!(
            effects.last().map(String::as_str),
            Some("Backups are written first: refs/guardctl/backup/abc keeps every deleted tip, for 30 days.")
        );
        assert!(side_effects(&plan_of(0), "sha256:abc").is_empty());
    }

    #[test]
    fn the_whole_view_escapes_repository_strings() {
        let mut plan = plan_of(1);
        plan.affected[0].subject = "evil \u{1b}]0;title\u{7} subject".into();
        plan.repository = "/repo/\u{202e}x".into();
        let v = build(ViewInput {
            plan: &plan,
            plan_id: "sha256:abc",
            approvals: ApprovalsView::unapproved(&plan),
            policy: PolicyView::new(&plan, None),
            now: NOW,
            paging: Paging::Auto,
            show_all_skipped: false,
        });
        let json = serde_json::to_string(&v).unwrap();
        assert!(!json.contains('\u{1b}') && !json.contains('\u{202e}'), "{json}");
        assert_eq!(v.total_affected, 1);
        assert_eq!(v.policy.status, "unchecked");
        assert!(!v.expired);
    }
}
