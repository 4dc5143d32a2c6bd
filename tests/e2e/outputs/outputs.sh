#!/usr/bin/env bash
# Where initc writes: -o files are replaced atomically when they are regular files, written as
# they are when they are pipes (a rename would replace the pipe), followed when they are symbolic
# links; a program directory is replaced only when it holds a program and nothing else, and
# `-o prog/` is `-o prog`. Each refusal exits non-zero with one clear message and changes nothing.
source "$(dirname "$0")/../common.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"
"$INITC" import hf "$CONFIG" -o model.mlir
expected=$(sha256sum <model.mlir)

# A FIFO stays a FIFO, and its reader gets the whole IR.
mkfifo ir.fifo
cat ir.fifo >from_fifo.mlir &
reader=$!
"$INITC" import hf "$CONFIG" -o ir.fifo || fail "import into a FIFO"
wait $reader
[[ -p ir.fifo ]] || fail "the FIFO was replaced by a regular file"
[[ $(sha256sum <from_fifo.mlir) == "$expected" ]] || fail "the FIFO's reader got other bytes"
# compile --emit writes the same way.
cat ir.fifo >emitted.mlir &
reader=$!
"$INITC" compile model.mlir --emit=mlir --stage=input -o ir.fifo || fail "compile --emit into a FIFO"
wait $reader
[[ -p ir.fifo && -s emitted.mlir ]] || fail "compile --emit into a FIFO"

# A symbolic link stays a link; the file it names is written (and created when missing).
ln -s target.mlir link.mlir
"$INITC" import hf "$CONFIG" -o link.mlir || fail "import through a dangling link"
[[ -L link.mlir && $(sha256sum <target.mlir) == "$expected" ]] || fail "link not followed"
echo stale >target.mlir
"$INITC" import hf "$CONFIG" -o link.mlir || fail "import through a link"
[[ -L link.mlir && $(sha256sum <target.mlir) == "$expected" ]] || fail "link target not replaced"

# A name of 250 characters (legal) works: the temporary name stays within NAME_MAX.
long=$(printf 'm%.0s' $(seq 1 245)).mlir
"$INITC" import hf "$CONFIG" -o "$long" || fail "a 250-character -o"
[[ $(sha256sum <"$long") == "$expected" ]] || fail "the long-named output differs"

# Refusals.
cp "$CONFIG" config.json
fails_cleanly "-o is the input" "error: -o 'config.json' is the input file: choose another -o" \
  "$INITC" import hf config.json -o config.json
cmp -s config.json "$CONFIG" || fail "the input config was overwritten"
fails_cleanly "--emit -o is the input" "error: -o 'model.mlir' is the input file" \
  "$INITC" compile model.mlir --emit=mlir -o model.mlir
mkdir adir
fails_cleanly "-o a directory" "error: cannot write adir: it is a directory: name a file" \
  "$INITC" import hf "$CONFIG" -o adir
fails_cleanly "a 32-bit CPU" "error: target CPU 'i686' runs only 32-bit code" \
  "$INITC" compile model.mlir --target-cpu i686 -o p32
[[ ! -e p32 && -z $(ls -d p32.* 2>/dev/null) ]] || fail "a 32-bit CPU left a directory"
fails_cleanly "--stage without --emit=mlir" "error: --stage applies to --emit=mlir only" \
  "$INITC" compile model.mlir --stage=fused -o pstage
fails_cleanly "an unknown --stage with -o DIR" "error: unknown --stage 'bogus'" \
  "$INITC" compile model.mlir --stage=bogus -o pstage
[[ ! -e pstage ]] || fail "--stage refused but a program was written"

# Program directories: `prog/` is `prog`; a rerun replaces the program; anything else in the
# directory (a checkpoint written into it) stops the replacement.
"$INITC" compile model.mlir -o prog/ >compile.txt || fail "compile -o prog/"
grep -q "run it: mpirun -np 1 prog/init" compile.txt || fail "compile's hint: $(cat compile.txt)"
[[ -x prog/init && -f prog/program.json && -f prog/kernels.so ]] || fail "prog/ not written"
# Others may run the program as far as the umask allows (it was 0750 whatever the umask).
[[ $(stat -c %a prog) == "$(printf '%o' $((0777 & ~$(umask))))" ]] ||
  fail "prog/ has mode $(stat -c %a prog) under umask $(umask)"
# An interrupted compile's directories are removed by the next compile to the same -o, unless
# their process still runs.
dead=4000000
while kill -0 "$dead" 2>/dev/null; do dead=$((dead + 1)); done
mkdir -p "prog.tmp-$dead" "prog.old-$dead" "prog.tmp-$$"
"$INITC" compile model.mlir -o prog/ >/dev/null || fail "recompile -o prog/"
[[ $(ls -d prog.* 2>/dev/null) == "prog.tmp-$$" ]] || fail "leftovers: $(ls -d prog.* | tr '\n' ' ')"
rmdir "prog.tmp-$$"
prog/init --layout ranks --rank 0 --out prog/ckpt --quiet || fail "run"
fails_cleanly "replace a program holding a checkpoint" \
  "error: refusing to replace the program in 'prog': it also holds 'ckpt'" \
  "$INITC" compile model.mlir -o prog
[[ -f prog/ckpt/rank-00000-of-00001.safetensors && -x prog/init ]] || fail "the refused compile changed prog/"
mkdir other && touch other/notes.txt
fails_cleanly "replace a directory that is not a program" "it exists and is not a program directory" \
  "$INITC" compile model.mlir -o other/
[[ -f other/notes.txt ]] || fail "other/ was changed"
(cd other && fails_cleanly "-o ." "error: -o '.' contains the current directory" \
  "$INITC" compile ../model.mlir -o .) || exit 1
(cd prog && fails_cleanly "-o the parent of the working directory" "contains the current directory" \
  "$INITC" compile ../model.mlir -o "$WORK") || exit 1
[[ -f other/notes.txt && -f prog/ckpt/rank-00000-of-00001.safetensors ]] || fail "a refused -o changed files"

# Standard output that cannot be written (a full disk) is an error, whichever command prints.
prog/init --layout ranks --out ck --quiet || fail "run for verify"
for command in "inspect model.mlir" "inspect model.mlir --json" "verify ck" "--help" \
  "compile model.mlir --emit=mlir -o -"; do
  # shellcheck disable=SC2086
  fails_cleanly "initc $command >/dev/full" "^initc: error: cannot write to stdout: No space left on device" \
    bash -c '"$@" >/dev/full' _ "$INITC" $command
done
echo "PASS $TEST_NAME"
