// Which slice each rank holds: the torch.chunk rule, multi-axis splits, replicas and owners.
#include "initrt/base/sharding.h"

#include <gtest/gtest.h>

namespace initrt {
std::vector<int64_t> replicaRanks(const Mesh &mesh, const Param &param, int64_t rank);
}

using namespace initrt;

namespace {

Mesh makeMesh(std::vector<std::string> names, std::vector<int64_t> shape) {
  Mesh mesh;
  mesh.axisNames = std::move(names);
  mesh.shape = std::move(shape);
  return mesh;
}

Param makeParam(std::vector<int64_t> shape, std::vector<std::vector<int>> splitAxes) {
  Param param;
  param.name = "w";
  param.shape = std::move(shape);
  param.splitAxes = std::move(splitAxes);
  param.kernel = "k";
  return param;
}

std::vector<int64_t> lengths(int64_t size, int64_t parts) {
  std::vector<int64_t> result;
  for (int64_t i = 0; i < parts; ++i) {
    int64_t begin, length;
    chunkRange(size, parts, i, begin, length);
    result.push_back(length);
  }
  return result;
}

// Slices of all ranks tile the tensor: every element is held, replicas hold equal boxes.
int64_t ownedElements(const Mesh &mesh, const Param &param) {
  int64_t total = 0;
  for (int64_t r = 0; r < mesh.size(); ++r)
    if (isSliceOwner(mesh, param, r))
      total += sliceForRank(mesh, param, r).numElements();
  return total;
}

} // namespace

