#include "mpi_world.h"

#include <mpi.h>

namespace initrt::init {

MpiWorld::MpiWorld() {
  int provided;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

int MpiWorld::minInt(int value) {
  int result;
  MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return result;
}

int MpiWorld::maxInt(int value) {
  int result;
  MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

std::vector<uint64_t> MpiWorld::gatherToRoot(const std::vector<uint64_t> &words) {
  // Every rank sends the same number of words (they follow from the program); the root's
  // buffer is sized in 64 bits, so no int offset limits the total.
  std::vector<uint64_t> all(myRank == 0 ? size_t(worldSize) * words.size() : 0);
  MPI_Gather(words.data(), int(words.size()), MPI_UINT64_T, all.data(), int(words.size()),
             MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return all;
}

std::vector<double> MpiWorld::gatherToRoot(const std::vector<double> &values) {
  std::vector<double> all(myRank == 0 ? size_t(worldSize) * values.size() : 0);
  MPI_Gather(values.data(), int(values.size()), MPI_DOUBLE, all.data(), int(values.size()),
             MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

void MpiWorld::broadcast(std::string &text) {
  uint64_t length = text.size();
  MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  text.resize(size_t(length));
  // Short texts (ids and paths): one call, an int count is plenty.
  MPI_Bcast(text.data(), int(length), MPI_CHAR, 0, MPI_COMM_WORLD);
}

void MpiWorld::abortJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

CpuShare MpiWorld::cpuShare() {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, myRank, MPI_INFO_NULL, &host);
  int self, hostSize;
  MPI_Comm_rank(host, &self);
  MPI_Comm_size(host, &hostSize);
  cpu_set_t mine = allowedCpus();
  std::vector<cpu_set_t> masks(static_cast<size_t>(hostSize));
  MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, masks.data(), int(sizeof mine), MPI_BYTE,
                host);
  MPI_Comm_free(&host);
  return shareCpus(masks, size_t(self));
}

} // namespace initrt::init
