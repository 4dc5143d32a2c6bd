#!/usr/bin/env bash
# The RNG contract across meshes: a llama-family model with uneven dims (vocab 1001, intermediate
# 176) compiled for 1, 2 (dp=2), 3 (dp=3) and 4 ranks (dp=2,tp=2 and tp=4) assembles to the same
# bytes; each rank's file equals what `prog/init --layout ranks --rank K` writes alone; every checkpoint verifies;
# and the assembled file is valid safetensors. A program with kernels for several CPUs gives the
# same bytes whichever variant runs. The 4-rank dp=2,tp=2 checkpoint also assembles into a
# directory in Hugging Face's layout, in one file or split by --max-shard-size, holding those
# bytes.
source "$(dirname "$0")/../common.bash"

for dtype in f32 bf16; do
  "$INITC" import hf "$ROOT/tests/e2e/configs/llama_uneven.json" --dtype "$dtype" --seed 7 \
    -o "$WORK/model-$dtype.mlir"
  reference=""
  for spec in "dp=1:replicated" "dp=2:fsdp" "dp=3:fsdp" "dp=2,tp=2:fsdp+tp" "tp=4:tp"; do
    mesh=${spec%%:*} shard=${spec##*:} n=$(mesh_size "${spec%%:*}")
    tag="$dtype-${mesh//[=,]/_}"
    "$INITC" compile "$WORK/model-$dtype.mlir" --mesh "$mesh" --shard "$shard" -o "$WORK/prog-$tag" \
      >/dev/null || fail "compile $tag"
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$tag/init" --layout ranks --out "$WORK/ckpt-$tag" --quiet \
      || fail "run $tag on $n ranks"
    "$INITC" verify "$WORK/ckpt-$tag" >/dev/null || fail "verify $tag"
    "$INITC" assemble "$WORK/ckpt-$tag" -o "$WORK/$tag.safetensors" >/dev/null || fail "assemble $tag"
    if [[ -z $reference ]]; then
      reference="$WORK/$tag.safetensors"
      $PYTHON "$ROOT/tests/e2e/safetensors_check.py" "$reference" || fail "invalid safetensors $tag"
    else
      cmp "$reference" "$WORK/$tag.safetensors" || fail "$tag differs from the 1-rank result"
    fi
    if [[ $mesh == dp=2,tp=2 ]]; then
      "$INITC" assemble "$WORK/ckpt-$tag" -o "$WORK/hf-$tag" >/dev/null || fail "assemble $tag into hf"
      $PYTHON "$ROOT/tests/e2e/hf_dir_check.py" "$WORK/hf-$tag" "$WORK/$tag.safetensors" --files 1 \
        >/dev/null || fail "hf directory of $tag"
      "$INITC" assemble "$WORK/ckpt-$tag" -o "$WORK/hf-split-$tag" --max-shard-size 100KB \
        >/dev/null || fail "assemble $tag into hf files of 100KB"
      $PYTHON "$ROOT/tests/e2e/hf_dir_check.py" "$WORK/hf-split-$tag" "$WORK/$tag.safetensors" \
        --max-shard-size 100000 --min-files 4 >/dev/null || fail "hf files of 100KB of $tag"
      # Read back as a source: the hf directory assembles to the same one file.
      "$INITC" assemble "$WORK/hf-split-$tag" -o "$WORK/back-$tag.safetensors" >/dev/null \
        || fail "assemble the hf directory of $tag"
      cmp "$WORK/$tag.safetensors" "$WORK/back-$tag.safetensors" || fail "hf round trip of $tag"
    fi
    # Every rank alone, without MPI, reproduces its file byte for byte.
    if ((n > 1)); then
      for ((k = 0; k < n; k++)); do
        "$WORK/prog-$tag/init" --layout ranks --rank "$k" --out "$WORK/alone-$tag" --quiet || fail "--rank $k $tag"
        file=$(printf "rank-%05d-of-%05d.safetensors" "$k" "$n")
        cmp "$WORK/ckpt-$tag/$file" "$WORK/alone-$tag/$file" || fail "--rank $k differs ($tag)"
      done
    fi
    echo "ok $tag"
  done
done
# Kernels for three CPUs in one kernels.so: each variant this CPU can run writes the same files.
"$INITC" compile "$WORK/model-f32.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog-variants" \
  --target-cpu x86-64-v4,x86-64-v3,x86-64 >/dev/null || fail "compile for three CPUs"
for cpu in x86-64-v4 x86-64-v3 x86-64; do
  if ! out=$("${MPIRUN[@]}" -np 2 "$WORK/prog-variants/init" --target-cpu $cpu \
    --layout ranks --out "$WORK/variant-$cpu" --quiet 2>&1); then
    [[ $out == *"which this CPU lacks"* ]] || fail "--target-cpu $cpu: $out"
    echo "skip $cpu (this CPU cannot run it)"
    continue
  fi
  "$INITC" assemble "$WORK/variant-$cpu" -o "$WORK/variant-$cpu.safetensors" >/dev/null \
    || fail "assemble $cpu"
  cmp "$WORK/f32-dp_1.safetensors" "$WORK/variant-$cpu.safetensors" || fail "$cpu kernels differ"
  echo "ok kernels for $cpu"
done
# bf16 samples: by default a third variant converts them with AVX512-BF16's instruction; it and
# the integer rounding of the others write the same files. An f32 model has no use for it.
"$INITC" compile "$WORK/model-bf16.mlir" -o "$WORK/prog-bf16-variants" >/dev/null \
  || fail "compile bf16 for the default CPUs"
variants=$($PYTHON -c 'import json, sys
print(",".join(v["target_cpu"] for v in json.load(open(sys.argv[1]))["kernels"]["variants"]))' \
  "$WORK/prog-bf16-variants/program.json")
[[ $variants == "x86-64-v4+avx512bf16,x86-64-v4,x86-64-v3" ]] || fail "bf16 variants: $variants"
"$INITC" compile "$WORK/model-f32.mlir" -o "$WORK/prog-f32-default" >/dev/null || fail "compile f32"
grep -q avx512bf16 "$WORK/prog-f32-default/program.json" && fail "an f32 model has a bf16 variant"
for cpu in x86-64-v4+avx512bf16 x86-64-v4 x86-64-v3; do
  if ! out=$("$WORK/prog-bf16-variants/init" --target-cpu $cpu --layout ranks --out "$WORK/bf16-variant-$cpu" \
    --quiet 2>&1); then
    [[ $out == *"which this CPU lacks"* ]] || fail "--target-cpu $cpu: $out"
    echo "skip bf16 $cpu (this CPU cannot run it)"
    continue
  fi
  "$INITC" assemble "$WORK/bf16-variant-$cpu" -o "$WORK/bf16-variant-$cpu.safetensors" \
    >/dev/null || fail "assemble bf16 $cpu"
  cmp "$WORK/bf16-dp_1.safetensors" "$WORK/bf16-variant-$cpu.safetensors" \
    || fail "bf16 $cpu kernels differ"
  echo "ok bf16 kernels for $cpu"
done
# Vector loops of other shapes than the defaults (CPU:GROUPSxBLOCKS), as for measuring: the same
# bytes again.
"$INITC" compile "$WORK/model-f32.mlir" -o "$WORK/prog-shapes" \
  --target-cpu x86-64-v4:1x16,x86-64-v3:1 >/dev/null || fail "compile with loop shapes"
"$WORK/prog-shapes/init" --layout ranks --out "$WORK/shapes" --quiet || fail "run with loop shapes"
"$INITC" assemble "$WORK/shapes" -o "$WORK/shapes.safetensors" >/dev/null || fail "assemble shapes"
cmp "$WORK/f32-dp_1.safetensors" "$WORK/shapes.safetensors" || fail "loop shapes change the bytes"
echo "ok kernels with loop shapes 1x16 and 1x8"
# A variant whose code may use an extension this CPU lacks is passed over, or, asked for, refused
# before any kernel runs (tigerlake's includes AVX512-VP2INTERSECT, which few CPUs have).
if grep -qw avx512_vp2intersect /proc/cpuinfo; then
  echo "skip tigerlake variant (this CPU has AVX512-VP2INTERSECT)"
else
  "$INITC" compile "$WORK/model-f32.mlir" --mesh dp=2 --shard fsdp -o "$WORK/prog-tigerlake" \
    --target-cpu tigerlake,x86-64 >/dev/null || fail "compile for tigerlake"
  "${MPIRUN[@]}" -np 2 "$WORK/prog-tigerlake/init" --layout ranks --out "$WORK/tigerlake" --quiet \
    || fail "the x86-64 variant was not chosen"
  "$INITC" assemble "$WORK/tigerlake" -o "$WORK/tigerlake.safetensors" >/dev/null \
    || fail "assemble tigerlake"
  cmp "$WORK/f32-dp_1.safetensors" "$WORK/tigerlake.safetensors" || fail "x86-64 variant differs"
  if out=$("$WORK/prog-tigerlake/init" --layout ranks --rank 0 --target-cpu tigerlake \
    --out "$WORK/tigerlake-named" --quiet 2>&1); then
    fail "ran tigerlake kernels on a CPU without AVX512-VP2INTERSECT"
  fi
  [[ $out == *"avx512vp2intersect, which this CPU lacks"* ]] || fail "tigerlake refused: $out"
  [[ ! -e "$WORK/tigerlake-named/rank-00000-of-00002.safetensors" ]] \
    || fail "tigerlake wrote a shard"
  echo "ok a variant this CPU cannot run is passed over, and refused by name"
fi
INITRT_TARGET_CPU=x86-64 "$WORK/prog-variants/init" --layout ranks --rank 1 --out "$WORK/variant-env" --quiet \
  || fail "INITRT_TARGET_CPU=x86-64"
cmp "$WORK/variant-x86-64/rank-00001-of-00002.safetensors" \
  "$WORK/variant-env/rank-00001-of-00002.safetensors" || fail "INITRT_TARGET_CPU=x86-64 differs"
echo "PASS $TEST_NAME"
