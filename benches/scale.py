#!/usr/bin/env python3
"""guardctl at scale, measured against the git CLI doing the same work in the same run.

Generates repositories with `git fast-import` in two shapes, then reports medians and ratios:

  linear  every merged branch is a commit of a linear main (about 60% merged, 20%
          squash-merged, 20% unmerged with 1-5 own commits, dates over two years)
  real    pull requests fork from main wherever it is when they start and land later as merge
          commits (60%), as one squash commit titled `... (#N)` (20%), or never (20%), with
          maintainers' commits in between; everything edits a small pool of files, so main
          keeps changing the lines around (and the very lines of) what a squash landed

  plan   guardctl plan stale-branches (default criteria, every fact recorded)
         vs git for-each-ref --merged=main --format='%(refname) %(objectname)
            %(committerdate:unix) %(authoremail) %(subject)' refs/heads
  squash guardctl plan --squash-merged (at --squash-sizes): on the linear shape vs the shell
         recipe (commit-tree + cherry per branch); on the real shape with precision and recall
         against the generator's ground truth
  apply  guardctl apply (backups included) vs one git update-ref --stdin transaction deleting
         the same refs with their old values; also with a [branch] config section per branch
  show   guardctl show of the plan vs the plan itself, and show --format markdown
  memory peak RSS of each (GNU time)

and checks the plan against the generator's ground truth (merged set, squash set).

Every plan is timed without and with a commit-graph (`git commit-graph write --reachable`,
what `git gc` does), git too; times are wall-clock medians, plus guardctl's CPU time (user +
sys), which says more than wall time on a machine others are using. guardctl and its baseline
are run alternately (one of each per run), and the ratio is the median of the per-run ratios,
so a machine that drifts during the run (it does: see `paired`) moves both sides alike.

Usage: python3 benches/scale.py [--sizes 1000,10000,50000] [--shapes linear,real]
                                [--squash-sizes N,...] [--runs 3] [--keep DIR] [--no-build]
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


def generate_real(path, n, seed=11, files=400, lines=30):
    """A real-shaped repository: pull requests fork from main wherever main is when they start
    (so fork points spread over the whole history) and land later, as a merge commit (60%), as
    one squash commit titled `... (#N)` (20%), or never (20%). Maintainers also commit to main
    directly. Everything edits lines of a small pool of files, so main's later commits touch
    the files (sometimes the lines next to, or the very lines) a squash merge changed. Branch
    heads are `refs/heads/pr/N`. Returns the ground truth sets of branch names."""
    import random

    rng = random.Random(seed)
    sh(["git", "init", "-q", "-b", "main", path])
    out = []
    mark = 0
    truth = {"merged": set(), "squash": set(), "unmerged": set()}
    content = {f"src/m{k // 40:02d}/f{k:03d}.c": [f"line {j}" for j in range(lines)] for k in range(files)}
    names = sorted(content)
    t0 = NOW - TWO_YEARS
    clock = [0]

    def tick():
        clock[0] += 1
        return t0 + clock[0] * 60

    def blob(lines_):
        return "\n".join(lines_) + "\n"

    def commit(ref, msg, changed, parent, author, merge=None):
        nonlocal mark
        mark += 1
        t = tick()
        data = msg.encode()
        out.append(f"commit {ref}\nmark :{mark}\n")
        out.append(f"author {author} <{author}@example.com> {t} +0000\n")
        out.append(f"committer {author} <{author}@example.com> {t} +0000\n")
        out.append(f"data {len(data)}\n{msg}\n")
        if parent:
            out.append(f"from :{parent}\n")
        if merge:
            out.append(f"merge :{merge}\n")
        for name, text in changed:
            b = text.encode()
            out.append(f"M 644 inline {name}\ndata {len(b)}\n{text}\n")
        out.append("\n")
        return mark

    def apply(changes):
        """main's current content with `changes` ({file: {line: text}}) applied."""
        result = []
        for f, edits in sorted(changes.items()):
            body = list(content[f])
            for j, text in edits.items():
                body[j] = text
            content[f] = body
            result.append((f, blob(body)))
        return result

    head = commit("refs/heads/main", "initial", [(f, blob(c)) for f, c in sorted(content.items())], None, "root")
    pending = {}  # landing step -> [(pr, kind, tip, changes)]
    for i in range(n):
        pr = i + 1
        kind = rng.choices(["merged", "squash", "unmerged"], [60, 20, 20])[0]
        # Forked from main as it is now: its files as main has them.
        changes = {}
        tip = head
        snapshot = {}
        for c in range(rng.randint(1, 4)):
            edits = []
            for f in rng.sample(names, rng.randint(1, 2)):
                j = rng.randrange(lines)
                changes.setdefault(f, {})[j] = f"pr {pr} change {c} line {j}"
                base_body = snapshot.setdefault(f, list(content[f]))
                body = list(base_body)
                for jj, text in changes[f].items():
                    body[jj] = text
                edits.append((f, blob(body)))
            tip = commit(f"refs/heads/pr/{pr}", f"PR {pr}: step {c}", edits, tip, f"dev{pr % 89}")
        truth[kind].add(f"pr/{pr}")
        if kind != "unmerged":
            pending.setdefault(i + rng.randint(1, 60), []).append((pr, kind, tip, changes))
        # Maintainers' own commits: one line of one file, now and then.
        if rng.random() < 0.3:
            f = rng.choice(names)
            head = commit("refs/heads/main", f"Maintenance {i}", apply({f: {rng.randrange(lines): f"maint {i}"}}), head, "maint")
        for pr_, kind_, tip_, changes_ in pending.pop(i, []):
            if kind_ == "merged":
                head = commit("refs/heads/main", f"Merge pull request #{pr_} from dev/pr-{pr_}", apply(changes_), head, "merger", merge=tip_)
            else:
                head = commit("refs/heads/main", f"PR {pr_} squashed (#{pr_})", apply(changes_), head, f"dev{pr_ % 89}")
    for step in sorted(pending):
        for pr_, kind_, tip_, changes_ in pending[step]:
            if kind_ == "merged":
                head = commit("refs/heads/main", f"Merge pull request #{pr_}", apply(changes_), head, "merger", merge=tip_)
            else:
                head = commit("refs/heads/main", f"PR {pr_} squashed (#{pr_})", apply(changes_), head, f"dev{pr_ % 89}")
    sh(["git", "fast-import", "--quiet"], cwd=path, stdin="".join(out).encode())
    sh(["git", "pack-refs", "--all"], cwd=path)
    return truth


