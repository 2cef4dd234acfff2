#!/usr/bin/env bash
# `stepsim run --set step.mode=whole` (issue 14): the whole step as one simulation.
# - M4-like (tests/data/m4-like.yaml): the data-parallel rings of two pipeline stages cross the
#   same pod's aggregation-core links of a 3-tier fat-tree. Memoized mode runs each stage's
#   reduction alone; the whole step runs them together. With the NICs' DCQCN (the firmware's
#   set, the default) ECMP's collisions cost under 2% (as without congestion control), and
#   adaptive load balancing no more; DCQCN with the paper's 40G set throttles the colliding
#   cells' flows and loses >= 10%.
# - The same step with 4 channels per ring: ECMP's hash collisions cost > 15% at cell and
#   packet fidelity; spraying and adaptive routing recover >= 80% of it.
# - The same step time and digest at 1, 2 and 4 ranks and 1 and 2 threads.
# - Without contention (tiny: every data-parallel group inside one server) the whole step
#   stays within 5% of the memoized one.
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; data=$4; shift 4; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
m4=$data/m4-like.yaml
step_us() {  # step time in microseconds from a run's summary
  awk '/^step time/ { v = $3; u = $4; if (u == "s") v *= 1e6; else if (u == "ms") v *= 1e3; print v }' <<<"$1"
}
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=memoized 2>&1); memo=$(step_us "$out")
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole 2>&1); whole=$(step_us "$out")
whole_out=$out
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole --set fabric.lb=adaptive 2>&1)
adaptive=$(step_us "$out")
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole --set cc.algorithm=none 2>&1)
none=$(step_us "$out")
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole \
      --set cc.dcqcn.preset=sigcomm15 2>&1)
paper=$(step_us "$out")
echo "m4-like: memoized $memo us, whole (ECMP) $whole us, whole (adaptive) $adaptive us," \
     "no CC $none us, paper DCQCN $paper us"
check "whole step under ECMP within 2% of the same step without CC ($whole vs $none us)" \
  'awk -v w="$whole" -v n="$none" "BEGIN { exit !(w <= 1.02 * n) }"'
check "whole step longer than memoized, by < 2% ($whole vs $memo us)" \
  'awk -v w="$whole" -v m="$memo" "BEGIN { exit !(w > m && w <= 1.02 * m) }"'
check "adaptive load balancing within 2% of memoized ($adaptive vs $memo us)" \
  'awk -v a="$adaptive" -v m="$memo" "BEGIN { exit !(a <= 1.02 * m) }"'
check "the paper's DCQCN set loses >= 10% against memoized ($paper vs $memo us)" \
  'awk -v p="$paper" -v m="$memo" "BEGIN { exit !(p >= 1.10 * m) }"'
check "whole step: one fabric run, no drops" \
  'grep -q "1 distinct collectives simulated" <<<"$whole_out" && grep -q "^drops  *0$" <<<"$whole_out"'
# With one channel the two stages' rings put 2 flows each way on pod 1's 4 core uplinks and
# ECMP's hashes keep them apart (the checks above). With 4 channels (4 QPs per ring hop, 8 flows
# each way) the hashes collide: ECMP loses > 15% against memoized at cell and packet fidelity
# (cell 19.83 vs 16.14 ms, packet 20.36 vs 16.16 ms), and spraying (selective repeat, the
# default with it) and adaptive routing each recover >= 80% of that loss.
for fid in cell packet; do
  c4=(--set coll.channels=4 --set fidelity=$fid)
  m=$(step_us "$("$stepsim" run "$m4" --quiet --no-output --set step.mode=memoized "${c4[@]}" 2>&1)")
  e=$(step_us "$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole "${c4[@]}" 2>&1)")
  check "4 channels ($fid): ECMP collisions cost > 15% ($e vs memoized $m us)" \
    'awk -v e="$e" -v m="$m" "BEGIN { exit !(e > 1.15 * m) }"'
  for lb in spray adaptive; do
    r=$(step_us "$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole "${c4[@]}" \
        --set fabric.lb=$lb 2>&1)")
    echo "m4-like, 4 channels ($fid): $lb $r us, ECMP $e us, memoized $m us"
    check "4 channels ($fid): $lb recovers >= 80% of ECMP's loss ($r us; ECMP $e, memoized $m us)" \
      'awk -v r="$r" -v e="$e" -v m="$m" "BEGIN { exit !(e - r >= 0.8 * (e - m)) }"'
  done
