#!/usr/bin/env python3
"""The agent-shell hook's cost: what every Bash call an agent makes pays, and what a
destructive one costs to plan.

    python3 benches/hook.py [--runs 200] [--plan-runs 15] [--branches 10000] [--keep DIR]

  allow   `guardctl hook claude-code` fed a PreToolUse payload of a read-only command
          (`git status && git log --oneline -5 | head`): the path every harmless call takes.
          Median and p99 over --runs, beside `git --version` and `/bin/true` started the
          same way (the floor any hook pays to start a process).
  plan    the same hook fed `git branch -D <a merged branch> <an unmerged one>` on a
          generated repository of --branches branches (benches/scale.py's generator): it
          plans and denies. Beside it, in the same runs, `guardctl plan stale-branches` of
          the whole repository and `git for-each-ref --merged` (what git itself pays to
          read the same refs).

Each process is timed from spawn to exit (perf_counter around subprocess.run), the payload
written to its stdin. Never run by the test suite: timings are reported, not asserted.
Needs: a release build (it runs `cargo build --release`), git, ssh-keygen.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (the generator and the release binary's path)


def payload(command, cwd):
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": cwd,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "bench"}, "tool_use_id": "toolu_bench",
    }).encode()


def run_times(args, cwd, env, runs, stdin=None, ok=(0,)):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(args, cwd=cwd, env=env, input=stdin, capture_output=True)
        times.append(time.perf_counter() - t0)
        if p.returncode not in ok:
            sys.exit(f"failed ({p.returncode}): {' '.join(args)}\n{p.stderr.decode(errors='replace')[-2000:]}")
    return times


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--plan-runs", type=int, default=15)
    ap.add_argument("--branches", type=int, default=10000)
    ap.add_argument("--keep", help="keep the repository and keys in this directory")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=scale.ROOT, check=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="guardctl-hook-bench-")
    os.makedirs(tmp, exist_ok=True)
    keys, _ = scale.keys(tmp)
    signers = os.path.join(tmp, "allowed_signers")
    with open(signers, "w") as fh:
        agent = open(keys["alice"] + ".pub").read()
        human = open(keys["bob"] + ".pub").read()
        fh.write(f'agent@example.com namespaces="guardctl-plan,guardctl-apply" {agent}')
        fh.write(f"bob@example.com {human}")
    repo = os.path.join(tmp, f"repo{a.branches}")
    if not os.path.exists(repo):
        truth = scale.generate(repo, a.branches)
        with open(os.path.join(tmp, f"truth{a.branches}.json"), "w") as fh:
            json.dump({k: sorted(v) for k, v in truth.items()}, fh)
    truth = json.load(open(os.path.join(tmp, f"truth{a.branches}.json")))
    env = dict(scale.ENV, XDG_DATA_HOME=os.path.join(tmp, "data"))
    hook = [scale.GUARDCTL, "--key", keys["alice"], "--allowed-signers", signers, "hook", "claude-code"]

    allow = payload("git status && git log --oneline -5 | head", repo)
    t_allow = run_times(hook, repo, env, a.runs, stdin=allow)
    t_git = run_times(["git", "--version"], repo, env, a.runs)
    t_true = run_times(["/bin/true"], repo, env, a.runs)

    merged, unmerged = sorted(truth["merged"])[0], sorted(truth["unmerged"])[0]
    deny = payload(f"git branch -D {merged} {unmerged}", repo)
    plan = [scale.GUARDCTL, "-q", "--key", keys["alice"], "--allowed-signers", signers, "plan",
            "stale-branches", "-o", os.path.join(tmp, "full.json")]
    git_merged = ["git", "for-each-ref", "--merged=main", "--format=%(refname) %(objectname)", "refs/heads"]
    t_hook_plan, t_full, t_for_each = [], [], []
    for i in range(a.plan_runs):
        order = [("hook", hook, deny, (2,)), ("full", plan, None, (0,)), ("git", git_merged, None, (0,))]
        if i % 2:
            order.reverse()
        for who, args, stdin, ok in order:
            t = run_times(args, repo, env, 1, stdin=stdin, ok=ok)[0]
            {"hook": t_hook_plan, "full": t_full, "git": t_for_each}[who].append(t)
    # The plan the hook made is exactly the two names.
    plans = sorted(os.listdir(os.path.join(tmp, "data", "guardctl", "plans")))
    last = os.path.join(tmp, "data", "guardctl", "plans", plans[-1])
    affected = sorted(scale.affected(last))
    if affected != sorted([merged, unmerged]):
        sys.exit(f"the hook planned {affected}, not {[merged, unmerged]}")

    ms = lambda x: f"{x * 1000:.1f} ms"  # noqa: E731
    print(f"# {a.branches} branches; allow path {a.runs} runs, plan path {a.plan_runs} runs")
    print("| measurement | median | p99 |")
    print("|---|---:|---:|")
    print(f"| hook, read-only command (allowed) | {ms(statistics.median(t_allow))} | {ms(p99(t_allow))} |")
    print(f"| `git --version` | {ms(statistics.median(t_git))} | {ms(p99(t_git))} |")
    print(f"| `/bin/true` | {ms(statistics.median(t_true))} | {ms(p99(t_true))} |")
    print(f"| hook, `git branch -D` of 2 names (planned, denied) | {ms(statistics.median(t_hook_plan))} | {ms(max(t_hook_plan))} (max) |")
    print(f"| `guardctl plan stale-branches` (every branch) | {ms(statistics.median(t_full))} | {ms(max(t_full))} (max) |")
    print(f"| `git for-each-ref --merged=main` | {ms(statistics.median(t_for_each))} | {ms(max(t_for_each))} (max) |")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
