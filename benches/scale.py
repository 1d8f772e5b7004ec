#!/usr/bin/env python3
"""guardctl at scale, measured against the git CLI doing the same work in the same run.

Generates repositories with `git fast-import` (about 60% merged, 20% squash-merged and 20%
unmerged branches with 1-5 own commits, dates spread over two years), then reports medians and
ratios:

  plan   guardctl plan stale-branches (default criteria, every fact recorded)
         vs git for-each-ref --merged=main --format='%(refname) %(objectname)
            %(committerdate:unix) %(authoremail) %(subject)' refs/heads
  squash guardctl plan --squash-merged vs the shell recipe (commit-tree + cherry per branch),
         on the smallest size only
  apply  guardctl apply (backups included) vs one git update-ref --stdin transaction deleting
         the same refs with their old values; also with a [branch] config section per branch
  show   guardctl show of the plan vs the plan itself
  memory peak RSS of each (GNU time)

and checks the plan against the generator's ground truth (merged set, squash set).

Usage: python3 benches/scale.py [--sizes 1000,10000,50000] [--runs 3] [--keep DIR]
Needs: a release build (it runs `cargo build --release`), git, ssh-keygen, /usr/bin/time.
Never run by the test suite: timings are reported, not asserted.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUARDCTL = os.path.join(ROOT, "target", "release", "guardctl")
ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", TZ="UTC", LC_ALL="C")
NOW = int(time.time())
TWO_YEARS = 2 * 365 * 86400


def sh(args, cwd=None, stdin=None, check=True):
    return subprocess.run(args, cwd=cwd, input=stdin, env=ENV, check=check, capture_output=True)


def generate(path, n, seed=7):
    """A repository with n branches; returns (merged, squashed, unmerged) sets of branch names."""
    import random

    rng = random.Random(seed)
    sh(["git", "init", "-q", "-b", "main", path])
    kinds = ["merged"] * 60 + ["squash"] * 20 + ["unmerged"] * 20
    plan = [rng.choice(kinds) for _ in range(n)]
    out = []
    mark = 0
    main_marks = []
    truth = {"merged": set(), "squash": set(), "unmerged": set()}

    def when(i):
        return NOW - TWO_YEARS + (i * TWO_YEARS) // (2 * n + 10)

    def commit(ref, msg, files, parent, t, author):
        nonlocal mark
        mark += 1
        data = msg.encode()
        out.append(f"commit {ref}\nmark :{mark}\n")
        out.append(f"author {author} <{author}@example.com> {t} +0000\n")
        out.append(f"committer {author} <{author}@example.com> {t} +0000\n")
        out.append(f"data {len(data)}\n{msg}\n")
        if parent:
            out.append(f"from :{parent}\n")
        for name, content in files:
            out.append(f"M 644 inline {name}\ndata {len(content)}\n{content}\n")
        out.append("\n")
        return mark

    step = 0
    head = commit("refs/heads/main", "initial", [("README", "scale\n")], None, when(0), "root")
    main_marks.append(head)
    pending_squash = []
    for i, kind in enumerate(plan):
        name = f"topic/{i:06d}"
        f = f"d{i % 256:03d}/f{i}"
        step += 1
        if kind == "merged":
            # Merged by fast-forward: the branch tip is a commit of main.
            head = commit("refs/heads/main", f"Work {i}", [(f, f"{i}\n")], head, when(step), f"dev{i % 97}")
            main_marks.append(head)
            out.append(f"reset refs/heads/{name}\nfrom :{head}\n\n")
            truth["merged"].add(name)
        elif kind == "squash":
            fork = head
            tip = fork
            commits = rng.randint(1, 3)
            for c in range(commits):
                tip = commit(f"refs/heads/{name}", f"Squash work {i}.{c}", [(f, f"{i} v{c}\n")], tip, when(step), f"dev{i % 97}")
            # The squash lands on main a little later: the whole change as one commit.
            pending_squash.append((i, f, commits))
            truth["squash"].add(name)
        else:
            tip = head
            for c in range(rng.randint(1, 5)):
                tip = commit(f"refs/heads/{name}", f"Unmerged {i}.{c}", [(f"u/{i}", f"{i}.{c}\n")], tip, when(step), f"dev{i % 97}")
            truth["unmerged"].add(name)
        if len(pending_squash) >= 8 or (i == n - 1 and pending_squash):
            for j, g, commits in pending_squash:
                step += 1
                head = commit("refs/heads/main", f"Squashed topic {j}", [(g, f"{j} v{commits - 1}\n")], head, when(step), "merger")
                main_marks.append(head)
            pending_squash = []
    stream = "".join(out).encode()
    sh(["git", "fast-import", "--quiet"], cwd=path, stdin=stream)
    sh(["git", "pack-refs", "--all"], cwd=path)
    # No checkout: HEAD names main (the base), and a work tree of 50k files would only make
    # the per-run copies slow and the timings noisy.
    return truth


def timed(args, cwd, stdin=None, runs=3, prepare=None):
    """Median wall time and max peak RSS (KiB) of `args` over `runs` runs."""
    times, peaks = [], []
    for _ in range(runs):
        if prepare:
            prepare()
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", *args], cwd=cwd, input=stdin, env=ENV, capture_output=True)
        times.append(time.perf_counter() - t0)
        if p.returncode not in (0, 2):
            sys.exit(f"failed: {' '.join(args)}\n{p.stderr.decode(errors='replace')[-2000:]}")
        peaks.append(int(p.stderr.decode().strip().splitlines()[-1]))
    return statistics.median(times), max(peaks)


def keys(tmp):
    paths = {}
    for who in ("alice", "bob"):
        k = os.path.join(tmp, f"{who}_ed25519")
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"bench {who}", "-f", k])
        paths[who] = k
    signers = os.path.join(tmp, "allowed_signers")
    with open(signers, "w") as fh:
        for who, k in paths.items():
            fh.write(f"{who}@example.com {open(k + '.pub').read()}")
    return paths, signers


def g(key, signers, *args):
    return [GUARDCTL, "-q", "--key", key, "--allowed-signers", signers, *args]


def affected(plan_path):
    import base64
    import json

    v = json.load(open(plan_path))
    p = json.loads(base64.b64decode(v["payload"]))
    return {a["ref"][len("refs/heads/"):] for a in p["affected"]}


def bench_size(n, runs, tmp, keyset, signers, rows, do_squash):
    repo = os.path.join(tmp, f"repo{n}")
    t0 = time.perf_counter()
    truth = generate(repo, n)
    gen = time.perf_counter() - t0
    print(f"# {n} branches: generated in {gen:.1f}s", file=sys.stderr)
    alice, bob = keyset["alice"], keyset["bob"]
    plan_json = os.path.join(tmp, f"plan{n}.json")

    fmt = "%(refname) %(objectname) %(committerdate:unix) %(authoremail) %(subject)"
    for graph in (False, True):
        if graph:
            sh(["git", "commit-graph", "write", "--reachable"], cwd=repo)
        label = "commit-graph" if graph else "no commit-graph"
        git_t, git_m = timed(["git", "for-each-ref", "--merged=main", f"--format={fmt}", "refs/heads"], repo, runs=runs)
        gc_t, gc_m = timed(g(alice, signers, "plan", "stale-branches", "-o", plan_json), repo, runs=runs)
        rows.append((n, f"plan ({label})", gc_t, git_t, gc_m, git_m))
    got = affected(plan_json)
    if got != truth["merged"]:
        sys.exit(f"ground truth mismatch at {n}: {len(got ^ truth['merged'])} branches differ")

    show_t, show_m = timed([GUARDCTL, "--allowed-signers", signers, "show", plan_json], repo, runs=runs)
    rows.append((n, "show vs plan", show_t, gc_t, show_m, gc_m))

    if do_squash:
        sq_json = os.path.join(tmp, f"squash{n}.json")
        sq_t, sq_m = timed(g(alice, signers, "plan", "stale-branches", "--squash-merged", "-o", sq_json), repo, runs=runs)
        recipe = (
            "for b in $(git for-each-ref --format='%(refname:short)' refs/heads/topic); do "
            "mb=$(git merge-base main $b); "
            "t=$(git commit-tree $(git rev-parse $b^{tree}) -p $mb -m _); "
            "case $(git cherry main $t) in -*) echo $b;; esac; done"
        )
        rc_t, rc_m = timed(["sh", "-c", recipe], repo, runs=1)
        rows.append((n, "plan --squash-merged vs cherry recipe", sq_t, rc_t, sq_m, rc_m))
        got = affected(sq_json)
        if got != truth["squash"]:
            sys.exit(f"squash ground truth mismatch at {n}: {len(got ^ truth['squash'])} branches differ")

    # apply vs one update-ref transaction, each on a fresh copy of the repository.
    sh(g(bob, signers, "approve", plan_json, "--yes"), cwd=repo)
    heads = sh(["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/topic"], cwd=repo).stdout.decode()
    merged_refs = [l for l in heads.splitlines() if l.split()[0][len("refs/heads/"):] in truth["merged"]]
    txn = ("start\n" + "".join(f"delete {r} {o}\n" for r, o in (l.split() for l in merged_refs)) + "prepare\ncommit\n").encode()
    for with_config in (False, True):
        work = os.path.join(tmp, f"work{n}")
        base = repo
        if with_config:
            base = os.path.join(tmp, f"repo{n}-config")
            if not os.path.exists(base):
                shutil.copytree(repo, base, symlinks=True)
                with open(os.path.join(base, ".git", "config"), "a") as fh:
                    for l in heads.splitlines():
                        b = l.split()[0][len("refs/heads/"):]
                        fh.write(f'[branch "{b}"]\n\tremote = origin\n\tmerge = refs/heads/{b}\n')
                cfg_plan = os.path.join(tmp, f"plan{n}-config.json")
                sh(g(alice, signers, "plan", "stale-branches", "-o", cfg_plan), cwd=base)
                sh(g(bob, signers, "approve", cfg_plan, "--yes"), cwd=base)
        the_plan = os.path.join(tmp, f"plan{n}-config.json") if with_config else plan_json

        def fresh():
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work, symlinks=True)

        git_t, git_m = timed(["git", "update-ref", "--stdin"], work, stdin=txn, runs=runs, prepare=fresh)
        ap_t, ap_m = timed(g(alice, signers, "apply", the_plan), work, runs=runs, prepare=fresh)
        label = "apply (config per branch)" if with_config else "apply"
        rows.append((n, f"{label} vs update-ref --stdin", ap_t, git_t, ap_m, git_m))
    shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="keep the generated repositories in this directory")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="guardctl-bench-")
    os.makedirs(tmp, exist_ok=True)
    keyset, signers = keys(tmp)
    rows = []
    sizes = [int(s) for s in a.sizes.split(",")]
    for n in sizes:
        bench_size(n, a.runs, tmp, keyset, signers, rows, do_squash=(n == sizes[0]))
    print("| branches | measurement | guardctl | git / baseline | ratio | guardctl peak RSS | baseline peak RSS |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n, what, ours, theirs, om, tm in rows:
        print(f"| {n} | {what} | {ours:.3f}s | {theirs:.3f}s | {ours / theirs:.2f}x | {om / 1024:.0f} MB | {tm / 1024:.0f} MB |")
    by = {(n, w): t for n, w, t, *_ in rows}
    if len(sizes) > 1:
        lo, hi = sizes[-2], sizes[-1]
        for w in ("plan (no commit-graph)", "apply vs update-ref --stdin", "apply (config per branch) vs update-ref --stdin"):
            if (lo, w) in by and (hi, w) in by:
                print(f"\nscaling {w}: time at {hi} / time at {lo} = {by[(hi, w)] / by[(lo, w)]:.1f}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
