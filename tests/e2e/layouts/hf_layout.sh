#!/usr/bin/env bash
# The hf layout (prog/init's default): a 4-rank dp=2,tp=2 job of llama_uneven (bf16 and f32)
# writes every tensor bitwise equal to a 1-rank job and to `initc assemble` of the ranks layout;
# replicas split their writing (dp=4); --max-shard-size gives several files; a job killed with
# -9 resumes to the same bytes; a complete one reruns as skipped; `--rank K` repairs a corrupted
# byte that verify names; another layout in --out, a full disk and a directory some ranks do not
# see are refused with nothing under a final name.
# Needs: BUILD_DIR (default ./build) with initc, init and initc-checkpoint; mpirun.
source "$(dirname "$0")/../common.bash"
DIGESTS="$ROOT/tests/e2e/layouts/tensor_digests.py"
CONFIGS="$ROOT/tests/e2e/configs"
RUNNING=()

# program NAME CONFIG DTYPE MESH [SHARD]: compiles $WORK/NAME.
program() {
  "$INITC" import hf "$2" --dtype "$3" --seed 7 -o "$WORK/$1.mlir" || fail "import $2 failed"
  "$INITC" compile "$WORK/$1.mlir" --mesh "$4" ${5:+--shard "$5"} -o "$WORK/$1" ||
    fail "compile $1 failed"
}
# job PROG NP ARGS...: the whole job (mpirun for more than one rank).
job() {
  local prog=$1 np=$2
  shift 2
  if ((np == 1)); then
    "$WORK/$prog/init" --threads 2 "$@"
  else
    "${MPIRUN[@]}" -np "$np" "$WORK/$prog/init" --threads 1 "$@"
  fi
}
digests() { $PYTHON "$DIGESTS" "$@"; }
# Every tensor of the hf checkpoint DIR equals those of FILE_OR_DIR.
same_tensors() {
  diff <(digests "$1") <(digests "$2") >"$WORK/diff.txt" ||
    fail "$3: tensors differ: $(head -5 "$WORK/diff.txt")"
}
verifies() {
  "$INITC" verify "$1" >"$WORK/verify.txt" 2>&1 || fail "verify $1 failed: $(head -c 800 "$WORK/verify.txt")"
}
# Only the checkpoint: no temporaries, no other safetensors file, no job token; in .initc only
# the ranks' sums files.
only_checkpoint() {
  local extra
  extra=$(cd "$1" && ls -A | grep -vE '^(model-[0-9]{5}-of-[0-9]{5}\.safetensors|model\.safetensors\.index\.json|config\.json|initc-checkpoint\.json|\.initc)$' || true)
  extra+=$(cd "$1/.initc" && ls -A | grep -vE '^rank-[0-9]{5}\.sums$' || true)
  [[ -z $extra ]] || fail "$1 holds more than the checkpoint: $extra"
}

for dtype in bf16 f32; do
  program "one-$dtype" "$CONFIGS/llama_uneven.json" "$dtype" dp=1 replicated
  program "four-$dtype" "$CONFIGS/llama_uneven.json" "$dtype" dp=2,tp=2 tp
  job "one-$dtype" 1 --out "$WORK/one-$dtype.hf" --quiet || fail "1-rank hf job failed ($dtype)"
  job "four-$dtype" 4 --out "$WORK/four-$dtype.hf" --quiet || fail "4-rank hf job failed ($dtype)"
  job "four-$dtype" 4 --out "$WORK/four-$dtype.ranks" --layout ranks --quiet ||
    fail "4-rank ranks job failed ($dtype)"
  "$INITC" assemble "$WORK/four-$dtype.ranks" -o "$WORK/four-$dtype.assembled.safetensors" ||
    fail "assemble failed ($dtype)"
  for dir in "$WORK/one-$dtype.hf" "$WORK/four-$dtype.hf"; do
    [[ -f $dir/model-00001-of-00001.safetensors && -f $dir/model.safetensors.index.json &&
      -f $dir/initc-checkpoint.json ]] || fail "$dir: files missing: $(ls "$dir")"
    only_checkpoint "$dir"
    verifies "$dir"
  done
  same_tensors "$WORK/four-$dtype.hf" "$WORK/one-$dtype.hf" "4 ranks vs 1 rank ($dtype)"
  same_tensors "$WORK/four-$dtype.hf" "$WORK/four-$dtype.assembled.safetensors" \
    "hf vs assembled ranks ($dtype)"
  # The data file is the same byte for byte: the header is the program's, not the mesh's.
  cmp "$WORK/four-$dtype.hf/model-00001-of-00001.safetensors" \
    "$WORK/one-$dtype.hf/model-00001-of-00001.safetensors" || fail "data files differ ($dtype)"
