#!/usr/bin/env bash
# The runtime builds and passes its unit tests with no LLVM or MLIR (-DINITC_BUILD_COMPILER=OFF).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT="$BUILD_DIR/runtime-only"
cmake -G Ninja -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=Release -DINITC_BUILD_COMPILER=OFF \
  -DINITC_BUILD_BENCHMARKS=OFF >/dev/null
ninja -C "$OUT" >/dev/null
# No compiler library may have been built or linked.
if find "$OUT" -name 'libInitc*' | grep -q .; then
  echo "a compiler library was built in the runtime-only build"; exit 1
fi
if grep -rlE '#include [<"](mlir|llvm)/' "$ROOT/runtime"; then
  echo "the runtime includes MLIR or LLVM headers"; exit 1
fi
ctest --test-dir "$OUT" -j2 --output-on-failure | tail -3
echo "PASS runtime_only_build"
