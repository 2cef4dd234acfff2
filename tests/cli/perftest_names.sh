#!/usr/bin/env bash
# `stepsim bench perftest` as perftest users type it: send_bw, read_lat, atomic_bw, atomic_lat
# and the ib_ program names; a server address accepted with a note; -R -p ... accepted with a
# note each; -N prints no peak; -u sets the retransmission timeout (4.096 us x 2^u); --use_cuda
# GPUDirect buffers; -m must be an IB/RoCE MTU (exit 2 otherwise).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
parse=$(dirname "$0")/perftest_parse.py
q=(-n 200 --quiet)
out=$("$stepsim" bench perftest ib_write_bw "${q[@]}" 2>&1)
plain=$("$stepsim" bench perftest write_bw "${q[@]}" 2>&1)
check "ib_write_bw = write_bw" '[[ "$(grep digest <<<"$out")" == "$(grep digest <<<"$plain")" && -n "$(grep digest <<<"$out")" ]]'
out=$("$stepsim" bench perftest send_bw "${q[@]}" 2>&1)
check "send_bw: Send BW Test, a bandwidth row of 65536 B" 'grep -q "Send BW Test" <<<"$out" && /usr/bin/python3 "$parse" --kind bw --bytes 65536 --iters 200 <<<"$out"'
lat=$("$stepsim" bench perftest write_lat "${q[@]}" 2>&1)
out=$("$stepsim" bench perftest read_lat "${q[@]}" 2>&1)
tr=$(awk '/#bytes/{getline; print $5}' <<<"$out"); tw=$(awk '/#bytes/{getline; print $5}' <<<"$lat")
check "read_lat: a latency row; the whole round trip ($tr us) above write_lat's half ($tw us) x 1.5" \
  'grep -q "RDMA_Read Latency Test" <<<"$out" && /usr/bin/python3 "$parse" --kind lat --bytes 2 <<<"$out" && awk -v r="$tr" -v w="$tw" "BEGIN { exit !(r > 1.5 * w) }"'
out=$("$stepsim" bench perftest atomic_lat "${q[@]}" 2>&1)
check "atomic_lat: 8 B" 'grep -q "Atomic FETCH_AND_ADD Latency Test" <<<"$out" && /usr/bin/python3 "$parse" --kind lat --bytes 8 <<<"$out"'
out=$("$stepsim" bench perftest atomic_bw "${q[@]}" 2>&1)
check "atomic_bw: 8 B" '/usr/bin/python3 "$parse" --kind bw --bytes 8 <<<"$out"'
out=$("$stepsim" bench perftest ib_write_bw 10.0.0.2 -R -p 18515 -i 1 -l 4 -Q 8 -U -H -e -C -S 3 -T 106 --run_infinitely "${q[@]}" 2>&1); rc=$?
check "address and accepted flags: exit 0, a row" '[[ $rc -eq 0 ]] && /usr/bin/python3 "$parse" --kind bw <<<"$out"'
check "12 notes and the address's" '[[ $(grep -c "^ note: " <<<"$out") -eq 13 ]] && grep -q "note: server 10.0.0.2 ignored" <<<"$out"'
out=$("$stepsim" bench perftest write_bw -N "${q[@]}" 2>&1)
check "-N: BW peak 0.00" '[[ $(awk "/#bytes/{getline; print \$3}" <<<"$out") == 0.00 ]]'
out=$("$stepsim" bench perftest write_bw -u 14 --use_cuda "${q[@]}" 2>&1)
check "-u 14: rto 67108.864us; --use_cuda: gpudirect" 'grep -q "memory gpudirect,.*rto 67108.864us" <<<"$out"'
out=$("$stepsim" bench perftest write_bw -m 1024 "${q[@]}" 2>&1)
check "-m 1024 accepted" 'grep -q "Mtu             : 1024\[B\]" <<<"$out"'
expect_error "--mtu: '9000' is not an IB/RoCE MTU (allowed: 256, 512, 1024, 2048, 4096)" bench perftest write_bw -m 9000
expect_error "--mtu: '1500' is not an IB/RoCE MTU" bench perftest write_lat -m 1500
expect_error "--size: atomics are 8 bytes" bench perftest atomic_bw -s 64
expect_error "--bidirectional: bandwidth tests only" bench perftest read_lat -b
finish
