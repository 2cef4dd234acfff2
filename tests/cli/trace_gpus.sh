#!/usr/bin/env bash
# `stepsim run --trace` in the whole step: one Perfetto process per traced GPU with its own ops
# and collectives (tests/cli/trace_gpus_check.py), on tiny (TP 4, PP 2, DP 2: stage 0 on GPUs
# 0-7, stage 1 on 8-15, TP groups of 4 consecutive GPUs).
# - The default: each stage's reference GPU (0 and 8), and no other.
# - --trace-gpus 0-3,9: those five, GPU 0's TP group seeing the same TP collectives; the same
#   file at 1 and 2 ranks.
# - --trace-max-events: the trace stops at the cap with its note (in the trace, once on stderr).
# - Bad lists and options that cannot take effect: one message, exit 2.
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; shift 3; mpiflags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cd "$(mktemp -d)" || exit 1
tiny=$workloads/tiny.yaml
check_py=(/usr/bin/python3 "$here/trace_gpus_check.py")
whole=(--set step.mode=whole --quiet --no-output)

out=$("$stepsim" run "$tiny" "${whole[@]}" --trace default.json 2>&1)
check "default: GPUs 0 and 8, one process each" '"${check_py[@]}" default.json 0,8'

for ranks in 1 2; do
  out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" run "$tiny" "${whole[@]}" \
        --trace "sel$ranks.json" --trace-gpus 0-3,9 2>&1)
done
check "--trace-gpus 0-3,9: those five processes, GPU 0's TP group alike" \
  '"${check_py[@]}" sel1.json 0,1,2,3,9 --tp-group 0,1,2,3'
check "--trace-gpus: the same trace at 1 and 2 ranks" 'cmp -s sel1.json sel2.json'
check "the memoized trace is the per-stage one (stage processes)" \
  '"$stepsim" run "$tiny" --quiet --no-output --set step.mode=memoized --trace memo.json >/dev/null 2>&1 &&
   /usr/bin/python3 "$here/trace_check.py" memo.json'

err=$("$stepsim" run "$tiny" "${whole[@]}" --trace cap.json --trace-gpus 0-7 \
      --trace-max-events 200 2>&1 >/dev/null)
out=$err
check "--trace-max-events 200: the note once on stderr" \
  '[[ $(grep -c "stepsim: --trace: the trace stops at .*--trace-max-events 200" <<<"$err") -eq 1 ]]'
check "--trace-max-events 200: at most 200 events, the note in the trace" \
  '"${check_py[@]}" cap.json 0,1,2,3,4,5,6,7 --cap 200'

expect_error "--trace-gpus: '0-x' is not a list of GPUs" run "$tiny" "${whole[@]}" --trace t.json --trace-gpus 0-x
expect_error "--trace-gpus: '5-2' is not a list of GPUs" run "$tiny" "${whole[@]}" --trace t.json --trace-gpus 5-2
expect_error "--trace-gpus: GPU 16 of '0,16' is not one the step runs (GPUs 0..15)" \
  run "$tiny" "${whole[@]}" --trace t.json --trace-gpus 0,16
expect_error "an empty GPU list" run "$tiny" "${whole[@]}" --trace t.json --trace-gpus ""
expect_error "--trace-gpus: the memoized step simulates one GPU per pipeline stage" \
  run "$tiny" --quiet --no-output --set step.mode=memoized --trace t.json --trace-gpus 0
expect_error "--trace-gpus shapes the --trace file: give --trace FILE.json too" \
  run "$tiny" "${whole[@]}" --trace-gpus 0
expect_error "--trace-max-events shapes the --trace file" run "$tiny" "${whole[@]}" --trace-max-events 10
expect_error "--trace-max-events" run "$tiny" "${whole[@]}" --trace t.json --trace-max-events 0
finish
