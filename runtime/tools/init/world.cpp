#include "world.h"

#include <cstdlib>

namespace initrt::init {

void World::abortJob(int code) { std::exit(code); }

CpuShare World::cpuShare() { return shareCpus({allowedCpus()}, 0); }

cpu_set_t World::allowedCpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0)
    CPU_ZERO(&mask);
  return mask;
}

} // namespace initrt::init
