#!/usr/bin/env bash
# Installs the Debian 12 packages stepsim needs (as root), or prints the exact apt-get line.
# Usage: scripts/setup.sh        (sourced or run; exits non-zero if packages are missing and we
#                                 cannot install them)
set -euo pipefail

# Build: compilers, MPI, parallel HDF5, Kokkos, the header libraries; tests: GoogleTest, h5dump;
# postproc/: Python with numpy, h5py, matplotlib and pytest (its unit tests); jobs/ and their tests: a one-node Slurm
# (scripts/slurm-local.sh) from munge, slurmctld, slurmd and the client commands; strace for
# the test that no MPI helper process starts where one rank runs (cli.serial).
packages=(
  cmake g++ make
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev hdf5-tools
  libtrilinos-kokkos-dev
  libgtest-dev
  libyaml-cpp-dev libcli11-dev librandom123-dev libmetis-dev nlohmann-json3-dev
  python3 python3-numpy python3-h5py python3-matplotlib python3-pytest
  munge slurmctld slurmd slurm-client
  strace
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  echo "stepsim setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "stepsim setup: done" >&2
else
  echo "stepsim setup: missing Debian packages. Install them as root with:" >&2
  echo "  apt-get install -y ${missing[*]}" >&2
  exit 1
fi
