#!/usr/bin/env bash
# Installs what initc needs from Debian (only what is missing), then configures and builds into
# build/. Sourced by demo.sh and test.sh; run it alone to just build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

INITC_PACKAGES=(
  cmake ninja-build ccache g++ pkg-config time
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libopenmpi-dev openmpi-bin
  libcli11-dev nlohmann-json3-dev libxxhash-dev
  libgtest-dev libbenchmark-dev
  python3 python3-numpy python3-scipy python3-torch
  ${INITC_EXTRA_PACKAGES:-}
)

install_missing_packages() {
  local missing=()
  for p in "${INITC_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

configure_and_build() {
  echo "== building into $BUILD_DIR"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py ${INITC_CMAKE_ARGS:-} >/dev/null
  ninja -C "$BUILD_DIR" ${INITC_NINJA_TARGETS:-}
}

# mpirun as root (CI and containers) needs these; --oversubscribe lets a test run more ranks
# than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  install_missing_packages
  configure_and_build
fi
