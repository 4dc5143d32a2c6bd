// The inspect cost model (initc/Analysis/RankEstimate.h) on small parsed modules: bytes and memory
// of the largest rank, the float ops of known regions, the cost of each recipe, and the time each
// default kernel variant's rates give. The figures are the model's: a change to its constants or
// its rules fails here.
#include "initc/Analysis/RankEstimate.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initrt/base/costs.h"
#include "initrt/base/program.h"
#include "initrt/base/sharding.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace mlir;
using initc::analysis::Cost;
using initc::analysis::defaultKernelRates;
using initc::analysis::estimateRanks;
using initc::analysis::floatOpsOf;
using initc::analysis::RankEstimate;
using initc::analysis::rateOf;
using initc::analysis::RecipeCosts;
namespace init = initc::init;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

class RankEstimateTest : public ::testing::Test {
protected:
  RankEstimateTest() {
    initc::registerDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(llvm::StringRef text) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, ParserConfig(context.get()));
    EXPECT_TRUE(module) << text.str();
    return module;
  }

  /// The sharded module's rank table and its estimate, as `initc inspect` makes them.
  RankEstimate estimate(ModuleOp module, const std::string &mesh = "",
                        const std::string &shard = "") {
    initc::PipelineOptions options{mesh, shard};
    EXPECT_TRUE(succeeded(initc::runPipeline(module, options, initc::Stage::Sharded)));
    std::string error;
    EXPECT_TRUE(succeeded(initc::buildProgram(module, "test", program, error))) << error;
    return estimateRanks(module, program);
  }

  init::ParamOp param(ModuleOp module, llvm::StringRef name) {
    for (auto p : module.getOps<init::ParamOp>())
      if (p.getSymName() == name)
        return p;
    ADD_FAILURE() << "no parameter " << name.str();
    return nullptr;
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  initrt::Program program;
};

// Three recipes of three costs over a mesh of two, one split in half.
constexpr const char *kThreeRecipes = R"mlir(
mesh.mesh @mesh(shape = 2) {init.axis_names = ["dp"]}
init.seed 1
init.param @w : tensor<64x32xf32> sharding #mesh.shard<@mesh, [[0]]> {
  %0 = init.uniform -0.5, 0.5 stream 0 : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}
init.param @n : tensor<64x32xbf16> {
  %0 = init.normal mean 0.0 std 0.02 stream 0 : tensor<64x32xbf16>
  init.yield %0 : tensor<64x32xbf16>
}
init.param @t : tensor<16xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<16xf32>
  init.yield %0 : tensor<16xf32>
}
)mlir";

TEST_F(RankEstimateTest, DefaultVariantsAndTheirRates) {
  auto rates = defaultKernelRates();
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_STREQ(rates[0].targetCpu, "x86-64-v4");
  EXPECT_STREQ(rates[0].instructions, "AVX-512");
  EXPECT_EQ(rateOf(rates[0], Cost::Uniform), 1.70e9);
  EXPECT_EQ(rateOf(rates[0], Cost::Normal), 0.92e9);
  EXPECT_EQ(rateOf(rates[0], Cost::TruncNormal), 0.77e9);
  EXPECT_STREQ(rates[1].targetCpu, "x86-64-v3");
  EXPECT_STREQ(rates[1].instructions, "AVX2");
  EXPECT_EQ(rateOf(rates[1], Cost::Uniform), 0.90e9);
  EXPECT_EQ(rateOf(rates[1], Cost::Normal), 0.48e9);
  EXPECT_EQ(rateOf(rates[1], Cost::TruncNormal), 0.35e9);
}

