// The processes of one job, as prog/init sees them: its rank, its size, and the few collectives
// the run needs. Each way of starting the job is one implementation: SoloWorld below, MpiWorld
// (mpi_world.h), and RendezvousWorld (rendezvous_world.h) for a launcher without MPI (srun,
// torchrun, a RANK/WORLD_SIZE environment); main.cpp picks one by what launcher.h reads.
#pragma once

#include "executor/executor.h"

#include <cstdint>
#include <string>
#include <vector>

#include <sched.h>

namespace initrt::init {

// Without a launcher (a single rank, or --rank K) every collective is the identity.
class World {
public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int minInt(int value) = 0;
  virtual int maxInt(int value) = 0;
  // Rank 0 gets every rank's `words` (all ranks pass the same length), in rank order; the others
  // get nothing.
  virtual std::vector<uint64_t> gatherToRoot(const std::vector<uint64_t> &words) = 0;
  virtual std::vector<double> gatherToRoot(const std::vector<double> &values) = 0;
  // Every rank gets rank 0's `text`.
  virtual void broadcast(std::string &text) = 0;
  // Ends the whole job after an unexpected error, when the other ranks cannot be told otherwise.
  virtual void abortJob(int code);
  // The threads this rank starts without --threads: its share of the CPUs it may run on with the
  // other ranks of its host. Collective.
  virtual CpuShare cpuShare();

protected:
  // This process's affinity mask; empty if it cannot be read.
  static cpu_set_t allowedCpus();
};

// One process alone.
class SoloWorld : public World {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int minInt(int value) override { return value; }
  int maxInt(int value) override { return value; }
  std::vector<uint64_t> gatherToRoot(const std::vector<uint64_t> &words) override {
    return words;
  }
  std::vector<double> gatherToRoot(const std::vector<double> &values) override { return values; }
  void broadcast(std::string &) override {}
};

} // namespace initrt::init
