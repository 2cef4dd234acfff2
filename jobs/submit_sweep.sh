#!/usr/bin/env bash
# Submits a fabric sweep: one array task per variant of jobs/sweep.txt, then the comparison once
# they all succeed. Variables as in jobs/sweep.sbatch (SCENARIO, VARIANTS, RESULTS, ...).
#   SCENARIO=workloads/llama3-70b.yaml jobs/submit_sweep.sh [extra sbatch options]
set -euo pipefail
cd "$(dirname "$0")/.."
variants=${VARIANTS:-jobs/sweep.txt}
n=$(grep -cvE '^[[:space:]]*(#|$)' "$variants")
array=$(sbatch --parsable --export=ALL --array=0-$((n - 1)) "$@" jobs/sweep.sbatch)
compare=$(sbatch --parsable --export=ALL --dependency=afterok:"$array" jobs/compare.sbatch)
echo "sweep: array job $array ($n variants), comparison job $compare"