def once(args, cwd, stdin=None):
    """Wall time, peak RSS (KiB) and CPU time (user + sys) of one run of `args`."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *args], cwd=cwd, input=stdin, env=ENV, capture_output=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 2):
        sys.exit(f"failed: {' '.join(args)}\n{p.stderr.decode(errors='replace')[-2000:]}")
    m, u, s_ = p.stderr.decode().strip().splitlines()[-1].split()
    return wall, int(m), float(u) + float(s_)


def timed(args, cwd, stdin=None, runs=3, prepare=None):
    """Median wall time and max peak RSS (KiB) of `args` over `runs` runs."""
    times, peaks, cpus = [], [], []
    for _ in range(runs):
        if prepare:
            prepare()
        wall, peak, cpu = once(args, cwd, stdin)
        times.append(wall)
        peaks.append(peak)
        cpus.append(cpu)
    timed.cpu = statistics.median(cpus)
    return statistics.median(times), max(peaks)


def paired(ours, theirs, cwd, runs=3, prepare=None, their_stdin=None):
    """Time guardctl (`ours`) and its baseline (`theirs`) alternately, run by run.

    The machine drifts during a run: at 50k branches the same `git update-ref --stdin` took
    2.2 s, 6.6 s and 17 s in three consecutive fresh copies (the kernel's directory lookups
    in ext4 grew slower as copies were made and removed). Timing all of one command and then
    all of the other turned that drift into a ratio (apply measured 2.6x the bare transaction
    that way, 1.0x when alternated). So each run times both, the ratio reported is the median
    of the per-run ratios, and the order within a run alternates too.
    Returns (our median, their median, our peak, their peak, our median CPU, median ratio).
    """
    ours_t, theirs_t, ours_m, theirs_m, cpus, ratios = [], [], [], [], [], []
    for i in range(runs):
        got = {}
        for who in (("ours", "theirs") if i % 2 == 0 else ("theirs", "ours")):
            if prepare:
                prepare()
            got[who] = once(ours if who == "ours" else theirs, cwd, None if who == "ours" else their_stdin)
        ours_t.append(got["ours"][0])
        theirs_t.append(got["theirs"][0])
        ours_m.append(got["ours"][1])
        theirs_m.append(got["theirs"][1])
        cpus.append(got["ours"][2])
        ratios.append(got["ours"][0] / got["theirs"][0])
    return (statistics.median(ours_t), statistics.median(theirs_t), max(ours_m), max(theirs_m),
            statistics.median(cpus), statistics.median(ratios))


def keys(tmp):
    paths = {}
    for who in ("alice", "bob"):
        k = os.path.join(tmp, f"{who}_ed25519")
        # A --keep directory used before already holds them (ssh-keygen would not overwrite).
        if not (os.path.exists(k) and os.path.exists(k + ".pub")):
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


def bench_size(n, runs, tmp, keyset, signers, rows, do_squash, shape="linear"):
    repo = os.path.join(tmp, f"{shape}{n}")
    # A --keep directory used before: generate afresh (same seed, same repository).
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(os.path.join(tmp, f"repo{n}-config"), ignore_errors=True)
    t0 = time.perf_counter()
    truth = (generate_real if shape == "real" else generate)(repo, n)
    gen = time.perf_counter() - t0
    commits = sh(["git", "rev-list", "--count", "main"], cwd=repo).stdout.decode().strip()
    print(f"# {shape} {n} branches, {commits} commits on main: generated in {gen:.1f}s", file=sys.stderr)
    alice, bob = keyset["alice"], keyset["bob"]
    plan_json = os.path.join(tmp, f"plan-{shape}{n}.json")

    fmt = "%(refname) %(objectname) %(committerdate:unix) %(authoremail) %(subject)"
    for graph in (False, True):
        if graph:
            sh(["git", "commit-graph", "write", "--reachable"], cwd=repo)
        label = "commit-graph" if graph else "no commit-graph"
        git_cmd = ["git", "for-each-ref", "--merged=main", f"--format={fmt}", "refs/heads"]
        plan_cmd = g(alice, signers, "plan", "stale-branches", "-o", plan_json)
        gc_t, git_t, gc_m, git_m, cpu, ratio = paired(plan_cmd, git_cmd, repo, runs=runs)
        rows.append((n, f"{shape}: plan ({label})", gc_t, git_t, gc_m, git_m, cpu, ratio))
    got = affected(plan_json)
    if got != truth["merged"]:
        sys.exit(f"ground truth mismatch at {n}: {len(got ^ truth['merged'])} branches differ")

    show_cmd = [GUARDCTL, "--allowed-signers", signers, "show", plan_json]
    show_t, plan_t, show_m, plan_m, cpu, ratio = paired(show_cmd, plan_cmd, repo, runs=runs)
    rows.append((n, f"{shape}: show vs plan", show_t, plan_t, show_m, plan_m, cpu, ratio))
    # The Markdown a CI job posts: the same view, re-validation included, cut to 65,536 bytes.
    md_cmd = [GUARDCTL, "--allowed-signers", signers, "show", "--format", "markdown", plan_json]
    md_t, plan_t, md_m, plan_m, cpu, ratio = paired(md_cmd, plan_cmd, repo, runs=runs)
    rows.append((n, f"{shape}: show --format markdown vs plan", md_t, plan_t, md_m, plan_m, cpu, ratio))

    if do_squash and shape == "real":
        # Too slow for the cherry recipe at these sizes; judged against the ground truth.
        sq_json = os.path.join(tmp, f"squash-{shape}{n}.json")
        sq_t, sq_m = timed(g(alice, signers, "plan", "stale-branches", "--squash-merged", "-o", sq_json), repo, runs=1)
        rows.append((n, f"{shape}: plan --squash-merged (commit-graph)", sq_t, None, sq_m, None, timed.cpu, None))
        got = affected(sq_json)
        tp = len(got & truth["squash"])
        precision = tp / len(got) if got else 1.0
        recall = tp / len(truth["squash"]) if truth["squash"] else 1.0
        print(f"# {shape} {n}: --squash-merged found {len(got)}, {tp} of {len(truth['squash'])} squashed: "
              f"precision {precision:.4f}, recall {recall:.4f}", file=sys.stderr)
        SQUASH_ACCURACY.append((n, len(got), tp, len(truth["squash"]), precision, recall))
    if shape == "real":
        return
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
        rows.append((n, "linear: plan --squash-merged vs cherry recipe", sq_t, rc_t, sq_m, rc_m, None, sq_t / rc_t))
        got = affected(sq_json)
        if got != truth["squash"]:
            sys.exit(f"squash ground truth mismatch at {n}: {len(got ^ truth['squash'])} branches differ")

    # apply vs one update-ref transaction, each on a fresh copy of the repository. A plan is
    # bound to the clone it was made in (a copy is another repository), so each copy gets its
    # own plan and approval, untimed.
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
        the_plan = os.path.join(tmp, f"apply{n}.json")

        def copy():
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work, symlinks=True)

        def fresh():
            copy()
            sh(g(alice, signers, "plan", "stale-branches", "-o", the_plan), cwd=work)
            sh(g(bob, signers, "approve", the_plan, "--yes"), cwd=work)

        ap_t, git_t, ap_m, git_m, cpu, ratio = paired(
            g(alice, signers, "apply", the_plan), ["git", "update-ref", "--stdin"], work,
            runs=runs, prepare=fresh, their_stdin=txn)
        label = "apply (config per branch)" if with_config else "apply"
        rows.append((n, f"linear: {label} vs update-ref --stdin", ap_t, git_t, ap_m, git_m, cpu, ratio))
    shutil.rmtree(work, ignore_errors=True)


SQUASH_ACCURACY = []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--shapes", default="linear,real")
    ap.add_argument("--squash-sizes", help="sizes at which to time --squash-merged (default: the smallest; "
                    "0: none); the linear shape's cherry recipe runs only at the smallest of --sizes")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="keep the generated repositories in this directory")
    ap.add_argument("--no-build", action="store_true", help="use target/release/guardctl as it is")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    tmp = a.keep or tempfile.mkdtemp(prefix="guardctl-bench-")
    os.makedirs(tmp, exist_ok=True)
    keyset, signers = keys(tmp)
    rows = []
    sizes = [int(s) for s in a.sizes.split(",")]
    # `--squash-sizes 0` (or any size below 1) times no --squash-merged at all: a repository
    # without branches has no squash merges to find.
    squash_sizes = [int(s) for s in a.squash_sizes.split(",")] if a.squash_sizes else sizes[:1]
    squash_sizes = sorted(n for n in squash_sizes if n > 0)
    for shape in a.shapes.split(","):
        # The cherry recipe (linear) is minutes per thousand branches: the smallest size only.
        todo = sorted(set(sizes) | set(squash_sizes)) if shape == "real" else sizes
        for n in todo:
            squash = n in squash_sizes and (shape == "real" or n == sizes[0])
            done = len(rows)
            bench_size(n, a.runs, tmp, keyset, signers, rows, do_squash=squash, shape=shape)
            # As measured too, so that a run stopped early still leaves its numbers.
            for row in rows[done:]:
                print("# " + " ".join(str(round(x, 3)) if isinstance(x, float) else str(x) for x in row), file=sys.stderr)
    print("| branches | measurement | guardctl | git / baseline | ratio | guardctl CPU | guardctl peak RSS | baseline peak RSS |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n, what, ours, theirs, om, tm, cpu, ratio in rows:
        ratio = f"{ratio:.2f}x" if ratio else "-"
        base = f"{theirs:.3f}s" if theirs else "-"
        cpu_ = f"{cpu:.2f}s" if cpu is not None else "-"
        tm_ = f"{tm / 1024:.0f} MB" if tm else "-"
        print(f"| {n} | {what} | {ours:.3f}s | {base} | {ratio} | {cpu_} | {om / 1024:.0f} MB | {tm_} |")
    for n, found, tp, total, precision, recall in SQUASH_ACCURACY:
        print(f"\nreal {n}: --squash-merged found {found}; {tp} of {total} squash-merged branches; "
              f"precision {precision:.4f}, recall {recall:.4f}")
    by = {(n, w): t for n, w, t, *_ in rows}
    if len(sizes) > 1:
        lo, hi = sizes[-2], sizes[-1]
        for w in ("linear: plan (no commit-graph)", "real: plan (no commit-graph)", "real: plan (commit-graph)",
                  "linear: apply vs update-ref --stdin"):
            if (lo, w) in by and (hi, w) in by:
                print(f"\nscaling {w}: time at {hi} / time at {lo} = {by[(hi, w)] / by[(lo, w)]:.1f}")
    if len(squash_sizes) > 1:
        lo, hi = squash_sizes[0], squash_sizes[-1]
        w = "real: plan --squash-merged (commit-graph)"
        if (lo, w) in by and (hi, w) in by:
            print(f"\nscaling {w}: time at {hi} / time at {lo} = {by[(hi, w)] / by[(lo, w)]:.1f}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
