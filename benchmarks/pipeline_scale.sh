#!/usr/bin/env bash
# Llama-3.1-405B (or CONFIG) on pipeline meshes (pp=16 stages x dp x tp=8, --shard SHARD): compile time and
# peak memory, the program directory's size, per-rank bytes min/mean/max (initc inspect, with its
# own time), and one rank run alone (--rank K --discard).
#
#   BUILD_DIR=build [CONFIG=config.json] [SHARD=fsdp+tp] benchmarks/pipeline_scale.sh WORK_DIR [MESH...]
#
# MESH defaults to pp=16,dp=128,tp=8 (16,384 ranks) and pp=16,dp=4096,tp=8 (524,288 ranks);
# CONFIG to benchmarks/configs/llama-3.1-405b.json (configs/mixtral-8x7b.json with, say,
# pp=16,ep=8,dp=16 and SHARD=fsdp for experts; configs/deepseek-v3.json on pp=16,ep=64,dp=16
# with SHARD=benchmarks/configs/fsdp-bytes-split.json, fsdp with the stages split by bytes).
# Build the targets initc and init first.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
WORK=${1:?usage: pipeline_scale.sh WORK_DIR [MESH...]}
shift
meshes=("$@")
((${#meshes[@]})) || meshes=(pp=16,dp=128,tp=8 pp=16,dp=4096,tp=8)
INITC="$BUILD_DIR/bin/initc"
mkdir -p "$WORK"
CONFIG=${CONFIG:-$ROOT/benchmarks/configs/llama-3.1-405b.json}
SHARD=${SHARD:-fsdp+tp}
"$INITC" import hf "$CONFIG" -o "$WORK/model.mlir"
for mesh in "${meshes[@]}"; do
  tag=${mesh//[=,]/_}
  rm -rf "$WORK/p-$tag"
  echo "== $mesh"
  /usr/bin/time -f "compile: %e s wall, %U s user, %M KB max RSS" \
    "$INITC" compile "$WORK/model.mlir" --mesh "$mesh" --shard "$SHARD" -o "$WORK/p-$tag" >/dev/null
  echo "artefacts: $(du -sh "$WORK/p-$tag" | cut -f1)"
  /usr/bin/time -f "inspect: %e s wall, %M KB max RSS" \
    "$INITC" inspect "$WORK/model.mlir" --mesh "$mesh" --shard "$SHARD" --json >"$WORK/inspect-$tag.json"
  python3 - "$WORK/inspect-$tag.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
b = t["per_rank_bytes"]
mib = 1 << 20
print(f"per rank: min {b['min'] / mib:.2f} MiB (rank {b['min_rank']}), mean {b['mean'] / mib:.2f} MiB, "
      f"max {b['max'] / mib:.2f} MiB (rank {b['max_rank']}); max/mean {b['max'] / b['mean']:.4f}; "
      f"{t['ranks']} ranks")
PY
  ranks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["ranks"])' \
    "$WORK/inspect-$tag.json")
  rank=$((ranks * 3 / 4 + 5)) # a rank on a late stage
  /usr/bin/time -f "rank $rank alone: %e s wall, %M KB max RSS" \
    "$WORK/p-$tag/init" --rank "$rank" --discard --quiet
done
