#!/usr/bin/env bash
# `stepsim bench perftest`: the perftest columns and the digest are the same at 1, 2 and 4 ranks
# and 1 and 2 threads (with DCQCN, spraying and selective repeat across the 2-server toy), the
# 1.6T toy reaches the effective port rate with 1 MB WRITEs, perftest's flags, defaults and
# output blocks as its parsers read them (tests/cli/perftest_parse.py), and bad options are user
# errors (exit 2, one message).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
topo=$topologies/toy-2server-1.6t.yaml
args=(bench perftest write_bw --topology "$topo" -s 64KiB -q 4 -n 50 --cc dcqcn --lb spray
      --retransmission selective --quiet)
summary() { echo "$(grep '^digest' <<<"$out") $(grep -E '^ +65536 ' <<<"$out")"; }
run_matrix summary -- "${args[@]}"
check "a digest and a row for 64 KiB" '[[ "$reference" == digest*65536* ]]'
# 1 MB WRITEs on one QP at 1.6T: >= 97% of 1600 x 4096 / 4178 = 1568.6 Gb/s, i.e. >= 1521.5.
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1MiB -n 100 --report_gbits --quiet 2>&1)
bw=$(awk '$1 == 1048576 {print $4}' <<<"$out")
check "1 MB write_bw >= 1521.5 Gb/s (got '$bw')" 'awk -v b="$bw" "BEGIN {exit !(b >= 1521.5)}"'
out=$("$stepsim" bench perftest write_lat --topology "$topo" -s 256 -n 100 --quiet 2>&1)
check "write_lat prints the latency split" 'grep -q "^latency split    post 50.0, doorbell" <<<"$out"'
# The allowed names are the registry's, as `stepsim list cc` prints them (the entries whose first
# word is not a dotted parameter key), so a new algorithm does not edit this test.
cc_names=$("$stepsim" list cc | awk 'NR > 1 && $1 !~ /\./ {print $1}' | paste -sd, | sed 's/,/, /g')
check "stepsim list cc names the algorithms (got '$cc_names')" '[[ "$cc_names" == *dcqcn* ]]'
expect_error "--cc: cc.algorithm: 'timely' is not allowed (allowed: $cc_names)" \
  bench perftest write_bw --topology "$topo" --cc timely
expect_error "--from: '9:0' is not SERVER[:NIC] with SERVER in 0..1" \
  bench perftest write_bw --topology "$topo" --from 9:0
expect_error "--to: server 1 has NICs 0..7" bench perftest write_bw --topology "$topo" --to 1:8
expect_error "--qp: latency tests use one QP" bench perftest write_lat --topology "$topo" -q 4
expect_error "--retransmission: transport.retransmission: unknown retransmission 'fast' (allowed: auto, gbn, selective)" \
  bench perftest write_bw --topology "$topo" --retransmission fast
expect_error "--pcie:" bench perftest write_bw --topology "$topo" --pcie gen5x12
expect_error "--pcie-fault: 'gen9@1us' is not GEN@TIME" \
  bench perftest write_bw --topology "$topo" --pcie-fault gen9@1us
# A PCIe fault retrains the client's link at Gen4 (x32): 1 MB WRITEs slow to its DMA rate.
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1MiB -n 100 --pcie-fault gen4@0us --report_gbits --quiet 2>&1)
bw=$(awk '$1 == 1048576 {print $4}' <<<"$out")
check "write_bw after a Gen4 retrain is 400..480 Gb/s (got '$bw')" 'awk -v b="$bw" "BEGIN {exit !(b > 400 && b < 480)}"'
expect_error "--set transport.rtx: unknown key (allowed: transport.kind, transport.retransmission, transport.rto" \
  bench perftest write_bw --topology "$topo" --set transport.rtx=1us
expect_error "--set cc.dcqcn.g: '2' is out of range (0..1)" \
  bench perftest write_bw --topology "$topo" --set cc.dcqcn.g=2
