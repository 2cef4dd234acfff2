#!/usr/bin/env bash
# Bad input (issue 15): each malformed or extreme input is one clear user error (exit 2, the
# message once across 2 ranks, no internal error, abort or signal), found before any simulation;
# outputs are checked before the run; an unknown subcommand lists the subcommands.
set -uo pipefail
stepsim=$1; mpiexec=$2; src=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
work=$(mktemp -d); cd "$work" || exit 1
tiny=$src/workloads/tiny.yaml
toy=$src/topologies/toy-2server.yaml

# expect_clean SUBSTRING ARGS...: exit 2, SUBSTRING exactly once, no crash traces.
expect_clean() {
  local want=$1; shift
  local err rc
  err=$(timeout 120 "$mpiexec" -n "${STEPSIM_TEST_ERROR_RANKS:-2}" "${mpiflags[@]}" "$stepsim" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq 2 && $(grep -cF -- "$want" <<<"$err") -eq 1 ]] &&
     ! grep -qE "internal error|MPI_ABORT|backtrace|terminate called|Signal:|what\(\)" <<<"$err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: stepsim $* -> exit $rc, wanted '$want' once:"; echo "$err"
  fi
}

# Overflow and wrap-around.
expect_clean "gpu.nvlink: '340282366920938463463374607432G' is not a data rate: it is too large" \
  run "$tiny" --no-output --quiet --set gpu.nvlink=340282366920938463463374607432G
expect_clean "--switch-delay: '5000000s' is out of range (0ps..1ms)" headroom --switch-delay 5000000s
expect_clean "--mtu: '40000TB' is out of range" headroom --mtu 40000TB
expect_clean "--mtu: fabric.mtu: '40000TB' is out of range (64..65536 bytes)" bench fabric --topology "$toy" --mtu 40000TB --quiet
expect_clean "'9999999999G' is out of range (0 .. 4EiB)" bench nccl allreduce -e 9999999999G --quiet
expect_clean "the last flap ends after 1000000s" \
  bench fabric --topology "$toy" --fault flap:0@0us,9000000s,1s,3 --quiet
expect_clean "COUNT 999999999 is out of range (0..1000000 flaps)" \
  bench fabric --topology "$toy" --fault flap:0@0us,2us,1us,999999999 --quiet
expect_clean "tp x pp x cp x dp = 8589934592 GPUs, more than 16777216" \
  run "$tiny" --no-output --quiet --set parallel.tp=65536 --set parallel.pp=65536
expect_clean "parallel.global_batch (2147483648) gives 1073741824 micro-batches per step" \
  run "$tiny" --no-output --quiet --set parallel.global_batch=2147483648
expect_clean "parallel.global_batch (1099511627776) gives" \
  run "$tiny" --no-output --quiet --set parallel.global_batch=1099511627776

# output.flows (issue 14): a value it does not know, in the file and with --set.
printf 'model:\n  layers: 2\noutput:\n  flows: every\ntopology: %s\n' "$toy" > flowsbad.yaml
expect_clean "flowsbad.yaml:4: output.flows: 'every' is not allowed (allowed: auto, all, sampled, none)" \
  run flowsbad.yaml --no-output
expect_clean "output.flows_sample: '0' is out of range" \
  run "$tiny" --no-output --quiet --set output.flows=sampled --set output.flows_sample=0

