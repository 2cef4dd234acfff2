#!/usr/bin/env bash
# `stepsim bench phold` must print the same digest and committed-event count at 1, 2 and 4 ranks
# and 1 and 2 threads per rank (the reference scenario, shortened to keep the test fast).
set -uo pipefail
stepsim=$1; mpiexec=$2; shift 2; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
args=(bench phold --lps 1024 --events-per-lp 16 --remote 0.1 --lookahead 1us --mean 2us --end 400us --quiet)

summary() {
  echo "digest $(grep '^digest' <<<"$out" | awk '{print $2}')" \
    "events $(grep '^committed events' <<<"$out" | awk '{print $3}')"
}
run_matrix summary -- "${args[@]}"
check "a digest and an event count" '[[ "$reference" =~ ^digest\ [^\ ]+\ events\ [0-9,]+$ ]]'
# remote 0.5 and the METIS and cyclic partitioners must agree with the block one too.
a=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition block | grep '^digest')
b=$("$mpiexec" -n 1 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition metis | grep '^digest')
c=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition cyclic | grep '^digest')
out="$a | $b | $c"
check "remote 0.5: block at 2 ranks, metis at 1, cyclic at 2 agree" '[[ -n "$a" && "$a" == "$b" && "$a" == "$c" ]]'
# The window's synchronisation by MPI messages (STEPSIM_SYNC=mpi) instead of shared memory.
d=$(STEPSIM_SYNC=mpi "$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition cyclic | grep '^digest')
e=$(STEPSIM_SYNC=mpi "$mpiexec" -n 4 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition block | grep '^digest')
out="$a | $d | $e"
check "remote 0.5: MPI messages at 2 and 4 ranks agree with shared memory" '[[ -n "$a" && "$a" == "$d" && "$a" == "$e" ]]'
finish
