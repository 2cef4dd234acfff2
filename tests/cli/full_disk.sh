#!/usr/bin/env bash
# A full disk: every output that cannot be written is one error (exit 2), the step's summary is
# still printed, and nothing crashes (HDF5 1.10 used to segfault at exit closing a file whose
# close had failed). The HDF5 cases need a small tmpfs (mount, as root): without one they are
# skipped and said so; the text outputs (--json, --trace) use /dev/full. One process without a
# launcher, and 2 ranks (where parallel HDF5 used to hang: rank 0 now writes alone, the others
# learn its outcome), each under a time limit: a hang fails the case (exit 124).
set -uo pipefail
stepsim=$1; mpiexec=$2; src=$3; shift 3; mpiflags=("$@")
source "$(dirname "$0")/lib.sh"
work=$(mktemp -d); cd "$work" || exit 1
tiny=$src/workloads/tiny.yaml
toy=$src/topologies/toy-2server.yaml

# expect_full DESC SUMMARY ARGS...: exit 2, one "stepsim: error:" line, no crash; SUMMARY (a
# line start) on stdout when given.
expect_full() {
  local desc=$1 summary=$2; shift 2
  local out err rc
  out=$(timeout 300 ${LAUNCH:-} "$stepsim" "$@" 2>err.txt); rc=$?
  err=$(cat err.txt)
  if [[ $rc -eq 2 && $(grep -c "stepsim: error:" <<<"$err") -eq 1 ]] &&
     { [[ -z ${REASON:-} ]] || grep -q "$REASON" <<<"$err"; } &&
     ! grep -qiE "segmentation|signal|internal error|backtrace|terminate called" <<<"$err" &&
     { [[ -z $summary ]] || grep -q "^$summary" <<<"$out"; }; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: $desc -> exit $rc"; echo "$err"; echo "$out" | tail -3
  fi
}

expect_full "--json on /dev/full" "step time" run "$tiny" --quiet --no-output --json /dev/full
expect_full "--trace on /dev/full" "step time" run "$tiny" --quiet --no-output --trace /dev/full
expect_full "bench nccl -J on /dev/full" "" bench nccl allreduce -b 8 -e 64 --quiet -J /dev/full

disk=$work/disk; mkdir -p "$disk"
if mount -t tmpfs -o size=256k tmpfs "$disk" 2>/dev/null; then
  trap 'umount "$disk" 2>/dev/null; rm -rf "$work"' EXIT
  # fill KIB: the tmpfs with KIB KiB left (its own HDF5 file removed).
  fill() {
    rm -f "$disk"/*
    local free; free=$(df -k --output=avail "$disk" | tail -1)
    head -c $(((free - $1) * 1024)) /dev/zero > "$disk/fill"
  }
  # Every HDF5 error says why (the system's words).
  export REASON="No space left on device"
  for left in 0 4 16; do
    fill $left
    expect_full "memoized step, $left KiB left" "step time" run "$tiny" --quiet --set step.mode=memoized -o "$disk/a.h5"
    fill $left
    expect_full "ideal step, $left KiB left" "step time" run "$tiny" --quiet --fidelity ideal -o "$disk/a.h5"
    fill $left
    if [[ $left -eq 0 ]]; then  # the time series file is created before the step: refused first
      expect_full "whole step, $left KiB left" "" run "$tiny" --quiet --set step.mode=whole -o "$disk/a.h5"
    else
      expect_full "whole step, $left KiB left" "step time" run "$tiny" --quiet --set step.mode=whole -o "$disk/a.h5"
    fi
  done
  fill 4
  expect_full "bench fabric --samples, 4 KiB left" "stepsim bench fabric" \
    bench fabric --topology "$toy" --samples "$disk/a.h5" --sample-interval 100ns --quiet
  # 2 ranks: the memoized step's tables, the whole step's /samples (created before the step and
  # appended to while it runs, gathered to rank 0) and the step's tables after it, bench fabric's
  # time series.
  LAUNCH="$mpiexec -n 2 ${mpiflags[*]}"
  for left in 0 4 8 16; do
    fill $left
    expect_full "2 ranks: memoized step, $left KiB left" "step time" run "$tiny" --quiet --set step.mode=memoized -o "$disk/a.h5"
    fill $left
    if [[ $left -eq 0 ]]; then
      expect_full "2 ranks: whole step, $left KiB left" "" run "$tiny" --quiet --set step.mode=whole -o "$disk/a.h5"
    else
      expect_full "2 ranks: whole step, $left KiB left" "step time" run "$tiny" --quiet --set step.mode=whole -o "$disk/a.h5"
    fi
  done
  fill 4
  expect_full "2 ranks: bench fabric --samples, 4 KiB left" "stepsim bench fabric" \
    bench fabric --topology "$toy" --samples "$disk/a.h5" --sample-interval 100ns --quiet
  unset LAUNCH
  unset REASON
  rm -f "$disk"/*
  out=$("$stepsim" run "$tiny" --quiet -o "$disk/a.h5" 2>&1); rc=$?
  check "room again: the same run writes its file (exit $rc)" '[[ $rc -eq 0 && -s $disk/a.h5 ]]'
  # The file rank 0 writes alone on 2 ranks has the contents of the 1-rank file (but
  # /meta@wall_s and @ranks), /samples included.
  rm -f "$disk"/*
  "$stepsim" run "$tiny" --quiet --set step.mode=whole -o "$disk/w1.h5" >/dev/null 2>&1
  timeout 300 "$mpiexec" -n 2 "${mpiflags[@]}" "$stepsim" run "$tiny" --quiet --set step.mode=whole \
    -o "$disk/w2.h5" >/dev/null 2>&1; rc=$?
  dump() { h5dump "$1" | tail -n +2 | awk '/ATTRIBUTE "(wall_s|ranks)"/ {skip = 1} !skip {print} skip && /^ *}/ {skip = 0}'; }
  check "2 ranks, whole step: the 1-rank file's contents (exit $rc)" \
    '[[ $rc -eq 0 && -n "$(dump "$disk/w1.h5")" && "$(dump "$disk/w1.h5")" == "$(dump "$disk/w2.h5")" ]]'
else
  echo "SKIPPED: the HDF5 cases (cannot mount a tmpfs here)"
fi
finish
