#!/usr/bin/env bash
# The time and peak memory of `initc-capture --hf` on a 70B-class config (Llama-3-70B shapes by
# default): nothing is allocated but metadata, so both are independent of the parameter bytes.
#
#   benchmarks/capture_hf.sh WORK_DIR [CONFIG]
#
# Runs in the pinned venv (python/venv.sh, which installs initc from this checkout).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK=${1:?usage: capture_hf.sh WORK_DIR [CONFIG]}
CONFIG=${2:-$ROOT/benchmarks/configs/llama-3-70b.json}
VENV=$(bash "$ROOT/python/venv.sh")
mkdir -p "$WORK"
/usr/bin/time -f "initc-capture --hf $(basename "$CONFIG"): %e s wall, %U s user, %M KB max RSS" \
  "$VENV/bin/initc-capture" --hf "$CONFIG" -o "$WORK/captured.mlir" 2>&1 >/dev/null |
  grep -v '^\[transformers\]'
echo "$(grep -c 'init.param' "$WORK/captured.mlir") parameters in $WORK/captured.mlir"
