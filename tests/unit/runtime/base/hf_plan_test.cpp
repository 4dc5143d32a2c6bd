// The hf layout's plan: save_pretrained's assignment of tensors to files, headers and offsets.
#include "initrt/base/hf_plan.h"

#include "initrt/base/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>

using namespace initrt;

namespace {

Param makeParam(const std::string &name, std::vector<int64_t> shape, DType dtype = DType::F32) {
  Param param;
  param.name = name;
  param.shape = std::move(shape);
  param.dtype = dtype;
  param.kernel = "k";
  return param;
}

} // namespace

TEST(HfPlan, SplitsAsSavePretrained) {
  Program program;
  program.params.push_back(makeParam("a", {10}));        // 40 bytes
  program.params.push_back(makeParam("b", {10}));        // 40: 80 fits in 100
  program.params.push_back(makeParam("c", {10}));        // 40: would make 120, new file
  program.params.push_back(makeParam("big", {50}));      // 200 > 100: a file of its own, listed
                                                          // before the one still being filled
  program.params.push_back(makeParam("d", {5}, DType::BF16)); // 10: joins c's file
  program.params.push_back(makeParam("buf", {4}));
  program.params.back().persistent = false;               // not stored
  program.params[0].aliases = {"tied"};
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, 100, plan, error)) << error;
  ASSERT_EQ(plan.files.size(), 3u);
  EXPECT_EQ(plan.files[0].name, "model-00001-of-00003.safetensors");
  EXPECT_EQ(plan.files[0].params, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(plan.files[1].params, (std::vector<size_t>{3}));
  EXPECT_EQ(plan.files[2].params, (std::vector<size_t>{2, 4}));
  EXPECT_EQ(plan.places[3].file, 1);
  EXPECT_EQ(plan.places[5].file, -1);
  EXPECT_EQ(plan.totalSize, 330u);

  // Each file's header is the reference writer's, and the offsets follow it.
  for (const HfFile &file : plan.files) {
    uint64_t length;
    std::memcpy(&length, file.header.data(), 8);
    EXPECT_EQ(file.header.size(), 8 + length);
    EXPECT_EQ(file.header.size() % 8, 0u);
    EXPECT_NE(file.header.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos);
    uint64_t end = file.header.size();
    for (size_t p : file.params)
      end = std::max(end, plan.places[p].offset + plan.places[p].bytes);
    EXPECT_EQ(file.size, end);
  }
  // Within c's file the F32 tensor comes first (the reference orders by alignment).
  EXPECT_EQ(plan.places[2].offset, plan.files[2].header.size());
  EXPECT_EQ(plan.places[4].offset, plan.places[2].offset + 40);

  std::string index = hfIndexJson(program, plan);
  EXPECT_NE(index.find("\"total_size\": 330"), std::string::npos);
  EXPECT_EQ(index.find("\"tied\""), std::string::npos); // save_pretrained lists no tied name
  EXPECT_EQ(index.find("\"buf\""), std::string::npos);
}

TEST(HfPlan, ParsesShardSizes) {
  uint64_t bytes = 0;
  EXPECT_TRUE(parseShardSize("5GB", bytes));
  EXPECT_EQ(bytes, 5000000000ull);
  EXPECT_TRUE(parseShardSize("64MiB", bytes));
  EXPECT_EQ(bytes, 64ull << 20);
  EXPECT_TRUE(parseShardSize("500mb", bytes));
  EXPECT_EQ(bytes, 500000000ull);
  EXPECT_TRUE(parseShardSize("4096", bytes));
  EXPECT_EQ(bytes, 4096ull);
  for (const char *bad : {"", "GB", "0", "5 GB", "5TB", "-1", "1.5GB", "99999999999999999999"})
    EXPECT_FALSE(parseShardSize(bad, bytes)) << bad;
}

namespace {

// A mixtral-like program: the router, a stacked gate_up_proj [E=2, 2X=4, H=3] and down_proj
// [2, 3, 2], layer 10 before layer 2 in program order, and lm_head last.
Program moeProgram(const std::string &modelType) {
  Program program;
  program.hfConfig = "{\"model_type\": \"" + modelType + "\"}";
  program.params.push_back(makeParam("model.layers.10.mlp.gate.weight", {2, 3}));
  program.params.push_back(makeParam("model.layers.2.mlp.experts.gate_up_proj", {2, 4, 3}));
  program.params.push_back(makeParam("model.layers.2.mlp.experts.down_proj", {2, 3, 2}));
  program.params.push_back(makeParam("lm_head.weight", {5, 3}));
  return program;
}

} // namespace