TEST_F(RankEstimateTest, BytesAndMemoryOfTheLargestRank) {
  unsetenv("INITRT_DIRECT_IO");
  auto module = parse(kThreeRecipes);
  RankEstimate e = estimate(*module);
  EXPECT_EQ(e.ranks, 2);
  EXPECT_EQ(e.largestRank, 0);
  // w: 8 KiB split in two; n (bf16) and t replicated.
  ASSERT_EQ(e.maxSliceBytes.size(), 3u);
  EXPECT_EQ(e.maxSliceBytes[0], 4096u);
  EXPECT_EQ(e.maxSliceBytes[1], 4096u);
  EXPECT_EQ(e.maxSliceBytes[2], 64u);
  EXPECT_EQ(e.totalBytes, 8192u + 4096u + 64u);
  EXPECT_EQ(e.largest, 4096u + 4096u + 64u);
  EXPECT_EQ(e.paramCount, 2048u + 2048u + 16u);
  EXPECT_EQ(e.bufferCount, 0u);
  EXPECT_EQ(e.loadedBytes, 0u);
  // 12 MiB of runtime and 1 KiB per parameter; prog/init adds 10 MiB of MPI and 3 KiB per
  // parameter instead, then 8 MiB of streaming buffers per thread.
  EXPECT_EQ(e.runtimeOverhead, 12 * kMiB + 3 * 1024);
  EXPECT_EQ(e.streamingOverhead, 22 * kMiB + 3 * 3 * 1024);
  EXPECT_EQ(e.largestMemory, 8256 + 12 * kMiB + 3 * 1024);
  EXPECT_EQ(e.streamBytesPerThread, 8 * kMiB);
  EXPECT_EQ(e.orthogonalScratch, 0);
  EXPECT_EQ(e.orthogonalFlops, 0);
  EXPECT_EQ(e.orthogonalFlopsPerSecond, 1.0e10);
  // A shard this small is written without the direct I/O staging buffers, unless forced.
  EXPECT_EQ(e.writingStaging, 0);
  setenv("INITRT_DIRECT_IO", "1", 1);
  EXPECT_EQ(estimateRanks(*module, program).writingStaging, 32 * kMiB);
  unsetenv("INITRT_DIRECT_IO");
}

TEST_F(RankEstimateTest, TimeOfEachVariant) {
  auto module = parse(kThreeRecipes);
  RankEstimate e = estimate(*module);
  ASSERT_EQ(e.times.size(), 2u);
  // Rank 0's 1024 uniform, 2048 normal and 16 truncated-normal elements at each variant's rates.
  EXPECT_STREQ(e.times[0].rates.instructions, "AVX-512");
  EXPECT_EQ(e.times[0].slowestRank, 0);
  EXPECT_DOUBLE_EQ(e.times[0].seconds, 1024 / 1.70e9 + 2048 / 0.92e9 + 16 / 0.77e9);
  EXPECT_STREQ(e.times[1].rates.instructions, "AVX2");
  EXPECT_DOUBLE_EQ(e.times[1].seconds, 1024 / 0.90e9 + 2048 / 0.48e9 + 16 / 0.35e9);
}

TEST_F(RankEstimateTest, DtypeChangesBytesNotTime) {
  // The rates are the slowest of f32, bf16 and f16: the same elements take the same time.
  auto f32 = parse(R"mlir(
init.seed 1
init.param @w : tensor<256x64xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<256x64xf32>
  init.yield %0 : tensor<256x64xf32>
}
)mlir");
  auto bf16 = parse(R"mlir(
init.seed 1
init.param @w : tensor<256x64xbf16> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<256x64xbf16>
  init.yield %0 : tensor<256x64xbf16>
}
)mlir");
  RankEstimate a = estimate(*f32);
  RankEstimate b = estimate(*bf16);
  EXPECT_EQ(a.largest, 65536u);
  EXPECT_EQ(b.largest, 32768u);
  EXPECT_EQ(a.ranks, 1);
  ASSERT_EQ(a.times.size(), b.times.size());
  for (size_t k = 0; k < a.times.size(); ++k)
    EXPECT_EQ(a.times[k].seconds, b.times[k].seconds);
  EXPECT_DOUBLE_EQ(a.times[0].seconds, 16384 / 0.92e9);
  EXPECT_DOUBLE_EQ(a.times[1].seconds, 16384 / 0.48e9);
}

TEST_F(RankEstimateTest, OrthogonalIsComputedWhole) {
  // Each rank holding a part samples and factors the whole matrix, in scratch of 16 B/element.
  auto module = parse(R"mlir(
mesh.mesh @mesh(shape = 4) {init.axis_names = ["dp"]}
init.seed 1
init.param @q : tensor<64x32xf32> sharding #mesh.shard<@mesh, [[0]]> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<64x32xf32>
  init.yield %0 : tensor<64x32xf32>
}
)mlir");
  RankEstimate e = estimate(*module);
  EXPECT_EQ(e.largest, 16u * 32 * 4);
  EXPECT_EQ(e.orthogonalScratch, 2048.0 * 16);
  EXPECT_EQ(e.orthogonalFlops, initrt::orthogonalFlops(64, 32));
  EXPECT_GT(e.orthogonalFlops, 0);
  EXPECT_EQ(e.largestMemory, 2048 + 12 * kMiB + 1024 + 2048.0 * 16);
  EXPECT_DOUBLE_EQ(e.times[0].seconds, e.orthogonalFlops / 1.0e10 + 2048 / 0.92e9);
  EXPECT_DOUBLE_EQ(e.times[1].seconds, e.orthogonalFlops / 1.0e10 + 2048 / 0.48e9);
}

