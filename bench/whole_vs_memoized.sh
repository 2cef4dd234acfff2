#!/usr/bin/env bash
# Issue 14: one scenario's step in memoized mode (`--set step.mode=memoized`: each distinct
# collective simulated alone, the step composed from their costs) and in whole mode
# (`--set step.mode=whole`: every GPU's schedule on one PDES run, all groups' traffic on one
# fabric), at cell fidelity on one rank.
# Prints the two tables of docs/fidelity.md ("Whole step against memoized") with one row each:
# step time, MFU, exposed time per group, busbw per group, events, wall and CPU time, peak RSS.
# Usage: bench/whole_vs_memoized.sh [stepsim binary or build dir] scenario.yaml [timeout s]
#        Each run is stopped after the timeout (default 1500 s) and reported as "> N min".
#        WVM_OUT=dir keeps the files there: NAME.memo.json, NAME.whole.json (`run --json`) and
#        NAME.MODE.time (wall s, peak KB, user CPU s). The whole step runs every GPU
#        (`step.fold=none`, whatever the scenario sets); WVM_FOLD=rails runs it with
#        `--set step.fold=rails` (one rail of a rail-symmetric job; docs/workload.md), and every
#        GPU where the scenario refuses it (exit 2).
# Run it from the repository root: the scenarios' topology paths are relative to it.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
bin=${1:-$STEPSIM_ROOT/build}
[[ -d "$bin" ]] && bin=$bin/apps/stepsim
sc=${2:?usage: bench/whole_vs_memoized.sh [stepsim or build dir] scenario.yaml [timeout s]}
limit=${3:-1500}
out=${WVM_OUT:-}
if [[ -z "$out" ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
name=$(basename "$sc" .yaml)
for mode in memo whole; do
  extra=(--set step.mode=memoized)
  [[ $mode == whole ]] && extra=(--set step.mode=whole --set "step.fold=${WVM_FOLD:-none}")
  rm -f "$out/$name.$mode.json" "$out/$name.$mode.timeout"
  rc=0
  timeout "$limit" /usr/bin/time -f "%e %M %U" -o "$out/$name.$mode.time" \
    "$bin" run "$sc" --fidelity cell --no-output --quiet "${extra[@]}" \
    --json "$out/$name.$mode.json" >/dev/null 2>"$out/$name.$mode.err" || rc=$?
  if [[ $rc -eq 2 && $mode == whole && -n "${WVM_FOLD:-}" ]]; then  # refused: every GPU
    rc=0
    timeout "$limit" /usr/bin/time -f "%e %M %U" -o "$out/$name.$mode.time" \
      "$bin" run "$sc" --fidelity cell --no-output --quiet --set step.mode=whole \
      --set step.fold=none --json "$out/$name.$mode.json" >/dev/null || rc=$?
  fi
  if [[ $rc -ne 0 ]]; then
    rm -f "$out/$name.$mode.json"
    # timeout exits 124 when it stopped the run; anything else is the run's own failure.
    [[ $rc -eq 124 ]] && echo "$limit" >"$out/$name.$mode.timeout"
    [[ $rc -ne 124 ]] && echo "$name $mode: stepsim run failed (exit $rc)" >&2
  fi
done
/usr/bin/python3 "$STEPSIM_ROOT/bench/whole_vs_memoized.py" "$out" "$name"
