#!/usr/bin/env bash
# Submits a fabric sweep: one array task per variant of the variant file, then the comparison
# once every task has ended, whatever its outcome (--dependency=afterany: a failed variant does
# not leave the comparison waiting forever; jobs/compare.sbatch names it and exits 1).
#   jobs/submit_sweep.sh [--tiny] [extra sbatch options for the array]
#   SCENARIO=workloads/llama3-70b.yaml jobs/submit_sweep.sh -N 2 --ntasks-per-node=8
# --tiny: workloads/tiny.yaml with the variants of jobs/sweep-tiny.txt (seconds each).
# Variables as in jobs/sweep.sbatch (SCENARIO, VARIANTS, RESULTS, STEPSIM, EXTRA); LOGS: the
# directory of the job logs (default: the source tree, where the jobs run).
# Prints "sweep: array job A (N variants), comparison job C".
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --tiny ]]; then
  export SCENARIO=workloads/tiny.yaml VARIANTS=jobs/sweep-tiny.txt
  shift
fi
# Slurm runs copies of the batch scripts: tell them where the others are.
export STEPSIM_JOBS=$PWD/jobs
variants=${VARIANTS:-jobs/sweep.txt}
n=$(grep -cvE '^[[:space:]]*(#|$)' "$variants")
logs=()
[[ -n ${LOGS:-} ]] && logs=(--output="$LOGS/stepsim-sweep-%A_%a.log")
array=$(sbatch --parsable --export=ALL --array=0-$((n - 1)) "${logs[@]}" "$@" jobs/sweep.sbatch)
[[ -n ${LOGS:-} ]] && logs=(--output="$LOGS/stepsim-compare-%j.log")
compare=$(sbatch --parsable --export=ALL --dependency=afterany:"$array" --kill-on-invalid-dep=yes \
  "${logs[@]}" jobs/compare.sbatch)
echo "sweep: array job $array ($n variants), comparison job $compare"
