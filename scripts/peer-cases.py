#!/usr/bin/env python3
"""Extract the two peer agent-shell guards' regression lines, with the verdict each expects by
its default settings, into a cache outside this repository (issue 54: the hook is measured on
them by tests/cli/hook_peers.rs and benches/hook.py).

    python3 scripts/peer-cases.py PEER GIT_DIR [--commit REV] [--out DIR]

  PEER     dcg           destructive_command_guard: tests/corpus/**/*.toml,
                         tests/fixtures/*.yaml, tests/e2e/fixtures/commands/*.txt
           safety-net    claude-code-safety-net: tests/core/**/*.test.ts,
                         tests/bin/hooks/*.test.ts
  GIT_DIR  the peer's git directory (a bare clone, or what the `fetch` tool brings)
  --out    default ~/.cache/guardctl-peers; the cases go to <out>/<peer>@<short commit>.jsonl

Every file is read at the commit with `git --git-dir GIT_DIR show` (no work tree, nothing of
the peer's is run). One JSON object a line: peer, commit, file, line (1-based, where the case
starts), command, expect ("block" | "allow"), note. Cases whose verdict needs a setting the peer
does not have by default (an opt-in pack of dcg; SAFETY_NET_STRICT, _PARANOID*, _WORKTREE or a
custom rules file of safety-net; dcg's WARN mode) are skipped and counted, and so is a line that
is not a literal (built at run time from a variable). Prints counts per file and in total.

Nothing extracted is committed: the peers' lines are theirs. Standard library only.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tomllib

PEERS = {
    "dcg": [
        re.compile(r"tests/corpus/.*\.toml$"),
        re.compile(r"tests/fixtures/[^/]*\.yaml$"),
        re.compile(r"tests/e2e/fixtures/commands/[^/]*\.txt$"),
    ],
    "safety-net": [
        re.compile(r"tests/core/.*\.test\.ts$"),
        re.compile(r"tests/bin/hooks/[^/]*\.test\.ts$"),
    ],
}

# dcg enables only its `core` packs (core.git, core.filesystem) unless configured otherwise
# (src/config.rs, PacksConfig::enabled_pack_ids).
DCG_DEFAULT_PACK = re.compile(r"^core(\.|$)")


def git(git_dir, *args):
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True
    ).stdout.decode("utf-8", errors="replace")


class Out:
    def __init__(self, peer, commit, path):
        self.peer, self.commit, self.path = peer, commit, path
        self.cases = []
        self.skipped = collections.Counter()

    def case(self, line, command, expect, note=""):
        assert expect in ("block", "allow"), expect
        self.cases.append({
            "peer": self.peer, "commit": self.commit, "file": self.path, "line": line,
            "command": command, "expect": expect, "note": note,
        })

    def skip(self, why):
        self.skipped[why] += 1


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# ---------------------------------------------------------------- destructive_command_guard


def dcg_toml(out, text):
    data = tomllib.loads(text)
    # Where each [[case]] starts, to report a line.
    starts = [m.start() for m in re.finditer(r"^\[\[case\]\]", text, re.M)]
    for i, c in enumerate(data.get("case", [])):
        line = line_of(text, starts[i]) if i < len(starts) else 0
        if c.get("input_kind", "command") != "command" or "command" not in c:
            out.skip("raw hook input, not a command line")
            continue
        expected = c.get("expected", c.get("expected_decision"))
        note = c.get("description") or c.get("id") or ""
        if expected == "deny":
            out.case(line, c["command"], "block", note)
        elif expected == "allow":
            out.case(line, c["command"], "allow", note)
        else:
            out.skip(f"expected {expected!r}")


def yaml_scalar(s):
    """A YAML flow scalar as these fixtures write them: double-quoted, single-quoted or plain."""
    s = s.strip()
    if s.startswith('"'):
        end = 1
        buf = []
        while end < len(s) and s[end] != '"':
            if s[end] == "\\" and end + 1 < len(s):
                nxt = s[end + 1]
                buf.append({"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0"}.get(nxt, "\\" + nxt))
                end += 2
                continue
            buf.append(s[end])
            end += 1
        return "".join(buf)
    if s.startswith("'"):
        m = re.match(r"'((?:[^']|'')*)'", s)
        return m.group(1).replace("''", "'")
    return re.sub(r"\s+#.*$", "", s)


def dcg_yaml(out, text, path):
    """`{ <pack or list>: [ { command: ..., reason|rationale: ... } ] }`."""
    section = None
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.startswith("#") or not raw.strip():
            continue
        m = re.match(r"^([A-Za-z0-9_.\-]+):\s*$", raw)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s*-\s*command:\s*(.*)$", raw)
        if not m:
            continue
        command = yaml_scalar(m.group(1))
        name = os.path.basename(path)
        if name == "safe_commands.yaml":
            # Safe with the pack enabled, and so with it off too: allowed by default.
            out.case(n, command, "allow", f"safe ({section})")
        elif name == "destructive_commands.yaml":
            if DCG_DEFAULT_PACK.match(section or ""):
                out.case(n, command, "block", f"destructive ({section})")
            else:
                out.skip("blocked only with an opt-in pack enabled")
        elif name == "edge_cases.yaml":
            if section == "false_positives":
                out.case(n, command, "allow", "edge case: must not be blocked")
            else:
                # rsync, rclone, aws s3, vault: every one needs an opt-in pack.
                out.skip("blocked only with an opt-in pack enabled")
        else:
            out.skip(f"unknown fixture file {name}")


def dcg_txt(out, text, path):
    name = os.path.basename(path)
    plain = {"dangerous.txt": "block", "safe.txt": "allow"}.get(name)
    current = None  # [line, expect, text lines] of a multi-line EXPECT:command case

    def flush():
        nonlocal current
        if current:
            line, expect, lines = current
            command = "\n".join(lines)
            if name == "heredocs.txt":
                command = command.replace("\\n", "\n")
            if expect == "BLOCK":
                out.case(line, command, "block", name)
            elif expect == "ALLOW":
                out.case(line, command, "allow", name)
            else:
                out.skip(f"expected {expect} (dcg's warn mode: neither blocked nor silent)")
        current = None

    for n, raw in enumerate(text.splitlines(), 1):
        if plain:
            if raw.strip() and not raw.lstrip().startswith("#"):
                out.case(n, raw.strip(), plain, name)
            continue
        m = re.match(r"^(BLOCK|ALLOW|WARN):(.*)$", raw)
        if m:
            flush()
            current = [n, m.group(1), [m.group(2)]]
        elif raw.lstrip().startswith("#") or not raw.strip():
            flush()
        elif current:
            current[2].append(raw)  # a here-document's next line
    flush()


# ---------------------------------------------------------------- claude-code-safety-net


def js_string(text, i):
    """The JavaScript string literal starting at text[i]: (value, end) or (None, i) when it is
    not one or is a template with an interpolation."""
    q = text[i] if i < len(text) else ""
    if q not in "'\"`":
        return None, i
    j = i + 1
    buf = []
    while j < len(text):
        ch = text[j]
        if ch == q:
            return "".join(buf), j + 1
        if q == "`" and text.startswith("${", j):
            return None, i
        if ch == "\\":
            nxt = text[j + 1]
            if nxt == "u" and text[j + 2] == "{":
                k = text.index("}", j)
                buf.append(chr(int(text[j + 3:k], 16)))
                j = k + 1
                continue
            if nxt == "u":
                buf.append(chr(int(text[j + 2:j + 6], 16)))
                j += 6
                continue
            if nxt == "x":
                buf.append(chr(int(text[j + 2:j + 4], 16)))
                j += 4
                continue
            if nxt == "\n":
                j += 2
                continue
            buf.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "v": "\v"}.get(nxt, nxt))
            j += 2
            continue
        if ch == "\n" and q != "`":
            return None, i
        buf.append(ch)
        j += 1
    return None, i


def js_expr_string(text, i):
    """A literal, or literals joined with `+`, at text[i] (after blanks): (value, end)."""
    j = skip_ws(text, i)
    value, end = js_string(text, j)
    if value is None:
        return None, i
    while True:
        k = skip_ws(text, end)
        if k < len(text) and text[k] == "+":
            more, end2 = js_string(text, skip_ws(text, k + 1))
            if more is None:
                return None, i
            value, end = value + more, end2
        else:
            return value, end


def skip_ws(text, i):
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
        else:
            break
    return i


def call_args(text, open_paren):
    """The text of a call's arguments split at top-level commas, and the index after `)`."""
    depth, j, args, start = 0, open_paren, [], open_paren + 1
    while j < len(text):
        ch = text[j]
        if ch in "'\"`":
            _, end = js_string(text, j)
            if end == j:  # a template with ${}: step over it by hand
                end = text.index(ch, j + 1) + 1
                while text[end - 2] == "\\":
                    end = text.index(ch, end) + 1
            j = end
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:j])
                return [a for a in (x.strip() for x in args) if a], j + 1
        elif ch == "," and depth == 1:
            args.append(text[start:j])
            start = j + 1
        j += 1
    return args, len(text)