done
# Determinism on a smaller copy of the same step (a quarter of the gradient bytes).
small=(--set model.hidden=1024 --set model.ffn=4096 --set model.heads=8)
reference=""
for rt in 1:1 1:2 2:1 4:1; do
  ranks=${rt%:*}; threads=${rt#*:}
  out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" run "$m4" --quiet --no-output \
        --set step.mode=whole "${small[@]}" --threads "$threads" 2>&1)
  line="$(grep -E '^(step time|busbw|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|')"
  if [[ -z "$reference" ]]; then reference=$line; else
    check "ranks $ranks threads $threads: '$line' vs '$reference'" '[[ "$line" == "$reference" ]]'
  fi
done
# /flows and /samples of the whole step: times ordered and inside the step's timeline, one collective's rows
# carry its bytes (a ring AllReduce over n servers puts 2(n-1)S on the network: n GPUs x
# 2(n-1)/n x S; a pipeline send S, one way), the printed count is the file's, and the file is the
# same at 1 and 2 ranks.
for ranks in 1 2; do
  "$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" run "$m4" --quiet --set step.mode=whole \
    "${small[@]}" -o "m4-r$ranks.h5" >"m4-r$ranks.txt" 2>&1
done
check "flows identical at 1 and 2 ranks" \
  '[[ "$(h5dump -d /flows m4-r1.h5 | tail -n +3)" == "$(h5dump -d /flows m4-r2.h5 | tail -n +3)" ]]'
check "/samples identical at 1 and 2 ranks" \
  '[[ "$(h5dump -d /samples/ports m4-r1.h5 | tail -n +3)" == "$(h5dump -d /samples/ports m4-r2.h5 | tail -n +3)" ]]'
check "collectives identical at 1 and 2 ranks" \
  '[[ "$(h5dump -d /collectives m4-r1.h5 | tail -n +3)" == "$(h5dump -d /collectives m4-r2.h5 | tail -n +3)" ]]'
out=$(/usr/bin/python3 - m4-r1.h5 "$(cat m4-r1.txt)" <<'PY'
import re, sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
fl, co = f["flows"][:], f["collectives"][:]
step_ps = f["meta"].attrs["step_s"] * 1e12
bad = []
if not (fl["start_ps"] <= fl["first_byte_ps"]).all() or not (fl["first_byte_ps"] <= fl["end_ps"]).all():
    bad.append("times out of order")
if (fl["start_ps"] < 0).any() or (fl["end_ps"] > step_ps + 1e7).any():
    bad.append("a flow outside the step")
m = re.search(r"^flows +(\d+) rows", sys.argv[2], re.M)
if not m or int(m.group(1)) != len(fl):
    bad.append("printed row count %s != %d" % (m and m.group(1), len(fl)))
ar = co[(co["group"] == 4) & (co["kind"] == 0)]  # data-parallel all-reduces
if len(ar) == 0:
    bad.append("no data-parallel all-reduce")
for c in ar:
    got = int(fl["bytes"][fl["collective"] == c["id"]].sum())
    want = 2 * (int(c["gpus"]) - 1) * int(c["bytes"])
    if abs(got - want) > 1e-3 * want:
        bad.append("collective %d: flows carry %d bytes, ring needs %d" % (c["id"], got, want))
# A pipeline send (kind 8) is one way: its flows carry S, not 2S (a SendRecv exchange).
pp = co[co["group"] == 3]
if len(pp) == 0 or (pp["kind"] != 8).any():
    bad.append("pipeline sends missing or not of kind send")
crossing = 0
for c in pp:
    got = int(fl["bytes"][fl["collective"] == c["id"]].sum())
    crossing += got > 0
    if got not in (0, int(c["bytes"])):
        bad.append("pipeline send %d: flows carry %d bytes, not %d" % (c["id"], got, c["bytes"]))
if crossing == 0:
    bad.append("no pipeline send crosses servers")
# /samples: each port's bytes over the bins add up to what /links says it carried (1%).
s, links = f["samples/ports"][:], f["links"][:]
per_port = np.bincount(s["port"], weights=s["bytes"].astype(float),
                       minlength=int(links["port"].max()) + 1)
for p, b in zip(links["port"], links["bytes"]):
    if b > 0 and abs(per_port[p] - b) > 0.01 * b:
        bad.append("port %d: samples %.0f bytes, links %.0f" % (p, per_port[p], b))
if len(s) == 0:
    bad.append("no samples")
print("ok" if not bad else "; ".join(bad))
PY
)
check "flows: $out" '[[ "$out" == ok ]]'
# Stragglers, faults and background traffic inside the step cost time; a link down longer than
# the transport's retries fails the transfers (modelled: exit 1 with the count, no crash).
base=$(step_us "$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole "${small[@]}" 2>&1)")
whole_small() { "$stepsim" run "$m4" --quiet --no-output --set step.mode=whole "${small[@]}" "$@" 2>&1; }
slow=$(step_us "$(whole_small --slow-gpu 3:1.5)")
check "a 1.5x straggler slows the step ($slow vs $base us)" 'awk -v a="$slow" -v b="$base" "BEGIN { exit !(a > b) }"'
pcie=$(step_us "$(whole_small --pcie-fault 0:gen3@0us)")
check "GPU 0's NIC on PCIe Gen3 slows the step ($pcie vs $base us)" 'awk -v a="$pcie" -v b="$base" "BEGIN { exit !(a > 1.5 * b) }"'
# (at 2 ms the data-parallel rings are on the link; they start after the last backward)
out=$(whole_small --fault down:0@2ms --fault up:0@2.1ms); flap=$(step_us "$out")
check "a 100 us link outage: retransmissions, the step completes ($flap us)" \
  'grep -qE "^retransmissions +[1-9]" <<<"$out" && ! grep -q INCOMPLETE <<<"$out" && awk -v a="$flap" -v b="$base" "BEGIN { exit !(a >= b) }"'
out=$(whole_small --fault down:0@1ms --fault up:0@3ms); rc=$?
check "a 2 ms outage: transfers fail, exit 1, said once" \
  '[[ $rc -eq 1 ]] && [[ $(grep -c "RDMA transfers failed" <<<"$out") -eq 1 ]]'
bg=$(step_us "$(whole_small --background permutation@200G)")
check "background permutation at 200G slows the step ($bg vs $base us)" 'awk -v a="$bg" -v b="$base" "BEGIN { exit !(a > 1.2 * b) }"'
d1=$(whole_small --background permutation@200G | grep ^digest)
d2=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$m4" --quiet --no-output --set step.mode=whole "${small[@]}" --background permutation@200G 2>&1 | grep ^digest)
check "background: the same digest at 1 and 2 ranks" '[[ -n "$d1" && "$d1" == "$d2" ]]'
expect_error "is not PATTERN@RATE" run "$m4" --no-output --set step.mode=whole --background ring@1G
expect_error "need the whole step (step.mode auto or whole, at packet or cell fidelity; this run: step.mode memoized, fidelity cell)" \
  run "$m4" --no-output --set step.mode=memoized --slow-gpu 1:2
expect_error "need the whole step (step.mode auto or whole, at packet or cell fidelity; this run: step.mode auto, fidelity ideal)" \
  run "$m4" --no-output --fidelity ideal --background permutation@1G
expect_error "--slow-gpu: '99:2' is not GPU:FACTOR" run "$m4" --no-output --set step.mode=whole --slow-gpu 99:2
tiny=$workloads/tiny.yaml
out=$("$stepsim" run "$tiny" --quiet --no-output --set step.mode=memoized 2>&1); t_memo=$(step_us "$out")
out=$("$stepsim" run "$tiny" --quiet --no-output --set step.mode=whole 2>&1); t_whole=$(step_us "$out")
check "tiny: whole ($t_whole us) within 5% of memoized ($t_memo us), never faster by > 1%" \
  'awk -v w="$t_whole" -v m="$t_memo" "BEGIN { exit !(w <= 1.05 * m && w >= 0.99 * m) }"'
# moe.overlap dualpipe in the whole step (packet and cell fidelity): within 5% of the memoized
# step, hidden + exposed EP the EP time the step without overlap exposes (1%), and the same step
# and digest at 1, 2 and 4 ranks and 1 and 2 threads.
ep_us() {  # "exposed ep" plus "hidden ep" in microseconds
  awk '/^(exposed|hidden) ep / { v = $3; u = $4; if (u == "s") v *= 1e6; else if (u == "ms") v *= 1e3; t += v }
       END { print t + 0 }' <<<"$1"
}
dual_summary() { grep -E '^(step time|hidden ep|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|'; }
dual=(--set model.experts=8 --set model.top_k=2 --set model.ffn=1024 --set parallel.ep=2
      --set parallel.global_batch=32)
for fid in packet cell; do
  out=$("$stepsim" run "$tiny" --quiet --no-output "${dual[@]}" --set fidelity=$fid --set moe.overlap=dualpipe --set step.mode=memoized 2>&1)
  d_memo=$(step_us "$out")
  out=$("$stepsim" run "$tiny" --quiet --no-output "${dual[@]}" --set fidelity=$fid --set moe.overlap=dualpipe --set step.mode=whole 2>&1)
  d_whole=$(step_us "$out"); d_ep=$(ep_us "$out")
  check "dualpipe ($fid): whole ($d_whole us) within 5% of memoized ($d_memo us), EP hidden" \
    'awk -v w="$d_whole" -v m="$d_memo" "BEGIN { exit !(w <= 1.05 * m && w >= 0.95 * m) }" && grep -q "^hidden ep " <<<"$out"'
  out=$("$stepsim" run "$tiny" --quiet --no-output "${dual[@]}" --set fidelity=$fid --set step.mode=whole 2>&1)
  n_ep=$(ep_us "$out")
  check "dualpipe ($fid): hidden + exposed EP ($d_ep us) = exposed EP without overlap ($n_ep us)" \
    'awk -v a="$d_ep" -v b="$n_ep" "BEGIN { exit !(b > 0 && a >= 0.99 * b && a <= 1.01 * b) }"'
  run_matrix dual_summary -- \
    run "$tiny" --quiet --no-output "${dual[@]}" --set fidelity=$fid --set moe.overlap=dualpipe \
    --set step.mode=whole
done
# The critical stage's split adds up to the step time (ZeRO 1's parameter gather counted once).
split_sum() {  # the breakdown lines' sum, in microseconds
  awk '/^# where the time went/ { on = 1; next } /^# / { on = 0 }
       on && NF >= 3 { for (i = 2; i <= NF; ++i) if ($i ~ /^[0-9.]+$/) { v = $i; u = $(i + 1); break }
         if (u == "s") v *= 1e6; else if (u == "ms") v *= 1e3; t += v }
       END { print t }' <<<"$1"
}
for sc in "$m4" "$workloads/tiny.yaml"; do
  out=$("$stepsim" run "$sc" --quiet --no-output --set step.mode=whole 2>&1)
  total=$(split_sum "$out"); st=$(step_us "$out")
  check "$(basename "$sc"): the split adds up to the step ($total vs $st us)" \
    'awk -v a="$total" -v b="$st" "BEGIN { exit !(a >= 0.999 * b && a <= 1.001 * b) }"'
done
# Background traffic asked to last far past the step (10 s of a 3 ms step) stops at the step's
# end, the same at 1 and 2 ranks, and equals a background told to end there (which it did not
# before: the run simulated the background for 10 s).
bg=()
for ranks in 1 2; do
  out=$(timeout 120 "$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet \
        --no-output --set step.mode=whole --background permutation@100G,10s --json "bg$ranks.json" 2>&1)
  bg+=("$(grep -E '^(step time|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|')")
  cut=$(grep -E "^background +stopped at the step.s end, " <<<"$out")
done
check "background past the step: '$cut', same at 1 and 2 ranks ('${bg[0]}' vs '${bg[1]:-}')" \
  '[[ -n "$cut" && -n "${bg[0]}" && "${bg[0]}" == "${bg[1]:-}" ]]'
cut_ns=$(/usr/bin/python3 -c 'import json, math, sys; print(math.ceil(json.load(open(sys.argv[1]))["background_cut_s"] * 1e9))' bg1.json)
out=$("$stepsim" run "$tiny" --quiet --no-output --set step.mode=whole \
      --background "permutation@100G,${cut_ns}ns" 2>&1)
check "background past the step = background until the step's end (${cut_ns} ns)" \
  '[[ "$(grep -E "^(step time|digest)" <<<"$out" | tr -s " " | tr "\n" "|")" == "${bg[0]}" ]]'
finish
