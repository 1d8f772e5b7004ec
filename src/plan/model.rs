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
    pub affected: Vec<Resource>,
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
    /// The preview ran outside the sandbox (only where the trusted policy allows it and the
    /// planner's system could not sandbox; `show` says so). `apply` re-runs the preview and
    /// must run it the same way, or that is drift.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview_unsandboxed: bool,
    /// Every directory of the recorded `PATH`, in order, for the reviewer (`show` lists
    /// them); `apply` checks they make the `PATH` whose digest `env` holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_dirs: Vec<String>,
    /// Every file under the working directory that git tracks or does not ignore, with the
    /// digest of its content in the work tree at planning time (`missing` for a tracked file
    /// that is not there): what the command can load from the repository. `apply` refuses
    /// any difference, checked again after the private copy is made. Always written, empty
    /// or not (an empty working directory is pinned as empty); a plan without it (made
    /// before the rule, or re-signed without it) is refused at apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<FileDigest>>,
    /// The manifest is the command's own effect, observed by running it (`bash -c LINE`) on
    /// a copy-on-write view of the machine in the trial sandbox (`crate::trial`), with
    /// `preview` empty: what the agent-shell hook plans for a line it can only judge by
    /// effect. `apply` runs the trial again and refuses any difference before the command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trial: bool,
}

/// The line of a trial plan's command (`bash -c LINE`): the only shape a trial plan has.
pub fn trial_line(command: &[String]) -> Option<&str> {
    match command {
        [shell, c, line] if shell == "bash" && c == "-c" => Some(line),
        _ => None,
    }
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

/// One resource the plan affects, with the facts observed at planning time: an
/// operation-neutral part that every kind has (what it is, the version observed, why it was
/// selected, who last touched it and when), and `facts`, the part only its kind has. Code
/// that needs a kind's own facts matches on `facts`, so a new kind of resource is a new
/// variant of `ResourceFacts` and the compiler lists every place that must decide about it.
///
/// On the wire (`affected[]`, docs/plan-format.md) a resource is one flat object whose field
/// order and names predate this split: `Serialize`/`Deserialize` go through a private wire
/// struct (`WireResource`) that denies unknown fields, and a resource whose facts mix kinds
/// (a `tag` with an upstream, say) does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// What is affected: its locator, for every kind so far the full ref name (wire `ref`).
    pub refname: String,
    /// The version observed at planning time, on which drift is judged: the object id the
    /// ref pointed at (for an annotated tag, the tag object's).
    pub oid: String,
    /// Every criterion the resource met, sorted; the first is its main reason.
    pub reasons: Vec<Criterion>,
    /// When it was last changed: a branch tip's committer time, an annotated tag's tagger
    /// date (else its commit's).
    pub last_commit_time: OffsetDateTime,
    /// Who last changed it (the tip's author, the tagger): review routes by this.
    pub author: Person,
    /// What that last change says: the commit's subject, or the tag message's first line.
    pub subject: String,
    /// What only this kind of resource has.
    pub facts: ResourceFacts,
}

/// The kind-specific part of a `Resource`. No code decides over it with a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceFacts {
    /// A branch, this repository's (`stale-branches`) or a remote's (`remote-branches`).
    Branch(BranchFacts),
    /// A tag, this repository's or a remote's (`tags`).
    Tag(TagFacts),
}

/// What deleting a ref that names commits does to history: both branches and tags have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct History {
    /// Commits reachable from the ref but not from the base.
    pub commits_not_in_base: u64,
    /// True when deleting it loses commits whose changes are not in the base.
    pub loses_work: bool,
}

/// What a plan records of a branch beyond the neutral part.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BranchFacts {
    pub history: History,
    /// Only a local branch has one.
    pub upstream: Option<Upstream>,
    /// The `branch.<name>.*` configuration the deletion removes (tracking, description, ...);
    /// only a local branch has any.
    pub config: Vec<ConfigEntry>,
    /// For a branch holding commits not in the base: the e-mail of every author and
    /// committer of those commits (sorted, distinct). Review routes match any of them, not
    /// just the tip's author: one commit by someone else on top does not re-route the work
    /// underneath. Empty for merged branches, which route by the tip's author.
    pub people_not_in_base: Vec<String>,
    /// For a squash-merged branch: the base commit that carries its change, the evidence a
    /// reviewer checks (re-derived by `verify` and `apply`, like every other fact).
    pub squashed_into: Option<SquashedInto>,
}

/// The base commit a squash-merged branch's change landed as (wire `squashed_into`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SquashedInto {
    pub commit: String,
    /// Its subject line, as the repository holds it (escaped when shown).
    pub subject: String,
}

