//===- subcommands.h - initc's subcommands, as main runs them -------------===//
//
// Each subcommand's arguments, as the command line fills them, and its entry point, which returns
// the process's exit code (0, 1 for an error, 2 for a usage error).
//
//===----------------------------------------------------------------------===//
#ifndef INITC_TOOLS_INITC_SUBCOMMANDS_H
#define INITC_TOOLS_INITC_SUBCOMMANDS_H

#include <string>

namespace initc::driver {

struct ImportArgs {
  std::string config, output = "-", initStyle = "hf", dtype = "f32";
  std::string seed = "0"; // checked here: CLI11 saturates out-of-range integers
  std::string base;       // --load: a checkpoint whose tensors the model takes
};
int runImport(const ImportArgs &args);

struct InspectArgs {
  std::string model, mesh, shard;
  bool json = false;
};
int runInspect(const InspectArgs &args);

struct CompileArgs {
  std::string model, mesh, shard, output, emit, stage = "partitioned";
  std::string targetCpu; // default: the host architecture's variants (TargetArchitecture)
  std::string linker, runtime;
  bool timing = false, stageGiven = false, targetCpuGiven = false;
};
int runCompile(const CompileArgs &args);

/// assemble and verify, which initc-checkpoint defines: `args` (the command's name first, then
/// everything after it, --help included) go to it unparsed.
bool isCheckpointCommand(const char *name);
int runCheckpointCommand(int argc, char **args);

} // namespace initc::driver

#endif // INITC_TOOLS_INITC_SUBCOMMANDS_H
