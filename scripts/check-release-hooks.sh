#!/usr/bin/env bash
# Proves that a release build ignores GUARDCTL_TEST_NOW: plan with the variable set to the
# year 2000 and check the plan's created_at is today, not then.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="$PWD/target/release/guardctl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 HOME="$tmp/home"
git -c init.defaultBranch=main init -q "$tmp/repo"
git -C "$tmp/repo" -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m init
# ssh-keygen refuses a private key that others can read; git checks files out 0644.
cp fixtures/keys/alice_ed25519 "$tmp/key" && chmod 600 "$tmp/key"
GUARDCTL_TEST_NOW=2000-01-01T00:00:00Z "$bin" -q -C "$tmp/repo" --key "$tmp/key" \
  plan stale-branches -o "$tmp/plan.json" >/dev/null 2>&1
# Shown from inside the throwaway repository: in the checkout it would consult this
# project's own remote for its identities.
created=$(GUARDCTL_TEST_NOW=2000-01-01T00:00:00Z "$bin" -C "$tmp/repo" --json show "$tmp/plan.json" | grep '"created_at"')
case "$created" in
  *2000-01-01*) echo "FAIL: the release build honoured GUARDCTL_TEST_NOW: $created"; exit 1 ;;
  *) echo "ok: release build ignores GUARDCTL_TEST_NOW ($created)" ;;
esac

# Every test hook reads a GUARDCTL_TEST_* variable; none may be compiled into a release build.
if grep -q -a "GUARDCTL_TEST_" "$bin"; then
  echo "FAIL: the release binary contains test hooks:"; grep -a -o "GUARDCTL_TEST_[A-Z_]*" "$bin" | sort -u
  exit 1
fi
echo "ok: release build contains no GUARDCTL_TEST_* hook"

# The hooks cannot be compiled into a release build at all (src/lib.rs: compile_error!), so
# `--all-features --release` fails rather than shipping them.
if cargo build --release --quiet --features test-hooks 2>/dev/null; then
  echo "FAIL: a release build with --features test-hooks compiled"; exit 1
fi
echo "ok: a release build with --features test-hooks does not compile"
