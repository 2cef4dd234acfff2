#!/usr/bin/env bash
# `stepsim bench nccl`: nccl-tests' columns, the same rows and digest at 1, 2 and 4 ranks and 1
# and 2 threads, busbw = algbw x 2(n-1)/n for AllReduce, nccl-tests' flags, sizes and output as
# its parsers read it (tests/cli/nccl_tests_parse.py), and bad options are user errors (exit 2,
# one message).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
topo=$topologies/toy-2server.yaml
args=(bench nccl allreduce -b 64KiB -e 4MiB -f 8 --gpus 16 --topology "$topo" --quiet)
summary() { echo "$(grep -E '^ +[0-9]+ ' <<<"$out" | tr -s ' ') $(grep '^# digest' <<<"$out")"; }
run_matrix summary -- "${args[@]}"
check "three rows and a digest" '[[ $(grep -cE "^ +[0-9]+ " <<<"$out") -eq 3 && "$reference" == *digest* ]]'
# busbw = algbw x 2 x 15 / 16 (rows with algbw > 10 GB/s: enough printed digits).
check "busbw is algbw x 2(n-1)/n" 'awk '"'"'/^ +[0-9]+ / { if ($7 > 10 && ($8 / $7 < 1.870 || $8 / $7 > 1.880)) bad = 1 } END { exit bad }'"'"' <<<"$out"'
# nccl-tests' size suffixes (1M = 1048576) and SHARP's rows; its busbw beats the ring's here.
out=$("$stepsim" bench nccl allreduce -b 1M -e 4M -f 4 --gpus 16 --algo sharp --topology "$topo" --quiet 2>&1)
check "sharp: rows for 1M and 4M" '[[ $(grep -cE "^ +(1048576|4194304) " <<<"$out") -eq 2 ]]'
ring=$("$stepsim" bench nccl allreduce -b 4M -e 4M --gpus 16 --algo ring --proto simple --topology "$topo" --quiet 2>&1)
check "sharp's 4M busbw above the ring's" '[[ $(awk "/^ +4194304 /{print \$8}" <<<"$out" | cut -d. -f1) -gt $(awk "/^ +4194304 /{print \$8}" <<<"$ring" | cut -d. -f1) ]]'
# The algorithms' registry: every algorithm with its description and what it supports.
out=$("$stepsim" list algorithms 2>&1)
for want in "ring (selected by ring)" "chain (selected by ring)" "pairwise (selected by ring)" \
    "tree (selected by tree)" "nvls (selected by nvls)" "sharp (selected by sharp)" \
    "nvls_tree (selected by nvls_tree)" "nvls_sharp (selected by nvls_sharp)" \
    "servers one server; protocols simple; needs NVLS" "needs SHARP switches"; do
  check "list algorithms: '$want'" 'grep -qF "$want" <<<"$out"'
done
expect_error "--gpus 64: the topology has 16 GPUs (allowed: 1..16)" \
  bench nccl allreduce --topology "$topo" --gpus 64
expect_error "--gpus 12 must be a multiple of the 8 GPUs per server" \
  bench nccl allreduce --topology "$topo" --gpus 12
expect_error "--algo: coll.algorithm: 'collnet' is not allowed (allowed: ring, tree, nvls, nvls_tree, sharp, nvls_sharp, auto)" \
  bench nccl allreduce --topology "$topo" --algo collnet
expect_error "coll.algorithm: sharp needs whole servers, at least two" \
  bench nccl allreduce --topology "$topo" --gpus 8 --algo sharp
expect_error "--gpu: gpu.model: unknown GPU 'v100' (allowed: a100, h100, h800, h200, b200, b300, gb200, gb300)" \
  bench nccl allreduce --topology "$topo" --gpu v100
expect_error "coll.algorithm: nvls needs NVLink SHARP, which a100 does not have" \
  bench nccl allreduce --topology "$topo" --gpus 8 --gpu a100 --algo nvls
expect_error "coll.algorithm: nvls needs the GPUs in one server" \
  bench nccl allreduce --topology "$topo" --gpus 16 --algo nvls
expect_error "coll.algorithm: tree is for allreduce only (allowed for alltoall: ring)" \
  bench nccl alltoall --topology "$topo" --algo tree
expect_error "--set coll.chunk: '1' is out of range" \
  bench nccl allreduce --topology "$topo" --set coll.chunk=1
expect_error "--set fabric.ecn_pmax: '2' is out of range (0..1)" \
  bench nccl allreduce --topology "$topo" --set fabric.ecn_pmax=2
expect_error "PFC needs xon < xoff (got 200000B, 150000B)" \
  bench nccl allreduce --topology "$topo" --set fabric.pfc_xon=200KB
expect_error "--root 16 is not a rank (0..15)" bench nccl broadcast --topology "$topo" --gpus 16 --root 16
expect_error "--cell: fabric.cell: '1KiB' is out of range (from the mtu, 4KiB, to 4MiB)" \
  bench nccl allreduce --topology "$topo" --fidelity cell --cell 1KiB
