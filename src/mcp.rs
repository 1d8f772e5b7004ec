//! `guardctl mcp`: guardctl's plan, show, status, verify and apply as Model Context Protocol
//! tools, served over stdio with the official Rust SDK (`rmcp`).
//!
//! What it is not: a way to approve. There is no approve or reject tool in any configuration
//! (a test asserts the exact tool list): an approval comes only from another principal's key,
//! through `guardctl approve` in a terminal. Exposing `apply_plan` is safe for that reason: it
//! runs exactly the checks `guardctl apply` runs, with this server's key as the one applying.
//!
//! Every tool calls the engine function behind the CLI command it mirrors
//! (`engine::plan::plan`, `engine::show::show`, `engine::verify::verify`,
//! `engine::status::status`, `engine::apply::apply`), never the binary: plan files are
//! verified exactly as the CLI verifies them (`gate::load_plan`: a file, or a plan published on
//! the team remote named by id or prefix), and the gate is the same gate. `apply_plan` waits
//! for another clone's receipt 30s by default, not the CLI's 10m (`wait`).
//!
//! Invariants: stdout carries only protocol messages (each call's `Ui` discards data and
//! writes status to stderr); each call gets a fresh `Ctx`, so each reads the clock once; a
//! guardctl failure is a tool error (`isError: true`) whose text is the `--json` error
//! document plus `exit_code`, `meaning` and `hint` (see [`error_document`]), so a model can
//! re-plan on drift or expiry. Plans go to `<data dir>/plans/<plan id>.json` unless the call
//! names `out`, so planning writes nothing inside the repository.

use crate::context::Ctx;
use crate::engine;
use crate::engine::plan::{
    BranchesRequest, Destination, ExecRequest, OperationRequest, PlanRequest, RemoteBranchesRequest,
    TagsRequest,
};
use crate::engine::publish::Publish;
use crate::engine::show::ShowRequest;
use crate::engine::status::{PlanStatus, Standing};
use crate::engine::verify::VerifyRequest;
use crate::error::{Error, Kind, Result};
use crate::gate::Target;
use crate::render::view::{GroupView, ShowView, rfc3339};
use crate::ui::{ColorChoice, Ui};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ErrorData, Json, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every tool the server offers. Approve and reject are not among them,
/// and never will be.
pub const TOOLS: [&str; 9] = [
    "plan_stale_branches",
    "plan_remote_branches",
    "plan_tags",
    "plan_exec",
    "show_plan",
    "plan_status",
    "wait_plan",
    "verify_plan",
    "apply_plan",
];

/// What every call needs to make its own `Ctx` and `Ui`: the global flags `guardctl mcp` was
/// started with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub repo: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub allowed_signers: Option<PathBuf>,
    pub quiet: bool,
    pub color: ColorChoice,
    /// Where plans go when a call names no `out`.
    pub plans_dir: Option<PathBuf>,
    /// The trusted policy's `[agents] exec`: the server offers `plan_exec`.
    pub exec: bool,
}

impl Settings {
    fn ctx(&self) -> Ctx {
        Ctx::new(self.repo.clone(), self.key.clone(), self.allowed_signers.clone())
    }

    fn ui(&self) -> Ui {
        Ui::without_stdout(self.quiet, self.color)
    }
}

/// Serve the tools on stdin/stdout until the client closes stdin.
pub fn serve(settings: Settings) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal("cannot start the MCP server's runtime").caused_by(e))?;
    runtime.block_on(async {
        let running = Server::new(settings)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::internal("the MCP session did not start").caused_by(e))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::internal("the MCP server failed").caused_by(e))?;
        Ok(())
    })
}

#[derive(Clone)]
pub struct Server {
    settings: Arc<Settings>,
    tool_router: ToolRouter<Server>,
}

/// A guardctl failure as an MCP tool error.
pub struct ToolError(pub Error);

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> std::result::Result<CallToolResponse, ErrorData> {
        let text = serde_json::to_string_pretty(&error_document(&self.0)).unwrap_or_default();
        Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into())
    }
}

/// The error document every `--json` command prints ([`Error::to_json`]): kind, exit code,
/// meaning, message, hint and details.
pub fn error_document(e: &Error) -> Value {
    e.to_json()
}

// ---- tool inputs ---------------------------------------------------------------------------

/// Local branches that are safe to delete.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaleBranchesParams {
    /// The branch others are compared with (default: the remote HEAD's target, else
    /// init.defaultBranch, else main or master)
    #[serde(default)]
    pub base: Option<String>,
    /// Branches whose tip is reachable from the base (the default criterion)
    #[serde(default)]
    pub merged: bool,
    /// Branches whose combined change is already in the base (squash or rebase merged)
    #[serde(default)]
    pub squash_merged: bool,
    /// Branches whose upstream is configured but no longer exists
    #[serde(default)]
    pub gone: bool,
    /// Branches whose last commit is older than this, e.g. 90d
    #[serde(default)]
    pub older_than: Option<String>,
    /// Allow branches with commits not in the base (each is flagged as losing work)
    #[serde(default)]
    pub include_unmerged: bool,
    /// Only branches matching these globs (`*` does not cross `/`)
    #[serde(default, rename = "match")]
    pub match_globs: Vec<String>,
    /// Never branches matching these globs
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Protect branches matching these globs, in addition to the policy's
    #[serde(default)]
    pub protect: Vec<String>,
    /// How long the plan stays valid, e.g. 15m, 2h, 1d (default 1h, bounded by policy)
    #[serde(default)]
    pub expires_in: Option<String>,
    /// Where to write the plan (relative: to the repository's top directory); default
    /// guardctl's data directory, outside the repository
    #[serde(default)]
    pub out: Option<String>,
}

