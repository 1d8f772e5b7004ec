#!/usr/bin/env python3
"""Startup time and peak memory of `guardctl mcp` (an MCP client starts one per agent session).

Builds a small throwaway repository (git) and key (ssh-keygen) in a temporary directory, then
runs the server N times as a client would, speaking newline-delimited JSON-RPC on its stdio:

  initialize        time from spawning the process to the initialize response
  tools/list        time from spawning to the tools/list response (the session is usable)
  plan              a session that also calls plan_stale_branches once (signs with ssh-keygen)
  peak RSS          the process's maximum resident set size (wait4's ru_maxrss)

and prints medians. Never run by the test suite; nothing is asserted.

    cargo build --release && python3 benches/mcp_startup.py [--runs 20] [--binary PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def git(repo, *args):
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com",
               GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@example.com")
    subprocess.run(["git", "-C", repo, *args], check=True, env=env, stdout=subprocess.DEVNULL)


def fixture(root):
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    for i in range(20):
        git(repo, "branch", f"feature/{i}")
    key = os.path.join(root, "agent")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    with open(key + ".pub") as f:
        public = f.read().strip()
    signers = os.path.join(root, "allowed_signers")
    with open(signers, "w") as f:
        f.write(f'agent@example.com namespaces="guardctl-plan,guardctl-apply" {public}\n')
    return repo, key, signers


def session(binary, repo, key, signers, home, plan):
    """One server process: (initialize s, tools/list s, plan s or None, peak RSS KiB)."""
    env = {"PATH": os.environ["PATH"], "HOME": home, "GIT_CONFIG_GLOBAL": "/dev/null"}
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "-C", repo, "--key", key, "--allowed-signers", signers, "mcp"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)

    def request(id_, method, params):
        msg = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        while True:
            reply = json.loads(p.stdout.readline())
            if reply.get("id") == id_:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply["result"]

    request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "0"}})
    t_init = time.perf_counter() - t0
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    request(2, "tools/list", {})
    t_list = time.perf_counter() - t0
    t_plan = None
    if plan:
        t1 = time.perf_counter()
        result = request(3, "tools/call", {"name": "plan_stale_branches",
                                           "arguments": {"match": ["feature/*"]}})
        if result.get("isError"):
            raise SystemExit(f"plan_stale_branches failed: {result['content']}")
        t_plan = time.perf_counter() - t1
    p.stdin.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return t_init, t_list, t_plan, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--binary", default="target/release/guardctl")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as root:
        repo, key, signers = fixture(root)
        home = os.path.join(root, "home")
        os.makedirs(home)
        bare = [session(binary, repo, key, signers, home, False) for _ in range(args.runs)]
        planning = [session(binary, repo, key, signers, home, True) for _ in range(args.runs)]
    ms = lambda xs: f"{statistics.median(xs) * 1000:.1f} ms"
    mib = lambda xs: f"{statistics.median(xs) / 1024:.1f} MiB"
    print(f"guardctl mcp, {args.runs} runs each, medians ({binary})")
    print(f"  initialize response after spawn:   {ms([r[0] for r in bare])}")
    print(f"  tools/list response after spawn:   {ms([r[1] for r in bare])}")
    print(f"  peak RSS, initialize + tools/list: {mib([r[3] for r in bare])}")
    print(f"  plan_stale_branches call (20 branches): {ms([r[2] for r in planning])}")
    print(f"  peak RSS, session with one plan:   {mib([r[3] for r in planning])}")


if __name__ == "__main__":
    main()
