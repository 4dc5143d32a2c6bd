#!/usr/bin/env bash
# End-to-end comparison on the TinyLlama-1.1B config (f32), all in one run so the ratios are
# fair on a noisy machine (each timing the best of RUNS=3 runs, after a sync): initc in memory
# (one rank: prog/init with the output discarded, and the C API filling a process's own fresh
# buffers; hf init, and torch init for the PyTorch stack) against a memset of the same bytes into
# fresh huge pages, PyTorch eager construction of the same module stack, numpy's default_rng; two
# ranks against one; writing the checkpoint against dd; the same model in bf16 against f32; and
# torch.nn.init.orthogonal_ of one square matrix against initc's.
#
#   BUILD_DIR=build benchmarks/compare.sh [WORK_DIR]
#
# CONFIG=path/to/config.json compares on another llama-style HF config (the tests run a tiny one).
#
# Needs a build with INITC_BUILD_BENCHMARKS=ON (initc-memset-fresh, initc-fill-bench), mpirun
# for the two-rank run, and /usr/bin/python3 with torch and numpy (apt-get install
# python3-torch python3-numpy); a missing peer is reported and skipped. No number here is a pass/fail criterion.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
bin=$build/bin
for tool in initc initc-fill-bench; do
  [ -x "$bin/$tool" ] || { echo "no $bin/$tool: build first (or set BUILD_DIR)" >&2; exit 2; }
done
work=${1:-$(mktemp -d /tmp/initc-compare.XXXXXX)}
mkdir -p "$work"
memset_tool=$bin/initc-memset-fresh
if [ ! -x "$memset_tool" ]; then # a build without benchmarks: compile the one C file here
  memset_tool=$work/initc-memset-fresh
  cc -O2 -o "$memset_tool" "$here/memset_fresh.c"
fi
config=${CONFIG:-$here/configs/tinyllama-1.1b.json}
# The PyTorch stack below is a llama's: say so before anything runs, not in a traceback later.
python3 - "$config" <<'PY' || exit 2
import json, sys
try:
    c = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"compare.sh: cannot read config {sys.argv[1]}: {e}")
need = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads"]
missing = [k for k in need if k not in c]
if missing:
    sys.exit(f"compare.sh: {sys.argv[1]} is not a llama-style config (no {', '.join(missing)}); "
             "CONFIG takes one with " + ", ".join(need))
PY
threads=1

now() { date +%s.%N; }
runs=${RUNS:-3}
# best_value CMD...: the smallest number CMD prints over $runs runs. Memory freed by one run is
# slow to touch again for the next on a virtual machine (the host reclaims it), so a single run
# measures the machine as much as the program; each run starts after a sync.
best_value() {
  local best="" s
  for ((i = 0; i < runs; i++)); do
    sync
    s=$("$@")
    best=$(python3 -c "import sys; b = sys.argv[1]; print($s if not b else min($s, float(b)))" "$best")
  done
  echo "$best"
}
# wall CMD...: CMD's wall time in seconds. column K CMD...: column K of CMD's output.
wall() { local t0; t0=$(now); "$@" >/dev/null; python3 -c "print($(now) - $t0)"; }
column() { local k=$1; shift; "$@" | awk -v k="$k" '{ print $k }'; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}')" "$1" "$2"; }
gbps() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]) / 1e9:.3f}')" "$1" "$2"; }