/// A remote's branches that are safe to delete, as the remote holds them now.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteBranchesParams {
    /// The remote, by name (its URL identifies the plan); fetch it first
    pub remote: String,
    /// The remote branch others are compared with, e.g. main (default: the remote's HEAD)
    #[serde(default)]
    pub base: Option<String>,
    /// Branches whose tip is reachable from the base (the default criterion)
    #[serde(default)]
    pub merged: bool,
    /// Branches whose combined change is already in the base
    #[serde(default)]
    pub squash_merged: bool,
    /// Branches whose last commit is older than this, e.g. 90d
    #[serde(default)]
    pub older_than: Option<String>,
    /// Allow branches with commits not in the base (each is flagged as losing work)
    #[serde(default)]
    pub include_unmerged: bool,
    /// Only branches matching these globs
    #[serde(default, rename = "match")]
    pub match_globs: Vec<String>,
    /// Never branches matching these globs
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Protect branches matching these globs, in addition to the policy's
    #[serde(default)]
    pub protect: Vec<String>,
    /// How long the plan stays valid, e.g. 15m, 2h, 1d (default 1h, bounded by policy)
    #[serde(default)]
    pub expires_in: Option<String>,
    /// Where to write the plan (relative: to the repository's top directory); default
    /// guardctl's data directory
    #[serde(default)]
    pub out: Option<String>,
}

/// Tags that are safe to delete, here or on a remote. Name `match` and/or `older_than`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagsParams {
    /// A remote's tags, by remote name (fetch first); default: this repository's
    #[serde(default)]
    pub remote: Option<String>,
    /// Tags whose name matches these globs
    #[serde(default, rename = "match")]
    pub match_globs: Vec<String>,
    /// Tags older than this, e.g. 2y (the tagger's date, else the commit's)
    #[serde(default)]
    pub older_than: Option<String>,
    /// Never tags matching these globs
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Protect tags matching these globs, in addition to the policy's
    #[serde(default)]
    pub protect: Vec<String>,
    /// Only annotated tags
    #[serde(default)]
    pub annotated: bool,
    /// Only lightweight tags
    #[serde(default)]
    pub lightweight: bool,
    /// Allow signed tags
    #[serde(default)]
    pub include_signed: bool,
    /// Allow tags whose commits no branch reaches (each is flagged as losing work)
    #[serde(default)]
    pub include_unmerged: bool,
    /// How long the plan stays valid, e.g. 15m, 2h, 1d (default 1h, bounded by policy)
    #[serde(default)]
    pub expires_in: Option<String>,
    /// Where to write the plan (relative: to the repository's top directory); default
    /// guardctl's data directory
    #[serde(default)]
    pub out: Option<String>,
}

/// Any destructive command, gated by its preview.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecParams {
    /// A shell command whose output lists what the command will do (the manifest the
    /// reviewer approves). It runs now, while planning.
    pub preview: String,
    /// The command and its arguments (run without a shell)
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// A shell command run first at apply time (e.g. a dump); it must succeed
    #[serde(default)]
    pub before_image: Option<String>,
    /// Environment variables the commands get (PATH always)
    #[serde(default)]
    pub env: Vec<String>,
    /// Bind the plan to this remote's URL instead of this clone
    #[serde(default)]
    pub remote: Option<String>,
    /// Files or directories to pin too, e.g. helpers a script sources
    #[serde(default)]
    pub pin: Vec<String>,
    /// A shell command run after the command; its output lists the manifest's resources still
    /// present (the observed effect)
    #[serde(default)]
    pub verify: Option<String>,
    /// How long the plan stays valid, e.g. 15m, 2h, 1d (default 1h, bounded by policy)
    #[serde(default)]
    pub expires_in: Option<String>,
    /// Where to write the plan (relative: to the repository's top directory); default
    /// guardctl's data directory
    #[serde(default)]
    pub out: Option<String>,
}

/// A plan file or a published plan's id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanParams {
    /// The plan file (`plan_file` from a plan tool; relative: to the repository's top
    /// directory), or the id (`sha256:<hex>`, hex) or a unique prefix of 8+ hex digits of a
    /// plan published on the team remote, as the CLI takes it (an existing file wins)
    pub plan: String,
}

/// A plan (file or published id) and its detached approvals.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateParams {
    /// The plan file (`plan_file` from a plan tool; relative: to the repository's top
    /// directory), or the id (`sha256:<hex>`, hex) or a unique prefix of 8+ hex digits of a
    /// plan published on the team remote, as the CLI takes it (an existing file wins)
    pub plan: String,
    /// Detached approval files (`guardctl approve --out FILE`); approvals appended to the
    /// plan file count without this
    #[serde(default)]
    pub approvals: Vec<String>,
}

/// `wait_plan`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// The plan file (`plan_file` from a plan tool), or the id or a unique prefix of 8+ hex
    /// digits of a plan published on the team remote, as the CLI takes it
    pub plan: String,
    /// How long to wait for a decision, e.g. 30s, 2m (default 30s, at most 10m: a client
    /// times a call out long before the CLI's 30m); past it the state is
    /// awaiting_approval with timed_out true: call again
    #[serde(default)]
    pub timeout: Option<String>,
}

/// What `wait_plan` returns: the plan's final standing, or where it stands when the time ran
/// out.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitOutput {
    pub plan_id: String,
    pub state: State,
    /// The time allowed ran out with the plan still awaiting approval
    pub timed_out: bool,
    /// Distinct principals whose approvals count
    pub approved_by: Vec<String>,
    /// Principals whose rejection vetoes the plan
    pub rejected_by: Vec<String>,
    pub expires_at: String,
    pub waited_secs: u64,
}

/// `wait_plan`'s default and longest wait.
const WAIT_PLAN_DEFAULT: std::time::Duration = std::time::Duration::from_secs(30);
const WAIT_PLAN_MAX: std::time::Duration = std::time::Duration::from_secs(600);

