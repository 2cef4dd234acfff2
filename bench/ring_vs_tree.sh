#!/usr/bin/env bash
# Ring vs double binary tree AllReduce: nccl-tests rows for both over a size sweep, and the
# crossover (the smallest size from which the ring is faster). Recorded in BENCHMARKS.md.
# Usage: bench/ring_vs_tree.sh [build dir] [topology] [gpus] [protocol]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
topo=${2:-$STEPSIM_ROOT/topologies/fat-tree-k16.yaml}
gpus=${3:-256}
proto=${4:-simple}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for algo in ring tree; do
  "$build/apps/stepsim" bench nccl allreduce -b 8 -e 256MiB -f 8 --gpus "$gpus" --topology "$topo" \
    --algo "$algo" --proto "$proto" --quiet | grep -E '^ +[0-9]+ ' >"$out/$algo"
done
/usr/bin/python3 - "$out" <<'PY'
import os, sys
d = sys.argv[1]
rows = {a: [l.split() for l in open(os.path.join(d, a))] for a in ("ring", "tree")}
print("| size (B) | ring time (us) | tree time (us) | ring busbw (GB/s) | tree busbw (GB/s) | faster |")
print("|---|---|---|---|---|---|")
cross = None
for r, t in zip(rows["ring"], rows["tree"]):
    faster = "ring" if float(r[5]) < float(t[5]) else "tree"
    if faster == "ring" and cross is None:
        cross = r[0]
    print(f"| {r[0]} | {r[5]} | {t[5]} | {r[7]} | {t[7]} | {faster} |")
print(f"\ncrossover: the ring is faster from {cross} B" if cross else "\ncrossover: the tree is faster at every size")
PY
