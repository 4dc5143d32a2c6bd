// What prog/init was asked to do (its command line, main.cpp) and how it ends.
#pragma once

#include "initrt/base/hf_plan.h"

#include <cstdint>
#include <string>

namespace initrt::init {

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

struct Options {
  std::string out;
  std::string layout = "hf"; // a checkpointLayout() name
  uint64_t maxShardBytes = 5000000000ull; // --max-shard-size, save_pretrained's "5GB"
  initrt::HfExperts hfExperts = initrt::HfExperts::PerExpert; // --hf-experts
  bool hfExpertsGiven = false; // else defaultHfExperts of the program
  std::string programDir;
  int64_t rank = -1;
  int threads = 0;
  std::string targetCpu; // the kernel variant to run; empty: the best this CPU supports
  bool overwrite = false;
  bool discard = false;
  bool quiet = false;
};

// The name this process was started as (argv[0] without its directory): every message's prefix.
extern std::string programName;

} // namespace initrt::init
