#!/usr/bin/env bash
# Golden output of one scenario case (tests/scenario/<case>/): runs `stepsim $(cat args)` from the
# source tree at every rank count in `ranks` (default: 1 2) and compares, line by line, the output
# lines named in expected.txt (label = the text before the first run of two spaces) with it.
# Usage: check_case.sh STEPSIM MPIEXEC SOURCE_DIR CASE_DIR [mpiexec flags...]
#        check_case.sh --update STEPSIM MPIEXEC SOURCE_DIR CASE_DIR [...]  (rewrites expected.txt)
set -uo pipefail
update=0
if [[ ${1:-} == --update ]]; then update=1; shift; fi
stepsim=$1; mpiexec=$2; src=$3; case_dir=$4; shift 4; mpiflags=("$@")
name=$(basename "$case_dir")
read -r -a args <"$case_dir/args"
ranks=(1 2)
[[ -f "$case_dir/ranks" ]] && read -r -a ranks <"$case_dir/ranks"
expected="$case_dir/expected.txt"
# The labels to compare: those of expected.txt, or (first update) digest and step time.
labels=()
if [[ -f "$expected" ]]; then
  while IFS= read -r l; do labels+=("${l%%  *}"); done <"$expected"
else
  labels=("digest" "step time")
fi
select_lines() {  # stdin: stepsim's output; stdout: the labelled lines, spaces squeezed
  local out l label
  out=$(cat)
  for label in "${labels[@]}"; do
    l=$(grep -m1 -F -- "$label  " <<<"$out" | grep -E "^${label//[^a-zA-Z0-9 ]/.}  " | tr -s ' ')
    [[ -n "$l" ]] && echo "$l"
  done
}
cd "$src" || exit 1
failed=0
passed=0
for np in "${ranks[@]}"; do
  out=$("$mpiexec" -n "$np" "${mpiflags[@]}" "$stepsim" "${args[@]}" 2>&1)
  rc=$?
  got=$(select_lines <<<"$out")
  if [[ $update -eq 1 ]]; then
    printf '%s\n' "$out" | while IFS= read -r l; do
      for label in "${labels[@]}"; do
        [[ "$l" == "$label  "* ]] && { echo "$l"; break; }
      done
    done >"$expected"
    echo "$name: wrote $expected (exit $rc, $np ranks)"
    exit 0
  fi
  want=$(tr -s ' ' <"$expected")
  if [[ $rc -eq 0 && "$got" == "$want" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name at $np ranks (exit $rc): stepsim ${args[*]}"
    diff <(echo "$want") <(echo "$got") | sed 's/^/  /'
    [[ $rc -ne 0 ]] && tail -5 <<<"$out"
  fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
