#!/usr/bin/env bash
# The per-GPU memory model on the command line: `stepsim check SCENARIO` prints every stage
# without simulating; a layout that does not fit (GPT-3 175B TP1 PP1 on 1,024 H100) is a user
# error naming the stage, total, capacity and largest terms, once across ranks; memory.check warn
# simulates and marks the summary, --json and /meta; every shipped workload fits its GPUs.
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
tiny=$workloads/tiny.yaml
out=$("$stepsim" list scenario 2>&1)
check "list scenario: the memory keys and gpu.hbm_bytes" 'grep -q "^  memory.check  *error " <<<"$out" && grep -q "^  gpu.hbm_bytes " <<<"$out"'
gpt3=$workloads/gpt3-175b.yaml
out=$("$stepsim" check "$gpt3" 2>&1); rc=$?
check "check SCENARIO: exit 0, every stage, the peak" '[[ $rc -eq 0 ]] && [[ $(grep -c "^  stage " <<<"$out") -eq 8 ]] && grep -q "^memory peak .* on stage 0 of 80.00 GiB" <<<"$out"'
check "check SCENARIO: no simulation" '! grep -q "^step time" <<<"$out"'
issue=(--set parallel.tp=1 --set parallel.pp=1 --set parallel.gpus=1024 --set parallel.dp=0
  --set parallel.zero=0 --set parallel.global_batch=2048)
expect_error "memory: pipeline stage 0 needs" run "$gpt3" --fidelity analytical --no-output "${issue[@]}"
err=$("$stepsim" run "$gpt3" --fidelity analytical --no-output "${issue[@]}" 2>&1 >/dev/null); rc=$?
check "the refusal names the capacity, three terms and a hint" '[[ $rc -eq 2 ]] && grep -q "more than gpu.hbm_bytes 80.0 GiB (largest terms: [a-z_]* [0-9.]* GiB, [a-z_]* [0-9.]* GiB, [a-z_]* [0-9.]* GiB); " <<<"$err" && grep -q "parallel.zero" <<<"$err"'
expect_error "memory: pipeline stage 0 needs" check "$gpt3" "${issue[@]}"
out=$("$stepsim" run "$gpt3" --quiet --fidelity analytical -o warn.h5 --json warn.json "${issue[@]}" --set memory.check=warn 2>&1); rc=$?
check "memory.check warn: simulated and marked" '[[ $rc -eq 0 ]] && grep -q "^step time" <<<"$out" && grep -q "EXCEEDS CAPACITY" <<<"$out"'
check "memory.check warn: --json and /meta say exceeded" '/usr/bin/python3 -c "
import json, sys, h5py
j = json.load(open(\"warn.json\"))[\"memory\"]
assert j[\"exceeded\"] and j[\"check\"] == \"warn\" and not j[\"jobs\"][0][\"fits\"]
f = h5py.File(\"warn.h5\", \"r\")
assert int(f[\"meta\"].attrs[\"memory_exceeded\"]) == 1
m = f[\"memory\"][()]
assert abs(m[\"bytes\"].sum() - f[\"meta\"].attrs[\"memory_peak_bytes\"]) < 1e-6 * m[\"bytes\"].sum()
"'
expect_error "more than gpu.hbm_bytes 1.0 GiB" check "$tiny" --set gpu.hbm_bytes=1GiB
out=$("$stepsim" run "$tiny" --quiet --fidelity ideal -o tiny.h5 --json tiny.json 2>&1); rc=$?
check "run prints the memory peak and its largest terms" '[[ $rc -eq 0 ]] && grep -q "^memory peak " <<<"$out" && grep -q "^largest terms " <<<"$out"'
check "/memory: every stage and term, totals as in --json" '/usr/bin/python3 -c "
import json, h5py
j = json.load(open(\"tiny.json\"))[\"memory\"][\"jobs\"][0]
m = h5py.File(\"tiny.h5\", \"r\")[\"memory\"][()]
assert len(m) == 2 * 18, len(m)
for st in j[\"stages\"]:
    rows = m[m[\"stage\"] == st[\"stage\"]]
    assert abs(rows[\"bytes\"].sum() - st[\"total_bytes\"]) <= 1e-9 * st[\"total_bytes\"]
assert j[\"fits\"]
"'
# The whole step's own state (its collective records and connections) is estimated right after
# its plan, before the engine starts, on every rank of the node: GPT-3 175B's 1,946,784 records
# and 9,984 connections (163.5 MiB a rank) are refused in 24 MiB, with one message and exit 2,
# where its fabric alone fits; twice as much on 2 ranks of one node; the tiny step fits.
whole=(run "$gpt3" --quiet --no-output --set step.mode=whole --set step.fold=none)  # every GPU
# expect_error launches STEPSIM_TEST_ERROR_RANKS ranks (2; the sanitizer pass 1): each rank of
# the node holds its own copy.
if [[ ${STEPSIM_TEST_ERROR_RANKS:-2} -eq 1 ]]; then on="1 rank of this node needs about 163.5 MiB"
else on="2 ranks of this node needs about 327.1 MiB"; fi
STEPSIM_MEMORY_LIMIT=24MiB expect_error "too large: the whole step's own state (1946784 collective records, 9984 connections) on $on" "${whole[@]}"
err=$(STEPSIM_MEMORY_LIMIT=24MiB "$stepsim" "${whole[@]}" 2>&1 >/dev/null); rc=$?
check "whole step state, 1 rank: refused before the engine (exit $rc)" '[[ $rc -eq 2 && $(grep -c "stepsim: error: too large: the whole step.s own state (1946784 collective records, 9984 connections) on 1 rank of this node needs about 163.5 MiB" <<<"$err") -eq 1 ]]'
out=$(STEPSIM_MEMORY_LIMIT=24MiB "$stepsim" run "$tiny" --quiet --no-output --set step.mode=whole 2>&1); rc=$?
check "whole step state: the tiny step fits in 24 MiB (exit $rc)" '[[ $rc -eq 0 ]] && grep -q "^step time" <<<"$out"'
# Every shipped workload fits its GPUs, or its file says why not and sets memory.check: warn.
for f in "$workloads"/*.yaml "$workloads"/validation/*.yaml; do
  out=$("$stepsim" check "$f" 2>&1); rc=$?
  if grep -qE "^memory: \{?check: warn|^  check: warn" "$f"; then
    check "$(basename "$f"): warn, exceeds, says why" '[[ $rc -eq 0 ]] && grep -q "EXCEEDS CAPACITY" <<<"$out" && grep -q "^# Memory:" "$f"'
  else
    check "$(basename "$f") fits its GPUs" '[[ $rc -eq 0 ]] && grep -q "^memory peak" <<<"$out" && ! grep -q EXCEEDS <<<"$out"'
  fi
done
finish