expect_error "--partition: unknown partitioner 'scotch' (allowed: block, cyclic, metis, spread)" \
  bench nccl allreduce --topology "$topo" --partition scotch
# The three fidelities on one size: cell within 1% of packet, the same at 1 and 2 ranks;
# analytical below both.
size=(-b 16MiB -e 16MiB --gpus 16 --topology "$topo" --quiet)
packet=$("$stepsim" bench nccl allreduce "${size[@]}" 2>&1)
cell=$("$stepsim" bench nccl allreduce "${size[@]}" --fidelity cell 2>&1)
cell2=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" bench nccl allreduce "${size[@]}" --fidelity cell 2>&1)
analytical=$("$stepsim" bench nccl allreduce "${size[@]}" --fidelity analytical 2>&1)
t() { awk '/^ +16777216 /{print $6}' <<<"$1"; }
check "cell fidelity named" 'grep -q "fidelity cell (64KiB cells)" <<<"$cell"'
check "cell within 1% of packet ($(t "$cell") vs $(t "$packet") us)" 'awk -v c="$(t "$cell")" -v p="$(t "$packet")" "BEGIN { exit !(c / p > 0.99 && c / p < 1.01) }"'
check "cell: the same digest at 2 ranks" '[[ "$(grep "^# digest" <<<"$cell")" == "$(grep "^# digest" <<<"$cell2")" ]]'
check "cell: fewer events than packet" '[[ $(awk "/^# engine/{print \$7}" <<<"$cell") -lt $(awk "/^# engine/{print \$7}" <<<"$packet") ]]'
check "cell at 2 ranks: the partition line" 'grep -qE "^# partition metis: [0-9.]+% of the traffic crosses ranks, imbalance" <<<"$cell2"'
check "analytical below packet ($(t "$analytical") vs $(t "$packet") us)" 'awk -v a="$(t "$analytical")" -v p="$(t "$packet")" "BEGIN { exit !(a <= p) }"'
# nccl-tests' conventions, read as its parsers read them (analytical fidelity: no engine run).
parse=$(dirname "$0")/nccl_tests_parse.py
fast=(--topology "$topo" --fidelity analytical --quiet)
out=$("$stepsim" bench nccl allreduce -b 1M -e 16M -f 2 --gpus 16 "${fast[@]}" 2>&1)
check "parser: 5 rows, 13 columns, in-place = out-of-place, closing lines" '/usr/bin/python3 "$parse" --rows 5 <<<"$out"'
check "every non-table line starts with #" '[[ $(grep -vcE "^#|^ +[0-9]+ " <<<"$out") -eq 0 ]]'
check "the digest is a comment line" 'grep -qE "^# digest +[0-9a-f]{16}$" <<<"$out"'
check "the preamble names the GPUs" '[[ $(grep -c "^#  Rank" <<<"$out") -eq 16 ]] && grep -q "^# nThread 1 nGpus 16 minBytes 1048576 maxBytes 16777216 step: 2(factor) warmup iters: 0 iters: 1 agg iters: 1" <<<"$out"'
out=$("$stepsim" bench nccl allreduce "${fast[@]}" 2>&1)
check "default sizes: one row of 32M (33554432)" '/usr/bin/python3 "$parse" --rows 1 --sizes 33554432 <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1M -e 4M -i 1M "${fast[@]}" 2>&1)
check "-i: linear steps of 1M" '/usr/bin/python3 "$parse" --sizes 1048576,2097152,3145728,4194304 <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1G -e 1G "${fast[@]}" 2>&1)
check "1G is 1 GiB" '/usr/bin/python3 "$parse" --sizes 1073741824 <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1GB -e 1GB "${fast[@]}" 2>&1)
check "1GB is 10^9 bytes" '/usr/bin/python3 "$parse" --sizes 1000000000 <<<"$out"'
out=$("$stepsim" bench nccl allgather -b 1M -e 1M "${fast[@]}" 2>&1)
check "allgather: per-rank count 16384, redop none, root -1" '/usr/bin/python3 "$parse" --sizes 1048576 --count 16384 --type float --redop none --root -1 <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M -d double -o max "${fast[@]}" 2>&1)
check "-d double -o max: count 131072, type double, redop max" '/usr/bin/python3 "$parse" --count 131072 --type double --redop max <<<"$out"'
out=$("$stepsim" bench nccl broadcast -b 1M -e 1M -d half -r 3 "${fast[@]}" 2>&1)
check "broadcast -d half -r 3: count 524288, root 3" '/usr/bin/python3 "$parse" --count 524288 --type half --redop none --root 3 <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M -c 0 "${fast[@]}" 2>&1)
check "-c 0: #wrong N/A" '/usr/bin/python3 "$parse" --wrong N/A <<<"$out"'
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M -g 8 --topology "$topo" --fidelity analytical --quiet 2>&1)
check "-g 8: 8 GPUs" '[[ $(grep -c "^#  Rank" <<<"$out") -eq 8 ]]'
json=$(mktemp --suffix=.json)
"$stepsim" bench nccl allreduce -b 1M -e 2M -f 2 -n 7 -w 3 -J "$json" "${fast[@]}" >/dev/null 2>&1
check "-J writes the JSON (rows, iters)" '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert len(j[\"rows\"]) == 2 and j[\"iters\"] == 7 and j[\"warmup_iters\"] == 3" "$json"'
rm -f "$json"
# -n/-w/-m: warm-up and timed iterations back to back in one run, state carried. One iteration
# that way is exactly the default run; -w 1 -n 3 spans at least 4 single iterations, and on the
# idle fabric its average busbw is within 2% of the single run's; -n 2 -m 2 times the same run
# as -n 4; -a orders min <= average <= max; the same rows and digest at 1 rank and 2 ranks x 2
# threads.
it=(bench nccl allreduce -b 4M -e 4M --gpus 16 --algo ring --proto simple --topology "$topo" --quiet)
rows() { grep -E '^ +[0-9]+ |^# digest' <<<"$1" | tr -s ' '; }
single=$("$stepsim" "${it[@]}" 2>&1)
one=$("$stepsim" "${it[@]}" -n 1 -w 0 2>&1)
check "-n 1 -w 0 is the default run: '$(rows "$one")'" '[[ "$(rows "$one")" == "$(rows "$single")" ]]'
json=$(mktemp --suffix=.json)
four=$("$stepsim" "${it[@]}" -w 1 -n 3 -J "$json" 2>&1)
ts=$(awk '/^ +4194304 /{print $6}' <<<"$single"); t4=$(awk '/^ +4194304 /{print $6}' <<<"$four")
b1=$(awk '/^ +4194304 /{print $8}' <<<"$single"); b4=$(awk '/^ +4194304 /{print $8}' <<<"$four")
check "-w 1 -n 3: 4 iterations, the last ends after 4 x $ts us less 1%" '/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"rows\"][0]; assert r[\"simulated_iterations\"] == 4 and r[\"end_ps\"] >= 4 * float(sys.argv[2]) * 1e6 * 0.99 and r[\"timed_start_ps\"] > 0" "$json" "$ts"'
check "-w 1 -n 3: busbw $b4 within 2% of the single run's $b1" 'awk -v a="$b4" -v b="$b1" "BEGIN { exit !(a / b > 0.98 && a / b < 1.02) }"'
check "-w 1 -n 3: the iterations line" 'grep -q "^# iterations: 1 warm-up + 3 x 1 timed per size" <<<"$four"'
rm -f "$json"
n4=$("$stepsim" "${it[@]}" -w 0 -n 4 2>&1)
m2=$("$stepsim" "${it[@]}" -w 0 -n 2 -m 2 2>&1)
check "-n 2 -m 2: the time of -n 4" '[[ "$(rows "$m2")" == "$(rows "$n4")" ]]'
amin=$(awk '/^ +4194304 /{print $6}' <<<"$("$stepsim" "${it[@]}" -w 1 -n 2 -a 2 2>&1)")
aavg=$(awk '/^ +4194304 /{print $6}' <<<"$("$stepsim" "${it[@]}" -w 1 -n 2 -a 1 2>&1)")
amax=$(awk '/^ +4194304 /{print $6}' <<<"$("$stepsim" "${it[@]}" -w 1 -n 2 -a 3 2>&1)")
check "-a: min $amin <= average $aavg <= max $amax" 'awk -v a="$amin" -v b="$aavg" -v c="$amax" "BEGIN { exit !(a <= b && b <= c && a < c) }"'
r1=$("$stepsim" "${it[@]}" -w 1 -n 2 2>&1)
r2=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${it[@]}" -w 1 -n 2 --threads 2 2>&1)
check "-w 1 -n 2: the same at 2 ranks x 2 threads" '[[ "$(rows "$r2")" == "$(rows "$r1")" && -n "$(rows "$r1")" ]]'
expect_error "coll.algorithm: sharp runs one iteration only" \
  bench nccl allreduce --topology "$topo" --gpus 16 --algo sharp -n 2
expect_error "--iters/--warmup_iters/--agg_iters: 10005 iterations per size (allowed: -w + -n x -m up to 10000)" \
  bench nccl allreduce --topology "$topo" -n 10000
expect_error "--datatype: 'fp128' is not a type (allowed: int8" bench nccl allreduce --topology "$topo" -d fp128
expect_error "--op: 'xor' is not an op (allowed: sum, prod, max, min, avg, mulsum or all)" bench nccl allreduce --topology "$topo" -o xor
expect_error "--maxbytes: '9999999999G' is out of range" bench nccl allreduce --topology "$topo" -e 9999999999G
expect_error "--minbytes/--maxbytes: need minbytes <= maxbytes" bench nccl allreduce --topology "$topo" -b 2M -e 1M
expect_error "--minbytes/--maxbytes/--stepbytes: 8388607 sizes (allowed: up to 100000)" bench nccl allreduce --topology "$topo" -b 1 -e 8M -i 1
finish
