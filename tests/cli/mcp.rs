//! `guardctl mcp` spoken to by a real MCP client: rmcp's own client (a dev-dependency) starts
//! the real binary as a subprocess over stdio, initializes, lists the tools and calls them,
//! while a human approves from the CLI in between. The agent's key is mallory's, given the
//! principal `agent@example.com` limited to planning and applying.

use crate::fixtures::{TestEnv, file_tree as tree, payload_of, publish, remote_repo, run, standard_repo};
use guardctl::mcp::{SHOW_FIELDS, TOOLS};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::Stdio;

const AGENT: &str = "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"";

type Client = RunningService<RoleClient, ()>;

/// `guardctl --key <key of user> --allowed-signers <file> mcp` in the repository, with the
/// fixtures' cleared environment and test clock; stderr is kept for `stderr_of`.
fn server_command(env: &TestEnv, user: &str) -> tokio::process::Command {
    server_in(env, user, &env.repo)
}

/// `server_command` started in the clone `dir`.
fn server_in(env: &TestEnv, user: &str, dir: &Path) -> tokio::process::Command {
    let std = env.command();
    let mut c = tokio::process::Command::new(std.get_program());
    c.current_dir(dir).env_clear();
    for (k, v) in std.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.arg("--key")
        .arg(env.key(user))
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("mcp");
    c
}

async fn connect(env: &TestEnv, user: &str) -> (Client, tokio::process::ChildStderr) {
    connect_with(server_command(env, user)).await
}

async fn connect_with(command: tokio::process::Command) -> (Client, tokio::process::ChildStderr) {
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start guardctl mcp");
    let client = ().serve(transport).await.expect("MCP initialize");
    (client, stderr.expect("piped stderr"))
}

/// The standard repository with the agent's principal added to the allowed-signers file.
fn agent_repo() -> TestEnv {
    let env = standard_repo();
    env.allow_signer(AGENT, "mallory");
    env
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The structured content of a successful call.
fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "expected success, got {r:?}");
    r.structured_content.clone().expect("structured content")
}

/// The error document of a failed call: `{"error": {"kind", "exit_code", ...}}`.
fn tool_error(r: &CallToolResult) -> Value {
    assert_eq!(r.is_error, Some(true), "expected a tool error, got {r:?}");
    let text = &r.content[0].as_text().expect("text content").text;
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn branches(env: &TestEnv) -> String {
    env.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"])
}

/// `agent_repo` whose trusted policy (committed on the remote's default branch) lets agents
/// plan commands (`[agents] exec = true`).
fn exec_agent_repo() -> TestEnv {
    let env = agent_repo();
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n[agents]\nexec = true\n",
        "Alice",
        1,
    );
    env.git(&["push", "-q", "origin", "main"]);
    env
}

