#!/usr/bin/env bash
# Every user error: exit code 2, one message naming the option and the allowed values, printed once
# even with several ranks, and no abort trace.
set -uo pipefail
stepsim=$1; mpiexec=$2; shift 2; mpiflags=("$@")
passed=0; failed=0

expect_error() {  # expected-substring, args...
  local want=$1; shift
  local err rc
  err=$("$mpiexec" -n "${STEPSIM_TEST_ERROR_RANKS:-2}" "${mpiflags[@]}" "$stepsim" "$@" 2>&1 >/dev/null); rc=$?
  local count
  count=$(grep -cF -- "$want" <<<"$err" || true)
  if [[ $rc -eq 2 && $count -eq 1 ]] && ! grep -qE "internal error|MPI_ABORT|backtrace|terminate called|Signal:" <<<"$err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: stepsim $* -> exit $rc, '$want' seen $count times:"; echo "$err"
  fi
}

expect_error "'1' is not a time: it has no unit" bench phold --lookahead 1
expect_error "--end: '2xs' is not a time: unknown unit 'xs'" bench phold --end 2xs
expect_error "--mean (500ns) is the mean total delay and must be at least --lookahead (1us)" bench phold --mean 500ns
expect_error "unknown partitioner 'scotch' (allowed: block, cyclic, metis, spread)" bench phold --partition scotch
expect_error "--remote: Value 1.5 not in range" bench phold --remote 1.5
expect_error "The following argument was not expected: --frobnicate" bench phold --frobnicate
expect_error "A subcommand is required" bench
expect_error "--rate: '400Gbs' is not a data rate: unknown unit 'Gbs'" headroom --rate 400Gbs
expect_error "--cable: copper not in {fiber,aoc,dac,optics}" headroom --cable copper
expect_error "--small-packets: Value 101 not in range" headroom --small-packets 101
expect_error "--cell-factor: worst not in {wire,sonic}" headroom --cell-factor worst
expect_error "--pipeline: '18QB' is not a size" headroom --pipeline 18QB

# --help succeeds.
if "$stepsim" bench phold --help | grep -q -- "--events-per-lp"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: --help"; fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
