#!/usr/bin/env bash
# The unit tests and a small end-to-end run (import, compile, mpirun on 4 ranks, verify, one rank
# alone, assemble, and a few bad inputs) under AddressSanitizer + UndefinedBehaviorSanitizer.
# Runs in the clang tree it shares with tests/e2e/fuzzing/fuzz.sh (build_sanitized_tree in
# scripts/setup.sh, which tools/test.sh builds before the tests). Any sanitizer report fails the
# test. Leak checking is off for the MPI processes only: OpenMPI's own allocations are never freed.
source "$(dirname "$0")/../common.bash"
source "$ROOT/scripts/setup.sh"
start=$(date +%s)
build_sanitized_tree || fail "building with sanitizers"
echo "built with sanitizers in $(($(date +%s) - start)) s"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
BIN="$SANITIZED_BUILD_DIR/bin"
# sanitized CMD...: runs CMD, fails on any sanitizer report (exit status is the caller's).
sanitized() {
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: .*Sanitizer" "$WORK/err.txt"; then
    grep -E "ERROR|runtime error|SUMMARY|#[0-9]+ 0x" "$WORK/err.txt" | head -30 >&2
    fail "sanitizer report from: $*"
  fi
  return $rc
}

# The tests that compile one module for every kernel variant and compare their bytes
# (KernelReferenceTest.VectorWidthsGiveTheSameBytes, ...NaNResultsAreTheOneNaNOnEveryVariant) run
# unsanitized with the other unit tests. Sanitized, the first took 12 minutes (half of this
# script's time) compiling every vector loop shape, for little that
# EveryElementMatchesTheReference does not already cover here.
unsanitized=KernelReferenceTest.VectorWidthsGiveTheSameBytes:KernelReferenceTest.NaNResultsAreTheOneNaNOnEveryVariant
for tests in initrt-unittests initc-unittests; do
  sanitized "$BIN/$tests" --gtest_brief=1 --gtest_filter=-$unsanitized ||
    { tail -30 "$WORK/out.txt"; fail "$tests"; }
  echo "ok $tests: $(grep -E "^\[  PASSED  \]" "$WORK/out.txt")"
done

INITC="$BIN/initc"
sanitized "$INITC" import hf "$ROOT/tests/e2e/configs/qwen2_tiny.json" --dtype bf16 -o "$WORK/model.mlir" ||
  fail "import"
sanitized "$INITC" inspect "$WORK/model.mlir" --mesh dp=2,tp=2 --shard fsdp+tp || fail "inspect"
sanitized "$INITC" compile "$WORK/model.mlir" --mesh dp=2,tp=2 --shard fsdp+tp -o "$WORK/prog" ||
  fail "compile"
ASAN_OPTIONS=detect_leaks=0 sanitized "${MPIRUN[@]}" -x ASAN_OPTIONS -x UBSAN_OPTIONS -np 4 \
  "$WORK/prog/init" --layout ranks --out "$WORK/ckpt" || { cat "$WORK/err.txt"; fail "mpirun"; }
sanitized "$INITC" verify "$WORK/ckpt" || fail "verify"
ASAN_OPTIONS=detect_leaks=0 sanitized "$WORK/prog/init" --layout ranks --rank 2 --out "$WORK/alone" --quiet ||
  fail "--rank 2"
cmp "$WORK/ckpt/rank-00002-of-00004.safetensors" "$WORK/alone/rank-00002-of-00004.safetensors" ||
  fail "rank 2 alone differs"
sanitized "$INITC" assemble "$WORK/ckpt" -o "$WORK/model.safetensors" || fail "assemble"
$PYTHON "$ROOT/tests/e2e/safetensors_check.py" "$WORK/model.safetensors" >/dev/null || fail "invalid output"
# Error paths: each fails cleanly, without a report.
printf 'init.seed 1\ninit.param @w : tensor<4294967296x4294967296xf32> {\n' >"$WORK/bad.mlir"
! sanitized "$INITC" compile "$WORK/bad.mlir" -o "$WORK/bad" || fail "bad IR accepted"
! sanitized "$INITC" inspect "$WORK/model.mlir" --mesh dp=0 --shard fsdp || fail "bad mesh accepted"
printf '{"model_type": "llama", "vocab_size": 1e30}' >"$WORK/bad.json"
! sanitized "$INITC" import hf "$WORK/bad.json" -o "$WORK/bad2.mlir" || fail "bad config accepted"
truncate -s 1000 "$WORK/ckpt/rank-00001-of-00004.safetensors"
! sanitized "$INITC" verify "$WORK/ckpt" || fail "damaged checkpoint verified"
! sanitized "$INITC" assemble "$WORK/ckpt" -o "$WORK/bad.safetensors" || fail "damaged checkpoint assembled"
ASAN_OPTIONS=detect_leaks=0 sanitized "$WORK/prog/init" --layout ranks --rank 1 --out "$WORK/ckpt" --quiet ||
  fail "regenerate rank 1"
sanitized "$INITC" verify "$WORK/ckpt" || fail "verify after regenerating"
echo "PASS $TEST_NAME"
