#!/usr/bin/env bash
# AArch64 programs hold the contract's bytes, the x86-64 ones: the runtime cross-built for
# AArch64 without MPI ($BUILD_DIR/aarch64, build_aarch64_runtime in scripts/setup.sh), a model of
# every random op (uniform, normal, truncated normal, variance scaling, orthogonal) and the
# elementwise math in f32, bf16 and f16 compiled for neoverse-v2,aarch64, run under
# qemu-aarch64-static on an emulated CPU with SVE2 (-cpu max, which runs the neoverse-v2 variant)
# with 128-bit and 2048-bit SVE vectors, and on one without SVE (cortex-a57, which must refuse
# it and run the aarch64 one), each variant also named with --target-cpu; and a 2-rank job
# without MPI (RANK/WORLD_SIZE). Every assembled
# checkpoint equals the x86-64 run's byte for byte. Emulated timings mean nothing: none is printed.
source "$(dirname "$0")/../common.bash"
source "$ROOT/scripts/setup.sh"
cd "$WORK"

[[ $(uname -m) == x86_64 ]] || fail "this test runs on x86-64 (it is $(uname -m))"
build_aarch64_runtime || fail "cross-building the runtime: see $AARCH64_BUILD_DIR/build.log"
ARM_INIT="$AARCH64_BUILD_DIR/bin/init"
# elf_machine FILE: e_machine of an ELF file (bytes 18-19): 62 x86-64, 183 AArch64.
elf_machine() { od -An -tu2 -j18 -N2 "$1" | tr -d ' '; }
[[ $(elf_machine "$ARM_INIT") == 183 ]] || fail "$ARM_INIT is not AArch64 code"
# The arm64 libraries come from Debian's arm64 packages (multiarch: /lib/ld-linux-aarch64.so.1,
# /lib/aarch64-linux-gnu), not from `-L /usr/aarch64-linux-gnu`: with libc6:arm64 installed,
# that prefix loads the cross toolchain's ld.so with the multiarch libc (a later build of glibc
# 2.36), and pthread_create then walks its stack cache forever.
qemu() { local cpu=$1; shift; qemu-aarch64-static -cpu "$cpu" "$@"; }