/// What a plan records of a tag beyond the neutral part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFacts {
    pub history: History,
    /// Its kind and the commit it names (wire `tag`).
    pub object: TagObject,
}

/// A tag's kind, whether it is signed, and the commit it names (the backup commit keeps that
/// commit; the before-image keeps the tag object itself). The `tag` object of the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagObject {
    pub annotated: bool,
    pub signed: bool,
    pub commit: String,
}

/// A branch or tag name without `refs/heads/` or `refs/tags/`.
pub fn short_name(refname: &str) -> &str {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| refname.strip_prefix("refs/tags/"))
        .unwrap_or(refname)
}

impl Resource {
    /// The name without `refs/heads/` or `refs/tags/`.
    pub fn name(&self) -> &str {
        short_name(&self.refname)
    }

    /// The commit the backup must keep: a branch's tip, or the commit a tag names.
    pub fn commit(&self) -> &str {
        match &self.facts {
            ResourceFacts::Branch(_) => &self.oid,
            ResourceFacts::Tag(t) => &t.object.commit,
        }
    }

    /// What deleting it does to history (every kind so far names commits).
    pub fn history(&self) -> &History {
        match &self.facts {
            ResourceFacts::Branch(b) => &b.history,
            ResourceFacts::Tag(t) => &t.history,
        }
    }

    /// Whether deleting it loses commits whose changes are not in the base.
    pub fn loses_work(&self) -> bool {
        self.history().loses_work
    }

    /// Commits reachable from it but not from the base.
    pub fn commits_not_in_base(&self) -> u64 {
        self.history().commits_not_in_base
    }

    /// The configuration deleting it removes: a local branch's `branch.<name>.*` keys.
    pub fn config(&self) -> &[ConfigEntry] {
        match &self.facts {
            ResourceFacts::Branch(b) => &b.config,
            ResourceFacts::Tag(_) => &[],
        }
    }

    /// The authors and committers of its commits not in the base (a branch's; review routes
    /// match any of them).
    pub fn people_not_in_base(&self) -> &[String] {
        match &self.facts {
            ResourceFacts::Branch(b) => &b.people_not_in_base,
            ResourceFacts::Tag(_) => &[],
        }
    }

    /// The base commit a squash-merged branch's change landed as.
    pub fn squashed_into(&self) -> Option<&SquashedInto> {
        match &self.facts {
            ResourceFacts::Branch(b) => b.squashed_into.as_ref(),
            ResourceFacts::Tag(_) => None,
        }
    }

    pub fn main_reason(&self) -> Option<Criterion> {
        self.reasons.first().copied()
    }
}

/// One resource as `affected[]` holds it: the format's flat object, read strictly.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireResource {
    #[serde(rename = "ref")]
    refname: String,
    oid: String,
    reasons: Vec<Criterion>,
    #[serde(with = "time::serde::rfc3339")]
    last_commit_time: OffsetDateTime,
    author: Person,
    subject: String,
    commits_not_in_base: u64,
    loses_work: bool,
    upstream: Option<Upstream>,
    config: Vec<ConfigEntry>,
    #[serde(default)]
    tag: Option<TagObject>,
    #[serde(default)]
    people_not_in_base: Vec<String>,
    #[serde(default)]
    squashed_into: Option<SquashedInto>,
}

/// `WireResource` borrowed from a `Resource`, for writing (same names, order and omissions).
#[derive(Serialize)]
struct WireResourceRef<'a> {
    #[serde(rename = "ref")]
    refname: &'a str,
    oid: &'a str,
    reasons: &'a [Criterion],
    #[serde(with = "time::serde::rfc3339")]
    last_commit_time: OffsetDateTime,
    author: &'a Person,
    subject: &'a str,
    commits_not_in_base: u64,
    loses_work: bool,
    upstream: Option<&'a Upstream>,
    config: &'a [ConfigEntry],
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a TagObject>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    people_not_in_base: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    squashed_into: Option<&'a SquashedInto>,
}

impl TryFrom<WireResource> for Resource {
    type Error = String;