/// `apply_plan`'s arguments: the plan, its detached approvals, and how long to wait for the
/// receipt of an apply in another clone.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyParams {
    /// The plan file (`plan_file` from a plan tool; relative: to the repository's top
    /// directory), or the id (`sha256:<hex>`, hex) or a unique prefix of 8+ hex digits of a
    /// plan published on the team remote, as the CLI takes it (an existing file wins)
    pub plan: String,
    /// Detached approval files (`guardctl approve --out FILE`); approvals appended to the
    /// plan file and published ones count without this
    #[serde(default)]
    pub approvals: Vec<String>,
    /// When another clone consumed the plan on its remote and has not published its receipt
    /// yet (it is still applying): how long to wait for it, e.g. 10s, 2m (default 30s; 0: do
    /// not wait). Past it the call is a tool error with kind needs_recovery naming who
    /// consumed the plan; calling again later returns that receipt
    #[serde(default)]
    pub wait: Option<String>,
}

/// How long `apply_plan` waits for another clone's receipt unless the call says: short, so a
/// tool call never hangs for the CLI's ten minutes (clients time calls out after about a
/// minute); the agent can call again, which returns the receipt once it is published.
pub const DEFAULT_APPLY_WAIT: &str = "30s";

/// A plan file and which part of it to show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowParams {
    /// The plan file (`plan_file` from a plan tool; relative: to the repository's top
    /// directory), or the id (`sha256:<hex>`, hex) or a unique prefix of 8+ hex digits of a
    /// plan published on the team remote, as the CLI takes it (an existing file wins)
    pub plan: String,
    /// Page N of the affected resources (50 per page); default: a summary of large plans
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// List every affected and skipped resource (not with `page`)
    #[serde(default)]
    pub all: bool,
    /// An earlier plan of the same operation (a file, or a published plan's id or prefix):
    /// also show what changed since it
    #[serde(default)]
    pub since: Option<String>,
}

// ---- tool outputs --------------------------------------------------------------------------

/// A review group of a plan: who must approve, who did, how many are missing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Group {
    pub group: String,
    pub required: u32,
    pub approved_by: Vec<String>,
    pub missing: u32,
    /// Who may approve; empty: any known principal but the planner
    pub approvers: Vec<String>,
}

