#!/usr/bin/env bash
# `stepsim run --set step.mode=whole` (issue 14): the whole step as one simulation.
# - M4-like (tests/data/m4-like.yaml): the data-parallel rings of two pipeline stages cross the
#   same pod's aggregation-core links of a 3-tier fat-tree. Memoized mode runs each stage's
#   reduction alone; the whole step runs them together, and ECMP's collisions cost time that
#   congestion-aware (adaptive) load balancing wins back.
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
out=$("$stepsim" run "$m4" --quiet --no-output 2>&1); memo=$(step_us "$out")
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole 2>&1); whole=$(step_us "$out")
whole_out=$out
out=$("$stepsim" run "$m4" --quiet --no-output --set step.mode=whole --set fabric.lb=adaptive 2>&1)
adaptive=$(step_us "$out")
echo "m4-like: memoized $memo us, whole (ECMP) $whole us, whole (adaptive) $adaptive us"
check "whole step under ECMP loses >= 10% against memoized ($whole vs $memo us)" \
  'awk -v w="$whole" -v m="$memo" "BEGIN { exit !(w >= 1.10 * m) }"'
check "adaptive load balancing wins back >= 75% of the loss ($adaptive us)" \
  'awk -v a="$adaptive" -v w="$whole" -v m="$memo" "BEGIN { exit !(a <= m + 0.25 * (w - m)) }"'
check "whole step: one fabric run, no drops" \
  'grep -q "1 distinct collectives simulated" <<<"$whole_out" && grep -q "^drops  *0$" <<<"$whole_out"'
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
tiny=$workloads/tiny.yaml
out=$("$stepsim" run "$tiny" --quiet --no-output 2>&1); t_memo=$(step_us "$out")
out=$("$stepsim" run "$tiny" --quiet --no-output --set step.mode=whole 2>&1); t_whole=$(step_us "$out")
check "tiny: whole ($t_whole us) within 5% of memoized ($t_memo us), never faster by > 1%" \
  'awk -v w="$t_whole" -v m="$t_memo" "BEGIN { exit !(w <= 1.05 * m && w >= 0.99 * m) }"'
finish
