// The checkpoint tests' shared fixture: a program around the test kernels, written as prog/init
// writes it, and helpers to read, damage and list what is on disk.
#pragma once

#include "checkpoint/assemble.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/index.h"
#include "checkpoint/output_dir.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/verify.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/safetensors.h"
#include "testprogram.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


using namespace initrt;

// Named, not anonymous: gtest needs one CheckpointTest class across the test files.
namespace initrt::checkpoint_tests {

inline std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  DIR *listing = opendir(dir.c_str());
  if (!listing)
    return names;
  while (dirent *entry = readdir(listing))
    if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
      names.emplace_back(entry->d_name);
  closedir(listing);
  std::sort(names.begin(), names.end());
  return names;
}

inline bool anyHiddenFile(const std::string &dir) {
  for (const std::string &name : listDir(dir))
    if (name[0] == '.')
      return true;
  return false;
}

inline Param makeParam(const std::string &name, DType dtype, std::vector<int64_t> shape,
                std::vector<std::vector<int>> splitAxes) {
  Param param;
  param.name = name;
  param.dtype = dtype;
  param.shape = std::move(shape);
  param.splitAxes = std::move(splitAxes);
  param.kernel = "k_" + name;
  return param;
}

/// Global tensor bytes: element i holds a value derived from (param, i) so that misplaced
/// bytes show.
inline std::vector<char> globalBytes(const Param &param, size_t which) {
  int64_t elementBytes = dtypeBytes(param.dtype);
  std::vector<char> bytes(size_t(param.numElements() * elementBytes));
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = char((i * 37 + which * 101 + i / 7) & 0xff);
  return bytes;
}

/// The rank's slice of a global row-major tensor, copied out element by element.
inline std::vector<char> localBytes(const Param &param, const std::vector<char> &global,
                             const Slice &slice) {
  int64_t elementBytes = dtypeBytes(param.dtype);
  std::vector<char> out(size_t(slice.numElements() * elementBytes));
  size_t rank = param.shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t local = 0; local < slice.numElements(); ++local) {
    int64_t globalIndex = 0;
    for (size_t d = 0; d < rank; ++d)
      globalIndex = globalIndex * param.shape[d] + slice.offset[d] + index[d];
    std::memcpy(out.data() + local * elementBytes, global.data() + globalIndex * elementBytes,
                size_t(elementBytes));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < slice.shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-checkpoint-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root = pattern;
    dir = root + "/ckpt";
  }
  void TearDown() override {
    std::string command = "rm -rf '" + root + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }

  /// tp=2: a row-split weight with an alias, a replicated bias, a column-split bf16 table, a
  /// tensor whose second slice is empty, a scalar, and a non-persistent buffer.
  static Program tinyProgram() {
    Program program;
    program.modelName = "tiny";
    program.seed = 1234;
    program.mesh.axisNames = {"tp"};
    program.mesh.shape = {2};
    program.programId = "0123456789abcdef";
    program.params.push_back(makeParam("w", DType::F32, {5, 3}, {{0}}));
    program.params.back().aliases = {"w_tied"};
    program.params.push_back(makeParam("b", DType::F32, {3}, {}));
    program.params.push_back(makeParam("emb", DType::BF16, {4, 6}, {{}, {0}}));
    program.params.push_back(makeParam("z", DType::F32, {1, 2}, {{0}}));
    program.params.push_back(makeParam("s", DType::F64, {}, {}));
    program.params.push_back(makeParam("rope", DType::F32, {4}, {}));
    program.params.back().buffer = true;
    program.params.back().persistent = false;
    return program;
  }

  /// A 2x3 mesh with ragged splits over both axes and a dim split over two axes.
  static Program gridProgram() {
    Program program;
    program.modelName = "grid";
    program.mesh.axisNames = {"dp", "tp"};
    program.mesh.shape = {2, 3};
    program.programId = "fedcba9876543210";
    program.params.push_back(makeParam("cube", DType::F32, {5, 4, 7}, {{0}, {}, {1}}));
    program.params.push_back(makeParam("flat", DType::F16, {3, 13}, {{}, {1, 0}}));
    program.params.push_back(makeParam("rows", DType::I64, {7, 2}, {{0, 1}}));
    // A dim of 0 before a sharded one: no bytes, and rows of 0 bytes.
    program.params.push_back(makeParam("none", DType::F32, {4, 0, 3}, {{0}, {}, {1}}));
    return program;
  }

  /// Writes every rank's shard file and index.json; returns the global tensors.
  std::vector<std::vector<char>> writeAll(const Program &program, bool overwrite = false) {
    std::vector<std::vector<char>> globals;
    for (size_t i = 0; i < program.params.size(); ++i)
      globals.push_back(globalBytes(program.params[i], i));
    std::string error;
    EXPECT_TRUE(checkOutputDir(dir, program, overwrite, error)) << error;
    int64_t world = program.mesh.size();
    checksums.assign(size_t(world), {});
    for (int64_t rank = 0; rank < world; ++rank) {
      std::vector<ShardTensor> tensors = writeShard(program, rank, globals);
      EXPECT_TRUE(shardIsComplete(dir, program, rank, checksums[rank]));
      for (size_t i = 0; i < program.params.size(); ++i)
        EXPECT_EQ(checksums[rank][i],
                  program.params[i].persistent ? tensors[i].checksum : std::string())
            << program.params[i].name;
    }
    std::vector<RankReport> reports;
    for (const std::vector<std::string> &mine : checksums)
      reports.push_back(makeRankReport(program, mine));
    EXPECT_TRUE(writeIndex(dir, program, reports, error)) << error;
    return globals;
  }

  /// Writes rank `rank`'s shard file of the given global tensors; returns its tensors.
  std::vector<ShardTensor> writeShard(const Program &program, int64_t rank,
                                      const std::vector<std::vector<char>> &globals) {
    locals.clear();
    std::vector<ShardTensor> tensors;
    for (size_t i = 0; i < program.params.size(); ++i) {
      ShardTensor tensor;
      tensor.param = &program.params[i];
      tensor.slice = sliceForRank(program.mesh, program.params[i], rank);
      locals.push_back(localBytes(program.params[i], globals[i], tensor.slice));
      tensors.push_back(tensor);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      tensors[i].data = locals[i].data();
      tensors[i].bytes = locals[i].size();
      tensors[i].checksum = checksumHex(locals[i].data(), locals[i].size());
    }
    std::string error;
    EXPECT_TRUE(writeShardFile(dir, program, rank, tensors, error)) << error;
    return tensors;
  }

  /// Rewrites rank `rank`'s shard file with param `which` filled with `fill`: a file valid in
  /// itself, but not the one the job wrote.
  void replaceShard(const Program &program, int64_t rank, size_t which, char fill) {
    std::vector<std::vector<char>> globals;
    for (size_t i = 0; i < program.params.size(); ++i)
      globals.push_back(globalBytes(program.params[i], i));
    std::fill(globals[which].begin(), globals[which].end(), fill);
    writeShard(program, rank, globals);
  }

  nlohmann::ordered_json readIndexOrdered() const {
    std::ifstream in(dir + "/index.json");
    return nlohmann::ordered_json::parse(in);
  }

  /// Writes `index` as index.json with its "checksum" made to match: an index written so, not
  /// an edited one (to reach the checks behind the checksum).
  void writeSealedIndex(nlohmann::ordered_json index) const {
    index.erase("checksum");
    std::string text = index.dump();
    index["checksum"] = checksumHex(text.data(), text.size());
    std::ofstream(dir + "/index.json") << index.dump();
  }

  nlohmann::json readIndexJson() const {
    std::ifstream in(dir + "/index.json");
    return nlohmann::json::parse(in);
  }

  std::string shardPath(int64_t rank, int64_t world) const {
    return dir + "/" + shardFileName(rank, world);
  }

  std::string root, dir;
  std::vector<std::vector<std::string>> checksums; // per rank, per param, from writeAll
  std::vector<std::vector<char>> locals;            // the last shard's tensors, by writeShard
};

