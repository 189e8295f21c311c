#!/usr/bin/env bash
# Runs the Kueue-facing tests once per version in ci/kueue-versions.txt (or the versions given
# as arguments) and prints one line per version. Exits non-zero if any version failed.
set -uo pipefail
cd "$(dirname "$0")/.."
versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  mapfile -t versions < <(grep -v '^#' ci/kueue-versions.txt | grep -v '^$')
fi
failed=0
for v in "${versions[@]}"; do
  if AWCONF_KUEUE_VERSION="$v" cargo test -p clusters --test kueue -p appwrapper-controller --test lifecycle; then
    echo "kueue $v: passed"
  else
    echo "kueue $v: FAILED"
    failed=1
  fi
done
exit $failed
