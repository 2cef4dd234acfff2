#!/usr/bin/env bash
# Tree AllReduce busbw across leaves (issue 17): 8, 64 and 512 servers of the h100-8k-400g rail
# planes (8 GPUs per server, 32 servers per leaf) and of one plane with one GPU per server
# (tests/data/rail-1024-1gpu-400g.yaml), at cell fidelity, each as a share of its 8-server (one
# leaf) value. The 8-GPU rows at 512 servers take ~45 s (256 MiB) and ~3 min (1 GiB) of CPU each;
# the test Tree.OneGpuServersKeepBusBandwidthFrom8To512Servers runs the 1-GPU rows at 128 MiB.
# Recorded in BENCHMARKS.md. Usage: bench/tree_across_leaves.sh [build dir] [sizes] [cell]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
sizes=${2:-"128M 256M 1G"}
cell=${3:-128KiB}
echo "| topology | GPUs per server | size | 8 servers (GB/s) | 64 | 512 | 64 / 8 | 512 / 8 |"
echo "|---|---|---|---|---|---|---|---|"
for g in 8 1; do
  if [ "$g" = 8 ]; then topo=$STEPSIM_ROOT/topologies/h100-8k-400g.yaml; else
    topo=$STEPSIM_ROOT/tests/data/rail-1024-1gpu-400g.yaml; fi
  for size in $sizes; do
    bw=()
    for servers in 8 64 512; do
      bw+=("$("$build/apps/stepsim" bench nccl allreduce --algo tree --proto simple -b "$size" -e "$size" \
        --fidelity cell --cell "$cell" --topology "$topo" --gpus $((g * servers)) --quiet |
        awk '/^ +[0-9]+ +[0-9]+ +float/ {print $8}')")
    done
    awk -v t="$(basename "$topo" .yaml)" -v g="$g" -v s="$size" -v a="${bw[0]}" -v b="${bw[1]}" \
      -v c="${bw[2]}" 'BEGIN {printf "| %s | %d | %s | %s | %s | %s | %.1f%% | %.1f%% |\n",
        t, g, s, a, b, c, 100 * b / a, 100 * c / a}'
  done
done
