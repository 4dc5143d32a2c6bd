#!/usr/bin/env bash
# Each parameter's values follow its initializer's formula (Kolmogorov-Smirnov, mean, std, bounds,
# exact constants), for --init-style hf and torch, on llama, qwen2 and gpt2 configs, from a 2-rank
# run.
source "$(dirname "$0")/../common.bash"

for config in llama_uneven qwen2_tiny gpt2_tiny; do
  for style in hf torch; do
    tag="$config-$style"
    "$INITC" import hf "$ROOT/tests/e2e/configs/$config.json" --init-style "$style" --seed 11 \
      -o "$WORK/$tag.mlir" || fail "import $tag"
    "$INITC" compile "$WORK/$tag.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog-$tag" >/dev/null \
      || fail "compile $tag"
    "${MPIRUN[@]}" -np 2 "$WORK/prog-$tag/init" --layout ranks --out "$WORK/ckpt-$tag" --quiet || fail "run $tag"
    "$INITC" assemble "$WORK/ckpt-$tag" -o "$WORK/$tag.safetensors" >/dev/null || fail "assemble $tag"
    echo "== $tag"
    $PYTHON "$ROOT/tests/e2e/check_distributions.py" "$ROOT/tests/e2e/configs/$config.json" \
      "$WORK/$tag.safetensors" --style "$style" || fail "distributions of $tag"
  done
done
echo "PASS $TEST_NAME"
