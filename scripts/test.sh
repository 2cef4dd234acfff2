#!/usr/bin/env bash
# Sets everything up, builds with warnings as errors, and runs the whole test suite twice:
# a Release build, then an AddressSanitizer + UndefinedBehaviorSanitizer build.
# Usage: scripts/test.sh [--no-sanitize] [extra ctest options]
set -euo pipefail
source "$(dirname "$0")/common.sh"
sanitize=1
ctest_args=()
for a in "$@"; do
  case "$a" in
    --no-sanitize) sanitize=0 ;;
    *) ctest_args+=("$a") ;;
  esac
done
"$STEPSIM_ROOT/scripts/setup.sh"

echo "== Release build, warnings as errors" >&2
stepsim_build "$STEPSIM_ROOT/build-ci" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_WERROR=ON
(cd "$STEPSIM_ROOT/build-ci" && ctest -j "$JOBS" --output-on-failure "${ctest_args[@]}")

if [[ $sanitize -eq 1 ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build" >&2
  stepsim_build "$STEPSIM_ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTEPSIM_WERROR=ON -DSTEPSIM_SANITIZE=ON
  (cd "$STEPSIM_ROOT/build-asan" && ctest -j "$JOBS" --output-on-failure "${ctest_args[@]}")
fi
