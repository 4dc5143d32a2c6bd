#!/usr/bin/env bash
# init.load end to end: a model that takes some parameters from a base checkpoint (one
# safetensors file, or a Hugging Face index over several) and computes the others gives the same
# bytes on every mesh and thread count, each loaded tensor exactly the base's; what cannot be
# loaded is said once, at compile time where the file is there and at run time where it is not.
source "$(dirname "$0")/../common.bash"

cd "$WORK"
# tensors(path): a safetensors file's tensors, name -> (dtype, shape, bytes), for the checks below;
# save(path, tensors) writes them.
cat >tensors.py <<'EOF'
import json, struct

def tensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    header.pop("__metadata__", None)
    return {name: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]])
            for name, e in header.items()}


def save(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
EOF
cat >base.mlir <<'EOF'
init.seed 7
init.param @emb : tensor<96x40xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<96x40xbf16>
  init.yield %0 : tensor<96x40xbf16>
}
init.param @wide : tensor<64x4096xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<64x4096xf32>
  init.yield %0 : tensor<64x4096xf32>
}
init.param @bias : tensor<7xf16> {
  %0 = init.normal mean 1.0 std 0.5 stream 0 : tensor<7xf16>
  init.yield %0 : tensor<7xf16>
}
EOF
"$INITC" compile base.mlir -o pbase >/dev/null || fail "compile the base model"
pbase/init --layout ranks --out cbase --quiet || fail "run the base model"
"$INITC" assemble cbase -o base.safetensors >/dev/null || fail "assemble the base checkpoint"

# The fine-tuned model: the base's tensors, and a head of its own.
model() { # FILE: the model loading from FILE
  cat <<EOF
init.seed 1
init.param @emb : tensor<96x40xbf16> {
  %0 = init.load "$1" ["emb"] : tensor<96x40xbf16>
  init.yield %0 : tensor<96x40xbf16>
}
init.param @wide : tensor<64x4096xf32> {
  %0 = init.load "$1" ["wide"] : tensor<64x4096xf32>
  init.yield %0 : tensor<64x4096xf32>
}
init.param @bias : tensor<7xf16> {
  %0 = init.load "$1" ["bias"] : tensor<7xf16>
  init.yield %0 : tensor<7xf16>
}
init.param @head : tensor<40x96xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<40x96xf32>
  init.yield %0 : tensor<40x96xf32>
}
EOF
}
model base.safetensors >ft.mlir
# Rows, columns (the wide tensor in 16 runs per row, far apart), both, and nothing split.
echo '{"params": {"emb": [["dp"], ["tp"]], "wide": [null, ["tp", "dp"]], "bias": [["tp"]], "head": [null, ["dp"]]}}' >rules.json
echo '{"params": {"bias": [], "*": [null, ["tp"]]}}' >columns.json

