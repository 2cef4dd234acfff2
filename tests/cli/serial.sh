#!/usr/bin/env bash
# A process no launcher started runs without MPI: `--version`, `--help`, `list`, `check`,
# `headroom` and a one-rank `run` or `bench` start no other process (Open MPI's singleton
# MPI_Init forks its daemon, orted), and the one-rank path writes the same HDF5 bytes as
# `mpirun -n 1` (but /meta@wall_s) with the same summary; under mpiexec the commands that do
# not start MPI still print once.
set -uo pipefail
stepsim=$1; mpiexec=$2; root=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
tiny=$root/workloads/tiny.yaml
toy=$root/topologies/toy-2server.yaml

# execve calls after the first (the program itself): the processes it started.
children() { strace -f -qq -e trace=execve -o "$dir/trace" "$@" >/dev/null 2>&1; echo $(($(grep -c 'execve(' "$dir/trace") - 1)); }
if strace -f -qq -e trace=execve -o /dev/null true 2>/dev/null; then
  for cmd in "--version" "--help" "list scenario" "check $toy" "headroom --rate 100G --length 5m" \
    "run $tiny --quiet --fidelity analytical --no-output" "run $tiny --quiet -o $dir/t.h5" \
    "bench fabric --topology $toy --quiet"; do
    # shellcheck disable=SC2086
    n=$(children "$stepsim" $cmd)
    check "stepsim $cmd starts no process (saw $n)" '[[ $n -eq 0 ]]'
  done
else
  echo "strace cannot trace here: the no-process checks are skipped"
fi

# Same bytes but the wall time: the files have the same size and differ in at most one run of
# 8 bytes (the double /meta@wall_s).
same_but_wall() {
  [[ $(stat -c %s "$1") -eq $(stat -c %s "$2") ]] || return 1
  local offsets
  offsets=$(cmp -l "$1" "$2" | awk '{print $1}')
  [[ -z "$offsets" ]] && return 0
  (($(tail -1 <<<"$offsets") - $(head -1 <<<"$offsets") < 8))
}
for fidelity in packet cell; do
  serial=$("$stepsim" run "$tiny" --quiet --fidelity "$fidelity" -o s.h5 2>&1 | grep -E '^(step time|digest)')
  mpi=$("$mpiexec" -n 1 "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet --fidelity "$fidelity" -o m.h5 2>&1 |
    grep -E '^(step time|digest)')
  out="$serial vs $mpi"
  check "$fidelity: the same step time and digest without MPI and on mpirun -n 1" \
    '[[ -n "$serial" && "$serial" == "$mpi" ]]'
  out=$(cmp -l s.h5 m.h5 | head)
  check "$fidelity: the same HDF5 bytes (but wall_s) without MPI and on mpirun -n 1" \
    'same_but_wall s.h5 m.h5'
done
"$stepsim" bench fabric --topology "$toy" --quiet --samples s.h5 >/dev/null 2>&1
"$mpiexec" -n 1 "${mpiflags[@]}" "$stepsim" bench fabric --topology "$toy" --quiet --samples m.h5 >/dev/null 2>&1
check "bench fabric --samples: the same bytes without MPI and on mpirun -n 1" 'cmp -s s.h5 m.h5'

# Under mpiexec, rank 0 alone speaks (its rank read from the launcher's environment).
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" --version 2>&1)
check "--version on 2 ranks prints once" '[[ $(grep -c "^stepsim " <<<"$out") -eq 1 ]]'
out=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" check "$toy" 2>&1)
check "check on 2 ranks prints once, partitioned for 2 ranks" \
  '[[ $(grep -c "^servers " <<<"$out") -eq 1 ]] && grep -q "^partition         2 ranks" <<<"$out"'
finish