    /// A `tag` object makes it a tag, which has no branch facts; without one it is a branch.
    fn try_from(w: WireResource) -> Result<Self, String> {
        let history = History {
            commits_not_in_base: w.commits_not_in_base,
            loses_work: w.loses_work,
        };
        let facts = match w.tag {
            Some(object) => {
                let branch_only = if w.upstream.is_some() {
                    Some("upstream")
                } else if !w.config.is_empty() {
                    Some("config")
                } else if !w.people_not_in_base.is_empty() {
                    Some("people_not_in_base")
                } else if w.squashed_into.is_some() {
                    Some("squashed_into")
                } else {
                    None
                };
                if let Some(field) = branch_only {
                    return Err(format!(
                        "a tag (it has `tag`) cannot have `{field}`: only branches have it"
                    ));
                }
                ResourceFacts::Tag(TagFacts { history, object })
            }
            None => ResourceFacts::Branch(BranchFacts {
                history,
                upstream: w.upstream,
                config: w.config,
                people_not_in_base: w.people_not_in_base,
                squashed_into: w.squashed_into,
            }),
        };
        Ok(Resource {
            refname: w.refname,
            oid: w.oid,
            reasons: w.reasons,
            last_commit_time: w.last_commit_time,
            author: w.author,
            subject: w.subject,
            facts,
        })
    }
}

