#!/usr/bin/env bash
# The entry script of awconf's GitHub Action (action.yml at the repository root): runs
# `awconf run` in the awconf runner image with the workspace bind-mounted at
# /github/workspace (the working directory there), writes the run's summary to the job's
# summary, and exits with awconf's status (0 passed, 1 a scenario failed, 2 usage error,
# 3 the environment failed).
#
# Everything comes in through environment variables, so that it runs the same from the
# action, from a test, or by hand:
#
#   INPUT_CONTROLLER          embedded (default), process, reference, or a shell command line
#                             that starts your controller (`--controller external`)
#   INPUT_CONTROLLER_BINARY   a path, relative to the workspace, of your controller's binary;
#                             with a mode (the default `embedded`) it is the external
#                             controller itself; a command line finds it at $CONTROLLER_BINARY
#   INPUT_KUEUE_VERSION       --kueue (default: the image's pinned default)
#   INPUT_KUBERNETES_VERSION  --kubernetes (default: the image's pinned default)
#   INPUT_TAGS                --tags, a cucumber tag expression
#   INPUT_IMAGE               the runner image (default: AWCONF_DEFAULT_IMAGE)
#   INPUT_IMAGE_ARCHIVE       a docker-archive tar of a runner image (`awconf image --output`)
#                             to load first, relative to the workspace
#   INPUT_REPORT_DIR          the report directory, relative to the workspace (default
#                             awconf-report)
#   INPUT_EXTRA_ARGS          more `awconf run` arguments, one per line
#   AWCONF_IMAGE              overrides the image reference (tests, local runs)
#   AWCONF_DEFAULT_IMAGE      the image when neither of the above is set (action.yml sets it)
#   AWCONF_RUNTIME            docker (default) or containerd: `ctr`, which reads
#                             CONTAINERD_ADDRESS, CONTAINERD_NAMESPACE and
#                             CONTAINERD_SNAPSHOTTER itself; the image is imported from
#                             INPUT_IMAGE_ARCHIVE, or pulled when the namespace lacks it
#   GITHUB_WORKSPACE          the workspace (default: the current directory)
#   GITHUB_STEP_SUMMARY       when set, the run's summary is appended to it
#   GITHUB_OUTPUT             when set, gets exit-code=N and report-dir=DIR
set -euo pipefail

readonly MOUNT=/github/workspace

log() { printf 'awconf-action: %s\n' "$*" >&2; }
usage_error() {
  log "error: $*"
  exit 2
}

# A path inside the workspace: relative, without `..`.
inside_workspace() {
  local what=$1 path=$2
  case "$path" in
  "") usage_error "$what is empty" ;;
  /*) usage_error "$what must be relative to the workspace, not $path" ;;
  ../* | */../* | */.. | ..) usage_error "$what must stay inside the workspace: $path" ;;
  esac
}

workspace=${GITHUB_WORKSPACE:-$PWD}
[ -d "$workspace" ] || usage_error "the workspace $workspace is not a directory"
workspace=$(cd "$workspace" && pwd -P)

image=${AWCONF_IMAGE:-${INPUT_IMAGE:-${AWCONF_DEFAULT_IMAGE:-}}}
if [ -z "$image" ]; then
  usage_error "no runner image: this version of the action names none (AWCONF_DEFAULT_IMAGE \
in its action.yml is set by a release); set the input \`image\` to a runner image by digest, \
ghcr.io/<owner>/awconf-runner@sha256:..."
fi

report_dir=${INPUT_REPORT_DIR:-awconf-report}
report_dir=${report_dir%/}
inside_workspace report-dir "$report_dir"

runtime=${AWCONF_RUNTIME:-docker}
case "$runtime" in
docker | containerd) ;;
*) usage_error "AWCONF_RUNTIME is docker or containerd, not $runtime" ;;
esac

# The controller under test.
controller=${INPUT_CONTROLLER:-embedded}
binary=${INPUT_CONTROLLER_BINARY:-}
container_env=()
args=(run --report "$report_dir")
if [ -n "$binary" ]; then
  inside_workspace controller-binary "$binary"
  if ! [ -f "$workspace/$binary" ] || ! [ -x "$workspace/$binary" ]; then
    usage_error "controller-binary $binary is not an executable file in the workspace"
  fi
  container_env+=("CONTROLLER_BINARY=$MOUNT/$binary")
