#!/usr/bin/env bash
# The PHOLD benchmark matrix recorded in BENCHMARKS.md: ROSS's reference case (1024 LPs, 16 events
# per LP, lookahead 1us, mean 2us, end 2ms) at remote 0.1 and 0.5, on 1 rank, 2 ranks and
# 1 rank x 2 threads, each the median of --repeat runs; then event memory at 1M pending events.
# Usage: bench/phold_matrix.sh [build dir] [repeats]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
repeat=${2:-5}
stepsim=$build/apps/stepsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # name ranks threads extra-args...
  local name=$1 ranks=$2 threads=$3; shift 3
  local bind=()
  [[ $threads -gt 1 ]] && bind=(--bind-to none)  # mpirun binds a rank to one core by default
  stepsim_mpirun -np "$ranks" "${bind[@]}" "$stepsim" bench phold --quiet --repeat "$repeat" --threads "$threads" \
    --json "$out/$name.json" "$@" >/dev/null
}

for remote in 0.1 0.5; do
  run "r${remote}_1x1" 1 1 --remote "$remote"
  run "r${remote}_2x1" 2 1 --remote "$remote"
  run "r${remote}_1x2" 1 2 --remote "$remote"
done
run mem 1 1 --events-per-lp 1000 --end 100us

/usr/bin/python3 - "$out" <<'PY'
import json, sys, os
d = sys.argv[1]
j = {f[:-5]: json.load(open(os.path.join(d, f))) for f in os.listdir(d)}
print("| remote | ranks x threads | events/s (median) | runs (M/s) | speed-up | compute / exchange / allreduce s per rank | digest |")
print("|---|---|---|---|---|---|---|")
for remote in ("0.1", "0.5"):
    base = j[f"r{remote}_1x1"]["events_per_s"]
    for cfg, label in (("1x1", "1 x 1"), ("2x1", "2 x 1"), ("1x2", "1 x 2")):
        r = j[f"r{remote}_{cfg}"]
        split = "; ".join(f"{p['compute_s']:.3f} / {p['exchange_s']:.3f} / {p['allreduce_s']:.3f}" for p in r["per_rank"])
        runs = " ".join(f"{x/1e6:.1f}" for x in r["events_per_s_runs"])
        print(f"| {remote} | {label} | {r['events_per_s']/1e6:.2f} M | {runs} | {r['events_per_s']/base:.2f}x | {split} | {r['digest']} |")
m = j["mem"]
print()
print(f"Event memory: {m['bytes_per_pending_event']:.1f} bytes per pending event at "
      f"{1024*1000:,} pending events (engine storage: queues + buffers); "
      f"peak RSS {m['peak_rss_max_bytes']/2**20:.1f} MiB.")
PY
