#!/usr/bin/env bash
# `stepsim bench fabric` on the shipped k=4 fat-tree: the digest and the packet-hop count are the
# same at 1, 2 and 4 ranks and 1 and 2 threads, every flow completes on a lossless fabric, and bad
# options are user errors (exit 2, one message).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
topo=$topologies/fat-tree-k4.yaml
args=(bench fabric --topology "$topo" --pattern permutation --flow-bytes 200000 --lb flowlet
      --flowlet-timeout 2us --quiet)
summary() { echo "$(grep '^digest' <<<"$out") $(grep '^packet-hops ' <<<"$out" | awk '{print $2}')"; }
run_matrix summary -- "${args[@]}"
check "every flow completes" 'grep -q "flows            16 of 16 complete" <<<"$out"'
# PFC with the headroom its formula sizes is lossless: an 8:1 incast without congestion control
# at 800G and 1.6T (100 m optics between spines and cores) drops nothing, in packets and cells
# (it dropped 5-36 packets at 1.6T while the formula counted an optical link's DSPs once).
for t in 800g 1.6t; do
  for fid in packet cell; do
    out=$("$stepsim" bench fabric --topology "$topologies/fat-tree-k4-$t.yaml" --transport rdma \
          --pattern incast --senders 8 --cc none --fidelity $fid --quiet 2>&1)
    check "incast $t $fid: lossless" \
      'grep -q "flows            8 of 8 complete" <<<"$out" && grep -q "^drops            buffer 0," <<<"$out"'
  done
done
expect_error "unknown load-balancing policy 'random' (allowed: adaptive, ecmp, flowlet, spray)" \
  bench fabric --topology "$topo" --lb random
expect_error "--flow-bytes: '2MB/s' is not a size" bench fabric --topology "$topo" --flow-bytes 2MB/s
expect_error "no-such.yaml" bench fabric --topology "$topologies/no-such.yaml"
expect_error "--fault: fault 'down:9999@1us': link 9999 does not exist" \
  bench fabric --topology "$topo" --fault down:9999@1us
# A flapping link (3 times: 6 events) and a lane loss: the faults are reported and the packets
# queued on the downed port are dropped and counted (no retransmission yet).
out=$("$stepsim" bench fabric --topology "$topo" --flow-bytes 200000 --quiet \
  --fault flap:20@5us,20us,5us,3 --fault lanes:21@1us=2 2>&1)
if grep -q "faults           7 scheduled link events" <<<"$out" && grep -qE "link down [1-9]" <<<"$out"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: faults run:"; echo "$out"; fi
# Cell fidelity: named, the same digest at 1 and 2 ranks, every flow complete, fewer hops; a
# cell below the MTU is a user error.
cell1=$("$stepsim" "${args[@]}" --fidelity cell 2>&1)
cell2=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --fidelity cell 2>&1)
check "cell: named" 'grep -q "fidelity cell (64KiB cells)" <<<"$cell1"'
check "cell: every flow completes" 'grep -q "flows            16 of 16 complete" <<<"$cell1"'
check "cell: the same digest at 2 ranks" '[[ "$(grep ^digest <<<"$cell1")" == "$(grep ^digest <<<"$cell2")" ]]'
check "cell: fewer packet-hops" '[[ $(grep "^packet-hops " <<<"$cell1" | awk "{print \$2}" | tr -d ,) -lt $(echo "$reference" | awk "{print \$NF}" | tr -d ,) ]]'
expect_error "--cell: fabric.cell: '2KiB' is out of range (from the mtu, 4KiB, to 4MiB)" \
  bench fabric --topology "$topo" --fidelity cell --cell 2KiB
# Fabric keys (issue 13): a shorthand and its --set run the same; a --set key changes the run;
# `stepsim list fabric` prints every key; keys outside fabric.* need --transport rdma.
ref=$("$stepsim" "${args[@]}" 2>&1 | grep ^digest)
a=$("$stepsim" "${args[@]}" --no-ecn 2>&1 | grep ^digest)
b=$("$stepsim" "${args[@]}" --set fabric.ecn=false 2>&1 | grep ^digest)
c=$("$stepsim" "${args[@]}" --set fabric.ecn_kmin=1KB --set fabric.ecn_kmax=2KB 2>&1 | grep ^digest)
check "--no-ecn is --set fabric.ecn=false" '[[ -n "$a" && "$a" == "$b" && "$a" != "$ref" ]]'
check "--set fabric.ecn_kmin changes the run" '[[ -n "$c" && "$c" != "$ref" ]]'
out=$("$stepsim" list fabric 2>&1)
for key in fabric.ecn_kmin fabric.ecn_kmax fabric.ecn_pmax fabric.pfc_xoff fabric.pfc_xon \
           fabric.dt_alpha fabric.switch_latency fabric.buffer fabric.lb fabric.mtu; do
  check "list fabric: $key" 'grep -q "^  $key " <<<"$out"'
done
expect_error "--set cc.algorithm=hpcc: with --transport raw only fabric.* keys apply" \
  bench fabric --topology "$topo" --set cc.algorithm=hpcc
expect_error "--set fabric.ber: 'nan' is not a number" \
  bench fabric --topology "$topo" --set fabric.ber=nan
expect_error "--ber: fabric.ber: '-1' is out of range" bench fabric --topology "$topo" --ber -1
# Issue 15: a buffer below PFC XOFF + headroom is a user error naming the smallest that fits.
expect_error "fabric.buffer (--buffer): 1KiB is smaller than PFC XOFF + headroom" \
  bench fabric --topology "$topo" --buffer 1KiB
check "--buffer 1KiB --no-pfc runs" '"$stepsim" "${args[@]}" --buffer 1KiB --no-pfc >/dev/null 2>&1; [[ $? -ne 2 ]]'
# Issue 15: a run whose flows did not all complete exits 1 with the count, JSON completed false.
json=$(mktemp)
out=$("$stepsim" "${args[@]}" --end 3us --json "$json" 2>&1); rc=$?
check "incomplete run: exit 1" '[[ $rc -eq 1 ]]'
check "incomplete run: the count" 'grep -q "flows did not complete by 3us" <<<"$out"'
check "incomplete run: JSON completed false" 'grep -q "\"completed\": *false" "$json"'
out=$("$stepsim" "${args[@]}" --json "$json" 2>&1); rc=$?
check "complete run: exit 0, JSON completed true" '[[ $rc -eq 0 ]] && grep -q "\"completed\": *true" "$json"'
rm -f "$json"
# Issue 15: the README's Valiant example on a dragonfly completes (virtual lanes, no deadlock).
out=$("$stepsim" bench fabric --topology "$topologies/dragonfly-small.yaml" --routing valiant \
  --lb adaptive --quiet 2>&1); rc=$?
check "valiant on a dragonfly: every flow" '[[ $rc -eq 0 ]] && grep -q "flows            72 of 72 complete" <<<"$out"'
finish
