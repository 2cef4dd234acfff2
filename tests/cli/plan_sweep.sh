#!/usr/bin/env bash
# Sweeps (`stepsim run` with lists in --set), `stepsim-post compare` of N files and of a sweep's
# CSV, and `stepsim plan` on a case whose best layout is known by hand.
set -uo pipefail
stepsim=$1; mpiexec=$2; workloads=$3; post=$4; shift 4; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
tiny=$workloads/tiny.yaml
py=/usr/bin/python3

# A sweep of 2 x 2 variants: one CSV and one JSON row each, carrying the varied inputs.
out=$("$stepsim" run "$tiny" --fidelity analytical --set parallel.pp=1,2 \
  --set parallel.micro_batch=1,2 --quiet 2>&1)
check "sweep: 4 summaries" '[[ $(grep -c "^step time" <<<"$out") -eq 4 ]]'
check "sweep: default names carry what varies" \
  '[[ -f tiny-pp1-micro_batch1.h5 && -f tiny-pp2-micro_batch2.h5 && ! -e tiny.h5 ]]'
# A single run's default name carries its settings: runs with other settings never overwrite
# each other, and a run with none writes STEM.h5.
mkdir single && pushd single >/dev/null || exit 1
"$stepsim" run "$tiny" --quiet --fidelity analytical --set parallel.pp=1 >/dev/null 2>&1
"$stepsim" run "$tiny" --quiet --fidelity analytical --set parallel.pp=2 >/dev/null 2>&1
"$stepsim" run "$tiny" --quiet >/dev/null 2>&1
check "single run: default names carry the settings" \
  '[[ -f tiny-pp1-fidelity_analytical.h5 && -f tiny-pp2-fidelity_analytical.h5 && -f tiny.h5 ]]'
check "single run: each file holds its own run" \
  '[[ $(h5dump -a /meta/fidelity tiny-pp2-fidelity_analytical.h5 | grep -c "\"analytical\"") -eq 1 &&
     $(h5dump -a /meta/fidelity tiny.h5 | grep -c "\"analytical\"") -eq 0 ]]'
popd >/dev/null || exit 1
out=$($py - <<'PY' 2>&1
import csv, json
rows = list(csv.DictReader(open("tiny-sweep.csv")))
assert len(rows) == 4, len(rows)
seen = {(r["set.parallel.pp"], r["set.parallel.micro_batch"]) for r in rows}
assert seen == {("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")}, seen
for r in rows:  # the varied inputs are the resolved layout's, the outputs differ by layout
    assert r["parallel.pp"] == r["set.parallel.pp"] and r["parallel.micro_batch"] == r["set.parallel.micro_batch"], r
    assert r["fidelity"] == "analytical" and r["topology"] == "toy-2server" and r["gpu"] == "h100", r
    assert "parallel.pp=" + r["parallel.pp"] in r["sets"], r["sets"]
    assert float(r["step_s"]) > 0 and float(r["tokens_per_s_per_gpu"]) > 0
assert len({r["step_s"] for r in rows}) == 4
t = json.load(open("tiny-sweep.json"))
assert t["axes"] == ["parallel.pp", "parallel.micro_batch"] and len(t["variants"]) == 4
assert t["variants"][3]["variant"] == {"parallel.pp": "2", "parallel.micro_batch": "2"}
assert t["variants"][3]["parallel"]["pp"] == 2
print("ok")
PY
)
check "sweep: CSV and JSON rows carry the varied inputs and the outputs" '[[ "$out" == ok ]]'

# --json of a single run: the resolved layout, the topology and the --sets.
"$stepsim" run "$tiny" --fidelity analytical --set parallel.zero=0 --no-output --quiet \
  --json one.json >/dev/null 2>&1
out=$($py -c "import json; j=json.load(open('one.json')); print(j['parallel']['tp'], j['parallel']['dp'], j['parallel']['zero'], j['topology_file'].endswith('toy-2server.yaml'), ' '.join(j['sets']))" 2>&1)
check "run --json: parallel layout, topology file, --sets" \
  '[[ "$out" == "4 2 0 True parallel.zero=0 fidelity=analytical" ]]'

# A job's GPU list keeps its commas (not a sweep); an empty list item is a user error.
expect_error "--set parallel.pp: '1,,2' has an empty item" run "$tiny" --set parallel.pp=1,,2
expect_error "sweep variant pp8: " run "$tiny" --fidelity analytical --set parallel.pp=2,8

# compare of three step files: a column per file and its ratio to the first.
out=$("$post" compare tiny-pp1-micro_batch1.h5 tiny-pp1-micro_batch2.h5 tiny-pp2-micro_batch1.h5 --csv 2>&1)
check "compare: 3 files, 5 columns after the label" \
  '[[ $(head -1 <<<"$out" | tr -cd , | wc -c) -eq 5 ]]'
out=$($py - "$out" <<'PY' 2>&1
import csv, io, sys
rows = {r[0]: r for r in csv.reader(io.StringIO(sys.argv[1]))}
st = rows["step time"]
print("ok" if st[3] and st[5] and abs(float(st[3]) - 1) > 1e-6 else st)
PY
)
check "compare: the step time row has a ratio per variant" '[[ "$out" == ok ]]'
out=$("$post" compare tiny-sweep.csv 2>&1)
check "compare: a sweep's CSV, a column per row" \
  'head -1 <<<"$out" | grep -q "micro_batch=1 pp=1.*micro_batch=2 pp=2"'
