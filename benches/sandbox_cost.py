#!/usr/bin/env python3
"""The preview sandbox's cost: a preview that lists 1,000 files, run sandboxed and not.

  sandboxed    guardctl's launcher (`guardctl __guardctl-sandbox <spec> sh sh -c 'ls files'`),
               exactly as `plan exec` runs a preview: new user, mount, IPC, UTS, PID and
               network namespaces, a new root of the same allowlist guardctl binds (read from
               src/sandbox.rs), its /tmp tmpfs, pivot_root, Landlock, then the preview
  unsandboxed  the same `sh -c 'ls files'` in the same directory with the same environment
  probe        guardctl's once-per-process check that this kernel can sandbox (the launcher
               building an empty sandbox and exiting)
  plan exec    `guardctl plan exec --preview 'ls files' -- true` end to end (the probe, the
               pinning and copying of `sh` and `ls`, the sandboxed preview, signing)

The two sides of each pair run alternately (one of each per run) and the ratio is the median
of the per-run ratios. Usage: python3 benches/sandbox_cost.py [--runs 21] [--no-build]
Needs: a release build (it runs `cargo build --release`), git, ssh-keygen. Never run by the
test suite: timings are reported, not asserted.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "guardctl")

def constant(name):
    """A `const NAME: [&str; N]` of src/sandbox.rs, read from the source so the bench binds
    exactly what guardctl binds (SYSTEM, ETC, DEVICES) and hides (SECRET)."""
    import re
    text = open(os.path.join(ROOT, "src", "sandbox.rs")).read()
    body = re.search(r"const " + name + r": \[&str; \d+\] = \[(.*?)\];", text, re.S).group(1)
    return re.findall(r'"([^"]+)"', body)


SYSTEM, ETC, DEVICES, SECRET = (constant(n) for n in ("SYSTEM", "ETC", "DEVICES", "SECRET"))


def timed(cmd, **kw):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp(prefix="guardctl-sandbox-bench-")
    try:
        repo = os.path.join(tmp, "repo")
        env = {"PATH": "/usr/bin:/bin", "HOME": os.path.join(tmp, "home"),
               "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
        os.makedirs(env["HOME"])
        subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True, env=env)
        files = os.path.join(repo, "files")
        os.makedirs(files)
        for i in range(1000):
            with open(os.path.join(files, f"artifact-{i:04}.tar.gz"), "w") as f:
                f.write("x")
        subprocess.run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.com",
                        "commit", "-q", "--allow-empty", "-m", "init"], check=True, env=env)
        key = os.path.join(tmp, "key")
        shutil.copy(os.path.join(ROOT, "fixtures", "keys", "alice_ed25519"), key)
        os.chmod(key, 0o600)

        jail = os.path.join(tmp, "jail")
        script = "ls files"

        def sandboxed():
            shutil.rmtree(jail, ignore_errors=True)
            os.makedirs(os.path.join(jail, "root"))
            spec = {"root": f"{jail}/root", "read": SYSTEM + ETC + DEVICES + [repo, f"{repo}/.git"],
                    "hide": [p for p in SECRET if os.path.exists(p)],
                    "network": False, "cwd": repo, "probe": False}
            return timed([BIN, "__guardctl-sandbox", json.dumps(spec), "/bin/sh", "sh", "-c", script],
                         env={"PATH": env["PATH"]}, cwd=repo)

        def unsandboxed():
            return timed(["/bin/sh", "-c", script], env={"PATH": env["PATH"]}, cwd=repo)

        def probe():
            shutil.rmtree(jail, ignore_errors=True)
            os.makedirs(os.path.join(jail, "root"))
            spec = {"root": f"{jail}/root", "read": SYSTEM + ETC + DEVICES, "hide": [],
                    "network": False, "cwd": "/", "probe": True}
            return timed([BIN, "__guardctl-sandbox", json.dumps(spec)], env={}, cwd="/")

        def plan_exec():
            return timed([BIN, "-q", "-C", repo, "--key", key, "plan", "exec", "--preview", script,
                          "-o", os.path.join(tmp, "plan.json"), "--force", "--", "true"], env=env)

        # Check the sandboxed side really lists the files before timing it.
        out = subprocess.run([BIN, "-q", "-C", repo, "--key", key, "--json", "plan", "exec", "--preview",
                              script, "-o", os.path.join(tmp, "plan.json"), "--", "true"],
                             env=env, check=True, capture_output=True, text=True).stdout
        lines = json.loads(out)["exec"]["total_lines"]
        assert lines == 1000, f"the sandboxed preview listed {lines} lines"

        pairs = []
        for _ in range(args.runs):
            pairs.append((sandboxed(), unsandboxed()))
        probes = [probe() for _ in range(args.runs)]
        plans = [plan_exec() for _ in range(args.runs)]
        ms = lambda s: f"{s * 1000:.1f} ms"
        med_s = statistics.median(p[0] for p in pairs)
        med_u = statistics.median(p[1] for p in pairs)
        extra = statistics.median(p[0] - p[1] for p in pairs)
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"runs: {args.runs}; load average {os.getloadavg()[0]:.2f}")
        print(f"preview listing 1,000 files, sandboxed:   {ms(med_s)}")
        print(f"preview listing 1,000 files, unsandboxed: {ms(med_u)}")
        print(f"sandbox cost per preview (median of pairs): {ms(extra)} ({ratio:.1f}x)")
        print(f"probe (once per process):                 {ms(statistics.median(probes))}")
        print(f"plan exec end to end:                     {ms(statistics.median(plans))}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
