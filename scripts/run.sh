#!/usr/bin/env bash
# Sets everything up and runs the main job: one training step of the default scenario
# (workloads/gpt3-175b.yaml: GPT-3 175B on 1,024 H100, rail-optimized 1.6T, packet fidelity).
# Usage: scripts/run.sh [SCENARIO.yaml] [options for `stepsim run`, e.g. --set parallel.pp=16]
#        STEPSIM_RANKS=N scripts/run.sh      (MPI ranks; default: physical cores)
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$STEPSIM_ROOT/scripts/setup.sh"
stepsim_build "$STEPSIM_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_BUILD_TESTS=OFF
ranks=${STEPSIM_RANKS:-$(stepsim_cores)}
scenario="$STEPSIM_ROOT/workloads/gpt3-175b.yaml"
if [[ $# -gt 0 && $1 == *.yaml ]]; then scenario=$1; shift; fi
echo "stepsim: running the main job ($(basename "$scenario")) on $ranks rank(s)" >&2
stepsim_mpirun -np "$ranks" "$STEPSIM_ROOT/build/apps/stepsim" run "$scenario" "$@"
