#!/usr/bin/env bash
# `stepsim bench fabric --samples` (issue 14): the fabric's time series in HDF5. On an incast and
# a permutation with PFC on the k=4 fat-tree, per port the bins add up to the run's whole-run
# counters (bytes, paused time, ECN marks, PAUSE frames, drops; the largest queue), no bin carries
# more than its link can, and /nodes, /ports and /samples are identical at 1, 2 and 4 ranks and 1
# and 2 threads (tests/cli/samples_check.py). A run cut short by --end keeps every bin up to the
# end. Bad intervals are user errors.
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
check_py=$(dirname "$0")/samples_check.py
topo=$topologies/fat-tree-k4.yaml
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run_case() {  # NAME INTERVAL_PS ARGS...: every rank and thread count, then the checks
  local name=$1 interval=$2; shift 2
  local files=()
  for ranks in 1 2 4; do
    out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" bench fabric --topology "$topo" \
      --quiet "$@" --samples "$dir/$name-r$ranks.h5" --json "$dir/$name-r$ranks.json" 2>&1)
    check "$name: $ranks ranks runs and reports the samples" \
      'grep -qE "^samples +.*: [1-9][0-9]* rows" <<<"$out"'
    files+=("$dir/$name-r$ranks.h5")
  done
  out=$("$stepsim" bench fabric --topology "$topo" --quiet "$@" --threads 2 \
    --samples "$dir/$name-t2.h5" 2>&1)
  files+=("$dir/$name-t2.h5")
  out=$(/usr/bin/python3 "$check_py" "$interval" "$dir/$name-r1.json" "${files[@]}" 2>&1)
  check "$name: bins add up to the counters, identical at 1/2/4 ranks and 2 threads" \
    '[[ $? -eq 0 ]]'
}
# Incast into one NIC with a small buffer: PAUSE frames, long pauses across bins, ECN marks;
# 500 ns bins (two appends of 256 bins).
run_case incast 500000 --pattern incast --senders 12 --flow-bytes 1000000 --buffer 1MiB \
  --sample-interval 500ns
check "incast: PFC paused ports" \
  '/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j[\"pause_frames\"] > 0 and any(p[\"paused_ps\"] > 0 for p in j[\"ports\"]) else 1)" "$dir/incast-r1.json"'
check "incast: more than one append" \
  '[[ $(h5dump -H "$dir/incast-r1.h5" >/dev/null && /usr/bin/python3 -c "import h5py,sys; print(h5py.File(sys.argv[1])[\"samples/ports\"][\"bin\"].max())" "$dir/incast-r1.h5") -ge 256 ]]'
# A permutation with flowlet load balancing, default 10 us bins.
run_case permutation 10000000 --pattern permutation --flow-bytes 400000 --lb flowlet \
  --flowlet-timeout 2us
# RDMA WRITEs through the NICs (DCQCN): the same at 1 and 2 ranks.
for ranks in 1 2; do
  out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" bench fabric --topology "$topo" \
    --quiet --pattern incast --senders 8 --flow-bytes 500000 --transport rdma \
    --sample-interval 2us --samples "$dir/rdma-r$ranks.h5" --json "$dir/rdma-r$ranks.json" 2>&1)
done
out=$(/usr/bin/python3 "$check_py" 2000000 "$dir/rdma-r1.json" "$dir/rdma-r1.h5" "$dir/rdma-r2.h5" 2>&1)
check "rdma: bins add up to the counters, identical at 1 and 2 ranks" '[[ $? -eq 0 ]]'
# Cell fidelity (a 64 KiB cell counts in the bin where it starts): 1 rank and 2 ranks x 2 threads.
out=$("$stepsim" bench fabric --topology "$topo" --quiet --pattern all_to_all --flow-bytes 200000 \
  --fidelity cell --samples "$dir/cell-r1.h5" --json "$dir/cell-r1.json" 2>&1)
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" bench fabric --topology "$topo" --quiet \
  --pattern all_to_all --flow-bytes 200000 --fidelity cell --threads 2 \
  --samples "$dir/cell-r2.h5" 2>&1)
out=$(/usr/bin/python3 "$check_py" 10000000 "$dir/cell-r1.json" "$dir/cell-r1.h5" "$dir/cell-r2.h5" 2>&1)
check "cell: bins add up to the counters, identical at 2 ranks x 2 threads" '[[ $? -eq 0 ]]'
# Cut short: the file holds every bin up to the end (the final window hook), bytes still add up.
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" bench fabric --topology "$topo" --quiet \
  --pattern incast --senders 12 --flow-bytes 1000000 --buffer 1MiB --sample-interval 1us \
  --end 60us --samples "$dir/end.h5" --json "$dir/end.json" 2>&1)
check "--end 60us: exit 1 (flows incomplete)" '[[ $? -eq 1 ]]'
out=$(/usr/bin/python3 "$check_py" 1000000 "$dir/end.json" "$dir/end.h5" 2>&1)
check "--end 60us: bins add up, none after the end" '[[ $? -eq 0 ]]'
check "--end 60us: the last bin is the one ending at the end" \
  '[[ $(/usr/bin/python3 -c "import h5py,sys; print(h5py.File(sys.argv[1])[\"samples/ports\"][\"bin\"].max())" "$dir/end.h5") -eq 59 ]]'
# SIGTERM: the engine stops at a window boundary and the final hook appends every bin up to the
# stop; the file is complete and readable, the bins still add up (bytes exactly).
"$stepsim" bench fabric --topology "$topologies/fat-tree-k8.yaml" --quiet --pattern permutation \
  --flow-bytes 200MB --samples "$dir/term.h5" --json "$dir/term.json" > "$dir/term.out" 2>&1 &
pid=$!
sleep 3
kill -TERM "$pid"
wait "$pid"; rc=$?
out=$(cat "$dir/term.out")
check "SIGTERM: exit 143, INTERRUPTED" '[[ $rc -eq 143 ]] && grep -q "^status  *INTERRUPTED" <<<"$out"'
out=$(/usr/bin/python3 "$check_py" 10000000 "$dir/term.json" "$dir/term.h5" 2>&1)
check "SIGTERM: the file holds the bins up to the stop and they add up" '[[ $? -eq 0 ]]'
# off: the name tables only.
out=$("$stepsim" bench fabric --topology "$topo" --quiet --flow-bytes 100000 \
  --sample-interval off --samples "$dir/off.h5" 2>&1)
check "--sample-interval off: /nodes and /ports, no /samples" \
  'h5dump -H "$dir/off.h5" | grep -q "DATASET \"nodes\"" && ! h5dump -H "$dir/off.h5" | grep -q "GROUP \"samples\""'
expect_error "--sample-interval: '5ns' is out of range (allowed: 10ns..1s, or 0 / off)" \
  bench fabric --topology "$topo" --samples "$dir/x.h5" --sample-interval 5ns
expect_error "--sample-interval: 'fast' is not a time" \
  bench fabric --topology "$topo" --samples "$dir/x.h5" --sample-interval fast
finish
