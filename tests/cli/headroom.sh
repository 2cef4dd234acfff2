#!/usr/bin/env bash
# `stepsim headroom` reproduces the in-flight column of DOMAIN.md's worked table exactly
# (400 Gb/s, MTU 4096, fibre, T_switch + T_nic = 400 ns) and the mlx5 driver's value (C1).
set -uo pipefail
stepsim=$1
passed=0; failed=0
check() {  # description, expected line fragment, args...
  local what=$1 want=$2; shift 2
  local out
  out=$("$stepsim" headroom "$@" 2>&1)
  if grep -qF -- "$want" <<<"$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $what: want '$want' in:"; echo "$out"; fi
}
check "30 m"  "in flight        35000 B"  --rate 400G --length 30m --mtu 4096 --cable aoc
check "100 m" "in flight        70000 B"  --rate 400G --length 100m --mtu 4096
check "300 m" "in flight        170000 B" --rate 400Gbps --length 300m --mtu 4096
check "optics add two DSPs" "round trip       1.65us" --rate 400G --length 100m --cable optics
check "mlx5 400G 7m" "mlx5 driver xoff 137541 B" --rate 400G --length 7m --mtu 4096
check "mlx5 100G 100m" "mlx5 driver xoff 55780 B" --rate 100G --length 100m --mtu 1500
# Switch side (SONiC dynamic buffer model, Spectrum constants), hand-computed in
# tests/unit/fabric/pfc_headroom_test.cpp.
check "switch 100G 5m" "headroom       35313 B" --rate 100G --length 5m --mtu 1500 --cell 144 --cell-factor sonic
check "switch per port" "per port       70626 B" --rate 100G --length 5m --mtu 1500 --cell 144 --cell-factor sonic
check "switch pool" "switch         3439680 B" --rate 100G --length 5m --mtu 1500 --cell 144 --shared-ratio 2 --cell-factor sonic
check "switch 400G" "xon            36864 B" --rate 400G --length 5m --cell 144
# The vendor's cell factor (the default, wire: packets counted with their 20 B of preamble and
# gap) against SONiC's worst case at 100G, 100 m, MTU 9216, 256 B cells: Mellanox recommends
# 101.6 KB there (Linux commit edf777f55aee); wire gives 108,185 B (+6.5%), sonic 133,352 B (+31%).
check "switch vendor factor" "cell factor    3.0476" --rate 100G --length 100m --mtu 9216
check "switch vendor 100G 100m" "headroom       108185 B" --rate 100G --length 100m --mtu 9216
check "switch sonic 100G 100m" "headroom       133352 B" --rate 100G --length 100m --mtu 9216 --cell-factor sonic
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
