//! `guardctl mcp` as the official Python MCP SDK sees it (issue 34 item 11): what a host built
//! on it lists, validates and shows, not only what rmcp's own client accepts. The SDK, pinned
//! in tests/mcp_client/requirements.txt, is installed by `.ci/run` into its own virtualenv
//! (`GUARDCTL_MCP_PYTHON` names that interpreter, `GUARDCTL_REQUIRE_PY_MCP=1` makes its
//! absence a failure there); elsewhere the test says it was skipped.

use crate::fixtures::{TestEnv, standard_repo};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const AGENT: &str = "agent@example.com namespaces=\"guardctl-plan,guardctl-apply\"";

/// The pinned SDK version, from the requirements file `.ci/run` installs.
fn pinned() -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/requirements.txt"),
    )
    .unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("mcp=="))
        .expect("mcp pinned in requirements.txt")
        .to_string()
}

/// The interpreter with the pinned SDK, or why there is none.
fn official_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("GUARDCTL_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"));
    let out = Command::new(&python)
        .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || version != pinned() {
        return Err(format!(
            "{} has mcp {:?}, not the pinned {} ({})",
            python.display(),
            version,
            pinned(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(python)
}

/// The fixtures' cleared environment, as a JSON object for the script's child processes.
fn environment(env: &TestEnv) -> Value {
    let c = env.command();
    let vars: serde_json::Map<String, Value> = c
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_string(), json!(v?.to_str()?))))
        .collect();
    Value::Object(vars)
}

/// The error document in a tool error's text.
fn document(call: &Value) -> Value {
    assert_eq!(call["is_error"], true, "{call:#}");
    serde_json::from_str(call["text"].as_str().unwrap()).unwrap_or_else(|e| panic!("{e}: {call:#}"))
}

#[test]
fn the_official_python_client_lists_plans_shows_applies_and_reads_errors_as_documents() {
    let python = match official_python() {
        Ok(p) => p,
        Err(why) if std::env::var_os("GUARDCTL_REQUIRE_PY_MCP").is_some_and(|v| v == "1") => {
            panic!("the official MCP SDK is required here: {why} (.ci/run installs it)")
        }
        Err(why) => {
            eprintln!("skipped: the official Python MCP SDK is not installed ({why}); .ci/run installs it");
            return;
        }
    };
    let env = standard_repo();
    env.allow_signer(AGENT, "mallory");
    let bin = env!("CARGO_BIN_EXE_guardctl");
    let signers = env.allowed_signers();
    let config = json!({
        "server": {
            "command": bin,
            "args": ["--key", env.key("mallory"), "--allowed-signers", signers, "mcp"],
            "env": environment(&env),
            "cwd": env.repo,
        },
        "approve": {
            "argv": [bin, "--key", env.key("bob"), "--allowed-signers", signers, "-C", env.repo, "approve"],
            "env": environment(&env),
            "cwd": env.repo,
        },
    });
    let config_file = env.path().join("mcp-client.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/official_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&config_file)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK refused what it saw:\n{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{stderr}"));

    // The tool list as a host reads it: valid schemas, true annotations.
    assert_eq!(report["server"]["name"], "guardctl");
    assert_eq!(report["schema_errors"], json!([]), "{report:#}");
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "apply_plan"));
    for t in tools {
        assert_eq!(t["annotations"]["openWorldHint"], true, "{}", t["name"]);
        let schema = t["inputSchema"].to_string();
        assert!(!schema.contains("\"format\":\"uint"), "{}: {schema}", t["name"]);
    }
    let apply = tools.iter().find(|t| t["name"] == "apply_plan").unwrap();
    assert_eq!(apply["annotations"]["destructiveHint"], true);

    // Plan and show: structured results the SDK validated against their output schemas.
    let calls = &report["calls"];
    assert_eq!(calls["plan"]["is_error"], false, "{calls:#}");
    let plan_id = calls["plan"]["structured"]["plan_id"].as_str().unwrap();
    assert_eq!(calls["show"]["structured"]["plan_id"], plan_id);
    // A wrong argument, a wrong type and an unapproved apply: the one error document.
    for (call, kind, code) in [
        ("unknown_argument", "usage", 64),
        ("wrong_type", "usage", 64),
        ("apply_unapproved", "unapproved", 12),
    ] {
        let doc = document(&calls[call]);
        assert_eq!(doc["error"]["kind"], kind, "{call}: {doc:#}");
        assert_eq!(doc["error"]["exit_code"], code, "{call}");
        assert!(doc["error"]["meaning"].is_string(), "{call}");
        assert!(doc["error"]["hint"].is_string(), "{call}");
    }
    assert!(
        document(&calls["unknown_argument"])["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bogus")
    );

    // The human approved in a terminal; the agent applied; the replay is the same receipt.
    assert_eq!(report["approve"]["code"], 0, "{:#}", report["approve"]);
    assert_eq!(calls["status"]["structured"]["state"], "approved");
    assert_eq!(calls["apply"]["is_error"], false, "{:#}", calls["apply"]);
    assert_eq!(calls["apply"]["structured"]["replayed"], false);
    assert_eq!(calls["replay"]["structured"]["replayed"], true);
    assert_eq!(
        calls["replay"]["structured"]["receipt"],
        calls["apply"]["structured"]["receipt"]
    );
    let left = env.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
    assert!(!left.lines().any(|b| b == "feature/done"), "{left}");
}