impl Serialize for Resource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (history, upstream, config, tag, people, squashed_into): (_, _, &[ConfigEntry], _, &[String], _) =
            match &self.facts {
                ResourceFacts::Branch(b) => (
                    b.history,
                    b.upstream.as_ref(),
                    &b.config,
                    None,
                    &b.people_not_in_base,
                    b.squashed_into.as_ref(),
                ),
                ResourceFacts::Tag(t) => (t.history, None, &[], Some(&t.object), &[], None),
            };
        WireResourceRef {
            refname: &self.refname,
            oid: &self.oid,
            reasons: &self.reasons,
            last_commit_time: self.last_commit_time,
            author: &self.author,
            subject: &self.subject,
            commits_not_in_base: history.commits_not_in_base,
            loses_work: history.loses_work,
            upstream,
            config,
            tag,
            people_not_in_base: people,
            squashed_into,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Resource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Resource::try_from(WireResource::deserialize(d)?).map_err(serde::de::Error::custom)
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
    pub fn branch(name: &str, lost: u64) -> Resource {
        Resource {
            refname: format!("refs/heads/{name}"),
            oid: "1".repeat(40),
            reasons: vec![Criterion::Merged],
            last_commit_time: time::macros::datetime!(2026-01-01 0:00 UTC),
            author: Person {
                name: "A".into(),
                email: "a@x".into(),
            },
            subject: "s".into(),
            facts: ResourceFacts::Branch(BranchFacts {
                history: History {
                    commits_not_in_base: lost,
                    loses_work: lost > 0,
                },
                ..BranchFacts::default()
            }),
        }
    }

    /// The branch facts of a resource `branch` made, to change in a test.
    pub fn branch_facts(a: &mut Resource) -> &mut BranchFacts {
        match &mut a.facts {
            ResourceFacts::Branch(b) => b,
            ResourceFacts::Tag(_) => panic!("not a branch"),
        }
    }

    /// `branch` by another author.
    pub fn by(name: &str, email: &str, lost: u64) -> Resource {
        let mut a = branch(name, lost);
        a.author.email = email.into();
        a
    }

    /// `refs/tags/<name>`, a lightweight tag matched by `v*`, naming a merged commit.
    pub fn tag(name: &str) -> Resource {
        Resource {
            refname: format!("refs/tags/{name}"),
            reasons: vec![Criterion::Matched],
            facts: ResourceFacts::Tag(TagFacts {
                history: History::default(),
                object: TagObject {
                    annotated: false,
                    signed: false,
                    commit: "1".repeat(40),
                },
            }),
            ..branch(name, 0)
        }
    }

    /// `plan tags --match 'v*'`.
    pub fn tag_inputs() -> Operation {
        Operation::Tags(TagsInputs {
            remote: None,
            kind: TagKind::All,
            include_signed: false,
            selection: StaleBranchesInputs {
                base: TAG_BASE.into(),
                criteria: vec![Criterion::Matched],
                older_than_secs: None,
                include_unmerged: false,
                match_globs: vec!["v*".into()],
                exclude: vec![],
                protect: vec![],
            },
        })
    }

    /// A plan of `affected` (merged against main) as `guardctl plan` writes it, every derived
    /// field computed; planned by alice, for repository `r`, at 2026-06-01 12:00 UTC.
    pub fn plan(affected: Vec<Resource>, policy_hash: &str) -> Plan {
        plan_of(merged_inputs(), affected, policy_hash)
    }

    /// `plan` of another operation.
    pub fn plan_of(op: Operation, affected: Vec<Resource>, policy_hash: &str) -> Plan {
        use crate::plan::{derive, hash::plan_hash};
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch with every branch fact set.
    fn full_branch() -> Resource {
        let mut a = test_data::branch("feature/x", 2);
        let b = test_data::branch_facts(&mut a);
        b.upstream = Some(Upstream {
            remote: "origin".into(),
            merge: "refs/heads/feature/x".into(),
            tracking_ref: None,
            gone: true,
        });
        b.config = vec![ConfigEntry {
            key: "branch.feature/x.remote".into(),
            value: "origin".into(),
        }];
        b.people_not_in_base = vec!["b@x".into()];
        b.squashed_into = Some(SquashedInto {
            commit: "2".repeat(40),
            subject: "Land x (#1)".into(),
        });
        a
    }

    #[test]
    fn a_branch_round_trips_as_the_flat_object_of_the_format() {
        let a = full_branch();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"ref":"refs/heads/feature/x","oid":"1111111111111111111111111111111111111111","#,
                r#""reasons":["merged"],"last_commit_time":"2026-01-01T00:00:00Z","#,
                r#""author":{"name":"A","email":"a@x"},"subject":"s","commits_not_in_base":2,"#,
                r#""loses_work":true,"upstream":{"remote":"origin","merge":"refs/heads/feature/x","#,
                r#""tracking_ref":null,"gone":true},"config":[{"key":"branch.feature/x.remote","#,
                r#""value":"origin"}],"people_not_in_base":["b@x"],"#,
                r#""squashed_into":{"commit":"2222222222222222222222222222222222222222","subject":"Land x (#1)"}}"#
            )
        );
        assert_eq!(serde_json::from_str::<Resource>(&text).unwrap(), a);
        // A merged branch omits `people_not_in_base`, as before the split; no branch has `tag`.
        let merged = serde_json::to_string(&test_data::branch("a", 0)).unwrap();
        assert!(
            merged.ends_with(r#""loses_work":false,"upstream":null,"config":[]}"#),
            "{merged}"
        );
    }

    #[test]
    fn a_tag_round_trips_with_its_tag_object_and_no_branch_facts() {
        let mut t = test_data::tag("v1.0");
        if let ResourceFacts::Tag(f) = &mut t.facts {
            f.object.annotated = true;
            f.history = History {
                commits_not_in_base: 3,
                loses_work: true,
            };
        }
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["tag"]["annotated"], true);
        assert_eq!(v["upstream"], serde_json::Value::Null);
        assert_eq!(v["config"], serde_json::json!([]));
        assert_eq!(v["commits_not_in_base"], 3);
        assert!(v.get("people_not_in_base").is_none());
        let back: Resource = serde_json::from_value(v).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.commit(), "1".repeat(40));
        assert_eq!(back.history().commits_not_in_base, 3);
    }

    #[test]
    fn unknown_and_missing_fields_are_refused() {
        let mut v = serde_json::to_value(full_branch()).unwrap();
        v["note"] = "trust me".into();
        let e = serde_json::from_value::<Resource>(v).unwrap_err();
        assert!(e.to_string().contains("unknown field `note`"), "{e}");
        let mut v = serde_json::to_value(test_data::tag("v1")).unwrap();
        v["tag"]["message"] = "x".into();
        assert!(serde_json::from_value::<Resource>(v).is_err());
        let mut v = serde_json::to_value(full_branch()).unwrap();
        v.as_object_mut().unwrap().remove("loses_work");
        let e = serde_json::from_value::<Resource>(v).unwrap_err();
        assert!(e.to_string().contains("missing field `loses_work`"), "{e}");
    }

    #[test]
    fn a_tag_carrying_branch_facts_does_not_parse() {
        let branch = serde_json::to_value(full_branch()).unwrap();
        let tag = serde_json::to_value(test_data::tag("v1")).unwrap();
        for field in ["upstream", "config", "people_not_in_base", "squashed_into"] {
            let mut v = tag.clone();
            v[field] = branch[field].clone();
            let e = serde_json::from_value::<Resource>(v).unwrap_err();
            assert!(
                e.to_string().contains(&format!("cannot have `{field}`")),
                "{field}: {e}"
            );
        }
    }

    #[test]
    fn facts_are_reached_through_the_kind() {
        let b = full_branch();
        assert_eq!(b.commit(), b.oid);
        assert_eq!(b.config().len(), 1);
        assert_eq!(b.people_not_in_base(), ["b@x"]);
        let mut t = test_data::tag("v1");
        t.oid = "2".repeat(40);
        assert_eq!(
            t.commit(),
            "1".repeat(40),
            "the commit the tag names, not the tag"
        );
        assert!(t.config().is_empty() && t.people_not_in_base().is_empty());
    }
}