def string_array(text):
    """Every string literal of an array literal's text (None when one is not a literal)."""
    values, j = [], 0
    inner = text.strip()
    if not inner.startswith("["):
        return None
    j = 1
    while True:
        j = skip_ws(inner, j)
        if j >= len(inner) or inner[j] == "]":
            return values
        v, end = js_expr_string(inner, j)
        if v is None:
            return None
        values.append(v)
        j = skip_ws(inner, end)
        if j < len(inner) and inner[j] == ",":
            j += 1


MODE = re.compile(r"SAFETY_NET_[A-Z_]+")


def ts_blocks(text):
    """Each `test(`/`it(` block: (start, end) offsets."""
    starts = [m.start() for m in re.finditer(r"\b(?:test|it)(?:\.\w+)?\(\s*['\"`]", text)]
    return [(s, starts[k + 1] if k + 1 < len(starts) else len(text)) for k, s in enumerate(starts)]


def ts_modes(block):
    """The non-default settings a test block turns on (withEnv, env of a hook run, options)."""
    modes = set()
    for m in re.finditer(r"withEnv\(\s*\{([^}]*)\}", block):
        modes |= set(MODE.findall(m.group(1)))
    for m in re.finditer(r"run\w*Hook\([^;]*?\{([^}]*SAFETY_NET_[^}]*)\}", block, re.S):
        modes |= set(MODE.findall(m.group(1)))
    for opt in ("strict: true", "paranoidRm: true", "paranoidInterpreters: true", "worktreeMode: true"):
        if opt in block:
            modes.add(opt)
    if re.search(r"safety-net\.json|\.safety-net|rules:\s*\[\s*\{", block):
        modes.add("custom rules")
    return modes