impl From<&GroupView> for Group {
    fn from(g: &GroupView) -> Group {
        Group {
            group: g.name.clone(),
            required: g.required,
            approved_by: g.approved_by.clone(),
            missing: g.missing,
            approvers: g.approvers.clone(),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReasonCount {
    pub reason: String,
    pub count: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Resources the plan would delete
    pub affected: usize,
    /// Resources considered and not planned (see `show_plan`)
    pub skipped: usize,
    pub by_reason: Vec<ReasonCount>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Risk {
    /// low, medium or high
    pub level: String,
    pub reasons: Vec<String>,
}

/// A plan written and signed with this server's key, waiting for a human's approval.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlanOutput {
    pub plan_id: String,
    /// Where the plan was written: pass it to the other tools
    pub plan_file: String,
    pub operation: String,
    /// Generated from the plan's data
    pub summary: String,
    pub counts: Counts,
    pub risk: Risk,
    pub expires_at: String,
    /// Review groups whose approvals are still missing: every one must be approved
    pub approvals_needed: Vec<Group>,
    /// What a human runs in a terminal to review and approve exactly this plan
    pub approve_command: String,
}

/// Where a plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Approvals are missing: a human must run `approve_command`
    AwaitingApproval,
    /// Every review group is approved: `apply_plan` would proceed (unless the repository drifted)
    Approved,
    /// A valid rejection vetoes it: plan again if the change is still wanted
    Rejected,
    /// Past `expires_at`: plan again
    Expired,
    /// Applied: `apply_plan` returns the recorded receipt
    Applied,
    /// Its apply was refused under the lock (drift) and the plan is used up: plan again
    Aborted,
    /// Its apply was interrupted: a human must run `guardctl recover`
    Interrupted,
}

impl From<Standing> for State {
    fn from(s: Standing) -> State {
        match s {
            Standing::AwaitingApproval => State::AwaitingApproval,
            Standing::Approved => State::Approved,
            Standing::Rejected => State::Rejected,
            Standing::Expired => State::Expired,
            Standing::Applied => State::Applied,
            Standing::Aborted => State::Aborted,
            Standing::Interrupted => State::Interrupted,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusOutput {
    pub plan_id: String,
    /// The plan file, or the published plan's id as the call gave it
    pub plan_file: String,
    pub operation: String,
    pub summary: String,
    pub state: State,
    pub expires_at: String,
    pub expired: bool,
    /// Seconds until expiry (negative: expired that long ago)
    pub expires_in_secs: i64,
    /// Every review group, with the approvals present and missing
    pub groups: Vec<Group>,
    /// Distinct principals whose approvals count
    pub approved_by: Vec<String>,
    /// Principals whose rejection vetoes the plan
    pub rejected_by: Vec<String>,
    /// Approvals present that do not count, and why
    pub not_counted: Vec<String>,
    /// Attached approvals that are damaged or not signed in the approval namespace
    pub invalid_approvals: usize,
    /// What a human runs in a terminal to review and approve this plan
    pub approve_command: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VerifyOutput {
    pub plan_id: String,
    /// Always true: a failed check is a tool error with its kind
    pub ok: bool,
    /// Applied before: `apply_plan` would return the recorded receipt
    pub already_applied: bool,
    pub approved_by: Vec<String>,
    pub groups: Vec<Group>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ApplyOutput {
    pub plan_id: String,
    /// The plan was applied before: this is the recorded receipt and nothing changed now
    pub replayed: bool,
    /// The observed effect equals the plan
    pub verified: bool,
    /// The signed receipt's payload (what `guardctl --json apply` prints under `receipt`)
    pub receipt: Value,
    /// The receipt as a DSSE envelope signed in namespace guardctl-apply
    pub envelope: Value,
    /// What a human runs to restore what the plan deleted (none for an exec plan)
    pub undo_command: Option<String>,
}

/// `show_plan`'s result: exactly the document `guardctl --json show` prints.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct ShowOutput(pub Value);

/// The top-level fields of `ShowView` as `show --json` writes them (the MCP tests check this list
/// against real documents).
pub const SHOW_FIELDS: &[(&str, &str)] = &[
    ("plan_id", "string"),
    ("plan_hash", "string"),
    ("summary", "string"),
    ("operation", "string"),
    ("resource", "string"),
    ("resources", "string"),
    ("repository", "string"),
    ("remote", "string"),
    ("base", "string"),
    ("criteria", "array"),
    ("selection", "array"),
    ("planner", "object"),
    ("executor", "object"),
    ("created_at", "string"),
    ("expires_at", "string"),
    ("expires_in_secs", "integer"),
    ("expired", "boolean"),
    ("approvals", "object"),
    ("policy", "object"),
    ("risk", "object"),
    ("total_affected", "integer"),
    ("counts_by_reason", "array"),
    ("rows", "object"),
    ("extremes", "object"),
    ("side_effects", "array"),
    ("before_image", "string"),
    ("skipped", "object"),
    ("exec", "object"),
    ("since", "object"),
];

/// Fields `show --json` writes only for some plans.
const SHOW_OPTIONAL: [&str; 3] = ["remote", "exec", "since"];

impl JsonSchema for ShowOutput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ShowPlanOutput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let fields = SHOW_FIELDS.iter();
        let properties: serde_json::Map<String, Value> = fields
            .clone()
            .map(|(name, ty)| (name.to_string(), json!({ "type": ty })))
            .collect();
        let required: Vec<&str> = fields
            .map(|(name, _)| *name)
            .filter(|n| !SHOW_OPTIONAL.contains(n))
            .collect();
        schemars::json_schema!({
            "type": "object",
            "description": "The plan as `guardctl --json show` prints it: summary, approvals per review group, policy, risk, a page of rows, extremes, side effects, skipped resources",
            "properties": properties,
            "required": required,
        })
    }
}

// ---- the server ----------------------------------------------------------------------------

#[tool_router]
impl Server {
    pub fn new(settings: Settings) -> Server {
        let mut tool_router = Self::tool_router();
        if !settings.exec {
            // Not listed, not callable: it runs the agent's command by design.
            tool_router.remove_route("plan_exec");
        }
        for route in tool_router.map.values_mut() {
            let tool = &mut route.attr;
            tool.input_schema = Arc::new(host_schema(&tool.input_schema));
            if let Some(out) = &tool.output_schema {
                tool.output_schema = Some(Arc::new(host_schema(out)));
            }
        }
        Server {
            settings: Arc::new(settings),
            tool_router,
        }
    }

    /// Run `f` on a blocking thread (git, ssh-keygen and the file system block), so the
    /// protocol stays responsive while a tool works.
    async fn blocking<T, F>(&self, f: F) -> Result<Json<T>, ToolError>
    where
        T: Send + 'static,
        F: FnOnce(&Settings) -> Result<T> + Send + 'static,
    {
        let settings = self.settings.clone();
        match tokio::task::spawn_blocking(move || f(&settings)).await {
            Ok(Ok(v)) => Ok(Json(v)),
            Ok(Err(e)) => Err(ToolError(e)),
            Err(e) => Err(ToolError(
                Error::internal("the tool's worker thread failed").caused_by(e),
            )),
        }
    }

    /// Plan deleting local branches that are safe to delete (merged, squash-merged, gone,
    /// older than). Writes a signed plan and changes nothing in the repository. Returns the
    /// plan id, summary, counts, risk, the approvals still needed and the command a human
    /// runs to approve it.
    #[tool(annotations(
        title = "Plan deleting stale local branches",
        read_only_hint = true,
        destructive_hint = false,
        // The policy and identities in force come from the team remote's default branch.
        open_world_hint = true
    ))]
    async fn plan_stale_branches(
        &self,
        Parameters(p): Parameters<StaleBranchesParams>,
    ) -> Result<Json<PlanOutput>, ToolError> {
        self.blocking(move |s| {
            let op = OperationRequest::StaleBranches(branches(
                p.base,
                p.gone,
                p.merged,
                p.older_than.as_deref(),
                p.squash_merged,
                p.include_unmerged,
                [p.match_globs, p.exclude, p.protect],
            )?);
            plan(s, op, p.expires_in.as_deref(), p.out.as_deref())
        })
        .await
    }

    /// Plan deleting a remote's branches that are safe to delete, judged as the remote holds
    /// them now (run `git fetch` first). Writes a signed plan bound to the remote's URL and
    /// changes nothing. Returns what plan_stale_branches returns.
    #[tool(annotations(
        title = "Plan deleting a remote's stale branches",
        read_only_hint = true,
        destructive_hint = false,
        open_world_hint = true
    ))]
    async fn plan_remote_branches(
        &self,
        Parameters(p): Parameters<RemoteBranchesParams>,
    ) -> Result<Json<PlanOutput>, ToolError> {
        self.blocking(move |s| {
            let op = OperationRequest::RemoteBranches(RemoteBranchesRequest {
                remote: p.remote,
                branches: branches(
                    p.base,
                    false,
                    p.merged,
                    p.older_than.as_deref(),
                    p.squash_merged,
                    p.include_unmerged,
                    [p.match_globs, p.exclude, p.protect],
                )?,
            });
            plan(s, op, p.expires_in.as_deref(), p.out.as_deref())
        })
        .await
    }

    /// Plan deleting tags (here, or a remote's with `remote`); name `match` and/or
    /// `older_than`. Signed tags and tags whose commits no branch reaches are kept unless
    /// allowed. Writes a signed plan and changes nothing. Returns what plan_stale_branches
    /// returns.
    #[tool(annotations(
        title = "Plan deleting tags",
        read_only_hint = true,
        destructive_hint = false,
        open_world_hint = true
    ))]
    async fn plan_tags(&self, Parameters(p): Parameters<TagsParams>) -> Result<Json<PlanOutput>, ToolError> {
        self.blocking(move |s| {
            let op = OperationRequest::Tags(TagsRequest {
                remote: p.remote,
                match_globs: p.match_globs,
                older_than: age(p.older_than.as_deref(), "older_than")?,
                exclude: p.exclude,
                protect: p.protect,
                annotated: p.annotated,
                lightweight: p.lightweight,
                include_signed: p.include_signed,
                include_unmerged: p.include_unmerged,
            });
            if p.annotated && p.lightweight {
                return Err(Error::usage("`annotated` and `lightweight` exclude each other"));
            }
            plan(s, op, p.expires_in.as_deref(), p.out.as_deref())
        })
        .await
    }

    /// Plan running a destructive command, gated by its preview: RUNS the preview command now,
    /// sandboxed (no keys, no agent, no network, the work tree read-only), and records its
    /// output as the manifest the reviewer approves. Writes a signed plan. Returns what
    /// plan_stale_branches returns. Offered only where the trusted policy sets
    /// `[agents] exec = true`.
    #[tool(annotations(
        title = "Plan a destructive command (runs its preview)",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = true
    ))]
    async fn plan_exec(&self, Parameters(p): Parameters<ExecParams>) -> Result<Json<PlanOutput>, ToolError> {
        self.blocking(move |s| {
            if p.command.is_empty() {
                return Err(Error::usage("`command` needs at least the program to run"));
            }
            // Asked again per call: the policy may have changed since the server started.
            if !s.ctx().policy_for(p.remote.as_deref())?.policy.agents.exec {
                return Err(Error::new(
                    Kind::Policy,
                    "the trusted policy does not let agents plan commands",
                )
                .with_hint("an administrator sets `[agents] exec = true` in the trusted policy"));
            }
            let op = OperationRequest::Exec(ExecRequest {
                remote: p.remote,
                preview: p.preview,
                before_image: p.before_image,
                env: p.env,
                command: p.command,
                pin: p.pin,
                verify: p.verify,
                verify_prints: None,
                trial: false,
            });
            plan(s, op, p.expires_in.as_deref(), p.out.as_deref())
        })
        .await
    }

    /// Show a plan as a reviewer sees it (the document `guardctl --json show` prints), after
    /// verifying it: summary, approvals per review group, risk, a page of the resources,
    /// extremes, side effects and what was not planned. Large plans are paged (`page`).
    #[tool(annotations(
        title = "Show a plan",
        read_only_hint = true,
        destructive_hint = false,
        // A published plan, its approvals and the trusted files are read from the team remote.
        open_world_hint = true
    ))]
    async fn show_plan(&self, Parameters(p): Parameters<ShowParams>) -> Result<Json<ShowOutput>, ToolError> {
        self.blocking(move |s| show(s, p)).await
    }

    /// Where a plan stands: its state (awaiting_approval, approved, rejected, expired,
    /// applied, ...), each review group's approvals present and missing, rejections, expiry,
    /// and the command a human runs to approve it. Does not check the repository for drift
    /// (verify_plan does).
    #[tool(annotations(
        title = "A plan's approvals and expiry",
        read_only_hint = true,
        destructive_hint = false,
        // Approvals, rejections and receipts published on the team remote count.
        open_world_hint = true
    ))]
    async fn plan_status(
        &self,
        Parameters(p): Parameters<PlanParams>,
    ) -> Result<Json<StatusOutput>, ToolError> {
        self.blocking(move |s| status(s, &p.plan)).await
    }

    /// Wait until a person decides on the plan: returns its state once it is approved,
    /// rejected, expired or applied, or, when `timeout` (default 30s) passes first, state
    /// awaiting_approval with timed_out true (call again). Changes nothing.
    #[tool(annotations(
        title = "Wait for a person's decision on a plan",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        // Approvals and rejections published on the team remote count.
        open_world_hint = true
    ))]
    async fn wait_plan(&self, Parameters(p): Parameters<WaitParams>) -> Result<Json<WaitOutput>, ToolError> {
        self.blocking(move |s| wait(s, p)).await
    }

    /// Run every check apply_plan runs (integrity, expiry, principal, approvals, policy,
    /// drift), with this server's key as the one applying, without changing anything. A
    /// failed check is a tool error carrying error.kind (drift, expired, unapproved, ...).
    #[tool(annotations(
        title = "Check a plan as apply would",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        // A remote plan is judged against the remote as it is now.
        open_world_hint = true
    ))]
    async fn verify_plan(
        &self,
        Parameters(p): Parameters<GateParams>,
    ) -> Result<Json<VerifyOutput>, ToolError> {
        self.blocking(move |s| verify(s, p)).await
    }

    /// Apply exactly the approved plan, with this server's key as the executor: re-checks
    /// everything, backs up, deletes, verifies and records a signed receipt. Refuses (a tool
    /// error with error.kind) on drift, expiry, missing approvals, a wrong executor or a
    /// changed policy. Calling it again returns the same recorded receipt and changes nothing;
    /// so does a plan applied in another clone (its published receipt, waiting up to `wait`,
    /// default 30s, for it).
    #[tool(annotations(
        title = "Apply an approved plan",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        // It may delete a remote's refs and publishes its receipt on the team remote.
        open_world_hint = true
    ))]
    async fn apply_plan(
        &self,
        Parameters(p): Parameters<ApplyParams>,
    ) -> Result<Json<ApplyOutput>, ToolError> {
        self.blocking(move |s| apply(s, p)).await
    }
}

