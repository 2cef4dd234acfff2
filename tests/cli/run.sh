#!/usr/bin/env bash
# `stepsim run`: the summary's lines, the same step time and digest at 1, 2 and 4 ranks and 1
# and 2 threads, --json, --set and --fidelity, and bad scenarios as user errors (exit 2, once).
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1  # the HDF5 files land here
tiny=$workloads/tiny.yaml
summary() { grep -E '^(step time|MFU|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|'; }
run_matrix summary -- run "$tiny" --quiet
check "summary lines" '[[ "$reference" == *"step time"*"MFU"*"digest"* ]]'
check "breakdown lines" 'grep -q "^compute " <<<"$out" && grep -q "^exposed tp " <<<"$out" && grep -q "^pipeline bubble " <<<"$out" && grep -q "^busbw dp " <<<"$out"'
out=$("$stepsim" list scenario 2>&1)
check "list scenario: every section" 'grep -q "^  model.layers " <<<"$out" && grep -q "^  parallel.tp " <<<"$out" && grep -q "^  gpu.gemm_efficiency " <<<"$out" && grep -q "^  fidelity " <<<"$out"'
check "list scenario: step.mode, step.fold, the output keys and moe" 'grep -q "^  step.mode  *auto " <<<"$out" && grep -q "^  step.fold  *none " <<<"$out" && grep -q "^  output.flows  *auto " <<<"$out" && grep -q "^  output.sample_interval " <<<"$out" && grep -q "^  moe\." <<<"$out"'
check "list scenario: each key once" '[[ -z "$(grep -E "^  [a-z_.]+ " <<<"$out" | awk "{print \$1}" | sort | uniq -d)" ]]'
json=$(mktemp)
out=$("$stepsim" run "$tiny" --quiet --fidelity ideal --set parallel.zero=0 --json "$json" 2>&1)
check "ideal fidelity named" 'grep -q "fidelity ideal" <<<"$out"'
out=$("$stepsim" run "$tiny" --quiet --no-output --fidelity analytical 2>&1)
check "analytical fidelity: named, with a step time" 'grep -q "fidelity analytical" <<<"$out" && grep -q "^step time" <<<"$out"'
# --profile / STEPSIM_PROFILE=1: every phase once, on stderr after the summary, from rank 0 only;
# the phases are disjoint parts of the run, so their wall and CPU add up to no more than the total.
profile_sums() {  # the profile lines on stdin: "ok" when the phases sum to at most the total
  awk '
       /^profile (set-up|ideal pass|engine run|output) / {
         for (i = 1; i <= NF; ++i) { if ($i == "wall") w += $(i + 1); if ($i == "cpu") c += $(i + 1); } n++ }
       /^profile total / { for (i = 1; i <= NF; ++i) { if ($i == "wall") tw = $(i + 1); if ($i == "cpu") tc = $(i + 1); } }
       END { if (n == 4 && w <= tw + 0.004 && c <= tc + 0.004 && tw > 0) print "ok"; else print "bad", n, w, tw, c, tc }'
}
err=$(STEPSIM_PROFILE=1 "$stepsim" run "$tiny" --quiet --no-output --fidelity analytical 2>&1 >/dev/null)
out=$err
check "STEPSIM_PROFILE=1: the phases, summing to no more than the total" '[[ $(profile_sums <<<"$err") == ok ]]'
both=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet --no-output --profile 2>/dev/null)
err=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet --no-output --profile 2>&1 >/dev/null)
out="$both
$err"
check "--profile on 2 ranks: once, on stderr only, the engine's events counted" \
  '[[ $(grep -c "^profile total" <<<"$err") -eq 1 && $(profile_sums <<<"$err") == ok ]] && ! grep -q "^profile" <<<"$both" && grep -qE "^profile engine run .* [1-9][0-9]* events in [1-9][0-9]* windows" <<<"$err"'
