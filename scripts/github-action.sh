#!/usr/bin/env bash
# The steps of the composite action (action.yml), one subcommand each, kept in a file so
# that tests/cli/ci_action.rs runs them for real (against a file:// team remote) and
# actionlint's checks of action.yml stay about the wiring.
#
#   check          refuse inputs that are not what they must be (a branch name for VERSION)
#   install DIR    build guardctl from VERSION into DIR, emptied first (it goes on PATH); a
#                  build whose SHA-256 is not the recorded SHA256 fails and leaves nothing
#   key            write KEY to a file only this user reads; export GUARDCTL_KEY
#   plan           plan PLAN_ARGS, publish the plan to the team remote, summarise it
#   apply          verify and apply the published plan PLAN (its approvals come from the
#                  team remote), summarise the plan first
#
# Inputs come from the environment (the action maps its inputs there; nothing is
# interpolated into a script): VERSION, SHA256, REPOSITORY, COMMAND, PLAN_ARGS, PLAN, KEY,
# SUMMARY. Outputs go to $GITHUB_OUTPUT: plan-id, changes, exit-code, sha256.
set -euo pipefail

# A workflow command's message, encoded as the runner decodes it (`%`, CR, LF): a newline in
# an input echoed back must not start a workflow command of its own.
fail() {
  local m="$1"
  m="${m//'%'/%25}"
  m="${m//$'\r'/%0D}"
  m="${m//$'\n'/%0A}"
  echo "::error title=guardctl::$m" >&2
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
  if [ "$COMMAND" = plan ] && [[ "${PLAN_ARGS:-}" =~ ^[[:space:]]*$ ]]; then
    fail "plan needs plan-args: the operation and its flags, e.g. 'remote-branches --merged'"
  fi
  # plan-args is split on blanks, never by a shell: a quote would stay in the argument
  # (`--protect 'hotfix/*'` would protect a pattern no branch matches) and a second line
  # would be dropped. Refuse them rather than plan something other than what was written.
  case "${PLAN_ARGS:-}" in
  *$'\n'* | *$'\r'* | *\'* | *\"*)
    fail "plan-args is split on blanks, not by a shell: it must be one line without quotes (write --protect hotfix/* , not --protect 'hotfix/*'; got: $PLAN_ARGS)"
    ;;
  esac
  if [ "$COMMAND" = apply ] && ! [[ "${PLAN:-}" =~ ^[0-9a-f]{8,64}$ ]]; then
    fail "apply needs plan: the published plan's id, 8 to 64 hex digits (got: ${PLAN:-nothing})"
  fi
}

install_guardctl() {
  local dir="$1" bin="$1/guardctl" have root
  # DIR goes on PATH: emptied first, it holds the guardctl this step built and nothing else.
  # No cache is restored, here or anywhere in the action: actions/cache extracts its archive
  # with absolute and `../` paths allowed (tar -P), so an entry anyone with write access to
  # the repository's caches seeded could drop files anywhere on the runner (a `git` ahead on
  # PATH, this script) in a job that then holds the signing key.
  rm -rf "$dir"
  mkdir -p "$dir"
  root="$(mktemp -d)"
  cargo install --locked --quiet --git "${REPOSITORY:-https://github.com/guardctl/guardctl}" --rev "$VERSION" --root "$root" guardctl
  install -m 755 "$root/bin/guardctl" "$bin"
  rm -rf "$root"
  have="$(digest "$bin")"
  output "sha256=$have"
  if [ -z "${SHA256:-}" ]; then
    step_summary "guardctl $VERSION was built on this runner; its sha256 is \`$have\`. Record it as the action's \`sha256\` input to check every later build against it."
    echo "guardctl $VERSION built, sha256 $have (none recorded to check it against)"
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
  # A new file, only this user's: whatever is at that name (a symbolic link to somewhere
  # readable, a file with a wider mode) is removed first, and noclobber refuses a race.
  rm -f "$file"
  (umask 077 && set -o noclobber && printf '%s\n' "$KEY" >"$file")
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
  # The action's own flags go right after the operation, never at the end: an exec plan's
  # arguments end with `-- COMMAND...`, where they would become the command's arguments.
  guardctl --json plan "${args[0]}" --publish --detailed-exitcode -o "${RUNNER_TEMP:?}/guardctl-plan.json" "${args[@]:1}" >"$doc" || code=$?
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