# YAML.
printf 'model: &m\n  name: x\n  self: *m\ntopology: %s\n' "$toy" > alias.yaml
expect_clean "alias.yaml:1: an alias refers to a node that contains it (a cycle)" run alias.yaml --no-output
printf 'model:\n  layers: 2\n  layers: 3\ntopology: %s\n' "$toy" > dupkey.yaml
expect_clean "dupkey.yaml:3: key 'layers' given twice in the same map (first at line 2)" run dupkey.yaml --no-output
printf 'model:\n  layers: 2\nmodel:\n  hidden: 8\ntopology: %s\n' "$toy" > dupsec.yaml
expect_clean "dupsec.yaml:3: key 'model' given twice" run dupsec.yaml --no-output
printf 'model:\n  layers: 2\ntopology: %s\n---\nmodel:\n  layers: 3\n' "$toy" > twodocs.yaml
expect_clean "twodocs.yaml:5: a second YAML document" run twodocs.yaml --no-output
printf 'model:\n  name: "tiny\ntopology: %s\n' "$toy" > quote.yaml
expect_clean "quote.yaml:2: YAML syntax error: a quoted string opened on this line is never closed" run quote.yaml --no-output
printf 'model:\n  name: a\0b\ntopology: x.yaml\n' > nul.yaml
err=$("$stepsim" run nul.yaml --no-output 2>&1)
check "NUL byte: named, not printed" '[[ "$err" == *"contains a NUL byte"* ]] && ! tr -d "\n" <<<"$err" | grep -qP "\x00"'
expect_clean "contains a NUL byte" run nul.yaml --no-output
expect_clean "cannot read scenario file '$work': it is a directory" run "$work" --no-output
expect_clean "cannot read topology file '$work': it is a directory" check "$work"
expect_clean "cannot read parameter file '$work': it is a directory" \
  bench fabric --topology "$toy" --transport rdma --nic-config "$work" --quiet
expect_clean "scenario file '/dev/zero' contains a NUL byte" run /dev/zero --no-output
printf 'topology:\n  kind: fat_tree\n  k: 4\n  port: 400G\ntopology:\n  kind: fat_tree\n  k: 8\n  port: 400G\n' > duptopo.yaml
expect_clean "duptopo.yaml:5: key 'topology' given twice" check duptopo.yaml
printf 'topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n  k: 8\n' > dupkeytopo.yaml
expect_clean "dupkeytopo.yaml:6: " check dupkeytopo.yaml
printf 'topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n---\ntopology:\n  kind: fat_tree\n' > docstopo.yaml
expect_clean "a second YAML document" check docstopo.yaml

# Physically impossible topologies: user errors, not internal errors.
printf 'topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n  phy:\n    phy_latency: 0ns\n    dac_delay_per_m: 0ns\n' > zerolat.yaml
expect_clean "a link needs a positive latency" check zerolat.yaml
expect_clean "a link needs a positive latency" bench fabric --topology zerolat.yaml --quiet
printf 'topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n  cables:\n    leaf_spine: {kind: aoc, length: 9000000km}\n' > longcable.yaml
expect_clean "is out of range (1um..1000km)" check longcable.yaml
printf 'topology:\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n  phy:\n    phy_latency: 100000s\n' > slowphy.yaml
expect_clean "topology.phy.phy_latency: '100000s' is out of range" check slowphy.yaml

# Sizes with no bound: refused with an estimate before anything is built.
expect_clean "too large: 1073741824 LPs with 16 events each" bench phold --lps 1073741824 --quiet
expect_clean "--qps: Value 100000000 not in range" bench fabric --topology "$toy" --pattern pair --qps 100000000 --quiet
printf 'topology:\n  name: huge-rail\n  kind: rail_optimized\n  servers: 1048576\n  switch_radix: 256\n  port: 400G\n' > huge.yaml
out=$(timeout 300 "$stepsim" check huge.yaml 2>&1); rc=$?
check "1M-server rail: too large, with the estimate (exit $rc)" '[[ $rc -eq 2 && "$out" == *"too large: huge-rail (1048576 servers"*"GiB of memory"* ]]'
sed 's/k: 8/k: 128/' "$src/topologies/fat-tree-k8.yaml" > ft128.yaml
start=$SECONDS
out=$(STEPSIM_MEMORY_LIMIT=1GiB timeout 300 "$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" check ft128.yaml 2>&1); rc=$?
check "fat_tree k 128 in 1 GiB: too large at once (exit $rc, $((SECONDS - start)) s)" '[[ $rc -eq 2 && $(grep -c "too large: fat-tree-k8 (524288 servers, 20480 switches" <<<"$out") -eq 1 && $((SECONDS - start)) -lt 120 ]]'
STEPSIM_MEMORY_LIMIT=lots expect_clean "STEPSIM_MEMORY_LIMIT: 'lots' is not a size" check "$toy"
STEPSIM_MEMORY_LIMIT=1MiB expect_clean "too large: 1048576 LPs" bench phold --lps 1048576 --quiet
STEPSIM_SYNC=fast expect_clean "STEPSIM_SYNC: 'fast' is not a transport; allowed values: shm, mpi" bench phold --lps 16 --quiet