out=$("$stepsim" run "$tiny" --quiet --no-output --fidelity analytical 2>&1)
check "no profile unless asked" '! grep -q "^profile" <<<"$out"'
# moe.overlap dualpipe (memoized, packet fidelity): the same step and digest at 1, 2 and 4 ranks
# and 1 and 2 threads, with the hidden EP time printed.
run_matrix summary -- run "$tiny" --quiet --no-output --set model.experts=8 --set model.top_k=2 \
  --set model.ffn=1024 --set parallel.ep=2 --set parallel.global_batch=32 --set moe.overlap=dualpipe \
  --set step.mode=memoized
out=$first_out
check "dualpipe: the hidden EP line" 'grep -q "^hidden ep " <<<"$out"'
# Cell fidelity, memoized: named with its cell size (summary and /meta), the same digest at 1, 2
# and 4 ranks, and the partition line.
cell_summary() { grep -E '^(step time|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|'; }
run_matrix cell_summary -t 1 -- run "$tiny" --quiet --fidelity cell --set step.mode=memoized \
  -o "cell-r{R}.h5"
check "cell fidelity: named with its cells" 'grep -q "cell fidelity in 64KiB cells" <<<"$out"'
check "cell fidelity: the partition line" 'grep -q "^# partition metis over 1 ranks" <<<"$out"'
check "cell fidelity: /meta says cell, 65536-byte cells" '[[ $(h5dump -a /meta/fidelity cell-r1.h5 | grep -c "\"cell\"") -eq 1 && $(h5dump -a /meta/cell_bytes cell-r1.h5 | grep -c "(0): 65536") -eq 1 ]]'
check "json has step_s and mfu" '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j[\"step_s\"] > 0 and 0 < j[\"mfu\"] < 1 and j[\"fidelity\"] == \"ideal\"" "$json"'
rm -f "$json"
# step.mode auto (the default): the whole step at packet and cell fidelity (the same step as an
# explicit whole), the memoized step at ideal and analytical; the heading, --json and /meta record
# the mode that ran, never "auto".
mode_of() {  # FILE.json FILE.h5: the step_mode of each
  /usr/bin/python3 -c 'import json, sys, h5py
a = json.load(open(sys.argv[1]))["step_mode"]; b = h5py.File(sys.argv[2], "r")["meta"].attrs["step_mode"]
print(a, b.decode() if isinstance(b, bytes) else b)' "$1" "$2"
}
out=$("$stepsim" run "$tiny" --quiet --json auto.json -o auto.h5 2>&1)
auto_digest=$(grep "^digest" <<<"$out")
check "default at packet: the whole step, so named and recorded ($(mode_of auto.json auto.h5))" \
  '[[ "$out" == *"fidelity packet, step whole, ranks 1"* && "$(mode_of auto.json auto.h5)" == "whole whole" ]]'
out=$("$stepsim" run "$tiny" --quiet --no-output --set step.mode=whole 2>&1)
check "default at packet: the digest of step.mode whole" '[[ -n "$auto_digest" && "$(grep "^digest" <<<"$out")" == "$auto_digest" ]]'
out=$("$stepsim" run "$tiny" --quiet --set step.mode=memoized --json memo.json -o memo.h5 2>&1)
check "explicit memoized at packet wins, recorded" \
  '[[ "$out" == *"fidelity packet, step memoized, ranks 1"* && "$(mode_of memo.json memo.h5)" == "memoized memoized" && "$(grep "^digest" <<<"$out")" != "$auto_digest" ]]'
out=$("$stepsim" run "$tiny" --quiet --fidelity cell --json cell.json -o cellauto.h5 2>&1)
check "default at cell: the whole step" '[[ "$(mode_of cell.json cellauto.h5)" == "whole whole" ]]'
out=$("$stepsim" run "$tiny" --quiet --fidelity analytical --json ana.json -o ana.h5 2>&1)
check "default at analytical: the memoized step, recorded" \
  '[[ "$out" == *"fidelity analytical, step memoized, ranks 1"* && "$(mode_of ana.json ana.h5)" == "memoized memoized" ]]'
expect_error "step.mode whole needs packet or cell fidelity (this run: fidelity analytical)" \
  run "$tiny" --no-output --fidelity analytical --set step.mode=whole
