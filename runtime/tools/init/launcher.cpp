#include "launcher.h"

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

} // namespace

bool startedByLauncher() {
  return firstEnv({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                   "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"}) != nullptr;
}

long launcherSize() {
  const char *value = firstEnv({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  return value ? std::atol(value) : startedByLauncher() ? 0 : 1;
}

} // namespace initrt::init