#[tokio::test]
async fn plan_exec_is_neither_listed_nor_callable_unless_the_trusted_policy_enables_it() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(!names.contains(&"plan_exec"), "{names:?}");
    assert_eq!(names.len(), TOOLS.len() - 1, "{names:?}");
    let Value::Object(args) = json!({"preview": "echo x", "command": ["true"]}) else {
        unreachable!()
    };
    let r = client
        .call_tool(CallToolRequestParams::new("plan_exec".to_string()).with_arguments(args))
        .await;
    assert!(
        matches!(&r, Err(e) if e.to_string().contains("tool not found")),
        "{r:?}"
    );
    client.cancel().await.unwrap();
    // Only the committed policy counts: the work tree's copy is the planner's.
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::write(
        env.repo.join(".guardctl/policy.toml"),
        "version = 1\n[agents]\nexec = true\n",
    )
    .unwrap();
    let (client, _stderr) = connect(&env, "mallory").await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "plan_exec"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn lists_exactly_the_gate_tools_with_strict_schemas_and_annotations() {
    let env = exec_agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("guardctl")
    );
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("no approve tool")
    );

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    let mut expected = TOOLS.to_vec();
    expected.sort();
    assert_eq!(names, expected);
    assert!(
        !names
            .iter()
            .any(|n| n.contains("approve") || n.contains("reject")),
        "an agent must never be offered a way to approve: {names:?}"
    );

    let required = |t: &str| -> Vec<&str> {
        match t {
            "plan_remote_branches" => vec!["remote"],
            "plan_exec" => vec!["preview", "command"],
            "show_plan" | "plan_status" | "wait_plan" | "verify_plan" | "apply_plan" => vec!["plan"],
            _ => vec![],
        }
    };
    for t in &tools {
        let input = &t.input_schema;
        assert_eq!(input.get("type"), Some(&json!("object")), "{}", t.name);
        assert_eq!(
            input.get("additionalProperties"),
            Some(&json!(false)),
            "{}",
            t.name
        );
        let mut req: Vec<&str> = input
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        req.sort();
        let mut want = required(&t.name);
        want.sort();
        assert_eq!(req, want, "required fields of {}", t.name);
        let output = t
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no output schema", t.name));
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", t.name);

        // Formats hosts understand: schemars' Rust widths (`uint32`) are not JSON Schema
        // formats (issue 34 item 11); an unsigned integer says `minimum: 0` instead.
        let mut formats = Vec::new();
        walk_formats(&Value::Object((*t.input_schema).clone()), &mut formats);
        if let Some(out) = &t.output_schema {
            walk_formats(&Value::Object((**out).clone()), &mut formats);
        }
        assert!(formats.is_empty(), "{}: integer formats {formats:?}", t.name);

        let a = t
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no annotations", t.name));
        // Every tool may reach the team remote (policy, identities, published plans,
        // approvals, receipts): none may say it does not.
        assert_eq!(a.open_world_hint, Some(true), "{}", t.name);
        match t.name.as_ref() {
            "apply_plan" => {
                assert_eq!(a.read_only_hint, Some(false));
                assert_eq!(a.destructive_hint, Some(true));
                assert_eq!(a.idempotent_hint, Some(true));
            }
            // The preview is an arbitrary command that runs at plan time.
            "plan_exec" => {
                assert_eq!(a.read_only_hint, Some(false));
                assert_eq!(a.destructive_hint, Some(true));
            }
            other => {
                assert_eq!(a.read_only_hint, Some(true), "{other} is read-only");
                assert_ne!(a.destructive_hint, Some(true), "{other}");
            }
        }
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn agent_plans_human_approves_in_a_terminal_agent_applies_and_a_replay_returns_the_same_receipt() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;

    let planned = ok(&call(&client, "plan_stale_branches", json!({"merged": true})).await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    assert!(
        Path::new(&plan_file).starts_with(&env.home),
        "plans go to guardctl's data dir, not the repository: {plan_file}"
    );
    assert!(planned["plan_id"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(planned["counts"]["affected"], 3, "{planned:#}");
    assert_eq!(planned["risk"]["level"], "low");
    assert_eq!(planned["summary"], payload_of(Path::new(&plan_file))["summary"]);
    assert!(
        planned["summary"]
            .as_str()
            .unwrap()
            .starts_with("delete 3 branches"),
        "{planned:#}"
    );
    assert_eq!(planned["approvals_needed"][0]["missing"], 1);
    // `guardctl -C <the repository> approve <the plan file>`, ready to paste.
    let command = planned["approve_command"].as_str().unwrap();
    let (repo, plan_arg) = command
        .strip_prefix("guardctl -C ")
        .and_then(|rest| rest.split_once(" approve "))
        .unwrap_or_else(|| panic!("not an approve command: {command}"));
    assert_eq!(plan_arg, plan_file);
    assert_eq!(
        Path::new(repo).canonicalize().unwrap(),
        env.repo.canonicalize().unwrap()
    );

    let status = ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    assert_eq!(status["state"], "awaiting_approval");
    assert_eq!(status["groups"][0]["missing"], 1);
    assert_eq!(status["groups"][0]["approved_by"], json!([]));
    assert_eq!(status["expired"], false);

    let refused = tool_error(&call(&client, "apply_plan", json!({"plan": plan_file})).await);
    assert_eq!(refused["error"]["kind"], "unapproved");
    assert_eq!(refused["error"]["exit_code"], 12);
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("guardctl approve")
    );

    // The human, in a terminal: the approve command as given, with bob's key.
    let approved = env.run("bob", &["-C", repo, "approve", &plan_file, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());

    let status = ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    assert_eq!(status["state"], "approved");
    assert_eq!(status["approved_by"], json!(["bob@example.com"]));
    let verified = ok(&call(&client, "verify_plan", json!({"plan": plan_file})).await);
    assert_eq!(verified["ok"], true);
    assert_eq!(verified["already_applied"], false);

    let before = branches(&env);
    let first = ok(&call(&client, "apply_plan", json!({"plan": plan_file})).await);
    assert_eq!(first["replayed"], false);
    assert_eq!(first["verified"], true);
    assert_eq!(first["receipt"]["executor"], "agent@example.com");
    assert_eq!(first["receipt"]["approved_by"], json!(["bob@example.com"]));
    assert_eq!(first["receipt"]["deleted"].as_array().unwrap().len(), 3);
    let after = branches(&env);
    assert_ne!(before, after);
    for gone in ["feature/done", "fix/old", "feature/gone-merged"] {
        assert!(!after.lines().any(|b| b == gone), "{gone} still exists:\n{after}");
    }
    assert!(
        first["undo_command"]
            .as_str()
            .unwrap()
            .contains(" rollback sha256:")
    );

    let second = ok(&call(&client, "apply_plan", json!({"plan": plan_file})).await);
    assert_eq!(second["replayed"], true);
    assert_eq!(second["receipt"], first["receipt"]);
    assert_eq!(second["envelope"], first["envelope"]);
    assert_eq!(branches(&env), after, "a replay changes nothing");
    let status = ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    assert_eq!(status["state"], "applied");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn drift_after_approval_is_a_tool_error_with_kind_drift_and_changes_nothing() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let planned = ok(&call(&client, "plan_stale_branches", json!({"merged": true})).await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    let approved = env.run("bob", &["approve", &plan_file, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());

    // Someone commits to a planned branch after the approval.
    env.git(&["checkout", "-q", "fix/old"]);
    env.commit("late.txt", "late work", "Carol", 1);
    env.git(&["checkout", "-q", "main"]);
    let before = env.repository_state();

    let drift = tool_error(&call(&client, "apply_plan", json!({"plan": plan_file})).await);
    assert_eq!(drift["error"]["kind"], "drift", "{drift:#}");
    assert_eq!(drift["error"]["exit_code"], 10);
    assert!(
        drift["error"]["message"].as_str().unwrap().contains("fix/old"),
        "{drift:#}"
    );
    assert!(drift["error"]["hint"].as_str().unwrap().contains("guardctl plan"));
    assert!(drift["error"]["meaning"].as_str().unwrap().contains("plan again"));
    assert_eq!(env.repository_state(), before, "a refused apply changes nothing");
    assert!(branches(&env).lines().any(|b| b == "fix/old"));

    let verify = tool_error(&call(&client, "verify_plan", json!({"plan": plan_file})).await);
    assert_eq!(verify["error"]["kind"], "drift");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_expired_plan_is_a_tool_error_with_kind_expired_so_the_agent_plans_again() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let planned = ok(&call(
        &client,
        "plan_stale_branches",
        json!({"merged": true, "expires_in": "15m"}),
    )
    .await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    let approved = env.run("bob", &["approve", &plan_file, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());
    client.cancel().await.unwrap();

    // A server whose clock reads an hour later (the fixtures' NOW is 12:00).
    let mut later = server_command(&env, "mallory");
    later.env("GUARDCTL_TEST_NOW", "2026-06-01T13:00:00Z");
    let (client, _stderr) = connect_with(later).await;
    let status = ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    assert_eq!(status["state"], "expired");
    assert_eq!(status["expired"], true);
    let before = branches(&env);
    let expired = tool_error(&call(&client, "apply_plan", json!({"plan": plan_file})).await);
    assert_eq!(expired["error"]["kind"], "expired", "{expired:#}");
    assert_eq!(expired["error"]["exit_code"], 11);
    assert!(
        expired["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("guardctl plan")
    );
    assert_eq!(branches(&env), before);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn plan_show_status_and_verify_leave_the_repository_byte_for_byte_unchanged() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let state = env.repository_state();
    let files = tree(&env.repo);

    let planned = ok(&call(
        &client,
        "plan_stale_branches",
        json!({"merged": true, "squash_merged": true}),
    )
    .await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    ok(&call(&client, "show_plan", json!({"plan": plan_file})).await);
    ok(&call(&client, "show_plan", json!({"plan": plan_file, "page": 1})).await);
    ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    tool_error(&call(&client, "verify_plan", json!({"plan": plan_file})).await);
    assert_eq!(env.repository_state(), state);
    assert_eq!(tree(&env.repo), files, "no file in the repository changed");

    // After a human approval (which writes guardctl's audit log and moves its anchor ref),
    // a passing verify too.
    let approved = env.run("bob", &["approve", &plan_file, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());
    let state = env.repository_state();
    let files = tree(&env.repo);
    ok(&call(&client, "verify_plan", json!({"plan": plan_file})).await);
    ok(&call(&client, "show_plan", json!({"plan": plan_file, "all": true})).await);
    ok(&call(&client, "plan_status", json!({"plan": plan_file})).await);
    assert_eq!(env.repository_state(), state);
    assert_eq!(tree(&env.repo), files, "no file in the repository changed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn show_plan_is_the_document_show_json_prints() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let planned = ok(&call(&client, "plan_stale_branches", json!({"merged": true})).await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    let shown = ok(&call(&client, "show_plan", json!({"plan": plan_file})).await);
    let cli = env.run("mallory", &["--json", "show", &plan_file]);
    assert_eq!(cli.code, 0, "{}", cli.transcript());
    // `warnings` is the CLI run's own (what it said on stderr), not part of the plan's view.
    let mut doc = cli.json();
    doc.as_object_mut().unwrap().remove("warnings");
    assert_eq!(shown, doc);

    let keys: Vec<&str> = shown.as_object().unwrap().keys().map(String::as_str).collect();
    let declared: Vec<&str> = SHOW_FIELDS.iter().map(|(name, _)| *name).collect();
    for k in &keys {
        assert!(declared.contains(k), "show_plan's output schema lacks `{k}`");
    }
    client.cancel().await.unwrap();
}

/// Integer fields that carry a `format`, and unsigned ones without a `minimum`.
fn walk_formats(v: &Value, found: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            let integer = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            if integer && let Some(f) = map.get("format") {
                found.push(f.to_string());
            }
            map.values().for_each(|v| walk_formats(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| walk_formats(v, found)),
        _ => {}
    }
}

#[tokio::test]
async fn bad_arguments_and_unknown_plans_are_errors_never_a_crash() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    // An unknown field is refused as the strict input schema says, in the same error
    // document as every other failure (issue 34 item 8), not rmcp's plain text.
    let unknown = tool_error(&call(&client, "plan_stale_branches", json!({"approve": true})).await);
    assert_eq!(unknown["error"]["kind"], "usage", "{unknown:#}");
    assert_eq!(unknown["error"]["exit_code"], 64);
    assert!(unknown["error"]["meaning"].is_string(), "{unknown:#}");
    assert!(
        unknown["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("input schema"),
        "{unknown:#}"
    );
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown field `approve`"), "{message}");
    assert!(message.contains("plan_stale_branches"), "{message}");
    let typed = tool_error(&call(&client, "show_plan", json!({"plan": 7})).await);
    assert_eq!(typed["error"]["kind"], "usage", "{typed:#}");
    let bad = tool_error(&call(&client, "plan_stale_branches", json!({"older_than": "soon"})).await);
    assert_eq!(bad["error"]["kind"], "usage");
    assert_eq!(bad["error"]["exit_code"], 64);
    let missing = tool_error(&call(&client, "show_plan", json!({"plan": "no-such-plan.json"})).await);
    assert_eq!(missing["error"]["kind"], "not_found", "{missing:#}");
    assert_eq!(missing["error"]["exit_code"], 66);
    fs::write(env.path().join("tampered.json"), "{\"payloadType\": 1}").unwrap();
    let tampered = env.path().join("tampered.json");
    let r = tool_error(&call(&client, "apply_plan", json!({"plan": tampered.to_str().unwrap()})).await);
    assert_eq!(r["error"]["kind"], "invalid_plan");
    // The server is still serving.
    ok(&call(&client, "plan_stale_branches", json!({})).await);
    client.cancel().await.unwrap();
}

/// `guardctl mcp` with `key` (a path) and stdin closed: the server stops right away.
fn start_with_key(env: &TestEnv, key: &Path) -> crate::fixtures::Run {
    let mut c = env.command();
    c.arg("--key")
        .arg(key)
        .arg("--allowed-signers")
        .arg(env.allowed_signers())
        .arg("mcp");
    run(c)
}

#[test]
fn a_key_that_may_approve_is_refused_at_start_and_no_tool_is_served() {
    let env = agent_repo();
    // bob's key has every namespace.
    let r = start_with_key(&env, &env.key("bob"));
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(
        r.stderr.contains("may sign approvals (as bob@example.com)")
            && r.stderr.contains("no tool is served")
            && r.stderr.contains("namespaces=\"guardctl-plan,guardctl-apply\""),
        "{}",
        r.transcript()
    );
    assert_eq!(r.stdout, "", "no protocol message: nothing was served");
    // A certificate whose authority's line has no namespaces may approve too.
    let cert = env.certified_key("agentcert", "erin@example.com");
    let r = start_with_key(&env, &cert);
    assert_eq!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("as erin@example.com"), "{}", r.transcript());
    // The agent's own key, limited to planning and applying, is served (until the closed
    // stdin ends the session).
    let r = start_with_key(&env, &env.key("mallory"));
    assert_ne!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("serving on stdio"), "{}", r.transcript());
}

#[test]
fn a_trusted_policy_may_accept_an_approving_key_for_named_principals_only() {
    let env = agent_repo();
    env.commit(
        ".guardctl/policy.toml",
        "version = 1\n[agents]\nmay_approve = [\"bob@example.com\"]\n",
        "Alice",
        1,
    );
    // Committed locally only: the policy in force is the remote's, which says nothing.
    let r = start_with_key(&env, &env.key("bob"));
    assert_eq!(r.code, 14, "{}", r.transcript());
    env.git(&["push", "-q", "origin", "main"]);
    let r = start_with_key(&env, &env.key("bob"));
    assert_ne!(r.code, 14, "{}", r.transcript());
    assert!(r.stderr.contains("serving on stdio"), "{}", r.transcript());
    let r = start_with_key(&env, &env.key("carol"));
    assert_eq!(r.code, 14, "{}", r.transcript());
}

/// Every `out` an agent must not write to: each is a usage tool error and every file is
/// byte-identical afterwards (nothing is created either).
#[tokio::test]
async fn plan_tools_write_only_new_files_in_the_plan_directory_or_the_work_tree() {
    let env = agent_repo();
    let outside = env.path().join("outside.json");
    fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.repo.join("link.json")).unwrap();
    fs::create_dir_all(env.repo.join("via")).unwrap();
    std::os::unix::fs::symlink(env.path(), env.repo.join("via/dir")).unwrap();
    fs::create_dir_all(env.repo.join(".guardctl")).unwrap();
    fs::write(env.repo.join(".guardctl/allowed_signers"), "team\n").unwrap();
    // An approval makes the audit log exist.
    let r = env.run("alice", &["plan", "stale-branches", "-o", "../human.json"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let r = env.run("bob", &["approve", "../human.json", "--yes"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let audit = env.repo.join(".git/guardctl/audit.log");
    assert!(audit.exists());
    let (client, _stderr) = connect(&env, "mallory").await;
    let before = (tree(env.path()), fs::read(env.allowed_signers()).unwrap());
    let signers = env.allowed_signers().display().to_string();
    let refused = [
        "/etc/passwd".to_string(),
        outside.display().to_string(),
        "../outside.json".into(),
        "../new.json".into(),
        "./plan.json".into(),
        "link.json".into(),
        "via/dir/new.json".into(),
        "nodir/new.json".into(),
        ".git/guardctl/audit.log".into(),
        audit.display().to_string(),
        ".git/config".into(),
        ".guardctl/allowed_signers".into(),
        signers,
        env.home.join("../new.json").display().to_string(),
        "README".into(),
        "".into(),
        env.path().join("human.json").display().to_string(),
    ];
    for out in &refused {
        let r = tool_error(&call(&client, "plan_stale_branches", json!({"out": out})).await);
        assert_eq!(r["error"]["kind"], "usage", "out = {out}: {r:#}");
    }
    assert_eq!(
        (tree(env.path()), fs::read(env.allowed_signers()).unwrap()),
        before,
        "a refused `out` changed a file"
    );
    // Allowed: a new file in the work tree, and the default place.
    let planned = ok(&call(&client, "plan_stale_branches", json!({"out": "plans-new.json"})).await);
    assert_eq!(
        Path::new(planned["plan_file"].as_str().unwrap()),
        env.repo.canonicalize().unwrap().join("plans-new.json")
    );
    let again = tool_error(&call(&client, "plan_stale_branches", json!({"out": "plans-new.json"})).await);
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another plan"),
        "{again:#}"
    );
    ok(&call(&client, "plan_stale_branches", json!({})).await);
    client.cancel().await.unwrap();
}

/// A team around a bare `file://` remote: alice publishes a plan of the remote's merged
/// branches for dave (the agent: the mallory key, which may plan and apply) from her clone,
/// bob approves it by prefix and publishes his approval from his; the agent gets two clones
/// of its own. No file passes between them. Returns the agent's clones and the plan id's hex.
fn published_for_the_agent() -> (TestEnv, [std::path::PathBuf; 2], String) {
    let env = remote_repo();
    env.allow_signer(
        "dave@example.com namespaces=\"guardctl-plan,guardctl-apply\"",
        "mallory",
    );
    let [planner, bob, agent, other] =
        <[std::path::PathBuf; 4]>::try_from(env.clones(&["planner", "bob", "agent", "other"])).unwrap();
    let id = publish(&env, &planner, "plan.json", &[]);
    let r = env.run_in(&bob, "bob", &["approve", &id[..12], "--yes", "--publish"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    (env, [agent, other], id)
}

#[tokio::test]
async fn the_plan_tools_take_a_published_plans_id_or_prefix_as_the_cli_does() {
    let (env, [agent, _], id) = published_for_the_agent();
    let prefix = &id[..12];
    let (client, _stderr) = connect_with(server_in(&env, "mallory", &agent)).await;

    let shown = ok(&call(&client, "show_plan", json!({"plan": prefix})).await);
    assert_eq!(shown["plan_id"], format!("sha256:{id}"));
    let status = ok(&call(&client, "plan_status", json!({"plan": prefix})).await);
    assert_eq!(status["state"], "approved", "{status:#}");
    assert_eq!(status["approved_by"], json!(["bob@example.com"]));
    let command = status["approve_command"].as_str().unwrap();
    assert!(command.ends_with(&format!(" approve {prefix}")), "{command}");
    let verified = ok(&call(&client, "verify_plan", json!({"plan": format!("sha256:{id}")})).await);
    assert_eq!(verified["ok"], true);

    // The CLI's errors, with its exit codes: no such plan is 66 (a prefix no published plan
    // has), too few digits to be a prefix is no file either.
    let other = if id.starts_with('0') { "1" } else { "0" }.repeat(12);
    for missing in [other.as_str(), "abc"] {
        let e = tool_error(&call(&client, "show_plan", json!({"plan": missing})).await);
        assert_eq!(e["error"]["kind"], "not_found", "{e:#}");
        assert_eq!(e["error"]["exit_code"], 66);
        let e = tool_error(&call(&client, "apply_plan", json!({"plan": missing})).await);
        assert_eq!(e["error"]["exit_code"], 66, "{e:#}");
    }

    let before = env.remote_branches().lines().count();
    let applied = ok(&call(&client, "apply_plan", json!({"plan": prefix})).await);
    assert_eq!(applied["replayed"], false, "{applied:#}");
    assert_eq!(applied["plan_id"], format!("sha256:{id}"));
    assert!(env.remote_branches().lines().count() < before);
    let again = ok(&call(&client, "apply_plan", json!({"plan": prefix})).await);
    assert_eq!(again["replayed"], true);
    assert_eq!(again["receipt"], applied["receipt"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn apply_plan_of_a_plan_consumed_in_another_clone_waits_only_as_long_as_its_wait() {
    let (env, [agent, other], id) = published_for_the_agent();
    let prefix = &id[..12];
    // The agent's other clone consumed the plan on the remote and died before its receipt.
    let killed = env.run_env(
        "mallory",
        &[("GUARDCTL_TEST_CRASH_AFTER", "pushed")],
        &["-C", other.to_str().unwrap(), "apply", prefix],
    );
    assert_eq!(killed.code, -1, "killed (SIGKILL): {}", killed.transcript());

    let (client, _stderr) = connect_with(server_in(&env, "mallory", &agent)).await;
    let e = tool_error(&call(&client, "apply_plan", json!({"plan": prefix, "wait": "0"})).await);
    assert_eq!(e["error"]["kind"], "needs_recovery", "{e:#}");
    assert_eq!(e["error"]["exit_code"], 16);
    assert_eq!(
        e["error"]["details"]["consumed_by"]["principal"], "dave@example.com",
        "{e:#}"
    );
    let bad = tool_error(&call(&client, "apply_plan", json!({"plan": prefix, "wait": "soon"})).await);
    assert_eq!(bad["error"]["kind"], "usage", "{bad:#}");

    // Once the other clone recovers (publishing its receipt), the tool returns that receipt.
    let r = env.run_in(&other, "mallory", &["recover"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let replayed = ok(&call(&client, "apply_plan", json!({"plan": prefix})).await);
    assert_eq!(replayed["replayed"], true, "{replayed:#}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_file_named_like_a_published_plans_prefix_holding_another_plan_is_refused_by_the_tools() {
    let (env, [agent, _], id) = published_for_the_agent();
    let prefix = &id[..12];
    // Someone leaves another plan in the agent's work tree under the published plan's prefix.
    let file = agent.join(prefix);
    let r = env.run_in(
        &agent,
        "alice",
        &[
            "plan",
            "remote-branches",
            "--remote",
            "origin",
            "--expires-in",
            "3h",
            "-o",
            file.to_str().unwrap(),
            "--no-publish",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let (client, _stderr) = connect_with(server_in(&env, "mallory", &agent)).await;
    for tool in ["show_plan", "apply_plan"] {
        let e = tool_error(&call(&client, tool, json!({"plan": prefix})).await);
        assert_eq!(e["error"]["exit_code"], 64, "{tool}: {e:#}");
    }
    client.cancel().await.unwrap();
}

/// The bypass the sandbox closes: an agent's `plan_exec` preview runs as the server's user,
/// whose home holds the human's key. Sandboxed, it reads no key and writes nothing.
#[tokio::test]
async fn plan_exec_runs_the_agents_preview_in_the_sandbox() {
    let env = exec_agent_repo();
    fs::create_dir_all(env.home.join(".ssh")).unwrap();
    fs::write(env.home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    let (client, _stderr) = connect(&env, "mallory").await;
    let preview = format!(
        "cat '{}' >/dev/null 2>&1 && echo read-bob || echo no-bob; \
         cat \"$HOME/.ssh/id_ed25519\" >/dev/null 2>&1 && echo read-home || echo no-home; \
         (echo x > README) 2>/dev/null && echo wrote || echo no-write",
        env.key("bob").display()
    );
    let planned = ok(&call(
        &client,
        "plan_exec",
        json!({"preview": preview, "command": ["true"], "env": ["HOME"]}),
    )
    .await);
    let plan = payload_of(Path::new(planned["plan_file"].as_str().unwrap()));
    assert_eq!(
        plan["operation"]["inputs"]["preview_output"]["text"],
        "no-bob\nno-home\nno-write\n"
    );
    assert_eq!(fs::read_to_string(env.repo.join("README")).unwrap(), "initial\n");
    client.cancel().await.unwrap();
}

/// Issue 27's MCP `out` and approving-key refusal attacked (`broke_*` failed before their fix,
/// `held_*` were already denied).
mod approving_keys_and_out {
    use crate::fixtures::{file_tree, run, standard_repo};
    use std::fs;

    /// `guardctl mcp` refused a key that may approve *now*, but not one whose line only becomes
    /// valid later: a line `valid-after` tomorrow with no namespaces is an approving key tomorrow,
    /// for a server that is still running.
    #[test]
    fn broke_a_key_that_may_approve_later_is_refused_too() {
        let env = standard_repo();
        env.allow_signer(
            "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"",
            "mallory",
        );
        env.allow_signer("later@example.com valid-after=\"20260602\"", "mallory");
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key("mallory"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .arg("mcp");
        let r = run(c);
        assert_eq!(r.code, 14, "{}", r.transcript());
        assert!(r.stderr.contains("as later@example.com"), "{}", r.transcript());
    }

    /// `out` spellings an agent might try beyond the MCP tests' list: through `/proc/self/root`,
    /// doubled and trailing slashes, `.git` behind a `//`, a `plans` directory that is a symbolic
    /// link out of the work tree, a directory. Every one is refused and nothing changes.
    #[test]
    fn held_mcp_out_spellings() {
        use std::io::{BufRead, Write};
        let env = standard_repo();
        env.allow_signer(
            "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"",
            "mallory",
        );
        let outside = env.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, env.repo.join("plans")).unwrap();
        fs::create_dir_all(env.repo.join("sub")).unwrap();
        let top = env.repo.canonicalize().unwrap();
        let outs = [
            format!("/proc/self/root{}/x.json", top.display()),
            "plans/x.json".into(),
            "plans//x.json".into(),
            ".git//x.json".into(),
            "/.git/x.json".into(),
            "sub/".into(),
            "sub//".into(),
            format!("{}//.git/x.json", top.display()),
            format!("{}/.guardctl/allowed_signers", top.display()),
        ];
        let before = file_tree(env.path());
        let mut c = env.command();
        c.arg("--key")
            .arg(env.key("mallory"))
            .arg("--allowed-signers")
            .arg(env.allowed_signers())
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        );
        lines.next().unwrap().unwrap();
        send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for (i, out) in outs.iter().enumerate() {
            send(
                serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "plan_stale_branches", "arguments": {"out": out}}}),
            );
            let reply: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!(reply["result"]["isError"], true, "out = {out}: {reply}");
            let text = reply["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("\"usage\""), "out = {out}: {text}");
        }
        drop(stdin);
        child.wait().unwrap();
        assert_eq!(file_tree(env.path()), before, "a refused `out` wrote a file");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }
}

#[tokio::test]
async fn wait_plan_returns_when_a_person_decides_and_says_timed_out_when_no_one_has() {
    let env = agent_repo();
    let (client, _stderr) = connect(&env, "mallory").await;
    let planned = ok(&call(&client, "plan_stale_branches", json!({"merged": true})).await);
    let plan_file = planned["plan_file"].as_str().unwrap().to_string();
    let pending = ok(&call(&client, "wait_plan", json!({"plan": plan_file, "timeout": "1s"})).await);
    assert_eq!(
        (pending["state"].as_str(), pending["timed_out"].as_bool()),
        (Some("awaiting_approval"), Some(true))
    );
    let too_long = tool_error(&call(&client, "wait_plan", json!({"plan": plan_file, "timeout": "1h"})).await);
    assert_eq!(too_long["error"]["kind"], "usage");
    let approved = env.run("bob", &["approve", &plan_file, "--yes"]);
    assert_eq!(approved.code, 0, "{}", approved.transcript());
    let decided = ok(&call(&client, "wait_plan", json!({"plan": plan_file})).await);
    assert_eq!(decided["state"], "approved");
    assert_eq!(decided["timed_out"], false);
    assert_eq!(decided["approved_by"][0], "bob@example.com");
    client.cancel().await.unwrap();
}
