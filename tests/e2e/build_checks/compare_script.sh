#!/usr/bin/env bash
# benchmarks/compare.sh runs to the end on a tiny llama config and prints every row with a ratio
# (the numbers are the benchmark's business, not this test's).
source "$(dirname "$0")/../common.bash"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json" RUNS=1 ORTHOGONAL=200 BUILD_DIR="$BUILD_DIR" \
  bash "$ROOT/benchmarks/compare.sh" "$WORK/compare" >"$WORK/compare.log" 2>&1 ||
  { tail -20 "$WORK/compare.log"; fail "compare.sh failed"; }
grep -q "^llama_uneven f32: [0-9]* bytes" "$WORK/compare.log" || fail "no header: $(head -3 "$WORK/compare.log")"
rows=("initc prog/init --rank 0 --discard" "the same, --init-style torch"
  "the same in bf16 (elements/s vs f32)" "initc C API, fresh malloc buffers"
  "memset, fresh huge pages (vs --discard)" "memset, fresh 4 KiB pages (vs --discard)"
  "PyTorch eager construction (1 thread)" "numpy default_rng normal f32 (resident)"
  "mpirun, 2 ranks (1 thread each), speedup" "dd of the same bytes (conv=fsync), vs initc"
  "dd oflag=direct (past the cache), vs initc"
  "initc orthogonal 200x200 f32 --discard" "torch orthogonal_ (1 thread), vs initc")
for row in "${rows[@]}"; do
  grep -qF "$row" "$WORK/compare.log" || fail "no row '$row': $(cat "$WORK/compare.log")"
done
# A ratio row ends in a number with two decimals and an x.
bad=$(grep -E 'x$' "$WORK/compare.log" | grep -vE ' [0-9]+\.[0-9]{2}x$' || true)
[ -z "$bad" ] || fail "malformed ratios: $bad"
(($(grep -cE ' [0-9]+\.[0-9]{2}x$' "$WORK/compare.log") >= 12)) || fail "too few ratios: $(cat "$WORK/compare.log")"
# A config the script cannot compare stops it before anything runs, with what it needs.
fails_cleanly "a gpt2 config" "gpt2_tiny.json is not a llama-style config \(no hidden_size" \
  env CONFIG="$ROOT/tests/e2e/configs/gpt2_tiny.json" BUILD_DIR="$BUILD_DIR" \
  bash "$ROOT/benchmarks/compare.sh" "$WORK/gpt2"
[ ! -e "$WORK/gpt2/model.mlir" ] || fail "compare.sh ran on after rejecting its config"
echo "PASS $TEST_NAME"
