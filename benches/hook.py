#!/usr/bin/env python3
"""The agent-shell hook's cost: what every Bash call an agent makes pays, and what a
destructive one costs to plan.

    python3 benches/hook.py [--runs 200] [--plan-runs 15] [--branches 10000] [--trial-runs 10] [--keep DIR]

  allow   `guardctl hook claude-code` fed a PreToolUse payload of a read-only command
          (`git status && git log --oneline -5 | head`): the path every harmless call takes.
          Median and p99 over --runs, beside `git --version` and `/bin/true` started the
          same way (the floor any hook pays to start a process).
  plan    the same hook fed `git branch -D <a merged branch> <an unmerged one>` on a
          generated repository of --branches branches (benches/scale.py's generator): it
          plans and denies. Beside it, in the same runs, `guardctl plan stale-branches` of
          the whole repository and `git for-each-ref --merged` (what git itself pays to
          read the same refs).

  trial   a line the reader cannot clear, run by the hook in the trial sandbox (overlay and
          comparison), beside the same line run plainly by bash on the same state: one that
          deletes nothing, one that deletes 1,000 ignored build files (allowed), one that
          deletes 1,000 tracked files (planned and denied: tried twice).
  peers   with --dcg and/or --safety-net (each peer built by you, outside this repository:
          docs/development.md), guardctl and the peers side by side on the same lines in the
          same run, in a small repository shaped like tests/cli/hook_fixture.rs's: the allow
          path (the read-only line above: median, p99), the deny path (`git reset --hard` over
          uncommitted edits: median), and, with the suites scripts/peer-cases.py extracted
          (--peer-cases, default ~/.cache/guardctl-peers), each tool's false negatives (lines
          the suites block that it allows) and false positives (lines they allow that it
          blocks), every line judged once by every tool. --peers-only skips the sections above.

Each process is timed from spawn to exit (perf_counter around subprocess.run), the payload
written to its stdin. Never run by the test suite: timings are reported, not asserted.
Needs: a release build (it runs `cargo build --release`), git, ssh-keygen; node for
--safety-net.
"""

import argparse
import concurrent.futures
import glob
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


# ------------------------------------------------------------------------------ the peers


