#!/usr/bin/env bash
# The fabric benchmark recorded in BENCHMARKS.md: permutation traffic (every host sends one
# 2,000,000 B flow to a distinct random host), 400G links, 4096 B packets, on 3-tier fat-trees of
# 128 (k=8), 1,024 (k=16) and 5,488 (k=28) hosts, at 1 and 2 ranks; packet-hops per second per
# core, wall time and peak memory. Median of --repeat runs (1 for k=28).
# Usage: bench/fabric_scaling.sh [build dir] [repeats] [extra bench fabric options...]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
repeat=${2:-3}
shift 2 || true
stepsim=$build/apps/stepsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for k in 8 16 28; do
  r=$repeat
  [[ $k -eq 28 ]] && r=1
  for ranks in 1 2; do
    stepsim_mpirun -np "$ranks" "$stepsim" bench fabric --topology "$STEPSIM_ROOT/topologies/fat-tree-k$k.yaml" \
      --pattern permutation --flow-bytes 2000000 --mtu 4096 --quiet --repeat "$r" \
      --json "$out/k${k}_np${ranks}.json" "$@" >/dev/null
  done
done

/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
print("| hosts | ranks | packet-hops | wall s | packet-hops/s | per core | speed-up | peak RSS (max rank) | runs (M/s) | digest |")
print("|---|---|---|---|---|---|---|---|---|---|")
for k in (8, 16, 28):
    base = None
    for ranks in (1, 2):
        j = json.load(open(os.path.join(d, f"k{k}_np{ranks}.json")))
        rate = j["packet_hops_per_s"]
        base = base or rate
        runs = " ".join(f"{x/1e6:.2f}" for x in j["packet_hops_per_s_runs"])
        print(f"| {j['servers']} | {ranks} | {j['packet_hops']:,} | {j['wall_s']:.3f} | {rate/1e6:.2f} M | "
              f"{j['packet_hops_per_s_per_core']/1e6:.2f} M | {rate/base:.2f}x | "
              f"{j['peak_rss_max_bytes']/2**20:.0f} MiB | {runs} | {j['digest']} |")
PY
