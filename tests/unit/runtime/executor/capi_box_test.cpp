// initrt_fill_box: any box of any parameter, into contiguous or strided memory, has the bytes the
// executor computes for the ranks of a mesh, whatever mesh the program was compiled for; and
// initrt_fill_boxes, many boxes in one run, the same bytes as one call per box.
#include "executor/executor.h"
#include "initrt/base/program_io.h"
#include "initrt/initrt.h"
#include "testprogram.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

using namespace initrt;

namespace {

class CApiBoxTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-capi-box-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + root).c_str()); }

  std::string makeProgramDir(const std::string &name, const std::string &meshText) {
    Mesh mesh;
    EXPECT_TRUE(testprog::parseMesh(meshText, mesh));
    std::string dir = root + "/" + name;
    std::string error;
    EXPECT_TRUE(testprog::writeProgramDir(dir, mesh, INITRT_TESTKERNELS_PATH, error)) << error;
    return dir;
  }

  std::string root;
};

// Element `coords` of a row-major tensor of `shape`.
int64_t linear(const std::vector<int64_t> &coords, const std::vector<int64_t> &shape) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    at = at * shape[d] + coords[d];
  return at;
}

} // namespace

TEST_F(CApiBoxTest, EveryRanksSliceIsTheExecutorsShardOfAnyMesh) {
  // One program per mesh; each rank's slice asked of a program compiled for another mesh.
  std::string one = makeProgramDir("one", "dp=1");
  std::string four = makeProgramDir("four", "dp=2,tp=2");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(four, program, error)) << error;
  auto kernels = KernelLibrary::load(four, program, error);
  ASSERT_TRUE(kernels) << error;
  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(one.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  for (int64_t rank = 0; rank < 4; ++rank) {
    RankShards shards;
    ASSERT_TRUE(computeRank(program, *kernels, rank, false, RunOptions(), shards, error)) << error;
    for (size_t p = 0; p < program.params.size(); ++p) {
      const ShardTensor &tensor = shards.tensors[p];
      std::vector<char> buffer(tensor.bytes + 1, 0x55);
      ASSERT_EQ(initrt_fill_box(prog, program.params[p].name.c_str(),
                                int32_t(tensor.slice.offset.size()), tensor.slice.offset.data(),
                                tensor.slice.shape.data(), nullptr, buffer.data(), tensor.bytes,
                                2, err, sizeof err),
                INITRT_OK)
          << err;
      EXPECT_EQ(std::memcmp(buffer.data(), tensor.data, tensor.bytes), 0)
          << program.params[p].name << " rank " << rank;
      EXPECT_EQ(buffer[tensor.bytes], 0x55) << "wrote past the box of " << program.params[p].name;
    }
  }
  initrt_program_close(prog);
}

