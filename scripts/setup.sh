#!/usr/bin/env bash
# Installs every Debian package collplan needs (when missing) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Default build directory: build/. Safe to run again: it only installs what
# is missing and rebuilds incrementally. The build type is RelWithDebInfo;
# with COLLPLAN_NO_DEBUG_INFO=1 (what CI sets) it is built without -g: the
# same -O2 code, without the debug information that is a large part of the
# compile and link time (a Debug build, the sanitizer tier's, keeps line
# tables only and runs at -O1).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config git
          catch2 libfmt-dev libcli11-dev nlohmann-json3-dev
          libisal-dev libxxhash-dev libcadical-dev libssl-dev
          openmpi-bin libopenmpi-dev
          libsimgrid-dev
          clang libclang-rt-14-dev gcc-arm-none-eabi libnewlib-arm-none-eabi g++-aarch64-linux-gnu qemu-user
          python3 chromium chromium-driver iproute2 procps
          hpcc scalapack-mpi-test python3-mpi4py python3-numpy)
# libcadical-dev: the SAT solver of `collplan search` (docs/search.md).
# clang (libclang-rt: libFuzzer for scripts/fuzz.sh), the Cortex-M and
# AArch64 cross compilers and qemu-aarch64: the tests
# build emitted code with both compilers, for a Cortex-M4, and run the NEON
# kernels under emulation. python3 (standard library only) and headless
# chromium: the trace schema checks and the explorer page test (tests/viz/).
# iproute2 (ip, tc) and procps (pgrep): the fault campaign (scripts/faults.py)
# and the namespace test of the TCP transport. hpcc, scalapack-mpi-test,
# python3-mpi4py and python3-numpy: real MPI programs run unmodified under
# libcollplan_pmpi (tests/pmpi/real_programs.sh).

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

BUILD_DIR="${1:-build}"
shift || true
FLAGS=()
if [ -n "${COLLPLAN_NO_DEBUG_INFO:-}" ]; then
  # The Debug build (the sanitizer tier) keeps line tables only (-g1: the
  # sanitizers' reports still name file and line) and -O1, which runs the
  # instrumented tests about twice as fast as -O0.
  FLAGS=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
         -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1")
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${FLAGS[@]}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
