#!/usr/bin/env bash
# prog/init --layout dcp: one safetensors file per rank with the rank's writeBoxes and the
# DCP_SHARDING_INFO PyTorch's HuggingFaceStorageReader reads. Reassembled from the files alone
# (dcp_assemble.py, as that reader places the boxes), every tensor is bitwise the ranks layout's;
# no element is stored twice; a killed job rerun finishes bitwise equal; a complete rerun is
# skipped; `--rank K` repairs what verify names; another layout's directory is refused; a full
# disk says where and how much.
source "$(dirname "$0")/../common.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"
ASSEMBLE=("$PYTHON" "$ROOT/tests/e2e/layouts/dcp_assemble.py")

# run NP PROG ARGS...: prog/init under mpirun, or alone for one rank.
run() {
  local np=$1 prog=$2
  shift 2
  if ((np == 1)); then
    "$prog/init" "$@"
  else
    "${MPIRUN[@]}" -np "$np" "$prog/init" "$@"
  fi
}

# exactly_files DIR W: DIR holds shard-0000K-of-0000W.safetensors for every K, and nothing else.
exactly_files() {
  local expected="" k
  for ((k = 0; k < $2; k++)); do
    expected+=$(printf 'shard-%05d-of-%05d.safetensors' "$k" "$2")$'\n'
  done
  [[ $(ls -A "$1") == "${expected%$'\n'}" ]] || fail "$1 holds: $(ls -A "$1" | tr '\n' ' ')"
}

same_files() { # DIR_A DIR_B: the same files, byte for byte
  [[ $(ls -A "$1") == $(ls -A "$2") ]] || fail "$1 and $2 hold other files"
  local f
  for f in "$1"/*; do cmp -s "$f" "$2/${f##*/}" || fail "$f differs from $2/${f##*/}"; done
}

cases=0
#===------------------------------------------------------------------------===#
# The dcp files of llama_uneven hold the ranks layout's values, each element once
#===------------------------------------------------------------------------===#
for dtype in bf16 f32; do
  "$INITC" import hf "$CONFIG" --dtype "$dtype" --seed 7 -o "m-$dtype.mlir" || fail "import $dtype"
  for mesh in dp=2,tp=2 tp=2 1; do
    tag="$dtype-${mesh//[=,]/}"
    np=$(mesh_size "${mesh/#1/x=1}")
    if [[ $mesh == 1 ]]; then
      "$INITC" compile "m-$dtype.mlir" -o "p-$tag" >/dev/null || fail "compile $tag"
    else
      "$INITC" compile "m-$dtype.mlir" --mesh "$mesh" --shard tp -o "p-$tag" >/dev/null ||
        fail "compile $tag"
    fi
    run "$np" "p-$tag" --out "ranks-$tag" --layout ranks --quiet || fail "ranks layout $tag"
    "$INITC" assemble "ranks-$tag" -o "ref-$tag.safetensors" >/dev/null || fail "assemble $tag"
    run "$np" "p-$tag" --out "dcp-$tag" --layout dcp --quiet || fail "dcp layout $tag"
    exactly_files "dcp-$tag" "$np"
    "${ASSEMBLE[@]}" "dcp-$tag" "ref-$tag.safetensors" >/dev/null || fail "dcp $tag differs"
    "$INITC" verify "dcp-$tag" >/dev/null 2>"verify.err" || fail "verify $tag: $(cat verify.err)"
    # initc assemble joins the files as the reader above does: the same bytes as from the ranks.
    "$INITC" assemble "dcp-$tag" -o "joined-$tag.safetensors" >/dev/null || fail "assemble dcp $tag"
    cmp -s "joined-$tag.safetensors" "ref-$tag.safetensors" || fail "assembled dcp $tag differs"
    cases=$((cases + 1))
  done
done
echo "ok llama_uneven bf16/f32 on dp=2,tp=2, tp=2 and 1 rank"