# NaN and out-of-range values.
expect_clean "--ber: fabric.ber: 'nan' is not a number" bench fabric --topology "$toy" --ber nan --quiet
expect_clean "--ber: fabric.ber: '-1' is out of range (0..0.5 or topology)" bench fabric --topology "$toy" --ber -1 --quiet
expect_clean "--ber: Value nan not in range" bench perftest write_bw --topology "$toy" --ber nan --quiet
expect_clean "--hot-fraction: Value nan not in range" bench fabric --topology "$toy" --hot-fraction nan --quiet
expect_clean "--stepfactor: Value nan not in range" bench nccl allreduce -f nan --quiet
expect_clean "--remote: Value nan not in range" bench phold --remote nan --quiet
expect_clean "--mtu: fabric.mtu: '0' is out of range (64..65536 bytes)" bench fabric --topology "$toy" --mtu 0 --quiet
expect_clean "--qps: Value 0 not in range 1 to 1048576" bench fabric --topology "$toy" --pattern pair --qps 0 --quiet
expect_clean "lanes left 1000 is out of range (1..8" bench fabric --topology "$toy" --fault lanes:0@1us=1000 --quiet
expect_clean "--gpus: must be >= 1" bench nccl allreduce --gpus 0 --quiet

# Outputs: checked before simulating.
start=$SECONDS
expect_clean "-o: cannot write '/nonexistent-dir/x.h5'" run "$tiny" --quiet -o /nonexistent-dir/x.h5
expect_clean "--json: cannot write '/nonexistent-dir/x.json'" run "$tiny" --quiet --no-output --json /nonexistent-dir/x.json
expect_clean "--trace: cannot write '/nonexistent-dir/t.json'" run "$tiny" --quiet --no-output --trace /nonexistent-dir/t.json
expect_clean "--json: cannot write '/nonexistent-dir/p.json'" bench phold --quiet --json /nonexistent-dir/p.json
expect_clean "--json: cannot write '/nonexistent-dir/f.json'" bench fabric --topology "$toy" --quiet --json /nonexistent-dir/f.json
check "unwritable outputs are found before the step is simulated ($((SECONDS - start)) s)" '[[ $((SECONDS - start)) -lt 60 ]]'
expect_clean "--json and -o name the same file 'same.out'" run "$tiny" --quiet -o same.out --json same.out
cp "$tiny" scen.yaml; sed -i "s#^topology: .*#topology: $toy#" scen.yaml
expect_clean "-o: 'scen.yaml' is the input file" run scen.yaml --quiet -o scen.yaml
check "the scenario is intact" 'cmp -s <(sed "s#^topology: .*##" scen.yaml) <(sed "s#^topology: .*##" "$tiny")'
expect_clean "-o: the file name is empty" run "$tiny" --quiet -o ""
expect_clean "--json: '$work' is a directory" run "$tiny" --quiet --no-output --json "$work"
check "no file left behind by the checks" '[[ ! -e same.out && ! -e tiny.h5 ]]'

# A scenario over 64 KiB: its text is the dataset /meta/scenario (an attribute cannot hold it).
{ cat scen.yaml; for i in $(seq 1 1200); do echo "# padding line $i of a long comment to exceed 64 KiB ......"; done; } > big.yaml
out=$("$stepsim" run big.yaml --quiet --fidelity ideal -o big.h5 2>&1); rc=$?
size=$(stat -c %s big.yaml)
check "64+ KiB scenario: written (exit $rc), all $size bytes in dataset /meta/scenario" '[[ $rc -eq 0 ]] && h5dump -H -d /meta/scenario big.h5 | grep -q "STRSIZE $size;"'

