//! The plan payload: plain serde data, exactly what is signed (docs/plan-format.md).
//!
//! Not here: reading files, signatures, git. Every struct denies unknown fields and serde's
//! derive refuses duplicate keys, so a payload either parses into exactly these types or is
//! rejected. Field order is the serialisation order and is part of the format: do not reorder.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The only major version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Where every backup ref lives: `<BACKUP_NAMESPACE>/<plan id hex>`. Fixed by guardctl, never
/// read from a plan: a planner who could choose it could put the backup where `git fetch
/// --prune` or `gc` destroys it.
pub const BACKUP_NAMESPACE: &str = "refs/guardctl/backup";

/// The `base` of a tag plan: a tag's commit is judged against every branch.
pub const TAG_BASE: &str = "refs/heads/*";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub format_version: u32,
    pub plan_hash: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub planner: Party,
    pub executor: Party,
    pub repository: String,
    /// 128 random bits (hex): two plans of the same state never share an id, so a replay
    /// is always of the very plan that was applied.
    pub nonce: String,
    pub operation: Operation,
    pub summary: String,
    pub affected: Vec<Affected>,
    pub skipped: Vec<Skipped>,
    pub diff: Vec<DiffEntry>,
    pub side_effects: Vec<SideEffect>,
    pub before_image: BeforeImage,
    pub risk: Risk,
    /// Who must approve what: the policy's routing of the affected resources.
    pub review: Vec<ReviewGroup>,
    /// Where the policy in force at planning time came from.
    pub policy_source: PolicySource,
    pub policy_hash: String,
}

/// A principal and the key it used (planner), or is expected to use (executor).
/// `principal` is `None` for a key that maps to no principal: such plans can't be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Party {
    pub principal: Option<String>,
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", content = "inputs")]
pub enum Operation {
    /// Local branches, deleted with one `git update-ref --stdin` transaction.
    #[serde(rename = "stale-branches")]
    StaleBranches(StaleBranchesInputs),
    /// A remote's branches, deleted with one `git push --atomic` whose every deletion leases
    /// the planned object id. The plan's `repository` is the remote's URL.
    #[serde(rename = "remote-branches")]
    RemoteBranches(RemoteBranchesInputs),
    /// Tags, local or (with `remote`) a remote's; deleted like branches, with the annotated
    /// tag objects saved byte for byte so a rollback recreates the very same objects.
    #[serde(rename = "tags")]
    Tags(TagsInputs),
    /// Any destructive command, gated by its preview: the plan's manifest is the preview's
    /// output, and apply runs the command only if the preview still says the same.
    #[serde(rename = "exec")]
    Exec(ExecInputs),
}

impl Operation {
    pub fn kind(&self) -> &'static str {
        match self {
            Operation::StaleBranches(_) => "stale-branches",
            Operation::RemoteBranches(_) => "remote-branches",
            Operation::Tags(_) => "tags",
            Operation::Exec(_) => "exec",
        }
    }

    /// How refs were selected (for remote branches: names and base as on the remote);
    /// `None` for a command.
    pub fn selection(&self) -> Option<&StaleBranchesInputs> {
        match self {
            Operation::StaleBranches(i) => Some(i),
            Operation::RemoteBranches(r) => Some(&r.selection),
            Operation::Tags(t) => Some(&t.selection),
            Operation::Exec(_) => None,
        }
    }

    /// The remote whose refs the plan deletes; `None` for this repository's.
    pub fn remote(&self) -> Option<&str> {
        match self {
            Operation::StaleBranches(_) => None,
            Operation::RemoteBranches(r) => Some(&r.remote),
            Operation::Tags(t) => t.remote.as_deref(),
            Operation::Exec(_) => None,
        }
    }

    /// The remote whose URL identifies the plan (any clone of it may apply the plan); `None`:
    /// the clone it was made in.
    pub fn bound_to_remote(&self) -> Option<&str> {
        match self {
            Operation::Exec(e) => e.remote.as_deref(),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => self.remote(),
        }
    }

    /// The namespace every affected ref must be in (`None`: the operation deletes no refs).
    pub fn ref_namespace(&self) -> Option<&'static str> {
        match self {
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) => Some("refs/heads/"),
            Operation::Tags(_) => Some("refs/tags/"),
            Operation::Exec(_) => None,
        }
    }

    /// A command plan's inputs; `None` for the kinds that delete refs.
    pub fn command(&self) -> Option<&ExecInputs> {
        match self {
            Operation::Exec(x) => Some(x),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Tags(_) => None,
        }
    }

    /// Whether each affected resource records tag facts (`affected[].tag`): tags, and only tags.
    pub fn records_tag_facts(&self) -> bool {
        match self {
            Operation::Tags(_) => true,
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) | Operation::Exec(_) => false,
        }
    }

    /// Whether affected resources may record an upstream and `branch.<name>.*` config: only
    /// this repository's own branches have them.
    pub fn records_branch_config(&self) -> bool {
        match self {
            Operation::StaleBranches(_) => true,
            Operation::RemoteBranches(_) | Operation::Tags(_) | Operation::Exec(_) => false,
        }
    }

    /// What one affected resource is, as `show` names it on every row.
    pub fn resource_kind(&self) -> &'static str {
        match self {
            Operation::StaleBranches(_) => "branch",
            Operation::RemoteBranches(_) => "remote branch",
            Operation::Tags(t) if t.remote.is_some() => "remote tag",
            Operation::Tags(_) => "tag",
            Operation::Exec(_) => "preview line",
        }
    }

    /// What the plan deletes, singular and plural.
    pub fn nouns(&self) -> (&'static str, &'static str) {
        match self {
            Operation::Tags(_) => ("tag", "tags"),
            Operation::Exec(_) => ("preview line", "preview lines"),
            Operation::StaleBranches(_) | Operation::RemoteBranches(_) => ("branch", "branches"),
        }
    }
}

