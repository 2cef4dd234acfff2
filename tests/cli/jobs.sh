#!/usr/bin/env bash
# Two jobs on one fabric (`jobs:`, issue 14; tests/data/two-jobs.yaml): the jobs' data-parallel
# rings cross the same aggregation-core links of a 3-tier fat-tree.
# - Each job's step is no faster than the same job alone (a scenario listing only it: same GPUs,
#   same fabric), and at least one is slower: their traffic shares links.
# - The report lists both jobs (text, JSON, HDF5 /jobs and the job columns).
# - The same digest and per-job step times at 1 and 2 ranks and 1 and 2 threads.
# - --set jobs.NAME.KEY=VALUE changes that job only.
# - Bad `jobs:` input and bad --set jobs.* keys: one message naming the key, exit 2.
set -uo pipefail
stepsim=$1; mpiexec=$2; data=$3; shift 3; mpiflags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
work=$(mktemp -d)
cd "$work" || exit 1
cp "$data/fat-tree-k4-1gpu.yaml" .
both=$work/two-jobs.yaml
cp "$data/two-jobs.yaml" "$both"
# One job alone: the scenario without the other job's entry.
sed '/^  - name: b/,$d' "$both" >alone-a.yaml
awk '/^  - name: a/ { skip = 1; next } /^  - name: / { skip = 0 } !skip' "$both" >alone-b.yaml
us() {  # a simulated time "12.3 ms" or "456 us" (fields $1 $2 of the argument) in microseconds
  awk '{ v = $1; u = $2; if (u == "s" || u == "s,") v *= 1e6; else if (u ~ /^ms/) v *= 1e3; print v }' <<<"$1"
}
job_us() {  # the step time of job $1 in a run's summary $2
  us "$(awk -v j="job $1" 'index($0, j " ") == 1 && /step/ { for (i = 1; i <= NF; ++i) if ($i == "step") { print $(i + 1), $(i + 2); exit } }' <<<"$2")"
}
step_us() {
  us "$(awk '/^step time/ { print $3, $4; exit }' <<<"$1")"
}
out=$("$stepsim" run "$both" --quiet -o both.h5 --json both.json 2>&1); rc=$?
both_out=$out
check "two jobs: exit 0" '[[ $rc -eq 0 ]]'
a2=$(job_us a "$both_out"); b2=$(job_us b "$both_out")
out=$("$stepsim" run alone-a.yaml --quiet --no-output 2>&1); a1=$(job_us a "$out")
out=$("$stepsim" run alone-b.yaml --quiet --no-output 2>&1); b1=$(job_us b "$out")
echo "job a: alone $a1 us, together $a2 us; job b: alone $b1 us, together $b2 us"
check "job a is no faster together ($a2 us) than alone ($a1 us)" \
  'awk -v t="$a2" -v a="$a1" "BEGIN { exit !(a > 0 && t >= a) }"'
check "job b is no faster together ($b2 us) than alone ($b1 us)" \
  'awk -v t="$b2" -v a="$b1" "BEGIN { exit !(a > 0 && t >= a) }"'
check "sharing the links costs at least one job >= 5%" \
  'awk -v a2="$a2" -v a1="$a1" -v b2="$b2" -v b1="$b1" "BEGIN { exit !(a2 >= 1.05 * a1 || b2 >= 1.05 * b1) }"'
st=$(step_us "$both_out")
check "the run's step time is the later job's ($st us)" \
  'awk -v s="$st" -v a="$a2" -v b="$b2" "BEGIN { m = a > b ? a : b; exit !(s == m) }"'
out=$both_out
check "the summary lists both jobs with MFU" \
  '[[ $(grep -cE "^job (a|b) +step .* MFU [0-9.]+ %" <<<"$both_out") -eq 2 ]] && grep -q "^# job b: m4-small on GPUs 2-3,6-7,10-11,14-15" <<<"$both_out"'