# Incomplete step: no MFU, exit 1.
out=$("$stepsim" run "$tiny" --quiet --no-output --fidelity ideal --set end=1us 2>&1); rc=$?
check "incomplete step: exit 1 ($rc), no MFU percentage" '[[ $rc -eq 1 && "$out" == *"MFU                  n/a (the step did not complete)"* && "$out" != *"MFU "*"%"* ]]'
check "incomplete step: no tokens per second" '[[ "$out" == *"tokens per second    n/a (the step did not complete)"* ]]'

# A partial step's file carries no MFU (NaN) and says why it stopped.
out=$("$stepsim" run "$tiny" --quiet --fidelity ideal --set end=1us -o partial.h5 2>&1); rc=$?
meta=$(h5dump -a /meta/mfu -a /meta/status -a /meta/complete partial.h5 2>&1)
check "partial step file: mfu NaN, status stopped_at_end, complete 0 (exit $rc)" '[[ $rc -eq 1 && $(grep -A8 "\"mfu\"" <<<"$meta" | grep -ciE "nan") -ge 1 && "$meta" == *"\"stopped_at_end\""* ]]'
out=$("$stepsim" run "$tiny" --quiet --fidelity ideal -o done.h5 2>&1)
meta=$(h5dump -a /meta/status done.h5 2>&1)
check "complete step file: status complete" '[[ "$meta" == *"\"complete\""* ]]'
check "the header names the step mode" '[[ "$out" == *"fidelity ideal, step memoized, ranks "* ]]'

# Combinations that cannot take effect.
expect_clean "step.mode whole needs packet or cell fidelity (this run: fidelity ideal)" \
  run "$tiny" --no-output --quiet --set fidelity=ideal --set step.mode=whole
expect_clean "step.mode whole needs packet or cell fidelity (this run: fidelity analytical)" \
  run "$tiny" --no-output --quiet --fidelity analytical --set step.mode=whole
expect_clean "--fidelity: an empty fidelity" run "$tiny" --no-output --quiet --fidelity ""
expect_clean "--pcie-fault: '1:gen6@1us': the link of GPU 1's NIC is already gen6x16" \
  run "$tiny" --no-output --quiet --set step.mode=whole --pcie-fault 1:gen6@1us
expect_clean "--pcie-fault: '1:gen7@1us': the link of GPU 1's NIC is already gen6x16" \
  run "$tiny" --no-output --quiet --set step.mode=whole --pcie-fault 1:gen7@1us
sed 's/server_leaf:.*/server_leaf: {port: 400G}/' "$src/tests/data/megascale-mini.yaml" > breakout.yaml
expect_clean "topology.leaf_breakout: 2 legs of 400G (cables.server_leaf.port) are faster than the leaf port they split (400G" \
  check breakout.yaml

# A job's GPUs out of server order would split its TP groups over servers.
printf 'model: {name: t, layers: 2, hidden: 256, heads: 4, ffn: 1024, vocab: 1000, seq_len: 128}\nparallel: {tp: 4, pp: 1, micro_batch: 1, global_batch: 4}\ntopology: %s\nfidelity: cell\nstep: {mode: whole}\njobs:\n  - name: a\n    gpus: 0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15\n' "$toy" > jobsplit.yaml
expect_clean "jobs[0].gpus (0,8,1,9,2,10,3,11,4,12,5,13,6,14,7,15): GPU 1 comes after GPU 8: list a job's GPUs server by server" run jobsplit.yaml --no-output --quiet
expect_clean "GPU 0 comes after GPU 1" run jobsplit.yaml --no-output --quiet --set jobs.a.gpus=1,0,2-15
out=$("$stepsim" run jobsplit.yaml --no-output --quiet --set jobs.a.gpus=8-15,0-7 2>&1); rc=$?
check "servers in any order: 8-15,0-7 runs (exit $rc)" '[[ $rc -eq 0 ]]'