TEST_F(CApiBoxTest, RandomBoxesIntoStridedMemoryHoldTheWholeTensorsElements) {
  std::string dir = makeProgramDir("one", "dp=1");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  auto kernels = KernelLibrary::load(dir, program, error);
  ASSERT_TRUE(kernels) << error;
  RankShards whole; // on a 1-device mesh, rank 0 holds every whole tensor
  ASSERT_TRUE(computeRank(program, *kernels, 0, false, RunOptions(), whole, error)) << error;
  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;

  std::mt19937_64 random(52);
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    const size_t rank = param.shape.size();
    const int64_t elementBytes = dtypeBytes(param.dtype);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<int64_t> offset(rank), shape(rank), strides(rank);
      for (size_t d = 0; d < rank; ++d) {
        offset[d] = int64_t(random() % uint64_t(param.shape[d] + 1));
        shape[d] = int64_t(random() % uint64_t(param.shape[d] - offset[d] + 1));
      }
      // Row-major strides with random padding after every dim but the innermost: the
      // destination is a box of a larger array, as a DTensor's local shard may be.
      for (size_t d = rank; d-- > 0;)
        strides[d] = d + 1 == rank ? 1
                                   : strides[d + 1] * shape[d + 1] + int64_t(random() % 3);
      int64_t extent = 1;
      for (size_t d = 0; d < rank; ++d)
        extent += std::max<int64_t>(shape[d] - 1, 0) * strides[d];
      const char fillByte = 0x5a;
      std::vector<char> buffer(size_t(extent * elementBytes), fillByte);
      ASSERT_EQ(initrt_fill_box(prog, param.name.c_str(), int32_t(rank), offset.data(),
                                shape.data(), strides.data(), buffer.data(), buffer.size(), 3, err,
                                sizeof err),
                INITRT_OK)
          << err;
      Slice box{offset, shape};
      std::vector<bool> written(size_t(extent), false);
      std::vector<int64_t> index(rank, 0), coords(rank);
      for (int64_t i = 0; i < box.numElements(); ++i) {
        int64_t at = 0;
        for (size_t d = 0; d < rank; ++d) {
          at += index[d] * strides[d];
          coords[d] = offset[d] + index[d];
        }
        written[size_t(at)] = true;
        ASSERT_EQ(std::memcmp(&buffer[size_t(at * elementBytes)],
                              static_cast<const char *>(whole.tensors[p].data) +
                                  linear(coords, param.shape) * elementBytes,
                              size_t(elementBytes)),
                  0)
            << param.name << " element " << i << " of trial " << trial;
        for (size_t d = rank; d-- > 0;) {
          if (++index[d] < shape[d])
            break;
          index[d] = 0;
        }
      }
      if (box.numElements() > 0)
        for (int64_t e = 0; e < extent; ++e)
          if (!written[size_t(e)])
            for (int64_t b = 0; b < elementBytes; ++b)
              ASSERT_EQ(buffer[size_t(e * elementBytes + b)], fillByte)
                  << param.name << ": the padding between rows was written";
    }
  }
  initrt_program_close(prog);
}