/// `exec`: exactly what runs, where, with which environment and files, and what its preview
/// printed at planning time (the manifest a reviewer approves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecInputs {
    /// With `--remote`: the remote whose URL the plan is bound to, so that another clone of
    /// it (a CI job) can apply the plan.
    pub remote: Option<String>,
    /// The command and its arguments, run without a shell.
    pub command: Vec<String>,
    /// Run by `sh -c`; its standard output is the manifest.
    pub preview: String,
    /// Run by `sh -c` before the command; it must succeed.
    pub before_image: Option<String>,
    /// The working directory, relative to the work tree's top.
    pub workdir: String,
    /// The only environment the commands get: each name with the sha256 of its value
    /// (`None`: unset).
    pub env: Vec<EnvEntry>,
    /// Every argument (the command included) that names a file in the repository, with the
    /// sha256 of its content.
    pub files: Vec<FileDigest>,
    /// The preview's output at planning time.
    pub preview_output: PreviewOutput,
    /// `--pin`: files and directories (relative to `workdir`) the commands read, such as
    /// helpers a script sources, pinned like the programs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pin: Vec<String>,
    /// `--verify`: run by `sh -c` after the command; its output is the observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// What the `--verify` output lists: the manifest's resources still present (`state`,
    /// the default) or what the command changed (`diff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_prints: Option<VerifyPrints>,
    /// Every file that runs, observed at planning time: the programs of the command, the
    /// preview, the before-image and verify commands (bare names resolved through `PATH`),
    /// the shell that runs those, the scripts their interpreters run, and the `--pin` paths.
    /// Apply re-derives this list, then runs everything from a private copy of these files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<Pinned>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyPrints {
    /// The manifest's resources that still exist; verified when none does.
    State,
    /// The resources the command changed; verified when they are exactly the manifest.
    Diff,
}

/// One pinned file or directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    /// As named: a bare program name, a path as written in a command, or a `--pin` path.
    pub name: String,
    /// How it was found.
    pub found: PinSource,
    /// Relative to the work tree's top when inside it, else absolute. A symbolic link is
    /// recorded as the link (its copy holds the content it resolves to).
    pub path: String,
    /// For a symbolic link: what the link says.
    pub link: Option<String>,
    /// For a symbolic link: the file it resolves to (relative to the top when inside it).
    pub target: Option<String>,
    /// sha256 of the content; for a directory, of its tree (every file's path and digest).
    pub sha256: String,
    /// Whether the owner may execute it (a copy keeps that).
    pub executable: bool,
    /// For a directory: every file in it, relative to it, with its sha256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tree: Vec<FileDigest>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinSource {
    /// A bare program name, found through `PATH`.
    Path,
    /// A path a command names as its program or as the script its interpreter runs.
    Argument,
    /// A `--pin` path.
    Pin,
}

