// The hf layout's pieces that stand alone: where a box lies in its file (BoxRuns, against a
// brute-force walk of the tensor), how many writes a rank issues, and the record read back.
#include "checkpoint_fixture.h"

#include "checkpoint/hf_files.h"

#include <filesystem>
#include <fstream>

namespace {

using namespace initrt::hf;

// The file offset of every element of `box`, in the box's row-major order, one by one.
std::vector<uint64_t> elementOffsets(const std::vector<int64_t> &shape, const Slice &box,
                                     uint64_t elementBytes, uint64_t base) {
  std::vector<uint64_t> offsets;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < box.numElements(); ++n) {
    uint64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      linear = linear * uint64_t(shape[d]) + uint64_t(box.offset[d] + index[d]);
    offsets.push_back(base + linear * elementBytes);
    for (size_t d = shape.size(); d-- > 0;)
      if (++index[d] < box.shape[d])
        break;
      else
        index[d] = 0;
  }
  return offsets;
}

std::vector<uint64_t> runOffsets(const BoxRuns &runs, uint64_t elementBytes) {
  std::vector<uint64_t> offsets;
  for (uint64_t r = 0; r < runs.count(); ++r)
    for (uint64_t b = 0; b < runs.runBytes(); b += elementBytes)
      offsets.push_back(runs.runOffset(r) + b);
  return offsets;
}

TEST(HfBoxRuns, MatchEveryElementsPlace) {
  const std::vector<int64_t> shape = {5, 4, 7};
  const std::vector<Slice> boxes = {
      {{0, 0, 0}, {5, 4, 7}}, // whole: one run
      {{2, 0, 0}, {3, 4, 7}}, // rows: one run
      {{1, 1, 0}, {1, 2, 7}}, // one row, part of dim 1: still one run
      {{1, 1, 0}, {2, 2, 7}}, // strided on dim 0
      {{0, 0, 3}, {5, 4, 4}}, // split on the last dim: a run per row
      {{4, 3, 6}, {1, 1, 1}}, // one element
  };
  const std::vector<uint64_t> expectedRuns = {1, 1, 1, 2, 20, 1};
  for (size_t b = 0; b < boxes.size(); ++b) {
    BoxRuns runs(shape, boxes[b], 2, 1000);
    EXPECT_EQ(runs.count(), expectedRuns[b]) << "box " << b;
    EXPECT_EQ(runOffsets(runs, 2), elementOffsets(shape, boxes[b], 2, 1000)) << "box " << b;
  }
  BoxRuns scalar({}, Slice{{}, {}}, 8, 64);
  EXPECT_EQ(scalar.count(), 1u);
  EXPECT_EQ(scalar.runBytes(), 8u);
  EXPECT_EQ(scalar.runOffset(0), 64u);
  BoxRuns empty(shape, Slice{{0, 0, 0}, {0, 4, 7}}, 4, 0);
  EXPECT_EQ(empty.count() * empty.runBytes(), 0u);
}

TEST(HfWriteCalls, ContiguousBoxesTakeOneCallPerPiece) {
  Program program;
  program.mesh.axisNames = {"tp"};
  program.mesh.shape = {4};
  program.programId = "0123456789abcdef";
  program.params.push_back(makeParam("col", DType::BF16, {1024, 512}, {{0}}));  // rows
  program.params.push_back(makeParam("row", DType::BF16, {1024, 512}, {{}, {0}})); // columns
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error)) << error;
  // Rank 1: col is 256 rows of 1 KiB, one run of 256 KiB; row is 1024 runs of 256 bytes.
  EXPECT_EQ(countWriteCalls(program, plan, 1, 64 << 10, /*windows=*/false), 4u + 1024u);
  // A piece that ends inside a run costs one more call.
  EXPECT_EQ(countWriteCalls(program, plan, 1, 1000, /*windows=*/false), 263u + 1024u + 254u);
  // Through a window, the 1024 short runs (1 MiB apart at most) are one mmap and one munmap.
  EXPECT_EQ(countWriteCalls(program, plan, 1, 64 << 10), 4u + 2u);
}

TEST(HfWindow, StartsOnAPageAndCoversTheRun) {
  uint64_t begin = 0, end = 0;
  windowFor(10000, 10100, 1ull << 40, 4096, begin, end);
  EXPECT_EQ(begin, 8192u);
  EXPECT_EQ(end, 8192u + kWindowBytes);
  windowFor(10000, 10100, 20000, 4096, begin, end); // clipped to the file
  EXPECT_EQ(end, 20000u);
  windowFor(4096, 4096 + kWindowBytes + 7, 1ull << 40, 4096, begin, end); // a long run
  EXPECT_EQ(end, 4096 + kWindowBytes + 7);
}

TEST_F(CheckpointTest, RecordReadsBack) {
  Program program = tinyProgram();
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error)) << error;
  std::vector<std::vector<std::string>> sums(size_t(program.mesh.size()));
  for (size_t r = 0; r < sums.size(); ++r) {
    sums[r].assign(program.params.size(), "");
    for (const ParamBox &box : writeBoxes(program, int64_t(r)))
      sums[r][box.param] = "00000000000000" + std::to_string(10 + r);
  }
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + kRecordFile) << recordJson(program, plan, 123, sums);
  Record record;
  ASSERT_TRUE(readRecord(dir, record, error)) << error;
  EXPECT_EQ(record.programId, program.programId);
  EXPECT_EQ(record.maxShardSize, 123u);
  ASSERT_EQ(record.files.size(), plan.files.size());
  EXPECT_EQ(record.files[0].size, plan.files[0].size);
  const TensorRecord &w = record.tensors.at("w");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(w.offset, plan.places[0].offset);
  int64_t elements = 0;
  for (const SliceRecord &slice : w.slices) {
    elements += slice.box.numElements();
    EXPECT_EQ(slice.checksum, "00000000000000" + std::to_string(10 + slice.rank));
  }
  EXPECT_EQ(elements, 15); // each element once
  EXPECT_EQ(record.tensors.count("rope"), 0u); // not persistent

  std::ofstream(dir + "/" + kRecordFile) << "{\"format\": \"initc-hf\", \"version\": 9}";
  EXPECT_FALSE(readRecord(dir, record, error));
  EXPECT_NE(error.find("version 9"), std::string::npos) << error;
}

} // namespace
