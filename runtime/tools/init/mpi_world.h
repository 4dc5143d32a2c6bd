// The World of a job that mpirun (or srun, hydra) started: MPI_COMM_WORLD. The only part of
// prog/init that uses MPI; the runtime library (initrt) never does.
#pragma once

#include "world.h"

namespace initrt::init {

// Joins MPI on construction (MPI_THREAD_FUNNELED: only this thread calls MPI) and leaves it on
// destruction.
class MpiWorld : public World {
public:
  MpiWorld();
  ~MpiWorld() override;
  int rank() const override { return myRank; }
  int size() const override { return worldSize; }
  int minInt(int value) override;
  int maxInt(int value) override;
  std::vector<uint64_t> gatherToRoot(const std::vector<uint64_t> &words) override;
  std::vector<double> gatherToRoot(const std::vector<double> &values) override;
  void broadcast(std::string &text) override;
  void abortJob(int code) override;
  CpuShare cpuShare() override;

private:
  int myRank = 0;
  int worldSize = 1;
};

} // namespace initrt::init
