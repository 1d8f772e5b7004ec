#!/usr/bin/env bash
# The steps of the composite action (action.yml), one subcommand each, kept in a file so
# that tests/cli/ci_action.rs runs them for real (against a file:// team remote) and
# actionlint's checks of action.yml stay about the wiring.
#
#   check          refuse inputs that are not what they must be (a branch name for VERSION)
#   install DIR    put a guardctl built from VERSION in DIR: a binary already there (restored
#                  from the cache) is used only if its SHA-256 is the recorded SHA256, else it
#                  is rebuilt from source; a build whose digest is not SHA256 fails
#   key            write KEY to a file only this user reads; export GUARDCTL_KEY
#   plan           plan PLAN_ARGS, publish the plan to the team remote, summarise it
#   apply          verify and apply the published plan PLAN (its approvals come from the
#                  team remote), summarise the plan first
#
# Inputs come from the environment (the action maps its inputs there; nothing is
# interpolated into a script): VERSION, SHA256, REPOSITORY, COMMAND, PLAN_ARGS, PLAN, KEY,
# SUMMARY. Outputs go to $GITHUB_OUTPUT: plan-id, changes, exit-code, built, sha256.
set -euo pipefail

fail() {
  echo "::error title=guardctl::$1" >&2
  exit 1
}

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s\n' "$1" >>"$GITHUB_OUTPUT"
  fi
}

step_summary() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '%s\n' "$1" >>"$GITHUB_STEP_SUMMARY"
  fi
}

digest() {
  sha256sum "$1" | cut -d' ' -f1
}

check() {
  [[ "${VERSION:-}" =~ ^[0-9a-f]{40}$ ]] ||
    fail "version must be a full 40-hex commit SHA of guardctl, not a branch, a tag or a short SHA (got: ${VERSION:-nothing}): a name can be moved to other code"
  [[ -z "${SHA256:-}" || "$SHA256" =~ ^[0-9a-f]{64}$ ]] ||
    fail "sha256 must be the 64 hex digits sha256sum prints (got: $SHA256)"
  case "${COMMAND:-}" in
  install | plan | apply) ;;
  *) fail "command must be install, plan or apply (got: ${COMMAND:-nothing})" ;;
  esac
  if [ "$COMMAND" = plan ] && [ -z "${PLAN_ARGS:-}" ]; then
    fail "plan needs plan-args: the operation and its flags, e.g. 'remote-branches --merged'"
  fi
  if [ "$COMMAND" = apply ] && ! [[ "${PLAN:-}" =~ ^[0-9a-f]{8,64}$ ]]; then
    fail "apply needs plan: the published plan's id, 8 to 64 hex digits (got: ${PLAN:-nothing})"
  fi
}

install_guardctl() {
  local dir="$1" bin="$1/guardctl" have
  mkdir -p "$dir"
  if [ -e "$bin" ]; then
    have="$(digest "$bin")"
    if [ -n "${SHA256:-}" ] && [ "$have" = "$SHA256" ]; then
      echo "guardctl $VERSION from the cache, sha256 $have as recorded"
      output "built=false"
      output "sha256=$have"
      return
    fi
    # A cache anyone with write access to it could have filled: never run what it holds
    # unless it is the recorded binary.
    echo "::warning title=guardctl::the cached guardctl's sha256 $have is not the recorded ${SHA256:-(none recorded)}: building $VERSION from source instead" >&2
    rm -f "$bin"
  fi
  local root
  root="$(mktemp -d)"
  cargo install --locked --quiet --git "${REPOSITORY:-https://github.com/guardctl/guardctl}" --rev "$VERSION" --root "$root" guardctl
  install -m 755 "$root/bin/guardctl" "$bin"
  rm -rf "$root"
  have="$(digest "$bin")"
  output "built=true"
  output "sha256=$have"
  if [ -z "${SHA256:-}" ]; then
    step_summary "guardctl $VERSION was built on this runner; its sha256 is \`$have\`. Record it as the action's \`sha256\` input to cache the build."
    echo "guardctl $VERSION built, sha256 $have (not cached: no sha256 recorded)"
  elif [ "$have" != "$SHA256" ]; then
    rm -f "$bin"
    fail "guardctl built from $VERSION has sha256 $have, not the recorded $SHA256 (a new Rust toolchain on the runner image builds other bytes): check the build and record the new digest"
  else
    echo "guardctl $VERSION built, sha256 $have as recorded"
  fi
}

write_key() {
  [ -n "${KEY:-}" ] || return 0
  local file="${RUNNER_TEMP:?}/guardctl_key"
  (umask 077 && printf '%s\n' "$KEY" >"$file")
  if [ -n "${GITHUB_ENV:-}" ]; then
    printf 'GUARDCTL_KEY=%s\n' "$file" >>"$GITHUB_ENV"
  fi
}

# The plan id of a `--json` document: its top-level `plan_id` (the first line that has it,
# at the document's own indentation).
plan_id_of() {
  sed -n 's/^  "plan_id": "sha256:\([0-9a-f]\{64\}\)",\{0,1\}$/\1/p' "$1" | head -n 1
}

summarise() {
  if [ "${SUMMARY:-true}" = true ]; then
    guardctl show "$1" --step-summary
  fi
}

plan() {
  local args doc code=0 id
  read -r -a args <<<"$PLAN_ARGS"
  doc="$(mktemp)"
  guardctl --json plan "${args[@]}" --publish --detailed-exitcode -o "${RUNNER_TEMP:?}/guardctl-plan.json" >"$doc" || code=$?
  output "exit-code=$code"
  if [ "$code" != 0 ] && [ "$code" != 2 ]; then
    cat "$doc"
    exit "$code"
  fi
  id="$(plan_id_of "$doc")"
  [ -n "$id" ] || fail "guardctl plan printed no plan id"
  output "plan-id=$id"
  if [ "$code" = 2 ]; then
    output "changes=true"
    summarise "$id"
    echo "Published plan $id. Reviewers: guardctl inbox; guardctl approve ${id:0:12} --publish"
  else
    # A plan that changes nothing is saved, never published: there is nothing to approve.
    output "changes=false"
    summarise "${RUNNER_TEMP}/guardctl-plan.json"
    echo "Nothing to do: the plan changes nothing."
  fi
}

apply() {
  local code=0
  output "plan-id=$PLAN"
  summarise "$PLAN"
  guardctl verify "$PLAN" || code=$?
  if [ "$code" = 0 ]; then
    guardctl apply "$PLAN" || code=$?
  fi
  output "exit-code=$code"
  exit "$code"
}

case "${1:-}" in
check) check ;;
install) install_guardctl "${2:?install DIR}" ;;
key) write_key ;;
plan) plan ;;
apply) apply ;;
*) fail "unknown step: ${1:-none} (check, install DIR, key, plan, apply)" ;;
esac
