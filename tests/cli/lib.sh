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

# run_matrix SUMMARY [-r RANKS] [-t THREADS] [-x RxT] -- ARGS...: determinism across ranks and
#   threads. Runs `"$mpiexec" -n R "${mpiflags[@]}" "$stepsim" ARGS... --threads T` (stdout and
#   stderr in $out) for every R in RANKS (default "1 2 4") and T in THREADS (default "1 2"), in
#   that order, except the points -x names (e.g. -x 4x2; repeatable). "{R}" and "{T}" in ARGS
#   become the point's ranks and threads (per-point output files). SUMMARY, a command evaluated
#   with $out, $ranks and $threads set, prints what must be the same at every point; each point
#   after the first is a check against the first's. Afterwards $first_out and $reference hold
#   the first point's output and summary (for the caller's checks on it).
run_matrix() {
  local summary=$1; shift
  local rank_list="1 2 4" thread_list="1 2" skip=" " ranks threads line a
  while [[ $# -gt 0 && $1 != -- ]]; do
    case $1 in
      -r) rank_list=$2 ;;
      -t) thread_list=$2 ;;
      -x) skip+="$2 " ;;
      *) echo "run_matrix: unknown option $1" >&2; return 2 ;;
    esac
    shift 2
  done
  shift
  first_out="" reference=""
  local first=1
  for ranks in $rank_list; do
    for threads in $thread_list; do
      [[ $skip == *" ${ranks}x${threads} "* ]] && continue
      local args=()
      for a in "$@"; do a=${a//\{R\}/$ranks}; args+=("${a//\{T\}/$threads}"); done
      out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" "${args[@]}" --threads "$threads" 2>&1)
      line=$(eval "$summary")
      if [[ $first -eq 1 ]]; then
        first=0 first_out=$out reference=$line
      else
        check "ranks $ranks threads $threads: '$line' vs '$reference'" '[[ "$line" == "$reference" ]]'
      fi
    done
  done
  out=$first_out
}
