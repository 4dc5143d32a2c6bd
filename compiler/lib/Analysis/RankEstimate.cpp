//===- RankEstimate.cpp - a rank's memory and time, before it runs --------===//
//
// The measured rates and overheads of `initc inspect`'s estimate, and the walk of the rank table
// that applies them to the largest rank.
//
//===----------------------------------------------------------------------===//
#include "initc/Analysis/RankEstimate.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Pipeline/Pipeline.h"
#include "initrt/base/costs.h"
#include "initrt/base/program.h"
#include "initrt/base/sharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace initc::analysis {

namespace {

// Per-core generation rates, elements per second, of the kernel variants `initc compile` builds
// by default, from the kernel benchmark (items_per_second; see benchmarks/README.md):
//   build/bin/initc-kernel-bench --benchmark_min_time=0.2 --benchmark_repetitions=8
//   INITRT_TARGET_CPU=x86-64-v3 build/bin/initc-kernel-bench ...
// Each is the slowest of f32, bf16 and f16 on the slowest host measured (one core of an AMD EPYC
// Zen 4, of a Zen 3 without AVX-512 and of an Intel Xeon, 2 vCPUs each), so that the estimate
// bounds the time.
// Elementwise recipes without randomness (fills, iota, masks) count at the uniform rate, an
// upper bound on their time.
constexpr KernelRates kKernelRates[] = {
    {"x86-64-v4", "AVX-512", 1.70e9, 0.92e9, 0.77e9},
    {"x86-64-v3", "AVX2", 0.90e9, 0.48e9, 0.35e9},
};
// prog/init's resident memory besides the shards (binary, MPI, kernels.so, the program):
// measured with `/usr/bin/time -f %M prog/init --rank K` when it still held a rank's shards, as
// 9.8 MiB for a 1-layer model and 11.2 MiB above its 94.5 MiB of shards for a Llama-3.1-405B
// rank (dp=512,tp=32); a process filling buffers through the C API needs less.
constexpr double kRuntimeOverheadBytes = 12.0 * (1 << 20);
// Open MPI's libraries and shared-memory transport, which prog/init under mpirun adds: a rank
// of a 1-parameter program peaked at 19.6-19.9 MiB under `mpirun -np 2` and `-np 8` (one node),
// against 9.8-10.0 MiB run alone with --rank.
constexpr double kLauncherBytes = 10.0 * (1 << 20);
// And per parameter of the program (its table, as read; prog/init also lays out the shard's
// header and the index): what a model of thousands of small tensors adds. Measured with
// `/usr/bin/time -f %M` (tests/e2e/outputs/memory.sh) on a program of 20,000 parameters of 2 KiB, now
// that program.json is read one parameter at a time, as about 0.6 KiB per parameter through
// the C API (initc-fill-bench) and 2.4 KiB writing in prog/init.
constexpr double kProgramBytesPerParam = 1.0 * 1024;
constexpr double kStreamingBytesPerParam = 3.0 * 1024;
// The runtime's QR of an orthogonal tensor (initrt::OrthogonalMatrix, its AVX2 build) on one
// core: measured with `prog/init --rank 0 --discard --threads 1` on one square f32 tensor (the
// whole run) as 14, 14 and 13 GFLOP/s for 1024, 2048 and 4096 rows on an AMD EPYC (Zen 4).
constexpr double kOrthogonalFlopsPerSecond = 1.0e10;
// prog/init (writing a checkpoint, or --discard) streams pieces through a ring of
// 2 * threads + 2 buffers (initrt's kPieceBytes each), so its memory is the overhead plus this
// much per thread and once more.
constexpr double kStreamBytesPerThread = 2.0 * double(initrt::kPieceBytes);

} // namespace

llvm::ArrayRef<KernelRates> defaultKernelRates() { return kKernelRates; }

int64_t floatOpsOf(Region &region) {
  int64_t count = 0;
  region.walk([&](Operation *op) {
    if (op->getNumResults() == 1 && !isa<arith::ConstantOp, CastOpInterface>(op) &&
        isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
      ++count;
  });
  return count;
}

Cost RecipeCosts::of(init::ParamOp param) {
  if (param.getKernelAttr())
    return Cost::TruncNormal;
  Value yielded = param.getYieldedValue();
  if (auto like = yielded ? yielded.getDefiningOp<init::ElementwiseLikeOp>() : nullptr)
    if (auto leader = SymbolTable::lookupSymbolIn(module, like.getLikeAttr()))
      return of(cast<init::ParamOp>(leader));
  if (auto fused = yielded ? yielded.getDefiningOp<init::ElementwiseOp>() : nullptr)
    return floatOpsOf(fused.getBody()) <= uniformFloatOps() ? Cost::Uniform : Cost::TruncNormal;
  Cost cost = Cost::Uniform;
  param.getBody().walk([&](Operation *op) {
    if (isa<init::TruncNormalOp, init::ErfinvOp>(op))
      cost = Cost::TruncNormal;
    else if (isa<init::NormalOp, init::OrthogonalOp>(op))
      cost = std::max(cost, Cost::Normal);
    else if (auto v = dyn_cast<init::VarianceScalingOp>(op))
      if (v.getDistribution() != init::Distribution::uniform)
        cost = std::max(cost, Cost::Normal);
  });
  return cost;
}

// 0 if it does not fuse (it always should).
int64_t RecipeCosts::uniformFloatOps() {
  if (uniformOps)
    return *uniformOps;
  uniformOps = 0;
  OwningOpRef<ModuleOp> reference =
      parseSourceString<ModuleOp>(R"mlir(
      init.seed 0
      init.param @uniform : tensor<8xf32> {
        %0 = init.uniform -1.0, 1.0 stream 0 : tensor<8xf32>
        init.yield %0 : tensor<8xf32>
      }
    )mlir",
                                  ParserConfig(module.getContext()));
  if (reference && succeeded(initc::runPipeline(*reference, {}, initc::Stage::Fused)))
    for (auto param : reference->getOps<init::ParamOp>())
      if (Value yielded = param.getYieldedValue())
        if (auto fused = yielded.getDefiningOp<init::ElementwiseOp>())
          uniformOps = floatOpsOf(fused.getBody());
  return *uniformOps;
}

