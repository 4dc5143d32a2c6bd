// The checkpoint directory: shard files, index.json, assemble, verify, resumability.
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

namespace {

std::vector<std::string> listDir(const std::string &dir) {
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

bool anyHiddenFile(const std::string &dir) {
  for (const std::string &name : listDir(dir))
    if (name[0] == '.')
      return true;
  return false;
}

Param makeParam(const std::string &name, DType dtype, std::vector<int64_t> shape,
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
std::vector<char> globalBytes(const Param &param, size_t which) {
  int64_t elementBytes = dtypeBytes(param.dtype);
  std::vector<char> bytes(size_t(param.numElements() * elementBytes));
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = char((i * 37 + which * 101 + i / 7) & 0xff);
  return bytes;
}

/// The rank's slice of a global row-major tensor, copied out element by element.
std::vector<char> localBytes(const Param &param, const std::vector<char> &global,
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

TEST(ShardFileName, IsZeroPadded) {
  EXPECT_EQ(shardFileName(3, 4), "rank-00003-of-00004.safetensors");
  EXPECT_EQ(shardFileName(12345, 131072), "rank-12345-of-131072.safetensors");
}

/// The bytes of the persistent params: of every rank's slice (what verify reads), or of the
/// model once (what assemble reads and writes).
uint64_t storedBytes(const Program &program, bool replicas) {
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

TEST_F(CheckpointTest, WritesShardsIndexAssemblesAndVerifies) {
  Program program = tinyProgram();
  std::vector<std::vector<char>> globals = writeAll(program);
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"index.json", shardFileName(0, 2),
                                                    shardFileName(1, 2)}));

  // The shard file is a standard safetensors file named by parameter, with initc metadata.
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(1, 2), error)) << error;
  EXPECT_EQ(*shard.metadataValue("format"), "pt");
  EXPECT_EQ(*shard.metadataValue("initc.program_id"), program.programId);
  EXPECT_EQ(*shard.metadataValue("initc.rank"), "1");
  EXPECT_EQ(*shard.metadataValue("initc.world_size"), "2");
  EXPECT_EQ(shard.tensors().size(), 5u); // no "rope"
  ASSERT_NE(shard.find("z"), nullptr);
  EXPECT_EQ(shard.find("z")->shape, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(shard.find("w")->shape, (std::vector<int64_t>{2, 3}));
  nlohmann::json records = nlohmann::json::parse(*shard.metadataValue("initc.tensors"));
  EXPECT_EQ(records["w"]["offset"], nlohmann::json({3, 0}));
  EXPECT_EQ(records["emb"]["global_shape"], nlohmann::json({4, 6}));
  EXPECT_EQ(records["emb"]["offset"], nlohmann::json({0, 3}));

  nlohmann::json index = readIndexJson();
  EXPECT_EQ(index["format"], "initc-checkpoint");
  EXPECT_EQ(index["version"], 3);
  {
    // The checksum covers the rest of the document as written, keys in order.
    nlohmann::ordered_json ordered = readIndexOrdered();
    std::string recorded = ordered["checksum"];
    ordered.erase("checksum");
    std::string text = ordered.dump();
    EXPECT_EQ(recorded, checksumHex(text.data(), text.size()));
  }
  EXPECT_EQ(index["program_id"], program.programId);
  EXPECT_EQ(index["model"], "tiny");
  EXPECT_EQ(index["seed"], 1234);
  EXPECT_EQ(index["mesh"]["axes"], nlohmann::json({"tp"}));
  EXPECT_EQ(index["world_size"], 2);
  EXPECT_EQ(index["files"], nlohmann::json({shardFileName(0, 2), shardFileName(1, 2)}));
  // A rank's digest is XXH3-64 of its stored tensors' checksums, in program order.
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::string joined;
    for (const char *name : {"w", "b", "emb", "z", "s"}) {
      SafetensorsReader reader;
      ASSERT_TRUE(reader.open(shardPath(rank, 2), error)) << error;
      joined += nlohmann::json::parse(*reader.metadataValue("initc.tensors"))[name]["checksum"]
                    .get<std::string>();
    }
    EXPECT_EQ(index["shard_digests"][rank], checksumHex(joined.data(), joined.size()));
  }
  ASSERT_EQ(index["params"].size(), 5u);
  const nlohmann::json &w = index["params"][0];
  EXPECT_EQ(w["name"], "w");
  EXPECT_EQ(w["aliases"], nlohmann::json({"w_tied"}));
  EXPECT_EQ(w["dtype"], "F32");
  EXPECT_EQ(w["shape"], nlohmann::json({5, 3}));
  EXPECT_EQ(w["sharding"], nlohmann::json::parse(R"([["tp"],[]])"));
  EXPECT_FALSE(w.contains("slices")); // slices follow from the mesh and the sharding
  EXPECT_EQ(index["params"][1]["sharding"], nlohmann::json::parse(R"([[]])"));
  EXPECT_EQ(index["params"][4]["sharding"], nlohmann::json::array());
  EXPECT_EQ(index["total_bytes"], 5 * 3 * 4 + 3 * 4 + 4 * 6 * 2 + 2 * 4 + 8);
  EXPECT_EQ(index["parameter_count"], 15 + 3 + 24 + 2 + 1);