bad=$(mktemp --suffix=.yaml)
printf 'model: {layers: 4, hidden: 516, heads: 6, ffn: 2048}\nparallel: {tp: 4, dp: 2}\ntopology: %s\n' \
  "$workloads/../topologies/toy-2server.yaml" >"$bad"
expect_error "parallel.tp (4) must divide model.heads (6)" run "$bad"
printf 'model: {layers: 4, hiden: 512}\ntopology: x.yaml\n' >"$bad"
expect_error ":1: model.hiden" run "$bad"
expect_error "parallel: 64 GPUs, but" run "$tiny" --set parallel.dp=8
expect_error "model.layers: '-4' is out of range" run "$tiny" --set model.layers=-4
expect_error "fidelity: 'flit' is not allowed (allowed: packet, cell, ideal, analytical)" run "$tiny" --fidelity flit
expect_error "fabric.cell: '1KiB' is out of range (from the mtu, 4KiB, to 4MiB)" run "$tiny" --fidelity cell --set fabric.cell=1KiB
# fabric.cell's one lower bound is the MTU, as for bench fabric --cell: 6 KiB cells run.
out=$("$stepsim" run "$tiny" --quiet --no-output --fidelity cell --set fabric.cell=6KiB 2>&1); rc=$?
check "run --set fabric.cell=6KiB runs in 6KiB cells" '[[ $rc -eq 0 ]] && grep -q "cell fidelity in 6KiB cells" <<<"$out"'
expect_error "fabric.cell (6KiB) is out of range (from the mtu, 8KiB, to 4MiB)" \
  run "$tiny" --no-output --fidelity cell --set fabric.cell=6KiB --set fabric.mtu=8KiB
# The fabric's parameter table (issue 13): its keys and its buffer rule (issue 15) reach stepsim run.
expect_error "fabric.buffer (--buffer): 1KiB is smaller than PFC XOFF + headroom" run "$tiny" --set fabric.buffer=1KiB
expect_error "fabric.ecn_pmax: '2' is out of range (0..1)" run "$tiny" --set fabric.ecn_pmax=2
expect_error "--partition: unknown partitioner" run "$tiny" --partition scotch
rm -f "$bad"
# SIGTERM during a memoized packet-level step: INTERRUPTED, exit 143, the HDF5 file written and
# marked incomplete.
"$stepsim" run "$workloads/gpt3-175b.yaml" --quiet --set step.mode=memoized -o part.h5 >sig.out 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
wait "$pid"; rc=$?
out=$(cat sig.out)
check "SIGTERM: exit 143" '[[ $rc -eq 143 ]]'
check "SIGTERM: INTERRUPTED in the summary" 'grep -q "^# status: INTERRUPTED" <<<"$out"'
check "SIGTERM: /meta complete = 0" '[[ $(h5dump -a /meta/complete part.h5 | grep -c "(0): 0") -eq 1 ]]'
# SIGTERM during a whole step: every collective keeps its row (ids are row numbers, the flows'
# ids point into the table), no op ends after the stop, and no MFU.
"$stepsim" run "$workloads/gpt-13b.yaml" --quiet --fidelity cell --set step.mode=whole \
  -o whole_part.h5 >sigw.out 2>&1 &
pid=$!
sleep 3
kill -TERM "$pid"
wait "$pid"; rc=$?
check "SIGTERM whole step: exit 143" '[[ $rc -eq 143 ]]'
check "SIGTERM whole step: rows consistent with the stop" '/usr/bin/python3 - whole_part.h5 <<"EOF"
import math, sys
import h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
meta, colls, flows, ops = f["meta"].attrs, f["collectives"][:], f["flows"][:], f["ops"][:]
stop = meta["step_s"]
ran = (colls["start_s"] >= 0) & (colls["end_s"] >= colls["start_s"])
ok = (meta["complete"] == 0 and math.isnan(meta["mfu"])
      and (colls["id"] == np.arange(len(colls))).all() and 0 < ran.sum() < len(colls)
      and (flows["collective"] < len(colls)).all() and len(ops) > 0 and ops["end_s"].max() <= stop)
sys.exit(0 if ok else 1)
EOF'
finish
