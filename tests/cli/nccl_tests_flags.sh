#!/usr/bin/env bash
# `stepsim bench nccl` as nccl-tests users type it: the default is NCCL's tuner (--algo auto
# --proto auto), at 8 B ring/LL (NCCL's tuner prices Simple's base and per-hop latency far above
# LL's) and at 8 GiB in one H100 server NVLS (busbw above the ring's); --algo/--proto and
# NCCL_ALGO / NCCL_PROTO force (one name) or restrict the tuner (a list, or ^ and a list), NCCL's channel, CollNet and NVLS variables are honoured and
# printed as NCCL prints them; nccl-tests' flags -p -G -C -T -N -R -y are accepted with a note,
# -d all / -o all sweep every type and op, the fp8 types, --np counts processes as mpirun -np;
# and what was simulated (-n/-w/-m) is in the header and the JSON. Bad values: exit 2.
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
topo=$topologies/toy-2server.yaml
parse=$(dirname "$0")/nccl_tests_parse.py
row() { awk -v b="$2" '$1 == b { print $'"$3"' }' <<<"$1"; }
q=(--topology "$topo" --quiet)
# The default is the tuner: at 8 B the same row as --algo auto --proto auto, faster than the
# ring with Simple (NCCL's base latency 8.4 us and 14 us per network hop against LL's).
def=$("$stepsim" bench nccl allreduce -b 8 -e 8 --gpus 16 "${q[@]}" 2>&1)
auto=$("$stepsim" bench nccl allreduce -b 8 -e 8 --gpus 16 --algo auto --proto auto "${q[@]}" 2>&1)
simple=$("$stepsim" bench nccl allreduce -b 8 -e 8 --gpus 16 --algo ring --proto simple "${q[@]}" 2>&1)
out=$def
check "default: algo auto, proto auto in the header" 'grep -q "algo auto, proto auto" <<<"$def"'
check "default = --algo auto --proto auto at 8 B" '[[ "$(row "$def" 8 6)" == "$(row "$auto" 8 6)" ]]'
check "8 B: the tuner ($(row "$def" 8 6) us) beats ring/simple ($(row "$simple" 8 6) us) by 2x" \
  'awk -v a="$(row "$def" 8 6)" -v s="$(row "$simple" 8 6)" "BEGIN { exit !(a * 2 < s) }"'
check "8 B: the tuner line names its choice" 'grep -qE "^# tuner: +8 B +[a-z_]+/ll " <<<"$def"'
check "ring/simple forced: no tuner line" '! grep -q "^# tuner:" <<<"$simple"'
# 8 GiB in one server (8 H100s): the tuner picks NVLS, whose busbw is above the ring's.
big=(bench nccl allreduce -b 8G -e 8G -g 8 --quiet)
out=$("$stepsim" "${big[@]}" 2>&1)
ring=$("$stepsim" "${big[@]}" --algo ring --proto simple 2>&1)
check "8 GiB: the tuner chose nvls" 'grep -qE "^# tuner: +8589934592 B +nvls/simple" <<<"$out"'
check "8 GiB: busbw $(row "$out" 8589934592 8) above ring/simple's $(row "$ring" 8589934592 8) x 1.2" \
  'awk -v a="$(row "$out" 8589934592 8)" -v r="$(row "$ring" 8589934592 8)" "BEGIN { exit !(a > 1.2 * r) }"'
# NCCL's environment: NCCL_ALGO/NCCL_PROTO force (the same row as --algo tree --proto simple),
# the channel variables set the channels, every one is printed as NCCL_DEBUG=INFO prints it;
# the command line overrides the environment, with a note.
one=(bench nccl allreduce -b 1M -e 1M --gpus 16 "${q[@]}")
forced=$("$stepsim" "${one[@]}" --algo tree --proto simple --channels 4 2>&1)
out=$(NCCL_ALGO=Tree NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4 \
  NCCL_COLLNET_ENABLE=0 NCCL_NVLS_ENABLE=0 "$stepsim" "${one[@]}" 2>&1)
check "NCCL_ALGO=Tree NCCL_PROTO=Simple: the row of --algo tree --proto simple --channels 4" \
  '[[ "$(row "$out" 1048576 6)" == "$(row "$forced" 1048576 6)" ]] && grep -q "algo tree, proto simple, channels 4," <<<"$out"'
for v in "NCCL_ALGO set by environment to Tree" "NCCL_PROTO set by environment to Simple" \
    "NCCL_MIN_NCHANNELS set by environment to 4" "NCCL_MAX_NCHANNELS set by environment to 4" \
    "NCCL_COLLNET_ENABLE set by environment to 0" "NCCL_NVLS_ENABLE set by environment to 0"; do
  check "'# NCCL INFO $v'" 'grep -qxF "# NCCL INFO $v" <<<"$out"'
