#!/usr/bin/env python3
"""Connections and time of guardctl's team commands against a remote over a real sshd.

Starts `sshd` on 127.0.0.1 (a throwaway host key, one authorised client key, in a temporary
directory, as the current user), pushes a small repository with merged branches and the team's
policy to a bare repository there, clones it three times (planner, reviewer, executor) over
`ssh://`, and runs the team's loop once per run:

  plan --publish   alice plans the remote's merged branches and publishes the plan
  show <id>        bob reads it by id
  approve <id>     bob approves it (published)
  verify <id>      dave (the executor) checks it
  apply <id>       dave applies it (the deletions, the consumed marker, the receipt)
  inbox            bob lists what waits for review

For each it counts the SSH connections sshd accepted while it ran (its log) and the time,
against `git ls-remote` and `git fetch` of the same remote in the same run (one connection
each: the floor any command that reads the remote pays). Prints a table of medians. Never
run by the test suite; nothing is asserted.

    cargo build --release && python3 benches/remote_ssh.py [--runs 5] [--binary PATH]

Needs `sshd` (openssh-server) and `ssh-keygen`.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = """version = 1

[groups]
reviewers = ["bob@example.com"]

[approvals]
required = 1
from = ["reviewers"]
"""


def run(args, cwd=None, env=None, check=True):
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sshd(tmp):
    """Start sshd; returns (process, log path, GIT_SSH_COMMAND)."""
    binary = shutil.which("sshd") or "/usr/sbin/sshd"
    host = os.path.join(tmp, "host_ed25519")
    client = os.path.join(tmp, "client_ed25519")
    for k in (host, client):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k])
    auth = os.path.join(tmp, "authorized_keys")
    shutil.copy(client + ".pub", auth)
    os.chmod(auth, 0o600)
    port = free_port()
    log = os.path.join(tmp, "sshd.log")
    cfg = os.path.join(tmp, "sshd_config")
    with open(cfg, "w") as f:
        f.write(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {host}
AuthorizedKeysFile {auth}
PidFile {tmp}/sshd.pid
StrictModes no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
LogLevel INFO
""")
    # sshd insists on its privilege-separation directory (made at boot where sshd runs).
    if not os.path.isdir("/run/sshd"):
        try:
            os.makedirs("/run/sshd", 0o755)
        except OSError as e:
            raise SystemExit(f"sshd needs /run/sshd: {e}")
    proc = subprocess.Popen([binary, "-D", "-f", cfg, "-E", log])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        with open(log) as f:
            raise SystemExit(f"sshd did not start: {f.read()}")
    known = os.path.join(tmp, "known_hosts")
    ssh = (f"ssh -F /dev/null -i {client} -o IdentitiesOnly=yes -o BatchMode=yes "
           f"-o StrictHostKeyChecking=no -o UserKnownHostsFile={known} -o LogLevel=ERROR -p {port}")
    return proc, log, ssh, port


def accepted(log):
    with open(log) as f:
        return sum(1 for line in f if "Accepted publickey" in line)


def setup(tmp, port, env):
    """The bare remote, its policy, three clones over ssh; returns (url, clones, keys, signers)."""
    origin = os.path.join(tmp, "origin.git")
    run(["git", "init", "-q", "--bare", "-b", "main", origin], env=env)
    seed = os.path.join(tmp, "seed")
    run(["git", "init", "-q", "-b", "main", seed], env=env)
    os.makedirs(os.path.join(seed, ".guardctl"))
    with open(os.path.join(seed, ".guardctl", "policy.toml"), "w") as f:
        f.write(POLICY)
    run(["git", "add", "."], cwd=seed, env=env)
    old = dict(env, GIT_AUTHOR_DATE="2020-01-01T00:00:00Z", GIT_COMMITTER_DATE="2020-01-01T00:00:00Z")
    run(["git", "commit", "-q", "-m", "policy"], cwd=seed, env=old)
    for i in range(20):
        run(["git", "branch", f"feature/{i}"], cwd=seed, env=env)
    url = f"ssh://{os.environ.get('USER', 'root')}@127.0.0.1:{port}{origin}"
    run(["git", "push", "-q", origin, "--all"], cwd=seed, env=env)
    clones = {}
    for name in ("planner", "bob", "executor"):
        path = os.path.join(tmp, name)
        run(["git", "clone", "-q", url, path], env=env)
        clones[name] = path
    keys = {}
    lines = []
    for who, principal in (("alice", "alice@example.com"), ("bob", "bob@example.com"), ("dave", "dave@example.com")):
        k = os.path.join(tmp, f"{who}_ed25519")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", k])
        keys[who] = k
        with open(k + ".pub") as f:
            lines.append(f"{principal} {f.read().strip()}")
    signers = os.path.join(tmp, "allowed_signers")
    with open(signers, "w") as f:
        f.write("\n".join(lines) + "\n")
    return url, clones, keys, signers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "guardctl"))
    a = ap.parse_args()
    rows = {}
    for _ in range(a.runs):
        tmp = tempfile.mkdtemp(prefix="guardctl-ssh-")
        proc, log, ssh, port = sshd(tmp)
        try:
            home = os.path.join(tmp, "home")
            os.makedirs(home)
            env = {"PATH": os.environ["PATH"], "HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
                   "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_SSH_COMMAND": ssh,
                   "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
                   "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"}
            url, clones, keys, signers = setup(tmp, port, env)

            def measure(name, args, cwd):
                before = accepted(log)
                t0 = time.perf_counter()
                p = run(args, cwd=cwd, env=env)
                elapsed = time.perf_counter() - t0
                time.sleep(0.2)  # sshd writes its log line after the connection
                rows.setdefault(name, []).append((elapsed, accepted(log) - before))
                return p

            def g(who, clone, *args):
                return [a.binary, "-C", clones[clone], "--key", keys[who], "--allowed-signers", signers, *args]

            measure("git ls-remote", ["git", "ls-remote", url], clones["bob"])
            measure("git fetch", ["git", "fetch", "-q", "origin"], clones["bob"])
            out = measure("plan --publish", g("alice", "planner", "--json", "plan", "remote-branches",
                                              "--remote", "origin", "--executor", "dave@example.com",
                                              "--publish", "-o", os.path.join(tmp, "plan.json")),
                          clones["planner"]).stdout
            import json
            pid = json.loads(out)["plan_id"].removeprefix("sha256:")[:12]
            measure("show <id>", g("bob", "bob", "show", pid), clones["bob"])
            measure("approve <id>", g("bob", "bob", "approve", pid, "--yes"), clones["bob"])
            measure("verify <id>", g("dave", "executor", "verify", pid), clones["executor"])
            measure("apply <id>", g("dave", "executor", "apply", pid), clones["executor"])
            measure("inbox", g("bob", "bob", "inbox"), clones["bob"])
        finally:
            proc.terminate()
            proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    floor = statistics.median(t for t, _ in rows["git ls-remote"])
    print(f"{a.runs} runs, sshd on 127.0.0.1; medians")
    print("| command | SSH connections | time | time / git ls-remote |")
    print("|---|---|---|---|")
    for name, samples in rows.items():
        t = statistics.median(s for s, _ in samples)
        c = statistics.median(n for _, n in samples)
        print(f"| {name} | {c:g} | {t * 1000:.0f} ms | {t / floor:.1f}x |")


if __name__ == "__main__":
    main()