done
ONE="$WORK/one-bf16.hf"
$PYTHON - "$WORK/four-bf16.hf" <<'EOF' || fail "the 4-rank record is not as specified"
import json, struct, sys
d = sys.argv[1]
rec = json.load(open(f"{d}/initc-checkpoint.json"))
index = json.load(open(f"{d}/model.safetensors.index.json"))
assert rec["format"] == "initc-hf" and rec["version"] == 2, rec["format"]
assert rec["mesh"] == {"axes": ["dp", "tp"], "shape": [2, 2]}, rec["mesh"]
assert rec["write_boxes"] == {"rule": "replicas-split-rows", "min_box_bytes": 1 << 20}
assert rec["sums"] == {"dir": ".initc", "ranks": 4}, rec["sums"]
assert [f["name"] for f in rec["files"]] == ["model-00001-of-00001.safetensors"]
assert set(index["weight_map"]) >= set(rec["tensors"])
# tp splits the projections: some tensor lists a split axis, every axis index is a mesh axis.
assert any(t["split_axes"] for t in rec["tensors"].values())
assert all(a in (0, 1) for t in rec["tensors"].values() for axes in t["split_axes"] for a in axes)
# Each rank's sums file: header, one XXH3-64 per box, its own checksum (verify checks it). A
# rank may write nothing: dp replicas of a small tensor leave it to the first.
total = 0
for rank in range(4):
    raw = open(f"{d}/.initc/rank-{rank:05d}.sums", "rb").read()
    assert raw[:8] == b"INITCSUM", raw[:8]
    version, id_len, r, world, boxes = struct.unpack_from("<IIQQQ", raw, 8)
    assert (version, r, world) == (1, rank, 4), (version, r, world)
    assert raw[40:40 + id_len].decode() == rec["program_id"]
    header = (40 + id_len + 7) // 8 * 8
    assert len(raw) == header + 8 * boxes + 8, (len(raw), boxes)
    total += boxes
assert total >= len(rec["tensors"]), total
EOF

# Replicas split their writing: dp=4 holds four copies of every tensor, and those of 8 MiB or
# more are written a quarter by each rank.
$PYTHON - "$CONFIGS/llama_uneven.json" "$WORK/big.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(vocab_size=16384, hidden_size=256, intermediate_size=704)
json.dump(c, open(sys.argv[2], "w"))
EOF
program big-one "$WORK/big.json" bf16 dp=1 replicated
program big-four "$WORK/big.json" bf16 dp=4 replicated
job big-one 1 --out "$WORK/big-one.hf" --quiet || fail "big 1-rank job failed"
job big-four 4 --out "$WORK/big-four.hf" --quiet || fail "big dp=4 job failed"
verifies "$WORK/big-four.hf"
same_tensors "$WORK/big-four.hf" "$WORK/big-one.hf" "dp=4 vs 1 rank"
$PYTHON - "$WORK/big-four.hf" <<'EOF' || fail "dp=4 did not split the replicated embedding"
import json, sys
import struct
# Every tensor is whole on every rank; only those of 4 MiB or more give rank 3 a part.
boxes = [struct.unpack_from("<Q", open(f"{sys.argv[1]}/.initc/rank-{r:05d}.sums", "rb").read(), 32)[0]
         for r in range(4)]
assert boxes[0] > boxes[3] > 0, boxes
EOF

# --max-shard-size: several files, the same tensors.
job four-bf16 4 --out "$WORK/small-files.hf" --max-shard-size 100KB --quiet ||
  fail "--max-shard-size job failed"
nfiles=$(ls "$WORK/small-files.hf" | grep -c '^model-.*\.safetensors$')
((nfiles > 1)) || fail "--max-shard-size 100KB wrote $nfiles file(s)"
only_checkpoint "$WORK/small-files.hf"
verifies "$WORK/small-files.hf"
same_tensors "$WORK/small-files.hf" "$ONE" "--max-shard-size files vs 1 rank"
fails_cleanly "bad --max-shard-size" "--max-shard-size: must be a size" \
  "$WORK/four-bf16/init" --out "$WORK/x" --max-shard-size 5XB