  std::vector<std::string> problems;
  ProgressLog verifying;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error, verifying.fn())) << error;
  EXPECT_TRUE(problems.empty()) << problems.front();
  // "b" (3 x f32) and the scalar "s" (8 bytes) are on both ranks: verify reads them twice.
  verifying.expectSteadyTo(storedBytes(program, true));
  EXPECT_EQ(storedBytes(program, true), storedBytes(program, false) + 3 * 4 + 8);

  std::string model = root + "/model.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, model, error)) << error;
  SafetensorsReader assembled;
  ASSERT_TRUE(assembled.open(model, error)) << error;
  EXPECT_EQ(*assembled.metadataValue("format"), "pt");
  ASSERT_NE(assembled.metadataValue("initc.aliases"), nullptr);
  EXPECT_EQ(nlohmann::json::parse(*assembled.metadataValue("initc.aliases")),
            nlohmann::json::parse(R"({"w_tied":"w"})"));
  EXPECT_EQ(assembled.tensors().size(), 5u);
  EXPECT_EQ(assembled.find("rope"), nullptr);
  EXPECT_EQ(assembled.find("w_tied"), nullptr);
  for (size_t i = 0; i < program.params.size(); ++i) {
    const Param &param = program.params[i];
    const SafetensorsEntry *entry = assembled.find(param.name);
    if (!param.persistent)
      continue;
    ASSERT_NE(entry, nullptr) << param.name;
    EXPECT_EQ(entry->shape, param.shape);
    EXPECT_EQ(entry->dtype, dtypeName(param.dtype));
    std::vector<char> bytes(entry->bytes());
    ASSERT_TRUE(assembled.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
    EXPECT_EQ(bytes, globals[i]) << param.name;
  }
  EXPECT_FALSE(anyHiddenFile(dir));
  EXPECT_FALSE(anyHiddenFile(root));
}

TEST_F(CheckpointTest, AssemblesRaggedGridShardings) {
  Program program = gridProgram();
  std::vector<std::vector<char>> globals = writeAll(program);
  std::string error;
  std::vector<std::string> problems;
  ProgressLog verifying, assembling;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error, verifying.fn())) << error;
  EXPECT_TRUE(problems.empty()) << problems.front();
  verifying.expectSteadyTo(storedBytes(program, /*replicas=*/true));
  std::string model = root + "/grid.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, model, error, assembling.fn())) << error;
  assembling.expectSteadyTo(storedBytes(program, /*replicas=*/false));
  EXPECT_GT(assembling.calls.size(), 2u);
  SafetensorsReader assembled;
  ASSERT_TRUE(assembled.open(model, error)) << error;
  EXPECT_EQ(assembled.metadataValue("initc.aliases"), nullptr);
  for (size_t i = 0; i < program.params.size(); ++i) {
    const SafetensorsEntry *entry = assembled.find(program.params[i].name);
    ASSERT_NE(entry, nullptr);
    std::vector<char> bytes(entry->bytes());
    ASSERT_TRUE(assembled.read(entry->begin, bytes.data(), bytes.size(), error)) << error;
    EXPECT_EQ(bytes, globals[i]) << program.params[i].name;
  }
}

// Bands of every size, from one element (a band inside a row of "cube", whose 7 columns are split
// 3 ways) through one row, several rows and rows of several planes, to whole tensors: the file
// is the same bytes every time.
TEST_F(CheckpointTest, AssembledBytesDoNotDependOnTheBand) {
  Program program = gridProgram();
  writeAll(program);
  std::string error;
  std::string reference = root + "/whole.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, reference, error)) << error;
  std::string expected, bytes;
  ASSERT_TRUE(testprog::readFile(reference, expected));
  ASSERT_FALSE(expected.empty());
  for (uint64_t band : {1, 2, 4, 8, 12, 20, 28, 56, 84, 112, 140, 200, 560, 1000}) {
    std::string out = root + "/band.safetensors";
    ProgressLog assembling;
    ASSERT_TRUE(assembleCheckpoint(dir, out, error, assembling.fn(), {band})) << error;
    ASSERT_TRUE(testprog::readFile(out, bytes));
    EXPECT_EQ(bytes, expected) << "band of " << band << " bytes";
    assembling.expectSteadyTo(storedBytes(program, /*replicas=*/false));
  }
}

/// Flips `mask`'s bits in byte `offset` of tensor `tensor`'s data in the shard file at `path`.
void flipBits(const std::string &path, const std::string &tensor, uint64_t offset, char mask) {
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

TEST_F(CheckpointTest, FlippedByteIsReportedWithParamAndRank) {
  Program program = tinyProgram();
  writeAll(program);
  std::string error;
  flipBits(shardPath(1, 2), "w", 5, 0x40);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_TRUE(error.empty()) << error;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "w on rank 1 (rank-00001-of-00002.safetensors): checksum mismatch, the "
                         "file is corrupt: rerun `prog/init --rank 1 --out " +
                             dir + "` to regenerate it");
  std::vector<std::string> checksums;
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums));
  EXPECT_TRUE(shardIsComplete(dir, program, 0, checksums));
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("w on rank 1 (rank-00001-of-00002.safetensors): checksum mismatch"),
            std::string::npos)
      << error;
  EXPECT_EQ(access((root + "/model.safetensors").c_str(), F_OK), -1);
  EXPECT_FALSE(anyHiddenFile(root));
}

// A pipe cannot take back what it was given: a corrupt slice is found before anything is
// written to one, not after the tensors before it went out.
TEST_F(CheckpointTest, AssembleToAPipeWritesNothingFromACorruptCheckpoint) {
  Program program = gridProgram();
  writeAll(program);
  std::string error, fifo = root + "/model.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading, so that assemble's open for writing does not wait; the model is far
  // below the pipe's buffer, so that its writes do not either.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  flipBits(shardPath(3, 6), "rows", 0, 0x01); // rank 3 owns the last row of "rows"
  EXPECT_FALSE(assembleCheckpoint(dir, fifo, error));
  EXPECT_NE(error.find("rows on rank 3 (rank-00003-of-00006.safetensors): checksum mismatch"),
            std::string::npos)
      << error;
  char byte;
  EXPECT_LE(::read(reader, &byte, 1), 0) << "the pipe got bytes of a corrupt checkpoint";
  ::close(reader);
}

