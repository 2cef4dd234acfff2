#!/usr/bin/env bash
# `stepsim bench phold` must print the same digest and committed-event count at 1, 2 and 4 ranks
# and 1 and 2 threads per rank (the reference scenario, shortened to keep the test fast).
set -euo pipefail
stepsim=$1; mpiexec=$2; shift 2; mpiflags=("$@")
args=(bench phold --lps 1024 --events-per-lp 16 --remote 0.1 --lookahead 1us --mean 2us --end 400us --quiet)

reference=""
for ranks in 1 2 4; do
  for threads in 1 2; do
    out=$("$mpiexec" -n "$ranks" "${mpiflags[@]}" "$stepsim" "${args[@]}" --threads "$threads")
    digest=$(grep '^digest' <<<"$out" | awk '{print $2}')
    events=$(grep '^committed events' <<<"$out" | awk '{print $3}')
    line="digest $digest events $events"
    echo "ranks $ranks threads $threads: $line"
    [[ -n "$digest" && -n "$events" ]] || { echo "FAIL: no digest/events line"; echo "$out"; exit 1; }
    if [[ -z "$reference" ]]; then reference=$line
    elif [[ "$line" != "$reference" ]]; then echo "FAIL: differs from 1 rank x 1 thread ($reference)"; exit 1; fi
  done
done
# remote 0.5 and the METIS and cyclic partitioners must agree with the block one too.
a=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition block | grep '^digest')
b=$("$mpiexec" -n 1 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition metis | grep '^digest')
c=$("$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" "${args[@]}" --remote 0.5 --partition cyclic | grep '^digest')
[[ "$a" == "$b" && "$a" == "$c" ]] || { echo "FAIL: remote 0.5: $a vs $b vs $c"; exit 1; }
echo "1 passed, 0 failed"