impl PinSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PinSource::Path => "found on PATH",
            PinSource::Argument => "named by a command",
            PinSource::Pin => "--pin",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvEntry {
    pub name: String,
    pub sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDigest {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewOutput {
    /// sha256 of the exact bytes.
    pub sha256: String,
    /// The bytes as text (invalid UTF-8 replaced; the digest is of the bytes).
    pub text: String,
}

/// `tags`: which tags, by name, age and kind. `selection` holds the base (commits not in
/// it are counted, as for branches), `--older-than` and the patterns; its criteria are
/// `matched` and/or `older-than`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagsInputs {
    pub remote: Option<String>,
    /// `all`, `annotated` or `lightweight`.
    pub kind: TagKind,
    /// Signed tags are never planned unless this is set.
    pub include_signed: bool,
    pub selection: StaleBranchesInputs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TagKind {
    All,
    Annotated,
    Lightweight,
}

/// What a plan records of a tag beyond its ref: the kind, whether it is signed, and the
/// commit it names (the backup commit keeps that commit; the before-image keeps the tag
/// object itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagFacts {
    pub annotated: bool,
    pub signed: bool,
    pub commit: String,
}

/// `remote-branches`: the remote's name in the planning clone, and the selection, evaluated
/// on the remote's refs as `git ls-remote` lists them (base and names as on the remote).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteBranchesInputs {
    pub remote: String,
    pub selection: StaleBranchesInputs,
}

/// Normalised inputs: resolved base ref, sorted criteria and patterns, durations in seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleBranchesInputs {
    pub base: String,
    pub criteria: Vec<Criterion>,
    pub older_than_secs: Option<u64>,
    pub include_unmerged: bool,
    #[serde(rename = "match")]
    pub match_globs: Vec<String>,
    pub exclude: Vec<String>,
    pub protect: Vec<String>,
}

/// Why a branch is stale. The order is the priority used to name a branch's main reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Criterion {
    Merged,
    SquashMerged,
    Gone,
    OlderThan,
    /// Tags only: named by `--match`, whatever their age.
    Matched,
}

impl Criterion {
    pub fn as_str(self) -> &'static str {
        match self {
            Criterion::Merged => "merged",
            Criterion::SquashMerged => "squash-merged",
            Criterion::Gone => "gone",
            Criterion::OlderThan => "older-than",
            Criterion::Matched => "matched",
        }
    }

    /// How the summary line names it ("2 merged, 1 gone upstream").
    pub fn label(self) -> &'static str {
        match self {
            Criterion::Merged => "merged",
            Criterion::SquashMerged => "squash-merged",
            Criterion::Gone => "gone upstream",
            Criterion::OlderThan => "inactive",
            Criterion::Matched => "matched",
        }
    }
}

/// One branch the plan deletes, with the facts observed at planning time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Affected {
    #[serde(rename = "ref")]
    pub refname: String,
    pub oid: String,
    /// Every criterion the branch met, sorted; the first is its main reason.
    pub reasons: Vec<Criterion>,
    #[serde(with = "time::serde::rfc3339")]
    pub last_commit_time: OffsetDateTime,
    pub author: Person,
    pub subject: String,
    /// Commits reachable from the tip but not from the base.
    pub commits_not_in_base: u64,
    /// True when deleting it loses commits whose changes are not in the base.
    pub loses_work: bool,
    pub upstream: Option<Upstream>,
    /// The `branch.<name>.*` configuration the deletion removes (tracking, description, ...).
    pub config: Vec<ConfigEntry>,
    /// For a tag: its kind and the commit it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<TagFacts>,
    /// For a branch holding commits not in the base: the e-mail of every author and
    /// committer of those commits (sorted, distinct). Review routes match any of them, not
    /// just the tip's author: one commit by someone else on top does not re-route the work
    /// underneath. Empty for merged branches, which route by the tip's author.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people_not_in_base: Vec<String>,
}

/// A branch or tag name without `refs/heads/` or `refs/tags/`.
pub fn short_name(refname: &str) -> &str {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| refname.strip_prefix("refs/tags/"))
        .unwrap_or(refname)
}

impl Affected {
    /// The name without `refs/heads/` or `refs/tags/`.
    pub fn name(&self) -> &str {
        short_name(&self.refname)
    }

    /// The commit the backup must keep: the tip, or the commit a tag names.
    pub fn commit(&self) -> &str {
        self.tag.as_ref().map_or(&self.oid, |t| &t.commit)
    }