/// A schema as MCP hosts read it: schemars writes Rust's integer widths as formats (`uint`,
/// `uint32`, `int64`), which are not JSON Schema formats and which hosts warn about (the MCP
/// Inspector, once per field); an unsigned integer is `integer` with `minimum: 0`.
fn host_schema(schema: &rmcp::model::JsonObject) -> rmcp::model::JsonObject {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                let integer = match map.get("type") {
                    Some(Value::String(t)) => t == "integer",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                    _ => false,
                };
                // The format goes whatever it says; an unsigned width leaves its lower bound.
                if integer
                    && let Some(Value::String(format)) = map.remove("format")
                    && format.starts_with("uint")
                    && !map.contains_key("minimum")
                {
                    map.insert("minimum".into(), json!(0));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = Value::Object(schema.clone());
    walk(&mut v);
    match v {
        Value::Object(map) => map,
        _ => schema.clone(),
    }
}

/// rmcp answers arguments that do not deserialize with a plain-text tool error
/// (`failed to deserialize parameters: …`); a model reads every other failure as the error
/// document, so this one is one too: `usage`, exit code 64, naming the tool.
fn argument_error(tool: &str, response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    let text = match (result.is_error, result.content.first().and_then(|c| c.as_text())) {
        (Some(true), Some(t)) => t.text.clone(),
        _ => return response,
    };
    let Some(why) = text.strip_prefix("failed to deserialize parameters:") else {
        return response;
    };
    let e = Error::usage(format!("invalid arguments for {tool}: {}", why.trim()))
        .with_hint("the tool's input schema (tools/list) names every argument it takes and its type");
    ToolError(e).into_call_tool_result().unwrap_or(response)
}

#[tool_handler(router = self.tool_router, name = "guardctl", instructions = "guardctl puts a two-person gate in front of destructive git operations. \
Plan with a plan_* tool (it writes a signed plan and changes nothing), then ask a human to run the \
returned approve_command in a terminal: there is no approve tool, and this server's key cannot \
approve its own plans. Poll plan_status; when its state is approved, call apply_plan. Errors carry \
error.kind: on drift or expired, plan again and ask for a new approval.")]
impl ServerHandler for Server {
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        Ok(argument_error(&tool, self.tool_router.call(tcc).await?))
    }
}

