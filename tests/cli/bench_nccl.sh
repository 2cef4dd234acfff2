#!/usr/bin/env bash
# `stepsim bench nccl`: nccl-tests' columns, the same rows and digest at 1, 2 and 4 ranks and 1
# and 2 threads, busbw = algbw x 2(n-1)/n for AllReduce, and bad options are user errors (exit
# 2, one message).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
topo=$topologies/toy-2server.yaml
args=(bench nccl allreduce -b 64KiB -e 4MiB -f 8 --gpus 16 --topology "$topo" --quiet)
reference=""
for ranks in 1 2 4; do
  for threads in 1 2; do
    out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" "${args[@]}" --threads "$threads" 2>&1)
    line="$(grep -E '^ +[0-9]+ ' <<<"$out" | tr -s ' ') $(grep '^digest' <<<"$out")"
    if [[ -z "$reference" ]]; then
      reference=$line
      check "three rows and a digest" '[[ $(grep -cE "^ +[0-9]+ " <<<"$out") -eq 3 && "$line" == *digest* ]]'
      # busbw = algbw x 2 x 15 / 16 (rows with algbw > 10 GB/s: enough printed digits).
      check "busbw is algbw x 2(n-1)/n" 'awk '"'"'/^ +[0-9]+ / { if ($7 > 10 && ($8 / $7 < 1.870 || $8 / $7 > 1.880)) bad = 1 } END { exit bad }'"'"' <<<"$out"'
    else
      check "ranks $ranks threads $threads: '$line' vs '$reference'" '[[ "$line" == "$reference" ]]'
    fi
  done
done
expect_error "--gpus 64: the topology has 16 GPUs (allowed: 1..16)" \
  bench nccl allreduce --topology "$topo" --gpus 64
expect_error "--gpus 12 must be a multiple of the 8 GPUs per server" \
  bench nccl allreduce --topology "$topo" --gpus 12
expect_error "--algo: coll.algorithm: 'sharp' is not allowed (allowed: ring, tree, nvls, auto)" \
  bench nccl allreduce --topology "$topo" --algo sharp
expect_error "coll.algorithm: nvls needs the GPUs in one server" \
  bench nccl allreduce --topology "$topo" --gpus 16 --algo nvls
expect_error "coll.algorithm: tree is for allreduce only (allowed for alltoall: ring)" \
  bench nccl alltoall --topology "$topo" --algo tree
expect_error "--set coll.chunk: '1' is out of range" \
  bench nccl allreduce --topology "$topo" --set coll.chunk=1
expect_error "--root 16 is not a rank (0..15)" bench nccl broadcast --topology "$topo" --gpus 16 --root 16
finish