def agent_repo(root):
    """A repository in the state tests/cli/hook_fixture.rs documents (the same files, branches,
    tag, remote, ignored and untracked files, edits, staged change and stash), and a HOME."""
    repo, origin, home = (os.path.join(root, d) for d in ("repo", "origin.git", "home"))
    env = dict(scale.ENV, HOME=home, GIT_AUTHOR_NAME="Alice", GIT_AUTHOR_EMAIL="alice@example.com",
               GIT_COMMITTER_NAME="Alice", GIT_COMMITTER_EMAIL="alice@example.com")

    def git(*args, cwd=repo):
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    def write(base, path, text):
        p = os.path.join(base, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as fh:
            fh.write(text)

    os.makedirs(home, exist_ok=True)
    git("init", "-q", "--bare", "-b", "main", origin, cwd=root)
    git("init", "-q", "-b", "main", repo, cwd=root)
    git("remote", "add", "origin", origin)
    for path, text in [(".gitignore", "build/\ntarget/\nnode_modules/\n__pycache__/\n*.log\n.env\n"),
                       ("README.md", "# Fixture\n"), ("file.txt", "one\ntwo\n"),
                       ("src/main.rs", "fn main() {}\n"), ("src/lib.rs", "pub fn run() {}\n"),
                       ("docs/guide.md", "# Guide\n"), ("dist/app.js", "console.log('built');\n"),
                       ("scripts/cleanup.sh", "#!/bin/sh\nrm -rf build\n")]:
        write(repo, path, text)
    git("add", "-A")
    git("commit", "-q", "-m", "The project")
    git("tag", "-a", "v1.0", "-m", "Release 1.0")
    for branch, files in [("dev", ["dev.txt"]), ("feature", ["feature.txt", "feature2.txt"])]:
        git("checkout", "-q", "-b", branch, "main")
        for f in files:
            write(repo, f, branch + "\n")
            git("add", f)
            git("commit", "-q", "-m", f"{branch}: {f}")
        git("checkout", "-q", "main")
        if branch == "dev":
            git("merge", "-q", "--no-ff", "-m", "Merge dev", "dev")
    git("push", "-q", "-u", "origin", "main", "dev", "feature", "--tags")
    for path in ["build/out.o", "target/debug/app", "node_modules/left-pad/index.js",
                 "__pycache__/x.cpython-312.pyc", "app.log", ".env"]:
        write(repo, path, "ignored\n")
    write(repo, "docs/guide.md", "# Guide\n\nStashed work.\n")
    git("stash", "push", "-q", "-m", "wip on the guide")
    write(repo, "src/lib.rs", "pub fn run() { println!(\"staged\"); }\n")
    git("add", "src/lib.rs")
    write(repo, "file.txt", "one\ntwo\nthree (not committed)\n")
    write(repo, "README.md", "# Fixture\n\nEdited, not committed.\n")
    write(repo, "notes.txt", "the agent's own notes\n")
    for path in [".bashrc", "Documents/notes.md", "projects/other/README.md"]:
        write(home, path, "home\n")
    return repo, home


def peers(a, tmp):
    """guardctl, dcg and cc-safety-net on the same lines in the same run."""
    keys, _ = scale.keys(tmp)
    signers = os.path.join(tmp, "allowed_signers_peers")
    with open(signers, "w") as fh:
        agent = open(keys["alice"] + ".pub").read()
        fh.write(f'agent@example.com namespaces="guardctl-plan,guardctl-apply" {agent}')
    root = os.path.join(tmp, "agent")
    if not os.path.exists(root):
        os.makedirs(root)
        agent_repo(root)
    repo, home = os.path.join(root, "repo"), os.path.join(root, "home")
    env = dict(scale.ENV, HOME=home, XDG_DATA_HOME=os.path.join(tmp, "data"),
               DCG_NO_UPDATE_CHECK="1")
    tools = [("guardctl", [scale.GUARDCTL, "--key", keys["alice"], "--allowed-signers", signers,
                           "hook", "claude-code"])]
    if a.dcg:
        tools.append(("destructive_command_guard", [a.dcg]))
    if a.safety_net:
        tools.append(("cc-safety-net", ["node", a.safety_net, "--claude-code"]))

    def verdict(args, line):
        """True when the tool denies `line` (exit 2, or a PreToolUse `deny` decision)."""
        p = subprocess.run(args, cwd=repo, env=env, input=payload(line, repo), capture_output=True)
        if p.returncode == 2:
            return True
        out = p.stdout.decode(errors="replace")
        try:
            decision = json.loads(out)["hookSpecificOutput"]["permissionDecision"]
        except (ValueError, KeyError, TypeError):
            return p.returncode != 0
        return decision in ("deny", "ask")

    allow_line = "git status && git log --oneline -5 | head"
    deny_line = "git reset --hard"
    for name, args in tools:
        if verdict(args, allow_line) or not verdict(args, deny_line):
            sys.exit(f"{name} does not allow `{allow_line}` and deny `{deny_line}` here")
    timings = {name: {"allow": [], "deny": []} for name, _ in tools}
    for i in range(a.peer_runs):
        order = tools if i % 2 == 0 else list(reversed(tools))
        for name, args in order:
            for path, line in (("allow", allow_line), ("deny", deny_line)):
                t0 = time.perf_counter()
                subprocess.run(args, cwd=repo, env=env, input=payload(line, repo), capture_output=True)
                timings[name][path].append(time.perf_counter() - t0)

    cases = []
    for f in sorted(glob.glob(os.path.join(a.peer_cases, "*.jsonl"))):
        cases += [json.loads(line) for line in open(f)]
    counts = {}
    if cases:
        for name, args in tools:
            with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
                denied = list(ex.map(lambda c, args=args: verdict(args, c["command"]), cases))
            fn = sum(1 for c, d in zip(cases, denied) if c["expect"] == "block" and not d)
            fp = sum(1 for c, d in zip(cases, denied) if c["expect"] == "allow" and d)
            counts[name] = (fn, fp)
            with open(os.path.join(tmp, f"verdicts-{name}.jsonl"), "w") as fh:
                for c, d in zip(cases, denied):
                    fh.write(json.dumps(dict(c, denied=d)) + "\n")
    n_block = sum(c["expect"] == "block" for c in cases)
    n_allow = len(cases) - n_block
    suites = ", ".join(sorted({f"{c['peer']}@{c['commit'][:12]}" for c in cases}))

    ms = lambda x: f"{x * 1000:.1f} ms"  # noqa: E731
    print(f"# the same lines through each tool; {a.peer_runs} timed runs per path, alternating order")
    print(f"# suites: {suites or 'none (no --peer-cases)'}: {n_block} block lines, {n_allow} allow lines")
    print("| tool | allow median | allow p99 | deny median | false negatives | false positives |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, _ in tools:
        t = timings[name]
        fn, fp = counts.get(name, ("-", "-"))
        print(f"| {name} | {ms(statistics.median(t['allow']))} | {ms(p99(t['allow']))} | "
              f"{ms(statistics.median(t['deny']))} | {fn} | {fp} |")
    print(f"# per-line verdicts: {tmp}/verdicts-*.jsonl" + ("" if a.keep else " (removed: pass --keep)"))


# ------------------------------------------------------------------------------ the trial


def trial(a, tmp, hook_args, env):
    """The trial path: a line the reader cannot clear, run by the hook in the trial sandbox
    (overlay, comparison), beside the same line run plainly by bash on a fresh copy of the same
    state. Three lines: one that deletes nothing, one that deletes 1,000 git-ignored build
    files (regenerable: allowed), one that deletes 1,000 tracked files (denied, with a plan:
    the line is tried twice, to decide and for the plan)."""
    base = os.path.join(tmp, "trial-base")
    if not os.path.exists(base):
        agent_repo(base)
        repo = os.path.join(base, "repo")
        for d in ("target/many", "data"):
            os.makedirs(os.path.join(repo, d), exist_ok=True)
        for i in range(1000):
            with open(os.path.join(repo, "target/many", f"f{i}.o"), "w") as fh:
                fh.write(f"object {i}\n")
            with open(os.path.join(repo, "data", f"d{i}.txt"), "w") as fh:
                fh.write(f"row {i}\n")
        subprocess.run(["git", "add", "data"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-m", "data"],
                       cwd=repo, env=env, check=True)
    lines = [
        ("deletes nothing", "perl -e 1 && rm -f no-such-file", (0,)),
        ("deletes 1,000 ignored build files", "rm -rf target/many", (0,)),
        ("deletes 1,000 tracked files", "rm -rf data", (2,)),
    ]
    rows = []
    for what, line, ok in lines:
        t_hook, t_plain = [], []
        for i in range(a.trial_runs):
            work = os.path.join(tmp, "trial-run")
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work, symlinks=True)
            repo = os.path.join(work, "repo")
            henv = dict(env, HOME=os.path.join(work, "home"))
            order = ["hook", "plain"] if i % 2 == 0 else ["plain", "hook"]
            for who in order:
                if who == "hook":
                    t_hook += run_times(hook_args, repo, henv, 1, stdin=payload(line, repo), ok=ok)
                else:
                    plain = os.path.join(tmp, "trial-plain")
                    shutil.rmtree(plain, ignore_errors=True)
                    shutil.copytree(base, plain, symlinks=True)
                    t_plain += run_times(["bash", "-c", line], os.path.join(plain, "repo"), henv, 1)
        rows.append((what, line, statistics.median(t_hook), statistics.median(t_plain)))
    ms = lambda x: f"{x * 1000:.1f} ms"  # noqa: E731
    print(f"# the trial path, {a.trial_runs} runs each (hook: decide, and plan when denied)")
    print("| line | hook (trial) | plain bash | ratio |")
    print("|---|---:|---:|---:|")
    for what, line, h, p in rows:
        print(f"| {what}: `{line}` | {ms(h)} | {ms(p)} | {h / p:.1f}x |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--plan-runs", type=int, default=15)
    ap.add_argument("--branches", type=int, default=10000)
    ap.add_argument("--keep", help="keep the repository and keys in this directory")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--dcg", help="a destructive_command_guard binary (`dcg`) built by you")
    ap.add_argument("--safety-net", help="claude-code-safety-net's dist/bin/cc-safety-net.js")
    ap.add_argument("--peer-cases", default=os.path.expanduser("~/.cache/guardctl-peers"),
                    help="the *.jsonl of scripts/peer-cases.py")
    ap.add_argument("--peer-runs", type=int, default=100, help="timed runs per tool and path")
    ap.add_argument("--peers-only", action="store_true")
    ap.add_argument("--trial-runs", type=int, default=10, help="timed runs per trial line (0: skip)")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=scale.ROOT, check=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="guardctl-hook-bench-")
    os.makedirs(tmp, exist_ok=True)
    if a.dcg or a.safety_net:
        peers(a, tmp)
        if a.peers_only:
            if not a.keep:
                shutil.rmtree(tmp, ignore_errors=True)
            return
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

    if a.trial_runs:
        trial(a, tmp, hook, env)

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