cfg=$(mktemp --suffix=.yaml); trap 'rm -f "$cfg"' EXIT
printf 'cc:\n  algorithm: hpcc\ntransport:\n  rto: 20us\n  retry: 3\n' >"$cfg"
expect_error "$cfg:5: transport.retry: unknown key" bench perftest write_bw --topology "$topo" --nic-config "$cfg"
printf 'cc:\n  algorithm: hpcc\ntransport:\n  rto: 20us\n' >"$cfg"
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64KiB -n 20 --nic-config "$cfg" --quiet 2>&1)
check "a --nic-config file sets cc and rto" 'grep -q "cc hpcc, gbn, rto 20us" <<<"$out"'
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64KiB -n 20 --nic-config "$cfg" --cc dcqcn --set transport.rto=30us --quiet 2>&1)
check "options override the file, --set overrides options" 'grep -q "cc dcqcn, gbn, rto 30us" <<<"$out"'
expect_error "frob_lat" bench perftest frob_lat --topology "$topo"
# Cell fidelity: 1 MiB WRITEs at the bandwidth of packet level within 1%.
pk=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1MiB -n 50 --quiet 2>&1)
ce=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1MiB -n 50 --quiet --fidelity cell 2>&1)
bp=$(awk '$1 == 1048576 {print $4}' <<<"$pk"); bc=$(awk '$1 == 1048576 {print $4}' <<<"$ce")
check "cell: named" 'grep -q "fidelity cell (64KiB cells)" <<<"$ce"'
check "cell write_bw within 1% of packet ($bc vs $bp Gb/s)" 'awk -v c="$bc" -v p="$bp" "BEGIN {exit !(c / p > 0.99 && c / p < 1.01)}"'
# perftest's conventions, read as its parsers read them.
parse=$(dirname "$0")/perftest_parse.py
out=$("$stepsim" bench perftest write_bw --topology "$topo" --quiet 2>&1)
check "write_bw defaults: 65536 B, 5000 iterations, MB/sec" '/usr/bin/python3 "$parse" --kind bw --bytes 65536 --iters 5000 --unit MB/sec <<<"$out"'
check "write_bw: perftest's parameter block" 'grep -q "^                    RDMA_Write BW Test$" <<<"$out" && grep -q "^ TX depth        : 128$" <<<"$out" && grep -q "^ Max inline data : 0\[B\]$" <<<"$out"'
mb=$(awk '$1 == 65536 {print $4}' <<<"$out")
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64K -n 5000 --report_gbits --quiet 2>&1)
gb=$(awk '$1 == 65536 {print $4}' <<<"$out")
check "-s 64K --report_gbits: 65536 B in Gb/sec" '/usr/bin/python3 "$parse" --kind bw --bytes 65536 --unit Gb/sec <<<"$out"'
check "MB/sec is 2^20 B/s: $mb MB/sec = $gb Gb/sec" 'awk -v m="$mb" -v g="$gb" "BEGIN { exit !(m * 1048576 * 8 / 1e9 / g > 0.999 && m * 1048576 * 8 / 1e9 / g < 1.001) }"'
out=$("$stepsim" bench perftest write_lat --topology "$topo" --quiet 2>&1)
check "write_lat defaults: 2 B, 1000 iterations, the latency columns" '/usr/bin/python3 "$parse" --kind lat --bytes 2 --iters 1000 <<<"$out"'
check "write_lat: inline up to 220 B by default" 'grep -q "^ Max inline data : 220\[B\]$" <<<"$out" && grep -q "inline 220 B" <<<"$out"'
out=$("$stepsim" bench perftest write_lat --topology "$topo" -I 0 -s 64 -n 200 --quiet 2>&1)
check "-I 0: no inline" 'grep -q "^ Max inline data : 0\[B\]$" <<<"$out"'
out=$("$stepsim" bench perftest send_lat --topology "$topo" -s 64 -n 200 -m 1024 -F -x 3 --quiet 2>&1)
check "send_lat -m 1024 -F -x 3" '/usr/bin/python3 "$parse" --kind lat --bytes 64 --iters 200 <<<"$out" && grep -q "^ Mtu             : 1024\[B\]$" <<<"$out"'
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 4096 -n 200 -d mlx5_3 --quiet 2>&1)
check "-d mlx5_3: NIC 3 of both servers" 'grep -q "NIC 0:3 (port 3) -> NIC 1:3" <<<"$out" && grep -q "Device         : mlx5_3" <<<"$out"'
full=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1M -n 100 --report_gbits --quiet 2>&1)
out=$("$stepsim" bench perftest write_bw --topology "$topo" -s 1M -n 100 --report_gbits --output bandwidth --quiet 2>&1)
check "--output bandwidth: one number, the table's average" '[[ $(wc -l <<<"$out") -eq 1 && "$out" == "$(awk "\$1 == 1048576 {print \$4}" <<<"$full")" ]]'
out=$("$stepsim" bench perftest read_bw --topology "$topo" -s 64K -n 200 --quiet 2>&1)
check "read_bw: bandwidth columns" '/usr/bin/python3 "$parse" --kind bw --bytes 65536 --iters 200 <<<"$out" && grep -q "RDMA_Read BW Test" <<<"$out"'
expect_error "--connection: 'UD' is not modelled (allowed: RC)" bench perftest write_bw --topology "$topo" -c UD
# -b: the server sends too, on the same QPs; the 1.6T link is full duplex, so both ways together
# move twice the bytes of one way at nearly the same time (1.9x .. 2.02x).
uni=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64K -n 200 --report_gbits --quiet 2>&1)
bi=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64K -n 200 --report_gbits -b --quiet 2>&1)
bu=$(awk '$1 == 65536 {print $4}' <<<"$uni"); bb=$(awk '$1 == 65536 {print $4}' <<<"$bi")
check "-b: both ways ~2x one way ($bb vs $bu Gb/s)" 'awk -v b="$bb" -v u="$bu" "BEGIN {exit !(b / u > 1.9 && b / u < 2.02)}"'
check "-b: named in the test line" 'grep -q "200 iterations, bidirectional" <<<"$bi"'
out=$("$stepsim" bench perftest read_bw --topology "$topo" -s 64K -n 100 --report_gbits -b --quiet 2>&1)
check "read_bw -b: bandwidth columns" '/usr/bin/python3 "$parse" --kind bw --bytes 65536 --iters 100 --unit Gb/sec <<<"$out"'
expect_error "--bidirectional: bandwidth tests only (write_bw, read_bw, send_bw, atomic_bw)" bench perftest write_lat --topology "$topo" -b
# -D: a duration instead of -n; the messages completed within it over it, within 2% of the -n
# run's bandwidth once the first message's latency is small against the duration (4 QPs).
nrun=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64K -q 4 -n 100 --report_gbits --quiet 2>&1)
drun=$("$stepsim" bench perftest write_bw --topology "$topo" -s 64K -q 4 -D 100us --report_gbits --quiet 2>&1)
bn=$(awk '$1 == 65536 {print $4}' <<<"$nrun"); bd=$(awk '$1 == 65536 {print $4}' <<<"$drun")
it=$(awk '$1 == 65536 {print $2}' <<<"$drun")
check "-D 100us: bandwidth within 2% of -n's ($bd vs $bn Gb/s)" 'awk -v d="$bd" -v n="$bn" "BEGIN {exit !(d / n > 0.98 && d / n < 1.02)}"'
# 100 us at ~1.5 Tb/s: ~290 messages of 64 KiB, ~72 per QP.
check "-D 100us: #iterations are the messages per QP ($it)" '[[ $it -ge 60 && $it -le 80 ]] && grep -q "4 QP(s), for 100us" <<<"$drun"'
out=$("$stepsim" bench perftest write_lat --topology "$topo" -s 64 -D 20us --quiet 2>&1)
check "write_lat -D 20us: rounds of ~2.3 us fill 20 us" '/usr/bin/python3 "$parse" --kind lat --bytes 64 <<<"$out" && [[ $(awk "\$1 == 64 {print \$2}" <<<"$out") -ge 5 ]]'
expect_error "--duration: '0' is not a duration (allowed: whole seconds 1..3600, or a time such as 50us)" \
  bench perftest write_bw --topology "$topo" -D 0
