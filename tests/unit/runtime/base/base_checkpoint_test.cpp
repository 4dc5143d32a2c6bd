// Base checkpoints (init.load): every rank of several meshes reads exactly its box of the tensor
// in the file, through whole runs, windows of close runs and single far-apart runs; the tensors
// are found through a Hugging Face index too; what does not match says so.
#include "initrt/base/base_checkpoint.h"
#include "executor/executor.h"
#include "initrt/initrt.h"
#include "initrt/base/program_io.h"
#include "testprogram.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace initrt;

namespace {

class BaseCheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-base-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + root).c_str()); }

  // A file of tensors whose element i is i (as int32 bytes), for every shape given.
  std::string writeFile(const std::string &name,
                        const std::vector<std::pair<std::string, std::vector<int64_t>>> &shapes) {
    std::vector<SafetensorsTensor> tensors;
    data.clear();
    data.reserve(shapes.size()); // the tensors point into it
    for (const auto &[tensor, shape] : shapes) {
      int64_t count = 1;
      for (int64_t extent : shape)
        count *= extent;
      data.emplace_back(size_t(count));
      for (int64_t i = 0; i < count; ++i)
        data.back()[size_t(i)] = int32_t(i * 7 + int64_t(tensor.size()));
      tensors.push_back({tensor, "F32", shape, data.back().data(), uint64_t(count) * 4});
    }
    std::string path = root + "/" + name, error;
    EXPECT_TRUE(writeSafetensors(path, tensors, std::nullopt, error)) << error;
    return path;
  }

  std::string root;
  std::vector<std::vector<int32_t>> data;
};

Param paramOf(const std::string &name, std::vector<int64_t> shape,
              std::vector<std::vector<int>> split) {
  Param param;
  param.name = name;
  param.dtype = DType::F32;
  param.shape = std::move(shape);
  param.splitAxes = std::move(split);
  return param;
}

// Every rank's slice, read whole and in uneven pieces, is the box of the global tensor.
void expectEveryRankReadsItsBox(const BaseTensor &tensor, const Param &param, const Mesh &mesh,
                                const std::vector<int32_t> &global) {
  for (int64_t rank = 0; rank < mesh.size(); ++rank) {
    Slice slice = sliceForRank(mesh, param, rank);
    const int64_t count = slice.numElements();
    std::vector<int32_t> expected(static_cast<size_t>(count));
    std::vector<int64_t> index(param.shape.size());
    for (int64_t l = 0; l < count; ++l) {
      int64_t rest = l, g = 0;
      for (size_t d = param.shape.size(); d-- > 0;) {
        index[d] = rest % slice.shape[d] + slice.offset[d];
        rest /= slice.shape[d];
      }
      for (size_t d = 0; d < param.shape.size(); ++d)
        g = g * param.shape[d] + index[d];
      expected[size_t(l)] = global[size_t(g)];
    }
    std::vector<int32_t> whole(size_t(count), -1);
    readBaseElements(tensor, param, slice, whole.data(), 0, count);
    EXPECT_EQ(whole, expected) << param.name << " rank " << rank;
    // Pieces that start and end inside runs, as the streaming executor's do.
    std::vector<int32_t> pieces(size_t(count), -1);
    for (int64_t begin = 0; begin < count; begin += 37)
      readBaseElements(tensor, param, slice, pieces.data(), begin, std::min(count, begin + 37));
    EXPECT_EQ(pieces, expected) << param.name << " rank " << rank << " in pieces";
  }
}

