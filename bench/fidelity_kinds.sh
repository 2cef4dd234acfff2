#!/usr/bin/env bash
# Issue 7's agreement per collective kind: `stepsim bench nccl` for every kind at packet, cell
# and analytical fidelity, over 64 GPUs (8 servers, rail-optimized 1.6T, crossing the spines) at
# a latency-bound and a bandwidth-bound size; prints time and busbw and each fidelity's ratio to
# packet level. Usage: bench/fidelity_kinds.sh [build dir] [gpus] [topology]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
gpus=${2:-64}
topo=${3:-$STEPSIM_ROOT/topologies/rail-1024gpu-1.6t.yaml}
echo "| kind | size | packet time (us) | busbw | cell time (us) | cell / packet | analytical time (us) | analytical / packet |"
echo "|---|---|---|---|---|---|---|---|"
for kind in allreduce reducescatter allgather alltoall broadcast sendrecv; do
  for size in 1MiB 256MiB; do
    declare -A t
    for fid in packet cell analytical; do
      row=$("$build/apps/stepsim" bench nccl "$kind" -b "$size" -e "$size" --gpus "$gpus" --algo ring --proto simple \
        --topology "$topo" --fidelity "$fid" --quiet 2>&1 | grep -E '^ +[0-9]+ ')
      t[$fid]=$(awk '{print $6}' <<<"$row")
      [[ $fid == packet ]] && busbw=$(awk '{print $8}' <<<"$row")
    done
    awk -v k="$kind" -v s="$size" -v p="${t[packet]}" -v b="$busbw" -v c="${t[cell]}" -v a="${t[analytical]}" \
      'BEGIN { printf "| %s | %s | %.2f | %.1f | %.2f | %.3f | %.2f | %.3f |\n", k, s, p, b, c, c / p, a, a / p }'
  done
done