done
out=$(NCCL_NCHANNELS=2 "$stepsim" "${one[@]}" 2>&1)
check "NCCL_NCHANNELS=2: channels 2" 'grep -q "channels 2," <<<"$out"'
out=$(NCCL_ALGO=Tree "$stepsim" "${one[@]}" --algo ring 2>&1)
check "--algo ring overrides NCCL_ALGO, with a note" 'grep -q "algo ring," <<<"$out" && grep -q "^# note: --algo overrides NCCL_ALGO" <<<"$out"'
# Lists and exclusions, as NCCL reads them: the tuner chooses among what they leave.
out=$(NCCL_ALGO=^NVLS "$stepsim" "${big[@]}" 2>&1)
check "NCCL_ALGO=^NVLS: the tuner does not choose NVLS at 8 GiB, and says the variable" \
  'grep -qE "^# tuner: +8589934592 B" <<<"$out" && ! grep -qE "^# tuner: .*nvls" <<<"$out" && grep -qxF "# NCCL INFO NCCL_ALGO set by environment to ^NVLS" <<<"$out"'
out=$(NCCL_ALGO=NVLS,Ring "$stepsim" "${big[@]}" 2>&1)
check "NCCL_ALGO=NVLS,Ring: NVLS still chosen at 8 GiB" 'grep -qE "^# tuner: +8589934592 B +nvls/simple" <<<"$out"'
out=$(NCCL_PROTO=^LL "$stepsim" bench nccl allreduce -b 8 -e 8 --gpus 16 "${q[@]}" 2>&1)
check "NCCL_PROTO=^LL: at 8 B the tuner takes another protocol than LL" \
  'grep -qE "^# tuner: +8 B +[a-z_]+/(simple|ll128) " <<<"$out"'
out=$(NCCL_PROTO=LL128,Simple NCCL_ALGO=Ring "$stepsim" bench nccl allreduce -b 8 -e 8 --gpus 16 "${q[@]}" 2>&1)
check "NCCL_ALGO=Ring NCCL_PROTO=LL128,Simple: ring with one of those" \
  'grep -qE "^# tuner: +8 B +ring/(simple|ll128) " <<<"$out"'
out=$(NCCL_NVLS_ENABLE=0 "$stepsim" "${big[@]}" 2>&1)
check "NCCL_NVLS_ENABLE=0: the tuner does not choose NVLS at 8 GiB" 'grep -qE "^# tuner: +8589934592 B" <<<"$out" && ! grep -qE "^# tuner: .*nvls" <<<"$out"'
ag=(bench nccl allgather -b 256M -e 256M --gpus 16 "${q[@]}")
out=$("$stepsim" "${ag[@]}" 2>&1)
check "AllGather 256M: the ring without NCCL_COLLNET_ENABLE" 'grep -qE "^# tuner: +268435456 B +ring/" <<<"$out"'
out=$(NCCL_COLLNET_ENABLE=1 "$stepsim" "${ag[@]}" 2>&1)
check "NCCL_COLLNET_ENABLE=1: SHARP's multicast (toy-2server's switches aggregate)" 'grep -qE "^# tuner: +268435456 B +sharp/simple" <<<"$out"'
# nccl-tests' flags without a model: accepted, one note each; the header says what ran.
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M --fidelity analytical "${q[@]}" -p 1 -G 2 -C 1 -T 60 -N 3 -R 1 -y 1 2>&1); rc=$?
check "-p -G -C -T -N -R -y: exit 0, a row" '[[ $rc -eq 0 ]] && /usr/bin/python3 "$parse" --rows 1 <<<"$out"'
for f in "-p 1:" "-G 2:" "-C 1:" "-T 60:" "-N 3:" "-R 1:" "-y 1:"; do
  check "note for $f" '[[ $(grep -cF -- "# note: $f" <<<"$out") -eq 1 ]]'
