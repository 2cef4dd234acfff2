#!/usr/bin/env bash
# Sets everything up, builds with warnings as errors, and runs the tests in two passes:
#   1. a Release build: every test (unit, MPI, command line, golden scenarios, Slurm, install);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build: the unit tests and the tests
#      labelled asan (`ctest -L '^(unit|asan)$'`: input handling and user errors, the small
#      golden scenarios at 1 and 2 ranks). Determinism across ranks and threads, mpi.engine, the
#      16k-GPU scale test, Slurm and the slowest unit tests are the Release pass's
#      (tests/CMakeLists.txt; README.md, "Tests").
# Both builds are unity builds (-DSTEPSIM_UNITY=ON: about half the CPU time of a cold build).
# The sanitizer build runs at low priority while the Release tests run: they leave about half
# of the cores idle (MPI start-up, waits), and the build fills them. Its output goes to
# build-asan/build.log, printed if it fails.
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
asan_dir=$STEPSIM_ROOT/build-asan

start=$SECONDS
echo "== Release build, warnings as errors" >&2
stepsim_build "$STEPSIM_ROOT/build-ci" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_WERROR=ON \
  -DSTEPSIM_UNITY=ON
built=$SECONDS

asan_build=""
if [[ $sanitize -eq 1 ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build, beside the Release tests" >&2
  mkdir -p "$asan_dir"
  # Only what the pass runs (the executable and the unit tests; every target with
  # --full-sanitize).
  # Its own process group (setsid), so that a failing Release pass stops the whole build.
  setsid nice -n 19 bash -c "source '$STEPSIM_ROOT/scripts/common.sh'; s=\$SECONDS
    stepsim_build '$asan_dir' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPSIM_WERROR=ON \
      -DSTEPSIM_SANITIZE=ON -DSTEPSIM_UNITY=ON ${asan_targets[*]} && \
    echo \$((SECONDS - s)) >'$asan_dir/build.seconds'" >"$asan_dir/build.log" 2>&1 &
  asan_build=$!
  # A failing Release pass stops the script: the sanitizer build with it.
  trap '[[ -n "$asan_build" ]] && kill -- "-$asan_build" 2>/dev/null; true' EXIT
fi

(cd "$STEPSIM_ROOT/build-ci" && ctest -j "$JOBS" --output-on-failure "${ctest_args[@]}")
echo "== Release: build $((built - start)) s, tests $((SECONDS - built)) s" >&2

if [[ $sanitize -eq 1 ]]; then
  waited=$SECONDS
  if ! wait "$asan_build"; then
    asan_build=""
    cat "$asan_dir/build.log" >&2
    echo "== ASan + UBSan build failed (above)" >&2
    exit 1
  fi
  asan_build=""
  built=$SECONDS
  # User errors on one rank: that each is printed once across ranks is the Release pass's.
  (cd "$asan_dir" && STEPSIM_TEST_ERROR_RANKS=1 \
    ctest -j "$JOBS" --output-on-failure "${asan_filter[@]}" "${ctest_args[@]}")
  echo "== ASan + UBSan: build $(cat "$asan_dir/build.seconds") s (beside the Release tests;" \
    "$((built - waited)) s waited for after them), tests $((SECONDS - built)) s" >&2
fi