cat >model.mlir <<'MLIR'
init.seed 5
init.param @normal_f32 : tensor<40x24xf32> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<40x24xf32>
  init.yield %0 : tensor<40x24xf32>
}
init.param @normal_bf16 : tensor<37x19xbf16> {
  %0 = init.normal mean 1.0 std 0.5 stream 1 : tensor<37x19xbf16>
  init.yield %0 : tensor<37x19xbf16>
}
init.param @normal_f16 : tensor<300xf16> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<300xf16>
  init.yield %0 : tensor<300xf16>
}
init.param @uniform_f32 : tensor<129xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<129xf32>
  init.yield %0 : tensor<129xf32>
}
init.param @uniform_bf16 : tensor<33x17xbf16> {
  %0 = init.uniform -0.5, 0.5 stream 0 : tensor<33x17xbf16>
  init.yield %0 : tensor<33x17xbf16>
}
init.param @uniform_f16 : tensor<20x10xf16> {
  %0 = init.uniform 0.0, 4.0 stream 2 : tensor<20x10xf16>
  init.yield %0 : tensor<20x10xf16>
}
init.param @trunc_f32 : tensor<50x8xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<50x8xf32>
  init.yield %0 : tensor<50x8xf32>
}
init.param @trunc_bf16 : tensor<64x3xbf16> {
  %0 = init.trunc_normal mean 0.0 std 1.0 bounds [-2.0, 2.0] stream 0 : tensor<64x3xbf16>
  init.yield %0 : tensor<64x3xbf16>
}
init.param @trunc_f16 : tensor<77xf16> {
  %0 = init.trunc_normal mean 0.5 std 1.0 bounds [-1.0, 3.0] stream 0 : tensor<77xf16>
  init.yield %0 : tensor<77xf16>
}
init.param @kaiming_f32 : tensor<16x48xf32> {
  %0 = init.variance_scaling scale 0.333333 fan_in uniform stream 0 : tensor<16x48xf32>
  init.yield %0 : tensor<16x48xf32>
}
init.param @scaled_bf16 : tensor<24x12xbf16> {
  %0 = init.variance_scaling scale 2.0 fan_out normal stream 0 : tensor<24x12xbf16>
  init.yield %0 : tensor<24x12xbf16>
}
init.param @scaled_f16 : tensor<6x4x5xf16> {
  %0 = init.variance_scaling scale 1.0 fan_avg uniform stream 0 : tensor<6x4x5xf16>
  init.yield %0 : tensor<6x4x5xf16>
}
init.param @orthogonal_f32 : tensor<20x12xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<20x12xf32>
  init.yield %0 : tensor<20x12xf32>
}
init.param @orthogonal_bf16 : tensor<8x30xbf16> {
  %0 = init.orthogonal gain 2.0 stream 1 strategy redundant : tensor<8x30xbf16>
  init.yield %0 : tensor<8x30xbf16>
}
init.param @orthogonal_f16 : tensor<6x5x4xf16> {
  %0 = init.orthogonal gain 0.5 stream 0 strategy redundant : tensor<6x5x4xf16>
  init.yield %0 : tensor<6x5x4xf16>
}
init.param @math_f32 : tensor<96xf32> {
  %u = init.uniform 0.5, 2.0 stream 0 : tensor<96xf32>
  %v = init.uniform -0.9, 0.9 stream 1 : tensor<96xf32>
  %l = init.log %u : tensor<96xf32>
  %s = init.sqrt %u : tensor<96xf32>
  %e = init.exp %v : tensor<96xf32>
  %i = init.erfinv %v : tensor<96xf32>
  %g = init.sign %i : tensor<96xf32>
  %a = init.add %l, %s : tensor<96xf32>
  %m = init.mul %a, %e : tensor<96xf32>
  %d = init.div %m, %u : tensor<96xf32>
  %b = init.sub %d, %g : tensor<96xf32>
  %c = init.clamp %b min -2.0 max 2.0 : tensor<96xf32>
  init.yield %c : tensor<96xf32>
}
init.param @math_bf16 : tensor<96xbf16> {
  %u = init.uniform 0.5, 2.0 stream 0 : tensor<96xf32>
  %l = init.log %u : tensor<96xf32>
  %e = init.exp %l : tensor<96xf32>
  %x = init.add %e, %l : tensor<96xf32>
  %0 = init.cast %x : tensor<96xf32> to tensor<96xbf16>
  init.yield %0 : tensor<96xbf16>
}
init.param @math_f16 : tensor<64xf16> {
  %u = init.uniform 0.1, 3.0 stream 0 : tensor<64xf16>
  %l = init.log %u : tensor<64xf16>
  %s = init.sqrt %u : tensor<64xf16>
  %a = init.add %l, %s : tensor<64xf16>
  init.yield %a : tensor<64xf16>
}
init.param @normal_f64 : tensor<50xf64> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<50xf64>
  init.yield %0 : tensor<50xf64>
}
MLIR

# x86-64: the reference (any variant gives the same bytes).
"$INITC" compile model.mlir --target-cpu x86-64-v3 -o x86 >/dev/null || fail "compile for x86-64"
x86/init --threads 1 --quiet --layout ranks --out ckpt-x86 || fail "run on x86-64"
"$INITC" assemble ckpt-x86 -o x86.safetensors >/dev/null || fail "assemble the x86-64 run"

"$INITC" compile model.mlir --target-cpu neoverse-v2,aarch64 --runtime "$ARM_INIT" -o arm \
  >compile.txt || fail "compile for AArch64"
grep -q "target neoverse-v2, aarch64" compile.txt || fail "variants: $(cat compile.txt)"
[[ $(elf_machine arm/kernels.so) == 183 ]] || fail "arm/kernels.so is not AArch64 code"
grep -q '"sve2"' arm/program.json || fail "the neoverse-v2 variant records no sve2"