TEST_F(CheckpointTest, VerifyReportsTheSameInRankOrderOnAnyThreads) {
  Program program = gridProgram();
  writeAll(program);
  std::string error;
  // Damage ranks 1 (a flipped byte), 4 and 5 (missing).
  flipBits(shardPath(1, 6), program.params.front().name, 0, 0x01);
  ASSERT_EQ(unlink(shardPath(4, 6).c_str()), 0);
  ASSERT_EQ(unlink(shardPath(5, 6).c_str()), 0);

  std::vector<std::string> once;
  EXPECT_FALSE(verifyCheckpoint(dir, once, error, {}, 1));
  ASSERT_EQ(once.size(), 3u);
  const char *ranks[] = {"rank 1 ", "rank 4 ", "rank 5 "};
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_NE(once[i].find(ranks[i]), std::string::npos) << once[i];
  for (int threads : {2, 3, 6, 16}) {
    std::vector<std::string> problems;
    ProgressLog progress;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error, progress.fn(), threads));
    EXPECT_EQ(problems, once) << threads << " threads";
    progress.expectSteadyTo(storedBytes(program, true));
  }
}

// verify reads a file's tensors in the order they lie in it (by alignment, then name: rows
// before cube here) but reports them in the index's.
TEST_F(CheckpointTest, VerifyReportsTensorsInTheIndexOrder) {
  Program program = gridProgram();
  writeAll(program);
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(0, 6), error)) << error;
  ASSERT_LT(shard.find("rows")->begin, shard.find("cube")->begin);
  flipBits(shardPath(0, 6), "rows", 0, 0x01);
  flipBits(shardPath(0, 6), "cube", 0, 0x01);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].rfind("cube on rank 0 ", 0), 0u) << problems[0];
  EXPECT_EQ(problems[1].rfind("rows on rank 0 ", 0), 0u) << problems[1];
}

TEST_F(CheckpointTest, CorruptReplicaIsReported) {
  Program program = tinyProgram();
  writeAll(program);
  SafetensorsReader shard;
  std::string error;
  ASSERT_TRUE(shard.open(shardPath(1, 2), error)) << error;
  uint64_t position = shard.dataStart() + shard.find("b")->begin;
  shard = SafetensorsReader();
  {
    std::fstream file(shardPath(1, 2), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(position));
    file.put('\x55');
  }
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("b on rank 1 (rank-00001-of-00002.safetensors): checksum", 0), 0u)
      << problems[0];
  // Assemble reads the owner's copy only, which is intact.
  EXPECT_TRUE(assembleCheckpoint(dir, root + "/model.safetensors", error)) << error;
}

// A shard records the versions of the base checkpoints it was computed from: a rerun that finds
// others computes it again, and one that cannot open them (no stamps to compare) keeps it.
TEST_F(CheckpointTest, ShardOfAnotherBaseVersionIsComputedAgain) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  std::vector<ShardTensor> tensors = writeShard(program, 0, globals); // the bytes to stream
  const std::string stamps = R"({"base.safetensors":{"bytes":100,"mtime":[7,0]}})";
  ShardFileStream stream;
  ASSERT_TRUE(stream.open(dir, program, 0, tensors, error, stamps)) << error;
  for (size_t t = 0; t < tensors.size(); ++t)
    ASSERT_TRUE(stream.writePiece(t, 0, tensors[t].data, tensors[t].bytes, error)) << error;
  std::vector<std::string> written, checksums;
  ASSERT_TRUE(stream.finish(written, error)) << error;

  std::string reason;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &stamps), ShardState::Complete)
      << reason;
  EXPECT_EQ(checksums[0], tensors[0].checksum);
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason), ShardState::Complete) << reason;
  const std::string why = shardPath(0, 2) + ": ";
  const std::pair<std::string, std::string> changes[] = {
      {R"({"base.safetensors":{"bytes":100,"mtime":[7,1]}})",
       "computed from another version of base.safetensors"},
      {R"({"base.safetensors":{"bytes":101,"mtime":[7,0]}})",
       "computed from another version of base.safetensors"},
      {R"({"other.safetensors":{"bytes":100,"mtime":[7,0]}})",
       "computed from other base checkpoint files (not other.safetensors)"},
      {"", "computed from other base checkpoint files (base.safetensors among them)"}};
  for (const auto &[now, said] : changes) {
    EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &now), ShardState::BaseChanged) << now;
    EXPECT_EQ(reason, why + said);
  }
  // With some base files absent, only those there are compared.
  const std::string none;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &none, /*someBasesMissing=*/true),
            ShardState::Complete)
      << reason;
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &changes[0].first, true),
            ShardState::BaseChanged);
  EXPECT_EQ(reason, why + changes[0].second);
  // A shard that records none (or what is not JSON) is of another base, unless none is loaded.
  writeShard(program, 0, globals);
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &stamps), ShardState::BaseChanged);
  EXPECT_EQ(reason, why + "records no version of its base checkpoints");
  EXPECT_EQ(shardState(dir, program, 0, checksums, reason, &none), ShardState::Complete) << reason;
}

