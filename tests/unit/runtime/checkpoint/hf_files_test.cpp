// The hf layout's pieces that stand alone: where a box lies in its file (BoxRuns, against a
// brute-force walk of the tensor), how many writes a rank issues, the record and the sums files
// read back.
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

// Written per expert, the writer cuts a run where each expert's tensor ends: a call per piece.
TEST(HfWriteCalls, PerExpertCutsAtEveryPiece) {
  Program program;
  program.mesh.axisNames = {"tp"};
  program.mesh.shape = {2};
  program.programId = "0123456789abcdef";
  program.hfConfig = "{\"model_type\": \"qwen3_moe\"}";
  // Rows over tp: rank 1's box is one run across all 4 experts' up rows, [4, 3 of 6, 5].
  program.params.push_back(
      makeParam("model.layers.0.mlp.experts.gate_up_proj", DType::BF16, {4, 6, 5}, {{}, {0}}));
  HfPlan stacked, perExpert;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, stacked, error)) << error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, perExpert, error,
                               HfExperts::PerExpert))
      << error;
  // A run per expert (its 3 rows are 30 contiguous bytes) either way; per expert each is one
  // piece, the up_proj of its expert, so no more calls than stacked here...
  EXPECT_EQ(countWriteCalls(program, stacked, 1, 1 << 20, false), 4u);
  EXPECT_EQ(countWriteCalls(program, perExpert, 1, 1 << 20, false), 4u);
  // ...but rank 0's rows [0, 3) of each expert are the gate rows: also one piece each.
  EXPECT_EQ(countWriteCalls(program, perExpert, 0, 1 << 20, false), 4u);
  // The whole tensor on one rank: one run stacked, 8 pieces per expert.
  program.params[0].splitAxes = {};
  EXPECT_EQ(countWriteCalls(program, stacked, 0, 1 << 20, false), 1u);
  EXPECT_EQ(countWriteCalls(program, perExpert, 0, 1 << 20, false), 8u);
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

// The record lists no box: read back, it is a program whose writeBoxes are the writer's.
TEST_F(CheckpointTest, RecordReadsBack) {
  for (Program program : {tinyProgram(), gridProgram()}) {
    HfPlan plan;
    std::string error;
    ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error)) << error;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/" + kRecordFile) << recordJson(program, plan, 123);
    Record record;
    ASSERT_TRUE(readRecord(dir, record, error)) << error;
    EXPECT_EQ(record.programId, program.programId);
    EXPECT_EQ(record.model, program.modelName);
    EXPECT_EQ(record.maxShardSize, 123u);
    ASSERT_EQ(record.files.size(), plan.files.size());
    EXPECT_EQ(record.files[0].size, plan.files[0].size);
    EXPECT_EQ(record.tensors.count("rope"), 0u); // not persistent
    const Program read = record.program();
    EXPECT_EQ(read.mesh.shape, program.mesh.shape);
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank) {
      std::vector<ParamBox> written = writeBoxes(program, rank), recomputed = writeBoxes(read, rank);
      ASSERT_EQ(written.size(), recomputed.size()) << rank;
      for (size_t b = 0; b < written.size(); ++b) {
        EXPECT_EQ(program.params[written[b].param].name, read.params[recomputed[b].param].name);
        EXPECT_EQ(written[b].box, recomputed[b].box);
      }
    }
  }
  const TensorRecord w = [&] {
    Record record;
    std::string error;
    readRecord(dir, record, error);
    return record.tensors.at("cube");
  }();
  EXPECT_EQ(w.shape, (std::vector<int64_t>{5, 4, 7}));
  EXPECT_EQ(w.splitAxes, (std::vector<std::vector<int>>{{0}, {}, {1}}));

  std::string error;
  Record record;
  std::ofstream(dir + "/" + kRecordFile) << "{\"format\": \"initc-hf\", \"version\": 9}";
  EXPECT_FALSE(readRecord(dir, record, error));
  EXPECT_NE(error.find("version 9"), std::string::npos) << error;
}

// Another rule (or minimum box size) would give other boxes: the record is refused, not misread.
TEST_F(CheckpointTest, RecordOfAnotherBoxRuleIsRefused) {
  Program program = tinyProgram();
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(program, kDefaultMaxShardBytes, plan, error)) << error;
  std::string text = recordJson(program, plan, 123);
  const std::string size = "\"min_box_bytes\": " + std::to_string(kMinWriteBoxBytes);
  ASSERT_NE(text.find(size), std::string::npos) << text;
  text.replace(text.find(size), size.size(), "\"min_box_bytes\": 4096");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + kRecordFile) << text;
  Record record;
  EXPECT_FALSE(readRecord(dir, record, error));
  EXPECT_NE(error.find("at least 4096 bytes"), std::string::npos) << error;
}

