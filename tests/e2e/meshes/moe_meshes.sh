#!/usr/bin/env bash
# Mixture-of-experts imports on expert-parallel meshes (ir-spec/import-hf.md, sharding.md):
# qwen3_moe (a dense layer among sparse ones, q/k norms, biases) and deepseek_v3 (MLA attention,
# a dense first layer, shared experts, the router and its correction bias in f32 beside bf16
# weights) assemble to the same bytes on ep=2,tp=2, ep=2,dp=2, pp=2,ep=2 and ep=4 as on dp=2,
# verify on each; each rank of ep=2,tp=2 alone writes its file again; on ep=4 every rank holds
# exactly its one expert of each stacked tensor and the whole router; an ep that does not divide
# the experts fails naming the tensor; written per expert (--hf-experts per-expert), 1 rank,
# ep=2,tp=2 and ep=4 write the same bytes; the bytes split places deepseek_v3's layers by weight.
source "$(dirname "$0")/../common.bash"

for model in qwen3_moe deepseek_v3; do
  "$INITC" import hf "$ROOT/tests/e2e/configs/${model}_tiny.json" --dtype bf16 --seed 7 \
    -o "$WORK/$model.mlir" || fail "import $model"
  expert_meshes "$WORK/$model.mlir" "$model"
  for ((k = 0; k < 4; k++)); do
    "$WORK/prog-$model-ep_2_tp_2/init" --layout ranks --rank "$k" --out "$WORK/alone-$model" \
      --quiet || fail "--rank $k $model ep=2,tp=2"
    file=$(printf "rank-%05d-of-00004.safetensors" "$k")
    cmp "$WORK/ckpt-$model-ep_2_tp_2/$file" "$WORK/alone-$model/$file" \
      || fail "--rank $k differs ($model ep=2,tp=2)"
  done
done
# The original per-expert format (checkpoint.md, "MoE models"): ep=2,tp=2 and ep=4 (each rank's
# boxes cut at other experts' pieces, in several files) write the bytes one rank writes, and
# each verifies.
for model in qwen3_moe deepseek_v3; do
  "$INITC" compile "$WORK/$model.mlir" --mesh dp=1 --shard replicated -o "$WORK/prog-$model-one" \
    >/dev/null || fail "compile $model on one rank"
  for run in one ep_2_tp_2 ep_4; do
    n=4
    [[ $run == one ]] && n=1
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$model-$run/init" --layout hf --hf-experts per-expert \
      --max-shard-size 100KB --out "$WORK/per-expert-$model-$run" --quiet \
      || fail "per-expert $model $run"
    "$INITC" verify "$WORK/per-expert-$model-$run" >/dev/null || fail "verify per-expert $model $run"
    [[ $run == one ]] && continue
    for file in "$WORK/per-expert-$model-one"/model*; do
      cmp "$file" "$WORK/per-expert-$model-$run/${file##*/}" \
        || fail "per-expert $model $run: ${file##*/} differs from one rank"
    done
  done
  ls "$WORK/per-expert-$model-one"/model-00002-of-* >/dev/null || fail "per-expert $model: one file"
  echo "ok per-expert $model: 1 rank, ep=2,tp=2 and ep=4 write the same bytes"
done
# The bytes split (sharding.md): deepseek_v3's embedding (1001 x 64) outweighs its dense layer 0,
# so on pp=4 stage 0 holds the embedding alone where torchtitan's split gives it layer 0 too:
# embedding / layers 0-1 / layer 2 / norm and head, and the same bytes as on dp=2.
echo '{"preset": "replicated", "pipeline": {"axis": "pp", "split": "bytes"}}' >"$WORK/bytes.json"
"$INITC" compile "$WORK/deepseek_v3.mlir" --mesh pp=4 --shard "$WORK/bytes.json" \
  -o "$WORK/prog-bytes" >/dev/null || fail "compile the bytes split"
"${MPIRUN[@]}" -np 4 "$WORK/prog-bytes/init" --layout ranks --out "$WORK/ckpt-bytes" --quiet \
  || fail "run the bytes split"
"$INITC" assemble "$WORK/ckpt-bytes" -o "$WORK/bytes.safetensors" >/dev/null \
  || fail "assemble the bytes split"
cmp "$WORK/deepseek_v3-dp_2.safetensors" "$WORK/bytes.safetensors" \
  || fail "the bytes split differs from dp=2"
$PYTHON - "$WORK/ckpt-bytes" <<'PY' || fail "the bytes split placed the wrong layers"
import json, struct, sys
expected = [
    lambda n: n == "model.embed_tokens.weight",
    lambda n: n.startswith(("model.layers.0.", "model.layers.1.")),
    lambda n: n.startswith("model.layers.2."),
    lambda n: n in ("model.norm.weight", "lm_head.weight"),
]
for rank in range(4):
    with open(f"{sys.argv[1]}/rank-{rank:05d}-of-00004.safetensors", "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name, entry in header.items():
        if name != "__metadata__":
            elements = 1
            for d in entry["shape"]:
                elements *= d
            assert bool(elements) == expected[rank](name), (rank, name, entry["shape"])
PY
echo "ok the bytes split"
echo "ok moe meshes"
