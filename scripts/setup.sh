#!/usr/bin/env bash
# Installs every Debian package collplan needs (when missing) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Default build directory: build/. Safe to run again: it only installs what
# is missing and rebuilds incrementally. The build type is RelWithDebInfo
# unless COLLPLAN_BUILD_TYPE says otherwise (CI builds Release: the same
# optimised code without debug information, which is a large part of the
# compile and link time).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config git
          catch2 libfmt-dev libcli11-dev nlohmann-json3-dev
          libisal-dev libxxhash-dev libcadical-dev libssl-dev
          openmpi-bin libopenmpi-dev
          libsimgrid-dev
          clang libclang-rt-14-dev gcc-arm-none-eabi libnewlib-arm-none-eabi g++-aarch64-linux-gnu qemu-user
          python3 chromium chromium-driver iproute2 procps)
# libcadical-dev: the SAT solver of `collplan search` (docs/search.md).
# clang (libclang-rt: libFuzzer for scripts/fuzz.sh), the Cortex-M and
# AArch64 cross compilers and qemu-aarch64: the tests
# build emitted code with both compilers, for a Cortex-M4, and run the NEON
# kernels under emulation. python3 (standard library only) and headless
# chromium: the trace schema checks and the explorer page test (tests/viz/).
# iproute2 (ip, tc) and procps (pgrep): the fault campaign (scripts/faults.py)
# and the namespace test of the TCP transport.

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
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${COLLPLAN_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
