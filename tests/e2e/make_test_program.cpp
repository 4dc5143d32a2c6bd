// Test driver for tests/e2e/meshes/runtime_meshes.sh, over the runtime library alone:
//   initrt-testprog make DIR MESH KERNELS_SO   a program directory around the test kernels
//                                              for MESH ("dp=2,tp=2")
//   initrt-testprog assemble CKPT OUT          assembleCheckpoint
//   initrt-testprog verify CKPT                verifyCheckpoint, one line per problem
#include "testprogram.h"

#include <cstdio>
#include <cstring>

namespace {

int usage() {
  std::fprintf(stderr, "usage: initrt-testprog make DIR MESH KERNELS_SO  (MESH like dp=2,tp=2)\n"
                       "       initrt-testprog assemble CKPT OUT\n"
                       "       initrt-testprog verify CKPT\n");
  return 2;
}

int fail(const std::string &error) {
  std::fprintf(stderr, "initrt-testprog: %s\n", error.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string command = argv[1];
  std::string error;
  if (command == "make" && argc == 5) {
    initrt::Mesh mesh;
    bool parsed = false;
    try {
      parsed = initrt::testprog::parseMesh(argv[3], mesh);
    } catch (const std::exception &) {
    }
    if (!parsed)
      return fail(std::string("bad mesh '") + argv[3] + "', expected e.g. dp=2,tp=2");
    if (!initrt::testprog::writeProgramDir(argv[2], mesh, argv[4], error))
      return fail(error);
    return 0;
  }
  if (command == "assemble" && argc == 4)
    return initrt::assembleCheckpoint(argv[2], argv[3], error) ? 0 : fail(error);
  if (command == "verify" && argc == 3) {
    std::vector<std::string> problems;
    if (!initrt::verifyCheckpoint(argv[2], problems, error))
      return fail(error.empty() ? std::to_string(problems.size()) + " problems" : error);
    for (const std::string &problem : problems)
      std::fprintf(stderr, "%s\n", problem.c_str());
    return problems.empty() ? 0 : 1;
  }
  return usage();
}
