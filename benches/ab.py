#!/usr/bin/env python3
"""Two or more guardctl builds on one repository, alternately with git, for a before/after.

    python3 benches/ab.py REPO BUILD [BUILD ...] [--runs 40] [--base master] [--keys DIR]

Each run times `BUILD plan stale-branches -o FILE` for every build and then
`git for-each-ref --merged=<base>` with the fields a plan records (what `benches/real.py`
compares against), one after the other, so a machine that drifts moves them alike. Reports
each command's median wall time and, per build, the median of its per-run ratios to git.
Useful where `benches/real.py` (one build per run, a corpus rebuilt each time) cannot tell
a few milliseconds from the machine's noise. The repository is used as it is: remove or
write its commit-graph first to measure either case. Keys: alice's from --keys (made by
`benches/real.py --keep DIR` or `benches/scale.py --keep DIR`). Never run by the tests.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (keys, the git environment)

FMT = "%(refname) %(objectname) %(committerdate:unix) %(authoremail) %(subject)"


def timed(cmd, cwd):
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=scale.ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo")
    ap.add_argument("builds", nargs="+", help="guardctl binaries")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--base", default="master")
    ap.add_argument("--keys", help="a directory with alice_ed25519 and allowed_signers (else made)")
    a = ap.parse_args()
    keys = a.keys or tempfile.mkdtemp(prefix="guardctl-ab-")
    if a.keys:
        key, signers = os.path.join(keys, "alice_ed25519"), os.path.join(keys, "allowed_signers")
    else:
        keyset, signers = scale.keys(keys)
        key = keyset["alice"]
    out = os.path.join(keys, "ab-plan.json")
    cmds = {b: [os.path.abspath(b), "-q", "--key", key, "--allowed-signers", signers, "plan",
                "stale-branches", "--base", a.base, "-o", out] for b in a.builds}
    cmds["git"] = ["git", "for-each-ref", f"--merged={a.base}", f"--format={FMT}", "refs/heads"]
    times = {k: [] for k in cmds}
    for _ in range(a.runs):
        for k, c in cmds.items():
            times[k].append(timed(c, a.repo))
    for k, ts in times.items():
        print(f"{k}: median {statistics.median(ts) * 1000:.1f} ms")
    for b in a.builds:
        ratios = [ours / git for ours, git in zip(times[b], times["git"])]
        print(f"{b} / git: {statistics.median(ratios):.2f} (median of {a.runs} per-run ratios)")


if __name__ == "__main__":
    main()