TEST_F(CheckpointTest, TruncatedOrMissingShardIsIncomplete) {
  Program program = tinyProgram();
  writeAll(program);
  struct stat info;
  ASSERT_EQ(stat(shardPath(0, 2).c_str(), &info), 0);
  ASSERT_EQ(truncate(shardPath(0, 2).c_str(), info.st_size - 3), 0);
  std::vector<std::string> checksums;
  std::string reason;
  EXPECT_FALSE(shardIsComplete(dir, program, 0, checksums, reason));
  EXPECT_NE(reason.find("truncated"), std::string::npos) << reason;
  EXPECT_TRUE(shardIsComplete(dir, program, 1, checksums));

  std::vector<std::string> problems;
  std::string error;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rank 0 (rank-00000-of-00002.safetensors)"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("--rank 0"), std::string::npos) << problems[0];

  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums));
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_EQ(problems.size(), 2u);

  // A shard of another program under the same name is not complete for this one.
  Program other = tinyProgram();
  other.programId = "ffffffffffffffff";
  writeAll(other, /*overwrite=*/true);
  EXPECT_FALSE(shardIsComplete(dir, program, 1, checksums, reason));
  EXPECT_NE(reason.find("another program"), std::string::npos) << reason;
}

TEST_F(CheckpointTest, FailedWritesLeaveNothingBehind) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::vector<char> data(64);
  ShardTensor tensor;
  tensor.param = &program.params[0];
  tensor.slice = sliceForRank(program.mesh, program.params[0], 0);
  tensor.data = data.data();
  tensor.bytes = 7; // wrong size
  EXPECT_FALSE(writeShardFile(dir, program, 0, {tensor}, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());

  std::vector<RankReport> reports(1); // wrong world size
  EXPECT_FALSE(writeIndex(dir, program, reports, error));
  EXPECT_TRUE(listDir(dir).empty());

  EXPECT_FALSE(writeShardFile(root + "/nowhere", program, 0, {}, error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;

  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_NE(error.find("index.json"), std::string::npos) << error;
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/m.safetensors", error));
  EXPECT_NE(error.find("index.json"), std::string::npos) << error;
  EXPECT_TRUE(listDir(dir).empty());
}

TEST_F(CheckpointTest, ReplicasWithDifferentBytesAreRefused) {
  Program program = tinyProgram();
  std::vector<std::vector<std::string>> sums(2, std::vector<std::string>(6, "0000000000000000"));
  sums[1][1] = "1111111111111111"; // "b" is replicated on ranks 0 and 1
  sums[0][5] = sums[1][5] = "";    // "rope" is not stored
  EXPECT_EQ(replicatedParams(program), (std::vector<size_t>{1, 4})); // b and the scalar s
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  EXPECT_FALSE(writeIndex(dir, program, {makeRankReport(program, sums[0]),
                                         makeRankReport(program, sums[1])}, error));
  EXPECT_NE(error.find("b: ranks 0 and 1 hold the same slice with different bytes"),
            std::string::npos)
      << error;
  EXPECT_TRUE(listDir(dir).empty());
}

TEST_F(CheckpointTest, ReplacedShardIsReported) {
  Program program = tinyProgram();
  writeAll(program);
  // Rank 1's file replaced by one that is valid in itself: its "w" slice holds other bytes.
  replaceShard(program, 1, 0, '\x11');
  std::string error;
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "rank 1 (rank-00001-of-00002.safetensors): its tensors' checksums are "
                         "not those index.json recorded for this rank (the file changed after "
                         "the job wrote it): rerun `prog/init --rank 1 --out " +
                             dir + "` to regenerate it");
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): its tensors' checksums"),
            std::string::npos)
      << error;

  // The replicated "b" differing between ranks, with an index that agrees with each file:
  // verify still finds that the copies differ.
  replaceShard(program, 1, 1, '\x22');
  std::vector<std::string> sums;
  ASSERT_TRUE(shardIsComplete(dir, program, 1, sums));
  nlohmann::ordered_json index = readIndexOrdered();
  index["shard_digests"][1] = checksumToHex(shardDigest(program, sums));
  writeSealedIndex(index);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("b: ranks 0 and 1 hold the same slice with different bytes", 0),
            0u)
      << problems[0];
}

TEST_F(CheckpointTest, MalformedIndexIsRefused) {
  Program program = tinyProgram();
  writeAll(program);
  nlohmann::ordered_json good = readIndexOrdered();
  auto expectRefused = [&](nlohmann::ordered_json index, const std::string &why) {
    writeSealedIndex(index);
    std::vector<std::string> problems;
    std::string error;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
    EXPECT_NE(error.find("index.json is malformed (" + why), std::string::npos) << error;
    EXPECT_NE(error.find("rerun the whole job"), std::string::npos) << error;
  };
  nlohmann::ordered_json index = good;
  index["version"] = 1;
  expectRefused(index, "version 1 is not supported");
  index["version"] = 2; // no checksum
  expectRefused(index, "version 2 is not supported");
  index = good;
  index["shard_digests"].erase(1);
  expectRefused(index, "shard_digests does not list world_size digests");
  index = good;
  index["files"][1] = "../elsewhere.safetensors";
  expectRefused(index, "files[1] is \"../elsewhere.safetensors\", not rank-00001-of-00002");
  index = good;
  index["shard_digests"][0] = "xyz";
  expectRefused(index, "shard digest \"xyz\" is not 16 hex digits");
  index = good;
  index["mesh"]["shape"] = {3};
  expectRefused(index, "the mesh does not have world_size ranks");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["dp"],[]])");
  expectRefused(index, "w: sharding names unknown mesh axis dp");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["tp"],["tp"]])");
  expectRefused(index, "w: mesh axis tp splits two dims");
  index = good;
  index["params"][0]["sharding"] = nlohmann::ordered_json::parse(R"([["tp"]])");
  expectRefused(index, "w: sharding does not list every dim");
  index = good;
  index["params"][0]["dtype"] = "F4"; // a safetensors dtype of no whole byte: never assembled
  expectRefused(index, "w: dtype F4 is not one initc writes");

  // Nested millions deep: refused as it is parsed (copying or printing it would recurse once
  // per level and overflow the stack).
  const size_t depth = 4 << 20;
  std::ofstream(dir + "/index.json") << R"({"format":"initc-checkpoint","x":)"
                                     << std::string(depth, '[') << std::string(depth, ']') << "}";
  std::vector<std::string> problems;
  std::string error;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  EXPECT_NE(error.find("index.json is malformed (nested deeper than 64 levels)"), std::string::npos)
      << error;
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("nested deeper than 64 levels"), std::string::npos) << error;
}

