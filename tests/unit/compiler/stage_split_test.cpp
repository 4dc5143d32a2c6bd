// The pipeline rules of a rules file (ir-spec/sharding.md): "split": "bytes" balances the
// per-rank bytes of contiguous stages, and "preset" takes a preset's rules with that split.
#include "initc/Transforms/Sharding.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace initc;

namespace {

std::string rulesFile(const std::string &text) {
  llvm::SmallString<128> path;
  int fd;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("stage-split", "json", fd, path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return path.str().str();
}

MeshSpec meshOf(const std::string &text) {
  MeshSpec mesh;
  std::string error;
  EXPECT_TRUE(succeeded(parseMeshSpec(text, mesh, error))) << error;
  return mesh;
}

/// An embedding, one parameter per layer and a head: the stage of each, split under `rules`.
std::vector<int64_t> stagesOf(const std::string &rules, const std::string &mesh,
                              const std::vector<int64_t> &bytes, std::string &error) {
  std::vector<ParamShape> params;
  params.push_back({"embed.weight", {4}, {}});
  for (size_t i = 0; i + 2 < bytes.size(); ++i)
    params.push_back({"layers." + std::to_string(i) + ".w", {4}, {}});
  params.push_back({"head.weight", {4}, {}});
  std::optional<ShardingRules> loaded = ShardingRules::load(rulesFile(rules), meshOf(mesh), error);
  if (!loaded)
    return {};
  std::vector<int64_t> stages;
  if (failed(loaded->assignStages(params, bytes, stages, error)))
    return {};
  return stages;
}

const char *kBytes = R"({"preset": "replicated", "pipeline": {"axis": "pp", "split": "bytes"}})";

TEST(StageSplit, BytesBalanceTheHeaviestStage) {
  std::string error;
  // Layer 3 weighs four others: torchtitan's split (3 items each) puts layers 2 and 3 on stage 1
  // (51 bytes there); balanced by bytes, layer 2 moves to stage 0 (31 and 41).
  EXPECT_EQ(stagesOf(kBytes, "pp=2", {1, 10, 10, 10, 40, 1}, error),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 1}))
      << error;
  EXPECT_EQ(stagesOf(R"({"preset": "replicated", "pipeline": {"axis": "pp"}})", "pp=2",
                     {1, 10, 10, 10, 40, 1}, error),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 1}))
      << error;
  // Every stage gets something, even when fewer would meet the heaviest stage's bytes.
  EXPECT_EQ(stagesOf(kBytes, "pp=4", {1, 100, 1, 1, 1}, error),
            (std::vector<int64_t>{0, 1, 2, 2, 3}))
      << error;
}

TEST(StageSplit, BadInput) {
  std::string error;
  EXPECT_TRUE(stagesOf(kBytes, "pp=5", {1, 1, 1, 1}, error).empty());
  EXPECT_NE(error.find("mesh axis 'pp' has 5 pipeline stages but the model has 2 layers: the "
                       "bytes split"),
            std::string::npos)
      << error;
  EXPECT_TRUE(stagesOf(R"({"preset": "fsdp", "params": {"*": [["dp"]]}})", "dp=2", {1, 1, 1},
                       error)
                  .empty());
  EXPECT_NE(error.find("\"logical_axes\" and \"params\" cannot go beside it"), std::string::npos)
      << error;
  EXPECT_TRUE(stagesOf(R"({"pipeline": {"axis": "pp", "split": "bytes", "stages": [[0]]}})",
                       "pp=1", {1, 1, 1}, error)
                  .empty());
  EXPECT_NE(error.find("gives both \"stages\" and \"split\""), std::string::npos) << error;
  EXPECT_TRUE(stagesOf(R"({"pipeline": {"axis": "pp", "split": "weights"}})", "pp=1", {1, 1, 1},
                       error)
                  .empty());
  EXPECT_NE(error.find(".split must be \"layers\""), std::string::npos) << error;
  EXPECT_TRUE(stagesOf(R"({"preset": "fsdp3"})", "dp=2", {1, 1, 1}, error).empty());
  EXPECT_NE(error.find("\"preset\" must name one of"), std::string::npos) << error;
}

} // namespace