fi
case "$controller" in
embedded | process | reference)
  if [ -z "$binary" ]; then
    args+=(--controller "$controller")
  elif [ "$controller" = embedded ]; then
    # Your binary as the controller under test, started by the suite with KUBECONFIG set.
    args+=(--controller external --controller-command "exec \"\$CONTROLLER_BINARY\"")
  else
    usage_error "controller-binary goes with controller embedded (the default) or a command \
line, not with $controller"
  fi
  ;;
external | in-cluster | installed)
  usage_error "controller is embedded, process, reference or the command line of yours, \
not $controller"
  ;;
*) args+=(--controller external --controller-command "$controller") ;;
esac
[ -z "${INPUT_KUEUE_VERSION:-}" ] || args+=(--kueue "$INPUT_KUEUE_VERSION")
[ -z "${INPUT_KUBERNETES_VERSION:-}" ] || args+=(--kubernetes "$INPUT_KUBERNETES_VERSION")
[ -z "${INPUT_TAGS:-}" ] || args+=(--tags "$INPUT_TAGS")
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"
  line="${line%"${line##*[![:space:]]}"}"
  [ -z "$line" ] || args+=("$line")
done <<<"${INPUT_EXTRA_ARGS:-}"

# Runs COMMAND ARGS... in the image, in the workspace, as the image's user (root).
in_image() {
  local env_flags=() e
  for e in "${container_env[@]}"; do env_flags+=(--env "$e"); done
  case "$runtime" in
  docker)
    # --init: awconf's children that outlive their parents are reaped.
    log "docker run $image $(printf '%q ' "$@")"
    docker run --rm --init --mount "type=bind,source=$workspace,target=$MOUNT" \
      --workdir "$MOUNT" "${env_flags[@]}" --entrypoint "$1" "$image" "${@:2}"
    ;;
  containerd)
    log "ctr run $image $(printf '%q ' "$@")"
    ctr run --rm --net-host \
      --mount "type=bind,src=$workspace,dst=$MOUNT,options=rbind:rw" --cwd "$MOUNT" \
      "${env_flags[@]}" "$image" "awconf-action-$$-$RANDOM" "$@" </dev/null
    ;;
  esac
}

# The image: loaded from an archive when one is given, pulled when missing.
archive=${INPUT_IMAGE_ARCHIVE:-}
if [ -n "$archive" ]; then
  inside_workspace image-archive "$archive"
  [ -f "$workspace/$archive" ] || usage_error "image-archive $archive is not a file in the workspace"
fi
environment_error() {
  log "error: $*"
  exit 3
}
case "$runtime" in
docker)
  if [ -n "$archive" ]; then
    docker load --input "$workspace/$archive" || environment_error "docker could not load $archive"
  fi
  ;;
containerd)
  if [ -n "$archive" ]; then
    ctr images import "$workspace/$archive" || environment_error "ctr could not import $archive"
  fi
  if ! ctr images list --quiet | grep -Fqx -- "$image"; then
    ctr images pull "$image" || environment_error "ctr could not pull $image"
  fi
  ;;
esac

status=0
in_image awconf "${args[@]}" || status=$?
case "$runtime:$status" in
# docker's own failures (the image cannot be pulled or started): the environment's.
docker:125 | docker:126 | docker:127)
  log "docker could not run $image (status $status)"
  status=3
  ;;
*) log "awconf run exited with $status" ;;
esac

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  # 0 and 1 are the runs that wrote their results.
  if [ "$status" -le 1 ] && [ -f "$workspace/$report_dir/results.json" ]; then
    in_image awconf report summary "$report_dir" >>"$GITHUB_STEP_SUMMARY" ||
      log "the summary could not be written"
  else
    {
      printf '## AppWrapper conformance\n\n'
      printf 'awconf exited with status %s before it wrote any results ' "$status"
      printf '(2: a usage error, 3: the environment failed); its log says why.\n'
    } >>"$GITHUB_STEP_SUMMARY"
  fi
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  printf 'exit-code=%s\nreport-dir=%s\n' "$status" "$report_dir" >>"$GITHUB_OUTPUT"
fi
# The container ran as root: the report is handed to the user who runs this script, so that
# later steps (and a self-hosted runner's clean-up) may change and delete it.
if [ "$(id -u)" != 0 ] && [ -d "$workspace/$report_dir" ]; then
  in_image chown -R "$(id -u):$(id -g)" "$report_dir" ||
    log "the report could not be handed to user $(id -u)"
fi
exit "$status"