double rateOf(const KernelRates &rates, Cost cost) {
  switch (cost) {
  case Cost::Uniform:
    return rates.uniform;
  case Cost::Normal:
    return rates.normal;
  case Cost::TruncNormal:
    return rates.truncNormal;
  }
  return rates.truncNormal;
}

RankEstimate estimateRanks(ModuleOp module, const initrt::Program &program) {
  RecipeCosts costs(module);
  llvm::StringMap<Cost> costByName;
  llvm::StringSet<> orthogonal; // whole tensors: every rank holding a part computes all of it
  for (init::ParamOp param : module.getOps<init::ParamOp>()) {
    costByName[param.getSymName()] = costs.of(param);
    if (!param.getBody().getOps<init::OrthogonalOp>().empty())
      orthogonal.insert(param.getSymName());
  }

  constexpr size_t kCosts = 3;
  RankEstimate e;
  e.ranks = program.mesh.size();
  e.maxSliceBytes.assign(program.params.size(), 0);
  std::array<double, kCosts> largestElements = {0.0, 0.0, 0.0};
  for (size_t i = 0; i < program.params.size(); ++i) {
    const initrt::Param &p = program.params[i];
    uint64_t elementBytes = initrt::dtypeBytes(p.dtype);
    e.totalBytes += p.numElements() * elementBytes;
    (p.buffer ? e.bufferCount : e.paramCount) += p.numElements();
    auto cost = costByName.find(p.name);
    size_t costIndex = size_t(cost == costByName.end() ? Cost::Uniform : cost->second);
    uint64_t elements = initrt::sliceForRank(program.mesh, p, e.largestRank).numElements();
    e.maxSliceBytes[i] = elements * elementBytes;
    e.largest += e.maxSliceBytes[i];
    if (p.load) {
      e.loadedBytes += e.maxSliceBytes[i];
    } else if (elements > 0 && orthogonal.contains(p.name)) {
      // The whole matrix is sampled and factored.
      largestElements[costIndex] += double(p.numElements());
      e.orthogonalFlops +=
          initrt::orthogonalFlops(p.shape[0], int64_t(p.numElements()) / p.shape[0]);
      e.orthogonalScratch = std::max(
          e.orthogonalScratch, double(p.numElements()) * initrt::kOrthogonalScratchBytesPerElement);
    } else {
      largestElements[costIndex] += double(elements);
    }
  }
  for (const KernelRates &rates : kKernelRates) {
    RankEstimate::Time t{rates, e.largestRank, e.orthogonalFlops / kOrthogonalFlopsPerSecond};
    for (size_t c = 0; c < kCosts; ++c)
      t.seconds += largestElements[c] / rateOf(rates, Cost(c));
    e.times.push_back(t);
  }
  const double params = double(program.params.size());
  e.runtimeOverhead = kRuntimeOverheadBytes + params * kProgramBytesPerParam;
  e.streamingOverhead = kRuntimeOverheadBytes + kLauncherBytes + params * kStreamingBytesPerParam;
  e.largestMemory = double(e.largest) + e.runtimeOverhead + e.orthogonalScratch;
  // Writing a shard file this large, prog/init stages it for direct I/O (initrt::DirectWriter),
  // or any file with INITRT_DIRECT_IO=1 and none with =0, as this process's environment says.
  const char *directIo = std::getenv("INITRT_DIRECT_IO");
  std::string directIoSetting = directIo ? directIo : "";
  bool staged =
      directIoSetting == "1" ||
      (directIoSetting != "0" && double(e.largest) >= double(initrt::kDirectMinFileBytes));
  e.writingStaging = staged ? double(initrt::kDirectStages * initrt::kDirectStageBytes) : 0.0;
  e.streamBytesPerThread = kStreamBytesPerThread;
  e.orthogonalFlopsPerSecond = kOrthogonalFlopsPerSecond;
  return e;
}

} // namespace initc::analysis