TEST_F(BaseCheckpointTest, EveryRankReadsItsBox) {
  // dense: rows split (one run); wide: the last dim split 16 ways (runs 1/16 of a row apart,
  // read one by one); narrow: a middle dim split (runs close together, read in windows).
  std::string path =
      writeFile("base.safetensors",
                {{"dense", {30, 20}}, {"wide", {12, 4096}}, {"narrow", {5, 6, 7}}, {"scalar", {}}});
  Mesh mesh;
  mesh.axisNames = {"dp", "tp"};
  mesh.shape = {2, 16};
  std::vector<Param> params = {paramOf("dense", {30, 20}, {{0}}),
                               paramOf("wide", {12, 4096}, {{}, {1}}),
                               paramOf("narrow", {5, 6, 7}, {{0}, {1}}), paramOf("scalar", {}, {})};
  BaseFiles files;
  for (size_t p = 0; p < params.size(); ++p) {
    std::string error;
    std::optional<BaseTensor> tensor = files.find(path, params[p].name, error);
    ASSERT_TRUE(tensor) << error;
    ASSERT_TRUE(checkBaseTensor(*tensor, params[p].name, params[p].dtype, params[p].shape, error))
        << error;
    expectEveryRankReadsItsBox(*tensor, params[p], mesh, data[p]);
  }
  // Close runs over more than one window (8 MiB of rows, half of each read).
  path = writeFile("tall.safetensors", {{"tall", {1024, 2048}}});
  Param tall = paramOf("tall", {1024, 2048}, {{}, {0}});
  std::string error;
  std::optional<BaseTensor> tensor = files.find(path, "tall", error);
  ASSERT_TRUE(tensor) << error;
  Mesh halves;
  halves.axisNames = {"dp"};
  halves.shape = {2};
  expectEveryRankReadsItsBox(*tensor, tall, halves, data[0]);
}