def resolve_ident(block, name):
    """The literal values an identifier stands for in a block: `for (const name of [..])`, or
    `for (const name of arr)` with `const arr = [..]`."""
    m = re.search(r"for\s*\(\s*const\s+" + re.escape(name) + r"\s+of\s+", block)
    if not m:
        return None
    j = m.end()
    if block[j] == "[":
        args, _ = call_args("(" + block[j:], 0)
        return string_array(args[0]) if args else None
    ident = re.match(r"\w+", block[j:])
    if not ident:
        return None
    d = re.search(r"const\s+" + re.escape(ident.group(0)) + r"(?:\s*:\s*[^=]+)?\s*=\s*\[", block)
    if not d:
        return None
    args, _ = call_args("(" + block[d.end() - 1:], 0)
    return string_array(args[0]) if args else None


def safety_net_ts(out, text, path):
    for s, e in ts_blocks(text):
        block = text[s:e]
        modes = ts_modes(block)
        for m in re.finditer(r"\b(assertBlocked|assertAllowed|runGuard|analyzeCommand)\(", block):
            fn = m.group(1)
            args, end = call_args(block, m.end() - 1)
            if not args or (fn in ("runGuard", "analyzeCommand") and block[max(0, m.start() - 9):m.start()].endswith("function ")):
                continue
            values = None
            first = args[0]
            v, _ = js_expr_string(first, 0)
            if v is not None and skip_ws(first, _) == len(first):
                values = [v]
            elif re.fullmatch(r"\w+", first):
                values = resolve_ident(block, first)
            line = line_of(text, s + m.start())
            if values is None:
                out.skip("needs a non-default setting: " + ", ".join(sorted(modes)) if modes else "not a literal (built at run time)")
                continue
            if fn == "assertBlocked":
                expect = "block"
                if len(args) > 1 and re.match(r"['\"`]\[", args[1]):
                    modes = modes | {"custom rules"}
                cwd = args[2] if len(args) > 2 else ""
            elif fn == "assertAllowed":
                expect = "allow"
                cwd = args[1] if len(args) > 1 else ""
            else:
                # `expect(runGuard(..)).toBeNull()`, `const result = analyzeCommand(..);
                # expect(result).toBeNull()`: the first expect after the call decides.
                opts = ",".join(args[1:])
                local = set(MODE.findall(opts))
                for opt in ("strict: true", "paranoidRm: true", "paranoidInterpreters: true", "worktreeMode: true"):
                    if opt in opts:
                        local.add(opt)
                if re.search(r"rules:\s*\[\s*\{", opts) or (fn == "runGuard" and len(args) > 2):
                    local.add("custom rules")
                if local:
                    out.skip("needs a non-default setting: " + ", ".join(sorted(local)))
                    continue
                tail = block[end:end + 240]
                if re.match(r"\s*\)\s*\.toBeNull\(\)", tail) or re.match(r";\s*expect\(\s*\w+\s*\)\s*\.toBeNull\(\)", tail):
                    expect = "allow"
                elif re.match(r"\s*\)\s*\.(not\.toBeNull|toContain|toMatch|toBeTruthy|toBeDefined)", tail) or re.match(
                    r";\s*expect\(\s*\w+(\?\.\w+)?\s*\)\s*\.(not\.toBeNull|toContain|toMatch|toBeTruthy|toBeDefined)", tail
                ):
                    expect = "block"
                else:
                    out.skip("verdict not asserted in a form read here")
                    continue
                cwd = "cwd" if "cwd" in opts and "cwd: undefined" not in opts else ""
            if modes:
                for _ in values:
                    out.skip("needs a non-default setting: " + ", ".join(sorted(modes)))
                continue
            note = f"cwd: {cwd}" if cwd else ""
            for value in values:
                out.case(line, value, expect, note)
        # Hook runs: `command: '...'` in a payload, decided by `permissionDecision ... 'deny'`.
        if "Hook(" in block and not re.search(r"\b(assertBlocked|assertAllowed|runGuard|analyzeCommand)\(", block):
            for c in re.finditer(r"\bcommand['\"]?\s*:\s*", block):
                v, _ = js_expr_string(block, c.end())
                if v is None:
                    continue
                line = line_of(text, s + c.start())
                event = re.search(r"hook_event_name['\"]?\s*:\s*['\"](\w+)", block)
                tool = re.search(r"tool_?[nN]ame['\"]?\s*:\s*['\"](\w+)", block)
                if (event and event.group(1) not in ("PreToolUse", "BeforeTool")) or (
                    tool and tool.group(1) not in ("Bash", "bash", "run_shell_command", "shell")
                ):
                    out.skip("not a shell command event (another event or tool)")
                elif modes:
                    out.skip("needs a non-default setting: " + ", ".join(sorted(modes)))
                elif re.search(r"['\"]deny['\"]|toContain\(\s*['\"]BLOCKED", block):
                    out.case(line, v, "block", "hook run")
                elif re.search(r"toBe\(\s*''\s*\)|toBe\(\s*\"\"\s*\)|'allow'", block):
                    out.case(line, v, "allow", "hook run")
                else:
                    out.skip("verdict not asserted in a form read here")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("peer", choices=sorted(PEERS))
    ap.add_argument("git_dir")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/guardctl-peers"))
    a = ap.parse_args()
    commit = git(a.git_dir, "rev-parse", a.commit + "^{commit}").strip()
    files = [
        f for f in git(a.git_dir, "ls-tree", "-r", "--name-only", commit, "tests").splitlines()
        if any(p.match(f) for p in PEERS[a.peer])
    ]
    if not files:
        sys.exit(f"no test files of {a.peer} at {commit} in {a.git_dir}")
    per_file = []
    everything = []
    skipped_total = collections.Counter()
    for f in sorted(files):
        text = git(a.git_dir, "show", f"{commit}:{f}")
        out = Out(a.peer, commit, f)
        if f.endswith(".toml"):
            dcg_toml(out, text)
        elif f.endswith(".yaml"):
            dcg_yaml(out, text, f)
        elif f.endswith(".txt"):
            dcg_txt(out, text, f)
        else:
            safety_net_ts(out, text, f)
        per_file.append(out)
        everything += out.cases
        skipped_total += out.skipped
    os.makedirs(a.out, exist_ok=True)
    dest = os.path.join(a.out, f"{a.peer}@{commit[:12]}.jsonl")
    with open(dest + ".tmp", "w") as fh:
        for c in everything:
            fh.write(json.dumps(c, ensure_ascii=False) + "\n")
    os.replace(dest + ".tmp", dest)

    print(f"{a.peer} at {commit}")
    print(f"{'file':60} {'block':>6} {'allow':>6} {'skipped':>8}")
    for out in per_file:
        b = sum(c["expect"] == "block" for c in out.cases)
        al = sum(c["expect"] == "allow" for c in out.cases)
        print(f"{out.path:60} {b:6} {al:6} {sum(out.skipped.values()):8}")
    b = sum(c["expect"] == "block" for c in everything)
    al = sum(c["expect"] == "allow" for c in everything)
    print(f"{'total':60} {b:6} {al:6} {sum(skipped_total.values()):8}")
    uniq = {(c['command'], c['expect']) for c in everything}
    print(f"distinct lines: {sum(e == 'block' for _, e in uniq)} block, {sum(e == 'allow' for _, e in uniq)} allow")
    for why, n in skipped_total.most_common():
        print(f"  skipped {n:4}  {why}")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
