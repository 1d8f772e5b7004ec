"""Drive `guardctl mcp` with the official Python MCP SDK, as a host built on it would.

Run by tests/cli/mcp_official.rs: argv[1] is a JSON file naming the server to start
({"command", "args", "env", "cwd"}) and the human's approve command ({"argv", "env", "cwd"}),
run between planning and applying. Prints one JSON report on stdout (what the host saw: the
tool list, each call's result) for the Rust test to judge; the SDK's own checks (output
schemas validated against structured results, protocol errors) raise, which exits non-zero.
"""

import json
import subprocess
import sys

import anyio
import jsonschema
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def outcome(result):
    """What a host shows for a call: its error flag, text and structured content."""
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return {
        "is_error": bool(result.is_error),
        "text": text,
        "structured": result.structured_content,
    }


async def drive(config):
    server = StdioServerParameters(**config["server"])
    report = {"calls": {}}
    async with stdio_client(server) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["server"] = dump(init)["serverInfo"]
            tools = (await session.list_tools()).tools
            report["tools"] = [dump(t) for t in tools]
            # Every schema must be a valid JSON Schema a host's validator accepts.
            report["schema_errors"] = []
            for t in tools:
                for kind, schema in (("input", t.input_schema), ("output", t.output_schema)):
                    if schema is None:
                        continue
                    try:
                        jsonschema.Draft202012Validator.check_schema(schema)
                    except jsonschema.SchemaError as e:
                        report["schema_errors"].append(f"{t.name} {kind}: {e.message}")

            calls = report["calls"]
            planned = await session.call_tool("plan_stale_branches", {"merged": True})
            calls["plan"] = outcome(planned)
            plan_file = planned.structured_content["plan_file"]
            calls["show"] = outcome(await session.call_tool("show_plan", {"plan": plan_file}))
            calls["unknown_argument"] = outcome(
                await session.call_tool("plan_stale_branches", {"bogus": 1})
            )
            calls["wrong_type"] = outcome(await session.call_tool("show_plan", {"plan": 7}))
            calls["apply_unapproved"] = outcome(
                await session.call_tool("apply_plan", {"plan": plan_file})
            )

            human = config["approve"]
            approved = subprocess.run(
                human["argv"] + [plan_file, "--yes"],
                env=human["env"],
                cwd=human["cwd"],
                capture_output=True,
                text=True,
            )
            report["approve"] = {"code": approved.returncode, "stderr": approved.stderr}

            calls["status"] = outcome(await session.call_tool("plan_status", {"plan": plan_file}))
            calls["apply"] = outcome(await session.call_tool("apply_plan", {"plan": plan_file}))
            calls["replay"] = outcome(await session.call_tool("apply_plan", {"plan": plan_file}))
    return report


def main():
    with open(sys.argv[1]) as f:
        config = json.load(f)
    report = anyio.run(drive, config)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
