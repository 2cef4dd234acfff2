#!/usr/bin/env bash
# Issue 7's agreement table: each scenario at packet, cell and analytical fidelity; prints step
# time, busbw and exposed time per collective group, and each fidelity's ratio to packet level,
# with events, wall time and peak memory. Runs on 1 rank (the results do not depend on ranks),
# the memoized step at every fidelity (the whole step against it: bench/whole_vs_memoized.sh).
# Usage: bench/fidelity_agreement.sh [build dir] [scenario.yaml ...]
#        (default: workloads/gpt-13b.yaml (128 GPUs) and workloads/gpt3-175b.yaml (1,024 GPUs))
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
shift || true
scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
  scenarios=("$STEPSIM_ROOT/workloads/gpt-13b.yaml" "$STEPSIM_ROOT/workloads/gpt3-175b.yaml")
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for sc in "${scenarios[@]}"; do
  name=$(basename "$sc" .yaml)
  for fid in packet cell analytical; do
    /usr/bin/time -f "%M" -o "$out/$name.$fid.rss" \
      "$build/apps/stepsim" run "$sc" --fidelity "$fid" --no-output --quiet --set step.mode=memoized \
      --json "$out/$name.$fid.json" >/dev/null
  done
done
/usr/bin/python3 "$STEPSIM_ROOT/bench/fidelity_table.py" "$out"