// An edited index is the damaged file: one error naming index.json and the command that writes
// it again, for verify and assemble alike; never a problem blamed on every shard, never a pass
// (seed, model, totals, buffer and aliases were not checked against anything).
TEST_F(CheckpointTest, EditedIndexIsReportedAsTheDamagedFile) {
  Program program = tinyProgram();
  writeAll(program);
  std::string pristine;
  ASSERT_TRUE(testprog::readFile(dir + "/index.json", pristine));
  nlohmann::ordered_json good = readIndexOrdered();
  std::vector<std::pair<const char *, std::function<void(nlohmann::ordered_json &)>>> edits = {
      {"dtype", [](auto &i) { i["params"][0]["dtype"] = "BF16"; }},
      {"a param removed", [](auto &i) { i["params"].erase(2); }},
      {"seed", [](auto &i) { i["seed"] = 99; }},
      {"model", [](auto &i) { i["model"] = "other"; }},
      {"total_bytes", [](auto &i) { i["total_bytes"] = 1; }},
      {"parameter_count", [](auto &i) { i["parameter_count"] = 1; }},
      {"buffer", [](auto &i) { i["params"][1]["buffer"] = true; }},
      {"an alias added", [](auto &i) { i["params"][1]["aliases"].push_back("b_tied"); }},
      {"a digest", [](auto &i) { i["shard_digests"][0] = "0000000000000000"; }},
      {"the checksum removed", [](auto &i) { i.erase("checksum"); }},
  };
  for (auto &[what, edit] : edits) {
    nlohmann::ordered_json index = good;
    edit(index);
    std::ofstream(dir + "/index.json") << index.dump();
    std::vector<std::string> problems;
    std::string error;
    EXPECT_FALSE(verifyCheckpoint(dir, problems, error)) << what;
    EXPECT_TRUE(problems.empty()) << what << ": " << problems[0];
    EXPECT_NE(error.find(dir + "/index.json: the contents do not match its \"checksum\""),
              std::string::npos)
        << what << ": " << error;
    EXPECT_NE(error.find("index.json was edited or is damaged, the shards are not at fault: "
                         "rerun the whole job (`mpirun -np N prog/init --out " +
                         dir + " --overwrite`)"),
              std::string::npos)
        << what << ": " << error;
    EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error)) << what;
    EXPECT_NE(error.find("index.json was edited or is damaged"), std::string::npos) << error;
    EXPECT_EQ(access((root + "/model.safetensors").c_str(), F_OK), -1) << what;
    // The rerun the message names: this program's index is rewritten, the shards kept.
    EXPECT_TRUE(checkOutputDir(dir, program, true, error)) << error;
    writeAll(program);
    std::string rewritten;
    ASSERT_TRUE(testprog::readFile(dir + "/index.json", rewritten));
    EXPECT_EQ(rewritten, pristine) << what;
  }
  // Reformatted (jq .) but not edited: the same document, accepted.
  std::ofstream(dir + "/index.json") << good.dump(2);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
}

// The index lists files, digests and params: a 16,384-rank mesh does not multiply them.
TEST(CheckpointIndex, StaysSmallOnLargeMeshes) {
  Program program;
  program.modelName = "big";
  program.mesh.axisNames = {"dp", "tp"};
  program.mesh.shape = {512, 32};
  program.programId = "0123456789abcdef";
  for (int layer = 0; layer < 100; ++layer) {
    std::string prefix = "layers." + std::to_string(layer) + ".";
    program.params.push_back(makeParam(prefix + "proj", DType::BF16, {16384, 16384}, {{0}, {1}}));
    program.params.push_back(makeParam(prefix + "norm", DType::BF16, {16384}, {{0}}));
  }
  int64_t world = program.mesh.size();
  std::vector<size_t> replicated = replicatedParams(program);
  ASSERT_EQ(replicated.size(), 100u); // the norms: split over dp, copied over tp
  std::vector<RankReport> reports(static_cast<size_t>(world));
  for (int64_t rank = 0; rank < world; ++rank) {
    reports[size_t(rank)].digest = uint64_t(rank) * 0x9e3779b97f4a7c15ull;
    for (size_t j = 0; j < replicated.size(); ++j) // equal within each dp group of 32 ranks
      reports[size_t(rank)].replicated.push_back(uint64_t(rank / 32) << 8 | j);
  }
  char pattern[] = "/tmp/initrt-index-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  std::string error;
  ASSERT_TRUE(writeIndex(dir, program, reports, error)) << error;
  struct stat info;
  ASSERT_EQ(stat((dir + "/index.json").c_str(), &info), 0);
  EXPECT_LT(info.st_size, 1 << 20); // files and digests: 52 bytes per rank
  std::ifstream in(dir + "/index.json");
  nlohmann::json index = nlohmann::json::parse(in);
  EXPECT_EQ(index["shard_digests"].size(), size_t(world));
  EXPECT_EQ(index["shard_digests"][16383], checksumToHex(16383 * 0x9e3779b97f4a7c15ull));

  // One copy of a norm differs: rank 167 (dp 5, tp 7) against the copy of rank 160 (dp 5, tp 0).
  reports[167].replicated[3] ^= 1;
  EXPECT_FALSE(writeIndex(dir, program, reports, error));
  EXPECT_NE(error.find("layers.3.norm: ranks 160 and 167 hold the same slice with different "
                       "bytes"),
            std::string::npos)
      << error;
  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}