out=$("$post" compare tiny-sweep.csv tiny-sweep.csv tiny-sweep.csv 2>&1 | head -1; echo "rc ${PIPESTATUS[0]}")
check "compare: a closed pipe is no traceback" '[[ "$out" != *Traceback* && "$out" == *"rc 0"* ]]'

# plan on one server (8 GPUs of the toy cluster) with a global batch of 8 sequences: by hand,
# data parallelism over all 8 GPUs wins. The tiny model (13 M parameters) fits anywhere; each GPU
# then computes one whole sequence with full-size GEMMs and no communication inside the layers,
# and the one gradient reduction (26 MB on NVLink) overlaps the backward; TP splits the same
# GEMMs into smaller ones and adds collectives per layer, PP adds a bubble ((p - 1) of p + m - 1
# slots idle with m = 8 / DP micro-batches), CP splits attention and adds its exchanges, and any
# recompute adds compute. So: tp1 pp1 cp1 dp8 mb1, recompute none (ZeRO stages tie on time).
out=$("$stepsim" plan "$tiny" --gpus 8 --set parallel.global_batch=8 --confirm none --quiet \
  -o plan8.csv --json plan8.json 2>&1)
check "plan: the best layout by hand is rank 1" \
  'grep -qE "^1 +tp1 pp1 vpp1 cp1 ep1 dp8 mb1 z[0-3] none " <<<"$out"'
out=$($py - <<'PY' 2>&1
import csv, json
rows = list(csv.DictReader(open("plan8.csv")))
ranked = [r for r in rows if r["rank"] != "0"]
assert ranked and all(r["fits"] == "true" for r in ranked)
assert [int(r["rank"]) for r in ranked] == list(range(1, len(ranked) + 1))
steps = [float(r["step_s"]) for r in ranked]
assert steps == sorted(steps), "ranked by tokens/s = by step time at a fixed batch"
assert all(int(r["tp"]) * int(r["pp"]) * int(r["cp"]) * int(r["dp"]) == 8 for r in rows)
j = json.load(open("plan8.json"))
assert j["complete"] and len(j["layouts"]) == len(rows)
print("ok")
PY
)
check "plan: CSV ranked by step time, every layout on 8 GPUs" '[[ "$out" == ok ]]'

# --prune: the same best 5 (the table's rows) with fewer steps computed, the count printed.
full=$("$stepsim" plan "$tiny" --gpus 8 --set parallel.global_batch=8 --confirm none --quiet \
  -o full8.csv 2>&1)
pruned=$("$stepsim" plan "$tiny" --gpus 8 --set parallel.global_batch=8 --confirm none --quiet \
  --prune -o pruned8.csv --json pruned8.json 2>&1)
check "plan --prune: the same best 5 as without" \
  '[[ "$(grep -E "^[1-5] " <<<"$full")" == "$(grep -E "^[1-5] " <<<"$pruned")" ]]'
check "plan --prune: the pruned count in the summary and the JSON" \
  'grep -qE "^pruned +[1-9][0-9]* layouts that fit not scored" <<<"$pruned" && $py -c "import json,sys; j=json.load(open(\"pruned8.json\")); sys.exit(0 if j[\"prune\"] and j[\"pruned\"] > 0 else 1)"'

# Every shipped workload's own layout is in its plan's best 5, or docs/plan.md's section on the
# shipped workloads names the file and says why a better one exists.
why=$(sed -n "/^### Why the shipped workloads' layouts/,/^## /p" "$workloads/../docs/plan.md")
undocumented=()
for w in "$workloads"/*.yaml; do
  name="workloads/$(basename "$w")"
  grep -qF "\`$name\`" <<<"$why" && continue
  own=$("$stepsim" plan "$w" --confirm none --prune --quiet -o "own-$(basename "$w" .yaml).csv" 2>&1 |
    sed -n "s/^scenario's layout .*: rank \([0-9]*\) at analytical fidelity$/\1/p")
  [[ -n "$own" && "$own" -le 5 ]] || undocumented+=("$name")
done
out="not in their plan's best 5 and not in docs/plan.md: ${undocumented[*]:-}"
check "plan: the shipped layouts are in their plan's top 5 or the doc says why" \
  '[[ ${#undocumented[@]} -eq 0 && -n "$why" ]]'

# Layouts too big for the GPU are counted as not fitting: 2 GB of HBM.
out=$("$stepsim" plan "$tiny" --gpus 8 --set parallel.global_batch=8 --set gpu.hbm_bytes=2GB \
  --confirm none --quiet -o small.csv 2>&1)
check "plan: layouts over the HBM are counted with the commonest reason" \
  'grep -qE "^layouts .* [1-9][0-9]* do not fit" <<<"$out" && grep -q "^do not fit  *commonest: the peak stage" <<<"$out"'

# Confirmation at cell fidelity: the top 2 rerun and ranked.
out=$("$stepsim" plan "$tiny" --gpus 8 --set parallel.global_batch=8 --top 2 --confirm cell \
  --quiet -o conf.csv 2>&1)
check "plan: the confirmed table and the ranking comparison" \
  'grep -q "^confirmed  *2 at cell fidelity" <<<"$out" && grep -q "^# confirmed against analytical (cell fidelity)" <<<"$out"'
out=$("$post" plot conf.csv -o . 2>&1)
check "plot plan.csv: the PNG" '[[ -s conf_plan.png ]]'
expect_error "--objective: " plan "$tiny" --objective speed
finish
