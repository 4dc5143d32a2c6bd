// A program around the test kernels (testkernels.c), for any mesh of one or two axes.
#pragma once

#include "checkpoint/assemble.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/verify.h"
#include "initrt/base/checksum.h"
#include "initrt/base/program.h"
#include "initrt/base/program_io.h"

#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>

namespace initrt {
namespace testprog {

inline Param makeParam(const char *name, DType dtype, std::vector<int64_t> shape,
                       std::vector<std::vector<int>> splitAxes, const char *kernel) {
  Param param;
  param.name = name;
  param.dtype = dtype;
  param.shape = std::move(shape);
  param.splitAxes = std::move(splitAxes);
  param.kernel = kernel;
  return param;
}

/// Parameters covering every dtype, even and uneven splits, multi-axis splits, replication,
/// empty slices, a scalar, a buffer that is not persistent, and a tensor of several chunks.
inline Program makeProgram(const Mesh &mesh, const std::string &kernelsChecksum) {
  Program program;
  program.modelName = "runtime-test";
  program.seed = 1234;
  program.mesh = mesh;
  program.kernelsChecksum = kernelsChecksum;
  program.kernelVariants = {{"x86-64", ""}};
  std::ostringstream id;
  id << "runtime-test";
  for (size_t i = 0; i < mesh.shape.size(); ++i)
    id << "-" << mesh.axisNames[i] << mesh.shape[i];
  program.programId = id.str();
  bool twoAxes = mesh.shape.size() >= 2;
  std::vector<std::vector<int>> first = {{0}};
  program.params.push_back(makeParam("embed.weight", DType::F32, {10, 6}, first, "tk_f32_r2"));
  program.params.back().aliases = {"lm_head.weight"};
  program.params.push_back(makeParam("layer.w", DType::F32, {7, 5},
                                     twoAxes ? std::vector<std::vector<int>>{{0}, {1}} : first,
                                     "tk_f32_r2"));
  program.params.push_back(makeParam("layer.b", DType::BF16, {9},
                                     twoAxes ? std::vector<std::vector<int>>{{0, 1}} : first,
                                     "tk_bf16_r1"));
  program.params.push_back(makeParam("counts", DType::I64, {5, 3, 2},
                                     twoAxes ? std::vector<std::vector<int>>{{1}, {}, {0}}
                                             : std::vector<std::vector<int>>{{}, {0}},
                                     "tk_i64_r3"));
  program.params.push_back(makeParam("mask", DType::BOOL, {3, 4}, {}, "tk_bool_r2"));
  program.params.back().buffer = true;
  program.params.push_back(makeParam("scale", DType::F64, {}, {}, "tk_f64_r0"));
  program.params.push_back(makeParam("rope.inv_freq", DType::F32, {8}, first, "tk_f32_r1"));
  program.params.back().buffer = true;
  program.params.back().persistent = false;
  program.params.push_back(makeParam("big", DType::F32, {300, 1001},
                                     twoAxes ? std::vector<std::vector<int>>{{1}, {0}}
                                             : std::vector<std::vector<int>>{{}, {0}},
                                     "tk_f32_r2"));
  program.params.push_back(makeParam("empty", DType::F32, {0, 4}, first, "tk_f32_r2"));
  return program;
}

inline bool readFile(const std::string &path, std::string &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  bytes = text.str();
  return true;
}

/// Makes `dir` a program directory: kernels.so (a copy of `kernelsPath`) and program.json.
inline bool writeProgramDir(const std::string &dir, const Mesh &mesh,
                            const std::string &kernelsPath, std::string &error) {
  std::string kernels;
  if (!readFile(kernelsPath, kernels)) {
    error = "cannot read " + kernelsPath;
    return false;
  }
  ::mkdir(dir.c_str(), 0755);
  std::ofstream out(dir + "/kernels.so", std::ios::binary | std::ios::trunc);
  out.write(kernels.data(), std::streamsize(kernels.size()));
  out.close();
  if (!out) {
    error = "cannot write " + dir + "/kernels.so";
    return false;
  }
  Program program = makeProgram(mesh, checksumHex(kernels.data(), kernels.size()));
  return writeProgramJson(dir + "/program.json", program, error);
}

/// "dp=2,tp=2" -> a mesh.
inline bool parseMesh(const std::string &text, Mesh &mesh) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return false;
    mesh.axisNames.push_back(item.substr(0, eq));
    mesh.shape.push_back(std::stoll(item.substr(eq + 1)));
  }
  return !mesh.shape.empty();
}

} // namespace testprog
} // namespace initrt