// ---- the tools' bodies (blocking) ----------------------------------------------------------

/// An age (`older_than`): as [`duration`], refusing the ambiguous bare `m`.
fn age(value: Option<&str>, field: &str) -> Result<Option<std::time::Duration>> {
    value
        .map(|v| crate::duration::parse_age(v).map_err(|e| Error::usage(format!("`{field}`: {e}"))))
        .transpose()
}

fn duration(value: Option<&str>, field: &str) -> Result<Option<std::time::Duration>> {
    value
        .map(|v| crate::duration::parse(v).map_err(|e| Error::usage(format!("`{field}`: {e}"))))
        .transpose()
}

/// A branch operation's base, criteria and patterns, as the tools take them.
fn branches(
    base: Option<String>,
    gone: bool,
    merged: bool,
    older_than: Option<&str>,
    squash_merged: bool,
    include_unmerged: bool,
    [match_globs, exclude, protect]: [Vec<String>; 3],
) -> Result<BranchesRequest> {
    Ok(BranchesRequest {
        named: false,
        base,
        gone,
        merged,
        older_than: age(older_than, "older_than")?,
        squash_merged,
        include_unmerged,
        match_globs,
        exclude,
        protect,
    })
}

/// `path` as the tools take it: absolute, or relative to the repository's top directory
/// (else the server's working directory).
fn resolve(ctx: &Ctx, path: &str) -> Result<PathBuf> {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        return Ok(p);
    }
    let base = match ctx.repo() {
        Ok(repo) => repo.display_path(),
        Err(_) => ctx.start_dir()?,
    };
    Ok(base.join(p))
}

/// A tool's `plan` argument as the CLI would take it (`gate::load_plan`): the file it names
/// (resolved as [`resolve`] does) when there is one, else, when it looks like a plan id or a
/// prefix of one, that id for `load_plan` to look up among the published plans (the same
/// resolution and errors as `guardctl show <id>`: 66 for none, 64 for an ambiguous prefix).
fn plan_arg(ctx: &Ctx, arg: &str) -> Result<PathBuf> {
    let path = resolve(ctx, arg)?;
    let hex = arg.strip_prefix("sha256:").unwrap_or(arg);
    let looks_like_id = !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    if looks_like_id && std::fs::symlink_metadata(&path).is_err() {
        return Ok(PathBuf::from(arg));
    }
    if looks_like_id {
        // A file named like an id is that plan or refused, as on the command line.
        crate::gate::file_named_like_an_id(arg, &crate::planfile::load(&path)?)?;
    }
    Ok(path)
}

/// The exact command a human runs in a terminal to review and approve the plan.
pub fn approve_command(repo: &Path, plan: &Path) -> String {
    crate::render::guard::guardctl_command(repo, "approve", &plan.display().to_string())
}

fn repo_path(ctx: &Ctx) -> Result<PathBuf> {
    Ok(ctx.repo()?.display_path())
}

fn plan(
    s: &Settings,
    operation: OperationRequest,
    expires_in: Option<&str>,
    out: Option<&str>,
) -> Result<PlanOutput> {
    let ctx = s.ctx();
    let mut ui = s.ui();
    let request = PlanRequest {
        operation,
        expires_in: duration(expires_in, "expires_in")?,
        executor: None,
        destination: Destination::Agent {
            plans_dir: s.plans_dir.clone(),
            out: out.map(String::from),
        },
        // An agent's plan is a file it hands on; publishing is the CLI's (`plan --publish`).
        publish: Publish::Never,
    };
    let planned = crate::engine::plan::plan(&ctx, &mut ui, request)?;
    ui.status(&format!(
        "Saved plan {} to {}.",
        planned.plan_id,
        planned.path.display()
    ));
    Ok(plan_output(
        &planned.view,
        &planned.plan.summary,
        &planned.path,
        &repo_path(&ctx)?,
    ))
}