reference=""
for spec in "dp=1:replicated" "dp=2,tp=3:rules.json" "tp=16:columns.json"; do
  mesh=${spec%%:*} shard=${spec##*:} n=$(mesh_size "$mesh")
  tag=${mesh//[=,]/_}
  "$INITC" compile ft.mlir --mesh "$mesh" --shard "$shard" -o "p-$tag" >/dev/null ||
    fail "compile on $mesh"
  for threads in 1 3; do
    "${MPIRUN[@]}" -np "$n" "p-$tag/init" --threads $threads --quiet --layout ranks --out "c-$tag-$threads" ||
      fail "run on $mesh with $threads threads"
    "$INITC" verify "c-$tag-$threads" >/dev/null || fail "verify on $mesh with $threads threads"
    "$INITC" assemble "c-$tag-$threads" -o "$tag-$threads.safetensors" >/dev/null ||
      fail "assemble on $mesh with $threads threads"
    if [[ -z $reference ]]; then
      reference="$tag-$threads.safetensors"
    else
      cmp "$reference" "$tag-$threads.safetensors" ||
        fail "$mesh with $threads threads differs from one rank with one thread"
    fi
  done
  echo "ok $mesh"
done

# Each loaded tensor is the base's, byte for byte; the head is computed (not zeros).
"$PYTHON" - base.safetensors "$reference" <<'EOF' || fail "loaded tensors differ from the base"
import sys
from tensors import tensors

base, loaded = tensors(sys.argv[1]), tensors(sys.argv[2])
for name in ("emb", "wide", "bias"):
    assert loaded[name] == base[name], name
assert set(loaded) == {"emb", "wide", "bias", "head"}, sorted(loaded)
assert loaded["head"][2].count(0) < len(loaded["head"][2]) // 2, "head looks unwritten"
EOF
echo "ok loaded tensors are the base's"

# A Hugging Face sharded checkpoint: two files and model.safetensors.index.json.
"$PYTHON" - base.safetensors hf <<'EOF' || fail "split the base checkpoint"
import json, os, sys
from tensors import save, tensors

base = tensors(sys.argv[1])
os.makedirs(sys.argv[2])
files = {"model-00001-of-00002.safetensors": ["emb", "bias"],
         "model-00002-of-00002.safetensors": ["wide"]}
for file, names in files.items():
    save(os.path.join(sys.argv[2], file), {name: base[name] for name in names})
weight_map = {name: file for file, names in files.items() for name in names}
with open(os.path.join(sys.argv[2], "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
EOF
model "$WORK/hf/model.safetensors.index.json" >hf.mlir
"$INITC" compile hf.mlir --mesh dp=2,tp=3 --shard rules.json -o p-hf >/dev/null ||
  fail "compile the model loading through an index"
"${MPIRUN[@]}" -np 6 p-hf/init --quiet --layout ranks --out c-hf || fail "run the model loading through an index"
"$INITC" assemble c-hf -o hf.safetensors >/dev/null || fail "assemble the index run"
"$PYTHON" - "$reference" hf.safetensors <<'EOF' || fail "loading through an index differs"
import sys
from tensors import tensors

assert tensors(sys.argv[1]) == tensors(sys.argv[2])
EOF
echo "ok Hugging Face index"

# import hf --load: a model grown from a base (one more layer) loads the base's tensors and
# initializes the new ones exactly as the same import without --load does.
CONFIGS="$ROOT/tests/e2e/configs"
"$INITC" import hf "$CONFIGS/qwen2_tiny.json" --dtype bf16 --seed 5 -o small.mlir || fail "import small"
"$INITC" compile small.mlir -o p-small >/dev/null || fail "compile small"
p-small/init --quiet --layout ranks --out c-small || fail "run small"
"$INITC" assemble c-small -o small.safetensors >/dev/null || fail "assemble small"
"$PYTHON" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["num_hidden_layers"] += 1; json.dump(c, open("grown.json", "w"))' \
  "$CONFIGS/qwen2_tiny.json"
"$INITC" import hf grown.json --dtype bf16 --seed 5 --load small.safetensors -o grown.mlir 2>import.txt ||
  fail "import --load: $(cat import.txt)"
grep -qE "^initc: [0-9]+ of [0-9]+ tensors load from small.safetensors; the others are initialized \(model\.layers\.[0-9]+\." import.txt ||
  fail "import --load does not say what it loads: $(cat import.txt)"
"$INITC" import hf grown.json --dtype bf16 --seed 5 -o fresh.mlir || fail "import grown"
for model in grown fresh; do
  "$INITC" compile $model.mlir --mesh dp=2,tp=2 --shard fsdp+tp -o p-$model >/dev/null ||
    fail "compile $model"
  "${MPIRUN[@]}" -np 4 p-$model/init --quiet --layout ranks --out c-$model || fail "run $model"
  "$INITC" assemble c-$model -o $model.safetensors >/dev/null || fail "assemble $model"
done
"$PYTHON" - small.safetensors grown.safetensors fresh.safetensors <<'EOF' || fail "the grown model's tensors"
import sys
from tensors import tensors

small, grown, fresh = (tensors(p) for p in sys.argv[1:])
new = [name for name in grown if name not in small]
assert new and all(name.startswith("model.layers.") for name in new), new
assert all(grown[name] == small[name] for name in small), "a loaded tensor differs from the base"
assert all(grown[name] == fresh[name] for name in new), "a new tensor differs from a fresh init"
EOF
fails_cleanly "import --load of another dtype" "^initc: error: small.safetensors holds the model's weights as BF16 but --dtype is f32: import with --dtype bf16" \
  "$INITC" import hf grown.json --load small.safetensors -o wrong.mlir
no_output wrong.mlir
fails_cleanly "import --load of another model" "has none of the model's parameters: its tensors are " \
  "$INITC" import hf grown.json --dtype bf16 --load base.safetensors -o wrong.mlir
fails_cleanly "import --load of nothing" "^initc: error: --load: absent.safetensors: no such file" \
  "$INITC" import hf grown.json --load absent.safetensors -o wrong.mlir
# Tied names: a tied model that loads an untied base says which of the base's tensors it drops;
# a base that holds a tied tensor only under the tied name loads it through that name.
"$PYTHON" -c 'import json, sys; c = json.load(open("grown.json")); c["tie_word_embeddings"] = False; json.dump(c, open("untied.json", "w"))'
"$INITC" import hf untied.json --dtype bf16 --seed 5 -o untied.mlir || fail "import untied"
"$INITC" compile untied.mlir -o p-untied >/dev/null || fail "compile untied"
p-untied/init --quiet --layout ranks --out c-untied || fail "run untied"
"$INITC" assemble c-untied -o untied.safetensors >/dev/null || fail "assemble untied"
"$INITC" import hf grown.json --dtype bf16 --seed 5 --load untied.safetensors -o tied.mlir 2>tied.txt ||
  fail "import a tied model from an untied base: $(cat tied.txt)"
grep -q "warning: the model ties 'lm_head.weight' to 'model.embed_tokens.weight', so untied.safetensors's own 'lm_head.weight' is not loaded" tied.txt ||
  fail "no warning for the base's dropped lm_head.weight: $(cat tied.txt)"
"$PYTHON" - untied.safetensors <<'EOF' || fail "write a base with only lm_head.weight"
import sys
from tensors import save, tensors
t = tensors(sys.argv[1])
t["lm_head.weight"], t["model.embed_tokens.weight"] = t["model.embed_tokens.weight"], None
del t["model.embed_tokens.weight"]
save("headonly.safetensors", t)
EOF
"$INITC" import hf grown.json --dtype bf16 --seed 5 --load headonly.safetensors -o headonly.mlir ||
  fail "import from a base that holds the tied tensor as lm_head.weight"
grep -q 'init.load "headonly.safetensors"\["lm_head.weight"\] : tensor<1000x64xbf16>' headonly.mlir ||
  fail "model.embed_tokens.weight does not load the base's lm_head.weight"
# A base whose weights mix dtypes cannot be imported with one --dtype: said once, with both.
"$PYTHON" - small.safetensors <<'EOF' || fail "write a mixed base"
import sys
from tensors import save, tensors
t = tensors(sys.argv[1])
dtype, shape, blob = t["model.norm.weight"]
t["model.norm.weight"] = ("F32", shape, b"".join(b"\0\0" + blob[i:i + 2] for i in range(0, len(blob), 2)))
save("mixed.safetensors", t)
EOF
fails_cleanly "import --load of a base of mixed dtypes" "^initc: error: mixed.safetensors holds its weights in several dtypes: [0-9]+ BF16 \('.*', \.\.\.\), 1 F32 \('model.norm.weight'\)" \
  "$INITC" import hf grown.json --dtype bf16 --load mixed.safetensors -o wrong.mlir
# initc-opt says a bad file in one line, without printing the module.
fails_cleanly "initc-opt with a directory for a base" "error: $WORK: a directory, not a regular file" \
  "$BUILD_DIR/bin/initc-opt" grown.mlir --init-load-from-base=file="$WORK"
! grep -q "see current operation" "$WORK/err.txt" || fail "initc-opt prints the module: $(head -5 "$WORK/err.txt")"
[[ $(wc -l <"$WORK/err.txt") -le 3 ]] || fail "initc-opt prints more than its error: $(head -5 "$WORK/err.txt")"
"$PYTHON" -c 'import json; c = json.load(open("grown.json")); c["vocab_size"] += 1; json.dump(c, open("vocab.json", "w"))'
fails_cleanly "import --load of another config" "^initc: error: small.safetensors holds model.embed_tokens.weight as \[1000, 64\] but vocab.json makes it \[1001, 64\]: small.safetensors is not a checkpoint of this config" \
  "$INITC" import hf vocab.json --dtype bf16 --load small.safetensors -o wrong.mlir
"$INITC" compile small.mlir --mesh dp=2 --shard fsdp -o p-small2 >/dev/null || fail "compile small on 2 ranks"
"${MPIRUN[@]}" -np 2 p-small2/init --quiet --layout ranks --out c-small2 || fail "run small on 2 ranks"
fails_cleanly "import --load of one rank's file" "^initc: error: --load: c-small2/rank-00000-of-00002.safetensors is rank 0 of a 2-rank initc checkpoint, which holds slices: load the file .initc assemble. makes of its directory" \
  "$INITC" import hf grown.json --dtype bf16 --load c-small2/rank-00000-of-00002.safetensors -o wrong.mlir
"$PYTHON" -c 'from tensors import save; save("empty.safetensors", {})'
fails_cleanly "import --load of an empty base" "^initc: error: empty.safetensors holds no tensors" \
  "$INITC" import hf grown.json --dtype bf16 --load empty.safetensors -o wrong.mlir
# A non-persistent buffer is computed even where the base has it, as from_pretrained does.
"$PYTHON" - small.safetensors <<'EOF' || fail "write a base with inv_freq"
import struct, sys
from tensors import save, tensors
t = tensors(sys.argv[1])
t["model.rotary_emb.inv_freq"] = ("F32", [8], struct.pack("<8f", *[1.0] * 8))
save("withinv.safetensors", t)
EOF
"$INITC" import hf grown.json --dtype bf16 --seed 5 --load withinv.safetensors -o withinv.mlir 2>withinv.txt ||
  fail "import --load of a base with inv_freq: $(cat withinv.txt)"
grep -q "^initc: warning: withinv.safetensors's 'model.rotary_emb.inv_freq' is not loaded: the model computes its non-persistent buffers" withinv.txt ||
  fail "no warning for the base's inv_freq: $(cat withinv.txt)"
! grep -q 'init.load "withinv.safetensors"\["model.rotary_emb.inv_freq"\]' withinv.mlir ||
  fail "inv_freq is loaded from the base"
echo "ok import hf --load"

# inspect marks loaded tensors and counts what the largest rank reads.
"$INITC" inspect ft.mlir --mesh dp=2,tp=3 --shard rules.json >inspect.txt || fail "inspect"
grep -qE '^wide +F32 .* loaded$' inspect.txt || fail "inspect does not mark wide loaded: $(cat inspect.txt)"
grep -q "rank 0 reads .* of its shards from base checkpoints" inspect.txt ||
  fail "inspect does not count the bytes read: $(cat inspect.txt)"
"$INITC" inspect ft.mlir --json | "$PYTHON" -c '
import json, sys
params = {p["name"]: p for p in json.load(sys.stdin)["params"]}
assert params["wide"]["load"] == {"file": "base.safetensors", "tensor": "wide"}, params["wide"]
assert "load" not in params["head"]' || fail "inspect --json does not name the source"
echo "ok inspect"

# Mistakes, at compile time where the file is here.
sed 's/tensor<7xf16>/tensor<7xf32>/g' ft.mlir >dtype.mlir
fails_cleanly "dtype" '^dtype.mlir:11:8: error: tensor "bias" of base.safetensors is F16 \[7\] but parameter .bias. is F32 \[7\]: init.load copies the tensor as it is' \
  "$INITC" compile dtype.mlir -o p-dtype
no_output p-dtype
sed 's/\["wide"\]/["wider"]/' ft.mlir >name.mlir
fails_cleanly "tensor name" 'base.safetensors has no tensor "wider"; it has 3 \(' \
  "$INITC" compile name.mlir -o p-name
printf 'not safetensors' >junk.safetensors
model junk.safetensors >junk.mlir
fails_cleanly "not safetensors" '^junk.mlir:3:8: error: junk.safetensors: not a safetensors file' \
  "$INITC" compile junk.mlir -o p-junk
[[ $(grep -c "error:" "$WORK/err.txt") == 1 ]] || fail "a broken file is not said once: $(cat "$WORK/err.txt")"
cat >feeds.mlir <<'EOF'
init.seed 0
init.param @twice : tensor<7xf16> {
  %0 = init.load "base.safetensors" ["bias"] : tensor<7xf16>
  %1 = init.add %0, %0 : tensor<7xf16>
  init.yield %1 : tensor<7xf16>
}
EOF
fails_cleanly "load feeding an op" "^feeds.mlir:3:8: error: cannot fuse: 'init.load' reads its values, it does not compute them" \
  "$INITC" compile feeds.mlir -o p-feeds

# A file that is not where the program runs: compile warns, prog/init says where it looked.
model later.safetensors >later.mlir
"$INITC" compile later.mlir -o p-later 2>later.txt >/dev/null || fail "compile with an absent base"
grep -q "warning: 'later.safetensors' does not exist here: it is read when prog/init runs, from the directory it runs in" later.txt ||
  fail "no warning for an absent base: $(cat later.txt)"
[[ $(grep -c "warning:" later.txt) == 1 ]] || fail "the absent base is not warned about once: $(cat later.txt)"
"$INITC" inspect later.mlir 2>later.txt >/dev/null || fail "inspect with an absent base"
[[ $(grep -c "warning:" later.txt) == 1 ]] || fail "inspect does not warn once: $(cat later.txt)"
# An index that is here, naming a shard that is not: the shard may be where the program runs.
mkdir partial
cp hf/model.safetensors.index.json hf/model-00001-of-00002.safetensors partial/
model partial/model.safetensors.index.json >partial.mlir
"$INITC" compile partial.mlir -o p-partial 2>partial.txt >/dev/null ||
  fail "compile with an index whose shard is elsewhere: $(cat partial.txt)"
grep -q "^partial.mlir:7:8: warning: 'partial/model-00002-of-00002.safetensors' does not exist here: it is read when prog/init runs, from the directory it runs in" partial.txt ||
  fail "no warning for the absent shard: $(cat partial.txt)"
fails_cleanly "absent at run time" "^init: error: parameter 'emb' loads \"emb\" from later.safetensors, which is not in $WORK, the working directory: run where the file is" \
  p-later/init --layout ranks --out c-later
no_output c-later
# The base replaced by one whose tensor has another dtype: refused before anything is written.
cp base.safetensors later.safetensors
sed -i 's/tensor<7xf16>/tensor<7xf32>/g' later.mlir
"$INITC" compile later.mlir -o p-later2 >/dev/null 2>&1 && fail "compile accepted a dtype mismatch"
sed 's/tensor<7xf32>/tensor<7xf16>/g' later.mlir >later16.mlir
rm later.safetensors
"$INITC" compile later16.mlir -o p-later16 >/dev/null 2>&1 || fail "compile later16"
"$PYTHON" - base.safetensors later.safetensors <<'EOF'
import sys
from tensors import save, tensors
t = tensors(sys.argv[1])
t["bias"] = ("BF16",) + t["bias"][1:]  # same size, another dtype
save(sys.argv[2], t)
EOF
fails_cleanly "base changed after compile" "^init: error: parameter 'bias' loads \"bias\" from later.safetensors: tensor \"bias\" of later.safetensors is BF16 \[7\] but parameter 'bias' is F16 \[7\]" \
  p-later16/init --layout ranks --out c-later16
no_output c-later16
# A finished job reruns without its base (every rank is complete); a new one stops before
# --out exists; a base inside --out is refused before anything there is touched.
mv base.safetensors base.away
p-dp_1/init --layout ranks --out c-dp_1-1 2>rerun.txt || fail "rerun of a complete checkpoint without its base: $(cat rerun.txt)"
grep -q "already complete" rerun.txt || fail "the rerun did not keep the complete shards: $(cat rerun.txt)"
fails_cleanly "no base for a new checkpoint" "loads \"emb\" from base.safetensors, which is not in $WORK" \
  p-dp_1/init --layout ranks --out c-new
no_output c-new
mv base.away base.safetensors
mkdir inside
cp base.safetensors inside/base.safetensors
model inside/base.safetensors >inside.mlir
"$INITC" compile inside.mlir -o p-inside >/dev/null || fail "compile inside"
fails_cleanly "base inside --out" "^init: error: the base checkpoint inside/base.safetensors \(init.load of emb\) is inside --out inside, which this run writes" \
  p-inside/init --layout ranks --out inside --overwrite
cmp base.safetensors inside/base.safetensors || fail "the base inside --out was changed"
echo "ok mistakes"

# A rerun computes again the shards an earlier run computed from another version of the base
# (its size, modification or status-change time differ), and keeps them while the base is as it
# was. Renaming it changes its status-change time: the moves above count as a change.
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1 2>moved.txt ||
  fail "rerun, base moved away and back: $(cat moved.txt)"
grep -q "ranks *6, 6 computed again, their base checkpoint changed (0-5)$" moved.txt ||
  fail "a rerun after the base was moved kept its shards: $(cat moved.txt)"
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1 2>same.txt ||
  fail "rerun, base unchanged: $(cat same.txt)"
grep -q "ranks *6, 6 already complete (0-5)$" same.txt ||
  fail "a rerun with the same base did not keep every shard: $(cat same.txt)"
# The hf layout records the base's versions beside each rank's sums, and keeps or computes again
# the same way.
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --quiet --layout hf --out h-dp_2_tp_3 || fail "hf run"
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout hf --out h-dp_2_tp_3 2>hsame.txt ||
  fail "hf rerun, base unchanged: $(cat hsame.txt)"
grep -q "ranks *6, 6 already complete (0-5)$" hsame.txt ||
  fail "an hf rerun with the same base did not keep every rank: $(cat hsame.txt)"
cp -p base.safetensors base.before
"$PYTHON" - base.before base.safetensors <<'EOF' || fail "write a fine-tuned base"
import sys
from tensors import save, tensors
t = tensors(sys.argv[1])
dtype, shape, blob = t["wide"]
t["wide"] = (dtype, shape, bytes(b ^ 0x80 if i % 4 == 3 else b for i, b in enumerate(blob)))  # -w
save(sys.argv[2], t)
EOF
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1 2>changed.txt ||
  fail "rerun, base changed: $(cat changed.txt)"
grep -q "ranks *6, 6 computed again, their base checkpoint changed (0-5)$" changed.txt ||
  fail "the rerun kept shards of the old base: $(cat changed.txt)"
"$INITC" verify c-dp_2_tp_3-1 >/dev/null || fail "verify after the base changed"
"$INITC" assemble c-dp_2_tp_3-1 -o rebased.safetensors >/dev/null || fail "assemble after the base changed"
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --quiet --layout ranks --out c-new-base || fail "run from the new base"
"$INITC" assemble c-new-base -o fresh.safetensors >/dev/null || fail "assemble the fresh run"
cmp rebased.safetensors fresh.safetensors || fail "the rerun differs from a fresh run from the new base"
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout hf --out h-dp_2_tp_3 2>hchanged.txt ||
  fail "hf rerun, base changed: $(cat hchanged.txt)"
grep -q "ranks *6, 6 computed again, their base checkpoint changed (0-5)$" hchanged.txt ||
  fail "the hf rerun kept boxes of the old base: $(cat hchanged.txt)"
"$INITC" verify h-dp_2_tp_3 >/dev/null || fail "verify the hf checkpoint after the base changed"
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --quiet --layout hf --out h-new-base || fail "hf run from the new base"
for f in h-new-base/*.safetensors; do
  cmp "$f" "h-dp_2_tp_3/${f##*/}" || fail "the hf rerun differs from a fresh hf run from the new base: ${f##*/}"
done
"$PYTHON" - base.safetensors rebased.safetensors "$reference" <<'EOF' || fail "the rerun does not hold the new base"
import sys
from tensors import tensors
base, rebased, before = (tensors(p) for p in sys.argv[1:])
assert rebased["wide"] == base["wide"] != before["wide"]
assert rebased["head"] == before["head"]
EOF
# One rank run alone says it; only touching the base is a change too, with the same bytes.
touch base.safetensors
p-dp_2_tp_3/init --layout ranks --rank 4 --out c-dp_2_tp_3-1 2>one.txt || fail "rerun of rank 4: $(cat one.txt)"
grep -q "^init: rank 4: c-dp_2_tp_3-1/rank-00004-of-00006.safetensors: computed from another version of base.safetensors: computing it again (then rerun the whole job, so that index.json records it)$" one.txt ||
  fail "rank 4 alone did not say why it computed its shard again: $(cat one.txt)"
"$INITC" verify c-dp_2_tp_3-1 >/dev/null || fail "verify after rank 4 was computed again"
"$INITC" assemble c-dp_2_tp_3-1 -o touched.safetensors >/dev/null || fail "assemble after rank 4"
cmp touched.safetensors fresh.safetensors || fail "rank 4 computed again from a touched base differs"
# The old base copied back over it with its size and modification time (cp -p): a change too.
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --quiet --layout ranks --out c-dp_2_tp_3-1 || fail "settle the rerun"
cp -p base.before base.safetensors
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1 2>copied.txt ||
  fail "rerun, old base copied back: $(cat copied.txt)"
grep -q "6 computed again, their base checkpoint changed (0-5)$" copied.txt ||
  fail "cp -p of the old base went unnoticed: $(cat copied.txt)"
"$INITC" assemble c-dp_2_tp_3-1 -o back.safetensors >/dev/null || fail "assemble after cp -p"
cmp back.safetensors "dp_2_tp_3-1.safetensors" || fail "the rerun after cp -p differs from the first run"

# A base that is there but unusable (cut short) stops a rerun, complete shards or not: only an
# absent base lets them be kept unchecked, and the summary says so.
head -c 1000 base.before >base.safetensors
fails_cleanly "rerun with a truncated base" "^init: error \(rank 0\): parameter 'emb' loads \"emb\" from base.safetensors: .*truncated" \
  "${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1
rm base.safetensors
"${MPIRUN[@]}" -np 6 p-dp_2_tp_3/init --layout ranks --out c-dp_2_tp_3-1 2>absent.txt ||
  fail "rerun without the base: $(cat absent.txt)"
grep -q "ranks *6, 6 already complete (0-5), none compared with their base checkpoint, which is absent$" absent.txt ||
  fail "the rerun without its base did not say its shards were not compared: $(cat absent.txt)"
# The base changed where some ranks run and absent where the others do: their shards would be of
# two versions of it. Ranks 0-2 run in here-a (a new base), 3-5 in here-b (none).
mkdir -p here-a here-b
"$PYTHON" - base.before here-a/base.safetensors <<'EOF' || fail "write a third base"
import sys
from tensors import save, tensors
t = tensors(sys.argv[1])
dtype, shape, blob = t["emb"]
t["emb"] = (dtype, shape, bytes(reversed(blob)))
save(sys.argv[2], t)
EOF
cat >split.sh <<EOF
#!/bin/bash
cd "$WORK/here-\$( ((OMPI_COMM_WORLD_RANK < 3)) && echo a || echo b)" && exec "$WORK/p-dp_2_tp_3/init" "\$@"
EOF
chmod +x split.sh
fails_cleanly "base changed on some ranks, absent on others" "^init: error.*the base checkpoint changed since some ranks' shards were written, and other ranks, where it is absent, cannot check theirs against it" \
  "${MPIRUN[@]}" -np 6 ./split.sh --layout ranks --out "$WORK/c-dp_2_tp_3-1"
"$INITC" assemble c-dp_2_tp_3-1 -o split.safetensors >/dev/null || fail "assemble after the refused split run"
cmp split.safetensors "dp_2_tp_3-1.safetensors" || fail "the refused split run changed the checkpoint"
mv base.before base.safetensors
echo "ok base changed"
