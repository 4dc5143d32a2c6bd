#!/usr/bin/env bash
# init.orthogonal across meshes and threads: every rank holding part of an orthogonal tensor
# factors the whole matrix (on all its threads) and keeps its slice, so 1, 2 (dp=2), 6 (dp=2,tp=3)
# and 4 ranks (tp=4) assemble to the same bytes, as do 1 and 3 threads; and each tensor is
# orthogonal times its gain (tall, wide, 3-d, f32, bf16, f16, f64); a rank without the memory to
# factor one says which tensor and how much it needs.
source "$(dirname "$0")/../common.bash"

cat >"$WORK/model.mlir" <<'EOF'
init.seed 3
init.param @tall : tensor<300x260xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<300x260xf32>
  init.yield %0 : tensor<300x260xf32>
}
init.param @wide : tensor<48x200xbf16> {
  %0 = init.orthogonal gain 2.0 stream 1 strategy redundant : tensor<48x200xbf16>
  init.yield %0 : tensor<48x200xbf16>
}
init.param @conv : tensor<24x5x7xf16> {
  %0 = init.orthogonal gain 0.5 stream 0 strategy redundant : tensor<24x5x7xf16>
  init.yield %0 : tensor<24x5x7xf16>
}
init.param @double : tensor<70x50xf64> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<70x50xf64>
  init.yield %0 : tensor<70x50xf64>
}
init.param @plain : tensor<64x32xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}
EOF
cat >"$WORK/rules.json" <<'EOF'
{"params": {"conv": [["dp"], null, ["tp"]], "*": [["dp"], ["tp"]]}}
EOF
cat >"$WORK/dp-rules.json" <<'EOF'
{"params": {"*": [["dp"]]}}
EOF
cat >"$WORK/tp-rules.json" <<'EOF'
{"params": {"*": [null, ["tp"]]}}
EOF

reference=""
for spec in "dp=1:replicated" "dp=2:dp-rules.json" "dp=2,tp=3:rules.json" "tp=4:tp-rules.json"; do
  mesh=${spec%%:*} shard=${spec##*:} n=$(mesh_size "$mesh")
  [[ $shard == *.json ]] && shard="$WORK/$shard"
  tag=${mesh//[=,]/_}
  "$INITC" compile "$WORK/model.mlir" --mesh "$mesh" --shard "$shard" -o "$WORK/prog-$tag" \
    >/dev/null || fail "compile $mesh"
  for threads in 1 3; do
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$tag/init" --threads $threads --quiet \
      --layout ranks --out "$WORK/ckpt-$tag-$threads" || fail "run $mesh with $threads threads"
    "$INITC" assemble "$WORK/ckpt-$tag-$threads" -o "$WORK/$tag-$threads.safetensors" \
      >/dev/null || fail "assemble $mesh with $threads threads"
    if [[ -z $reference ]]; then
      reference="$WORK/$tag-$threads.safetensors"
    else
      cmp "$reference" "$WORK/$tag-$threads.safetensors" \
        || fail "$mesh with $threads threads differs from one rank with one thread"
    fi
  done
  echo "ok $mesh"
done

"$PYTHON" - "$reference" <<'EOF' || fail "not orthogonal"
import json, struct, sys
import numpy as np

path = sys.argv[1]
with open(path, "rb") as f:
    size = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(size))
    data = f.read()
types = {"F32": np.float32, "F64": np.float64, "F16": np.float16}
gains = {"tall": 1.0, "wide": 2.0, "conv": 0.5, "double": 1.0}
# Rounded to the dtype: the products of the vectors are I within the dtype's precision.
tolerance = {"F64": 1e-12, "F32": 1e-5, "BF16": 1e-2, "F16": 2e-3}
for name, gain in gains.items():
    entry = header[name]
    begin, end = entry["data_offsets"]
    raw = data[begin:end]
    if entry["dtype"] == "BF16":
        bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        values = bits.view(np.float32)
    else:
        values = np.frombuffer(raw, dtype=types[entry["dtype"]])
    shape = entry["shape"]
    m = values.astype(np.float64).reshape(shape[0], -1) / gain
    product = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    error = np.abs(product - np.eye(product.shape[0])).max()
    if error > tolerance[entry["dtype"]]:
        sys.exit(f"{name}: |QtQ - I| = {error}")
    print(f"ok {name} orthogonal ({entry['dtype']} {shape}, |QtQ - I| = {error:.1e})")
EOF

# Out of memory for the factorization: the message names the tensor and what it needs.
cat >"$WORK/big.mlir" <<'EOF2'
init.seed 3
init.param @big : tensor<4096x4096xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<4096x4096xf32>
  init.yield %0 : tensor<4096x4096xf32>
}
EOF2
"$INITC" compile "$WORK/big.mlir" -o "$WORK/prog-big" >/dev/null || fail "compile big"
fails_cleanly "orthogonal under ulimit -v" \
  "out of memory: the orthogonal tensor big \(4096 x 4096\) needs 256.00 MiB of scratch on every rank" \
  bash -c "ulimit -v 120000; exec '$WORK/prog-big/init' --layout ranks --rank 0 --discard"
echo "ok out of memory"
