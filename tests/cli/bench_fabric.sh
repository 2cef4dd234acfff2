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
reference=""
for ranks in 1 2 4; do
  for threads in 1 2; do
    out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" "${args[@]}" --threads "$threads" 2>&1)
    line="$(grep '^digest' <<<"$out") $(grep '^packet-hops ' <<<"$out" | awk '{print $2}')"
    if [[ -z "$reference" ]]; then
      reference=$line
      if grep -q "flows            16 of 16 complete" <<<"$out"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: not every flow completed:"; echo "$out"; fi
    elif [[ "$line" == "$reference" ]]; then passed=$((passed + 1)); else
      failed=$((failed + 1)); echo "FAIL: ranks $ranks threads $threads: '$line' vs '$reference'"; fi
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
expect_error "--cell: cell must be 0 (packet fidelity) or from the mtu (4KiB) to 4MiB (got 2KiB)" \
  bench fabric --topology "$topo" --fidelity cell --cell 2KiB
finish