TEST(ChunkRange, FollowsTorchChunk) {
  EXPECT_EQ(lengths(10, 4), (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(lengths(5, 4), (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(lengths(3, 3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(lengths(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(lengths(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(lengths(7, 1), (std::vector<int64_t>{7}));
  int64_t begin, length;
  chunkRange(10, 4, 3, begin, length);
  EXPECT_EQ(begin, 9);
  chunkRange(5, 4, 3, begin, length);
  EXPECT_EQ(begin, 5); // an empty chunk sits at the end of the dim
  EXPECT_EQ(length, 0);
}

TEST(MeshCoords, RowMajorLastAxisFastest) {
  Mesh mesh = makeMesh({"dp", "tp"}, {2, 3});
  EXPECT_EQ(mesh.size(), 6);
  EXPECT_EQ(meshCoords(mesh, 0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(meshCoords(mesh, 1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(meshCoords(mesh, 3), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(meshCoords(mesh, 5), (std::vector<int64_t>{1, 2}));
  Mesh three = makeMesh({"a", "b", "c"}, {2, 2, 2});
  EXPECT_EQ(meshCoords(three, 6), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(meshCoords(makeMesh({}, {}), 0), (std::vector<int64_t>{}));
}

TEST(SliceForRank, SplitsEachDimOverItsAxes) {
  Mesh mesh = makeMesh({"dp", "tp"}, {2, 2});
  Param param = makeParam({10, 6}, {{0}, {1}});
  Slice slice = sliceForRank(mesh, param, 3);
  EXPECT_EQ(slice.offset, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(slice.shape, (std::vector<int64_t>{5, 3}));
  // Dims past split_axes and unmapped axes replicate.
  Param rowsOnly = makeParam({10, 6}, {{1}});
  EXPECT_EQ(sliceForRank(mesh, rowsOnly, 2).offset, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(sliceForRank(mesh, rowsOnly, 3).offset, (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(sliceForRank(mesh, rowsOnly, 3).shape, (std::vector<int64_t>{5, 6}));
}

TEST(SliceForRank, MultiAxisDimFirstListedAxisMajor) {
  Mesh mesh = makeMesh({"dp", "tp"}, {2, 3});
  Param dpMajor = makeParam({12}, {{0, 1}});
  Param tpMajor = makeParam({12}, {{1, 0}});
  // rank 1 = (dp 0, tp 1): part 0*3+1 = 1 with dp major; part 1*2+0 = 2 with tp major.
  EXPECT_EQ(sliceForRank(mesh, dpMajor, 1).offset[0], 2);
  EXPECT_EQ(sliceForRank(mesh, tpMajor, 1).offset[0], 4);
  // rank 3 = (dp 1, tp 0): part 3 with dp major; part 1 with tp major.
  EXPECT_EQ(sliceForRank(mesh, dpMajor, 3).offset[0], 6);
  EXPECT_EQ(sliceForRank(mesh, tpMajor, 3).offset[0], 2);
  for (int64_t r = 0; r < 6; ++r)
    EXPECT_EQ(sliceForRank(mesh, dpMajor, r).shape[0], 2);
  EXPECT_EQ(ownedElements(mesh, dpMajor), 12);
  EXPECT_EQ(ownedElements(mesh, tpMajor), 12);
}

TEST(SliceForRank, UnevenDimsUseTheChunkRule) {
  Mesh mesh = makeMesh({"dp"}, {4});
  Param param = makeParam({5, 2}, {{0}});
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < 4; ++r)
    rows.push_back(sliceForRank(mesh, param, r).shape[0]);
  EXPECT_EQ(rows, (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(ownedElements(mesh, param), 10);
}

TEST(Replicas, UnsplitAxesReplicate) {
  Mesh mesh = makeMesh({"dp", "tp"}, {2, 3});
  Param param = makeParam({6, 4}, {{1}}); // split over tp, replicated over dp
  EXPECT_EQ(replicaRanks(mesh, param, 4), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(isSliceOwner(mesh, param, 1));
  EXPECT_FALSE(isSliceOwner(mesh, param, 4));
  Param replicated = makeParam({3}, {});
  EXPECT_EQ(replicaRanks(mesh, replicated, 5), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  for (int64_t r = 0; r < 6; ++r)
    EXPECT_EQ(isSliceOwner(mesh, replicated, r), r == 0);
  Param sharded = makeParam({6, 6}, {{0}, {1}});
  for (int64_t r = 0; r < 6; ++r) {
    EXPECT_TRUE(isSliceOwner(mesh, sharded, r));
    EXPECT_EQ(replicaRanks(mesh, sharded, r), (std::vector<int64_t>{r}));
  }
}

TEST(Replicas, EqualEmptySlicesAreReplicas) {
  // 2 rows over 4 ranks: ranks 2 and 3 both hold the empty box at offset 2.
  Mesh mesh = makeMesh({"dp"}, {4});
  Param param = makeParam({2, 3}, {{0}});
  EXPECT_TRUE(sliceForRank(mesh, param, 2) == sliceForRank(mesh, param, 3));
  EXPECT_EQ(replicaRanks(mesh, param, 3), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(isSliceOwner(mesh, param, 2));
  EXPECT_FALSE(isSliceOwner(mesh, param, 3));
}

TEST(Replicas, OwnerIsLowestRankWithEqualSliceForAnyLayout) {
  // Brute force against the definition on meshes with uneven, empty and multi-axis splits.
  std::vector<Mesh> meshes = {makeMesh({"a"}, {5}), makeMesh({"a", "b"}, {2, 3}),
                              makeMesh({"a", "b", "c"}, {2, 3, 2})};
  std::vector<std::vector<int64_t>> shapes = {{1, 7}, {2, 0}, {5, 3}, {13, 2}};
  for (const Mesh &mesh : meshes) {
    int axes = int(mesh.shape.size());
    std::vector<std::vector<std::vector<int>>> layouts = {{}, {{0}}, {{}, {0}}};
    if (axes >= 2)
      layouts.insert(layouts.end(), {{{1, 0}}, {{0, 1}}, {{1}, {0}}, {{}, {1, 0}}});
    if (axes >= 3)
      layouts.insert(layouts.end(), {{{2, 0}, {1}}, {{2, 1, 0}}, {{1}, {2, 0}}});
    for (const std::vector<int64_t> &shape : shapes) {
      for (const auto &layout : layouts) {
        Param param = makeParam(shape, layout);
        for (int64_t r = 0; r < mesh.size(); ++r) {
          std::vector<int64_t> expected;
          for (int64_t other = 0; other < mesh.size(); ++other)
            if (sliceForRank(mesh, param, other) == sliceForRank(mesh, param, r))
              expected.push_back(other);
          EXPECT_EQ(replicaRanks(mesh, param, r), expected);
          EXPECT_EQ(isSliceOwner(mesh, param, r), expected.front() == r);
        }
        EXPECT_EQ(ownedElements(mesh, param), param.numElements());
      }
    }
  }
}

TEST(Replicas, RootHoldsTheSameSliceWithZeroOnCopyingAxes) {
  Mesh mesh = makeMesh({"dp", "tp", "pp"}, {2, 3, 2});
  Param rows = makeParam({7, 5}, {{0}}); // split over dp, copied over tp and pp
  std::vector<int64_t> roots = replicaRoots(mesh, rows);
  EXPECT_TRUE(isReplicated(mesh, rows));
  for (int64_t r = 0; r < mesh.size(); ++r) {
    EXPECT_TRUE(sliceForRank(mesh, rows, roots[size_t(r)]) == sliceForRank(mesh, rows, r)) << r;
    std::vector<int64_t> coords = meshCoords(mesh, roots[size_t(r)]);
    EXPECT_EQ(coords[0], meshCoords(mesh, r)[0]) << r;
    EXPECT_EQ(coords[1], 0) << r;
    EXPECT_EQ(coords[2], 0) << r;
  }
  Param everywhere = makeParam({4, 6, 2}, {{0}, {1}, {2}});
  EXPECT_FALSE(isReplicated(mesh, everywhere));
  roots = replicaRoots(mesh, everywhere);
  for (int64_t r = 0; r < mesh.size(); ++r)
    EXPECT_EQ(roots[size_t(r)], r);
}

namespace {

// How many boxes of writeBoxes, over every rank, hold each element of parameter `p`.
std::vector<int> writeCounts(const Program &program, size_t p) {
  const Param &param = program.params[p];
  std::vector<int> counts(size_t(param.numElements()), 0);
  for (int64_t r = 0; r < program.mesh.size(); ++r) {
    for (const ParamBox &box : writeBoxes(program, r)) {
      if (box.param != p)
        continue;
      EXPECT_EQ(box.box.offset.size(), param.shape.size());
      // Row-major walk of the box (at most 2 dims in these tests).
      int64_t rows = param.shape.empty() ? 1 : box.box.shape[0];
      int64_t cols = param.shape.size() > 1 ? box.box.shape[1] : 1;
      int64_t width = param.shape.size() > 1 ? param.shape[1] : 1;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          int64_t row = param.shape.empty() ? 0 : box.box.offset[0] + i;
          int64_t col = param.shape.size() > 1 ? box.box.offset[1] + j : 0;
          ++counts[size_t(row * width + col)];
        }
    }
  }
  return counts;
}

} // namespace

TEST(WriteBoxes, EveryElementWrittenOnceAndReplicasShareTheWork) {
  Program program;
  program.mesh = makeMesh({"dp", "tp"}, {4, 2});
  // 8 MiB of f32 split over tp and replicated over dp: each of the 4 replicas writes 1 MiB.
  program.params.push_back(makeParam({2048, 1024}, {{}, {1}}));
  // Too small to split: the first replica writes it whole.
  program.params.push_back(makeParam({16, 16}, {{1}}));
  // Replicated everywhere, 3 rows: at most 3 writers, the chunk rule over rows.
  program.params.push_back(makeParam({3, 1 << 20}, {}));
  // A scalar.
  program.params.push_back(makeParam({}, {}));
  // Not persistent: not written at all.
  program.params.push_back(makeParam({8}, {}));
  program.params.back().persistent = false;
  for (size_t p = 0; p + 1 < program.params.size(); ++p)
    for (int count : writeCounts(program, p))
      ASSERT_EQ(count, 1) << "param " << p;
  for (int64_t r = 0; r < program.mesh.size(); ++r)
    for (const ParamBox &box : writeBoxes(program, r))
      EXPECT_NE(box.param, size_t(4));

  std::vector<int64_t> bigWriters, smallWriters, rowWriters;
  for (int64_t r = 0; r < program.mesh.size(); ++r)
    for (const ParamBox &box : writeBoxes(program, r)) {
      if (box.param == 0) {
        bigWriters.push_back(r);
        EXPECT_EQ(box.box.shape, (std::vector<int64_t>{512, 512}));
      }
      if (box.param == 1)
        smallWriters.push_back(r);
      if (box.param == 2)
        rowWriters.push_back(r);
    }
  EXPECT_EQ(bigWriters, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(smallWriters, (std::vector<int64_t>{0, 1}));  // dp coordinate 0, both tp parts
  EXPECT_EQ(rowWriters, (std::vector<int64_t>{0, 1, 2})); // replica index = rank here
}

TEST(WriteBoxes, EmptySlicesWriteNothing) {
  Program program;
  program.mesh = makeMesh({"tp"}, {4});
  program.params.push_back(makeParam({2, 3}, {{0}})); // ranks 2 and 3 hold empty slices
  EXPECT_EQ(writeBoxes(program, 2).size(), 0u);
  EXPECT_EQ(writeBoxes(program, 3).size(), 0u);
  for (int count : writeCounts(program, 0))
    EXPECT_EQ(count, 1);
}

// A parameter on one pipeline stage: the ranks of that stage hold it as if there were no stage
// axis (split and replicated over the others), the other ranks hold nothing and own nothing.
TEST(Stages, OnlyTheStageHoldsAndOwns) {
  std::vector<Mesh> meshes = {makeMesh({"pp"}, {3}), makeMesh({"pp", "dp"}, {3, 2}),
                              makeMesh({"dp", "pp", "tp"}, {2, 3, 2})};
  for (const Mesh &mesh : meshes) {
    int stageAxis = mesh.shape.size() == 3 ? 1 : 0;
    std::vector<std::vector<std::vector<int>>> layouts = {{}};
    if (mesh.shape.size() >= 2)
      layouts.push_back({{mesh.shape.size() == 3 ? 0 : 1}});
    if (mesh.shape.size() == 3)
      layouts.insert(layouts.end(), {{{2, 0}}, {{}, {2}}, {{0}, {2}}});
    for (const auto &layout : layouts) {
      for (int64_t stage = 0; stage < 3; ++stage) {
        Param param = makeParam({5, 3}, layout);
        Param whole = param;
        param.stageAxis = stageAxis;
        param.stage = stage;
        for (int64_t r = 0; r < mesh.size(); ++r) {
          bool on = meshCoords(mesh, r)[size_t(stageAxis)] == stage;
          Slice slice = sliceForRank(mesh, param, r);
          if (on) {
            EXPECT_EQ(slice, sliceForRank(mesh, whole, r));
            std::vector<int64_t> expected;
            for (int64_t other = 0; other < mesh.size(); ++other)
              if (meshCoords(mesh, other)[size_t(stageAxis)] == stage &&
                  sliceForRank(mesh, param, other) == slice)
                expected.push_back(other);
            EXPECT_EQ(replicaRanks(mesh, param, r), expected);
            EXPECT_EQ(isSliceOwner(mesh, param, r), expected.front() == r);
          } else {
            EXPECT_EQ(slice.numElements(), 0);
            EXPECT_FALSE(isSliceOwner(mesh, param, r));
          }
          int64_t root = replicaRoots(mesh, param)[size_t(r)];
          EXPECT_EQ(sliceForRank(mesh, param, root), slice) << r;
        }
        EXPECT_EQ(ownedElements(mesh, param), param.numElements());
      }
    }
  }
}

TEST(WriteBoxes, StageParamsWrittenOnceByTheirStageAlone) {
  Program program;
  program.mesh = makeMesh({"pp", "dp"}, {2, 4});
  // 8 MiB of f32 on stage 1, replicated over dp: its 4 dp ranks write 2 MiB each.
  program.params.push_back(makeParam({2048, 1024}, {}));
  program.params.back().stageAxis = 0;
  program.params.back().stage = 1;
  // Split over dp on stage 0.
  program.params.push_back(makeParam({10, 3}, {{1}}));
  program.params.back().stageAxis = 0;
  program.params.back().stage = 0;
  for (size_t p = 0; p < program.params.size(); ++p)
    for (int count : writeCounts(program, p))
      ASSERT_EQ(count, 1) << "param " << p;
  std::vector<int64_t> writers[2];
  for (int64_t r = 0; r < program.mesh.size(); ++r)
    for (const ParamBox &box : writeBoxes(program, r))
      writers[box.param].push_back(r);
  EXPECT_EQ(writers[0], (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(writers[1], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(isReplicated(program.mesh, program.params[1]));
  EXPECT_TRUE(isReplicated(program.mesh, program.params[0]));
}
