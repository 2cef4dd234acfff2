#!/usr/bin/env bash
# `stepsim run`'s progress lines in a batch log (stderr to a file): the estimate named as the
# ideal-fidelity step time, lines with the simulated time, its share of the estimate, passes,
# wall time and an ETA, a last "done"/"stopped" line; rank 0 only; nothing with --quiet; stdout
# the same with and without them. No timing assertions: the long run is stopped once it has
# printed a line, however long that takes.
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
tiny=$workloads/tiny.yaml

# The step time in a summary on stdout ("2.186 ms", "9.0008 s").
step_time() { sed -n 's/^step time  *//p' "$1"; }
"$stepsim" run "$tiny" --no-output --quiet --fidelity ideal >ideal.txt 2>&1
ideal=$(step_time ideal.txt)
"$stepsim" run "$workloads/gpt3-175b.yaml" --no-output --quiet --fidelity ideal >ideal_gpt3.txt 2>&1
ideal_gpt3=$(step_time ideal_gpt3.txt)
out="tiny $ideal, gpt3-175b $ideal_gpt3"
check "ideal step times read" '[[ -n "$ideal" && -n "$ideal_gpt3" ]]'

# A line per report (--progress 0) on the tiny memoized step at packet fidelity (its lines count
# passes; the whole step's count the network's work, src/cli/work_curve.hpp).
memo=(--set step.mode=memoized)
"$stepsim" run "$tiny" --no-output "${memo[@]}" --progress 0 >out.txt 2>err.txt; rc=$?
packet=$(step_time out.txt)
out=$(cat err.txt)
check "exit 0" '[[ $rc -eq 0 ]]'
check "the estimate is named as the ideal-fidelity step time" \
  'grep -q "^progress: the ETA counts simulated time against an estimate of the step, its time at ideal fidelity: $ideal" err.txt'
check "lines with sim, share of the estimate, passes, wall, ETA" \
  '[[ $(grep -cE "^progress: sim [0-9.]+ [mu]?s, [0-9.]+% of the estimate $ideal; passes [0-9]+/16; .*wall [^;]+; ETA " err.txt) -ge 2 ]]'
check "never ETA 0 s" '! grep -q "ETA 0 s" err.txt'
check "a last line: done, the step against the estimate" \
  '[[ $(tail -n 1 err.txt) == "progress: done: sim $packet, "[0-9.]*" x the estimate $ideal; wall "* ]]'
# stdout is the summary other tools parse: the same as a --quiet run's (but the wall times:
# the engine line and the partition line's synchronisation time).
"$stepsim" run "$tiny" --no-output "${memo[@]}" --quiet >quiet.txt 2>quiet_err.txt
out=$(cat quiet_err.txt)
check "--quiet: no progress lines" '! grep -q "progress" quiet_err.txt'
out=$(diff <(grep -vE "^# (engine:|partition )" out.txt) <(grep -vE "^# (engine:|partition )" quiet.txt))
check "stdout unchanged by the progress lines" '[[ -z "$out" ]]'

# Two ranks: rank 0 alone prints.
"$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$tiny" --no-output "${memo[@]}" --progress 0 >/dev/null 2>err2.txt
out=$(cat err2.txt)
check "2 ranks: one start line, one last line" \
  '[[ $(grep -c "^progress: the ETA" err2.txt) -eq 1 && $(grep -c "^progress: done" err2.txt) -eq 1 ]]'

# Ideal fidelity: the step is its own estimate.
"$stepsim" run "$tiny" --no-output --fidelity ideal --progress 0 >/dev/null 2>err3.txt
out=$(cat err3.txt)
check "ideal: done at 1.000 x the estimate" 'grep -q "^progress: done: sim $ideal, 1.000 x the estimate $ideal" err3.txt'

# A long packet run with a short interval: lines come while it runs (stopped by SIGTERM once
# one did), then the last line says "stopped".
"$stepsim" run "$workloads/gpt3-175b.yaml" --no-output "${memo[@]}" --progress 0.2 >long_out.txt 2>long.txt &
pid=$!
for _ in $(seq 1 1200); do
  grep -q "^progress: sim .*% of the estimate $ideal_gpt3; passes .*; wall .*; ETA " long.txt && break
  sleep 0.5
done
kill -TERM "$pid"
wait "$pid"; rc=$?
out=$(cat long.txt)
check "long run: SIGTERM exit 143" '[[ $rc -eq 143 ]]'
check "long run: a progress line while running" 'grep -q "^progress: sim .*% of the estimate $ideal_gpt3; passes .*; wall .*; ETA " long.txt'
check "long run: the last line says stopped" 'grep -q "^progress: stopped: sim " long.txt'
check "long run: a line every 200 ms announced" 'grep -q "a line every 0.2 s (--progress)" long.txt'

expect_error "--progress: Value -1 not in range" run "$tiny" --progress -1
finish
