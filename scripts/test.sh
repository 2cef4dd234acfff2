#!/usr/bin/env bash
# Sets everything up, builds with warnings as errors, and runs the tests in two passes:
#   1. a Release build: every test (unit, MPI, command line, golden scenarios, Slurm, install);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build: the unit tests and the tests
#      labelled asan (`ctest -L '^(unit|asan)$'`: input handling and user errors, the small
#      golden scenarios at 1 and 2 ranks). Determinism across ranks and threads, mpi.engine, the
#      16k-GPU scale test, Slurm and the slowest unit tests are the Release pass's
#      (tests/CMakeLists.txt; README.md, "Tests").
# Usage: scripts/test.sh [--no-sanitize | --full-sanitize] [extra ctest options]
#   --no-sanitize    skip the second pass
#   --full-sanitize  the second pass runs every test too (much slower)
set -euo pipefail
source "$(dirname "$0")/common.sh"
sanitize=1
asan_filter=(-L '^(unit|asan)$')
asan_targets=(-- stepsim stepsim_unit_tests)
ctest_args=()
for a in "$@"; do
  case "$a" in
    --no-sanitize) sanitize=0 ;;
    --full-sanitize) asan_filter=(); asan_targets=() ;;
    *) ctest_args+=("$a") ;;
  esac
done
"$STEPSIM_ROOT/scripts/setup.sh"

start=$SECONDS
echo "== Release build, warnings as errors" >&2
stepsim_build "$STEPSIM_ROOT/build-ci" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_WERROR=ON
built=$SECONDS
(cd "$STEPSIM_ROOT/build-ci" && ctest -j "$JOBS" --output-on-failure "${ctest_args[@]}")
echo "== Release: build $((built - start)) s, tests $((SECONDS - built)) s" >&2

if [[ $sanitize -eq 1 ]]; then
  start=$SECONDS
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build" >&2
  # Only what the pass runs (the executable and the unit tests; every target with
  # --full-sanitize).
  stepsim_build "$STEPSIM_ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTEPSIM_WERROR=ON -DSTEPSIM_SANITIZE=ON "${asan_targets[@]}"
  built=$SECONDS
  # User errors on one rank: that each is printed once across ranks is the Release pass's.
  (cd "$STEPSIM_ROOT/build-asan" && STEPSIM_TEST_ERROR_RANKS=1 \
    ctest -j "$JOBS" --output-on-failure "${asan_filter[@]}" "${ctest_args[@]}")
  echo "== ASan + UBSan: build $((built - start)) s, tests $((SECONDS - built)) s" >&2
fi
