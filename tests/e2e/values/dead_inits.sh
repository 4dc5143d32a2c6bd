#!/usr/bin/env bash
# Dead-init elimination and fusion never change a surviving value: a model whose parameter is
# initialized twice (uniform, then normal as `model.apply` would redraw it) and scaled by a fill
# gives exactly the bytes of the model written with only the final init, on 1 and 3 ranks.
source "$(dirname "$0")/../common.bash"

cat >"$WORK/double.mlir" <<'MLIR'
init.seed 3
init.param @"w1" : tensor<37x19xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<37x19xf32>
  %1 = init.normal mean 0.0 std 1.0 stream 1 : tensor<37x19xf32>
  %2 = init.fill 1.0 : tensor<37x19xf32>
  %3 = init.mul %1, %2 : tensor<37x19xf32>
  init.yield %3 : tensor<37x19xf32>
}
init.param @"w2" : tensor<19x37xbf16> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<19x37xbf16>
  %1 = init.variance_scaling scale 2.0 fan_in normal stream 1 : tensor<19x37xbf16>
  init.yield %1 : tensor<19x37xbf16>
}
MLIR
cat >"$WORK/single.mlir" <<'MLIR'
init.seed 3
init.param @"w1" : tensor<37x19xf32> {
  %1 = init.normal mean 0.0 std 1.0 stream 1 : tensor<37x19xf32>
  init.yield %1 : tensor<37x19xf32>
}
init.param @"w2" : tensor<19x37xbf16> {
  %1 = init.variance_scaling scale 2.0 fan_in normal stream 1 : tensor<19x37xbf16>
  init.yield %1 : tensor<19x37xbf16>
}
MLIR
# The dead-inits stage really removes the first inits.
"$INITC" compile "$WORK/double.mlir" --emit=mlir --stage=dead-inits -o "$WORK/after.mlir"
if grep -q "init.uniform -1" "$WORK/after.mlir"; then fail "the overwritten uniform init survived"; fi
for model in double single; do
  for ranks in 1 3; do
    "$INITC" compile "$WORK/$model.mlir" --mesh dp=$ranks --shard fsdp -o "$WORK/prog-$model-$ranks" >/dev/null
    "${MPIRUN[@]}" -np $ranks "$WORK/prog-$model-$ranks/init" --layout ranks --out "$WORK/ckpt-$model-$ranks" --quiet
    "$INITC" assemble "$WORK/ckpt-$model-$ranks" -o "$WORK/$model-$ranks.safetensors" >/dev/null
  done
done
cmp "$WORK/double-1.safetensors" "$WORK/single-1.safetensors" || fail "double init changed the values"
cmp "$WORK/double-1.safetensors" "$WORK/double-3.safetensors" || fail "1 and 3 ranks differ"
cmp "$WORK/single-1.safetensors" "$WORK/single-3.safetensors" || fail "1 and 3 ranks differ"
echo "PASS $TEST_NAME"