# A complete checkpoint rerun: every rank verifies its boxes and is skipped.
job four-bf16 4 --out "$WORK/four-bf16.hf" 2>"$WORK/rerun.txt" || fail "rerun failed"
grep -q "4 already complete" "$WORK/rerun.txt" || fail "rerun did not skip: $(cat "$WORK/rerun.txt")"
same_tensors "$WORK/four-bf16.hf" "$ONE" "rerun"

# kill -9 in the middle, then the same command: the same bytes, the finished ranks skipped. A
# model of about 200 MB, so that the job is still computing when the kill comes.
$PYTHON - "$WORK/big.json" "$WORK/huge.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(vocab_size=32768, hidden_size=1024, intermediate_size=2816)
json.dump(c, open(sys.argv[2], "w"))
EOF
program huge-one "$WORK/huge.json" bf16 dp=1 replicated
program huge-four "$WORK/huge.json" bf16 dp=2,tp=2 tp
job huge-one 1 --out "$WORK/huge-one.hf" --quiet || fail "huge 1-rank job failed"
job huge-four 4 --out "$WORK/killed.hf" --quiet &
RUNNING=($!)
for _ in $(seq 200); do
  [[ -e $WORK/killed.hf/.initc-hf-partial/state.json ]] && break
  sleep 0.02
done
for pid in $(pgrep -f "$WORK/huge-four/init" || true); do kill -9 "$pid" 2>/dev/null || true; done
wait "${RUNNING[0]}" 2>/dev/null || true
[[ ! -e $WORK/killed.hf/initc-checkpoint.json ]] || echo "$TEST_NAME: note: the job ended before the kill"
# Until rank 0 renames the files (every rank done), nothing is under a final name.
[[ -e $WORK/killed.hf/.initc-hf-partial || -e $WORK/killed.hf/initc-checkpoint.json ]] ||
  fail "a killed job left neither its temporaries nor a checkpoint: $(ls -A "$WORK/killed.hf")"
job huge-four 4 --out "$WORK/killed.hf" 2>"$WORK/resume.txt" || fail "resume failed: $(cat "$WORK/resume.txt")"
verifies "$WORK/killed.hf"
only_checkpoint "$WORK/killed.hf"
cmp "$WORK/killed.hf/model-00001-of-00001.safetensors" "$WORK/huge-one.hf/model-00001-of-00001.safetensors" ||
  fail "the resumed checkpoint differs from an uninterrupted one"
grep -E "^  ranks" "$WORK/resume.txt" || fail "no summary after the resume"
rm -rf "$WORK/killed.hf" "$WORK/huge-one.hf"

# An unfinished checkpoint where some ranks are done (here rank 2, alone with --rank): the job
# skips them, verified, and computes the others.
"$WORK/four-bf16/init" --rank 2 --out "$WORK/part.hf" --quiet || fail "--rank 2 into a new --out"
[[ -e $WORK/part.hf/.initc/rank-00002.sums && ! -e $WORK/part.hf/.initc/rank-00001.sums &&
  ! -e $WORK/part.hf/initc-checkpoint.json ]] ||
  fail "--rank 2 alone did not leave an unfinished checkpoint: $(ls -A "$WORK/part.hf")"
job four-bf16 4 --out "$WORK/part.hf" 2>"$WORK/part.txt" || fail "finishing the job failed"
grep -q "1 already complete (2)" "$WORK/part.txt" || fail "rank 2 was not skipped: $(cat "$WORK/part.txt")"
verifies "$WORK/part.hf"
only_checkpoint "$WORK/part.hf"
same_tensors "$WORK/part.hf" "$ONE" "finished after --rank 2"

# A corrupted byte: verify names the tensor, the slice and the rank that repairs it; --rank K
# rewrites it in place.
CK="$WORK/four-bf16.hf"
victim=model.layers.1.mlp.down_proj.weight
offset=$($PYTHON - "$CK" "$victim" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1] + "/initc-checkpoint.json"))["tensors"][sys.argv[2]]
n = 1
for s in t["shape"]:
    n *= s
print(t["offset"] + n * (2 if t["dtype"] == "BF16" else 4) - 1) # its last byte
EOF
)
printf '\x5a' | dd of="$CK/model-00001-of-00001.safetensors" bs=1 seek="$offset" conv=notrunc status=none
"$INITC" verify "$CK" >"$WORK/verify.txt" 2>&1 && fail "verify passed a changed byte"
rank=$(grep -oE "$victim \(model-00001-of-00001\.safetensors\) slice offset \[[0-9,]+\] shape \[[0-9,]+\] written by rank [0-9]+" "$WORK/verify.txt" | grep -oE '[0-9]+$') ||
  fail "verify did not name the tensor, slice and rank: $(head -c 800 "$WORK/verify.txt")"
