#!/usr/bin/env bash
# The hf layout's write speed against dd, side by side in one run on one file system, and the
# hf writer's system calls per GiB for one rank of Llama-3.1-405B on dp=512,tp=32.
#
#   BUILD_DIR=build benchmarks/hf_write.sh WORK_DIR [CONFIG]
#
# WORK_DIR (on the file system to measure) gets the programs and the checkpoints; CONFIG is a
# Hugging Face config.json (default: benchmarks/configs/tinyllama-1.1b.json, 2.2 GB in bf16),
# written by 2 ranks (tp=2). dd writes the same number of bytes with conv=fsync, as prog/init
# syncs its files. Build the targets initc, init and initc-hf-write-calls first.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
WORK=${1:?usage: hf_write.sh WORK_DIR [CONFIG]}
CONFIG=${2:-$ROOT/benchmarks/configs/tinyllama-1.1b.json}
INITC="$BUILD_DIR/bin/initc"
mkdir -p "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
now() { date +%s.%N; }

"$INITC" import hf "$CONFIG" --dtype bf16 --seed 7 -o "$WORK/model.mlir"
"$INITC" compile "$WORK/model.mlir" --mesh tp=2 --shard tp -o "$WORK/prog" >/dev/null

rm -rf "$WORK/hf" "$WORK/dd.bin"
start=$(now)
mpirun --oversubscribe --bind-to none -np 2 "$WORK/prog/init" --out "$WORK/hf" --quiet
hf_seconds=$(echo "$(now) - $start" | bc)
bytes=$(cat "$WORK"/hf/model-*.safetensors | wc -c)
rm -rf "$WORK/hf"
start=$(now)
dd if=/dev/zero of="$WORK/dd.bin" bs=4M count=$(((bytes + 4194303) / 4194304)) conv=fsync status=none
dd_seconds=$(echo "$(now) - $start" | bc)
rm -f "$WORK/dd.bin"
printf '%-34s %10s %9s %9s\n' "" "bytes" "seconds" "GB/s"
printf '%-34s %10d %9.3f %9.3f\n' "prog/init --layout hf, 2 ranks" "$bytes" "$hf_seconds" \
  "$(echo "$bytes / $hf_seconds / 1000000000" | bc -l)"
printf '%-34s %10d %9.3f %9.3f\n' "dd conv=fsync" "$bytes" "$dd_seconds" \
  "$(echo "$bytes / $dd_seconds / 1000000000" | bc -l)"
printf 'hf / dd throughput: %.2fx (computing the values included)\n' \
  "$(echo "$dd_seconds / $hf_seconds" | bc -l)"

# System calls per GiB: from the plan and writeBoxes, no value computed.
"$INITC" import hf "$ROOT/benchmarks/configs/llama-3.1-405b.json" --dtype bf16 -o "$WORK/l405.mlir"
"$INITC" compile "$WORK/l405.mlir" --mesh dp=512,tp=32 --shard fsdp+tp -o "$WORK/p405" >/dev/null
"$BUILD_DIR/bin/initc-hf-write-calls" "$WORK/p405" --rank 12345
