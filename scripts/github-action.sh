#!/usr/bin/env bash
# The steps of the composite action (action.yml), one subcommand each, kept in a file so
# that tests/cli/ci_action.rs runs them for real (against a file:// team remote) and
# actionlint's checks of action.yml stay about the wiring.
#
#   check          refuse inputs that are not what they must be (a branch name for VERSION)
#   install STAGE DIR
#                  put a guardctl built from VERSION alone in DIR (emptied first; it goes on
#                  PATH): STAGE/guardctl (restored from the cache) is copied there only if it
#                  is a regular file whose SHA-256 is the recorded SHA256, else guardctl is
#                  built from source; a build whose digest is not SHA256 fails; a build that
#                  has it is left as STAGE/guardctl, the one file the cache saves
#   key            write KEY to a file only this user reads; export GUARDCTL_KEY
#   plan           plan PLAN_ARGS, publish the plan to the team remote, summarise it
#   apply          verify and apply the published plan PLAN (its approvals come from the
#                  team remote), summarise the plan first
#
# Inputs come from the environment (the action maps its inputs there; nothing is
# interpolated into a script): VERSION, SHA256, REPOSITORY, COMMAND, PLAN_ARGS, PLAN, KEY,
# SUMMARY. Outputs go to $GITHUB_OUTPUT: plan-id, changes, exit-code, built, sha256.
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
  if [ "$COMMAND" = plan ] && [ -z "${PLAN_ARGS:-}" ]; then
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
  local stage="$1" dir="$2" cached="$1/guardctl" bin="$2/guardctl" have
  # DIR goes on PATH. It is emptied here, after the cache was restored: a cache archive
  # anyone with write access to the cache could have made may hold more than guardctl (a
  # `git` or an `ssh-keygen` that would run with the key in reach), and may have been
  # extracted anywhere. Only the one file this step checks ever lands in DIR.
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ -n "${SHA256:-}" ] && [ -f "$cached" ] && [ ! -L "$cached" ]; then
    install -m 755 "$cached" "$bin"
    have="$(digest "$bin")"
    if [ "$have" = "$SHA256" ]; then
      echo "guardctl $VERSION from the cache, sha256 $have as recorded"
      output "built=false"
      output "sha256=$have"
      return
    fi
    # Never run what the cache holds unless it is the recorded binary.
    echo "::warning title=guardctl::the cached guardctl's sha256 $have is not the recorded $SHA256: building $VERSION from source instead" >&2
    rm -f "$bin"
  elif [ -e "$cached" ] || [ -L "$cached" ]; then
    echo "::warning title=guardctl::the cache holds a guardctl that is not a regular file, or no sha256 is recorded to check it by: ignored, building $VERSION from source" >&2
  fi
  # What a later step saves to the cache: this build's binary alone, and only once its digest
  # is the recorded one.
  rm -rf "$stage"
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
    mkdir -p "$stage"
    install -m 755 "$bin" "$stage/guardctl"
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
install) install_guardctl "${2:?install STAGE DIR}" "${3:?install STAGE DIR}" ;;
key) write_key ;;
plan) plan ;;
apply) apply ;;
*) fail "unknown step: ${1:-none} (check, install STAGE DIR, key, plan, apply)" ;;
esac