TEST_F(RankEstimateTest, FloatOpsOfHandWrittenRegions) {
  // Constants and casts are not counted; each other op with one float result is.
  auto module = parse(R"mlir(
init.seed 1
init.param @three : tensor<8xf32> {
  %0 = init.elementwise : tensor<8xf32> {
  ^bb0(%l: i64, %i: i64):
    %c = arith.constant 2.0 : f32
    %x = arith.sitofp %l : i64 to f32
    %m = arith.mulf %x, %c : f32
    %s = math.sqrt %m : f32
    %a = arith.addf %s, %c : f32
    init.yield %a : f32
  }
  init.yield %0 : tensor<8xf32>
}
init.param @four : tensor<8xf32> {
  %0 = init.elementwise : tensor<8xf32> {
  ^bb0(%l: i64, %i: i64):
    %c = arith.constant 2.0 : f32
    %x = arith.sitofp %l : i64 to f32
    %m = arith.mulf %x, %c : f32
    %s = math.sqrt %m : f32
    %a = arith.addf %s, %c : f32
    %n = arith.negf %a : f32
    init.yield %n : f32
  }
  init.yield %0 : tensor<8xf32>
}
)mlir");
  auto region = [&](llvm::StringRef name) -> Region & {
    return param(*module, name).getYieldedValue().getDefiningOp<init::ElementwiseOp>().getBody();
  };
  EXPECT_EQ(floatOpsOf(region("three")), 3);
  EXPECT_EQ(floatOpsOf(region("four")), 4);
  // Uniform fused leaves three float ops: a region of three is as cheap, one of four counts at
  // the slowest rate.
  RecipeCosts costs(*module);
  EXPECT_EQ(costs.uniformFloatOps(), 3);
  EXPECT_EQ(costs.of(param(*module, "three")), Cost::Uniform);
  EXPECT_EQ(costs.of(param(*module, "four")), Cost::TruncNormal);
}

