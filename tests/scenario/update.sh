#!/usr/bin/env bash
# Rewrites tests/scenario/*/expected.txt from a build; run it only when a change of the
# output is intended and explained in its commit message.
# Usage: tests/scenario/update.sh [BUILD_DIR] [CASE...]   (default: build, every case)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}; shift || true
cases=("$@")
[[ ${#cases[@]} -eq 0 ]] && cases=($(cd "$here" && ls -d */ | tr -d /))
flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
for c in "${cases[@]}"; do
  bash "$here/check_case.sh" --update "$build/apps/stepsim" mpirun "$STEPSIM_ROOT" "$here/$c" "${flags[@]}"
done