// The executors fill loaded shards as they fill computed ones, on several threads.
TEST_F(BaseCheckpointTest, TheExecutorsReadLoadedShards) {
  std::string path = writeFile("base.safetensors", {{"w", {300, 1000}}});
  Mesh mesh;
  mesh.axisNames = {"tp"};
  mesh.shape = {3};
  Param param = paramOf("w", {300, 1000}, {{}, {0}});
  BaseFiles files;
  std::string error;
  std::optional<BaseTensor> tensor = files.find(path, "w", error);
  ASSERT_TRUE(tensor) << error;
  for (int64_t rank = 0; rank < mesh.size(); ++rank) {
    ShardJob job;
    job.param = &param;
    job.base = &*tensor;
    job.slice = sliceForRank(mesh, param, rank);
    job.bytes = uint64_t(job.slice.numElements()) * 4;
    std::vector<int32_t> expected(size_t(job.slice.numElements()));
    readBaseElements(*tensor, param, job.slice, expected.data(), 0, job.slice.numElements());
    std::vector<int32_t> filled(expected.size(), -1);
    job.out = filled.data();
    RunOptions options;
    options.threads = 3;
    runShardJobs({job}, options);
    EXPECT_EQ(filled, expected) << "runShardJobs, rank " << rank;
    std::vector<char> streamed;
    ASSERT_TRUE(streamShardJobs(
        {job}, options,
        [&](size_t, uint64_t offset, const void *piece, uint64_t bytes, std::string &) {
          EXPECT_EQ(offset, streamed.size());
          streamed.insert(streamed.end(), static_cast<const char *>(piece),
                          static_cast<const char *>(piece) + bytes);
          return true;
        },
        error))
        << error;
    ASSERT_EQ(streamed.size(), job.bytes);
    EXPECT_EQ(std::memcmp(streamed.data(), expected.data(), job.bytes), 0)
        << "streamShardJobs, rank " << rank;
  }
  // A file cut short after it was opened: the run stops with the reason, on the calling thread,
  // while it writes the pieces of a parameter before it and other workers compute more.
  ASSERT_EQ(truncate(path.c_str(), 4000), 0);
  ShardJob job;
  job.param = &param;
  job.base = &*tensor;
  job.slice = sliceForRank(mesh, param, 0);
  job.bytes = uint64_t(job.slice.numElements()) * 4;
  Param big = paramOf("big", {int64_t(40) << 20}, {}); // 40 pieces of kPieceBytes
  ShardJob computed;
  computed.param = &big;
  computed.kernel = [](void *out, const int64_t *, const int64_t *, const int64_t *, int64_t begin,
                       int64_t end, const uint64_t *) {
    std::memset(static_cast<float *>(out) + begin, 0, size_t(end - begin) * 4);
  };
  computed.slice = sliceForRank(mesh, big, 0);
  computed.bytes = uint64_t(computed.slice.numElements()) * 4;
  RunOptions options;
  options.threads = 3;
  try {
    streamShardJobs(
        {computed, job}, options,
        [](size_t, uint64_t, const void *, uint64_t, std::string &) { return true; }, error);
    ADD_FAILURE() << "reading a truncated base checkpoint did not fail";
  } catch (const BaseReadError &e) { // the input's fault: prog/init says "error", not "internal"
    EXPECT_NE(std::string(e.what()).find("reading parameter 'w' (init.load): " + path +
                                         ": the file was truncated while reading"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(BaseCheckpointTest, FindsTensorsThroughAHuggingFaceIndex) {
  writeFile("model-00002-of-00002.safetensors", {{"b", {3, 4}}});
  std::vector<int32_t> second = data[0];
  writeFile("model-00001-of-00002.safetensors", {{"a", {8}}});
  std::ofstream(root + "/model.safetensors.index.json")
      << R"({"metadata": {"total_size": 80}, "weight_map": {"a": "model-00001-of-00002.safetensors",
           "b": "model-00002-of-00002.safetensors"}})";
  BaseFiles files;
  std::string error;
  std::optional<BaseTensor> b = files.find(root + "/model.safetensors.index.json", "b", error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->file->path(), root + "/model-00002-of-00002.safetensors");
  Mesh mesh;
  mesh.axisNames = {"tp"};
  mesh.shape = {2};
  expectEveryRankReadsItsBox(*b, paramOf("b", {3, 4}, {{}, {0}}), mesh, second);

  EXPECT_FALSE(files.find(root + "/model.safetensors.index.json", "c", error));
  EXPECT_NE(error.find("lists no tensor \"c\" in its weight_map"), std::string::npos) << error;
  std::ofstream(root + "/broken.json") << R"({"weight_map": {"a": "missing.safetensors"}})";
  EXPECT_FALSE(files.find(root + "/broken.json", "a", error));
  EXPECT_NE(error.find("missing.safetensors: no such file"), std::string::npos) << error;
  EXPECT_NE(error.find("broken.json names it for \"a\""), std::string::npos) << error;
  // A NUL would end the path early: another file would be read than the one named.
  std::ofstream(root + "/nul.json")
      << R"({"weight_map": {"a": "model-00001-of-00002.safetensors\u0000evil"}})";
  EXPECT_FALSE(files.find(root + "/nul.json", "a", error));
  EXPECT_NE(error.find("weight_map[\"a\"] must be a file name next to the index"),
            std::string::npos)
      << error;
  std::ofstream(root + "/config.json") << R"({"model_type": "llama"})";
  EXPECT_FALSE(files.find(root + "/config.json", "a", error));
  EXPECT_NE(error.find("has no \"weight_map\" object"), std::string::npos) << error;
}

// An index in the original per-expert format (save_pretrained's default for an MoE model) reads
// as the stacked model: gate_up_proj [E, 2X, H] is, per expert, its gate rows then its up rows.
TEST_F(BaseCheckpointTest, GathersStackedExpertsFromAPerExpertIndex) {
  const std::string prefix = "model.layers.0.mlp.experts.";
  writeFile("model-00002-of-00002.safetensors",
            {{prefix + "0.up_proj.weight", {2, 3}}, {prefix + "1.up_proj.weight", {2, 3}}});
  const std::vector<int32_t> up = data[0];
  writeFile("model-00001-of-00002.safetensors",
            {{prefix + "0.gate_proj.weight", {2, 3}}, {prefix + "1.gate_proj.weight", {2, 3}}});
  const std::vector<int32_t> gate = data[0];
  ASSERT_NE(gate, up);
  auto index = [&](bool complete) {
    std::ofstream(root + "/model.safetensors.index.json")
        << "{\"weight_map\": {\"" << prefix << "0.gate_proj.weight\": \"model-00001-of-00002.safetensors\", \""
        << prefix << "1.gate_proj.weight\": \"model-00001-of-00002.safetensors\", \"" << prefix
        << "0.up_proj.weight\": \"model-00002-of-00002.safetensors\""
        << (complete ? ", \"" + prefix + "1.up_proj.weight\": \"model-00002-of-00002.safetensors\""
                     : std::string())
        << "}}";
  };
  index(true);
  std::ofstream(root + "/config.json") << R"({"model_type": "qwen3_moe"})";
  const std::string path = root + "/model.safetensors.index.json";
  BaseFiles files;
  std::string error;
  std::optional<BaseTensor> tensor = files.find(path, prefix + "gate_up_proj", error);
  ASSERT_TRUE(tensor) << error;
  EXPECT_EQ(tensor->entry->shape, (std::vector<int64_t>{2, 4, 3}));
  std::vector<int32_t> stacked;
  for (int e = 0; e < 2; ++e) {
    stacked.insert(stacked.end(), gate.begin(), gate.end());
    stacked.insert(stacked.end(), up.begin(), up.end());
  }
  Mesh mesh;
  mesh.axisNames = {"tp"};
  mesh.shape = {2};
  // Rows over tp: each rank's slice takes rows of every expert's gate (rank 0) or up (rank 1).
  expectEveryRankReadsItsBox(*tensor, paramOf(prefix + "gate_up_proj", {2, 4, 3}, {{}, {0}}),
                             mesh, stacked);
  std::optional<std::vector<std::string>> names = files.tensorNames(path, error);
  ASSERT_TRUE(names) << error;
  EXPECT_EQ(*names, std::vector<std::string>{prefix + "gate_up_proj"});

  index(false); // expert 1's up_proj not listed
  BaseFiles again;
  EXPECT_FALSE(again.find(path, prefix + "gate_up_proj", error));
  EXPECT_NE(error.find("does not list every expert's gate and up tensor from 0 to 1"),
            std::string::npos)
      << error;
}

TEST_F(BaseCheckpointTest, SaysWhatDoesNotMatch) {
  std::string path = writeFile("base.safetensors", {{"w", {4, 6}}});
  BaseFiles files;
  std::string error;
  EXPECT_FALSE(files.find(path, "v", error));
  EXPECT_EQ(error, path + " has no tensor \"v\"; it has 1 (\"w\")");
  std::optional<BaseTensor> w = files.find(path, "w", error);
  ASSERT_TRUE(w) << error;
  EXPECT_FALSE(checkBaseTensor(*w, "layer.w", DType::BF16, {4, 6}, error));
  EXPECT_NE(error.find("is F32 [4, 6] but parameter 'layer.w' is BF16 [4, 6]"), std::string::npos)
      << error;
  EXPECT_FALSE(checkBaseTensor(*w, "layer.w", DType::F32, {6, 4}, error));
  EXPECT_NE(error.find("is F32 [4, 6] but parameter 'layer.w' is F32 [6, 4]"), std::string::npos)
      << error;
}

TEST_F(BaseCheckpointTest, AProgramOpensItsBaseTensors) {
  std::string path = writeFile("base.safetensors", {{"w", {4, 6}}});
  Program program;
  program.params.push_back(paramOf("w", {4, 6}, {}));
  program.params.push_back(paramOf("computed", {3}, {}));
  program.params[0].load = Param::Load{path, "w"};
  BaseCheckpoints bases;
  std::string error;
  ASSERT_TRUE(bases.open(program, error)) << error;
  ASSERT_NE(bases.tensor(0), nullptr);
  EXPECT_EQ(bases.tensor(0)->entry->name, "w");
  EXPECT_EQ(bases.tensor(1), nullptr);

  program.params[0].load = Param::Load{"no-such-base.safetensors", "w"};
  EXPECT_FALSE(bases.open(program, error));
  EXPECT_NE(error.find("parameter 'w' loads \"w\" from no-such-base.safetensors, which is not in "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(", the working directory: run where the file is"), std::string::npos)
      << error;
}

// The C API fills a loaded parameter from its base; without the base the program still opens,
// its computed parameters still fill, and a loaded one says why it cannot.
TEST_F(BaseCheckpointTest, TheCApiFillsLoadedParameters) {
  std::string base = writeFile("base.safetensors", {{"w", {6, 10}}});
  std::vector<int32_t> global = data[0];
  Mesh mesh;
  ASSERT_TRUE(testprog::parseMesh("tp=2", mesh));
  std::string kernels, error;
  ASSERT_TRUE(testprog::readFile(INITRT_TESTKERNELS_PATH, kernels));
  std::string dir = root + "/prog";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  std::ofstream(dir + "/kernels.so", std::ios::binary) << kernels;
  Program program = testprog::makeProgram(mesh, checksumHex(kernels.data(), kernels.size()));
  program.params.push_back(paramOf("loaded.w", {6, 10}, {{}, {0}}));
  program.params.back().load = Param::Load{base, "w"};
  const int64_t loaded = int64_t(program.params.size()) - 1;
  program.params.push_back(paramOf("loaded.v", {6, 10}, {{}, {0}}));
  program.params.back().load = Param::Load{base, "w"};
  ASSERT_TRUE(writeProgramJson(dir + "/program.json", program, error)) << error;

  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  std::vector<int32_t> buffer(30, -1); // rank 1's columns 5-9 of 6 rows
  ASSERT_EQ(initrt_fill(prog, 1, "loaded.w", buffer.data(), 120, 2, err, sizeof err), INITRT_OK)
      << err;
  for (int64_t row = 0; row < 6; ++row)
    for (int64_t col = 0; col < 5; ++col)
      EXPECT_EQ(buffer[size_t(row * 5 + col)], global[size_t(row * 10 + 5 + col)]);
  initrt_program_close(prog);

  ASSERT_EQ(std::remove(base.c_str()), 0);
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  std::vector<float> embed(30); // embed.weight [10, 6] split over tp: 5 rows
  EXPECT_EQ(initrt_fill(prog, 0, "embed.weight", embed.data(), 120, 1, err, sizeof err), INITRT_OK)
      << err;
  // Each loaded parameter is named in its own message.
  for (const char *name : {"loaded.w", "loaded.v"}) {
    EXPECT_EQ(initrt_fill(prog, 1, name, buffer.data(), 120, 1, err, sizeof err), INITRT_BAD_BASE);
    EXPECT_NE(std::string(err).find("initrt_fill: parameter '" + std::string(name) +
                                    "' loads \"w\" from " + base + ": " + base + ": no such file"),
              std::string::npos)
        << err;
  }
  std::vector<void *> bufs(program.params.size(), nullptr);
  bufs[size_t(loaded)] = buffer.data();
  EXPECT_EQ(initrt_fill_all(prog, 1, bufs.data(), 1, err, sizeof err), INITRT_BAD_BASE);
  EXPECT_STREQ(initrt_status_name(INITRT_BAD_BASE), "INITRT_BAD_BASE");
  initrt_program_close(prog);
}

} // namespace

// What a shard records of its base: every file read, the index included, and whether any of
// them changed since it was read.
TEST_F(BaseCheckpointTest, StampsNameEveryFileReadAndTheirChanges) {
  writeFile("model-00001-of-00001.safetensors", {{"a", {8}}});
  const std::string index = root + "/model.safetensors.index.json";
  std::ofstream(index) << R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}})";
  BaseFiles files;
  EXPECT_EQ(files.stamps(), "");
  std::string error;
  ASSERT_TRUE(files.find(index, "a", error)) << error;
  nlohmann::json stamps = nlohmann::json::parse(files.stamps());
  ASSERT_EQ(stamps.size(), 2u) << stamps.dump();
  const std::string shard = root + "/model-00001-of-00001.safetensors";
  struct stat info;
  ASSERT_EQ(::stat(shard.c_str(), &info), 0);
  EXPECT_EQ(stamps[shard]["bytes"], uint64_t(info.st_size));
  EXPECT_EQ(stamps[shard]["mtime"],
            nlohmann::json::array({info.st_mtim.tv_sec, info.st_mtim.tv_nsec}));
  EXPECT_EQ(stamps[shard]["ctime"],
            nlohmann::json::array({info.st_ctim.tv_sec, info.st_ctim.tv_nsec}));
  EXPECT_TRUE(stamps.contains(index));
  EXPECT_EQ(files.changedSinceOpened(), "");

  // Times as set by `touch -d`: one nanosecond of the modification time is a change.
  struct timespec times[2] = {{0, UTIME_OMIT}, info.st_mtim};
  ++times[1].tv_nsec;
  ASSERT_EQ(::utimensat(AT_FDCWD, shard.c_str(), times, 0), 0);
  EXPECT_EQ(files.changedSinceOpened(), shard);
  // So is an index rewritten, though it names the same files.
  BaseFiles again;
  ASSERT_TRUE(again.find(index, "a", error)) << error;
  std::ofstream(index) << R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}} )";
  EXPECT_EQ(again.changedSinceOpened(), index);
}
