#!/usr/bin/env bash
# prog/init under a real Slurm on this machine: the test starts munged, slurmctld and slurmd
# itself (as root, a slurm.conf of one node in a scratch directory, free ports) and runs
# `srun -n 4 prog/init`: with no MPI plugin (the ranks meet over TCP at the step's first node),
# with --mpi=none and --layout dcp, and with --mpi=pmix (MPI over Slurm's PMIx) when Slurm has
# it. Each checkpoint is bytewise mpirun's. Then what goes wrong: a step of the wrong size, a
# RANK/WORLD_SIZE left in the environment that contradicts Slurm's, a task that never starts
# prog/init: one message each, exit code 2 or 1.
#
# Needs root (slurmd runs the tasks as their user) and Debian's slurm-wlm and munge, which
# scripts/setup.sh installs. Skipped, saying why, only if the daemons cannot start on this
# machine.
source "$(dirname "$0")/../common.bash"
source "$(dirname "$0")/launch_checks.bash"
cd "$WORK"
CONFIG="$ROOT/tests/e2e/configs/llama_uneven.json"

for tool in munged slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null || fail "$tool is missing: scripts/setup.sh installs slurm-wlm and munge"
done
(($(id -u) == 0)) || fail "needs root: slurmd starts the tasks as their user"
# An allocation this test runs in must not leak into the one it makes.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(SLURM_|SRUN_|SBATCH_|SALLOC_)')
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT INITC_RENDEZVOUS

NODE=$(hostname -s)
DAEMON_PIDS=()
cleanup() {
  local pid
  for pid in "${DAEMON_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [[ -s $WORK/munge/pid ]] && kill "$(cat "$WORK/munge/pid")" 2>/dev/null || true
  for pid in "${DAEMON_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# skip WHY: the machine cannot run Slurm's daemons; the logs say what they met.
skip() {
  echo "skipped: $* (this machine's limits, not initc's)"
  tail -n 5 "$WORK"/*.log "$WORK"/munge/log 2>/dev/null | sed 's/^/    /'
  exit 0
}

read -r CTLD_PORT SLURMD_PORT < <("$PYTHON" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*(x.getsockname()[1] for x in s))')

mkdir -m 700 munge state spool
mungekey -c -k munge/munge.key 2>/dev/null || dd if=/dev/urandom of=munge/munge.key bs=1024 count=1 status=none
chmod 600 munge/munge.key
# --force: munged refuses root (and a key under /tmp) without it.
munged --force -S "$WORK/munge/socket" --key-file="$WORK/munge/munge.key" \
  --pid-file="$WORK/munge/pid" --log-file="$WORK/munge/log" --seed-file="$WORK/munge/seed" ||
  skip "munged did not start"

# One node of 8 CPUs whatever the hardware (config_overrides), so that 4 tasks fit on 2 cores.
cat >slurm.conf <<EOF
ClusterName=initc-test
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$NODE CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$WORK/slurm.conf
slurmctld -D -f "$SLURM_CONF" >ctld.out 2>&1 &
DAEMON_PIDS+=($!)
slurmd -D -N "$NODE" -f "$SLURM_CONF" >slurmd.out 2>&1 &
DAEMON_PIDS+=($!)
up=0
for _ in $(seq 150); do
  [[ $(sinfo -h -n "$NODE" -o %t 2>/dev/null) == idle ]] && { up=1; break; }
  for pid in "${DAEMON_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || skip "a Slurm daemon exited: $(tail -n 3 ctld.out slurmd.out | tr '\n' ' ')"; done
  sleep 0.2
done
((up)) || skip "the node did not become idle within 30 s"
echo "ok slurmctld and slurmd up ($NODE, ports $CTLD_PORT, $SLURMD_PORT)"

"$INITC" import hf "$CONFIG" --dtype bf16 --seed 7 -o m.mlir
"$INITC" compile m.mlir --mesh dp=2,tp=2 --shard fsdp+tp -o prog >/dev/null
"${MPIRUN[@]}" -np 4 prog/init --out ref --quiet || fail "mpirun reference run"
"${MPIRUN[@]}" -np 4 prog/init --layout dcp --out ref-dcp --quiet || fail "mpirun dcp reference run"


SRUN=(timeout 300 srun --quiet)
"${SRUN[@]}" -n 4 prog/init --out plain --quiet || fail "srun -n 4"
same_as ref plain "srun -n 4 (no MPI plugin)"
"${SRUN[@]}" -n 4 --mpi=none prog/init --layout dcp --out none-dcp --quiet || fail "srun --mpi=none dcp"
same_as ref-dcp none-dcp "srun -n 4 --mpi=none --layout dcp"
if srun --mpi=list 2>&1 | grep -qw pmix; then
  "${SRUN[@]}" -n 4 --mpi=pmix prog/init --out pmix --quiet || fail "srun --mpi=pmix"
  same_as ref pmix "srun -n 4 --mpi=pmix (MPI over PMIx)"
else
  echo "no pmix plugin in this Slurm: srun --mpi=pmix not run"
fi

# expect_error NAME CODE PATTERN CMD...: CMD fails as one_message says.
expect_error() {
  local name=$1 code=$2 pattern=$3 rc=0
  shift 3
  "$@" >out.txt 2>err.txt || rc=$?
  one_message "$name" "$code" "$rc" "$pattern"
}
# srun's own exit code is the tasks' highest.
expect_error "a step of 2 tasks for a mesh of 4" 2 \
  "the mesh dp=2,tp=2 has 4 devices but srun started 2 ranks: run srun -n 4 .*prog/init --out DIR" \
  "${SRUN[@]}" -n 2 prog/init --out bad
expect_error "RANK/WORLD_SIZE that contradict Slurm's" 2 \
  "two launchers disagree: srun started this process as rank 0 of 4 \(SLURM_PROCID/SLURM_STEP_NUM_TASKS\), but RANK/WORLD_SIZE say rank 1 of 4" \
  env RANK=1 WORLD_SIZE=4 "${SRUN[@]}" -n 4 prog/init --out bad
if srun --mpi=list 2>&1 | grep -qw pmix; then
  expect_error "RANK/WORLD_SIZE that contradict MPI's under srun --mpi=pmix" 2 \
    "two launchers disagree: MPI \(srun\) started this process as rank 0 of 4, but RANK/WORLD_SIZE say rank 1 of 4" \
    env RANK=1 WORLD_SIZE=4 "${SRUN[@]}" -n 4 --mpi=pmix prog/init --out bad
fi
# Task 2 ends before it runs prog/init: rank 0 names it when its wait ends.
expect_error "a task that never starts prog/init" 1 \
  "rank 0 \($NODE, started by srun\) waited 5 s at port [0-9]+ for 1 of the 4 ranks \(2\)" \
  env INITC_RENDEZVOUS_TIMEOUT=5 "${SRUN[@]}" -n 4 bash -c \
  '[[ $SLURM_PROCID == 2 ]] && exit 1; exec prog/init --out bad'
echo "PASS $TEST_NAME"
