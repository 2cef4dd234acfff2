#!/usr/bin/env bash
# `stepsim check` on the shipped topology files: the key numbers (counts from the closed forms of
# each generator, full bisection, diameter, lookahead = the shortest cable's latency), the
# partition report, one summary under mpiexec, and user errors (exit 2, one message).
set -uo pipefail
stepsim=$1; mpiexec=$2; topologies=$3; shift 3; mpiflags=("$@")
passed=0; failed=0

expect() {  # file, expected line fragments..., checked in `stepsim check FILE --ranks 4`
  local file=$1; shift
  local out rc
  out=$("$stepsim" check "$topologies/$file" --ranks 4 2>&1); rc=$?
  if [[ $rc -ne 0 ]]; then failed=$((failed + 1)); echo "FAIL: $file: exit $rc"; echo "$out"; return; fi
  local want
  for want in "$@"; do
    if grep -qF -- "$want" <<<"$out"; then passed=$((passed + 1)); else
      failed=$((failed + 1)); echo "FAIL: $file: want '$want' in:"; echo "$out"; fi
  done
}

# k = 16: k^3/4 = 1024 hosts, 5k^2/4 = 320 switches, 3 x 1024 links; bisection 512 x 400G;
# lookahead = 3 m DAC: 3 x 4.3 ns + 100 ns PHY.
expect fat-tree-k16.yaml "servers           1024" "switches          320 in 1 plane: 128 leaf, 128 spine, 64 core" \
  "links             3072" "bisection         204.8Tbps = 100.0% of what servers [0, 512) inject" \
  "leaf down:up 1:1, spine down:up 1:1" "diameter          6 links server to server (5 switches" \
  "lookahead         112.9ns" "partition         4 ranks, 1344 LPs" "  block " "  metis " \
  "B per server LP" "B per switch LP (idle fabric state); routing tables"
expect fat-tree-k4.yaml "servers           16" "switches          20 in 1 plane: 8 leaf, 8 spine, 4 core" "links             48"
expect fat-tree-k28.yaml "servers           5488" "switches          980 in 1 plane: 392 leaf, 392 spine, 196 core"
# 2048 servers x 8 rails; per plane 64 leaves, 64 spines, 32 cores; bisection 1024 x 8 x 1.6T;
# lookahead = 20 m AOC: 20 x 4.9 ns + 100 ns.
expect rail-16k-1.6t.yaml "GPUs              16384" "NICs              16384" \
  "switches          1280 in 8 planes: 512 leaf, 512 spine, 256 core" "links             49152" \
  "x 1.6T  optics 300m" "bisection         13107.2Tbps = 100.0%" "lookahead         198ns" \
  "diameter          6 links"
expect rail-16k-800g.yaml "GPUs              16384" "bisection         6553.6Tbps = 100.0%"
expect rail-128gpu-800g.yaml "GPUs              128" "switches          8 in 8 planes: 8 leaf" "diameter          2 links"
expect rail-1024gpu-800g.yaml "GPUs              1024" "switches          48 in 8 planes: 32 leaf, 16 spine"
expect toy-2server.yaml "servers           2" "GPUs              16" "switches          8 in 8 planes: 8 leaf" \
  "lookahead         108.6ns"
# 9 groups x 4 routers x 2 hosts; hosts:global = 2:2; minimal path local-global-local.
expect dragonfly-small.yaml "servers           72" "switches          36 in 1 plane: 36 router" \
  "router down:global 1:1" "diameter          5 links"
# MegaScale (NSDI 2024): 1,536 servers x 8 NICs of 200G (ToR ports split 2 x 200G), 400G
# fabric, 1:1 at every tier; 6 pods of 32 ToRs and 32 spines, 4 cores per spine column.
expect megascale-12k.yaml "GPUs              12288" "NICs              12288" \
  "switches          512 in 1 plane: 192 leaf, 192 spine, 128 core" \
  "server_leaf      12288 x 200G" "leaf_spine        6144 x 400G" \
  "bisection         1228.8Tbps = 100.0%" "leaf down:up 1:1, spine down:up 1:1"
# 8 GPUs on 2 NICs: 2 rail planes, a quarter of the NIC ports.
expect rail-2nic-16gpu-400g.yaml "GPUs              16" "NICs              4" "switches          2 in 2 planes"

# Oversubscription at either tier halves the bisection against the servers' injection.
otmp=$(mktemp -d)
printf 'topology:\n  kind: fat_tree\n  k: 12\n  port: 400G\n' >"$otmp/k12.yaml"
printf 'topology:\n  kind: fat_tree\n  k: 12\n  oversubscription: 2\n  port: 400G\n' >"$otmp/leaf2.yaml"
printf 'topology:\n  kind: fat_tree\n  k: 12\n  spine_oversubscription: 2\n  port: 400G\n' >"$otmp/spine2.yaml"
expect "$(realpath --relative-to="$topologies" "$otmp")/k12.yaml" "= 100.0% of what servers"
expect "$(realpath --relative-to="$topologies" "$otmp")/leaf2.yaml" "= 50.0% of what servers" "leaf down:up 2:1, spine down:up 1:1"
expect "$(realpath --relative-to="$topologies" "$otmp")/spine2.yaml" "= 50.0% of what servers" "leaf down:up 1:1, spine down:up 2:1"
rm -rf "$otmp"

