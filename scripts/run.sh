#!/usr/bin/env bash
# Sets everything up and runs the main job on the default scenario.
# Until the network models exist, the main job is the PHOLD benchmark on one rank per core.
# Usage: scripts/run.sh [extra options for `stepsim bench phold`]
#        STEPSIM_RANKS=N scripts/run.sh      (ranks; default: physical cores)
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$STEPSIM_ROOT/scripts/setup.sh"
stepsim_build "$STEPSIM_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_BUILD_TESTS=OFF
ranks=${STEPSIM_RANKS:-$(stepsim_cores)}
echo "stepsim: running the main job (PHOLD reference scenario) on $ranks rank(s)" >&2
stepsim_mpirun -np "$ranks" "$STEPSIM_ROOT/build/apps/stepsim" bench phold "$@"
