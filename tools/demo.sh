#!/usr/bin/env bash
# The main job, end to end: import a ~100M-parameter llama config, compile it for a 2x2 mesh
# (fsdp+tp), run it on 4 MPI ranks as a Hugging Face checkpoint (the default hf layout) and verify
# it, then in initc's own ranks layout, regenerate one rank alone and assemble one safetensors file.
#   tools/demo.sh [config.json] [mesh] [shard]     (defaults: examples/llama-100m.json dp=2,tp=2 fsdp+tp)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
install_missing_packages
configure_and_build

CONFIG="${1:-$ROOT/examples/llama-100m.json}"
MESH="${2:-dp=2,tp=2}"
SHARD="${3:-fsdp+tp}"
RANKS=$(echo "$MESH" | tr ',' '\n' | awk -F= 'BEGIN { n = 1 } { n *= $2 } END { print n }')
OUT="${DEMO_DIR:-$BUILD_DIR/demo}"
INITC="$BUILD_DIR/bin/initc"
rm -rf "$OUT" && mkdir -p "$OUT"

step() { echo; echo "== $*"; }
step "import $CONFIG"
"$INITC" import hf "$CONFIG" --seed 0 -o "$OUT/model.mlir"
echo "wrote $OUT/model.mlir ($(grep -c 'init.param' "$OUT/model.mlir") parameters)"
step "inspect on mesh $MESH, sharding $SHARD"
"$INITC" inspect "$OUT/model.mlir" --mesh "$MESH" --shard "$SHARD" | tail -12
step "compile"
"$INITC" compile "$OUT/model.mlir" --mesh "$MESH" --shard "$SHARD" -o "$OUT/prog"
step "run on $RANKS MPI ranks: a Hugging Face checkpoint (--layout hf, the default)"
mpirun --oversubscribe --bind-to none -np "$RANKS" "$OUT/prog/init" --out "$OUT/hf" --quiet
ls "$OUT/hf"
"$INITC" verify "$OUT/hf"
step "run on $RANKS MPI ranks: initc's own layout (--layout ranks)"
mpirun --oversubscribe --bind-to none -np "$RANKS" "$OUT/prog/init" --layout ranks --out "$OUT/ckpt"
step "verify"
"$INITC" verify "$OUT/ckpt"
step "regenerate rank $((RANKS - 1)) alone and compare"
"$OUT/prog/init" --layout ranks --rank $((RANKS - 1)) --out "$OUT/rank-alone" --quiet
file=$(printf "rank-%05d-of-%05d.safetensors" $((RANKS - 1)) "$RANKS")
cmp "$OUT/ckpt/$file" "$OUT/rank-alone/$file" && echo "$file: identical"
step "assemble"
"$INITC" assemble "$OUT/ckpt" -o "$OUT/model.safetensors"
echo
echo "Done: $OUT/hf is the model as transformers' from_pretrained loads it;"
echo "$OUT/ckpt holds one safetensors file per rank plus index.json;"
echo "$OUT/model.safetensors holds the whole model ($(du -h "$OUT/model.safetensors" | cut -f1))."
