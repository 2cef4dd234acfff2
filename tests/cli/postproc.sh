#!/usr/bin/env bash
# The step's HDF5 file: the same datasets at 1, 2 and 4 ranks, a round trip through
# postproc/stepsim-post (report shows what stepsim printed, tokens/s, FCT, ECN, retransmissions
# and --set; compare with B / A per row; plots checked by tests/cli/postproc_plots.py, also on a
# compute-bound GPT-3 step at analytical fidelity), the Perfetto trace (names, args, every
# group's collectives), and postproc's errors on broken files and outputs (exit 2, one message).
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
check "report: tokens/s, FCT, ECN, retransmissions, overrides" 'grep -qE "^tokens/s \(cluster\) +[0-9,]+$" <<<"$out" && grep -qE "^tokens/s per GPU +[0-9.e+]+$" <<<"$out" && grep -qE "^message FCT p50/p99/max +[0-9.]+ / [0-9.]+ / [0-9.]+ us" <<<"$out" && grep -qE "^ECN-marked packets +[0-9,]+ received" <<<"$out" && grep -qE "^retransmitted packets +[0-9,]+$" <<<"$out" && grep -qE "^overrides \(--set\) +none$" <<<"$out"'
"$stepsim" run "$tiny" --quiet --set parallel.global_batch=16 -o "$dir/b16.h5" >/dev/null 2>&1
out=$("$post" compare "$dir/r1.h5" "$dir/b16.h5" 2>&1)
check "compare: the --set override and per-row ratios" 'grep -qE "^overrides \(--set\) +none +parallel.global_batch=16" <<<"$out" && awk "/^step time / { exit !(\$NF + 0 > 1.2) }" <<<"$out" && [[ $(grep -cE " [0-9]+\.[0-9]{4}$" <<<"$out") -ge 8 ]]'
"$stepsim" run "$tiny" --quiet --fidelity ideal -o "$dir/ideal.h5" --trace "$dir/trace.json" >/dev/null 2>&1
out=$("$post" compare "$dir/r1.h5" "$dir/ideal.h5" --markdown 2>&1)
check "compare: both fidelities side by side, B / A per row" 'grep -q "| fidelity | packet | ideal |  |" <<<"$out" && grep -qE "^\| step time \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]\.[0-9]{4} \|$" <<<"$out"'
out=$("$post" plot "$dir/r1.h5" -o "$dir/plots" 2>&1)
check "plot: the four plots of every schema version" '(for k in timeline cct_cdf link_heatmap busbw; do [[ -s $dir/plots/r1_$k.png ]] || exit 1; done)'
# Schema version 2 (issue 14): flow times, and /samples when the run writes them; every kind
# is also checked on synthetic files by postproc_v2.py.
read -r schema samples < <(/usr/bin/python3 -c "import sys, h5py; f = h5py.File(sys.argv[1], 'r'); print(int(f['meta'].attrs['schema_version']), int('samples' in f))" "$dir/r1.h5")
if [[ $schema -ge 2 ]]; then
  out=$("$post" plot "$dir/r1.h5" flow_gantt fct_cdf -o "$dir/plots2" 2>&1)
  check "plot: flow_gantt and fct_cdf of the packet step" '[[ -s $dir/plots2/r1_flow_gantt.png && -s $dir/plots2/r1_fct_cdf.png ]]'
fi
if [[ $samples -eq 1 ]]; then
  out=$("$post" plot "$dir/r1.h5" link_util queue_depth pfc_pause -o "$dir/plots3" 2>&1)
  check "plot: link_util, queue_depth and pfc_pause of the packet step" '[[ $(ls "$dir"/plots3/*.png 2>/dev/null | wc -l) -eq 3 ]]'
fi
postdir=$(dirname "$(readlink -f "$post")")
out=$(/usr/bin/python3 "$(dirname "$0")/postproc_plots.py" "$postdir" "$dir/r1.h5" 2>&1)
check "plots of the packet step: names, units, compute read back, heatmap scale and ports" '[[ -z "$out" ]]'
"$stepsim" run "$workloads/gpt3-175b.yaml" --quiet --fidelity analytical -o "$dir/gpt3.h5" >/dev/null 2>&1
out=$(/usr/bin/python3 "$(dirname "$0")/postproc_plots.py" "$postdir" "$dir/gpt3.h5" --compute-bound 2>&1)
check "plots of compute-bound GPT-3 (analytical): compute drawn as compute, nothing empty" '[[ -z "$out" ]]'
out=$("$post" report "$dir/gpt3.h5" 2>&1)
check "report at analytical fidelity says what is not recorded" 'grep -q "^message FCT p50/p99/max *not recorded at analytical fidelity" <<<"$out"'
# Broken files and outputs: one message, exit 2, no traceback.
broken() {  # NAME PYTHON-MUTATION: a copy of r1.h5 changed by the mutation (f: the h5py file)
  cp "$dir/r1.h5" "$dir/$1.h5"
  /usr/bin/python3 -c "import sys, h5py, numpy as np; f = h5py.File(sys.argv[1], 'r+'); $2; f.close()" "$dir/$1.h5"
}
expect_post_error() {  # MESSAGE ARGS...: stepsim-post ARGS exits 2 with MESSAGE once, no traceback
  local want=$1; shift
  "$post" "$@" >/dev/null 2>"$dir/err"; local rc=$?
  check "stepsim-post $* -> exit $rc: $(head -c 300 "$dir/err")" '[[ $rc -eq 2 && $(grep -cF -- "$want" "$dir/err") -eq 1 && $(wc -l <"$dir/err") -eq 1 ]]'
}
broken utf8 "f['meta'].attrs['model'] = np.bytes_(b'\\xff\\xfeGPT')"
expect_post_error "/meta attribute 'model' is not UTF-8 text" report "$dir/utf8.h5"
broken noattr "del f['meta'].attrs['step_s']"
expect_post_error "/meta lacks attribute(s) step_s" report "$dir/noattr.h5"
broken notable "del f['links']"
expect_post_error "no /links table" plot "$dir/notable.h5" -o "$dir/p2"
broken group "del f['ops']; f.create_group('ops')"
expect_post_error "/ops is a group, not a table" report "$dir/group.h5"
broken column "d = f['collectives'][()]; del f['collectives']; f['collectives'] = d[['stage', 'group']]"
expect_post_error "/collectives lacks column(s) kind, gpus, bytes" compare "$dir/r1.h5" "$dir/column.h5"
broken metads "del f['meta']; f['meta'] = np.zeros(3)"
expect_post_error "/meta is a dataset, not a group" report "$dir/metads.h5"
broken notnum "f['meta'].attrs['step_s'] = 'fast'"
expect_post_error "/meta attribute 'step_s' is not a number" report "$dir/notnum.h5"
expect_post_error "is a directory, not an HDF5 file" report "$dir"
touch "$dir/afile"
expect_post_error "-o $dir/afile: exists and is not a directory" plot "$dir/r1.h5" -o "$dir/afile"
expect_post_error "-o $dir/afile/sub: cannot create the directory" plot "$dir/r1.h5" -o "$dir/afile/sub"
expect_post_error "-o /proc/stepsim-post: cannot create the directory" plot "$dir/r1.h5" -o /proc/stepsim-post
check "trace: names, args, DP and PP collectives" '/usr/bin/python3 "$(dirname "$0")/trace_check.py" "$dir/trace.json"'
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