TEST_F(CheckpointTest, OutputDirRefusesAnotherProgram) {
  std::string error;
  Program program = tinyProgram();
  std::string nested = root + "/a/b/c";
  EXPECT_TRUE(checkOutputDir(nested, program, false, error)) << error;
  struct stat info;
  EXPECT_EQ(stat(nested.c_str(), &info), 0);

  writeAll(program);
  // Our own checkpoint: fine (a rerun resumes it).
  EXPECT_TRUE(checkOutputDir(dir, program, false, error)) << error;

  // A cut index is damage, not another program's; --overwrite replaces only the index.
  std::string indexText;
  ASSERT_TRUE(testprog::readFile(dir + "/index.json", indexText));
  ASSERT_EQ(truncate((dir + "/index.json").c_str(), 20), 0);
  EXPECT_FALSE(checkOutputDir(dir, program, false, error));
  EXPECT_NE(error.find(dir + "/index.json is malformed ("), std::string::npos) << error;
  EXPECT_NE(error.find("pass --overwrite to write it again (complete shards are kept)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("another program"), std::string::npos) << error;
  EXPECT_TRUE(checkOutputDir(dir, program, true, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
  std::ofstream(dir + "/index.json", std::ios::binary) << indexText;

  Program other = gridProgram();
  EXPECT_FALSE(checkOutputDir(dir, other, false, error));
  EXPECT_NE(error.find("another program"), std::string::npos) << error;
  EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
  EXPECT_EQ(listDir(dir).size(), 3u);

  // Same world size, other program id, no index: the directory check cannot tell without reading
  // every header; each rank refuses its own file.
  ASSERT_EQ(unlink((dir + "/index.json").c_str()), 0);
  Program sameMesh = tinyProgram();
  sameMesh.programId = "aaaaaaaaaaaaaaaa";
  EXPECT_TRUE(checkOutputDir(dir, sameMesh, false, error)) << error;
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(checkOwnShard(dir, program, rank, false, error)) << error;
    EXPECT_FALSE(checkOwnShard(dir, sameMesh, rank, false, error));
    EXPECT_NE(error.find("rank-0000" + std::to_string(rank) +
                         "-of-00002.safetensors has program id 0123456789abcdef"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
  }
  // --overwrite removes a rank's foreign file (its rank writes it again) and leaves the others.
  EXPECT_TRUE(checkOwnShard(dir, sameMesh, 1, true, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 1u);
  // A missing file is simply not written yet.
  EXPECT_TRUE(checkOwnShard(dir, sameMesh, 1, false, error)) << error;

  // Another mesh size: refused, or removed with --overwrite, by the names alone.
  EXPECT_FALSE(checkOutputDir(dir, other, false, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors is from a run with 2 ranks"),
            std::string::npos)
      << error;
  EXPECT_TRUE(checkOutputDir(dir, other, true, error)) << error;
  EXPECT_TRUE(listDir(dir).empty());

  // A safetensors file that is not an initc shard, under a shard's name.
  std::ofstream(dir + "/rank-00000-of-00002.safetensors", std::ios::binary)
      .write("\x02\0\0\0\0\0\0\0{}", 10);
  EXPECT_FALSE(checkOwnShard(dir, program, 0, false, error));
  EXPECT_NE(error.find("rank-00000-of-00002.safetensors is not an initc shard"), std::string::npos)
      << error;

  // A plain file where the directory should be.
  std::ofstream(root + "/file") << "x";
  EXPECT_FALSE(checkOutputDir(root + "/file", program, false, error));
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
}

// A rerun's cleanup removes what a killed writer left, never the temporary of a writer still at
// work (a second `prog/init --rank K` on the same directory): that one completes its file.
TEST_F(CheckpointTest, CleanupLeavesLiveWritersTemporaries) {
  Program program = tinyProgram();
  std::string error;
  ASSERT_TRUE(checkOutputDir(dir, program, false, error)) << error;
  std::string name = shardFileName(1, 2);
  std::ofstream(dir + "/." + name + ".tmp-999999999") << "left by a killed run";
  AtomicFile live;
  ASSERT_TRUE(live.open(dir + "/" + name, 4, error)) << error;
  ASSERT_TRUE(live.write("abcd", 4, error)) << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
  EXPECT_EQ(removeStaleTemporaries(dir, program, 1), 1);
  EXPECT_EQ(removeStaleTemporaries(dir, program, -1), 0);
  std::vector<std::string> left = listDir(dir);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], "." + name + ".tmp-" + std::to_string(getpid()));
  EXPECT_TRUE(live.commit(error)) << error;
  EXPECT_EQ(listDir(dir), std::vector<std::string>{name});
}

// assemble refuses to write over the checkpoint it reads: a shard, the index, through a link,
// a hard link, or under a shard's name that is missing.
TEST_F(CheckpointTest, AssembleRefusesToWriteIntoTheCheckpoint) {
  Program program = tinyProgram();
  writeAll(program);
  std::string shard = shardPath(0, 2), before, after;
  ASSERT_TRUE(testprog::readFile(shard, before));
  ASSERT_EQ(symlink(shard.c_str(), (root + "/link.safetensors").c_str()), 0);
  ASSERT_EQ(link((dir + "/index.json").c_str(), (root + "/hard.json").c_str()), 0);
  for (std::string out : {shard, dir + "/index.json", dir + "/./index.json",
                          root + "/link.safetensors", root + "/hard.json"}) {
    std::string error;
    EXPECT_FALSE(assembleCheckpoint(dir, out, error)) << out;
    EXPECT_NE(error.find("-o " + out + " is the checkpoint's own "), std::string::npos) << error;
    EXPECT_NE(error.find("choose another -o"), std::string::npos) << error;
  }
  ASSERT_TRUE(testprog::readFile(shard, after));
  EXPECT_EQ(before, after);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(dir, shardPath(1, 2), error));
  EXPECT_NE(error.find("is the checkpoint's own rank-00001-of-00002.safetensors"),
            std::string::npos)
      << error;
  EXPECT_EQ(listDir(dir).size(), 2u);
}

// A rank that owns no slice (every parameter replicated: rank 1 holds copies only) is still part
// of the checkpoint: assemble refuses it missing or damaged, as verify does.
TEST_F(CheckpointTest, AssembleChecksShardsItReadsNoSliceFrom) {
  Program program = tinyProgram();
  for (Param &param : program.params)
    for (std::vector<int> &axes : param.splitAxes)
      axes.clear();
  writeAll(program);
  std::string error, out = root + "/model.safetensors";
  ASSERT_TRUE(assembleCheckpoint(dir, out, error)) << error;
  ASSERT_EQ(unlink(out.c_str()), 0);
  std::string bytes;
  ASSERT_TRUE(testprog::readFile(shardPath(1, 2), bytes));
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): " + shardPath(1, 2) +
                       ": no such file: rerun `prog/init --rank 1"),
            std::string::npos)
      << error;
  std::ofstream(shardPath(1, 2)) << "garbage";
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): "), std::string::npos) << error;
  // Valid in itself, but another program's.
  Program other = program;
  other.programId = "aaaaaaaaaaaaaaaa";
  ASSERT_EQ(unlink(shardPath(1, 2).c_str()), 0);
  std::vector<std::vector<char>> globals;
  for (size_t i = 0; i < program.params.size(); ++i)
    globals.push_back(globalBytes(program.params[i], i));
  writeShard(other, 1, globals);
  EXPECT_FALSE(assembleCheckpoint(dir, out, error));
  EXPECT_NE(error.find("rank 1 (rank-00001-of-00002.safetensors): belongs to another program"),
            std::string::npos)
      << error;
  // prog/init replaces another program's file only with --overwrite: the hint says so.
  EXPECT_NE(error.find("rerun `prog/init --rank 1 --out " + dir + " --overwrite` to regenerate it"),
            std::string::npos)
      << error;
  EXPECT_EQ(access(out.c_str(), F_OK), -1);
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("belongs to another program"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find(" --overwrite` to regenerate it"), std::string::npos) << problems[0];

  // Every shard another program's, the same one: the index is the stranger.
  ASSERT_EQ(unlink(shardPath(0, 2).c_str()), 0);
  writeShard(other, 0, globals);
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(dir + "/index.json has program id " + program.programId +
                             ", but all 2 shards have program id aaaaaaaaaaaaaaaa: the index or "
                             "the shards were copied from another checkpoint; with the prog/init "
                             "of the one you want, rerun the whole job (`mpirun -np N prog/init "
                             "--out " +
                             dir + " --overwrite`)"),
            std::string::npos)
      << problems[0];
}