# A 10 ns sample interval over a whole step (a drained engine ends at its horizon, end: 1 h).
out=$(timeout 120 "$stepsim" run "$tiny" --quiet -o s10ns.h5 --set step.mode=whole --set output.sample_interval=10ns 2>&1); rc=$?
check "whole step, output.sample_interval 10ns: runs (exit $rc)" '[[ $rc -eq 0 ]] && h5ls s10ns.h5/samples | grep -q ports'

# perftest: the work requests are bounded.
expect_clean "-q x -n: 65536 QPs x 10000000 iterations = 655360000000 work requests, more than 10000000" \
  bench perftest write_bw -q 65536 -n 10000000 --quiet

# Text values: at most 4,096 bytes, UTF-8; YAML nesting and aliases.
long=$(head -c 70000 /dev/zero | tr '\0' x)
start=$SECONDS
expect_clean "--set model.name: a value of 70000 bytes (at most 4096)" run "$tiny" --quiet -o long.h5 --set "model.name=$long"
check "a 70 KB model.name: refused before simulating, no file ($((SECONDS - start)) s)" '[[ ! -e long.h5 && $((SECONDS - start)) -lt 30 ]]'
expect_clean "--set model.name: the value is not UTF-8 text" run "$tiny" --no-output --quiet --set "model.name=$(printf 'caf\xe9')"
sed "s/^  name: .*/  name: $(printf 'caf\xe9')/; s#^topology: .*#topology: $toy#" "$tiny" > latin1.yaml
expect_clean "latin1.yaml:" run latin1.yaml --no-output --quiet
expect_clean "is not UTF-8 text (save the file as UTF-8" run latin1.yaml --no-output --quiet
python3 -c "print('model: ' + '[' * 3000 + ']' * 3000)" > deep.yaml
expect_clean "deep.yaml: nested more than 64 levels deep" run deep.yaml --no-output
python3 -c "print(''.join(' ' * i + 'k%d:' % i + chr(10) for i in range(3000)))" > deepblock.yaml
expect_clean "deepblock.yaml: nested more than 64 levels deep" run deepblock.yaml --no-output
python3 -c "
lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
lines += ['a%d: &a%d [%s]' % (i, i, ', '.join(['*a%d' % (i - 1)] * 10)) for i in range(1, 30)]
print(chr(10).join(lines))" > bomb.yaml
start=$SECONDS
expect_clean "bomb.yaml:1: a0: expected a single value" run bomb.yaml --no-output
check "an alias bomb (10^30 leaves) is checked in its text's time ($((SECONDS - start)) s)" '[[ $((SECONDS - start)) -lt 20 ]]'

# moe.overlap dualpipe's layout rules (deepseek-ai/DualPipe's) and, in the whole step, no full
# recomputation.
expect_clean "moe.overlap dualpipe needs micro-batches per step (parallel.global_batch / (micro_batch x dp) = 2) even and at least 2 x parallel.pp (4)" \
  run "$tiny" --no-output --quiet --set moe.overlap=dualpipe --set parallel.global_batch=4
expect_clean "moe.overlap dualpipe needs parallel.pp even and at least 2" \
  run "$tiny" --no-output --quiet --set moe.overlap=dualpipe --set parallel.pp=1
expect_clean "moe.overlap dualpipe with step.mode whole pairs the passes layer by layer" \
  run "$tiny" --no-output --quiet --set moe.overlap=dualpipe --set step.mode=whole --set parallel.recompute=full

# Unknown subcommands list the subcommands.
expect_clean "'frobnicate' is not a subcommand; the subcommands are: bench, headroom, check, list, plan, run" frobnicate
expect_clean "stepsim bench: 'frob' is not a subcommand; the subcommands are: phold, fabric, perftest, nccl" bench frob
finish