out=$(/usr/bin/python3 - both.h5 both.json <<'PY'
import json, sys
import h5py
f = h5py.File(sys.argv[1], "r")
j = json.load(open(sys.argv[2]))
bad = []
if f["meta"].attrs["schema_version"] != 3:
    bad.append("schema version %s" % f["meta"].attrs["schema_version"])
jobs = f["jobs"][:]
names = [n.decode() for n in jobs["name"]]
if names != ["a", "b"] or [x["name"] for x in j["jobs"]] != ["a", "b"]:
    bad.append("jobs %s / %s" % (names, [x["name"] for x in j["jobs"]]))
for row, x in zip(jobs, j["jobs"]):
    if abs(row["step_s"] - x["step_s"]) > 1e-15 or not (0 < row["mfu"] < 1):
        bad.append("job %s: /jobs %s vs json %s" % (x["name"], row["step_s"], x["step_s"]))
fl, co, ops = f["flows"][:], f["collectives"][:], f["ops"][:]
for k, gpus in ((0, {0, 1, 4, 5, 8, 9, 12, 13}), (1, {2, 3, 6, 7, 10, 11, 14, 15})):
    mine = fl[fl["job"] == k]
    if len(mine) == 0:
        bad.append("no flows of job %d" % k)
    if not set(mine["src_gpu"]) <= gpus or not set(mine["dst_gpu"]) <= gpus:
        bad.append("job %d: flows leave its GPUs" % k)
    if not set(ops["gpu"][ops["job"] == k]) <= gpus:
        bad.append("job %d: ops on another job's GPU" % k)
if set(co["job"]) != {0, 1} or (co["id"] != range(len(co))).any():
    bad.append("collectives: jobs %s, ids not row numbers" % set(co["job"]))
elif (co["job"][fl["collective"]] != fl["job"]).any():
    bad.append("a flow's job is not its collective's")
if (fl["end_ps"] > j["step_s"] * 1e12 + 1e7).any():
    bad.append("a flow after the step")
print("ok" if not bad else "; ".join(bad))
PY
)
check "HDF5 and JSON: $out" '[[ "$out" == ok ]]'
out=$("$here/../../postproc/stepsim-post" report both.h5 2>&1)
check "stepsim-post report lists each job's step and MFU" \
  '[[ $(grep -cE "^job (a|b) (step time|MFU) " <<<"$out") -eq 4 ]]'
# The same at 2 ranks: digest and each job's step.
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$both" --quiet --no-output 2>&1)
pick() { grep -E '^(step time|job |digest)' <<<"$1" | tr -s ' '; }
check "1 and 2 ranks: the same digest and job lines" '[[ -n "$(pick "$out")" && "$(pick "$out")" == "$(pick "$both_out")" ]]'
out=$("$stepsim" run "$both" --quiet --no-output --threads 2 2>&1)
check "1 and 2 threads: the same digest and job lines" '[[ -n "$(pick "$out")" && "$(pick "$out")" == "$(pick "$both_out")" ]]'
# --set one job's keys (jobs.NAME.KEY): job b on 4 of its GPUs at DP 2 runs 4 micro-batches per
# pipeline instead of 2 (twice the forward passes, each as long, the same model FLOPs); job a's
# keys and its passes are untouched (its step may move: the two jobs share links).
out=$("$stepsim" run "$both" --quiet -o setb.h5 --json setb.json \
  --set jobs.b.gpus=2-3,6-7 --set jobs.b.parallel.dp=2 2>&1); rc=$?
check "--set jobs.b.*: exit 0, job b on GPUs 2-3,6-7 at DP 2" \
  '[[ $rc -eq 0 ]] && grep -q "^# job b: m4-small on GPUs 2-3,6-7 (4 GPUs; TP 1, PP 2 x 1, CP 1, EP 1, DP 2)" <<<"$out"'
check "--set jobs.b.*: job a's heading is the same as without it" \
  '[[ -n "$(grep "^# job a:" <<<"$out")" && "$(grep "^# job a:" <<<"$out")" == "$(grep "^# job a:" <<<"$both_out")" ]]'
out=$(/usr/bin/python3 - both.h5 setb.h5 both.json setb.json <<'PY'
import json, sys
import h5py
was, now = (h5py.File(f, "r")["ops"][:] for f in sys.argv[1:3])
jwas, jnow = (json.load(open(f))["jobs"] for f in sys.argv[3:5])
def forward(ops, job, stage):  # the forward passes of a job's stage: count, total time
    f = ops[(ops["job"] == job) & (ops["stage"] == stage) & (ops["kind"] == 0)]
    return len(f), float((f["end_s"] - f["start_s"]).sum())
bad = []
for st in (0, 1):
    (na0, ta0), (na1, ta1) = forward(was, 0, st), forward(now, 0, st)
    (nb0, tb0), (nb1, tb1) = forward(was, 1, st), forward(now, 1, st)
    if na1 != na0 or abs(ta1 - ta0) > 1e-12 * max(ta0, 1):
        bad.append("job a stage %d: %d passes %g s -> %d passes %g s" % (st, na0, ta0, na1, ta1))
    if nb0 == 0 or nb1 != 2 * nb0 or abs(tb1 - 2 * tb0) > 1e-9 * tb0 + 1e-12:
        bad.append("job b stage %d: %d passes %g s -> %d passes %g s" % (st, nb0, tb0, nb1, tb1))
for k in ("gpu_count", "gpus", "model_flops"):
    if jnow[0][k] != jwas[0][k]:
        bad.append("job a's %s moved: %s -> %s" % (k, jwas[0][k], jnow[0][k]))
if (jnow[1]["gpu_count"], jnow[1]["gpus"]) != (4, "2-3,6-7") or jnow[1]["model_flops"] != jwas[1]["model_flops"]:
    bad.append("job b: %s" % jnow[1])
print("ok" if not bad else "; ".join(bad))
PY
)
check "--set jobs.b.*: job b's forward passes double, job a's stay: $out" '[[ "$out" == ok ]]'
expect_error "--set jobs.c.parallel.dp: no job 'c' (jobs: a, b; or by index, 0..1)" \
  run "$both" --no-output --set jobs.c.parallel.dp=2