    pub fn main_reason(&self) -> Option<Criterion> {
        self.reasons.first().copied()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    pub name: String,
    pub email: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    pub remote: String,
    pub merge: String,
    /// The remote-tracking ref it maps to, if the remote's refspec maps it.
    pub tracking_ref: Option<String>,
    pub gone: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigEntry {
    pub key: String,
    pub value: String,
}

/// A branch that is not planned, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    #[serde(rename = "ref")]
    pub refname: String,
    pub oid: Option<String>,
    pub reason: SkipReason,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Git would reject the name (crafted packed-refs, control characters, `..`).
    InvalidName,
    /// The branch is the base the others are compared with.
    Base,
    /// Checked out in this work tree.
    CheckedOut,
    /// Checked out in another worktree.
    Worktree,
    /// The branch a remote's HEAD names: its default branch.
    RemoteHead,
    /// Matches a protected pattern.
    Protected,
    /// Does not match any `--match` pattern.
    NotMatched,
    /// Matches an `--exclude` pattern.
    Excluded,
    /// Meets none of the selected criteria.
    NotStale,
    /// Meets only a weak criterion but holds commits not in the base.
    Unmerged,
    /// The tip is not a commit (or cannot be read).
    Unreadable,
    /// A signed tag, kept unless `--include-signed`.
    Signed,
    /// Not of the `--annotated`/`--lightweight` kind asked for.
    OtherKind,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::InvalidName => "name git would reject",
            SkipReason::Base => "is the base",
            SkipReason::CheckedOut => "checked out here",
            SkipReason::Worktree => "checked out in another worktree",
            SkipReason::RemoteHead => "the remote's default branch (its HEAD names it)",
            SkipReason::Protected => "protected",
            SkipReason::NotMatched => "not matched by --match",
            SkipReason::Excluded => "excluded by --exclude",
            SkipReason::NotStale => "not stale",
            SkipReason::Unmerged => "holds unmerged work (see --include-unmerged)",
            SkipReason::Unreadable => "tip is not a readable commit",
            SkipReason::Signed => "signed (see --include-signed)",
            SkipReason::OtherKind => "not of the kind asked for (--annotated/--lightweight)",
        }
    }
}

/// One field-level change: `to: None` means the field disappears.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffEntry {
    pub resource: String,
    pub field: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// What else happens besides the listed deletions. The text is generated by the renderer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideEffect {
    pub kind: SideEffectKind,
    pub branches: u64,
    pub commits: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffectKind {
    /// Deleting a branch deletes its reflog.
    ReflogDeleted,
    /// `branch.<name>.remote/merge` go with the branch.
    UpstreamConfigRemoved,
    /// Other `branch.<name>.*` keys (description, rebase, ...) go with the branch.
    BranchConfigRemoved,
    /// Commits only reachable through the backup ref until retention ends.
    UnmergedCommitsBackupOnly,
    /// Other clones lose their remote-tracking copy of the branch on their next prune.
    ClonesLoseBranch,
    /// Hosting services close open pull requests whose head branch is deleted.
    PullRequestsClosed,
    /// Other clones keep a remote's deleted tags until they prune tags, and can push them back.
    ClonesKeepTags,
    /// A command runs: its effects are whatever it does; the preview says what it means to.
    CommandRuns,
    /// A before-image command runs first and must succeed.
    BeforeImageCommand,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeforeImage {
    /// The backup ref is `<namespace>/<plan id hex>`: one commit whose parents are every
    /// deleted tip (the before-image file maps each name to its old id).
    pub namespace: String,
    pub retention_days: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Risk {
    pub level: RiskLevel,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
}

impl RiskLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
        }
    }
}

