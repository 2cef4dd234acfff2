#!/usr/bin/env bash
# The step's HDF5 file: the same datasets at 1, 2 and 4 ranks, a round trip through
# postproc/stepsim-post (report shows what stepsim printed; compare; plots), the trace file, and
# postproc's errors (exit 2).
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; post=$4; shift 4; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tiny=$workloads/tiny.yaml
for ranks in 1 2 4; do
  out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet -o "$dir/r$ranks.h5" 2>&1)
  [[ $ranks == 1 ]] && printed=$(awk '/^step time/ {print $3, $4}' <<<"$out")
done
for ranks in 2 4; do
  for d in /ops /collectives /flows /links; do
    check "$d at $ranks ranks = 1 rank" 'h5diff -q "$dir/r1.h5" "$dir/r$ranks.h5" $d $d'
  done
done
check "ranks recorded in /meta" '[[ $(h5dump -a /meta/ranks "$dir/r4.h5" | grep -c "(0): 4") -eq 1 ]]'
out=$("$post" report "$dir/r1.h5" 2>&1)
check "report: the step time stepsim printed ($printed)" 'grep -qE "^step time +$printed" <<<"$out"'
check "report: busbw per group" 'grep -q "^busbw dp" <<<"$out" && grep -q "^busbw tp" <<<"$out"'
"$stepsim" run "$tiny" --quiet --fidelity ideal -o "$dir/ideal.h5" --trace "$dir/trace.json" >/dev/null 2>&1
out=$("$post" compare "$dir/r1.h5" "$dir/ideal.h5" --markdown 2>&1)
check "compare: both fidelities side by side" 'grep -q "| fidelity | packet | ideal |" <<<"$out" && grep -q "step time B / A" <<<"$out"'
out=$("$post" plot "$dir/r1.h5" -o "$dir/plots" 2>&1)
check "plot: four PNG files" '[[ $(ls "$dir"/plots/*.png 2>/dev/null | wc -l) -eq 4 ]]'
check "trace: Chrome trace events" '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); e=j[\"traceEvents\"]; assert len(e) > 10 and all(x[\"ph\"] == \"X\" for x in e)" "$dir/trace.json"'
"$post" report "$dir/missing.h5" >/dev/null 2>"$dir/err"; rc=$?
check "report of a missing file: exit 2, one message" '[[ $rc -eq 2 && $(grep -c "stepsim-post: error: .*missing.h5: no such file" "$dir/err") -eq 1 ]]'
echo "not hdf5" >"$dir/bad.h5"
"$post" report "$dir/bad.h5" >/dev/null 2>"$dir/err"; rc=$?
check "report of a non-HDF5 file: exit 2" '[[ $rc -eq 2 ]] && grep -q "not an HDF5 file" "$dir/err"'
# The Slurm sweep, run locally: results, the comparison, and a bad variant's exit code.
root=$(cd "$workloads/.." && pwd)
printf 'baseline\npp4 parallel.pp=4 parallel.dp=1 parallel.global_batch=8\n' >"$dir/variants.txt"
SCENARIO=workloads/tiny.yaml VARIANTS=$dir/variants.txt RESULTS=$dir/sweep EXTRA="--fidelity ideal" \
  STEPSIM=$stepsim bash "$root/jobs/run_sweep_locally.sh" >/dev/null 2>&1; rc=$?
check "local sweep: exit 0 and a comparison" '[[ $rc -eq 0 ]] && grep -q "^## pp4" "$dir/sweep/compare.md" && grep -q "| step time |" "$dir/sweep/compare.md"'
printf 'baseline\nbad parallel.tp=3\n' >"$dir/bad.txt"
SCENARIO=workloads/tiny.yaml VARIANTS=$dir/bad.txt RESULTS=$dir/sweep2 EXTRA="--fidelity ideal" \
  STEPSIM=$stepsim bash "$root/jobs/run_sweep_locally.sh" >/dev/null 2>&1; rc=$?
check "local sweep: a bad variant exits 2" '[[ $rc -eq 2 ]]'
finish