# run_arm TAG CPU ARGS...: the program under qemu with CPU, its checkpoint assembled as TAG.
run_arm() {
  local tag=$1 cpu=$2
  shift 2
  qemu "$cpu" arm/init --layout ranks --out "ckpt-$tag" "$@" >"run-$tag.txt" 2>&1 ||
    fail "AArch64 run $tag: $(head -c 600 "run-$tag.txt")"
  "$INITC" assemble "ckpt-$tag" -o "$tag.safetensors" >/dev/null || fail "assemble $tag"
  cmp -s x86.safetensors "$tag.safetensors" || fail "AArch64 run $tag differs from x86-64"
}
run_arm max-default max --threads 1
grep -q "neoverse-v2" "run-max-default.txt" || fail "-cpu max did not run neoverse-v2: $(cat run-max-default.txt)"
# SVE code is vector-length agnostic: 128-bit and 2048-bit vectors give the same bytes.
run_arm sve128 max,sve-default-vector-length=16 --target-cpu neoverse-v2 --quiet --threads 1
run_arm sve2048 max,sve-default-vector-length=256 --target-cpu neoverse-v2 --quiet --threads 2
run_arm max-generic max --target-cpu aarch64 --quiet --threads 1
run_arm a57-default cortex-a57 --threads 1
grep -q "compiled for aarch64" "run-a57-default.txt" || fail "cortex-a57 did not run aarch64: $(cat run-a57-default.txt)"

# A CPU without SVE is told so when the SVE2 variant is named: one message, exit code 1.
rc=0
qemu cortex-a57 arm/init --target-cpu neoverse-v2 --quiet --out ckpt-bad >out.txt 2>err.txt || rc=$?
((rc == 1)) || fail "neoverse-v2 on cortex-a57: exit code $rc: $(cat err.txt)"
grep -q "the kernels for neoverse-v2 use .*sve.*, which this CPU lacks" err.txt ||
  fail "neoverse-v2 on cortex-a57: $(cat err.txt)"
[[ ! -e ckpt-bad ]] || fail "a refused run left ckpt-bad"

# Two ranks without MPI (RANK/WORLD_SIZE, meeting over TCP), each under its own qemu: the
# assembled checkpoint is the one-rank x86-64 one.
"$INITC" compile model.mlir --mesh dp=2 --shard fsdp --target-cpu neoverse-v2,aarch64 \
  --runtime "$ARM_INIT" -o arm-2 >/dev/null || fail "compile dp=2 for AArch64"
port=$((20000 + RANDOM % 20000))
pids=()
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    qemu max arm-2/init --threads 1 --quiet --layout ranks --out ckpt-arm-2 >"rank-$rank.txt" 2>&1 &
  pids+=($!)
done
for rank in 0 1; do
  wait "${pids[$rank]}" || fail "rank $rank of 2 under qemu: $(head -c 600 "rank-$rank.txt")"
done
"$INITC" assemble ckpt-arm-2 -o arm-2.safetensors >/dev/null || fail "assemble the 2-rank run"
cmp -s x86.safetensors arm-2.safetensors || fail "the 2-rank AArch64 run differs from x86-64"

# The runtime must be the kernels' architecture's.
fails_cleanly "an x86-64 runtime for AArch64 kernels" \
  "the runtime '.*' is x86-64 code, and the kernels are for AArch64: pass --runtime" \
  "$INITC" compile model.mlir --target-cpu neoverse-v2,aarch64 -o arm-bad
no_output arm-bad
fails_cleanly "two architectures in one program" \
  "target CPU 'neoverse-v2' is an AArch64 CPU, and the program's other kernels are for x86-64" \
  "$INITC" compile model.mlir --target-cpu neoverse-v2,x86-64-v3 -o mixed
no_output mixed
echo "PASS $TEST_NAME"
