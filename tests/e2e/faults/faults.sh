#!/usr/bin/env bash
# Faults lose nothing: a rank killed mid-write, a full disk, an unwritable output directory, a
# missing MPI launcher, --rank out of range, a damaged program directory, a checkpoint of another
# program, a flipped byte, a truncated or missing shard, a damaged index. Every case: non-zero
# exit without a signal, one message saying what to do, and no file under a final name that is
# not complete and verified; where the fault is repaired, a rerun completes the checkpoint with
# exactly the bytes of an uninterrupted run.
source "$(dirname "$0")/../common.bash"
cases=0
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# expect_error NAME PATTERN CMD...: CMD fails cleanly and its stderr holds PATTERN (grep -E) in
# exactly one message of initc or prog/init (mpirun adds its own banner around it).
expect_error() {
  fails_cleanly "$@"
  local name=$1
  local messages
  # (initc verify lists each problem, then counts them: the count is not another message.)
  messages=$(grep -E "^(init|initc)(: | \(rank)" "$WORK/err.txt" | grep -cvE "[0-9]+ problems? found$" || true)
  ((messages <= 1)) || fail "$name: $messages messages, expected one: $(head -c 800 "$WORK/err.txt")"
  cases=$((cases + 1))
}

# Every file under its final name in a checkpoint directory is complete: `initc verify` passes
# for the shards there (missing ones aside), and no temporary file has a final name.
only_complete_files() {
  local dir=$1 f
  for f in "$dir"/rank-*.safetensors; do
    [[ -e $f ]] || continue
    $PYTHON "$ROOT/tests/e2e/safetensors_check.py" "$f" >/dev/null || fail "$f is not complete"
  done
  [[ ! -e $dir/index.json ]] || "$INITC" verify "$dir" >/dev/null || fail "$dir/index.json but verify fails"
}

