#!/usr/bin/env bash
# Pipeline stages (ir-spec/sharding.md): a llama-family model with uneven dims compiled for
# meshes with a stage axis (pp=2,dp=2, pp=3, pp=4, pp=2,tp=2) assembles to the same bytes as on
# dp=2, from the ranks, hf and dcp layouts; each rank alone (--rank K) writes its file again;
# on pp=4 every rank file holds exactly its stage's tensors (torchtitan's split of 2 layers:
# embedding / layer 0 / layer 1 / norm and head) and lists no other stage's; a stage
# axis the model cannot fill, or a rule sending a layer to two stages, fails with one message.
source "$(dirname "$0")/../common.bash"

"$INITC" import hf "$ROOT/tests/e2e/configs/llama_uneven.json" --dtype bf16 --seed 7 \
  -o "$WORK/model.mlir"
"$INITC" compile "$WORK/model.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog-ref" >/dev/null \
  || fail "compile dp=2"
"${MPIRUN[@]}" -np 2 "$WORK/prog-ref/init" --layout ranks --out "$WORK/ckpt-ref" --quiet \
  || fail "run dp=2"
"$INITC" assemble "$WORK/ckpt-ref" -o "$WORK/ref.safetensors" >/dev/null || fail "assemble dp=2"

for spec in "pp=2,dp=2:fsdp" "pp=3:replicated" "pp=4:replicated" "pp=2,tp=2:tp"; do
  mesh=${spec%%:*} shard=${spec##*:} n=$(mesh_size "$mesh")
  tag=${mesh//[=,]/_}
  "$INITC" compile "$WORK/model.mlir" --mesh "$mesh" --shard "$shard" -o "$WORK/prog-$tag" \
    >/dev/null || fail "compile $tag"
  for layout in ranks hf dcp; do
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$tag/init" --layout $layout --out "$WORK/ckpt-$tag-$layout" \
      --quiet || fail "run $tag ($layout) on $n ranks"
    "$INITC" verify "$WORK/ckpt-$tag-$layout" >/dev/null || fail "verify $tag ($layout)"
    "$INITC" assemble "$WORK/ckpt-$tag-$layout" -o "$WORK/$tag-$layout.safetensors" >/dev/null \
      || fail "assemble $tag ($layout)"
    cmp "$WORK/ref.safetensors" "$WORK/$tag-$layout.safetensors" \
      || fail "$tag ($layout) differs from dp=2"
  done
  for ((k = 0; k < n; k++)); do
    "$WORK/prog-$tag/init" --layout ranks --rank "$k" --out "$WORK/alone-$tag" --quiet \
      || fail "--rank $k $tag"
    file=$(printf "rank-%05d-of-%05d.safetensors" "$k" "$n")
    cmp "$WORK/ckpt-$tag-ranks/$file" "$WORK/alone-$tag/$file" || fail "--rank $k differs ($tag)"
  done
  echo "ok $tag"
done

# pp=4: each rank file lists exactly its stage's tensors, every one with elements, and no
# other stage's.
$PYTHON - "$WORK/ckpt-pp_4-ranks" "$WORK/ref.safetensors" <<'PY' || fail "pp=4 rank files do not hold their stages"
import json, struct, sys
expected = [
    lambda n: n == "model.embed_tokens.weight",
    lambda n: n.startswith("model.layers.0."),
    lambda n: n.startswith("model.layers.1."),
    lambda n: n in ("model.norm.weight", "lm_head.weight"),
]
def header(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
everything = set(header(sys.argv[2])) - {"__metadata__"}
held = set()
for rank in range(4):
    entries = header(f"{sys.argv[1]}/rank-{rank:05d}-of-00004.safetensors")
    tensors = json.loads(entries.pop("__metadata__")["initc.tensors"])
    assert set(tensors) == set(entries), rank
    assert set(entries) == {n for n in everything if expected[rank](n)}, (rank, sorted(entries))
    for name, entry in entries.items():
        assert all(entry["shape"]), (rank, name, entry["shape"])
    held |= set(entries)
assert held == everything, sorted(everything - held)
PY
echo "ok pp=4 rank files hold their stages"

# inspect: per-rank bytes over the stages, the largest rank is not rank 0's stage alone.
"$INITC" inspect "$WORK/model.mlir" --mesh pp=4 --shard replicated >"$WORK/inspect.txt" \
  || fail "inspect pp=4"
grep -q "^per rank: min .* (rank [0-9]*), mean .*, max .* (rank [0-9]*)$" "$WORK/inspect.txt" \
  || fail "inspect pp=4: $(cat "$WORK/inspect.txt")"
grep -q "pp=1 \[\]\|pp=1 whole" "$WORK/inspect.txt" || fail "inspect shows no stage: $(cat "$WORK/inspect.txt")"

# Bad input.
fails_cleanly "5 stages for 2 layers" "mesh axis 'pp' has 5 pipeline stages but the model has 2 layers" \
  "$INITC" compile "$WORK/model.mlir" --mesh pp=5 --shard replicated -o "$WORK/prog-pp5"
no_output "$WORK/prog-pp5"
echo '{"pipeline": {"axis": "pp", "stages": [[0, 1], [1]]}}' >"$WORK/twice.json"
fails_cleanly "a layer on two stages" "layer 1 is listed for pipeline stages 0 and 1" \
  "$INITC" compile "$WORK/model.mlir" --mesh pp=2 --shard "$WORK/twice.json" -o "$WORK/prog-twice"
no_output "$WORK/prog-twice"
echo "ok bad stage input fails with one message"

# Experts: a mixtral with 4 experts (common.bash's expert_meshes).
"$INITC" import hf "$ROOT/tests/e2e/configs/mixtral_tiny.json" --dtype bf16 --seed 7 \
  -o "$WORK/moe.mlir"
expert_meshes "$WORK/moe.mlir" moe
echo "ok experts"
