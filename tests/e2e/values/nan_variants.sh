#!/usr/bin/env bash
# A mixed cluster: the two ranks of a job run different kernel variants (x86-64, SSE2 only, and
# the best this CPU has) on a model whose outputs are half NaN, from log and sqrt of negative
# numbers, 0 * inf, inf - inf and a NaN fill. Every NaN is stored as rule 9's one NaN
# (ir-spec/rng.md), so the replicated copies hold the same bytes, `initc verify` passes, and the
# job's bytes are a 1-rank run's.
source "$(dirname "$0")/../common.bash"

best=x86-64-v3
if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
  grep -qw avx512dq /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
  best=x86-64-v4
  ! grep -qw avx512_bf16 /proc/cpuinfo || best=x86-64-v4+avx512bf16
fi
if ! grep -qw avx2 /proc/cpuinfo; then
  echo "skip $TEST_NAME: this CPU has only the x86-64 variant"
  exit 0
fi

{
  echo "init.seed 9"
  for dtype in f32 bf16 f16 f64; do
    t="tensor<67x45x$dtype>"
    cat <<MLIR
init.param @"log_plus_sqrt.$dtype" : $t {
  %x = init.normal mean 0.0 std 1.0 stream 0 : $t
  %l = init.log %x : $t
  %s = init.sqrt %x : $t
  %0 = init.add %l, %s : $t
  init.yield %0 : $t
}
init.param @"zero_times_inf.$dtype" : $t {
  %x = init.uniform -1.0, 1.0 stream 1 : $t
  %z = init.sub %x, %x : $t
  %i = init.div %x, %z : $t
  %m = init.mul %z, %i : $t
  %d = init.sub %i, %i : $t
  %k = init.index_mask dim 1 index 7 : tensor<67x45xi1>
  %0 = init.select %k, %m, %d : tensor<67x45xi1>, $t
  init.yield %0 : $t
}
init.param @"nan_fill.$dtype" : $t {
  %x = init.normal mean 0.0 std 1.0 stream 2 : $t
  %f = init.fill 0xFFF8000000000123 : $t
  %0 = init.add %x, %f : $t
  init.yield %0 : $t
}
MLIR
  done
} >"$WORK/nan.mlir"

"$INITC" compile "$WORK/nan.mlir" --mesh dp=2 --shard replicated --target-cpu "$best,x86-64" \
  -o "$WORK/prog" >/dev/null || fail "compile"
"${MPIRUN[@]}" -np 1 "$WORK/prog/init" --layout ranks --out "$WORK/mixed" --target-cpu x86-64 : \
  -np 1 "$WORK/prog/init" --layout ranks --out "$WORK/mixed" --target-cpu "$best" \
  >"$WORK/mixed.txt" 2>&1 || { cat "$WORK/mixed.txt"; fail "the mixed job"; }
"$INITC" verify "$WORK/mixed" >"$WORK/verify.txt" 2>&1 || { cat "$WORK/verify.txt"; fail "verify"; }
echo "ok ranks on x86-64 and $best kernels: verify passes"

"$INITC" compile "$WORK/nan.mlir" --target-cpu "$best" -o "$WORK/prog1" >/dev/null || fail "compile 1 rank"
"$WORK/prog1/init" --layout ranks --out "$WORK/one" --quiet || fail "1 rank"
"$INITC" assemble "$WORK/mixed" -o "$WORK/mixed.safetensors" >/dev/null || fail "assemble mixed"
"$INITC" assemble "$WORK/one" -o "$WORK/one.safetensors" >/dev/null || fail "assemble 1 rank"
cmp "$WORK/mixed.safetensors" "$WORK/one.safetensors" || fail "the mixed job differs from 1 rank"
echo "ok the mixed job's bytes are a 1-rank run's"

# Each rank's copy of every tensor is the 1-rank run's bytes. Every NaN is the canonical one,
# and there are NaNs to check: about half of log_plus_sqrt (log and sqrt of negative numbers),
# all of zero_times_inf and nan_fill.
$PYTHON - "$ROOT/tests/e2e" "$WORK/one.safetensors" "$WORK"/mixed/rank-*.safetensors <<'EOF' ||
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import safetensors_check
# dtype: (unsigned type, magnitude mask, infinity, the one NaN)
kinds = {"F32": ("<u4", 0x7fffffff, 0x7f800000, 0x7fc00000),
         "F64": ("<u8", 0x7fffffffffffffff, 0x7ff0000000000000, 0x7ff8000000000000),
         "BF16": ("<u2", 0x7fff, 0x7f80, 0x7fc0), "F16": ("<u2", 0x7fff, 0x7c00, 0x7e00)}
def tensors(path):
    data = open(path, "rb").read()
    _, entries = safetensors_check.validate(data, check_writer_order=False)
    return {name: (dtype, data[begin:end]) for name, (dtype, _, begin, end) in entries.items()}
one = tensors(sys.argv[2])
assert len(one) == 12, sorted(one)
assert len(sys.argv) == 5, sys.argv[3:]
for path in sys.argv[3:]:
    rank = tensors(path)
    assert rank.keys() == one.keys(), (path, sorted(rank))
    for name in one:
        assert rank[name] == one[name], f"{path}: {name} differs from the 1-rank run's"
for name, (dtype, raw) in sorted(one.items()):
    unsigned, mask, inf, canonical = kinds[dtype]
    bits = np.frombuffer(raw, dtype=unsigned)
    nan = (bits & np.array(mask, dtype=unsigned)) > np.array(inf, dtype=unsigned)
    share = nan.mean()
    low = 0.4 if name.startswith("log_plus_sqrt") else 1.0
    assert low <= share <= (0.6 if low < 1 else 1.0), f"{name}: {share:.3f} of it is NaN"
    other = np.unique(bits[nan & (bits != np.array(canonical, dtype=unsigned))])
    assert other.size == 0, f"{name}: NaNs {[hex(int(b)) for b in other[:4]]}, not {canonical:#x}"
    print(f"{name}: {nan.sum()} NaNs, all {canonical:#x}")
EOF
  fail "NaN bits"
echo "PASS $TEST_NAME"
