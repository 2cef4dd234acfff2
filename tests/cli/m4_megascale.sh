#!/usr/bin/env bash
# Validation case M4 (MegaScale's Megatron-LM baseline) in miniature on MegaScale's fabric shape
# (tests/data/m4-megascale-mini.yaml on megascale-mini.yaml: 3-tier 1:1 Clos, ToR downlinks split
# into two server ports, so an uplink carries twice a NIC; 4 NICs per server on 4 ToRs), whole step
# at cell fidelity against memoized mode:
# - DP 8 in Megatron's rank order: each stage's data-parallel rings stay in its ToR set; the
#   spines carry the pipeline sends only (under 3% of what the server ports carry).
# - DP 6: stage 1's rings cross from pod 0 to pod 1 (the spines carry over 20%); ECMP loses
#   nothing against adaptive load balancing (within 2%): no uplink is shared by more than a NIC's
#   worth of a ring, so collisions of two ring flows fit in one uplink.
# - The whole step is never faster than memoized (1% slack), under ECMP and adaptive.
set -uo pipefail
stepsim=$1; data=$2
source "$(dirname "$0")/lib.sh"
cd "$(mktemp -d)" || exit 1
sc=$data/m4-megascale-mini.yaml
step_us() {
  awk '/^step time/ { v = $3; u = $4; if (u == "s") v *= 1e6; else if (u == "ms") v *= 1e3; print v }' <<<"$1"
}
dp6=(--set parallel.dp=6 --set parallel.global_batch=12)
spine_share() {  # bytes leaving spine ports over bytes leaving server ports, from /links
  /usr/bin/python3 -c '
import sys, h5py
l = h5py.File(sys.argv[1], "r")["links"][:]
print(l["bytes"][l["tier"] == 2].sum() / l["bytes"][l["tier"] == 0].sum())' "$1"
}
for dp in 8 6; do
  args=(); [[ $dp -eq 6 ]] && args=("${dp6[@]}")
  out=$("$stepsim" run "$sc" --quiet --no-output --set step.mode=memoized "${args[@]}" 2>&1)
  memo=$(step_us "$out")
  out=$("$stepsim" run "$sc" --quiet --set step.mode=whole "${args[@]}" -o "dp$dp.h5" 2>&1)
  ecmp=$(step_us "$out")
  out=$("$stepsim" run "$sc" --quiet --no-output --set step.mode=whole --set fabric.lb=adaptive \
        "${args[@]}" 2>&1)
  adaptive=$(step_us "$out")
  share=$(spine_share "dp$dp.h5")
  check "dp $dp: every run printed a step time" '[[ -n "$memo" && -n "$ecmp" && -n "$adaptive" && -n "$share" ]]'
  echo "dp $dp: memoized $memo us, whole ECMP $ecmp us, whole adaptive $adaptive us, spine share $share"
  check "dp $dp: whole ECMP ($ecmp us) no faster than memoized ($memo us)" \
    'awk -v w="$ecmp" -v m="$memo" "BEGIN { exit !(w >= 0.99 * m) }"'
  check "dp $dp: whole adaptive ($adaptive us) no faster than memoized ($memo us)" \
    'awk -v w="$adaptive" -v m="$memo" "BEGIN { exit !(w >= 0.99 * m) }"'
  if [[ $dp -eq 8 ]]; then
    check "dp 8: the rings stay in their ToR sets (spines carry $share of the server ports' bytes)" \
      'awk -v s="$share" "BEGIN { exit !(s < 0.03) }"'
  else
    check "dp 6: stage 1's rings cross the spines ($share of the server ports' bytes)" \
      'awk -v s="$share" "BEGIN { exit !(s > 0.20) }"'
    check "dp 6: ECMP ($ecmp us) within 2% of adaptive ($adaptive us)" \
      'awk -v e="$ecmp" -v a="$adaptive" "BEGIN { exit !(e <= 1.02 * a) }"'
  fi
done
finish