// A shard whose metadata records another global shape for a slice of the right shape and place:
// the message says which global shapes differ.
TEST_F(CheckpointTest, GlobalShapeMismatchIsNamed) {
  Program program = tinyProgram();
  writeAll(program);
  SafetensorsReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(shardPath(1, 2), error)) << error;
  std::vector<std::string> data;
  std::vector<SafetensorsTensor> tensors;
  for (const SafetensorsEntry &entry : reader.tensors()) {
    data.emplace_back(entry.bytes(), '\0');
    ASSERT_TRUE(reader.read(entry.begin, data.back().data(), entry.bytes(), error)) << error;
  }
  for (size_t t = 0; t < reader.tensors().size(); ++t) {
    const SafetensorsEntry &entry = reader.tensors()[t];
    tensors.push_back({entry.name, entry.dtype, entry.shape, data[t].data(), entry.bytes()});
  }
  SafetensorsMetadata metadata = reader.metadata();
  for (auto &[key, value] : metadata)
    if (key == "initc.tensors") {
      nlohmann::ordered_json records = nlohmann::ordered_json::parse(value);
      records["w"]["global_shape"] = {6, 3};
      value = records.dump();
    }
  ASSERT_TRUE(writeSafetensors(shardPath(1, 2), tensors, metadata, error)) << error;
  std::vector<std::string> problems;
  EXPECT_FALSE(verifyCheckpoint(dir, problems, error));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "w on rank 1 (rank-00001-of-00002.safetensors): the file holds F32 [2, 3] "
                         "at [3, 0] of a tensor of shape [6, 3], the index expects F32 [2, 3] at "
                         "[3, 0] of a tensor of shape [5, 3]: rerun `prog/init --rank 1 --out " +
                             dir + "` to regenerate it");
  EXPECT_FALSE(assembleCheckpoint(dir, root + "/model.safetensors", error));
  EXPECT_NE(error.find("of a tensor of shape [6, 3], the index expects"), std::string::npos)
      << error;
}

