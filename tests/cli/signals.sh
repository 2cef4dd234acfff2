#!/usr/bin/env bash
# SIGTERM stops a long run at a window boundary: the report says INTERRUPTED, a digest is still
# printed, and the exit code is 128 + 15 (what a batch scheduler expects).
set -uo pipefail
stepsim=$1
"$stepsim" bench phold --lps 4096 --end 10s --quiet > "${TMPDIR:-/tmp}/stepsim_sigterm.$$" 2>&1 &
pid=$!
sleep 3
kill -TERM "$pid"
wait "$pid"; rc=$?
out=$(cat "${TMPDIR:-/tmp}/stepsim_sigterm.$$"); rm -f "${TMPDIR:-/tmp}/stepsim_sigterm.$$"
passed=0; failed=0
if [[ $rc -eq 143 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: exit code $rc, want 143"; fi
if grep -q "^status           INTERRUPTED at " <<<"$out" && grep -q "^digest " <<<"$out"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: no INTERRUPTED/digest lines:"; echo "$out"; fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
