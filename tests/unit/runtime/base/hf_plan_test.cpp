// The hf layout's plan: save_pretrained's assignment of tensors to files, headers and offsets.
#include "initrt/base/hf_plan.h"

#include "initrt/base/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

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
