# Shared by run.sh, test.sh and bench scripts: paths, build, and an mpirun that works as root.
# shellcheck shell=bash
STEPSIM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${STEPSIM_JOBS:-$(nproc)}

# build DIR [cmake options...] [-- targets...]: configure (once) and build (every target, or
# the ones after --).
stepsim_build() {
  local dir=$1; shift
  local options=() targets=()
  while [[ $# -gt 0 && $1 != -- ]]; do options+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift && targets=(--target "$@")
  cmake -S "$STEPSIM_ROOT" -B "$dir" "${options[@]}" >/dev/null
  cmake --build "$dir" -j "$JOBS" "${targets[@]}"
}

# mpirun with the flags this machine needs (root, more ranks than cores).
stepsim_mpirun() {
  local flags=(--oversubscribe)
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  mpirun "${flags[@]}" "$@"
}

# Physical cores (one MPI rank per core is the default).
stepsim_cores() {
  local c
  c=$(lscpu -p=core 2>/dev/null | grep -v '^#' | sort -u | wc -l)
  [[ "$c" -ge 1 ]] 2>/dev/null && echo "$c" || nproc
}