fn plan_output(v: &ShowView, summary: &str, path: &Path, repo: &Path) -> PlanOutput {
    PlanOutput {
        plan_id: v.plan_id.clone(),
        plan_file: path.display().to_string(),
        operation: v.operation.clone(),
        summary: summary.to_string(),
        counts: Counts {
            affected: v.total_affected,
            skipped: v.skipped.total,
            by_reason: v
                .counts_by_reason
                .iter()
                .map(|c| ReasonCount {
                    reason: c.reason.to_string(),
                    count: c.count,
                })
                .collect(),
        },
        risk: Risk {
            level: v.risk.level.to_string(),
            reasons: v.risk.reasons.clone(),
        },
        expires_at: v.expires_at.clone(),
        approvals_needed: v
            .approvals
            .groups
            .iter()
            .filter(|g| g.missing > 0)
            .map(Group::from)
            .collect(),
        approve_command: approve_command(repo, path),
    }
}

fn show(s: &Settings, p: ShowParams) -> Result<ShowOutput> {
    let ctx = s.ctx();
    let mut ui = s.ui();
    if p.page == Some(0) {
        return Err(Error::usage("`page` counts from 1"));
    }
    if p.all && p.page.is_some() {
        return Err(Error::usage("`all` and `page` exclude each other"));
    }
    let request = ShowRequest {
        plan: plan_arg(&ctx, &p.plan)?,
        all: p.all,
        page: p.page,
        since: p.since.map(|since| plan_arg(&ctx, &since)).transpose()?,
    };
    let view = crate::engine::show::show(&ctx, &mut ui, &request)?;
    let value =
        serde_json::to_value(&view).map_err(|e| Error::internal("cannot encode the view").caused_by(e))?;
    Ok(ShowOutput(value))
}

fn status(s: &Settings, plan: &str) -> Result<StatusOutput> {
    let ctx = s.ctx();
    let path = plan_arg(&ctx, plan)?;
    let status = crate::engine::status::status(&ctx, &path)?;
    let standing = status.standing(ctx.now);
    let PlanStatus {
        plan_id,
        plan: p,
        approvals,
        ..
    } = status;
    let expired = ctx.now >= p.expires_at;
    let state = State::from(standing);
    let repo = match ctx.repo() {
        Ok(r) => r.display_path(),
        Err(_) => ctx.start_dir()?,
    };
    Ok(StatusOutput {
        plan_id,
        plan_file: path.display().to_string(),
        operation: p.operation.kind().to_string(),
        summary: p.summary.clone(),
        state,
        expires_at: rfc3339(p.expires_at),
        expired,
        expires_in_secs: (p.expires_at - ctx.now).whole_seconds(),
        groups: approvals.groups.iter().map(Group::from).collect(),
        approved_by: approvals.approved_by.clone(),
        rejected_by: approvals.rejected_by.clone(),
        not_counted: approvals.not_counted.clone(),
        invalid_approvals: approvals.invalid,
        approve_command: approve_command(&repo, &path),
    })
}

fn wait(s: &Settings, p: WaitParams) -> Result<WaitOutput> {
    let timeout = duration(p.timeout.as_deref(), "timeout")?.unwrap_or(WAIT_PLAN_DEFAULT);
    if timeout > WAIT_PLAN_MAX {
        return Err(Error::usage(
            "`timeout` is at most 10m: call again to wait longer",
        ));
    }
    let plan = plan_arg(&s.ctx(), &p.plan)?;
    let mut ui = s.ui();
    let request = crate::engine::wait::WaitRequest { plan, timeout };
    let w = crate::engine::wait::wait(&|| s.ctx(), &mut ui, &request)?;
    Ok(WaitOutput {
        plan_id: w.status.plan_id.clone(),
        state: State::from(w.standing),
        timed_out: w.timed_out,
        approved_by: w.status.approvals.approved_by.clone(),
        rejected_by: w.status.approvals.rejected_by.clone(),
        expires_at: rfc3339(w.status.plan.expires_at),
        waited_secs: w.waited.as_secs(),
    })
}

fn target(ctx: &Ctx, plan: &str, approvals: &[String]) -> Result<Target> {
    Ok(Target {
        plan: plan_arg(ctx, plan)?,
        approvals: approvals.iter().map(|a| resolve(ctx, a)).collect::<Result<_>>()?,
    })
}

fn verify(s: &Settings, p: GateParams) -> Result<VerifyOutput> {
    let ctx = s.ctx();
    let mut ui = s.ui();
    let request = VerifyRequest {
        target: target(&ctx, &p.plan, &p.approvals)?,
    };
    let v = crate::engine::verify::verify(&ctx, &mut ui, &request)?;
    Ok(VerifyOutput {
        plan_id: v.cleared.loaded.plan_id.clone(),
        ok: true,
        already_applied: v.consumed,
        approved_by: v.cleared.report.approved_by.clone(),
        groups: v
            .cleared
            .report
            .groups
            .iter()
            .map(|g| Group {
                group: g.name.clone(),
                required: g.required,
                approved_by: g.approved_by.clone(),
                missing: g.missing,
                approvers: g.approvers.clone(),
            })
            .collect(),
    })
}

