#!/usr/bin/env bash
# The perftest table recorded in BENCHMARKS.md: stepsim bench perftest on the 1.6T two-server toy
# (one leaf between the NICs), against DOMAIN.md section 7's ConnectX-7 1.6T figures. Latency
# tests give P50 (t_typical), P99, P999; bandwidth tests Gb/s and Mpps (perftest's columns).
# Usage: bench/perftest_table.sh [build dir]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$STEPSIM_ROOT/build}
stepsim=$build/apps/stepsim
topo=$STEPSIM_ROOT/topologies/toy-2server-1.6t.yaml
row() {  # label, published, args...
  local label=$1 published=$2; shift 2
  local out t0 t1 json
  json=$(mktemp --suffix=.json)
  t0=$(date +%s.%N)
  out=$("$stepsim" bench perftest "$@" --topology "$topo" --quiet --report_gbits --json "$json")
  t1=$(date +%s.%N)
  local p50 p99 p999 bw mpps
  read -r p50 p99 p999 bw mpps < <(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["rows"][-1]
f = lambda k, d=2: f"{r[k]:.{d}f}" if k in r else "-"
print(f("t_typical_us"), f("t_p99_us"), f("t_p999_us"), f("gbps"), f("mpps", 3))' "$json")
  rm -f "$json"
  local ev
  ev=$(grep '^engine' <<<"$out" | sed -E 's/.* \(([0-9.]+) M\/s\)/\1/')
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s M/s, %.2f s |\n' "$label" "$*" "$p50" "$p99" "$p999" "$bw" "$mpps" "$published" "$ev" "$(echo "$t1 - $t0" | bc)"
}
echo "| case | command | P50 us | P99 us | P999 us | Gb/s | Mpps | ConnectX-7 (DOMAIN.md 7) | engine |"
echo "|---|---|---|---|---|---|---|---|---|"
row "256 B WRITE latency" "1.1 / 1.3 / 1.8 us" write_lat -s 256 -n 10000
row "256 B WRITE, 1 QP" "15.8 Gb/s, 7.7 Mpps" write_bw -s 256 -n 20000
row "1 MB WRITE, 1 QP" "1580 Gb/s (12.5 us: inconsistent)" write_bw -s 1MiB -n 500
row "4 KB WRITE, 64 QPs" "2.1 / 3.5 / 5.2 us, 1590 Gb/s, 48.5 Mpps" write_bw -s 4KiB -q 64 -n 1000
row "64 B WRITE, 64 QPs" "-" write_bw -s 64 -q 64 -n 2000
row "1 MB READ, 1 QP" "-" read_bw -s 1MiB -n 500
row "2 B SEND latency" "-" send_lat -s 2 -n 10000
