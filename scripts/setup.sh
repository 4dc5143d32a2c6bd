#!/usr/bin/env bash
# Installs what initc needs from Debian (only what is missing), then configures and builds into
# build/. Also the recipes of the instrumented trees the sanitizer and fuzzing tests share, so
# that tools/test.sh builds each once, before the tests. Sourced by tools/demo.sh, tools/test.sh
# and the e2e scripts that need those trees; run it alone to just build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

INITC_PACKAGES=(
  cmake ninja-build ccache g++ pkg-config time
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libopenmpi-dev openmpi-bin
  slurm-wlm munge  # tests/e2e/hosts/slurm.sh starts its own slurmctld, slurmd and munged
  libcli11-dev nlohmann-json3-dev libxxhash-dev
  libgtest-dev libbenchmark-dev
  python3 python3-venv python3-dev python3-numpy python3-scipy python3-torch
  ${INITC_EXTRA_PACKAGES:-}
)

# install_missing_packages [PACKAGE...]: the named Debian packages (default: INITC_PACKAGES).
install_missing_packages() {
  local missing=() wanted=("$@")
  ((${#wanted[@]})) || wanted=("${INITC_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
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

# locked_build DIR CMAKE_ARGS... -- TARGETS...: configures DIR and builds TARGETS in it, one
# caller at a time (tests that share a tree may run side by side), output in DIR/build.log.
locked_build() {
  local dir=$1 args=()
  shift
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  mkdir -p "$dir"
  (
    flock 9
    { cmake -G Ninja -S "$ROOT" -B "$dir" "${args[@]}" && ninja -C "$dir" -j2 "$@"; } \
      >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
  ) 9>"$dir/.build-lock"
}

# The instrumented tree of tests/e2e/sanitizers/sanitizers.sh and tests/e2e/fuzzing/fuzz.sh:
# clang-19 with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's coverage
# (-fsanitize=fuzzer-no-link). One tree for both: sanitizers.sh's own gcc tree built the compiler
# a second time (149 build steps, of which this tree needs only the 82 the fuzzers do not
# share). -O1, as the sanitizers' documentation suggests; -g1 keeps file:line in reports. Calls
# into JIT'd code turn -fsanitize=function off (random_expand_test.cpp says why).
SANITIZED_BUILD_DIR="$BUILD_DIR/sanitized"
build_sanitized_tree() {
  install_missing_packages clang-19 libclang-rt-19-dev
  locked_build "$SANITIZED_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" \
    -DINITC_SANITIZE=ON -DINITC_BUILD_FUZZERS=ON -DINITC_BUILD_BENCHMARKS=OFF -- \
    initc-fuzz-ir initc-fuzz-config initrt-unittests initc-unittests initc initc-checkpoint init
}

# The runtime alone (no LLVM or MLIR) under ThreadSanitizer, for
# tests/e2e/sanitizers/thread_sanitizer.sh. -O1 and line tables only (-g1): reports keep their
# file:line, and the build took 86 s instead of -O2 -g's 155 s (2 cores).
TSAN_BUILD_DIR="$BUILD_DIR/tsan"
build_thread_sanitized_runtime() {
  locked_build "$TSAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINITC_BUILD_COMPILER=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DINITC_BUILD_BENCHMARKS=OFF -DCMAKE_C_FLAGS=-fsanitize=thread \
    -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread -- initrt-unittests init initc-checkpoint initrt-testprog
}

# The runtime cross-built for AArch64 (no MPI), for tests/e2e/hosts/aarch64_qemu.sh: Debian's
# cross compiler, the arm64 xxHash through multiarch, qemu-user-static to run it with the arm64
# libc and libstdc++ (multiarch too, so that ld.so and libc come from one glibc build).
AARCH64_BUILD_DIR="$BUILD_DIR/aarch64"
build_aarch64_runtime() {
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo dpkg --add-architecture arm64
  fi
  install_missing_packages gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static \
    libxxhash-dev:arm64 libstdc++6:arm64
  locked_build "$AARCH64_BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DINITC_BUILD_COMPILER=OFF -DINITC_BUILD_TESTS=OFF \
    -DINITC_BUILD_BENCHMARKS=OFF -DINITC_WITH_MPI=OFF -- init
}

# mpirun as root (CI and containers) needs these; --oversubscribe lets a test run more ranks
# than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  install_missing_packages
  configure_and_build
fi
