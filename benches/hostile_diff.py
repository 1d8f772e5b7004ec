#!/usr/bin/env python3
"""Squash detection on files made to be expensive to diff, against `git diff` of the same pair.

Each case is a repository whose main holds file `f` at its fork and one more commit, and one
branch that rewrites `f` in a shape that is quadratic for a line diff's worst cases:

  rhythms      lines `x`/`y` in two rhythms (i%3 against i%5): every line frequent
  interleaved  unique lines, the branch's with a line `Z` after each one
  tokens60     60 distinct lines, shuffled differently on each side
  swapped      unique lines, the branch's with each adjacent pair swapped (the attack
               review's worst shape within the per-file budget)

at sizes under and over the line diff budget (src/repo/diff_budget.rs, MAX_DIFF_LINES,
2^15 lines both sides together: under it the file is diffed line by line, over it compared
by blob id). Timed, alternately with its baseline:

  plan    guardctl plan stale-branches --squash-merged (diffs the branch's change once)
  git     git diff --histogram <fork> <branch> (the algorithm squash detection uses), and
          git diff (Myers), same pair

Usage: python3 benches/hostile_diff.py [--runs 3] [--no-build] [--shapes rhythms,swapped]. Needs a release build, git,
ssh-keygen. Never run by the test suite: timings are reported, not asserted.
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (shared helpers: sh, once, paired, keys, g)

SHAPES = {
    "rhythms": lambda n: ("".join("x\n" if i % 3 == 0 else "y\n" for i in range(n)),
                          "".join("y\n" if i % 5 == 0 else "x\n" for i in range(n))),
    "interleaved": lambda n: ("".join(f"{i:x}\n" for i in range(n * 2 // 3)),
                              "".join(f"{i:x}\nZ\n" for i in range(n // 3))),
    "tokens60": lambda n: ("".join(f"{i % 60}\n" for i in range(n)),
                           "".join(f"{(i * 7) % 60}\n" for i in range(n))),
    "swapped": lambda n: ("".join(f"{i}\n" for i in range(n)),
                          "".join(f"{i ^ 1}\n" for i in range(n))),
}
# Lines per side: 16k sides sit at the budget (32k together), 100k and 300k far over it.
SIZES = [8_000, 16_000, 100_000, 300_000]


def make(path, before, after):
    shutil.rmtree(path, ignore_errors=True)
    scale.sh(["git", "init", "-q", "-b", "main", path])
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]

    def commit(files, msg):
        for name, text in files.items():
            with open(os.path.join(path, name), "w") as fh:
                fh.write(text)
        scale.sh(git + ["add", "-A"], cwd=path)
        scale.sh(git + ["commit", "-q", "-m", msg], cwd=path)
        return scale.sh(["git", "rev-parse", "HEAD"], cwd=path).stdout.decode().strip()

    fork = commit({"f": before, "other": "1\n"}, "fork")
    scale.sh(["git", "checkout", "-q", "-b", "topic"], cwd=path)
    commit({"f": after}, "rewrite f")
    scale.sh(["git", "checkout", "-q", "main"], cwd=path)
    commit({"other": "2\n"}, "main moves on")
    scale.sh(["git", "commit-graph", "write", "--reachable"], cwd=path)
    return fork


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, of: " + ", ".join(SHAPES))
    a = ap.parse_args()
    if not a.no_build:
        scale.sh(["cargo", "build", "--release", "-q"], cwd=scale.ROOT)
    tmp = tempfile.mkdtemp(prefix="guardctl-hostile-diff-")
    keyset, signers = scale.keys(tmp)
    out = os.path.join(tmp, "plan.json")
    print("| shape | lines per side | bytes | plan --squash-merged | git diff --histogram | ratio | git diff (Myers) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    try:
        for shape in a.shapes.split(","):
            gen = SHAPES[shape]
            for n in SIZES:
                before, after = gen(n)
                repo = os.path.join(tmp, f"{shape}{n}")
                fork = make(repo, before, after)
                plan = scale.g(keyset["alice"], signers, "plan", "stale-branches", "--squash-merged", "-o", out)
                hist = ["git", "diff", "--histogram", "--stat", fork, "topic"]
                ours, theirs, _, _, _, ratio = scale.paired(plan, hist, repo, runs=a.runs)
                myers, _ = scale.timed(["git", "diff", "--stat", fork, "topic"], repo, runs=a.runs)
                lines = max(before.count("\n"), after.count("\n"))
                print(f"| {shape} | {lines:,} | {max(len(before), len(after)):,} | {ours:.2f} s | "
                      f"{theirs:.2f} s | {ratio:.2f}× | {myers:.2f} s |", flush=True)
                shutil.rmtree(repo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
