// What the launcher's environment says about this process, read before any World exists: which
// launcher started it (mpirun, srun, torchrun, or a plain RANK/WORLD_SIZE environment), as which
// rank of how many, and where the ranks of a launch without MPI meet.
#pragma once

#include <string>
#include <vector>

namespace initrt::init {

// One launcher's word on this process: rank `rank` of `size`, from the variables `variables`.
struct LauncherView {
  std::string variables; // "RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS"
  long rank = 0;
  long size = 1;
};

struct Launch {
  enum Kind { Alone, Mpi, Rendezvous } kind = Alone;
  // Who started the job, as messages name it: "mpirun", "srun", "torchrun", "the environment".
  std::string launcher;
  // Rendezvous: this process's place, and where rank 0 listens for the others.
  LauncherView self;
  std::string host;
  int port = 0;
  std::string portFrom; // which variable (or rule) gave the port, for messages
  // Tells this job's ranks from another job's that reach the same port.
  std::string jobKey;
  // Mpi: the other launchers' views of this process, which MPI's rank and size must match.
  std::vector<LauncherView> mustAgree;
  // The variables themselves contradict each other, or are not numbers: what is wrong. The job
  // stops with it, after joining the World that `kind` names (so that one rank says it) if
  // `canJoin`, else on each rank alone.
  std::string error;
  bool canJoin = true;
};

// The command that starts `ranks` ranks of `program` under `launcher` (a Launch::launcher), for
// messages: "mpirun -np 4 prog/init --out DIR".
std::string launchLine(const std::string &launcher, long ranks, const std::string &program);

// Reads the environment. Whoever started this process directly wins: torchrun's agent
// (TORCHELASTIC_RUN_ID) over the srun or mpirun that started the agent, MPI's launcher over a
// Slurm allocation it runs in; what remains must agree.
Launch detectLaunch();

// Whether a launcher (mpirun, srun, torchrun, hydra) started this process as part of a job.
bool startedByLauncher();

// The number of processes the launcher started: 1 without a launcher, 0 when a launcher did
// not say (MPI then tells).
long launcherSize();

} // namespace initrt::init
