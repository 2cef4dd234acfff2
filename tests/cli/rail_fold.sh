#!/usr/bin/env bash
# `stepsim run --set step.fold=rails` (issue 14): the whole step of a rail-symmetric job on a
# rail-optimized fabric runs rail 0 and copies it to the other rails.
# - tests/data/rail-fold.yaml keeps every network collective under one leaf per plane: no plane
#   makes a choice another does not, so the folded step must equal the full one to the
#   picosecond, with the same collective counts and bus bandwidths, from 1/8 of the events.
# - With 4x the data-parallel size the stages sit under different leaves and the pipeline sends
#   cross the spines (ECMP draws differ per plane): the folded step stays within 2% of the full.
# - The same digest at 1 and 2 ranks; refusals where the rails differ or do not exist (exit 2);
#   the memoized step ignores step.fold.
set -uo pipefail
stepsim=$1; mpiexec=$2; data=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
fold=$data/rail-fold.yaml
field() {  # field FILE KEY: a value of the --json summary
  /usr/bin/python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v if not isinstance(v, float) else repr(v))' "$1" "$2"
}
run() {  # run NAME ARGS...: a whole step, its summary in NAME.txt, its JSON in NAME.json
  local name=$1; shift
  out=$("$stepsim" run "$fold" --quiet --no-output --set step.mode=whole --json "$name.json" "$@" 2>&1)
  echo "$out" >"$name.txt"
}
run full
run folded --set step.fold=rails
echo "one leaf per plane: step $(field full.json step_s) s full, $(field folded.json step_s) s folded;" \
  "events $(field full.json events) against $(field folded.json events)"
check "folded step equals the full one to the picosecond" \
  '[[ "$(field full.json step_s)" == "$(field folded.json step_s)" ]]'
for k in collectives busbw_gbs exposed_s; do
  check "folded $k equal the full run's" '[[ "$(field full.json $k)" == "$(field folded.json $k)" ]]'
done
check "8 rails folded, said in the summary" \
  '[[ "$(field folded.json folded_rails)" == 8 ]] && grep -q "^rails folded  *8 rails" folded.txt'
check "the full run says nothing of folding" '! grep -q "^rails folded" full.txt'
check "the full run hints at folding, the folded one does not" \
  'grep -q "^hint .*step.fold=rails would run 1 of these 8 rails" full.txt && ! grep -q "^hint" folded.txt'
# With progress on, the hint comes before the run, not only in its summary.
out=$("$stepsim" run "$fold" --no-output --set step.mode=whole --progress 0 2>&1 >/dev/null)
check "progress: the hint comes before the first progress report" \
  '[[ "$(grep -m1 -nE "^progress: (hint|sim )" <<<"$out")" == *"hint: --set step.fold=rails would run 1 of these 8 rails"* ]]'
check "folding runs at most 1/6 of the events" \
  '(( $(field folded.json events) * 6 <= $(field full.json events) ))'
wide=(--set parallel.dp=32 --set parallel.global_batch=64)
run wide_full "${wide[@]}"
run wide_folded "${wide[@]}" --set step.fold=rails
echo "stages under two leaves: step $(field wide_full.json step_s) s full, $(field wide_folded.json step_s) s folded"
check "across leaves the folded step is within 2% of the full one" \
  'awk -v a="$(field wide_full.json step_s)" -v b="$(field wide_folded.json step_s)" \
     "BEGIN { d = (a - b) / a; exit !(d < 0.02 && d > -0.02) }"'
"$stepsim" run "$fold" --quiet --set step.mode=whole --set step.fold=rails -o folded.h5 >/dev/null 2>&1
check "/meta/folded_rails is 8 in the HDF5 file" \
  'h5dump -a /meta/folded_rails folded.h5 | grep -qE "^ *\(0\): 8$"'
summary() { grep -E '^(step time|busbw|digest)' <<<"$out" | tr -s ' ' | tr '\n' '|'; }
run_matrix summary -r "1 2" -t 1 -- run "$fold" --quiet --no-output --set step.mode=whole \
  --set step.fold=rails
# `end` stops the step, not the in-server collectives costed for it (their runs go to their end).
"$stepsim" run "$fold" --quiet --no-output --set step.mode=whole --set step.fold=rails \
  --set end=10us >end.txt 2>&1; rc=$?
out=$(cat end.txt)
check "end=10us: the step stops incomplete (exit 1), no error" \
  '[[ $rc -eq 1 ]] && grep -q "INCOMPLETE" end.txt && ! grep -q "error" end.txt'
expect_error "step.fold rails: topology" run "$data/m4-like.yaml" --no-output \
  --set step.mode=whole --set step.fold=rails
expect_error "step.fold rails: a straggler" run "$fold" --no-output --set step.mode=whole \
  --set step.fold=rails --slow-gpu 9:1.5
# The memoized step runs one pipeline: it ignores step.fold (the same step as without it).
memo=$("$stepsim" run "$fold" --quiet --no-output --set step.mode=memoized 2>&1 | grep -E '^(step time|digest)')
memo_fold=$("$stepsim" run "$fold" --quiet --no-output --set step.mode=memoized --set step.fold=rails 2>&1)
check "memoized: step.fold rails changes nothing ('$memo')" \
  '[[ -n "$memo" && "$(grep -E "^(step time|digest)" <<<"$memo_fold")" == "$memo" ]] && ! grep -q "^rails folded" <<<"$memo_fold"'
expect_error "step.fold rails: a network collective of stage 0 joins GPUs of rails" run "$fold" \
  --no-output --set step.mode=whole --set step.fold=rails --set parallel.tp=4 \
  --set parallel.dp=16 --set parallel.global_batch=32
finish