same_checkpoint() { # same_checkpoint REF DIR: the same files, byte for byte
  local a b
  a=$(cd "$1" && ls -A | sort | tr '\n' ' ')
  b=$(cd "$2" && ls -A | sort | tr '\n' ' ')
  [[ $a == "$b" ]] || fail "$2 holds [$b], expected [$a]"
  for f in "$1"/*; do cmp "$f" "$2/$(basename "$f")" || fail "$2/$(basename "$f") differs"; done
}

"$INITC" import hf "$ROOT/tests/e2e/configs/gpt2_tiny.json" -o "$WORK/gpt2.mlir"
"$INITC" compile "$WORK/gpt2.mlir" --mesh dp=2,tp=2 --shard fsdp+tp -o "$WORK/prog" >/dev/null
"${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/ref" --quiet || fail "reference run"
"$INITC" verify "$WORK/ref" >/dev/null || fail "reference verify"

#===------------------------------------------------------------------------===#
# A rank killed in the middle of writing its file
#===------------------------------------------------------------------------===#
cat >"$WORK/big.mlir" <<'EOF'
init.seed 11
init.param @big.a : tensor<8192x8192xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<8192x8192xf32>
  init.yield %0 : tensor<8192x8192xf32>
}
init.param @big.b : tensor<4096x8192xbf16> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<4096x8192xbf16>
  init.yield %0 : tensor<4096x8192xbf16>
}
init.param @small : tensor<16xf32> {
  %0 = init.fill 1.0 : tensor<16xf32>
  init.yield %0 : tensor<16xf32>
}
EOF
"$INITC" compile "$WORK/big.mlir" --mesh dp=2 --shard fsdp -o "$WORK/big" >/dev/null
"${MPIRUN[@]}" -np 2 "$WORK/big/init" --layout ranks --out "$WORK/big-ref" --quiet || fail "uninterrupted big run"
killed=""
for attempt in 1 2 3; do
  rm -rf "$WORK/big-ckpt" && mkdir -p "$WORK/big-ckpt"
  "${MPIRUN[@]}" -np 2 "$WORK/big/init" --layout ranks --out "$WORK/big-ckpt" --quiet >"$WORK/kill.log" 2>&1 &
  job=$!
  # The temporary name carries the writer's pid: kill rank 1 as soon as it starts writing.
  for _ in $(seq 1 4000); do
    temp=$(ls -A "$WORK/big-ckpt" | grep '^\.rank-00001-of-00002\.safetensors\.tmp-' | head -1 || true)
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
[[ ! -e $WORK/big-ckpt/rank-00001-of-00002.safetensors ]] || fail "the killed rank's file has its final name"
[[ ! -e $WORK/big-ckpt/index.json ]] || fail "index.json written although a rank was killed"
only_complete_files "$WORK/big-ckpt"
expect_error "verify an interrupted checkpoint" \
  "index.json: no such file: not a finished checkpoint .*: rerun the whole job" "$INITC" verify "$WORK/big-ckpt"
"${MPIRUN[@]}" -np 2 "$WORK/big/init" --layout ranks --out "$WORK/big-ckpt" >"$WORK/rerun.log" 2>&1 || fail "rerun after kill"
# Rank 0 may or may not have finished before mpirun stopped it; when it had, it is skipped.
if grep -qE "^  ranks +2, (1 already complete \(1\)|2 already)" "$WORK/rerun.log"; then cat "$WORK/rerun.log"; fail "rerun skipped the killed rank"; fi
same_checkpoint "$WORK/big-ref" "$WORK/big-ckpt" # the killed rank's temporary file is gone too
rm -rf "$WORK/big-ckpt" "$WORK/big-ref"
cases=$((cases + 1))
echo "ok killed rank"

#===------------------------------------------------------------------------===#
# A full disk
#===------------------------------------------------------------------------===#
mkdir -p "$WORK/full"
if mount -t tmpfs -o size=500k tmpfs "$WORK/full" 2>/dev/null; then
  MOUNTS+=("$WORK/full")
  expect_error "init on a full disk" \
    "init: error \(rank [0-9]\): no space left on .*full/ckpt while writing .*rank-0000[0-9]-of-00004.safetensors: free space" \
    "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/full/ckpt"
  [[ -z $(ls -A "$WORK/full/ckpt" | grep tmp) ]] || fail "temporary files left on the full disk"
  [[ ! -e $WORK/full/ckpt/index.json ]] || fail "index.json written on a full disk"
  only_complete_files "$WORK/full/ckpt"
  expect_error "init on a full disk, direct I/O" \
    "init: error \(rank [0-9]\): no space left on .*full/ckpt while writing .*rank-0000[0-9]-of-00004.safetensors: free space" \
    env INITRT_DIRECT_IO=1 "${MPIRUN[@]}" -x INITRT_DIRECT_IO -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/full/ckpt"
  [[ -z $(ls -A "$WORK/full/ckpt" | grep tmp) ]] || fail "temporary files left on the full disk (direct I/O)"
  only_complete_files "$WORK/full/ckpt"
  expect_error "assemble to a full disk" "no space left on .* while writing .*full/model.safetensors" \
    "$INITC" assemble "$WORK/ref" -o "$WORK/full/model.safetensors"
  [[ ! -e $WORK/full/model.safetensors ]] || fail "partial model.safetensors left"
  expect_error "compile to a full disk" "No space left on device" \
    "$INITC" compile "$WORK/gpt2.mlir" --mesh dp=2 --shard fsdp -o "$WORK/full/prog"
  [[ ! -e $WORK/full/prog ]] || fail "partial program directory left"
  # Fill what is left, so that even a small IR file does not fit.
  head -c 2M /dev/zero >"$WORK/full/filler" 2>/dev/null || true
  expect_error "import to a full disk" "initc: error: no space left on .*full while writing .*full/model.mlir: free space or write elsewhere" \
    "$INITC" import hf "$ROOT/tests/e2e/configs/gpt2_tiny.json" -o "$WORK/full/model.mlir"
  [[ -z $(ls -A "$WORK/full" | grep -v -e '^ckpt$' -e '^filler$') ]] || fail "files left: $(ls -A "$WORK/full")"
  rm -f "$WORK/full/filler"
  # Room again: the rerun completes the checkpoint, bitwise as the uninterrupted run.
  mount -o remount,size=4m "$WORK/full"
  "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/full/ckpt" --quiet || fail "rerun after freeing space"
  same_checkpoint "$WORK/ref" "$WORK/full/ckpt"
  umount "$WORK/full"
  echo "ok disk full (tmpfs)"
else
  echo "cannot mount a tmpfs here: the disk-full cases use ulimit -f only"
fi
# A file size limit: SIGXFSZ is ignored and the error says so.
expect_error "ulimit -f" "rank-00001-of-00004.safetensors exceeds the file size limit .*ulimit -f" \
  bash -c "ulimit -f 100; exec '$WORK/prog/init' --layout ranks --rank 1 --out '$WORK/limited'"
[[ -z $(ls -A "$WORK/limited") ]] || fail "files left under ulimit -f: $(ls -A "$WORK/limited")"
# A limit the file fits under, though not the block its last byte is in: no direct write goes
# past the file's end.
"$WORK/prog/init" --layout ranks --rank 1 --out "$WORK/unlimited" --quiet || fail "--rank 1 without a limit"
shard=$(stat -c %s "$WORK/unlimited/rank-00001-of-00004.safetensors")
((shard % 4096)) || fail "the shard file is a whole number of blocks: the next case tests nothing"
bash -c "ulimit -f $(((shard + 1023) / 1024)); INITRT_DIRECT_IO=1 exec '$WORK/prog/init' --layout ranks --rank 1 --out '$WORK/fits' --quiet" ||
  fail "a shard that fits under ulimit -f failed with INITRT_DIRECT_IO=1"
cmp "$WORK/unlimited/rank-00001-of-00004.safetensors" "$WORK/fits/rank-00001-of-00004.safetensors" ||
  fail "the shard written under ulimit -f with direct I/O differs"
rm -rf "$WORK/unlimited" "$WORK/fits"
expect_error "ulimit -f, direct I/O" "rank-00001-of-00004.safetensors exceeds the file size limit .*ulimit -f" \
  bash -c "ulimit -f 100; INITRT_DIRECT_IO=1 exec '$WORK/prog/init' --layout ranks --rank 1 --out '$WORK/limited'"
[[ -z $(ls -A "$WORK/limited") ]] || fail "files left under ulimit -f (direct I/O): $(ls -A "$WORK/limited")"
expect_error "assemble under ulimit -f, direct I/O" "model.safetensors exceeds the file size limit .*ulimit -f" \
  bash -c "ulimit -f 8; INITRT_DIRECT_IO=1 exec '$INITC' assemble '$WORK/ref' -o '$WORK/limited/model.safetensors'"
[[ -z $(ls -A "$WORK/limited") ]] || fail "files left by assemble under ulimit -f: $(ls -A "$WORK/limited")"
# The compiler too: an error, not a kill, and nothing left behind.
mkdir "$WORK/limited-tmp"
expect_error "compile under ulimit -f" "generating native code failed: cannot write .*: File too large" \
  bash -c "ulimit -f 16; TMPDIR='$WORK/limited-tmp' exec '$INITC' compile '$WORK/gpt2.mlir' -o '$WORK/limited-prog'"
[[ ! -e $WORK/limited-prog && -z $(ls -A "$WORK/limited-tmp") && -z $(ls -d "$WORK"/limited-prog.* 2>/dev/null) ]] ||
  fail "compile under ulimit -f left files"
echo "ok ulimit -f"

#===------------------------------------------------------------------------===#
# An unwritable output directory
#===------------------------------------------------------------------------===#
expect_error "--out under a file" "cannot create directory .*gpt2.mlir/ckpt: Not a directory: choose another --out" \
  "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/gpt2.mlir/ckpt"
mkdir -p "$WORK/ro"
if mount -t tmpfs -o ro,size=64k tmpfs "$WORK/ro" 2>/dev/null; then
  MOUNTS+=("$WORK/ro")
  expect_error "--out on a read-only file system" "cannot create directory .*ro/ckpt: Read-only file system" \
    "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/ro/ckpt"
  expect_error "--out is a read-only directory" "cannot write .*ro/rank-0000[0-9]-of-00004.safetensors: Read-only file system" \
    "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/ro"
  expect_error "assemble to a read-only directory" "cannot write .*ro/model.safetensors: Read-only file system" \
    "$INITC" assemble "$WORK/ref" -o "$WORK/ro/model.safetensors"
  umount "$WORK/ro"
  # A finished checkpoint mounted read-only: a rerun has nothing to write, and succeeds.
  if mount --bind "$WORK/ref" "$WORK/ro" 2>/dev/null && mount -o remount,bind,ro "$WORK/ro" 2>/dev/null; then
    "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/ro" --quiet || fail "rerun on a read-only finished checkpoint"
  fi
  umount "$WORK/ro" 2>/dev/null || true
fi
expect_error "compile -o under a file" "initc: error: cannot create '.*gpt2.mlir/p.tmp-[0-9]+': Not a directory" \
  "$INITC" compile "$WORK/gpt2.mlir" -o "$WORK/gpt2.mlir/p"
echo "ok unwritable"

#===------------------------------------------------------------------------===#
# Launcher and rank
#===------------------------------------------------------------------------===#
expect_error "no mpirun for a 4-device mesh" \
  "init: error: the mesh dp=2,tp=2 has 4 devices but it was started without mpirun: run mpirun -np 4 .*prog/init --out DIR \(or pass --rank K" \
  "$WORK/prog/init" --layout ranks --out "$WORK/nolauncher"
[[ ! -e $WORK/nolauncher ]] || fail "files written without a launcher"
expect_error "--rank 4 of 4" "--rank 4 is outside the mesh dp=2,tp=2 of 4 devices: pass 0 <= K < 4" \
  "$WORK/prog/init" --layout ranks --rank 4 --out "$WORK/rank"
expect_error "--rank huge" "--rank: 99999999999999999999 is larger than any mesh" \
  "$WORK/prog/init" --layout ranks --rank 99999999999999999999 --out "$WORK/rank"
expect_error "--rank -1" "--rank: must be a rank number \(0, 1, ...\), got '-1'" \
  "$WORK/prog/init" --layout ranks --rank -1 --out "$WORK/rank"
expect_error "--rank not a number" "got 'x'" "$WORK/prog/init" --layout ranks --rank x --out "$WORK/rank"
# An unset variable (--rank "$SLURM_PROCID") or another base is not rank 0 or 3.
expect_error "--rank empty" "got ''" "$WORK/prog/init" --layout ranks --rank "" --out "$WORK/rank"
expect_error "--rank in hex" "got '0x3'" "$WORK/prog/init" --layout ranks --rank 0x3 --out "$WORK/rank"
expect_error "--target-cpu not compiled" \
  "no kernels were compiled for znver9; this program has x86-64-v4, x86-64-v3: pick one of them, or recompile with --target-cpu=znver9" \
  "$WORK/prog/init" --layout ranks --rank 0 --target-cpu znver9 --out "$WORK/rank"
expect_error "INITRT_TARGET_CPU not compiled" \
  "no kernels were compiled for x86-64-v2 \(from INITRT_TARGET_CPU\)" \
  env INITRT_TARGET_CPU=x86-64-v2 "$WORK/prog/init" --layout ranks --rank 0 --out "$WORK/rank"
expect_error "INITRT_DIRECT_IO mistyped" \
  "INITRT_DIRECT_IO=off: use 0 \(through the page cache\) or 1 \(past it, for every file\)" \
  env INITRT_DIRECT_IO=off "$WORK/prog/init" --layout ranks --rank 0 --out "$WORK/rank"
expect_error "INITRT_DIRECT_IO mistyped, assemble" "INITRT_DIRECT_IO=yes: use 0" \
  env INITRT_DIRECT_IO=yes "$INITC" assemble "$WORK/ref" -o "$WORK/rank.safetensors"
[[ ! -e $WORK/rank && ! -e $WORK/rank.safetensors ]] ||
  fail "files written for a bad --rank, --target-cpu or INITRT_DIRECT_IO"
echo "ok launcher, rank, kernel variant and environment"

#===------------------------------------------------------------------------===#
# A damaged program directory
#===------------------------------------------------------------------------===#
damaged() { # damaged NAME: a fresh copy of prog/ to break
  rm -rf "$WORK/prog-$1" && cp -r "$WORK/prog" "$WORK/prog-$1"
  echo "$WORK/prog-$1"
}
run4() { "${MPIRUN[@]}" -np 4 "$1/init" --layout ranks --out "$WORK/damaged-ckpt"; }
p=$(damaged seed); sed -i 's/"seed": 0/"seed": 1/' "$p/program.json"
expect_error "program.json edited (seed)" "program.json: the contents do not match \"checksum\": the file was edited or is damaged; recompile" run4 "$p"
p=$(damaged shape); sed -i '0,/1000/s/1000/999/' "$p/program.json"
expect_error "program.json edited (shape)" "program.json: the contents do not match \"checksum\"" run4 "$p"
p=$(damaged nochecksum); sed -i '/"checksum": "[0-9a-f]*"$/d; s/^ \],$/ ]/' "$p/program.json"
expect_error "program.json without checksum" "program.json: (no \"checksum\"|not valid JSON)" run4 "$p"
p=$(damaged truncated); truncate -s 3000 "$p/program.json"
expect_error "program.json truncated" "program.json: not valid JSON .*recompile the program" run4 "$p"
p=$(damaged version); sed -i 's/"version": 3/"version": 9/' "$p/program.json"
expect_error "program.json version" "field \"version\" is 9 but this runtime reads version 3: recompile" run4 "$p"
p=$(damaged noprogram); rm "$p/program.json"
expect_error "program.json missing" "cannot open .*program.json: No such file or directory \(is .* a directory written by .initc compile.\?\)" run4 "$p"
p=$(damaged sotruncated); truncate -s 20000 "$p/kernels.so"
expect_error "kernels.so truncated" "kernels.so has checksum [0-9a-f]+ but program.json expects [0-9a-f]+: .* is corrupt or from another compile: recompile" run4 "$p"
p=$(damaged soflipped); printf '\x01' | dd of="$p/kernels.so" bs=1 seek=30000 conv=notrunc 2>/dev/null
expect_error "kernels.so flipped" "kernels.so has checksum [0-9a-f]+ but program.json expects" run4 "$p"
p=$(damaged nokernels); rm "$p/kernels.so"
expect_error "kernels.so missing" "cannot open .*kernels.so: No such file or directory: .* recompile" run4 "$p"
[[ ! -e $WORK/damaged-ckpt ]] || fail "a damaged program wrote files"
# Without prog/init, mpirun itself refuses (its own message; exit status non-zero).
p=$(damaged noinit); rm "$p/init"
rc=0; run4 "$p" >"$WORK/out.txt" 2>&1 || rc=$?
((rc != 0)) && grep -q "could not access" "$WORK/out.txt" || fail "missing init: exit $rc"
cases=$((cases + 1))
echo "ok damaged program"

#===------------------------------------------------------------------------===#
# Checkpoints: another program's, a flipped byte, truncated or missing shards, a damaged index
#===------------------------------------------------------------------------===#
sed 's/init.seed 0/init.seed 5/' "$WORK/gpt2.mlir" >"$WORK/gpt2-seed5.mlir"
"$INITC" compile "$WORK/gpt2-seed5.mlir" --mesh dp=2,tp=2 --shard fsdp+tp -o "$WORK/prog5" >/dev/null
"$INITC" compile "$WORK/gpt2.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog2" >/dev/null
cp -r "$WORK/ref" "$WORK/foreign"
expect_error "another model's checkpoint" \
  "init: error \(rank 0\): .*foreign holds a checkpoint of another program \(index.json has program id [0-9a-f]+, this program is [0-9a-f]+\): pass --overwrite" \
  "${MPIRUN[@]}" -np 4 "$WORK/prog5/init" --layout ranks --out "$WORK/foreign"
# Without its index, each rank finds its own shard foreign; the first says so.
mv "$WORK/foreign/index.json" "$WORK/foreign-index.json"
expect_error "another model's shards, no index" \
  "init: error \(rank 0\): .*foreign holds a checkpoint of another program \(rank-00000-of-00004.safetensors has program id [0-9a-f]+, this program is [0-9a-f]+\): pass --overwrite" \
  "${MPIRUN[@]}" -np 4 "$WORK/prog5/init" --layout ranks --out "$WORK/foreign"
mv "$WORK/foreign-index.json" "$WORK/foreign/index.json"
expect_error "another mesh's checkpoint, one rank" "holds a checkpoint of another program .*pass --overwrite" \
  "$WORK/prog2/init" --layout ranks --rank 1 --out "$WORK/foreign"
same_checkpoint "$WORK/ref" "$WORK/foreign" # untouched
"${MPIRUN[@]}" -np 2 "$WORK/prog2/init" --layout ranks --out "$WORK/foreign" --overwrite --quiet || fail "--overwrite"
[[ $(ls -A "$WORK/foreign" | tr '\n' ' ') == "index.json rank-00000-of-00002.safetensors rank-00001-of-00002.safetensors " ]] ||
  fail "--overwrite left: $(ls -A "$WORK/foreign")"
"$INITC" verify "$WORK/foreign" >/dev/null || fail "verify after --overwrite"

cp -r "$WORK/ref" "$WORK/flipped"
file="$WORK/flipped/rank-00002-of-00004.safetensors"
size=$(stat -c %s "$file")
# 1000 bytes before the end: inside the last tensor of the file (the reference writer orders
# them by dtype, then name), whichever that is.
byte=$(od -An -tu1 -j $((size - 1000)) -N1 "$file" | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 1)))" | dd of="$file" bs=1 seek=$((size - 1000)) conv=notrunc 2>/dev/null
expect_error "verify a flipped byte" \
  "initc: transformer\.[a-z0-9_.]+ on rank 2 \(rank-00002-of-00004.safetensors\): checksum mismatch, the file is corrupt: rerun .prog/init --layout ranks --rank 2 --out" \
  "$INITC" verify "$WORK/flipped"
grep -q "1 problem found" "$WORK/err.txt" || fail "verify does not count one problem"
expect_error "assemble a flipped byte" \
  "initc: error: transformer\.[a-z0-9_.]+ on rank 2 .*checksum mismatch, the file is corrupt" \
  "$INITC" assemble "$WORK/flipped" -o "$WORK/flipped.safetensors"
[[ ! -e $WORK/flipped.safetensors ]] || fail "assemble wrote a damaged model"
"$WORK/prog/init" --layout ranks --rank 2 --out "$WORK/flipped" --quiet || fail "regenerate rank 2"
same_checkpoint "$WORK/ref" "$WORK/flipped"

cp -r "$WORK/ref" "$WORK/truncated"
truncate -s 100000 "$WORK/truncated/rank-00001-of-00004.safetensors"
expect_error "verify a truncated shard" \
  "rank 1 \(rank-00001-of-00004.safetensors\): .*file is 100000 bytes, its header describes [0-9]+ \(truncated\): rerun .prog/init --layout ranks --rank 1" \
  "$INITC" verify "$WORK/truncated"
expect_error "assemble a truncated shard" "rank 1 \(rank-00001-of-00004.safetensors\): .*\(truncated\): rerun .prog/init --layout ranks --rank 1" \
  "$INITC" assemble "$WORK/truncated" -o "$WORK/truncated.safetensors"
"${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/truncated" >"$WORK/rerun.log" 2>&1 || fail "rerun truncated"
grep -q "^  ranks           4, 3 already complete (0, 2-3), 1 computed again over a damaged file (1)$" "$WORK/rerun.log" ||
  fail "rerun did not skip the 3 complete ranks and name the damaged one: $(cat "$WORK/rerun.log")"
same_checkpoint "$WORK/ref" "$WORK/truncated"

cp -r "$WORK/ref" "$WORK/missing"
rm "$WORK/missing/rank-00003-of-00004.safetensors"
expect_error "verify a missing shard" "rank 3 \(rank-00003-of-00004.safetensors\): .*no such file: rerun .prog/init --layout ranks --rank 3" \
  "$INITC" verify "$WORK/missing"
expect_error "assemble a missing shard" "rank 3 \(rank-00003-of-00004.safetensors\): .*no such file: rerun .prog/init --layout ranks --rank 3" \
  "$INITC" assemble "$WORK/missing" -o "$WORK/missing.safetensors"
# A missing file is not a damaged one; a lone rank over a damaged file says so.
"${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/missing" >"$WORK/rerun.log" 2>&1 || fail "rerun missing"
grep -q "^  ranks           4, 3 already complete (0-2)$" "$WORK/rerun.log" ||
  fail "a missing shard was reported otherwise: $(cat "$WORK/rerun.log")"
same_checkpoint "$WORK/ref" "$WORK/missing"
truncate -s -1 "$WORK/missing/rank-00003-of-00004.safetensors"
"$WORK/prog/init" --layout ranks --rank 3 --out "$WORK/missing" >"$WORK/rerun.log" 2>&1 || fail "regenerate rank 3"
grep -q "^init: rank 3: .*rank-00003-of-00004.safetensors: file is [0-9]* bytes, its header describes [0-9]* (truncated): computing it again$" "$WORK/rerun.log" ||
  fail "a lone rank over a damaged file did not say so: $(cat "$WORK/rerun.log")"
same_checkpoint "$WORK/ref" "$WORK/missing"

cp -r "$WORK/ref" "$WORK/index"
truncate -s 3000 "$WORK/index/index.json"
expect_error "verify a truncated index" "index.json is malformed .*: rerun the whole job .*--overwrite" \
  "$INITC" verify "$WORK/index"
expect_error "assemble a truncated index" "index.json is malformed" \
  "$INITC" assemble "$WORK/index" -o "$WORK/index.safetensors"
expect_error "rerun over a truncated index" "index/index.json is malformed \(.*\): pass --overwrite to write it again \(complete shards are kept\)" \
  "${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/index"
"${MPIRUN[@]}" -np 4 "$WORK/prog/init" --layout ranks --out "$WORK/index" --overwrite --quiet || fail "rerun --overwrite"
same_checkpoint "$WORK/ref" "$WORK/index"
[[ ! -e $WORK/index.safetensors && ! -e $WORK/missing.safetensors && ! -e $WORK/truncated.safetensors ]] ||
  fail "assemble wrote a model from a damaged checkpoint"
echo "ok checkpoints"

echo "$cases cases"
echo "PASS $TEST_NAME"