done
check "-G 2: graph 2 in nccl-tests' line" 'grep -q "validation: 1 graph: 2$" <<<"$out"'
# -d all x -o all: nccl-tests' 12 types (fp8 included) x 6 ops, each sweep's rows.
out=$("$stepsim" bench nccl allreduce -b 1M -e 2M -f 2 -d all -o all --fidelity analytical "${q[@]}" 2>&1)
check "-d all -o all: 144 rows" '[[ $(grep -cE "^ +[0-9]+ " <<<"$out") -eq 144 ]]'
check "f8e4m3 and f8e5m2: 1-byte elements" '[[ $(awk "\$3 == \"f8e4m3\" && \$1 == 1048576 && \$2 == 1048576" <<<"$out" | wc -l) -eq 6 && $(grep -cE " f8e5m2 +mulsum " <<<"$out") -eq 2 ]]'
out=$("$stepsim" bench nccl allgather -b 1M -e 1M -d f8e5m2 -o all --fidelity analytical "${q[@]}" 2>&1)
check "allgather -o all: one sweep, redop none, count 65536" '/usr/bin/python3 "$parse" --rows 1 --count 65536 --type f8e5m2 --redop none <<<"$out"'
# The multi-process idiom: mpirun -np 16 all_reduce_perf -g 1 is --np 16 -g 1 (16 GPUs); the
# simulation's own MPI ranks do not change the GPUs.
out=$("$stepsim" bench nccl allreduce --np 16 -g 1 --fidelity analytical "${q[@]}" 2>&1)
check "--np 16 -g 1: 16 GPUs, nThread 1 nGpus 1, Pid 15" '[[ $(grep -c "^#  Rank" <<<"$out") -eq 16 ]] && grep -q "^# nThread 1 nGpus 1 " <<<"$out" && grep -q "Rank 15 Group  0 Pid     15" <<<"$out"'
out=$("$stepsim" bench nccl allreduce --np 2 -t 2 -g 2 --fidelity analytical "${q[@]}" 2>&1)
check "--np 2 -t 2 -g 2: 8 GPUs, nThread 2 nGpus 2" '[[ $(grep -c "^#  Rank" <<<"$out") -eq 8 ]] && grep -q "^# nThread 2 nGpus 2 " <<<"$out"'
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" bench nccl allreduce -g 8 --fidelity analytical "${q[@]}" 2>&1)
check "2 MPI ranks, -g 8: 8 GPUs and a note" '[[ $(grep -c "^#  Rank" <<<"$out") -eq 8 ]] && grep -q "^# note: the 2 MPI ranks run the simulation" <<<"$out"'
# What was simulated: without -n/-w/-m one iteration (nccl-tests' line says 0 warm-up, 1
# iteration); with them, those; the JSON says the same.
json=$(mktemp --suffix=.json)
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M --fidelity analytical "${q[@]}" -J "$json" 2>&1)
check "no -n/-w/-m: the header says 1 iteration, no warm-up" 'grep -q "warmup iters: 0 iters: 1 agg iters: 1 " <<<"$out"'
check "no -n/-w/-m: the JSON says 1 iteration" '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert (j[\"iters\"], j[\"warmup_iters\"], j[\"agg_iters\"], j[\"simulated_iterations_per_size\"]) == (1, 0, 1, 1), j" "$json"'
out=$("$stepsim" bench nccl allreduce -b 1M -e 1M --gpus 16 "${q[@]}" -w 2 -n 3 -m 2 -J "$json" 2>&1)
check "-w 2 -n 3 -m 2: the header's line" 'grep -q "warmup iters: 2 iters: 3 agg iters: 2 " <<<"$out"'
check "-w 2 -n 3 -m 2: 8 iterations simulated (JSON)" '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j[\"simulated_iterations_per_size\"] == 8 and j[\"rows\"][0][\"simulated_iterations\"] == 8 and j[\"agg_iters\"] == 2, j" "$json"'
rm -f "$json"
# Bad values: one message, exit 2.
export NCCL_ALGO="allreduce:tree;broadcast:ring"
expect_error "NCCL_ALGO: 'allreduce:tree;broadcast:ring': per-collective algorithms" bench nccl allreduce "${q[@]}"
export NCCL_ALGO=Ring,PAT
expect_error "NCCL_ALGO: 'PAT' in 'Ring,PAT' is not allowed" bench nccl allreduce "${q[@]}"
export NCCL_ALGO=^Ring,Tree,NVLS,NVLSTree,CollNetDirect
expect_error "NCCL_ALGO: '^Ring,Tree,NVLS,NVLSTree,CollNetDirect' leaves the tuner nothing to choose" bench nccl allreduce "${q[@]}"
export NCCL_ALGO=PAT
expect_error "NCCL_ALGO: 'PAT' is not allowed (allowed: Ring, Tree, NVLS, NVLSTree, CollNetDirect or CollNetChain)" bench nccl allreduce "${q[@]}"
export NCCL_ALGO=NVLS NCCL_NVLS_ENABLE=0
expect_error "NCCL_ALGO: nvls uses NVLS, which NCCL_NVLS_ENABLE=0 turns off" bench nccl allreduce -g 8 "${q[@]}"
unset NCCL_ALGO NCCL_NVLS_ENABLE
export NCCL_PROTO=LL64
expect_error "NCCL_PROTO: 'LL64' is not allowed" bench nccl allreduce "${q[@]}"
unset NCCL_PROTO
export NCCL_MIN_NCHANNELS=9 NCCL_MAX_NCHANNELS=4
expect_error "NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS: need min <= max (got 9, 4)" bench nccl allreduce "${q[@]}"
unset NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS
export NCCL_NCHANNELS=many
expect_error "NCCL_NCHANNELS: 'many' is not allowed (allowed: a whole number 1..64)" bench nccl allreduce "${q[@]}"
unset NCCL_NCHANNELS
expect_error "--datatype: 'fp8' is not a type (allowed: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 or all)" \
  bench nccl allreduce "${q[@]}" -d fp8
expect_error "--op: 'xor' is not an op (allowed: sum, prod, max, min, avg, mulsum or all)" bench nccl allreduce "${q[@]}" -o xor
expect_error "--cudagraph: Value -1 not in range" bench nccl allreduce "${q[@]}" -G -1
expect_error "--np: Value 0 not in range" bench nccl allreduce "${q[@]}" --np 0
finish
