#!/usr/bin/env bash
# The steps of the composite action (action.yml), one subcommand each, kept in a file so
# that tests/cli/ci_action.rs runs them for real (against a file:// team remote) and
# actionlint's checks of action.yml stay about the wiring.
#
#   check          refuse inputs that are not what they must be (a branch name for VERSION)
#   install DIR    build guardctl from VERSION into DIR, emptied first (it goes on PATH); a
#                  build whose SHA-256 is not the recorded SHA256 fails and leaves nothing
#   install-cached STAGE DIR
#                  the `build` command, in a job without the key: STAGE/guardctl (from the
#                  cache) if it is a regular file with the recorded SHA256, else a build,
#                  into DIR; a build with that digest is left in STAGE for the cache
#   install-from SRC DIR
#                  a job with the key: SRC/guardctl (the build job's artifact) into DIR, only
#                  as a regular file with the recorded SHA256; otherwise fail
#   key            write KEY to a file only this user reads; export GUARDCTL_KEY
#   plan           plan PLAN_ARGS, publish the plan to the team remote, summarise it
#   apply          verify and apply the published plan PLAN (its approvals come from the
#                  team remote), summarise the plan first
#
# Inputs come from the environment (the action maps its inputs there; nothing is
# interpolated into a script): VERSION, SHA256, REPOSITORY, COMMAND, PLAN_ARGS, PLAN, KEY,
# HAS_KEY, ARTIFACT, SUMMARY. Outputs go to $GITHUB_OUTPUT: plan-id, changes, exit-code,
# built, sha256.
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
  build | install | plan | apply) ;;
  *) fail "command must be build, install, plan or apply (got: ${COMMAND:-nothing})" ;;
  esac
  # `build` restores a cache, which can write anywhere on its runner: it never runs where the
  # key is, in either order within a job (two steps of the action). It leaves a mark the key
  # step and the steps that plan or apply refuse, and refuses a key already there.
  local mark="${RUNNER_TEMP:?}/guardctl-build-job"
  if [ "$COMMAND" = build ]; then
    if [ "${HAS_KEY:-false}" != false ] || [ -n "${GUARDCTL_KEY:-}" ] || [ -e "$RUNNER_TEMP/guardctl_key" ]; then
      fail "command build restores a cache and must run in a job without the key: pass key only to the jobs that plan or apply, and run build in a job of its own"
    fi
    : >"$mark"
  elif [ -e "$mark" ]; then
    fail "this job ran command build, which restores a cache: plan, apply and install run in another job, which takes guardctl from the build job's artifact"
  fi
  [[ -z "${ARTIFACT:-}" || "$ARTIFACT" =~ ^[A-Za-z0-9._-]{1,64}$ ]] ||
    fail "artifact must be an artifact name of letters, digits, '.', '_' or '-' (got: $ARTIFACT)"
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

# DIR goes on PATH: emptied first, it ends up holding one guardctl and nothing else.
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1"
}

# Build guardctl from VERSION into DIR/guardctl; check it against SHA256 when one is recorded.
build_into() {
  local dir="$1" bin="$1/guardctl" have root
  root="$(mktemp -d)"
  cargo install --locked --quiet --git "${REPOSITORY:-https://github.com/guardctl/guardctl}" --rev "$VERSION" --root "$root" guardctl
  install -m 755 "$root/bin/guardctl" "$bin"
  rm -rf "$root"
  have="$(digest "$bin")"
  output "built=true"
  output "sha256=$have"
  if [ -z "${SHA256:-}" ]; then
    step_summary "guardctl $VERSION was built on this runner; its sha256 is \`$have\`. Record it as the action's \`sha256\` input: every later build is checked against it, and the \`build\` job caches it."
    echo "guardctl $VERSION built, sha256 $have (none recorded to check it against)"
  elif [ "$have" != "$SHA256" ]; then
    rm -f "$bin"
    fail "guardctl built from $VERSION has sha256 $have, not the recorded $SHA256 (a new Rust toolchain on the runner image builds other bytes): check the build and record the new digest"
  else
    echo "guardctl $VERSION built, sha256 $have as recorded"
  fi
}

# Copy SRC/guardctl into DIR only if it is a regular file (not a symbolic link) whose SHA-256
# is SHA256; returns 1, leaving nothing, otherwise.
copy_checked() {
  local src="$1/guardctl" bin="$2/guardctl" have
  [ -n "${SHA256:-}" ] && [ -f "$src" ] && [ ! -L "$src" ] || return 1
  install -m 755 "$src" "$bin"
  have="$(digest "$bin")"
  if [ "$have" != "$SHA256" ]; then
    rm -f "$bin"
    echo "::warning title=guardctl::$1/guardctl has sha256 $have, not the recorded $SHA256" >&2
    return 1
  fi
  output "built=false"
  output "sha256=$have"
}

# install DIR: build from source. For a job that holds the key and has no artifact to use.
install_guardctl() {
  fresh_dir "$1"
  build_into "$1"
}

# install-cached STAGE DIR: the `build` job, which holds no key and no write permission.
# STAGE/guardctl was restored from the cache (whose archive may have written anything
# anywhere on this runner: this job has nothing to lose to it); it is used only as a regular
# file with the recorded digest, else guardctl is built. A build with that digest is left as
# STAGE/guardctl for the cache to save.
install_cached() {
  local stage="$1" dir="$2"
  fresh_dir "$dir"
  if copy_checked "$stage" "$dir"; then
    echo "guardctl $VERSION from the cache, sha256 $SHA256 as recorded"
    return
  fi
  if [ -e "$stage/guardctl" ] || [ -L "$stage/guardctl" ]; then
    echo "::warning title=guardctl::the cached guardctl is not the recorded binary (not a regular file with the recorded sha256, or no sha256 is recorded to check it by): building $VERSION from source" >&2
  fi
  rm -rf "$stage"
  build_into "$dir"
  if [ -n "${SHA256:-}" ]; then
    mkdir -p "$stage"
    install -m 755 "$dir/guardctl" "$stage/guardctl"
  fi
}

# install-from SRC DIR: a job that holds the key takes the binary the `build` job uploaded
# (downloaded into SRC, which nothing else writes), only as a regular file with the recorded
# digest; anything else fails: no fallback to what is there.
install_from() {
  fresh_dir "$2"
  [ -n "${SHA256:-}" ] || fail "an artifact is used only with a recorded sha256 to check it by"
  copy_checked "$1" "$2" ||
    fail "the artifact's guardctl is not a regular file with the recorded sha256 $SHA256: not run"
  echo "guardctl $VERSION from the build job's artifact, sha256 $SHA256 as recorded"
}

write_key() {
  [ -n "${KEY:-}" ] || return 0
  local file="${RUNNER_TEMP:?}/guardctl_key"
  [ ! -e "$RUNNER_TEMP/guardctl-build-job" ] ||
    fail "this job ran command build, which restores a cache: the key goes only to a job without it"
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
install-cached) install_cached "${2:?install-cached STAGE DIR}" "${3:?install-cached STAGE DIR}" ;;
install-from) install_from "${2:?install-from SRC DIR}" "${3:?install-from SRC DIR}" ;;
key) write_key ;;
plan) plan ;;
apply) apply ;;
*) fail "unknown step: ${1:-none} (check, install DIR, install-cached STAGE DIR, install-from SRC DIR, key, plan, apply)" ;;
esac
