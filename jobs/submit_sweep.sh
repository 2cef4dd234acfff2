#!/usr/bin/env bash
# Submits a fabric sweep: one array task per variant of the variant file, then the comparison
# once every task has ended, whatever its outcome (--dependency=afterany: a failed variant does
# not leave the comparison waiting forever; jobs/compare.sbatch names it and exits 1).
#   jobs/submit_sweep.sh [--tiny] [extra sbatch options for the array]
#   SCENARIO=workloads/llama3-70b.yaml jobs/submit_sweep.sh -N 2 --ntasks-per-node=8
# --tiny: workloads/tiny.yaml with the variants of jobs/sweep-tiny.txt (seconds each).
# The sbatch options go to the array; those that say where and on whose account the jobs run
# (partition, account, QOS, reservation, time limit, mail, comment, ...) go to the comparison
# job too, and those that shape the array's steps (nodes, tasks, CPUs, GPUs, memory) do not.
# Variables as in jobs/sweep.sbatch (SCENARIO, VARIANTS, RESULTS, STEPSIM, EXTRA); LOGS: the
# directory of the job logs (default: results/logs in the source tree, which git ignores).
# Prints "sweep: array job A (N variants), comparison job C; logs in DIR".
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
logs=${LOGS:-results/logs}
mkdir -p "$logs"
# The options that also apply to the comparison: all but the array's step shape.
shared=()
skip_next=0
for a in "$@"; do
  if [[ $skip_next -eq 1 ]]; then skip_next=0; continue; fi
  case "$a" in
    -N | -n | -c | -G | --nodes | --ntasks | --ntasks-per-node | --cpus-per-task | --gpus | \
      --gpus-per-node | --gpus-per-task | --gres | --mem | --mem-per-cpu | --mem-per-gpu | \
      -a | --array | -o | --output | -e | --error)
      skip_next=1 ;;
    -N* | -n* | -c* | -G* | -a* | -o* | -e* | --nodes=* | --ntasks=* | --ntasks-per-node=* | \
      --cpus-per-task=* | --gpus=* | --gpus-per-node=* | --gpus-per-task=* | --gres=* | \
      --mem=* | --mem-per-cpu=* | --mem-per-gpu=* | --array=* | --output=* | --error=* | \
      --exclusive*) ;;
    *) shared+=("$a") ;;
  esac
done
array=$(sbatch --parsable --export=ALL --array=0-$((n - 1)) \
  --output="$logs/stepsim-sweep-%A_%a.log" "$@" jobs/sweep.sbatch)
compare=$(sbatch --parsable --export=ALL --dependency=afterany:"$array" --kill-on-invalid-dep=yes \
  --output="$logs/stepsim-compare-%j.log" "${shared[@]}" jobs/compare.sbatch)
echo "sweep: array job $array ($n variants), comparison job $compare; logs in $logs"