#===------------------------------------------------------------------------===#
# Node-local disks: each rank alone (--rank K) into a directory of its own; the files gathered
# into one directory are the checkpoint
#===------------------------------------------------------------------------===#
mkdir gathered
for k in 0 1 2 3; do
  p-bf16-dp2tp2/init --rank "$k" --out "host$k" --layout dcp --quiet || fail "--rank $k alone"
  [[ $(ls -A "host$k") == "$(printf 'shard-%05d-of-00004.safetensors' "$k")" ]] ||
    fail "host$k holds: $(ls -A "host$k")"
  cp "host$k"/* gathered/
done
same_files dcp-bf16-dp2tp2 gathered
"$INITC" verify gathered >/dev/null || fail "verify the gathered files"
cases=$((cases + 1))
echo "ok files written apart and gathered"

#===------------------------------------------------------------------------===#
# Replicas split a big tensor between their files
#===------------------------------------------------------------------------===#
cat >big.mlir <<'EOF'
init.seed 11
init.param @big : tensor<4096x4096xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<4096x4096xf32>
  init.yield %0 : tensor<4096x4096xf32>
}
init.param @small : tensor<16xf32> {
  %0 = init.fill 1.0 : tensor<16xf32>
  init.yield %0 : tensor<16xf32>
}
EOF
"$INITC" compile big.mlir --mesh dp=4 --shard replicated -o p-big >/dev/null || fail "compile big"
run 4 p-big --out ranks-big --layout ranks --quiet || fail "ranks layout big"
"$INITC" assemble ranks-big -o ref-big.safetensors >/dev/null || fail "assemble big"
run 4 p-big --out dcp-big --layout dcp --quiet || fail "dcp layout big"
exactly_files dcp-big 4
"${ASSEMBLE[@]}" dcp-big ref-big.safetensors --expect-split big >/dev/null ||
  fail "the replicated 64 MiB tensor"
# Each replica writes a quarter: the files are about a quarter of the tensor each.
for f in dcp-big/*; do
  size=$(stat -c %s "$f")
  ((size > 15 * 1048576 && size < 17 * 1048576)) || fail "$f has $size bytes, not a quarter of 64 MiB"
done
"$INITC" verify dcp-big >/dev/null || fail "verify big"
cases=$((cases + 1))
echo "ok replicas split a 64 MiB tensor"

#===------------------------------------------------------------------------===#
# Killed, then rerun: bitwise the uninterrupted files; a complete rerun is skipped
#===------------------------------------------------------------------------===#
killed=""
for attempt in 1 2 3 4 5; do
  rm -rf kill && mkdir kill
  "${MPIRUN[@]}" -np 4 p-big/init --out kill --layout dcp --quiet >kill.log 2>&1 &
  job=$!
  # The temporary name carries the writer's pid: kill rank 1 as soon as it starts writing.
  for _ in $(seq 1 4000); do
    temp=$(ls -A kill | grep '^\.shard-00001-of-00004\.safetensors\.tmp-' | head -1 || true)
    if [[ -n $temp ]]; then
      kill -9 "${temp##*.tmp-}" 2>/dev/null && killed=$temp
      break
    fi
    kill -0 "$job" 2>/dev/null || break
    sleep 0.005
  done
  wait "$job" && rc=0 || rc=$?
  [[ -n $killed ]] && break
done
[[ -n $killed ]] || fail "could not catch rank 1 while it was writing"
((rc != 0)) || fail "mpirun succeeded although rank 1 was killed"
[[ ! -e kill/shard-00001-of-00004.safetensors ]] || fail "the killed rank's file has its final name"
"${MPIRUN[@]}" -np 4 p-big/init --out kill --layout dcp >rerun.log 2>&1 || fail "rerun after kill: $(cat rerun.log)"
grep -qE "^  ranks +4, 4 already" rerun.log && fail "the rerun skipped the killed rank"
same_files dcp-big kill # and the killed rank's temporary is gone
"${MPIRUN[@]}" -np 4 p-big/init --out kill --layout dcp >again.log 2>&1 || fail "complete rerun"
grep -qE "^  ranks +4, 4 already complete" again.log || fail "a complete rerun computed again: $(cat again.log)"
same_files dcp-big kill
cases=$((cases + 1))
echo "ok killed rank rerun, complete rerun skipped"

#===------------------------------------------------------------------------===#
# verify names a truncated file's tensor and the repair; --rank K repairs it
#===------------------------------------------------------------------------===#
cp -r dcp-bf16-dp2tp2 repair
# Every slice of llama_uneven is under 1 MiB: its first replica (dp=0) writes it whole, and the
# ranks of dp=1 write header-only files.
"$PYTHON" - repair/shard-00003-of-00004.safetensors <<'PY' || fail "rank 3's file is not header-only"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n, = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
assert list(header) == ["__metadata__"] and header["__metadata__"]["DCP_SHARDING_INFO"] == "{}"
PY
f=repair/shard-00001-of-00004.safetensors
truncate -s $(($(stat -c %s "$f") - 100)) "$f"
fails_cleanly "verify a truncated file" \
  "on rank 1 \(shard-00001-of-00004.safetensors\): truncated.*prog/init --rank 1 --out repair --layout dcp" \
  "$INITC" verify repair
# Named with the tensor and its slice ("NAME [shape] at [offset] on rank 1").
grep -qE "^[^ ]+: [A-Za-z0-9_.]+ \[[0-9, ]+\] at \[[0-9, ]+\] on rank 1" err.txt ||
  fail "the truncated tensor is not named: $(cat err.txt)"
p-bf16-dp2tp2/init --rank 1 --out repair --layout dcp >repair.log 2>&1 || fail "--rank 1 repair: $(cat repair.log)"
grep -q "computing it again" repair.log || fail "the repair did not say it rewrote the damaged file"
same_files dcp-bf16-dp2tp2 repair
"$INITC" verify repair >/dev/null || fail "verify after the repair"
rm repair/shard-00003-of-00004.safetensors
fails_cleanly "verify a missing file" \
  "rank 3 \(shard-00003-of-00004.safetensors\): missing: rerun .prog/init --rank 3 --out repair --layout dcp" \
  "$INITC" verify repair
cases=$((cases + 1))
echo "ok verify names the damage, --rank repairs it"

#===------------------------------------------------------------------------===#
# Another layout, another program, in DIR: refused unless --overwrite
#===------------------------------------------------------------------------===#
cp -r ranks-bf16-tp2 other
fails_cleanly "the ranks layout in DIR" \
  "other holds another checkpoint \(index.json is a file of the ranks layout.*pass --overwrite" \
  "${MPIRUN[@]}" -np 2 p-bf16-tp2/init --out other --layout dcp
[[ -z $(ls other | grep '^shard-') ]] || fail "a refused run wrote a file"
run 2 p-bf16-tp2 --out other --layout dcp --overwrite --quiet || fail "--overwrite"
exactly_files other 2
mkdir hf && echo '{}' >hf/model.safetensors.index.json
fails_cleanly "the hf layout in DIR" "model.safetensors.index.json is a file of the hf layout" \
  p-bf16-1/init --out hf --layout dcp
"$INITC" import hf "$CONFIG" --dtype bf16 --seed 8 -o m-seed8.mlir || fail "import seed 8"
"$INITC" compile m-seed8.mlir --mesh tp=2 --shard tp -o p-seed8 >/dev/null || fail "compile seed 8"
fails_cleanly "another program's file" "another program \(shard-00000-of-00002.safetensors has program id" \
  "${MPIRUN[@]}" -np 2 p-seed8/init --out other --layout dcp
fails_cleanly "another world size" "shard-00000-of-00002.safetensors is from a run with 2 ranks" \
  "${MPIRUN[@]}" -np 4 p-bf16-dp2tp2/init --out other --layout dcp
same_files dcp-bf16-tp2 other
cases=$((cases + 1))
echo "ok other checkpoints refused"

#===------------------------------------------------------------------------===#
# A full disk: the directory and the bytes needed, nothing left behind
#===------------------------------------------------------------------------===#
mkdir full
if mount -t tmpfs -o size=2M tmpfs full 2>/dev/null; then
  fails_cleanly "a full disk" "no space left on full/ckpt for full/ckpt/shard-0000[0-3]-of-00004.safetensors: rank [0-3]'s file needs 16777[0-9]{3} bytes" \
    "${MPIRUN[@]}" -np 4 p-big/init --out full/ckpt --layout dcp
  leftovers=$(ls -A full/ckpt)
  umount full
  [[ -z $leftovers ]] || fail "a full disk left: $leftovers"
  cases=$((cases + 1))
  echo "ok full disk"
else
  echo "skipped full disk: cannot mount a tmpfs here"
fi

echo "PASS $TEST_NAME ($cases cases)"