TEST_F(CApiBoxTest, RefusesBadBoxesAndDestinationsWithAReason) {
  std::string dir = makeProgramDir("one", "dp=1");
  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  std::vector<float> buffer(200, 0.0f);
  const size_t bytes = buffer.size() * sizeof(float);
  int64_t offset[2] = {2, 1}, shape[2] = {3, 4};
  EXPECT_EQ(initrt_fill_box(prog, "nope", 2, offset, shape, nullptr, buffer.data(), bytes, 1, err,
                            sizeof err),
            INITRT_NOT_FOUND);
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 1, offset, shape, nullptr, buffer.data(), bytes,
                            1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(err, "embed.weight"), nullptr) << err;
  int64_t outside[2] = {8, 3};
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 2, outside, shape, nullptr, buffer.data(),
                            bytes, 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(err, "outside [0, 10)"), nullptr) << err;
  int64_t transposed[2] = {1, 3};
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 2, offset, shape, transposed, buffer.data(),
                            bytes, 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(err, "innermost dim must be contiguous"), nullptr) << err;
  int64_t overlapping[2] = {2, 1};
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 2, offset, shape, overlapping, buffer.data(),
                            bytes, 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 2, offset, shape, nullptr, buffer.data(),
                            3 * 4 * sizeof(float) - 1, 1, err, sizeof err),
            INITRT_SIZE_MISMATCH);
  EXPECT_EQ(initrt_fill_box(prog, "embed.weight", 2, offset, shape, nullptr,
                            reinterpret_cast<char *>(buffer.data()) + 1, bytes - 4, 1, err,
                            sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_EQ(initrt_param_index(prog, "embed.weight"), 0);
  EXPECT_EQ(initrt_param_index(prog, "lm_head.weight"), 0);
  EXPECT_EQ(initrt_param_index(prog, "layer.w"), 1);
  EXPECT_EQ(initrt_param_index(prog, "nope"), -1);
  EXPECT_EQ(initrt_param_index(nullptr, "embed.weight"), -1);
  // An alias fills the tensor it names.
  std::vector<float> a(12), b(12);
  ASSERT_EQ(initrt_fill_box(prog, "lm_head.weight", 2, offset, shape, nullptr, a.data(), 48, 1,
                            err, sizeof err),
            INITRT_OK);
  ASSERT_EQ(initrt_fill_box(prog, "embed.weight", 2, offset, shape, nullptr, b.data(), 48, 1, err,
                            sizeof err),
            INITRT_OK);
  EXPECT_EQ(a, b);
  initrt_program_close(prog);
}

TEST_F(CApiBoxTest, ManyBoxesInOneRunHoldWhatOneCallPerBoxWrites) {
  std::string dir = makeProgramDir("one", "dp=1");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  // Random boxes of every parameter, half into padded (strided) memory.
  std::mt19937_64 random(53);
  struct Case {
    std::vector<int64_t> offset, shape, strides;
    std::vector<char> one, many;
  };
  std::vector<Case> cases;
  std::vector<initrt_box> boxes;
  for (int trial = 0; trial < 6; ++trial) {
    for (const Param &param : program.params) {
      const size_t rank = param.shape.size();
      Case c;
      c.offset.resize(rank), c.shape.resize(rank), c.strides.resize(rank);
      bool empty = false;
      for (size_t d = 0; d < rank; ++d) {
        if (param.shape[d] == 0) { // a box of no elements
          empty = true;
          continue;
        }
        c.offset[d] = int64_t(random() % uint64_t(param.shape[d]));
        c.shape[d] = 1 + int64_t(random() % uint64_t(param.shape[d] - c.offset[d]));
      }
      for (size_t d = rank; d-- > 0;)
        c.strides[d] = d + 1 == rank ? 1 : c.strides[d + 1] * c.shape[d + 1] + trial % 2;
      int64_t extent = empty ? 0 : 1;
      for (size_t d = 0; d < rank && !empty; ++d)
        extent += (c.shape[d] - 1) * c.strides[d];
      c.one.assign(size_t(extent * dtypeBytes(param.dtype)), 0x5a);
      c.many = c.one;
      ASSERT_EQ(initrt_fill_box(prog, param.name.c_str(), int32_t(rank), c.offset.data(),
                                c.shape.data(), c.strides.data(), c.one.data(), c.one.size(), 1,
                                err, sizeof err),
                INITRT_OK)
          << err;
      cases.push_back(std::move(c));
      boxes.push_back({param.name.c_str(), int32_t(rank), nullptr, nullptr, nullptr, nullptr, 0});
    }
  }
  for (size_t i = 0; i < cases.size(); ++i) // pointers into cases, now that it stays put
    boxes[i] = {boxes[i].name,           boxes[i].ndim,         cases[i].offset.data(),
                cases[i].shape.data(),   cases[i].strides.data(), cases[i].many.data(),
                cases[i].many.size()};
  ASSERT_EQ(initrt_fill_boxes(prog, boxes.size(), boxes.data(), 3, err, sizeof err), INITRT_OK)
      << err;
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(cases[i].one, cases[i].many) << boxes[i].name << " box " << i;

  // One bad box refuses the whole call, naming it, and nothing is written.
  std::vector<char> &valid = cases[1].many; // a box of layer.w, after one that is refused
  ASSERT_FALSE(valid.empty());
  std::fill(valid.begin(), valid.end(), 0x11);
  std::vector<initrt_box> bad(boxes.begin(), boxes.begin() + 2);
  int64_t outside[INITRT_MAX_DIMS] = {1 << 20};
  bad[0].offset = outside;
  EXPECT_EQ(initrt_fill_boxes(prog, bad.size(), bad.data(), 2, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(err, "initrt_fill_boxes: boxes[0]: embed.weight: "), nullptr) << err;
  EXPECT_EQ(valid, std::vector<char>(valid.size(), 0x11)) << "a refused call wrote";
  bad[0] = boxes[0];
  bad[1].name = "nope";
  EXPECT_EQ(initrt_fill_boxes(prog, bad.size(), bad.data(), 2, err, sizeof err), INITRT_NOT_FOUND);
  EXPECT_NE(std::strstr(err, "boxes[1]: the program has no parameter named nope"), nullptr) << err;
  EXPECT_EQ(initrt_fill_boxes(prog, 0, nullptr, 1, err, sizeof err), INITRT_OK);
  EXPECT_EQ(initrt_fill_boxes(prog, 1, nullptr, 1, err, sizeof err), INITRT_INVALID_ARGUMENT);
  initrt_program_close(prog);
}