TEST(HfPlan, PerExpertNamesOrderAndPieces) {
  const Program program = moeProgram("mixtral");
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error, HfExperts::PerExpert))
      << error;
  ASSERT_EQ(plan.files.size(), 1u);
  // Sorted by dot_natural_key (lm_head first, layer 2 before layer 10), each stacked tensor one
  // group per projection, experts 0 and 1, under mixtral's names.
  std::vector<std::string> names;
  for (const auto &entry : plan.stored)
    names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "lm_head.weight",
                       "model.layers.2.block_sparse_moe.experts.0.w2.weight",
                       "model.layers.2.block_sparse_moe.experts.1.w2.weight",
                       "model.layers.2.block_sparse_moe.experts.0.w1.weight",
                       "model.layers.2.block_sparse_moe.experts.1.w1.weight",
                       "model.layers.2.block_sparse_moe.experts.0.w3.weight",
                       "model.layers.2.block_sparse_moe.experts.1.w3.weight",
                       "model.layers.10.block_sparse_moe.gate.weight"}));
  EXPECT_EQ(plan.places[0].storedName, "model.layers.10.block_sparse_moe.gate.weight");
  EXPECT_TRUE(plan.places[0].pieces.empty());
  EXPECT_EQ(plan.totalSize, uint64_t(4 * (6 + 24 + 12 + 15)));
  // gate_up_proj: expert e's gate rows are bytes [48e, 48e + 24), its up rows the next 24; the
  // pieces tile the tensor in order, each where the header puts its tensor.
  SafetensorsReader reader;
  const std::string path = ::testing::TempDir() + "/per_expert.safetensors";
  {
    std::string file = plan.files[0].header;
    file.resize(plan.files[0].size, '\0');
    FILE *out = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(out);
    std::fwrite(file.data(), 1, file.size(), out);
    std::fclose(out);
  }
  ASSERT_TRUE(reader.open(path, error)) << error;
  const char *projs[] = {"w1", "w3"};
  const std::vector<HfPiece> &pieces = plan.places[1].pieces;
  ASSERT_EQ(pieces.size(), 4u);
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i].begin, 24 * i);
    EXPECT_EQ(pieces[i].bytes, 24u);
    const std::string name = "model.layers.2.block_sparse_moe.experts." + std::to_string(i / 2) +
                             "." + projs[i % 2] + ".weight";
    const SafetensorsEntry *entry = reader.find(name);
    ASSERT_TRUE(entry) << name;
    EXPECT_EQ(entry->shape, (std::vector<int64_t>{2, 3})) << name;
    EXPECT_EQ(reader.dataStart() + entry->begin, pieces[i].offset) << name;
  }
  EXPECT_EQ(plan.places[1].offset, pieces[0].offset);
  ASSERT_EQ(plan.places[2].pieces.size(), 2u);
  EXPECT_EQ(reader.find("model.layers.2.block_sparse_moe.experts.1.w2.weight")->shape,
            (std::vector<int64_t>{3, 2}));
}

TEST(HfPlan, PerExpertGroupsShareAFile) {
  // 60-byte limit: lm_head (60) alone; each group of two 24-byte tensors (48 bytes, counted
  // whole) in a file of its own, though one of its tensors would fit beside another group; the
  // router (24) after the up group would pass the limit too.
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(moeProgram("qwen3_moe"), 60, plan, error, HfExperts::PerExpert))
      << error;
  std::map<std::string, int64_t> file(plan.stored.begin(), plan.stored.end());
  EXPECT_EQ(file["lm_head.weight"], 0);
  EXPECT_EQ(file["model.layers.2.mlp.experts.0.down_proj.weight"], 1);
  EXPECT_EQ(file["model.layers.2.mlp.experts.1.down_proj.weight"], 1);
  EXPECT_EQ(file["model.layers.2.mlp.experts.0.gate_proj.weight"], 2);
  EXPECT_EQ(file["model.layers.2.mlp.experts.1.gate_proj.weight"], 2);
  EXPECT_EQ(file["model.layers.2.mlp.experts.0.up_proj.weight"], 3);
  EXPECT_EQ(file["model.layers.10.mlp.gate.weight"], 4);
  EXPECT_EQ(plan.files.size(), 5u);
  // One gate_up_proj in two files: its pieces alternate between them.
  const std::vector<HfPiece> &pieces = plan.places[1].pieces;
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ((std::vector<int64_t>{pieces[0].file, pieces[1].file, pieces[2].file, pieces[3].file}),
            (std::vector<int64_t>{2, 3, 2, 3}));
  EXPECT_TRUE(plan.places[0].storedName.empty());
}