// A FIFO (or a directory) where index.json or a shard should be: verify, assemble and a rerun
// refuse it at once instead of waiting for a writer. Run in a child with an alarm, so that a
// regression fails rather than hangs.
TEST_F(CheckpointTest, FilesThatAreNotRegularAreRefusedWithoutWaiting) {
  Program program = tinyProgram();
  writeAll(program);
  auto inChild = [](const std::function<bool()> &body) {
    pid_t child = fork();
    if (child == 0) {
      alarm(20);
      _exit(body() ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  std::string shard = shardPath(1, 2);
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(mkfifo(shard.c_str(), 0600), 0);
  EXPECT_TRUE(inChild([&] {
    std::vector<std::string> problems;
    std::string error;
    return !verifyCheckpoint(dir, problems, error) && problems.size() == 1 &&
           problems[0].find(shard + ": a FIFO, not a regular file: rerun `prog/init --rank 1") !=
               std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !assembleCheckpoint(dir, root + "/m.safetensors", error) &&
           error.find("a FIFO, not a regular file") != std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !checkOwnShard(dir, program, 1, false, error) &&
           error.find(shard + " is a FIFO, not a shard file: remove it, pass --overwrite") !=
               std::string::npos;
  }));
  std::string error;
  EXPECT_TRUE(inChild([&] { return checkOwnShard(dir, program, 1, true, error); }));
  EXPECT_EQ(access(shard.c_str(), F_OK), -1);

  std::string index = dir + "/index.json";
  ASSERT_EQ(unlink(index.c_str()), 0);
  ASSERT_EQ(mkfifo(index.c_str(), 0600), 0);
  EXPECT_TRUE(inChild([&] {
    std::vector<std::string> problems;
    std::string error;
    return !verifyCheckpoint(dir, problems, error) &&
           error.find(index + " is a FIFO, not a regular file: rerun the whole job") !=
               std::string::npos;
  }));
  EXPECT_TRUE(inChild([&] {
    std::string error;
    return !checkOutputDir(dir, program, false, error) &&
           error.find("index.json is not an initc index") != std::string::npos;
  }));
}

// A shard name that links to another file of the checkpoint would have two writers share it
// (AtomicFile follows links): refused, with or without --overwrite. A link elsewhere is fine.
// A directory at a shard's name is never removed, so --overwrite is not offered for it.
TEST_F(CheckpointTest, AShardNameLinkedToAnotherFileOfTheCheckpointIsRefused) {
  Program program = tinyProgram();
  writeAll(program);
  std::string shard = shardPath(1, 2), error;
  for (const char *target : {"rank-00000-of-00002.safetensors", "index.json"}) {
    ASSERT_EQ(unlink(shard.c_str()), 0);
    ASSERT_EQ(symlink(target, shard.c_str()), 0);
    std::string whose =
        std::string(target) == "index.json" ? "the checkpoint's index" : "rank 0's shard";
    for (bool overwrite : {false, true}) {
      EXPECT_FALSE(checkOwnShard(dir, program, 1, overwrite, error));
      EXPECT_NE(error.find(shard + " is a symbolic link to " + target + ", " + whose +
                           ", so two writers would share one file: remove the link"),
                std::string::npos)
          << error;
    }
  }
  // The same file through another spelling of the directory is still the same file.
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(symlink((dir + "/./rank-00000-of-00002.safetensors").c_str(), shard.c_str()), 0);
  EXPECT_FALSE(checkOwnShard(dir, program, 1, false, error));
  EXPECT_NE(error.find("rank 0's shard"), std::string::npos) << error;
  // A link to a file outside the checkpoint is written through, as before.
  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(symlink((root + "/elsewhere.safetensors").c_str(), shard.c_str()), 0);
  EXPECT_TRUE(checkOwnShard(dir, program, 1, false, error)) << error;

  ASSERT_EQ(unlink(shard.c_str()), 0);
  ASSERT_EQ(mkdir(shard.c_str(), 0755), 0);
  for (bool overwrite : {false, true}) {
    EXPECT_FALSE(checkOwnShard(dir, program, 1, overwrite, error));
    EXPECT_NE(error.find(shard + " is a directory, not a shard file: remove it or choose another "
                                 "--out"),
              std::string::npos)
        << error;
  }
}

// Files and directories get 0666 and 0777 less the umask, as other tools' files do (they were
// 0644 and 0755 whatever the umask).
TEST_F(CheckpointTest, ModesFollowTheUmask) {
  for (mode_t mask : {mode_t(002), mode_t(022), mode_t(077)}) {
    mode_t saved = umask(mask);
    std::string error;
    ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
    Program program = tinyProgram();
    writeAll(program);
    umask(saved);
    struct stat info;
    ASSERT_EQ(stat(dir.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0777 & ~mask) << "directory, umask " << mask;
    for (const std::string &name : listDir(dir)) {
      ASSERT_EQ(stat((dir + "/" + name).c_str(), &info), 0);
      EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask) << name << ", umask " << mask;
    }
  }
}

TEST_F(CheckpointTest, RewritingAShardReplacesItAtomically) {
  Program program = tinyProgram();
  writeAll(program);
  writeAll(program); // a rerun over a complete checkpoint
  EXPECT_EQ(listDir(dir).size(), 3u);
  std::vector<std::string> problems;
  std::string error;
  EXPECT_TRUE(verifyCheckpoint(dir, problems, error)) << error;
}

} // namespace