"$bin/initc" import hf "$config" -o "$work/model.mlir" --dtype f32
"$bin/initc" compile "$work/model.mlir" -o "$work/prog1" >/dev/null
# The PyTorch stack draws torch's own defaults (kaiming_uniform_ for Linear, normal_ for
# Embedding, ones for norms): initc with --init-style torch computes those same distributions.
"$bin/initc" import hf "$config" -o "$work/model-torch.mlir" --dtype f32 --init-style torch
"$bin/initc" compile "$work/model-torch.mlir" -o "$work/prog1t" >/dev/null
"$bin/initc" compile "$work/model.mlir" --mesh dp=2 --shard fsdp -o "$work/prog2" >/dev/null
# The same model in bf16: as many elements in half the bytes.
"$bin/initc" import hf "$config" -o "$work/model-bf16.mlir" --dtype bf16
"$bin/initc" compile "$work/model-bf16.mlir" -o "$work/prog1b" >/dev/null
# bytes_of PROGRAM: the bytes of its checkpoint's tensors.
bytes_of() {
  python3 - "$1/program.json" <<'PY'
import json, sys, math
d = json.load(open(sys.argv[1]))
size = {"F32": 4, "BF16": 2, "F16": 2, "F64": 8, "BOOL": 1, "I64": 8}
print(sum(math.prod(p["shape"]) * size[p["dtype"]] for p in d["params"] if p["persistent"]))
PY
}
bytes=$(bytes_of "$work/prog1")
bf16_bytes=$(bytes_of "$work/prog1b")
echo "$(basename "$config" .json) f32: $bytes bytes, $threads thread(s) per rank, best of $runs runs (RUNS=N to change)"
printf '%-44s %10s %10s %10s\n' "run" "seconds" "GB/s" "initc is"

