//===- assemble_verify.cpp - initc assemble, initc verify -----------------===//
//
// assemble and verify are the runtime's (initc-checkpoint, beside initc), so that a runtime-only
// build has them too: initc runs the tool in its place, as "initc", with every argument it was
// given, so that their options are defined once, `initc assemble --help` prints them, and their
// messages read as initc's.
//
//===----------------------------------------------------------------------===//
#include "subcommands.h"
#include "session.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace initc::driver {

bool isCheckpointCommand(const char *name) {
  return llvm::StringRef(name) == "assemble" || llvm::StringRef(name) == "verify";
}

int runCheckpointCommand(int argc, char **args) {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(tool, "initc-checkpoint");
  if (!llvm::sys::fs::can_execute(tool))
    return fail("the checkpoint tool '" + tool.str().str() +
                "' is missing: build the target initc-checkpoint, or reinstall initc");
  std::string name = "initc";
  std::vector<char *> argv = {name.data()};
  argv.insert(argv.end(), args, args + argc);
  argv.push_back(nullptr);
  llvm::outs().flush();
  std::fflush(stdout);
  ::execv(tool.c_str(), argv.data());
  return fail("cannot run " + tool.str().str() + ": " + std::strerror(errno));
}

} // namespace initc::driver
