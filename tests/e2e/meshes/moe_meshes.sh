#!/usr/bin/env bash
# Mixture-of-experts imports on expert-parallel meshes (ir-spec/import-hf.md, sharding.md):
# qwen3_moe (a dense layer among sparse ones, q/k norms, biases) and deepseek_v3 (MLA attention,
# a dense first layer, shared experts, the router and its correction bias in f32 beside bf16
# weights) assemble to the same bytes on ep=2,tp=2, ep=2,dp=2, pp=2,ep=2 and ep=4 as on dp=2,
# verify on each; each rank of ep=2,tp=2 alone writes its file again; on ep=4 every rank holds
# exactly its one expert of each stacked tensor and the whole router; an ep that does not divide
# the experts fails naming the tensor; written per expert (the default --hf-experts), 1 rank,
# ep=2,tp=2 and ep=4 write the same bytes, which assemble reads back as the stacked checkpoint's
# and init.load (qwen3_moe) loads as the stacked one; a damaged piece is refused; the bytes
# split places deepseek_v3's layers by weight.
source "$(dirname "$0")/../common.bash"

# same_files A B WHAT: the hf directories A and B hold the same model files and index, byte for
# byte.
same_files() {
  local file
  [[ $(cd "$1" && ls model*) == $(cd "$2" && ls model*) ]] || fail "$3: other files"
  for file in "$1"/model*; do
    cmp "$file" "$2/${file##*/}" || fail "$3: ${file##*/} differs"
  done
}
# tensors_equal A B: two safetensors files hold the same tensors (names, dtypes, shapes, bytes).
tensors_equal() {
  $PYTHON - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    return {n: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
            for n, t in header.items() if n != "__metadata__"}
assert tensors(sys.argv[1]) == tensors(sys.argv[2])
PY
}

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
    # per-expert is the default
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$model-$run/init" --layout hf \
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

  # Read back: assembled into the stacked format, the per-expert checkpoints of 1 and 4 ranks are
  # the stacked checkpoint byte for byte; stacked -> per-expert -> stacked gives both formats'
  # files again; into one file, the stacked checkpoint's.
  stacked="$WORK/stacked-$model"
  "$WORK/prog-$model-one/init" --layout hf --hf-experts stacked --max-shard-size 100KB \
    --out "$stacked" --quiet || fail "stacked $model"
  for run in one ep_4; do
    "$INITC" assemble "$WORK/per-expert-$model-$run" -o "$WORK/back-$model-$run" \
      --hf-experts stacked --max-shard-size 100KB >/dev/null || fail "per-expert $run -> stacked"
    same_files "$stacked" "$WORK/back-$model-$run" "per-expert $model $run -> stacked"
  done
  "$INITC" assemble "$stacked" -o "$WORK/trip-per-$model" --max-shard-size 100KB >/dev/null \
    || fail "stacked -> per-expert $model"
  same_files "$WORK/per-expert-$model-one" "$WORK/trip-per-$model" "stacked -> per-expert $model"
  "$INITC" assemble "$WORK/trip-per-$model" -o "$WORK/trip-stacked-$model" --hf-experts stacked \
    --max-shard-size 100KB >/dev/null || fail "per-expert -> stacked $model"
  same_files "$stacked" "$WORK/trip-stacked-$model" "stacked -> per-expert -> stacked $model"
  "$INITC" assemble "$WORK/per-expert-$model-ep_4" -o "$WORK/per-$model.safetensors" \
    >/dev/null || fail "per-expert $model -> one file"
  "$INITC" assemble "$stacked" -o "$WORK/stacked-$model.safetensors" >/dev/null \
    || fail "stacked $model -> one file"
  cmp "$WORK/per-$model.safetensors" "$WORK/stacked-$model.safetensors" \
    || fail "per-expert $model into one file differs from stacked"
  echo "ok per-expert $model: read back as the stacked checkpoint, both ways"

  # init.load from the per-expert checkpoint (its index and config.json): the same bytes as from
  # the stacked one, on 1 rank and on ep=2,tp=2. (deepseek_v3's f32 router beside bf16 weights
  # is a base import --load refuses in either format.)
  [[ $model == deepseek_v3 ]] || for base in per-expert-$model-one stacked-$model; do
    "$INITC" import hf "$ROOT/tests/e2e/configs/${model}_tiny.json" --dtype bf16 --seed 7 \
      --load "$WORK/$base/model.safetensors.index.json" -o "$WORK/load-$base.mlir" \
      2>"$WORK/load-$base.txt" || fail "import --load $base: $(cat "$WORK/load-$base.txt")"
    # Every tensor but the rotary buffer, computed: the stacked experts gathered too.
    grep -qE "^initc: [0-9]+ of [0-9]+ tensors load from [^;]*(; the others are initialized \(model\.rotary_emb\.inv_freq\))?$" \
      "$WORK/load-$base.txt" || fail "import --load $base: $(cat "$WORK/load-$base.txt")"
    sed "s| from [^;]*||" "$WORK/load-$base.txt" >"$WORK/load-$base.said"
    for mesh in dp=1 ep=2,tp=2; do
      shard=tp
      [[ $mesh == dp=1 ]] && shard=replicated
      "$INITC" compile "$WORK/load-$base.mlir" --mesh "$mesh" --shard "$shard" \
        -o "$WORK/prog-load-$base-$mesh" >/dev/null || fail "compile load $base $mesh"
      "${MPIRUN[@]}" -np "$(mesh_size "$mesh")" "$WORK/prog-load-$base-$mesh/init" --layout ranks \
        --out "$WORK/ckpt-load-$base-$mesh" --quiet || fail "run load $base $mesh"
      "$INITC" assemble "$WORK/ckpt-load-$base-$mesh" -o "$WORK/load-$base-$mesh.safetensors" \
        >/dev/null || fail "assemble load $base $mesh"
    done
    cmp "$WORK/load-$base-dp=1.safetensors" "$WORK/load-$base-ep=2,tp=2.safetensors" \
      || fail "init.load from $base: ep=2,tp=2 differs from 1 rank"
  done
  if [[ $model != deepseek_v3 ]]; then
    cmp "$WORK/load-per-expert-$model-one.said" "$WORK/load-stacked-$model.said" \
      || fail "import --load loads other tensors per expert ($model)"
    cmp "$WORK/load-per-expert-$model-one-dp=1.safetensors" \
      "$WORK/load-stacked-$model-dp=1.safetensors" || fail "init.load per-expert differs ($model)"
    tensors_equal "$WORK/load-stacked-$model-dp=1.safetensors" "$WORK/stacked-$model.safetensors" \
      || fail "init.load $model does not give the base's tensors"
    echo "ok init.load $model from a per-expert checkpoint: the stacked one's bytes"
  fi

  # A changed byte in an expert's tensor: assemble refuses it, naming the file and the rerun.
  cp -r "$WORK/per-expert-$model-one" "$WORK/damaged-$model"
  file=$($PYTHON - "$WORK/damaged-$model" <<'PY'
import json, struct, sys
index = json.load(open(f"{sys.argv[1]}/model.safetensors.index.json"))
name = next(n for n in index["weight_map"] if ".experts.1.up_proj." in n)
path = f"{sys.argv[1]}/{index['weight_map'][name]}"
with open(path, "r+b") as f:
    size = struct.unpack("<Q", f.read(8))[0]
    begin = json.loads(f.read(size))[name]["data_offsets"][0]
    f.seek(8 + size + begin + 3)
    byte = f.read(1)
    f.seek(8 + size + begin + 3)
    f.write(bytes([byte[0] ^ 0x40]))
print(index["weight_map"][name])
PY
  ) || fail "damage $model"
  if "$INITC" assemble "$WORK/damaged-$model" -o "$WORK/damaged-$model.safetensors" \
    >/dev/null 2>"$WORK/damaged-$model.txt"; then
    fail "assemble took a damaged per-expert checkpoint ($model)"
  fi
  grep -q "$file.*checksum mismatch.*rerun" "$WORK/damaged-$model.txt" \
    || fail "damaged $model: $(cat "$WORK/damaged-$model.txt")"
  [[ ! -e $WORK/damaged-$model.safetensors ]] || fail "damaged $model: a file left"
  echo "ok per-expert $model: a damaged piece is refused"
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
