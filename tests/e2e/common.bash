# Sourced by the end-to-end scripts (not a test itself): paths, mpirun, failure reporting, a
# scratch directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
INITC="$BUILD_DIR/bin/initc"
TEST_NAME=$(basename "$0" .sh)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: Open MPI's point-to-point layer over shared memory. Left to choose, it first probes
# the network transports (UCX, libfabric): about 0.2 s of every mpirun here.
export OMPI_MCA_pml=ob1
MPIRUN=(mpirun --oversubscribe --bind-to none)
PYTHON=/usr/bin/python3

fail() {
  echo "$TEST_NAME: $*" >&2
  echo "FAIL $TEST_NAME" >&2
  exit 1
}

WORK=$(mktemp -d "/tmp/initc-$TEST_NAME-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The number of devices of a mesh text such as dp=2,tp=2.
mesh_size() { echo "$1" | tr ',' '\n' | awk -F= 'BEGIN { n = 1 } { n *= $2 } END { print n }'; }

# fails_cleanly NAME PATTERN CMD...: CMD exits non-zero without a signal or a crash report, and
# its stderr (left in $WORK/err.txt for the caller's own checks) holds PATTERN (grep -E).
fails_cleanly() {
  local name=$1 pattern=$2
  shift 2
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  ((rc != 0)) || fail "$name: succeeded: $*"
  ((rc < 128)) || fail "$name: killed by signal $((rc - 128)): $(head -c 800 "$WORK/err.txt")"
  if grep -qE "Sanitizer|runtime error:|LLVM ERROR|Stack dump|PLEASE submit|terminate called|core dumped" \
    "$WORK/err.txt"; then
    fail "$name: crashed: $(head -c 800 "$WORK/err.txt")"
  fi
  grep -qE -- "$pattern" "$WORK/err.txt" ||
    fail "$name: expected /$pattern/ in: $(head -c 800 "$WORK/err.txt")"
}

# no_output PATH: nothing under PATH, and no temporary file left next to it.
no_output() {
  [[ ! -e $1 ]] || fail "$1 exists after a failure"
  local leftovers
  leftovers=$(find "$(dirname "$1")" -maxdepth 1 -name "*.tmp-*" | head -3)
  [[ -z $leftovers ]] || fail "temporary files left: $leftovers"
}

# expert_meshes MODEL.mlir TAG: a model with 4 experts stacked along dim 0 of mlp.experts.*
# (transformers 5's state dict) assembles to the same bytes on ep=2,tp=2 and ep=2,dp=2
# (presets), pp=2,ep=2 and ep=4 (rules files) as on dp=2, and verifies on each; on ep=4 each
# rank holds exactly its one expert of every stacked tensor and the whole router; an ep that
# does not divide the experts fails naming the tensor, from a preset and from a rules file.
# Leaves $WORK/prog-TAG-MESH, $WORK/ckpt-TAG-MESH and $WORK/TAG-MESH.safetensors (MESH as
# ep_2_tp_2) for the caller's own checks.
expert_meshes() {
  local model=$1 tag=$2 reference="" spec mesh shard n run
  echo '{"pipeline": {"axis": "pp"}, "logical_axes": {"experts": "ep"}}' >"$WORK/pp-ep.json"
  echo '{"logical_axes": {"experts": "ep"}}' >"$WORK/ep.json"
  for spec in "dp=2:fsdp" "ep=2,tp=2:tp" "ep=2,dp=2:fsdp" "pp=2,ep=2:$WORK/pp-ep.json" \
    "ep=4:$WORK/ep.json"; do
    mesh=${spec%%:*} shard=${spec##*:} n=$(mesh_size "$mesh")
    run=$tag-${mesh//[=,]/_}
    "$INITC" compile "$model" --mesh "$mesh" --shard "$shard" -o "$WORK/prog-$run" \
      >/dev/null || fail "compile $run"
    "${MPIRUN[@]}" -np "$n" "$WORK/prog-$run/init" --layout ranks --out "$WORK/ckpt-$run" \
      --quiet || fail "run $run on $n ranks"
    "$INITC" verify "$WORK/ckpt-$run" >/dev/null || fail "verify $run"
    "$INITC" assemble "$WORK/ckpt-$run" -o "$WORK/$run.safetensors" >/dev/null \
      || fail "assemble $run"
    if [[ -z $reference ]]; then
      reference="$WORK/$run.safetensors"
    else
      cmp "$reference" "$WORK/$run.safetensors" || fail "$run differs from dp=2"
    fi
    echo "ok $run"
  done
  $PYTHON - "$WORK/ckpt-$tag-ep_4" <<'PY' || fail "$tag: ep=4 rank files do not hold their experts"
import json, struct, sys
for rank in range(4):
    with open(f"{sys.argv[1]}/rank-{rank:05d}-of-00004.safetensors", "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    tensors = json.loads(header["__metadata__"]["initc.tensors"])
    experts = [n for n in header if ".mlp.experts." in n]
    assert experts, rank
    for name in experts:
        assert header[name]["shape"][0] == 1, (rank, name, header[name]["shape"])
        assert tensors[name]["offset"][0] == rank, (rank, name, tensors[name])
    routers = [n for n in header if ".mlp.gate." in n]
    assert routers, rank
    for name in routers:  # replicated: every rank routes every token
        assert header[name]["shape"][0] == 4, (rank, name, header[name]["shape"])
PY
  echo "ok $tag: ep=4 rank files hold their experts"
  fails_cleanly "$tag: 3 expert ranks for 4 experts" \
    "parameter 'model.layers.[0-9].mlp.experts.gate_up_proj': its 4 experts do not divide over mesh axis 'ep' of 3" \
    "$INITC" compile "$model" --mesh ep=3,tp=2 --shard tp -o "$WORK/prog-$tag-ep3"
  no_output "$WORK/prog-$tag-ep3"
  fails_cleanly "$tag: a rules file's 3 expert ranks for 4 experts" \
    "parameter 'model.layers.[0-9].mlp.experts.gate_up_proj': its 4 experts do not divide over mesh axis 'ep' of 3" \
    "$INITC" compile "$model" --mesh ep=3 --shard "$WORK/ep.json" -o "$WORK/prog-$tag-ep3"
  no_output "$WORK/prog-$tag-ep3"
}
