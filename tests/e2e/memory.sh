#!/usr/bin/env bash
# No rank holds more than its shards: for a model of ~470 MB on 2 ranks (~235 MB of shards each),
# every rank's peak RSS stays below its shard bytes + 64 MiB.
source "$(dirname "$0")/common.bash"

"$INITC" import hf "$ROOT/tests/e2e/configs/llama_memory.json" -o "$WORK/model.mlir"
"$INITC" compile "$WORK/model.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog" >/dev/null
# Each rank reports its own peak RSS (KiB) through GNU time.
"${MPIRUN[@]}" -np 2 bash -c '/usr/bin/time -f "%M" -o "$0/rss-$OMPI_COMM_WORLD_RANK" "$0/prog/init" --out "$0/ckpt" --quiet --overwrite' "$WORK" \
  || fail "the 2-rank run failed"
limit_extra=$((64 * 1024 * 1024))
for rank in 0 1; do
  shard_bytes=$(stat -c %s "$WORK/ckpt/$(printf 'rank-%05d-of-00002.safetensors' $rank)")
  rss_bytes=$(( $(tail -1 "$WORK/rss-$rank") * 1024 ))
  echo "rank $rank: peak RSS $((rss_bytes >> 20)) MiB, shards $((shard_bytes >> 20)) MiB"
  ((shard_bytes > 200 * 1024 * 1024)) || fail "rank $rank holds only $shard_bytes bytes: the model is too small to test"
  ((rss_bytes < shard_bytes + limit_extra)) || fail "rank $rank peak RSS $rss_bytes exceeds shards $shard_bytes + 64 MiB"
done
echo "PASS $TEST_NAME"
