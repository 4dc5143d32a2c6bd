#!/usr/bin/env bash
# A host that cannot run the program's kernels is told so before any runs: a program whose every
# variant needs what this CPU lacks (bdver1 and bdver2, AMD Bulldozer's FMA4 and XOP, which no
# later x86 CPU has) names the CPU and what each variant needs; a kernels.so whose ELF header says
# AArch64 (an AArch64 program's kernels given to x86-64's prog/init) names both architectures.
# One message each, exit code 1, never an illegal instruction; nothing written.
# (x86-64 kernels on an AArch64 host: the same check, by the unit test KernelArchitecture.)
source "$(dirname "$0")/../common.bash"
source "$(dirname "$0")/launch_checks.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"

[[ $(uname -m) == x86_64 ]] || fail "this test runs on x86-64 (it is $(uname -m))"
if grep -qwE "fma4|xop" /proc/cpuinfo; then
  echo "skipped: this CPU has FMA4 or XOP (an AMD Bulldozer), so bdver1/bdver2 kernels run here"
  exit 0
fi
CPU_NAME=$(grep -m1 "^model name" /proc/cpuinfo | sed 's/^[^:]*: *//; s/ *$//')
# What Bulldozer has that this CPU lacks: also SSE4a, which AMD's later CPUs keep and Intel's never had.
lacks="fma4 and xop"
grep -qw sse4a /proc/cpuinfo || lacks="sse4a, fma4 and xop"

"$INITC" import hf "$CONFIG" --dtype bf16 --seed 7 -o m.mlir
"$INITC" compile m.mlir --mesh dp=2 --shard fsdp --target-cpu bdver2,bdver1 -o old >/dev/null
"$INITC" compile m.mlir --mesh dp=2 --shard fsdp -o prog >/dev/null

# refused NAME TEXT CMD...: CMD exits with code 1, TEXT in its one message (one_message).
refused() {
  local name=$1 text=$2 rc=0
  shift 2
  "$@" >out.txt 2>err.txt || rc=$?
  one_message -F "$name" 1 "$rc" "$text"
}

needs="this CPU ($CPU_NAME (x86-64)) can run none of the program's kernel variants (bdver2, bdver1): bdver2 uses $lacks; bdver1 uses $lacks, which it lacks: recompile with --target-cpu=x86-64"
refused "no variant this CPU runs, one rank" "$needs" old/init --rank 0 --out bad
refused "no variant this CPU runs, a job of 2" "$needs" "${MPIRUN[@]}" -np 2 old/init --out bad
refused "a variant named that this CPU cannot run" \
  "the kernels for bdver1 use $lacks, which this CPU lacks ($CPU_NAME (x86-64))" \
  old/init --target-cpu bdver1 --rank 0 --out bad

# An AArch64 kernels.so: e_machine (bytes 18-19 of the ELF header) EM_AARCH64 = 183.
cp -r prog arm
printf '\267\000' | dd of=arm/kernels.so bs=1 seek=18 conv=notrunc status=none
arm_says="arm/kernels.so holds AArch64 code, and this machine ($CPU_NAME (x86-64)) runs x86-64: run the program on an AArch64 host"
refused "an AArch64 program's kernels on x86-64" "$arm_says" arm/init --rank 1 --out bad
refused "the same under mpirun" "$arm_says" "${MPIRUN[@]}" -np 2 arm/init --out bad
refused "the same with --target-cpu" "$arm_says" arm/init --target-cpu x86-64-v3 --rank 0 --out bad
echo "PASS $TEST_NAME"
