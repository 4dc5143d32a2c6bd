//===- assemble_verify.cpp - initc assemble, initc verify -----------------===//
//
// assemble and verify are the runtime's (initc-checkpoint, beside initc), so that a runtime-only
// build has them too: initc runs the tool in its place, as "initc", so its messages read as
// initc's.
//
//===----------------------------------------------------------------------===//
#include "subcommands.h"
#include "session.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace initc::driver {

namespace {

int runCheckpointTool(std::vector<std::string> args) {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(tool, "initc-checkpoint");
  if (!llvm::sys::fs::can_execute(tool))
    return fail("the checkpoint tool '" + tool.str().str() +
                "' is missing: build the target initc-checkpoint, or reinstall initc");
  args.insert(args.begin(), "initc");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  llvm::outs().flush();
  std::fflush(stdout);
  ::execv(tool.c_str(), argv.data());
  return fail("cannot run " + tool.str().str() + ": " + std::strerror(errno));
}

} // namespace

int runAssemble(const std::string &ckptDir, const std::string &out,
                const std::string &maxShardSize) {
  std::vector<std::string> args = {"assemble", "-o", out};
  if (!maxShardSize.empty())
    args.insert(args.end(), {"--max-shard-size", maxShardSize});
  args.insert(args.end(), {"--", ckptDir});
  return runCheckpointTool(args);
}

int runVerify(const std::string &ckptDir, int threads) {
  std::vector<std::string> args = {"verify"};
  if (threads)
    args.insert(args.end(), {"--threads", std::to_string(threads)});
  args.insert(args.end(), {"--", ckptDir});
  return runCheckpointTool(args);
}

} // namespace initc::driver