expect_error "--output: bandwidth tests print bandwidth or message_rate" bench perftest write_bw --topology "$topo" --output latency
expect_error "--ib-dev: 'eth0' is not a device (allowed: mlx5_N" bench perftest write_bw --topology "$topo" -d eth0
expect_error "--size: '99999999999G' is out of range" bench perftest write_bw --topology "$topo" -s 99999999999G
# A duration test stopped early: its row's bandwidth is over the time simulated (near the link's
# 1.6 Tb/s = 190,734 MB/sec, not the bytes over the requested 2 s), and the INTERRUPTED line sits
# above perftest's closing rule, where table parsers read.
"$stepsim" bench perftest write_bw -D 2 --quiet >dur.out 2>&1 &
pid=$!
sleep 4
kill -TERM "$pid"
wait "$pid"; rc=$?
avg=$(awk '$1 == 65536 { print $4 }' dur.out)
check "-D 2 stopped early: exit 143, average $avg MB/sec over the time simulated" \
  '[[ $rc -eq 143 ]] && awk -v a="$avg" "BEGIN { exit !(a > 150000 && a < 200000) }"'
check "-D 2 stopped early: INTERRUPTED above the closing rule" \
  'awk "/^ INTERRUPTED at / { i = NR } /^-----/ { r = NR } END { exit !(i > 0 && r == i + 1) }" dur.out'
finish