TEST_F(RankEstimateTest, CostOfEachRecipe) {
  auto module = parse(R"mlir(
init.seed 1
init.param @fill : tensor<8xf32> {
  %0 = init.fill 1.0 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @uniform : tensor<8xf32> {
  %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @normal : tensor<8xf32> {
  %0 = init.normal mean 0.0 std 1.0 stream 0 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @scaled_normal : tensor<8x4xf32> {
  %0 = init.variance_scaling scale 2.0 fan_in normal stream 0 : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}
init.param @scaled_uniform : tensor<8x4xf32> {
  %0 = init.variance_scaling scale 1.0 fan_avg uniform stream 0 : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}
init.param @trunc : tensor<8xf32> {
  %0 = init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0 : tensor<8xf32>
  init.yield %0 : tensor<8xf32>
}
init.param @orthogonal : tensor<8x4xf32> {
  %0 = init.orthogonal gain 1.0 stream 0 strategy redundant : tensor<8x4xf32>
  init.yield %0 : tensor<8x4xf32>
}
)mlir");
  RecipeCosts costs(*module);
  EXPECT_EQ(costs.of(param(*module, "fill")), Cost::Uniform);
  EXPECT_EQ(costs.of(param(*module, "uniform")), Cost::Uniform);
  EXPECT_EQ(costs.of(param(*module, "normal")), Cost::Normal);
  EXPECT_EQ(costs.of(param(*module, "scaled_normal")), Cost::Normal);
  EXPECT_EQ(costs.of(param(*module, "scaled_uniform")), Cost::Uniform);
  EXPECT_EQ(costs.of(param(*module, "trunc")), Cost::TruncNormal);
  EXPECT_EQ(costs.of(param(*module, "orthogonal")), Cost::Normal);

  // Fused, a region as small as uniform's keeps uniform's rate; a normal's counts at the slowest.
  ASSERT_TRUE(succeeded(initc::runPipeline(*module, {}, initc::Stage::Fused)));
  RecipeCosts fusedCosts(*module);
  EXPECT_EQ(fusedCosts.of(param(*module, "uniform")), Cost::Uniform);
  EXPECT_EQ(fusedCosts.of(param(*module, "normal")), Cost::TruncNormal);
  EXPECT_EQ(fusedCosts.of(param(*module, "trunc")), Cost::TruncNormal);
  auto uniform = param(*module, "uniform").getYieldedValue().getDefiningOp<init::ElementwiseOp>();
  ASSERT_TRUE(uniform);
  EXPECT_EQ(floatOpsOf(uniform.getBody()), fusedCosts.uniformFloatOps());
}

} // namespace

namespace {

initrt::Param stagedParam(std::vector<int64_t> shape, std::vector<std::vector<int>> split,
                          int stageAxis = -1, int64_t stage = 0) {
  initrt::Param p;
  p.name = "w";
  p.dtype = initrt::DType::BF16;
  p.shape = std::move(shape);
  p.splitAxes = std::move(split);
  p.stageAxis = stageAxis;
  p.stage = stage;
  return p;
}

} // namespace

// The per-rank summary without a walk over the ranks equals the walk, on meshes with pipeline
// stages, uneven and empty chunks, multi-axis dims in one order and in two orders.
TEST(RankBytesTest, MatchesEveryRankWalked) {
  using initrt::Param;
  initrt::Program program;
  program.mesh.axisNames = {"pp", "dp", "tp"};
  program.mesh.shape = {3, 5, 2};
  program.params = {
      stagedParam({7, 3}, {{1}}, 0, 0),       // stage 0, 7 rows over 5: 2,2,2,1,0
      stagedParam({16, 9}, {{2}, {1}}, 0, 1), // stage 1
      stagedParam({3}, {{1}}, 0, 2),          // stage 2, empty chunks
      stagedParam({11, 4}, {{1, 2}}),         // every stage, one dim over dp*tp
      stagedParam({2, 2}, {}),                // replicated
      stagedParam({}, {}),                    // a scalar
  };
  auto walk = [&] {
    initc::analysis::RankBytes expected;
    long double total = 0;
    for (int64_t r = 0; r < program.mesh.size(); ++r) {
      uint64_t bytes = 0;
      for (const Param &p : program.params)
        bytes += uint64_t(initrt::sliceForRank(program.mesh, p, r).numElements()) *
                 initrt::dtypeBytes(p.dtype);
      total += bytes;
      if (r == 0 || bytes > expected.max)
        expected.max = bytes, expected.maxRank = r;
      if (r == 0 || bytes < expected.min)
        expected.min = bytes, expected.minRank = r;
    }
    expected.mean = double(total / program.mesh.size());
    return expected;
  };
  auto check = [&] {
    initc::analysis::RankBytes want = walk(), got = initc::analysis::rankBytesOf(program);
    EXPECT_EQ(got.min, want.min);
    EXPECT_EQ(got.minRank, want.minRank);
    EXPECT_EQ(got.max, want.max);
    EXPECT_EQ(got.maxRank, want.maxRank);
    EXPECT_DOUBLE_EQ(got.mean, want.mean);
  };
  check();
  program.params.push_back(stagedParam({13, 5}, {{2, 1}})); // the group's axes in another order
  check();
  program.params.push_back(stagedParam({9, 6}, {{}, {1}}, 0, 2));
  check();
}

// Breakpoints, not ranks: a million-rank data axis costs a handful of classes.
TEST(RankBytesTest, MillionRanksInFewClasses) {
  initrt::Program program;
  program.mesh.axisNames = {"pp", "dp", "tp"};
  program.mesh.shape = {16, 8192, 8};
  for (int64_t stage = 0; stage < 16; ++stage)
    for (int k = 0; k < 8; ++k)
      program.params.push_back(stagedParam({53248 + k, 16384}, {{2}, {1}}, 0, stage));
  initc::analysis::RankBytes got = initc::analysis::rankBytesOf(program);
  EXPECT_LT(got.classes, 16u * 64u);
  EXPECT_EQ(got.maxRank, 0);
  // dim 0 over tp: ceil(53248 / 8) = 6656 rows; dim 1 over dp: 2 columns each.
  EXPECT_EQ(got.max, 6656u * 2u * 2u * 1u + (6657u * 2u * 2u) * 7u);
}
