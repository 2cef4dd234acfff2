#!/usr/bin/env bash
# The collective benchmark recorded in BENCHMARKS.md (issue 5): AllReduce of 1 GB over 1,024 GPUs
# (128 servers x 8, rail-optimized, 1.6T) at packet level, ring, Simple, 8 channels, at 1 and 2
# ranks: wall time, events/s, simulated time and busbw, and the digest (same at both).
# Usage: bench/nccl_1024.sh [build dir] [size] [algo: ring, tree, sharp, auto]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
size=${2:-1GB}
algo=${3:-ring}
for ranks in 1 2; do
  echo "## ranks $ranks"
  stepsim_mpirun -np "$ranks" \
    "$build/apps/stepsim" bench nccl allreduce -b "$size" -e "$size" --gpus 1024 --algo "$algo" --proto "$([[ $algo == auto ]] && echo auto || echo simple)" \
    --topology "$STEPSIM_ROOT/topologies/rail-1024gpu-1.6t.yaml" --quiet 2>&1 | grep -vE '^#$|^#  Rank'
done
