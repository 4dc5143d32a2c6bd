#!/usr/bin/env bash
# The runtime builds and passes its unit tests with no LLVM or MLIR (-DINITC_BUILD_COMPILER=OFF);
# the checkpoints it writes are checked by its own initc-checkpoint; and the compiler includes
# nothing of the runtime but its base layer (initrt/base/) and its C API (initrt/initrt.h).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT="$BUILD_DIR/runtime-only"

fail() {
  echo "runtime_only_build: $*" >&2
  echo "FAIL runtime_only_build" >&2
  exit 1
}

# The layers, checked first: they need no build. A runtime header the compiler may include is
# under initrt/base/ or is initrt/initrt.h; the runtime's private headers (runtime/src/) are not
# on its include path, and are not named either.
if grep -rnE '#include [<"]initrt/' "$ROOT/compiler" "$ROOT/tools" |
  grep -vE '#include [<"]initrt/(base/[A-Za-z0-9_]+\.h|initrt\.h)[>"]'; then
  fail "the compiler includes a runtime header outside initrt/base/ and initrt/initrt.h"
fi
private=$(cd "$ROOT/runtime/src" && find . -name '*.h' | sed 's|^\./||')
for header in $private; do
  if grep -rnF "#include \"$header\"" "$ROOT/compiler" "$ROOT/tools"; then
    fail "the compiler includes the runtime's private header $header"
  fi
done
if grep -rlE '#include [<"](mlir|llvm)/' "$ROOT/runtime"; then
  fail "the runtime includes MLIR or LLVM headers"
fi
# The base layer starts no thread, loads no library and needs no MPI.
if grep -rnE '#include <(thread|mpi\.h|dlfcn\.h)>|std::thread|dlopen' \
  "$ROOT/runtime/include/initrt/base" "$ROOT/runtime/src/base"; then
  fail "the base layer (initrt_base) uses threads, dlopen or MPI"
fi

cmake -G Ninja -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=Release -DINITC_BUILD_COMPILER=OFF \
  -DINITC_BUILD_BENCHMARKS=OFF >/dev/null
ninja -C "$OUT" >/dev/null
# No compiler library may have been built or linked.
if find "$OUT" -name 'libInitc*' | grep -q .; then
  fail "a compiler library was built in the runtime-only build"
fi
ctest --test-dir "$OUT" -j2 --output-on-failure | tail -3

# A checkpoint written by the runtime-only build, checked by the runtime-only build.
WORK=$(mktemp -d /tmp/initrt-runtime-only-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 # one host: shared memory, no network probing
"$OUT/bin/initrt-testprog" make "$WORK/prog" dp=2 "$OUT/lib/libinitrt-testkernels.so" ||
  fail "cannot make the test program"
cp "$OUT/bin/init" "$WORK/prog/init"
mpirun --oversubscribe --bind-to none -np 2 "$WORK/prog/init" --layout ranks --out "$WORK/ckpt" --threads 1 \
  --quiet || fail "mpirun -np 2 prog/init failed"
"$OUT/bin/initc-checkpoint" verify "$WORK/ckpt" >"$WORK/verify.txt" ||
  fail "initc-checkpoint verify failed: $(cat "$WORK/verify.txt")"
grep -q "every shard matches its checksum and the index" "$WORK/verify.txt" ||
  fail "initc-checkpoint verify said: $(cat "$WORK/verify.txt")"
"$OUT/bin/initc-checkpoint" assemble "$WORK/ckpt" -o "$WORK/model.safetensors" >/dev/null ||
  fail "initc-checkpoint assemble failed"
# A damaged shard is found, and named in messages that start with the tool's name.
shard="$WORK/ckpt/rank-00001-of-00002.safetensors"
last=$(($(stat -c %s "$shard") - 1))
byte=$(od -An -tu1 -j "$last" -N1 "$shard" | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 255)))" | dd of="$shard" bs=1 seek="$last" conv=notrunc 2>/dev/null
if "$OUT/bin/initc-checkpoint" verify "$WORK/ckpt" 2>"$WORK/damaged.txt" >/dev/null; then
  fail "initc-checkpoint verify passed a damaged shard"
fi
grep -q "^initc-checkpoint: .*problem.* found" "$WORK/damaged.txt" ||
  fail "initc-checkpoint verify of a damaged shard said: $(cat "$WORK/damaged.txt")"
echo "PASS runtime_only_build"
