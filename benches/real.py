#!/usr/bin/env python3
"""guardctl on real repositories: a public project's pull-request heads as branches.

A corpus is a local repository whose branches are every pull-request head of a public
project (`refs/pull/N/head` -> `refs/heads/pr/N`) beside its default branch, made from a
mirror of that project:

    git clone --mirror https://github.com/rust-lang/cargo.git cargo.git   # has refs/pull/*
    python3 benches/real.py cargo.git [vite.git ...] [--runs 5] [--squash] [--keep DIR]

The corpus holds the mirror's packs as they are (a clone keeps the pack the host sent; no
commit-graph), measured first without a commit-graph and then with one
(`git commit-graph write --reachable`, what `git gc` does). In the same run as git:

  plan    guardctl plan stale-branches (default criteria) vs
          git for-each-ref --merged=<default> --format='%(refname) %(objectname)
             %(committerdate:unix) %(authoremail) %(subject)' refs/heads
  show    guardctl show of that plan vs the plan itself
  squash  guardctl plan --squash-merged (with --squash), once, with a commit-graph. A project
          that squash-merges titles each landed pull request `... (#N)`: recall is the share of
          the heads whose number a default-branch subject names (and that plain `--merged`
          does not find) that the plan lists; precision is checked on a sample of what it
          lists with `git cherry` (each listed head's change must be upstream).

guardctl and git run alternately, one of each per run; a ratio is the median of the per-run
ratios. `--guardctl PATH` measures another build (an earlier commit's, for a before/after in
one session). Never run by the test suite: timings are reported, not asserted.
Needs: a release build (it runs `cargo build --release`), git, ssh-keygen, /usr/bin/time.
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (shared timing helpers: paired, timed, keys, g, affected)

FMT = "%(refname) %(objectname) %(committerdate:unix) %(authoremail) %(subject)"


def default_branch(mirror):
    head = scale.sh(["git", "--git-dir", mirror, "symbolic-ref", "HEAD"]).stdout.decode().strip()
    return head[len("refs/heads/"):]


def build_corpus(mirror, path, copies=1):
    """A new repository holding the mirror's default branch and its pull-request heads.

    The mirror's packs are copied as they are (a clone keeps the pack the host sent) and the
    refs written in one transaction; a fetch from the mirror would repack, and fails outright
    on a mirror that lacks a blob (a snapshot that leaves out large files).
    """
    main = default_branch(mirror)
    shutil.rmtree(path, ignore_errors=True)
    scale.sh(["git", "init", "-q", "-b", main, path])
    src = os.path.join(mirror, "objects", "pack")
    dst = os.path.join(path, ".git", "objects", "pack")
    for f in os.listdir(src):
        if f.endswith((".pack", ".idx", ".rev")):
            shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    refs = scale.sh(["git", "--git-dir", mirror, "for-each-ref", "--format=%(objectname) %(refname)",
                     f"refs/heads/{main}", "refs/pull/*/head"]).stdout.decode()
    txn = "".join(
        f"create refs/heads/{main if r == 'refs/heads/' + main else 'pr/' + r.split('/')[2]} {o}\n"
        for o, r in (line.split() for line in refs.splitlines()))
    # --copies: every head again under copyK/, so the branches outnumber the commits as a
    # project with five times the pull requests would, over the same real history.
    heads = [line.split() for line in refs.splitlines() if not line.endswith(f"refs/heads/{main}")]
    txn += "".join(f"create refs/heads/copy{k}/pr/{r.split('/')[2]} {o}\n"
                   for k in range(2, copies + 1) for o, r in heads)
    scale.sh(["git", "update-ref", "--stdin"], cwd=path, stdin=txn.encode())
    scale.sh(["git", "pack-refs", "--all"], cwd=path)
    return main


def squash_truth(repo, main):
    """Heads whose number a default-branch subject names as `(#N)`, not merged by ancestry."""
    subjects = scale.sh(["git", "log", "--format=%s", main], cwd=repo).stdout.decode(errors="replace")
    landed = {int(m) for m in re.findall(r"\(#(\d+)\)\s*$", subjects, re.M)}
    heads = scale.sh(["git", "for-each-ref", "--format=%(refname:short)", "refs/heads/pr"], cwd=repo).stdout.decode()
    merged = scale.sh(["git", "for-each-ref", f"--merged={main}", "--format=%(refname:short)", "refs/heads/pr"],
                      cwd=repo).stdout.decode()
    merged = set(merged.split())
    return {h[len("pr/"):] for h in heads.split() if h not in merged and int(h[len("pr/"):]) in landed}


def cherry_upstream(repo, main, branch):
    """True when `git cherry` finds the branch's whole change upstream (squashed to one commit)."""
    mb = scale.sh(["git", "merge-base", main, branch], cwd=repo, check=False).stdout.decode().strip()
    if not mb:
        return False
    tree = scale.sh(["git", "rev-parse", f"{branch}^{{tree}}"], cwd=repo).stdout.decode().strip()
    t = scale.sh(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit-tree", tree,
                  "-p", mb, "-m", "_"], cwd=repo).stdout.decode().strip()
    out = scale.sh(["git", "cherry", main, t], cwd=repo).stdout.decode().split()
    return out[:1] == ["-"]


