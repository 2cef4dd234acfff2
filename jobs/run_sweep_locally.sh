#!/usr/bin/env bash
# The same sweep without Slurm: each variant in turn on this machine, then the comparison.
#   jobs/run_sweep_locally.sh [--tiny]      (--tiny: workloads/tiny.yaml, jobs/sweep-tiny.txt)
# Variables as in jobs/sweep.sbatch. Exit: 0, or the first failing task's code.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
if [[ ${1:-} == --tiny ]]; then export SCENARIO=workloads/tiny.yaml VARIANTS=jobs/sweep-tiny.txt; fi
variants=${VARIANTS:-jobs/sweep.txt}
n=$(grep -cvE '^[[:space:]]*(#|$)' "$variants")
for ((task = 0; task < n; task++)); do
  SLURM_ARRAY_TASK_ID=$task bash jobs/sweep.sbatch || exit $?
done
bash jobs/compare.sbatch