/// One review group: a part of the plan and the approvals it needs (docs/plan-format.md, "Backup, review and policy").
/// Computed from the policy and the affected resources; `apply` recomputes it from the policy
/// in force and refuses when it differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewGroup {
    pub name: String,
    pub kind: ReviewKind,
    /// Approvals needed from distinct principals other than the planner.
    pub required: u32,
    /// The policy's principal groups whose members may approve; empty = any known principal.
    pub from: Vec<String>,
    /// Their members when the plan was made (sorted); empty = any known principal.
    pub approvers: Vec<String>,
    /// How many affected resources the group covers.
    pub resources: u64,
    /// For a route: the resources it covers. `default` covers every resource no route
    /// matched and `bulk` covers all of them, so neither repeats the names.
    pub refs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// A `[[route]]` of the policy matched these resources.
    Route,
    /// Resources no route matched (`[approvals]` of the policy).
    Default,
    /// The whole plan, when it has more affected resources than the bulk threshold.
    Bulk,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySource {
    pub kind: PolicySourceKind,
    /// `<remote URL> refs/heads/main:.guardctl/policy.toml`, `refs/heads/main:...` (local),
    /// or the file `guardctl.policy` names.
    pub location: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySourceKind {
    /// No policy file: guardctl's built-in default.
    BuiltIn,
    /// `.guardctl/policy.toml` as committed on the default branch.
    Committed,
    /// The file named by `guardctl.policy` in the system git config.
    GitConfig,
    /// `.guardctl/policy.toml` committed on the default branch of a repository without the
    /// policy remote: the planner controls it.
    Local,
}

impl PolicySource {
    /// "built-in default", ".guardctl/policy.toml on refs/heads/main", ...
    pub fn describe(&self) -> String {
        match (self.kind, &self.location) {
            (PolicySourceKind::BuiltIn, _) => "built-in default (no policy file)".into(),
            (PolicySourceKind::Committed, Some(l)) => format!("{l} (committed)"),
            (PolicySourceKind::GitConfig, Some(l)) => format!("{l} (git config guardctl.policy)"),
            (PolicySourceKind::Local, Some(l)) => {
                format!("{l} (local policy: the planner controls it)")
            }
            (_, None) => "unknown".into(),
        }
    }
}

/// Builders for unit tests elsewhere in the crate: one merged branch, one set of inputs.
#[cfg(test)]
pub mod test_data {
    use super::*;

    /// `refs/heads/<name>`, merged, by a@x, losing `lost` commits when `lost > 0`.
    pub fn branch(name: &str, lost: u64) -> Affected {
        Affected {
            refname: format!("refs/heads/{name}"),
            oid: "1".repeat(40),
            reasons: vec![Criterion::Merged],
            last_commit_time: time::macros::datetime!(2026-01-01 0:00 UTC),
            author: Person {
                name: "A".into(),
                email: "a@x".into(),
            },
            subject: "s".into(),
            commits_not_in_base: lost,
            loses_work: lost > 0,
            upstream: None,
            config: vec![],
            tag: None,
            people_not_in_base: vec![],
        }
    }

    /// `branch` by another author.
    pub fn by(name: &str, email: &str, lost: u64) -> Affected {
        let mut a = branch(name, lost);
        a.author.email = email.into();
        a
    }

    /// A plan of `affected` (merged against main) as `guardctl plan` writes it, every derived
    /// field computed; planned by alice, for repository `r`, at 2026-06-01 12:00 UTC.
    pub fn plan(affected: Vec<Affected>, policy_hash: &str) -> Plan {
        use crate::plan::{derive, hash::plan_hash};
        let op = merged_inputs();
        let t0 = time::macros::datetime!(2026-06-01 12:00 UTC);
        let alice = Party {
            principal: Some("alice".into()),
            key: Some("SHA256:a".into()),
        };
        Plan {
            format_version: FORMAT_VERSION,
            plan_hash: plan_hash("r", &op, policy_hash, &affected).unwrap(),
            created_at: t0,
            expires_at: t0 + time::Duration::minutes(15),
            planner: alice.clone(),
            executor: alice,
            repository: "r".into(),
            nonce: "0".repeat(32),
            summary: derive::summary(&op, &affected),
            diff: derive::diff(&affected),
            side_effects: derive::side_effects(&op, &affected),
            risk: derive::risk_of(&op, &affected, false),
            review: vec![],
            policy_source: PolicySource {
                kind: PolicySourceKind::BuiltIn,
                location: None,
            },
            before_image: BeforeImage {
                namespace: BACKUP_NAMESPACE.into(),
                retention_days: 30,
            },
            operation: op,
            affected,
            skipped: vec![],
            policy_hash: policy_hash.into(),
        }
    }

    /// `--merged` against main, nothing else.
    pub fn merged_inputs() -> Operation {
        Operation::StaleBranches(StaleBranchesInputs {
            base: "refs/heads/main".into(),
            criteria: vec![Criterion::Merged],
            older_than_secs: None,
            include_unmerged: false,
            match_globs: vec![],
            exclude: vec![],
            protect: vec![],
        })
    }
}