def corpus_name(mirror):
    """`cargo` for `cargo.git`, and for the search tool's `rust-lang+cargo/repo` layout."""
    path = os.path.normpath(mirror)
    name = os.path.basename(path).removesuffix(".git")
    if name == "repo":
        name = os.path.basename(os.path.dirname(path)).split("+")[-1]
    return name


def bench(mirror, tmp, runs, squash, keyset, signers, rows, notes, copies=1):
    name = corpus_name(mirror) + (f" x{copies}" if copies > 1 else "")
    repo = os.path.join(tmp, f"corpus-{name.replace(' ', '')}")
    main = build_corpus(mirror, repo, copies)
    heads = len(scale.sh(["git", "for-each-ref", "refs/heads/"], cwd=repo).stdout.splitlines()) - 1
    commits = scale.sh(["git", "rev-list", "--count", main], cwd=repo).stdout.decode().strip()
    notes.append(f"{name}: {heads} pull-request heads, {commits} commits on {main}")
    print(f"# {notes[-1]}", file=sys.stderr)
    alice, bob = keyset["alice"], keyset["bob"]
    plan_json = os.path.join(tmp, f"plan-{name.replace(' ', '')}.json")
    plan_cmd = scale.g(alice, signers, "plan", "stale-branches", "-o", plan_json)
    git_cmd = ["git", "for-each-ref", f"--merged={main}", f"--format={FMT}", "refs/heads"]
    for graph in (False, True):
        if graph:
            scale.sh(["git", "commit-graph", "write", "--reachable"], cwd=repo)
        label = "commit-graph" if graph else "no commit-graph"
        t = scale.paired(plan_cmd, git_cmd, repo, runs=runs)
        rows.append((name, f"plan ({label}) vs git for-each-ref --merged", *t))
        show_cmd = [scale.GUARDCTL, "--allowed-signers", signers, "show", plan_json]
        t = scale.paired(show_cmd, plan_cmd, repo, runs=runs)
        rows.append((name, f"show vs plan ({label})", *t))
    planned = scale.affected(plan_json)
    merged = scale.sh(["git", "for-each-ref", f"--merged={main}", "--format=%(refname:short)", "refs/heads"],
                      cwd=repo).stdout.decode().split()
    merged = {b for b in merged if b != main}
    if planned != merged:
        sys.exit(f"{name}: plan and git --merged disagree on {len(planned ^ merged)} branches")
    notes.append(f"{name}: plan lists {len(planned)} merged heads, exactly git's --merged set")
    if not squash:
        return
    sq_json = os.path.join(tmp, f"squash-{name.replace(' ', '')}.json")
    sq_t, sq_m = scale.timed(scale.g(alice, signers, "plan", "stale-branches", "--squash-merged", "-o", sq_json),
                             repo, runs=1)
    rows.append((name, "plan --squash-merged (commit-graph)", sq_t, None, sq_m, None, scale.timed.cpu, None))
    print(f"# {name}: plan --squash-merged {sq_t:.1f} s, CPU {scale.timed.cpu:.1f} s, peak {sq_m / 1024:.0f} MB",
          file=sys.stderr)
    found = scale.affected(sq_json) - planned
    truth = {f"pr/{n}" for n in squash_truth(repo, main)}
    sample = random.Random(1).sample(sorted(found), min(100, len(found)))
    upstream = sum(cherry_upstream(repo, main, b) for b in sample)
    recall = len(found & truth) / len(truth) if truth else 1.0
    notes.append(f"{name}: --squash-merged found {len(found)} beyond --merged; {len(found & truth)} of the "
                 f"{len(truth)} heads a `(#N)` subject names (recall {recall:.3f}); git cherry agrees on "
                 f"{upstream} of a sample of {len(sample)}")
    print(f"# {notes[-1]}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mirrors", nargs="+", help="git directories with refs/pull/*/head (git clone --mirror)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--squash", action="store_true", help="also time plan --squash-merged, once")
    ap.add_argument("--keep", help="keep the corpora in this directory")
    ap.add_argument("--copies", type=int, default=1,
                    help="each pull-request head this many times (copyK/pr/N): the same history with "
                    "K times the branches, where git's --merged grows with commits x branches")
    ap.add_argument("--no-build", action="store_true", help="use target/release/guardctl as it is")
    ap.add_argument("--guardctl", help="measure this guardctl binary instead (implies --no-build): "
                    "an earlier build, for a before/after in one session")
    a = ap.parse_args()
    if a.guardctl:
        scale.GUARDCTL = os.path.abspath(a.guardctl)
    elif not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=scale.ROOT, check=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="guardctl-real-")
    os.makedirs(tmp, exist_ok=True)
    keyset, signers = scale.keys(tmp)
    rows, notes = [], []
    for m in a.mirrors:
        bench(m, tmp, a.runs, a.squash, keyset, signers, rows, notes, a.copies)
    print("| corpus | measurement | guardctl | git / baseline | ratio | guardctl CPU | guardctl peak RSS |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, what, ours, theirs, om, _tm, cpu, ratio in rows:
        r = f"{ratio:.2f}x" if ratio else "-"
        b = f"{theirs:.3f}s" if theirs else "-"
        print(f"| {name} | {what} | {ours:.3f}s | {b} | {r} | {cpu:.2f}s | {om / 1024:.0f} MB |")
    print()
    for n in notes:
        print(f"- {n}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