TEST(HfPlan, PerExpertLeavesDenseModelsAndRefusesUnknownTypes) {
  Program dense;
  dense.hfConfig = "{\"model_type\": \"llama\"}";
  dense.params.push_back(makeParam("model.layers.10.mlp.down_proj.weight", {2, 3}));
  dense.params.push_back(makeParam("model.layers.2.mlp.down_proj.weight", {2, 3}));
  HfPlan stacked, perExpert;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(dense, 30, stacked, error));
  ASSERT_TRUE(planHfCheckpoint(dense, 30, perExpert, error, HfExperts::PerExpert)) << error;
  EXPECT_EQ(hfIndexJson(dense, stacked), hfIndexJson(dense, perExpert));
  EXPECT_EQ(perExpert.stored[0].first, "model.layers.10.mlp.down_proj.weight"); // module order
  EXPECT_TRUE(perExpert.places[0].pieces.empty());

  HfPlan plan;
  EXPECT_FALSE(planHfCheckpoint(moeProgram("olmoe"), 100, plan, error, HfExperts::PerExpert));
  EXPECT_NE(error.find("model type 'olmoe'"), std::string::npos) << error;
  EXPECT_TRUE(planHfCheckpoint(moeProgram("olmoe"), 100, plan, error)) << error;
  // Without --hf-experts: per expert where the names are known, else the one format there is.
  EXPECT_EQ(defaultHfExperts(moeProgram("olmoe")), HfExperts::Stacked);
  EXPECT_EQ(defaultHfExperts(moeProgram("")), HfExperts::Stacked);
  EXPECT_EQ(defaultHfExperts(moeProgram("qwen3_moe")), HfExperts::PerExpert);
  EXPECT_EQ(defaultHfExperts(dense), HfExperts::PerExpert);
}

// Every name a per-expert plan stores reads back as its stacked tensor and its place in it.
TEST(HfPlan, StoredNamesReadBackAsTheStacked) {
  for (const char *type : {"mixtral", "qwen3_moe"}) {
    const Program program = moeProgram(type);
    HfPlan plan;
    std::string error;
    ASSERT_TRUE(planHfCheckpoint(program, 100, plan, error, HfExperts::PerExpert)) << error;
    std::map<std::string, std::vector<std::pair<int64_t, int>>> parts;
    for (const auto &[name, file] : plan.stored) {
      std::string stacked;
      int64_t expert;
      int group, groups;
      ASSERT_TRUE(hfStackedName(type, name, stacked, expert, group, groups)) << name;
      bool known = false;
      for (const Param &param : program.params)
        known = known || param.name == stacked;
      EXPECT_TRUE(known) << name << " -> " << stacked;
      if (expert >= 0)
        parts[stacked].push_back({expert, group});
      EXPECT_EQ(groups, stacked.find("gate_up_proj") != std::string::npos ? 2 : 1) << name;
    }
    // Each stacked tensor's pieces, in plan order, are its (expert, group) parts in byte order.
    for (size_t p = 0; p < program.params.size(); ++p)
      if (!plan.places[p].pieces.empty())
        EXPECT_EQ(parts[program.params[p].name].size(), plan.places[p].pieces.size());
  }
  std::string stacked;
  int64_t expert;
  int group, groups;
  EXPECT_FALSE(hfStackedName("llama", "model.layers.0.mlp.down_proj.weight", stacked, expert,
                             group, groups));
  ASSERT_TRUE(hfStackedName("mixtral", "model.layers.3.block_sparse_moe.experts.12.w3.weight",
                            stacked, expert, group, groups));
  EXPECT_EQ(stacked, "model.layers.3.mlp.experts.gate_up_proj");
  EXPECT_EQ(expert, 12);
  EXPECT_EQ(group, 1);
  ASSERT_TRUE(hfStackedName("mixtral", "model.layers.3.block_sparse_moe.gate.weight", stacked,
                            expert, group, groups));
  EXPECT_EQ(stacked, "model.layers.3.mlp.gate.weight");
  EXPECT_EQ(expert, -1);
}
