//===- RankEstimate.h - a rank's memory and time, before it runs -*- C++ -*-===//
//
// The cost model of `initc inspect`: from a sharded model and its rank table, the largest rank's
// bytes, memory and time on one core for each kernel variant `initc compile` builds by default.
// Its rates and overheads were measured on real hosts (benchmarks/README.md); the estimate bounds
// what prog/init and the C API take, it does not measure them.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_ANALYSIS_RANKESTIMATE_H
#define INITC_ANALYSIS_RANKESTIMATE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Region.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace initrt {
struct Program;
}
namespace initc::init {
class ParamOp;
}

namespace initc::analysis {

/// Per-core generation rates, elements per second, of one kernel variant.
struct KernelRates {
  const char *targetCpu;    // as --target-cpu names it: "x86-64-v4"
  const char *instructions; // as a user knows it: "AVX-512"
  double uniform, normal, truncNormal; // normal: Box-Muller, also variance scaling, orthogonal
};

/// The variants `initc compile` builds by default, best first, at their measured rates.
llvm::ArrayRef<KernelRates> defaultKernelRates();

/// What a recipe costs per element, by its costliest random op.
enum class Cost { Uniform, Normal, TruncNormal };

double rateOf(const KernelRates &rates, Cost cost);

/// The float ops of a fused region: what is left of its distribution once init ops became arith.
int64_t floatOpsOf(mlir::Region &region);

/// What each parameter's recipe costs per element: its costliest random op. A fused region
/// (init.elementwise, and the init.elementwise_like that share it) no longer names its
/// distribution: one with no more float ops than uniform fused here is as cheap; any other
/// counts at the slowest rate (a normal and a truncated normal leave about as many), as does a
/// partitioned kernel, which shows neither. Those bound the time.
class RecipeCosts {
public:
  explicit RecipeCosts(mlir::ModuleOp module) : module(module) {}

  Cost of(init::ParamOp param);

  /// The float ops of a uniform recipe once fused: the bound of a region at the uniform rate.
  int64_t uniformFloatOps();

private:
  mlir::ModuleOp module;
  std::optional<int64_t> uniformOps; // fused once, when a fused region asks
};

/// The bytes every rank holds, summarized over the mesh without a walk over its ranks (2^31 of
/// them at most): ranks whose coordinates give every parameter the same chunk lengths hold the
/// same bytes, and there are few such classes per group of mesh axes (see rankBytesOf).
struct RankBytes {
  uint64_t min = 0, max = 0;
  double mean = 0;
  int64_t minRank = 0, maxRank = 0; // the lowest rank holding min, and max, bytes
  uint64_t classes = 0;             // rank classes visited
};
RankBytes rankBytesOf(const initrt::Program &program);

/// The largest rank's bytes, memory and time, estimated before anything runs. The largest rank
/// is the lowest one holding the most bytes (rankBytesOf): rank 0 without pipeline stages, where
/// a split dim's part index never decreases with a mesh coordinate and torch.chunk's parts never
/// grow with the index.
struct RankEstimate {
  int64_t largestRank = 0;
  RankBytes perRank;
  int64_t ranks = 0;
  std::vector<uint64_t> maxSliceBytes;  // per parameter, its largest slice's (on its stage)
  uint64_t totalBytes = 0, largest = 0; // below 2^63: verifyModel bounds the model's bytes
  uint64_t paramCount = 0, bufferCount = 0;
  uint64_t loadedBytes = 0;     // of the largest rank's, read from base checkpoints
  double orthogonalScratch = 0; // the largest: they are computed one at a time
  double orthogonalFlops = 0;
  /// Its seconds on one core, for one kernel variant's rates (defaultKernelRates()).
  struct Time {
    KernelRates rates;
    int64_t slowestRank = 0;
    double seconds = 0;
  };
  std::vector<Time> times;
  double runtimeOverhead = 0, streamingOverhead = 0, largestMemory = 0, writingStaging = 0;
  /// The measured constants the report states beside the figures.
  double streamBytesPerThread = 0;     // prog/init's streaming buffers, per thread
  double orthogonalFlopsPerSecond = 0; // the runtime's QR on one core
};

/// The estimate for `program`, the rank table of the sharded `module` (initc::buildProgram).
/// Whether the shard file is staged for direct I/O follows INITRT_DIRECT_IO in this process's
/// environment, as prog/init's would.
RankEstimate estimateRanks(mlir::ModuleOp module, const initrt::Program &program);

} // namespace initc::analysis

#endif // INITC_ANALYSIS_RANKESTIMATE_H
