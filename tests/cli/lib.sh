# Helpers the command-line tests share (source it after setting stepsim, mpiexec, mpiflags).
# check DESC CONDITION: counts a pass or prints the failure with the last output ($out).
# expect_error SUBSTRING ARGS...: `stepsim ARGS` on 2 ranks must exit 2 and print SUBSTRING once
#   (on STEPSIM_TEST_ERROR_RANKS ranks when set: scripts/test.sh's sanitizer pass uses 1, the
#   Release pass checks "once across ranks").
# finish: prints the counts; the exit status says whether everything passed.
passed=0
failed=0
check() {
  if eval "$2"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; echo "${out:-}"; fi
}
expect_error() {
  local want=$1; shift
  local err rc
  err=$("$mpiexec" -n "${STEPSIM_TEST_ERROR_RANKS:-2}" "${mpiflags[@]}" "$stepsim" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq 2 && $(grep -cF -- "$want" <<<"$err") -eq 1 ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: stepsim $* -> exit $rc:"; echo "$err"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