// A sums file reads back only whole and as the file of this rank of this checkpoint.
TEST_F(CheckpointTest, SumsFileReadsBackAndRefusesDamage) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/rank-00001.sums";
  const std::vector<uint64_t> sums = {1, 0xfedcba9876543210ull, 42};
  const std::string bytes = sumsFileBytes("prog-id", 1, 4, sums);
  // 40 fixed bytes, the id padded to 48, three sums, its own checksum.
  ASSERT_EQ(bytes.size(), 48u + 3 * 8 + 8);
  EXPECT_EQ(bytes.compare(0, 8, "INITCSUM"), 0);
  auto write = [&](const std::string &contents) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  };
  auto refused = [&](const std::string &id, int64_t rank, int64_t world, uint64_t boxes) {
    std::vector<uint64_t> read;
    std::string error;
    EXPECT_FALSE(readSumsFile(path, id, rank, world, boxes, read, error));
    return error;
  };
  write(bytes);
  std::vector<uint64_t> read;
  std::string error;
  ASSERT_TRUE(readSumsFile(path, "prog-id", 1, 4, 3, read, error)) << error;
  EXPECT_EQ(read, sums);
  EXPECT_NE(refused("prog-ie", 1, 4, 3).find("another program's"), std::string::npos);
  EXPECT_NE(refused("prog-id", 2, 4, 3).find("is rank 1 of 4's, not rank 2 of 4's"),
            std::string::npos);
  EXPECT_NE(refused("prog-id", 1, 4, 4).find("lists 3 boxes, not the 4"), std::string::npos);
  write(bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(refused("prog-id", 1, 4, 3).find("(truncated)"), std::string::npos);
  write(bytes + "x");
  EXPECT_NE(refused("prog-id", 1, 4, 3).find("(changed)"), std::string::npos);
  for (size_t at : {size_t(50), bytes.size() - 1}) { // a checksum, then its own
    std::string changed = bytes;
    changed[at] ^= 1;
    write(changed);
    EXPECT_NE(refused("prog-id", 1, 4, 3).find("does not match its own checksum"),
              std::string::npos);
  }
  ::unlink(path.c_str());
  EXPECT_NE(refused("prog-id", 1, 4, 3).find("is missing"), std::string::npos);
}

// The record's size depends on the tensors, not on the ranks: the same program on 16,384 ranks
// (dp=512,tp=32, as Llama-3.1-405B's) records no more than on 4, and each rank's sums file
// holds 8 bytes per box it writes.
TEST_F(CheckpointTest, RecordSizeDoesNotGrowWithTheMesh) {
  auto program = [](int64_t dp, int64_t tp) {
    Program out;
    out.programId = "id";
    out.mesh.axisNames = {"dp", "tp"};
    out.mesh.shape = {dp, tp};
    for (int layer = 0; layer < 4; ++layer) {
      out.params.push_back(makeParam("l" + std::to_string(layer) + ".w", DType::BF16,
                                     {16384, 16384}, {{0}, {1}}));
      out.params.push_back(makeParam("l" + std::to_string(layer) + ".norm", DType::BF16, {16384},
                                     {}));
    }
    return out;
  };
  const Program small = program(2, 2), large = program(512, 32);
  HfPlan plan;
  std::string error;
  ASSERT_TRUE(planHfCheckpoint(small, kDefaultMaxShardBytes, plan, error)) << error;
  const size_t smallBytes = recordJson(small, plan, kDefaultMaxShardBytes).size();
  ASSERT_TRUE(planHfCheckpoint(large, kDefaultMaxShardBytes, plan, error)) << error;
  const size_t largeBytes = recordJson(large, plan, kDefaultMaxShardBytes).size();
  EXPECT_LE(largeBytes, smallBytes + 16) << "only the mesh's numbers are longer";
  // Rank 0 writes a box of each of the 8 tensors (the norms' 32 KiB stay with one replica).
  const std::vector<ParamBox> boxes = writeBoxes(large, 0);
  EXPECT_EQ(boxes.size(), 8u);
  EXPECT_EQ(sumsFileBytes("id", 0, 16384, std::vector<uint64_t>(boxes.size())).size(),
            40u + 8 + 8 * boxes.size() + 8);
}

} // namespace
