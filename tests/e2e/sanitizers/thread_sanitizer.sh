#!/usr/bin/env bash
# The runtime's threads under ThreadSanitizer: a runtime-only build (no LLVM or MLIR) with
# -fsanitize=thread, its unit tests (the streamed hand-off of pieces, chunked computing, the
# C API), and the test-kernel program written and discarded on several threads. Any data race
# or other report fails the test. Builds into $BUILD_DIR/tsan (build_thread_sanitized_runtime in
# scripts/setup.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WORK=$(mktemp -d /tmp/initrt-tsan-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "thread_sanitizer: $*" >&2
  echo "FAIL thread_sanitizer" >&2
  exit 1
}

source "$ROOT/scripts/setup.sh"
OUT="$TSAN_BUILD_DIR"
start=$(date +%s)
build_thread_sanitized_runtime || fail "building with ThreadSanitizer"
echo "built with ThreadSanitizer in $(($(date +%s) - start)) s"

export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# tsan_clean CMD...: runs CMD; fails on a non-zero exit or any sanitizer report.
tsan_clean() {
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  if grep -qE "WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|SUMMARY: ThreadSanitizer" \
    "$WORK/err.txt"; then
    grep -E "WARNING|ERROR|SUMMARY|#[0-9]+ " "$WORK/err.txt" | head -40 >&2
    fail "ThreadSanitizer report from: $*"
  fi
  ((rc == 0)) || { tail -20 "$WORK/out.txt" "$WORK/err.txt" >&2; fail "exit $rc: $*"; }
}

tsan_clean "$OUT/bin/initrt-unittests" --gtest_brief=1
echo "ok initrt-unittests: $(grep -E "^\[  PASSED  \]" "$WORK/out.txt")"

prog="$WORK/prog"
"$OUT/bin/initrt-testprog" make "$prog" dp=1 "$OUT/lib/libinitrt-testkernels.so" ||
  fail "cannot make the test program"
cp "$OUT/bin/init" "$prog/init"
for threads in 1 2 4; do
  tsan_clean "$prog/init" --layout ranks --out "$WORK/ckpt-$threads" --threads "$threads" --quiet
  tsan_clean "$prog/init" --layout ranks --discard --threads "$threads" --quiet
done
cmp "$WORK/ckpt-1/rank-00000-of-00001.safetensors" "$WORK/ckpt-4/rank-00000-of-00001.safetensors" ||
  fail "1 and 4 threads wrote different files"
echo "PASS thread_sanitizer"
