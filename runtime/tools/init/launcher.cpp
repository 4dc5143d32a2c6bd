#include "launcher.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

namespace initrt::init {
namespace {

const char *firstEnv(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (const char *value = std::getenv(name))
      return value;
  return nullptr;
}

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

// A decimal number and nothing else ("", "1x" and "-1" are not).
bool parseCount(const std::string &text, long &value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// A view from a rank variable and a size variable; false, with `error` said, if either is not a
// number or the rank is outside the size.
bool readView(const char *rankName, const char *sizeName, LauncherView &view, std::string &error) {
  view.variables = std::string(rankName) + "/" + sizeName;
  std::string rank = env(rankName), size = env(sizeName);
  if (!parseCount(rank, view.rank) || !parseCount(size, view.size) || view.size < 1) {
    error = std::string(rankName) + "=" + rank + " " + sizeName + "=" + size +
            " is not a rank and a number of ranks (0 <= rank < size): fix the launcher's "
            "environment";
    return false;
  }
  if (view.rank >= view.size) {
    error = std::string(rankName) + "=" + rank + " is outside " + sizeName + "=" + size +
            ": fix the launcher's environment";
    return false;
  }
  return true;
}

// The first host of a Slurm hostlist: "node[07-10,12],gpu1" is node07 (zero padding kept),
// "rack2-[3-4]n[1-2]" is rack2-3n1. Slurm starts task 0 on the first node of its step.
std::string firstSlurmHost(const std::string &list) {
  std::string host;
  for (size_t i = 0; i < list.size() && list[i] != ','; ++i) {
    if (list[i] != '[') {
      host += list[i];
      continue;
    }
    size_t end = list.find(']', i);
    if (end == std::string::npos)
      return "";
    size_t stop = list.find_first_of(",-]", i + 1);
    host += list.substr(i + 1, stop - i - 1);
    i = end;
  }
  return host;
}

bool slurmTask() { return std::getenv("SLURM_PROCID") && std::getenv("SLURM_STEP_NUM_TASKS"); }

// MPI's own launchers: mpirun/prterun (Open MPI), hydra (MPICH), mpirun_rsh (MVAPICH). Under
// them, Slurm's variables belong to the allocation (or to the daemons' step), not to this rank.
bool mpiLauncher() {
  return firstEnv({"OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"}) != nullptr;
}

// Any MPI start, srun's PMI and PMIx plugins included.
bool mpiStart() { return mpiLauncher() || firstEnv({"PMIX_RANK", "PMI_RANK", "PMI_SIZE"}); }

bool torchrunWorker() { return std::getenv("TORCHELASTIC_RUN_ID") != nullptr; }

bool envRanks() { return std::getenv("RANK") && std::getenv("WORLD_SIZE"); }

// Where rank 0 listens: $INITC_RENDEZVOUS (host:port) over the launcher's own.
bool pickEndpoint(Launch &launch, const std::string &host, const std::string &port,
                  const std::string &portFrom) {
  std::string override = env("INITC_RENDEZVOUS");
  std::string chosenHost = host, chosenPort = port;
  launch.portFrom = portFrom;
  if (!override.empty()) {
    size_t colon = override.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      launch.error = "INITC_RENDEZVOUS=" + override + " is not HOST:PORT (the host of rank 0 and "
                     "a free port there)";
      return false;
    }
    chosenHost = override.substr(0, colon);
    chosenPort = override.substr(colon + 1);
    launch.portFrom = "INITC_RENDEZVOUS";
  }
  long number = 0;
  if (!parseCount(chosenPort, number) || number < 1 || number > 65535) {
    launch.error = launch.portFrom + " gives the port '" + chosenPort +
                   "', not a TCP port (1-65535): fix it, or set INITC_RENDEZVOUS=HOST:PORT";
    return false;
  }
  if (chosenHost.empty()) {
    launch.error = "no host for rank 0 (" + launch.launcher +
                   " did not say it): set INITC_RENDEZVOUS=HOST:PORT to rank 0's host and a "
                   "free port there";
    return false;
  }
  launch.host = chosenHost;
  launch.port = int(number);
  return true;
}

Launch unjoinable(Launch &launch) {
  launch.canJoin = false;
  return launch;
}

} // namespace

Launch detectLaunch() {
  Launch launch;
  LauncherView view;
  if (torchrunWorker()) {
    // torchrun started this process; the srun or mpirun that started the agent, if any, is not
    // this process's launcher.
    launch.kind = Launch::Rendezvous;
    launch.launcher = "torchrun";
    if (!readView("RANK", "WORLD_SIZE", launch.self, launch.error))
      return unjoinable(launch);
    // With its own store on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE), the agent leaves the
    // next port to the workers.
    std::string port = env("MASTER_PORT");
    std::string from = "MASTER_PORT";
    long number = 0;
    if (env("TORCHELASTIC_USE_AGENT_STORE") == "True" && parseCount(port, number)) {
      port = std::to_string(number + 1);
      from = "MASTER_PORT+1 (torchrun's own store is on MASTER_PORT)";
    }
    launch.jobKey = "torchrun " + env("TORCHELASTIC_RUN_ID") + " restart " +
                    env("TORCHELASTIC_RESTART_COUNT") + " " + env("MASTER_ADDR") + ":" +
                    env("MASTER_PORT");
    if (!pickEndpoint(launch, env("MASTER_ADDR"), port, from))
      return unjoinable(launch);
    return launch;
  }
  if (mpiStart()) {
    launch.kind = Launch::Mpi;
    launch.launcher = mpiLauncher() ? "mpirun" : "srun";
    if (envRanks()) {
      if (!readView("RANK", "WORLD_SIZE", view, launch.error))
        return launch;
      launch.mustAgree.push_back(view);
    }
    if (!mpiLauncher() && slurmTask()) {
      if (!readView("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", view, launch.error))
        return launch;
      launch.mustAgree.push_back(view);
    }
    return launch;
  }
  if (slurmTask()) {
    launch.kind = Launch::Rendezvous;
    launch.launcher = "srun";
    if (!readView("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", launch.self, launch.error))
      return unjoinable(launch);
    // Checked once the ranks have met, so that one says it.
    std::string disagreement;
    if (envRanks()) {
      if (!readView("RANK", "WORLD_SIZE", view, disagreement))
        disagreement = "under srun, " + disagreement;
      else if (view.rank != launch.self.rank || view.size != launch.self.size)
        disagreement = "two launchers disagree: srun started this process as rank " +
                       std::to_string(launch.self.rank) + " of " +
                       std::to_string(launch.self.size) + " (SLURM_PROCID/SLURM_STEP_NUM_TASKS), "
                       "but RANK/WORLD_SIZE say rank " + std::to_string(view.rank) + " of " +
                       std::to_string(view.size) +
                       ": unset RANK and WORLD_SIZE (or set them to Slurm's values)";
    }
    std::string job = env("SLURM_JOB_ID"), step = env("SLURM_STEP_ID");
    launch.jobKey = "slurm " + job + "." + step;
    std::string nodes = env("SLURM_STEP_NODELIST");
    if (nodes.empty())
      nodes = env("SLURM_JOB_NODELIST");
    // A port that srun reserved for the step (--resv-ports) is this step's alone; else one
    // derived from the job and step, below the kernel's ephemeral ports.
    std::string reserved = env("SLURM_STEP_RESV_PORTS");
    bool placed = true;
    if (launch.self.size == 1) {
      // Alone in its step: no one to meet.
    } else if (!reserved.empty()) {
      placed = pickEndpoint(launch, firstSlurmHost(nodes),
                            reserved.substr(0, reserved.find_first_of("-,")),
                            "SLURM_STEP_RESV_PORTS");
    } else {
      long jobId = 0, stepId = 0;
      parseCount(job, jobId);
      parseCount(step, stepId);
      placed = pickEndpoint(launch, firstSlurmHost(nodes),
                            std::to_string(10000 + (jobId * 7 + stepId) % 20000),
                            "a port derived from SLURM_JOB_ID and SLURM_STEP_ID");
    }
    if (!placed)
      return unjoinable(launch);
    launch.error = disagreement;
    return launch;
  }
  if (envRanks()) {
    launch.kind = Launch::Rendezvous;
    launch.launcher = "the environment";
    if (!readView("RANK", "WORLD_SIZE", launch.self, launch.error))
      return unjoinable(launch);
    launch.jobKey = "env " + env("MASTER_ADDR") + ":" + env("MASTER_PORT");
    if (launch.self.size > 1 && env("INITC_RENDEZVOUS").empty() &&
        (env("MASTER_ADDR").empty() || env("MASTER_PORT").empty())) {
      launch.error = "RANK/WORLD_SIZE say rank " + std::to_string(launch.self.rank) + " of " +
                     std::to_string(launch.self.size) +
                     ", but MASTER_ADDR and MASTER_PORT (rank 0's host and a free port there, "
                     "where the ranks meet) are not both set: set them";
      return unjoinable(launch);
    }
    if (launch.self.size > 1 &&
        !pickEndpoint(launch, env("MASTER_ADDR"), env("MASTER_PORT"), "MASTER_PORT"))
      return unjoinable(launch);
    return launch;
  }
  return launch;
}

std::string launchLine(const std::string &launcher, long ranks, const std::string &program) {
  std::string n = std::to_string(ranks);
  if (launcher == "srun")
    return "srun -n " + n + " " + program + " --out DIR";
  if (launcher == "torchrun")
    return "torchrun --nproc-per-node " + n + " --no-python " + program + " --out DIR";
  if (launcher == "the environment")
    return "RANK=0.." + std::to_string(ranks - 1) + " WORLD_SIZE=" + n + " MASTER_ADDR=HOST "
           "MASTER_PORT=PORT " + program + " --out DIR";
  return "mpirun -np " + n + " " + program + " --out DIR";
}

bool startedByLauncher() {
  return mpiStart() || slurmTask() || torchrunWorker() || envRanks();
}

long launcherSize() {
  Launch launch = detectLaunch();
  switch (launch.kind) {
  case Launch::Alone:
    return 1;
  case Launch::Rendezvous:
    return launch.error.empty() ? launch.self.size : 0;
  case Launch::Mpi:
    break;
  }
  const char *value = firstEnv({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"});
  if (!value && !mpiLauncher())
    value = std::getenv("SLURM_STEP_NUM_TASKS");
  long size = 0;
  return value && parseCount(value, size) ? size : 0;
}

} // namespace initrt::init