# One partitioner on request; under mpiexec the report is printed once and counts the ranks.
out=$("$stepsim" check "$topologies/fat-tree-k4.yaml" --partition metis --ranks 3 2>&1)
if grep -q "  metis " <<<"$out" && ! grep -q "  block " <<<"$out" && grep -q "3 ranks" <<<"$out"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: --partition metis:"; echo "$out"; fi
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" check "$topologies/fat-tree-k4.yaml" 2>&1)
if [[ $(grep -c "^servers " <<<"$out") -eq 1 ]] && grep -q "partition         2 ranks" <<<"$out"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: mpiexec -n 2 check:"; echo "$out"; fi

expect_error() {  # expected-substring, args...
  local want=$1; shift
  local err rc count
  err=$("$mpiexec" -n "${STEPSIM_TEST_ERROR_RANKS:-2}" "${mpiflags[@]}" "$stepsim" "$@" 2>&1 >/dev/null); rc=$?
  count=$(grep -cF -- "$want" <<<"$err" || true)
  if [[ $rc -eq 2 && $count -eq 1 ]] && ! grep -qE "internal error|MPI_ABORT|backtrace|terminate called" <<<"$err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: stepsim $* -> exit $rc, '$want' seen $count times:"; echo "$err"
  fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'topology:\n  kind: fat_tree\n  k: 15\n  port: 400G\n' >"$tmp/odd.yaml"
printf 'topology:\n  kind: fat_tree\n  k: 4\n  port: 400G\n  cables:\n    leaf_spine: {length: 30 m, kind: fibre}\n' >"$tmp/cable.yaml"
expect_error "$tmp/odd.yaml:3: topology.k: 15 is odd" check "$tmp/odd.yaml"
expect_error "$tmp/cable.yaml:6: topology.cables.leaf_spine.kind: unknown cable kind 'fibre' (allowed: dac" check "$tmp/cable.yaml"
expect_error "cannot read topology file '$tmp/none.yaml'" check "$tmp/none.yaml"
expect_error "--partition: unknown partitioner 'scotch' (allowed: block, cyclic, metis, spread)" check "$topologies/fat-tree-k4.yaml" --partition scotch
expect_error "--ranks: Value 0 not in range" check "$topologies/fat-tree-k4.yaml" --ranks 0
printf 'topology:\n  kind: rail_optimized\n  servers: 2\n  nics_per_server: 3\n  port: 400G\n' >"$tmp/nics.yaml"
expect_error "$tmp/nics.yaml:4: topology.nics_per_server: 3 does not divide gpus_per_server 8" check "$tmp/nics.yaml"

# The registry listing names every kind and its parameters.
out=$("$stepsim" list topologies 2>&1)
for want in "fat_tree:" "rail_optimized:" "dragonfly:" "switch_radix" "global_links_per_router" "spine_core"; do
  if grep -qF -- "$want" <<<"$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: list topologies lacks '$want':"; echo "$out"; fi
done
# A huge topology is refused from its counts, before it is built: 2^20 servers of 64 GPUs on 64
# rail planes (201,326,592 links) against STEPSIM_MEMORY_LIMIT=6GiB, by `check` (of the file
# and of a scenario on it), `run`, `plan` and the benchmarks:
# exit 2, the counts in the one message, and a peak resident size far below what building it
# takes (its links and ports alone are over 10 GB).
huge_dir=$(mktemp -d)
printf 'topology:\n  name: huge-rails\n  kind: rail_optimized\n  servers: 1048576\n  gpus_per_server: 64\n  switch_radix: 256\n  port: 400G\n' > "$huge_dir/huge.yaml"
refused() {  # WHAT ARGS...: stepsim ARGS exits 2 naming the counts, peak RSS under 1 GiB
  local what=$1; shift
  local res rc rss err
  res=$(STEPSIM_MEMORY_LIMIT=6GiB /usr/bin/python3 -c '
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stdout.write(p.stderr)' "$stepsim" "$@")
  read -r rc rss <<<"$(head -1 <<<"$res")"
  err=$(tail -n +2 <<<"$res")
  if [[ $rc -eq 2 && $rss -lt 1048576 &&
        $(grep -c "too large: huge-rails (1048576 servers, 1310720 switches, 201326592 links) on 1 rank of this node needs about [0-9.]* [GTP]iB of memory, but this machine has 6.0 GiB available" <<<"$err") -eq 1 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: $what: exit $rc, peak RSS $rss KiB:"; echo "$err"
  fi
}
refused "check of a 201M-link topology" check "$huge_dir/huge.yaml"
refused "run on a 201M-link topology" run "$topologies/../workloads/tiny.yaml" --quiet --no-output --set topology="$huge_dir/huge.yaml"
refused "check of a scenario on it" check "$topologies/../workloads/tiny.yaml" --set topology="$huge_dir/huge.yaml"
refused "plan on it" plan "$topologies/../workloads/tiny.yaml" --set topology="$huge_dir/huge.yaml"
refused "bench fabric on it" bench fabric --topology "$huge_dir/huge.yaml" --quiet
refused "bench nccl on it" bench nccl allreduce -b 1M -e 1M --gpus 16 --topology "$huge_dir/huge.yaml" --quiet
refused "bench perftest on it" bench perftest write_bw --topology "$huge_dir/huge.yaml" -s 1MiB -n 10 --quiet
rm -rf "$huge_dir"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