fn apply(s: &Settings, p: ApplyParams) -> Result<ApplyOutput> {
    let ctx = s.ctx();
    let mut ui = s.ui();
    let wait = p.wait.as_deref().unwrap_or(DEFAULT_APPLY_WAIT);
    let request = engine::apply::ApplyRequest {
        target: target(&ctx, &p.plan, &p.approvals)?,
        wait: engine::apply::parse_wait(wait).map_err(|e| Error::usage(format!("`wait`: {e}")))?,
    };
    let outcome = engine::apply::apply(&ctx, &mut ui, &request)?;
    let repo = ctx.repo()?;
    // As `apply --json` prints them (its keys sorted: a `Value`'s map).
    let value = |v: Result<Value, serde_json::Error>| {
        v.map_err(|e| Error::internal("cannot encode the receipt").caused_by(e))
    };
    let receipt = value(serde_json::to_value(&outcome.receipt))?;
    if let Some(e) = outcome.unverified() {
        return Err(e.with_details(json!({ "receipt": receipt })));
    }
    if outcome.replayed() {
        ui.notice("this plan was already applied; returning the recorded result (nothing was changed now)");
    }
    let undo_command =
        outcome.receipt.exec.is_none().then(|| {
            crate::render::guard::guardctl_command(&repo.display_path(), "rollback", &outcome.plan_id)
        });
    Ok(ApplyOutput {
        replayed: outcome.replayed(),
        verified: outcome.receipt.verified,
        envelope: value(serde_json::to_value(&outcome.envelope))?,
        plan_id: outcome.plan_id,
        receipt,
        undo_command,
    })
}

// `guardctl mcp` itself: the clap arguments and the entry point the dispatcher calls (here,
// not in `commands`, so that `commands` never imports `mcp`, which imports `commands`).

/// Serve guardctl as a Model Context Protocol server on stdin/stdout, for AI agents.
///
/// Tools: plan_stale_branches, plan_remote_branches, plan_tags, plan_exec, show_plan,
/// plan_status, verify_plan, apply_plan. There is no approve or reject tool: a human approves
/// with `guardctl approve` in a terminal. Plans are signed with this server's key (--key,
/// GUARDCTL_KEY, ...) and written to guardctl's data directory unless a call names `out`.
/// Give the agent's key namespaces="guardctl-plan,guardctl-apply" in the allowed-signers file;
/// the server warns at start when its key may also approve. stdout carries only protocol
/// messages; status goes to stderr. Stops when the client closes stdin.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx, ui: &mut Ui) -> Result<u8> {
    // Outside a repository, or with a policy that cannot be read, the defaults: no agent
    // setting is on.
    let agents = ctx.policy().map(|p| p.policy.agents.clone()).unwrap_or_default();
    if let Some(fp) = crate::engine::whoami::check_server_key(ctx, ui, &agents)? {
        ui.status(&format!("guardctl mcp: serving on stdio with key {fp}"));
    }
    let (repo, key, allowed_signers) = ctx.flags();
    serve(Settings {
        repo,
        key,
        allowed_signers,
        quiet: ui.quiet,
        color: if ui.err_color {
            ColorChoice::Always
        } else {
            ColorChoice::Never
        },
        plans_dir: crate::context::default_plans_dir(),
        exec: agents.exec,
    })?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_document_carries_kind_exit_code_meaning_and_hint() {
        let e = Error::new(Kind::Drift, "the repository no longer matches the plan")
            .caused_by("refs/heads/x oid: planned a, now b")
            .with_hint("re-run `guardctl plan`");
        let doc = error_document(&e);
        assert_eq!(doc["error"]["kind"], "drift");
        assert_eq!(doc["error"]["exit_code"], 10);
        assert_eq!(doc["error"]["hint"], "re-run `guardctl plan`");
        assert_eq!(doc["error"]["meaning"], Kind::Drift.meaning());
        assert!(
            doc["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("planned a, now b")
        );
    }

    #[test]
    fn error_without_a_hint_of_its_own_has_its_kinds_hint() {
        let doc = error_document(&Error::internal("boom"));
        assert_eq!(doc["error"]["exit_code"], 1);
        assert_eq!(doc["error"]["hint"], Kind::Internal.default_hint());
    }

    #[test]
    fn approve_command_quotes_paths_a_shell_would_split() {
        let cmd = approve_command(Path::new("/work/my repo/"), Path::new("/data/plans/ab.json"));
        assert_eq!(cmd, "guardctl -C '/work/my repo' approve /data/plans/ab.json");
        let cmd = approve_command(Path::new("/r/it's"), Path::new("/p.json"));
        assert_eq!(cmd, r"guardctl -C '/r/it'\''s' approve /p.json");
    }

    #[test]
    fn tool_list_is_exactly_the_nine_tools_and_never_approve_and_plan_exec_only_when_enabled() {
        let names = |exec: bool| {
            let server = Server::new(Settings {
                repo: None,
                key: None,
                allowed_signers: None,
                quiet: true,
                color: ColorChoice::Never,
                plans_dir: None,
                exec,
            });
            let mut names: Vec<String> = server
                .tool_router
                .list_all()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            names.sort();
            names
        };
        let mut expected: Vec<&str> = TOOLS.to_vec();
        expected.sort();
        assert_eq!(names(true), expected);
        expected.retain(|t| *t != "plan_exec");
        assert_eq!(names(false), expected);
        assert!(
            !names(true)
                .iter()
                .any(|n| n.contains("approve") || n.contains("reject"))
        );
    }

    #[test]
    fn input_schemas_refuse_unknown_fields_and_require_the_plan() {
        let schema = rmcp::handler::server::tool::schema_for_type::<GateParams>();
        assert_eq!(schema.get("additionalProperties"), Some(&json!(false)));
        assert_eq!(schema.get("required"), Some(&json!(["plan"])));
        let parsed: std::result::Result<GateParams, _> =
            serde_json::from_value(json!({"plan": "p.json", "approve": true}));
        assert!(parsed.is_err(), "an unknown field must be refused");
    }

    #[test]
    fn a_duration_that_does_not_parse_is_a_usage_error() {
        let e = duration(Some("soon"), "older_than").err();
        assert_eq!(e.map(|e| e.kind), Some(Kind::Usage));
        assert_eq!(
            duration(Some("2h"), "x").ok().flatten().map(|d| d.as_secs()),
            Some(7200)
        );
        assert!(duration(None, "x").ok().flatten().is_none());
    }
}