expect_error "--set jobs.b.parallel.tq: unknown key (allowed: parallel.tp, parallel.pp" \
  run "$both" --no-output --set jobs.b.parallel.tq=2
expect_error "--set jobs.b.fabric.lb: not a job key (allowed: name, gpus, model.*, parallel.*, compute.*" \
  run "$both" --no-output --set jobs.b.fabric.lb=spray
expect_error "--set jobs.b.parallel.dp: 'two' is not a number (allowed: 0..16777216)" \
  run "$both" --no-output --set jobs.b.parallel.dp=two
expect_error "--set jobs.b.gpus: '2-x' is not a list of GPU ranges" \
  run "$both" --no-output --set jobs.b.gpus=2-x
# By index, as messages name a job: DP 2 on job b's 8 GPUs does not add up.
expect_error "jobs[1] (b): parallel.gpus must equal tp x pp x cp x dp" \
  run "$both" --no-output --set jobs.1.parallel.dp=2
expect_error "jobs[1] (b): parallel.gpus must equal tp x pp x cp x dp" \
  run "$both" --no-output --set 'jobs[1].parallel.dp=2'
# Bad input: one message naming the key, exit 2.
bad() {  # bad NAME SED-EXPRESSION: a copy of the scenario edited by sed
  sed "$2" "$both" >"$1.yaml"
}
bad overlap 's/gpus: 2-3,6-7/gpus: 1-3,6-7/'
expect_error "jobs[1].gpus (1-3,6-7,10-11,14-15) overlaps jobs[0].gpus at GPU 1" run overlap.yaml --no-output
bad beyond 's/gpus: 2-3,6-7,10-11,14-15/gpus: 2-3,6-7,10-11,14-16/'
expect_error "jobs[1].gpus (2-3,6-7,10-11,14-16): GPU 16 is beyond" run beyond.yaml --no-output
bad missing '/gpus: 2-3/d'
expect_error "jobs[1].gpus: missing" run missing.yaml --no-output
bad unknown 's/^    model:$/    fabric:/'
expect_error "jobs[1].fabric: not a job key (allowed: name, gpus, model, parallel, compute" run unknown.yaml --no-output
bad syntax 's/gpus: 0-1,4-5/gpus: 0-1,x/'
expect_error "jobs[0].gpus: '0-1,x,8-9,12-13' is not a list of GPU ranges" run syntax.yaml --no-output
expect_error "jobs: several jobs share the fabric only in the whole step, at packet or cell fidelity (this run: step.mode memoized, fidelity cell" \
  run "$both" --no-output --set step.mode=memoized
expect_error "jobs: several jobs share the fabric only in the whole step, at packet or cell fidelity (this run: step.mode auto, fidelity ideal" \
  run "$both" --no-output --set step.mode=auto --fidelity ideal
expect_error "jobs[0] (a): parallel.tp (4) must divide" run "$both" --no-output --set parallel.tp=4
# Jobs of different TP on 8-GPU servers: the narrow job's data-parallel pair sits in one server
# (folded, costed with its own TP copies); a job must take whole servers.
cat >het.yaml <<YAML
model: {name: tiny-gpt, layers: 4, hidden: 512, heads: 8, ffn: 2048, vocab: 32000, seq_len: 1024}
parallel: {tp: 8, pp: 1, micro_batch: 1, global_batch: 8}
topology: $here/../../topologies/toy-2server.yaml
fidelity: packet
step: {mode: whole}
jobs:
  - {name: wide, gpus: 0-7}
  - {name: narrow, gpus: 8-15, parallel: {tp: 4}}
YAML
out=$("$stepsim" run het.yaml --quiet --no-output 2>&1); rc=$?
check "TP 8 and TP 4 jobs side by side (exit $rc)" \
  '[[ $rc -eq 0 ]] && grep -q "^# job narrow: tiny-gpt on GPUs 8-15 (8 GPUs; TP 4, PP 1 x 1, CP 1, EP 1, DP 2)" <<<"$out" && grep -qE "^job narrow +step" <<<"$out"'
sed 's/gpus: 0-7}/gpus: 0-3}/; s/gpus: 8-15,/gpus: 4-11,/' het.yaml >part.yaml
expect_error "jobs[0].gpus (0-3) takes 4 of the 8 GPUs of a server: a job takes whole servers" run part.yaml --no-output
finish
