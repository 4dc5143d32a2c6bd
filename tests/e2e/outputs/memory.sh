#!/usr/bin/env bash
# Memory per rank, for a model of ~470 MB on 2 ranks (~235 MB of shards each): prog/init, writing
# a checkpoint or with --discard, streams pieces through a small ring of buffers (2 * threads + 2
# pieces of 4 MiB), so a rank's peak RSS stays below 96 MiB with 2 threads, whatever its shard
# bytes; the C API filling a process's own buffers (initc-fill-bench) holds the shards, and stays
# below their bytes + 64 MiB.
source "$(dirname "$0")/../common.bash"

"$INITC" import hf "$ROOT/tests/e2e/configs/llama_memory.json" -o "$WORK/model.mlir"
"$INITC" compile "$WORK/model.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog" >/dev/null
# Each rank reports its own peak RSS (KiB) through GNU time.
run() { # run TAG ARGS...: both ranks, peak RSS of rank R in $WORK/rss-TAG-R
  local tag=$1
  shift
  "${MPIRUN[@]}" -np 2 bash -c '/usr/bin/time -f "%M" -o "$0/rss-$1-$OMPI_COMM_WORLD_RANK" "$0/prog/init" --threads 2 --quiet "${@:2}"' \
    "$WORK" "$tag" "$@" || fail "the 2-rank run ($tag) failed"
}
run write --layout ranks --out "$WORK/ckpt"
run discard --discard
FILL="$BUILD_DIR/bin/initc-fill-bench"
[ -x "$FILL" ] || fail "no $FILL: build with INITC_BUILD_BENCHMARKS=ON"
for rank in 0 1; do
  /usr/bin/time -f "%M" -o "$WORK/rss-fill-$rank" "$FILL" "$WORK/prog" $rank 2 >/dev/null ||
    fail "the C API fill of rank $rank failed"
done
for rank in 0 1; do
  shard_bytes=$(stat -c %s "$WORK/ckpt/$(printf 'rank-%05d-of-00002.safetensors' $rank)")
  ((shard_bytes > 200 * 1024 * 1024)) || fail "rank $rank holds only $shard_bytes bytes: the model is too small to test"
  write_rss=$(( $(tail -1 "$WORK/rss-write-$rank") * 1024 ))
  discard_rss=$(( $(tail -1 "$WORK/rss-discard-$rank") * 1024 ))
  fill_rss=$(( $(tail -1 "$WORK/rss-fill-$rank") * 1024 ))
  echo "rank $rank: shards $((shard_bytes >> 20)) MiB; peak RSS writing $((write_rss >> 20)) MiB," \
    "--discard $((discard_rss >> 20)) MiB, C API in memory $((fill_rss >> 20)) MiB"
  ((write_rss < 96 * 1024 * 1024)) || fail "rank $rank peak RSS $write_rss while writing exceeds 96 MiB"
  ((discard_rss < 96 * 1024 * 1024)) || fail "rank $rank peak RSS $discard_rss with --discard exceeds 96 MiB"
  ((fill_rss > shard_bytes)) || fail "rank $rank: the C API fill peaked at $fill_rss bytes, below its shards"
  ((fill_rss < shard_bytes + 64 * 1024 * 1024)) ||
    fail "rank $rank peak RSS $fill_rss in memory exceeds shards $shard_bytes + 64 MiB"
done
"$INITC" verify "$WORK/ckpt" >/dev/null || fail "the checkpoint does not verify"
# initc inspect's estimate, made before anything runs, bounds what ran ("up to") and is within a
# factor 1.5 of it.
"$INITC" inspect "$WORK/model.mlir" --mesh dp=2 --shard fsdp --json >"$WORK/inspect.json"
python3 - "$WORK" <<'PY' || fail "initc inspect's memory estimate is off"
import json, sys
work = sys.argv[1]
e = json.load(open(f"{work}/inspect.json"))["estimate"]
threads = 2
streaming = e["writing_overhead_bytes"] + (threads + 1) * e["writing_memory_bytes_per_thread"]
estimates = {
    "in memory": e["largest_rank_memory_bytes"],
    "writing": streaming + e["writing_staging_bytes"],
    "--discard": streaming,
}
bad = False
for name, tag in (("in memory", "fill"), ("writing", "write"), ("--discard", "discard")):
    measured = max(int(open(f"{work}/rss-{tag}-{r}").read().split()[-1]) * 1024 for r in (0, 1))
    ratio = estimates[name] / measured
    print(f"estimate {name}: {estimates[name] >> 20} MiB, measured {measured >> 20} MiB ({ratio:.2f}x)")
    bad |= not (1 <= ratio <= 1.5)
sys.exit(1 if bad else 0)
PY
# A model of 20,000 small tensors: the estimate, an upper bound, still bounds what ran,
# its per-parameter part included.
python3 - "$WORK/many.mlir" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("init.seed 0\n")
    for i in range(20000):
        f.write(f'init.param @experts.{i}.w : tensor<64x16xbf16> {{\n'
                f'  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x16xbf16>\n'
                f'  init.yield %0 : tensor<64x16xbf16>\n}}\n')
PY
"$INITC" compile "$WORK/many.mlir" -o "$WORK/many" >/dev/null
"$INITC" inspect "$WORK/many.mlir" --json >"$WORK/many.json"
/usr/bin/time -f "%M" -o "$WORK/rss-many-write" "$WORK/many/init" --threads 2 --quiet --layout ranks --out "$WORK/many-ckpt" ||
  fail "the many-tensor run failed"
/usr/bin/time -f "%M" -o "$WORK/rss-many-fill" "$FILL" "$WORK/many" 0 2 >/dev/null ||
  fail "the many-tensor C API fill failed"
python3 - "$WORK" <<'PY' || fail "initc inspect's memory estimate is below what a model of many tensors used"
import json, sys
work = sys.argv[1]
e = json.load(open(f"{work}/many.json"))["estimate"]
estimates = {
    "write": e["writing_overhead_bytes"] + 3 * e["writing_memory_bytes_per_thread"] + e["writing_staging_bytes"],
    "fill": e["largest_rank_memory_bytes"],
}
bad = False
for tag, estimate in estimates.items():
    measured = int(open(f"{work}/rss-many-{tag}").read().split()[-1]) * 1024
    print(f"20,000 tensors, {tag}: estimate {estimate >> 20} MiB, measured {measured >> 20} MiB")
    bad |= estimate < measured
sys.exit(1 if bad else 0)
PY
echo "PASS $TEST_NAME"