inline uint64_t storedBytes(const Program &program, bool replicas) {
  uint64_t bytes = 0;
  for (const Param &param : program.params) {
    if (!param.persistent)
      continue;
    if (!replicas)
      bytes += param.numElements() * dtypeBytes(param.dtype);
    else
      for (int64_t rank = 0; rank < program.mesh.size(); ++rank)
        bytes += sliceForRank(program.mesh, param, rank).numElements() * dtypeBytes(param.dtype);
  }
  return bytes;
}

/// Records a ProgressFn's calls: `done` never goes back, `total` never changes.
struct ProgressLog {
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  ProgressFn fn() {
    return [this](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  }
  void expectSteadyTo(uint64_t total) const {
    ASSERT_FALSE(calls.empty());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, total) << "call " << i;
      EXPECT_LE(calls[i].first, total) << "call " << i;
      if (i)
        EXPECT_GE(calls[i].first, calls[i - 1].first) << "call " << i;
    }
    EXPECT_EQ(calls.back().first, total);
  }
};

/// Flips `mask`'s bits in byte `offset` of tensor `tensor`'s data in the shard file at `path`.
inline void flipBits(const std::string &path, const std::string &tensor, uint64_t offset, char mask) {
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(path, error)) << error;
  ASSERT_NE(shard.find(tensor), nullptr) << tensor;
  uint64_t position = shard.dataStart() + shard.find(tensor)->begin + offset;
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(std::streamoff(position));
  char byte = char(file.get());
  file.seekp(std::streamoff(position));
  file.put(char(byte ^ mask));
}

} // namespace initrt::checkpoint_tests

using namespace initrt::checkpoint_tests;