initc_s=$(best_value wall "$work/prog1/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
printf '%-44s %10.3f %10s %10s\n' "initc prog/init --rank 0 --discard" "$initc_s" "$(gbps $bytes $initc_s)" ""
torch_style_s=$(best_value wall "$work/prog1t/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
printf '%-44s %10.3f %10s %10s\n' "  the same, --init-style torch" "$torch_style_s" "$(gbps $bytes $torch_style_s)" ""
bf16_s=$(best_value wall "$work/prog1b/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
printf '%-44s %10.3f %10s %10sx\n' "  the same in bf16 (elements/s vs f32)" "$bf16_s" "$(gbps $bf16_bytes $bf16_s)" "$(ratio $initc_s $bf16_s)"
# On an AVX-512 CPU, the AVX2 variant too (hf, torch style, bf16): the floor every x86-64-v3
# CPU gets, and a proxy for an AVX2-only host.
avx2_s=""
avx2_torch_s=""
if grep -qw avx512f /proc/cpuinfo; then
  avx2_s=$(INITRT_TARGET_CPU=x86-64-v3 best_value wall "$work/prog1/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
  printf '%-44s %10.3f %10s %10s\n' "  the same, AVX2 variant" "$avx2_s" "$(gbps $bytes $avx2_s)" ""
  avx2_torch_s=$(INITRT_TARGET_CPU=x86-64-v3 best_value wall "$work/prog1t/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
  printf '%-44s %10.3f %10s %10s\n' "  --init-style torch, AVX2 variant" "$avx2_torch_s" "$(gbps $bytes $avx2_torch_s)" ""
  avx2_bf16_s=$(INITRT_TARGET_CPU=x86-64-v3 best_value wall "$work/prog1b/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
  printf '%-44s %10.3f %10s %10sx\n' "  bf16, AVX2 variant (elements/s vs its f32)" "$avx2_bf16_s" "$(gbps $bf16_bytes $avx2_bf16_s)" "$(ratio $avx2_s $avx2_bf16_s)"
fi

fill_s=$(best_value column 1 "$bin/initc-fill-bench" "$work/prog1" 0 $threads fresh)
printf '%-44s %10.3f %10s %10s\n' "initc C API, fresh malloc buffers" "$fill_s" "$(gbps $bytes $fill_s)" ""
resident_s=$(best_value column 1 "$bin/initc-fill-bench" "$work/prog1" 0 $threads resident)
printf '%-44s %10.3f %10s %10s\n' "initc C API, resident buffers" "$resident_s" "$(gbps $bytes $resident_s)" ""

memset_s=$(best_value column 1 "$memset_tool" "$bytes" huge)
printf '%-44s %10.3f %10s %10sx\n' "memset, fresh huge pages (vs --discard)" "$memset_s" "$(gbps $bytes $memset_s)" "$(ratio $memset_s $initc_s)"
[ -n "$avx2_s" ] && printf '%-44s %10s %10s %10sx\n' "  vs the AVX2 variant" "" "" "$(ratio $memset_s $avx2_s)"
printf '%-44s %10s %10s %10sx\n' "  vs the C API, fresh buffers" "" "" "$(ratio $memset_s $fill_s)"
small_s=$(best_value column 1 "$memset_tool" "$bytes" small)
printf '%-44s %10.3f %10s %10sx\n' "memset, fresh 4 KiB pages (vs --discard)" "$small_s" "$(gbps $bytes $small_s)" "$(ratio $small_s $initc_s)"

if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  torch_s=$(/usr/bin/python3 - "$config" <<'PY'
import json, sys, time, torch
from torch import nn
torch.set_num_threads(1)
c = json.load(open(sys.argv[1]))
h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
kv = h // c["num_attention_heads"] * c["num_key_value_heads"]
start = time.perf_counter()
mods = [nn.Embedding(v, h)]
for _ in range(c["num_hidden_layers"]):
    mods += [nn.Linear(h, h, bias=False), nn.Linear(h, kv, bias=False),
             nn.Linear(h, kv, bias=False), nn.Linear(h, h, bias=False),
             nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False),
             nn.Linear(i, h, bias=False), nn.LayerNorm(h), nn.LayerNorm(h)]
mods += [nn.LayerNorm(h), nn.Linear(h, v, bias=False)]
model = nn.ModuleList(mods)
print(time.perf_counter() - start)
PY
)
  printf '%-44s %10.3f %10s %10sx\n' "PyTorch eager construction (1 thread)" "$torch_s" "$(gbps $bytes $torch_s)" "$(ratio $torch_s $initc_s)"
  printf '%-44s %10s %10s %10sx\n' "  vs initc --init-style torch" "" "" "$(ratio $torch_s $torch_style_s)"
  [ -n "$avx2_torch_s" ] && printf '%-44s %10s %10s %10sx\n' "  vs it, AVX2 variant" "" "" "$(ratio $torch_s $avx2_torch_s)"
else
  echo "PyTorch: not installed (apt-get install python3-torch), skipped"
fi

# torch.nn.init.orthogonal_ of one square f32 matrix (ORTHOGONAL=N rows, 2048 unless set): a QR
# factorization, not a sampler. PyTorch calls LAPACK; initc its own fixed-order Householder QR.
orth=${ORTHOGONAL:-2048}
cat >"$work/orthogonal.mlir" <<EOF
init.seed 1
init.param @w : tensor<${orth}x${orth}xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<${orth}x${orth}xf32>
  init.yield %0 : tensor<${orth}x${orth}xf32>
}
EOF
"$bin/initc" compile "$work/orthogonal.mlir" -o "$work/progo" >/dev/null
orth_bytes=$((orth * orth * 4))
orth_s=$(best_value wall "$work/progo/init" --layout ranks --rank 0 --discard --quiet --threads $threads)
printf '%-44s %10.3f %10s %10s\n' "initc orthogonal ${orth}x${orth} f32 --discard" "$orth_s" "$(gbps $orth_bytes $orth_s)" ""
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  torch_orth_s=$(/usr/bin/python3 - "$orth" "$runs" <<'PY'
import sys, time, torch
torch.set_num_threads(1)
n, runs = int(sys.argv[1]), int(sys.argv[2])
best = float("inf")
for _ in range(runs):
    start = time.perf_counter()
    torch.nn.init.orthogonal_(torch.empty(n, n))
    best = min(best, time.perf_counter() - start)
print(best)
PY
)
  printf '%-44s %10.3f %10s %10sx\n' "torch orthogonal_ (1 thread), vs initc" "$torch_orth_s" "$(gbps $orth_bytes $torch_orth_s)" "$(ratio $torch_orth_s $orth_s)"
fi

if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  read -r np_u np_n < <(/usr/bin/python3 - "$bytes" <<'PY'
import sys, time, numpy as np
n = int(sys.argv[1]) // 4
rng = np.random.default_rng(42)
out = np.empty(n, dtype=np.float32)
t = time.perf_counter(); rng.random(out=out, dtype=np.float32); u = time.perf_counter() - t
t = time.perf_counter(); rng.standard_normal(out=out, dtype=np.float32); g = time.perf_counter() - t
print(u, g)
PY
)
  printf '%-44s %10.3f %10s %10sx\n' "numpy default_rng uniform f32 (resident)" "$np_u" "$(gbps $bytes $np_u)" "$(ratio $np_u $initc_s)"
  printf '%-44s %10.3f %10s %10sx\n' "numpy default_rng normal f32 (resident)" "$np_n" "$(gbps $bytes $np_n)" "$(ratio $np_n $initc_s)"
else
  echo "numpy: not installed (apt-get install python3-numpy), skipped"
fi

if command -v mpirun >/dev/null; then
  # One host: Open MPI's point-to-point layer over shared memory (pml ob1). Left to choose, it
  # first probes the network transports (UCX, libfabric), 0.2 s of MPI_Init here.
  mpi=(mpirun --oversubscribe --mca pml ob1)
  [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The runs' own time (prog/init's summary, from after MPI start-up), and the wall time of
  # the whole launch, for one rank and for two.
  summary_time() { "$@" 2>&1 >/dev/null | awk '$1 == "time" { print $2 }'; }
  one_s=$(best_value summary_time "${mpi[@]}" -np 1 "$work/prog1/init" --layout ranks --discard --threads $threads)
  two_s=$(best_value summary_time "${mpi[@]}" -np 2 "$work/prog2/init" --layout ranks --discard --threads $threads)
  one_wall_s=$(best_value wall "${mpi[@]}" -np 1 "$work/prog1/init" --layout ranks --discard --quiet --threads $threads)
  two_wall_s=$(best_value wall "${mpi[@]}" -np 2 "$work/prog2/init" --layout ranks --discard --quiet --threads $threads)
  printf '%-44s %10.3f %10s %10s\n' "mpirun, 1 rank (the run's own time)" "$one_s" "$(gbps $bytes $one_s)" ""
  printf '%-44s %10.3f %10s %10s\n' "mpirun, 2 ranks (1 thread each), speedup" "$two_s" "$(gbps $bytes $two_s)" "$(ratio $one_s $two_s)x"
  printf '%-44s %10.3f %10s %10s\n' "  with MPI start-up: 1 rank" "$one_wall_s" "$(gbps $bytes $one_wall_s)" ""
  printf '%-44s %10.3f %10s %10s\n' "  with MPI start-up: 2 ranks, speedup" "$two_wall_s" "$(gbps $bytes $two_wall_s)" "$(ratio $one_wall_s $two_wall_s)x"
fi

write_ckpt() { rm -rf "$work/ckpt"; sync; "$work/prog1/init" --layout ranks --rank 0 --out "$work/ckpt" --quiet --threads $threads; }
write_dd() {
  rm -f "$work/dd.bin"; sync
  dd if=/dev/zero of="$work/dd.bin" bs=4M count="$bytes" iflag=count_bytes conv=fsync status=none
}
# The same past the page cache, as initc writes shard files of 64 MiB or more (ir-spec/checkpoint.md).
write_dd_direct() {
  rm -f "$work/dd.bin"; sync
  dd if=/dev/zero of="$work/dd.bin" bs=16M count="$bytes" iflag=count_bytes oflag=direct conv=fsync \
    status=none 2>/dev/null || dd if=/dev/zero of="$work/dd.bin" bs=16M count="$bytes" \
    iflag=count_bytes conv=fsync status=none
}
write_s=$(best_value wall write_ckpt)
dd_s=$(best_value wall write_dd)
dd_direct_s=$(best_value wall write_dd_direct)
rm -rf "$work/ckpt" "$work/dd.bin"
printf '%-44s %10.3f %10s %10s\n' "initc writing the checkpoint" "$write_s" "$(gbps $bytes $write_s)" ""
printf '%-44s %10.3f %10s %10s\n' "dd of the same bytes (conv=fsync), vs initc" "$dd_s" "$(gbps $bytes $dd_s)" "$(ratio $dd_s $write_s)x"
printf '%-44s %10.3f %10s %10s\n' "dd oflag=direct (past the cache), vs initc" "$dd_direct_s" "$(gbps $bytes $dd_direct_s)" "$(ratio $dd_direct_s $write_s)x"
