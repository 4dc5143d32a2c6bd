// The World of a job that a launcher without MPI started (torchrun, srun --mpi=none, or any
// launcher that sets RANK/WORLD_SIZE): the ranks meet over TCP at rank 0, which listens where the
// launcher says (launcher.h), and every collective goes through rank 0. Nothing on disk is
// shared, so ranks on node-local disks (the dcp layout) finish one job as under MPI.
//
// A rank that ends before the job does (a crash, a kill) closes its connection: rank 0 names it
// (rank, host) and stops the others; the others name rank 0 if it is the one that went. TCP
// keepalive finds a host that vanished without closing anything.
#pragma once

#include "launcher.h"
#include "world.h"

#include <memory>
#include <string>
#include <vector>

namespace initrt::init {

class RendezvousWorld : public World {
public:
  // Meets the other ranks of `launch` (a Launch::Rendezvous). Null, with `error` said and
  // `code` the exit code, if they did not all arrive in time ($INITC_RENDEZVOUS_TIMEOUT
  // seconds, default 300) or do not describe one job.
  static std::unique_ptr<RendezvousWorld> join(const Launch &launch, std::string &error,
                                               int &code);
  ~RendezvousWorld() override;

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
  RendezvousWorld(int rank, int size) : myRank(rank), worldSize(size) {}
  // Rank 0 gets every rank's `bytes` in rank order; the others get nothing.
  std::vector<std::string> gather(const std::string &bytes);
  // Every rank gets rank 0's `bytes`.
  std::string spread(const std::string &bytes);
  int reduceInt(int value, bool maximum);
  // A peer is gone: says who, tells the others to stop (rank 0), and ends this process.
  [[noreturn]] void peerLost(int peer, const std::string &why);

  int myRank;
  int worldSize;
  // Rank 0: one socket per rank (its own entry -1), and each rank's host. Others: [0] is rank 0.
  std::vector<int> sockets;
  std::vector<std::string> hosts;
};

} // namespace initrt::init
