#!/usr/bin/env bash
# Runs the test-kernel program under mpirun on 1, 2, 3 and 4 ranks (meshes dp=1, dp=2, dp=3,
# dp=2,tp=2) and checks that: each rank's file equals the one `--rank K` writes alone; every
# checkpoint verifies; the assembled tensors are bitwise identical across meshes; a rerun skips
# complete ranks and regenerates a damaged one; a wrong rank count is refused.
# Needs: BUILD_DIR (default ./build) with init, initrt-testprog, libinitrt-testkernels.so.
set -euo pipefail

BUILD_DIR=$(cd "${BUILD_DIR:-./build}" && pwd)
RUN="$BUILD_DIR/bin/init"
TESTPROG="$BUILD_DIR/bin/initrt-testprog"
KERNELS="$BUILD_DIR/lib/libinitrt-testkernels.so"
for file in "$RUN" "$TESTPROG" "$KERNELS"; do
  if [[ ! -e "$file" ]]; then
    echo "runtime_meshes: $file is missing: build the targets init initrt-testprog" >&2
    exit 1
  fi
done

WORK=$(mktemp -d /tmp/initrt-e2e-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=ob1 # one host: shared memory, no network probing (common.bash)
MPIRUN=(mpirun --oversubscribe --bind-to none)

fail() {
  echo "runtime_meshes: $*" >&2
  echo "FAIL runtime_meshes" >&2
  exit 1
}

reference=""
for mesh in dp=1 dp=2 dp=3 dp=2,tp=2; do
  ranks=1
  for size in $(echo "$mesh" | tr ',' '\n' | cut -d= -f2); do ranks=$((ranks * size)); done
  prog="$WORK/prog-$mesh"
  "$TESTPROG" make "$prog" "$mesh" "$KERNELS" || fail "cannot make the program for $mesh"
  cp "$RUN" "$prog/init"

  "${MPIRUN[@]}" -np "$ranks" "$prog/init" --layout ranks --out "$WORK/ckpt-$mesh" --threads 2 --quiet \
    || fail "mpirun -np $ranks failed for $mesh"
  [[ -f "$WORK/ckpt-$mesh/index.json" ]] || fail "no index.json for $mesh"

  # Each rank alone, without MPI, gives the same file.
  for ((k = 0; k < ranks; k++)); do
    file=$(printf 'rank-%05d-of-%05d.safetensors' "$k" "$ranks")
    "$prog/init" --layout ranks --rank "$k" --out "$WORK/alone-$mesh" --threads 1 --quiet \
      || fail "--rank $k failed for $mesh"
    cmp "$WORK/ckpt-$mesh/$file" "$WORK/alone-$mesh/$file" \
      || fail "$mesh rank $k: the mpirun file differs from the --rank $k file"
  done
  [[ ! -e "$WORK/alone-$mesh/index.json" ]] || fail "--rank wrote index.json for $mesh"
  # The summary of a lone rank names that rank, not rank 0 of a one-rank world.
  last=$((ranks - 1))
  summary=$("$prog/init" --layout ranks --rank "$last" --discard --threads 1 2>&1) || fail "--rank $last --discard failed"
  grep -q "slowest rank    rank $last," <<<"$summary" && grep -q "(rank $last) vs largest" <<<"$summary" \
    || fail "the --rank $last summary does not name rank $last: $summary"
  grep -q "threads         1 (rank $last, --threads)" <<<"$summary" || fail "threads: $summary"

  "$TESTPROG" verify "$WORK/ckpt-$mesh" || fail "verify failed for $mesh"
  "$TESTPROG" assemble "$WORK/ckpt-$mesh" "$WORK/model-$mesh.safetensors" \
    || fail "assemble failed for $mesh"
  if [[ -z "$reference" ]]; then
    reference="$WORK/model-$mesh.safetensors"
  else
    cmp "$reference" "$WORK/model-$mesh.safetensors" \
      || fail "the assembled model of $mesh differs from dp=1's"
  fi
done

# Past the page cache (INITRT_DIRECT_IO=1: direct I/O for files of any size, where the file system
# takes it), the shard files and the assembled model are the same bytes.
mesh=dp=2,tp=2
INITRT_DIRECT_IO=1 "${MPIRUN[@]}" -x INITRT_DIRECT_IO -np 4 "$WORK/prog-$mesh/init" \
  --layout ranks --out "$WORK/direct-$mesh" --threads 2 --quiet || fail "mpirun with INITRT_DIRECT_IO=1 failed"
for file in index.json rank-0000{0,1,2,3}-of-00004.safetensors; do
  cmp "$WORK/ckpt-$mesh/$file" "$WORK/direct-$mesh/$file" || fail "$file differs with INITRT_DIRECT_IO=1"
done
INITRT_DIRECT_IO=1 "$TESTPROG" assemble "$WORK/direct-$mesh" "$WORK/model-direct.safetensors" \
  || fail "assemble with INITRT_DIRECT_IO=1 failed"
cmp "$reference" "$WORK/model-direct.safetensors" || fail "the model assembled with direct I/O differs"
[[ -z $(ls -A "$WORK/direct-$mesh" | grep tmp) ]] || fail "temporaries left with INITRT_DIRECT_IO=1"

# Without --threads, a rank takes one thread per CPU it may run on: all of them alone, one when
# taskset (or mpirun's binding to cores) gives it one.
prog="$WORK/prog-dp=2,tp=2"
summary=$("$prog/init" --layout ranks --rank 0 --discard 2>&1) || fail "--discard without --threads failed"
cpus=$(taskset -c -p $$ | awk -F': ' '{print $2}' | tr ',' '\n' |
  awk -F- '{ n += (NF == 2 ? $2 - $1 + 1 : 1) } END { print n }')
grep -q "threads         $cpus (rank 0, one per CPU it may run on)" <<<"$summary" ||
  fail "threads on $cpus CPUs: $summary"
summary=$(taskset -c 0 "$prog/init" --layout ranks --rank 0 --discard 2>&1) || fail "--discard under taskset failed"
grep -q "threads         1 (rank 0, one per CPU it may run on)" <<<"$summary" ||
  fail "threads under taskset -c 0: $summary"
# Ranks of one host allowed on the same CPUs (--bind-to none) divide them; rank 0 gets the
# left-over one.
summary=$("${MPIRUN[@]}" -np 4 "$prog/init" --layout ranks --discard 2>&1) || fail "mpirun --discard failed"
share=$(( cpus / 4 + (cpus % 4 > 0) ))
grep -q "threads         $share (rank 0, its share of the $cpus CPUs\? it may run on with 3 other ranks of its host)" \
  <<<"$summary" || fail "threads of 4 ranks on $cpus CPUs: $summary"
summary=$(taskset -c 0 "${MPIRUN[@]}" -np 4 "$prog/init" --layout ranks --discard 2>&1) ||
  fail "mpirun --discard under taskset failed"
grep -q "threads         1 (rank 0, its share of the 1 CPU it may run on with 3 other ranks of its host)" \
  <<<"$summary" || fail "threads of 4 ranks on 1 CPU: $summary"
echo "ok threads follow the CPUs a rank may run on"

# A rerun skips complete ranks and regenerates a damaged one.
mesh=dp=2,tp=2
ckpt="$WORK/ckpt-$mesh"
cp "$ckpt/rank-00002-of-00004.safetensors" "$WORK/rank2.good"
truncate -s -8 "$ckpt/rank-00002-of-00004.safetensors"
out=$("${MPIRUN[@]}" -np 4 "$WORK/prog-$mesh/init" --layout ranks --out "$ckpt" 2>&1) || fail "rerun failed: $out"
# The summary names the ranks it kept, as ranges; the others say nothing each.
grep -q "ranks           4, 3 already complete (0-1, 3), 1 computed again over a damaged file (2)$" <<<"$out" ||
  fail "rerun did not skip exactly ranks 0, 1 and 3: $out"
if grep -q "already complete, verified" <<<"$out"; then fail "ranks of a job spoke each: $out"; fi
# Every rank's slices cover the model at least once, so one rank's alone are fewer.
counts=$(sed -n 's/^  elements *\([0-9,]*\) in the model, \([0-9,]*\) computed.*/\1 \2/p' <<<"$out" | tr -d ,)
read -r model_elements computed <<<"$counts"
((computed > 0 && computed < model_elements)) ||
  fail "the computed elements count skipped ranks: $out"
cmp "$WORK/rank2.good" "$ckpt/rank-00002-of-00004.safetensors" || fail "rank 2 not regenerated"

# The wrong number of ranks is refused with one message and a non-zero status.
if out=$("${MPIRUN[@]}" -np 2 "$WORK/prog-dp=3/init" --layout ranks --out "$WORK/wrong" 2>&1); then
  fail "mpirun -np 2 on a mesh of 3 succeeded"
fi
[[ $(grep -c "has 3 devices but MPI started 2 ranks: run mpirun -np 3" <<<"$out") == 1 ]] \
  || fail "expected one world-size message, got: $out"
if "$WORK/prog-dp=3/init" --layout ranks --out "$WORK/wrong" --rank 3 2>"$WORK/err"; then
  fail "--rank 3 on a mesh of 3 succeeded"
fi
grep -q "pass 0 <= K < 3" "$WORK/err" || fail "unexpected --rank error: $(cat "$WORK/err")"

# A checkpoint of another program is refused unless --overwrite.
if out=$("${MPIRUN[@]}" -np 2 "$WORK/prog-dp=2/init" --layout ranks --out "$WORK/ckpt-dp=3" --quiet 2>&1); then
  fail "writing over another program's checkpoint succeeded"
fi
grep -q -- "--overwrite" <<<"$out" || fail "the refusal does not mention --overwrite: $out"
"${MPIRUN[@]}" -np 2 "$WORK/prog-dp=2/init" --layout ranks --out "$WORK/ckpt-dp=3" --overwrite --quiet \
  || fail "--overwrite failed"
cmp "$WORK/ckpt-dp=2/rank-00001-of-00002.safetensors" "$WORK/ckpt-dp=3/rank-00001-of-00002.safetensors" \
  || fail "--overwrite wrote different bytes"

# Damaged kernels: every rank fails, the message is printed once.
echo garbage >>"$WORK/prog-dp=2/kernels.so"
if out=$("${MPIRUN[@]}" -np 2 "$WORK/prog-dp=2/init" --layout ranks --out "$WORK/never" 2>&1); then
  fail "a corrupt kernels.so was accepted"
fi
[[ $(grep -c "is corrupt or from another compile: recompile" <<<"$out") == 1 ]] \
  || fail "expected one corrupt-kernels message, got: $out"

echo "PASS runtime_meshes"