grep -q -- "--rank $rank --out" "$WORK/verify.txt" || fail "verify gave no repair: $(head -c 800 "$WORK/verify.txt")"
[[ $(grep -c "is not the recorded" "$WORK/verify.txt") == 1 ]] || fail "verify named more than the changed slice: $(cat "$WORK/verify.txt")"
"$WORK/four-bf16/init" --rank "$rank" --out "$CK" 2>"$WORK/repair.txt" ||
  fail "--rank $rank repair failed: $(cat "$WORK/repair.txt")"
verifies "$CK"
same_tensors "$CK" "$ONE" "after --rank repair"
only_checkpoint "$CK"

# A truncated data file: verify says so, naming the file.
cp -r "$CK" "$WORK/truncated.hf"
truncate -s -100 "$WORK/truncated.hf/model-00001-of-00001.safetensors"
fails_cleanly "verify a truncated file" "model-00001-of-00001.safetensors is [0-9]+ bytes, not the [0-9]+ recorded \(truncated\)" \
  "$INITC" verify "$WORK/truncated.hf"

# A changed byte of a sums file: verify names the file and the rank that repairs it.
cp -r "$CK" "$WORK/sums.hf"
sums_size=$(stat -c %s "$WORK/sums.hf/.initc/rank-00001.sums")
# A byte of its last box's checksum.
printf '\x01' | dd of="$WORK/sums.hf/.initc/rank-00001.sums" bs=1 seek=$((sums_size - 9)) conv=notrunc status=none
fails_cleanly "verify a changed sums file" "rank 1's checksums: .*rank-00001.sums does not match its own checksum.*--rank 1" \
  "$INITC" verify "$WORK/sums.hf"
rm -rf "$WORK/sums.hf" "$WORK/truncated.hf"

# Another layout in --out, another program's checkpoint: refused, nothing renamed.
fails_cleanly "ranks layout in --out" "another layout .*--overwrite" \
  job four-bf16 4 --out "$WORK/four-bf16.ranks"
[[ -z $(ls "$WORK/four-bf16.ranks" | grep '^model-' || true) ]] || fail "hf files written over a ranks checkpoint"
fails_cleanly "another program's checkpoint" "another program's hf checkpoint" \
  job four-f32 4 --out "$CK"
job four-f32 4 --out "$CK" --overwrite --quiet || fail "--overwrite failed"
same_tensors "$CK" "$WORK/one-f32.hf" "--overwrite"

# A full disk: refused before any value is computed, nothing under a final name.
if mkdir -p "$WORK/full" && mount -t tmpfs -o size=2M tmpfs "$WORK/full" 2>/dev/null; then
  rc=0
  fails_cleanly "full disk" "no space left on --out .*needs [0-9]+ bytes" \
    job big-four 4 --out "$WORK/full/ckpt" || rc=$?
  leftover=$(ls -A "$WORK/full/ckpt" 2>/dev/null | grep -E 'safetensors|initc-checkpoint' || true)
  umount "$WORK/full"
  ((rc == 0)) || exit "$rc"
  [[ -z $leftover ]] || fail "a full disk left $leftover"
else
  echo "$TEST_NAME: skipping the full-disk case (cannot mount a tmpfs here)"
fi

# A directory rank 1 sees differently (a tmpfs over it in its own mount namespace): refused.
cat >"$WORK/unshared.sh" <<EOF
#!/usr/bin/env bash
if [[ \$OMPI_COMM_WORLD_RANK == 1 ]]; then
  exec unshare -m bash -c 'mount -t tmpfs tmpfs "$WORK/shared" && exec "\$0" "\$@"' "\$@"
fi
exec "\$@"
EOF
chmod +x "$WORK/unshared.sh"
mkdir -p "$WORK/shared"
if unshare -m true 2>/dev/null; then
  fails_cleanly "unshared --out" "is not shared by every rank \(rank 1 does not see.*--layout dcp" \
    "${MPIRUN[@]}" -np 4 "$WORK/unshared.sh" "$WORK/four-bf16/init" --threads 1 --out "$WORK/shared"
  [[ -z $(ls -A "$WORK/shared") ]] || fail "an unshared --out was written: $(ls -A "$WORK/shared")"
else
  echo "$TEST_NAME: skipping the unshared-directory case (no unshare -m here)"
fi

echo "PASS $TEST_NAME"
