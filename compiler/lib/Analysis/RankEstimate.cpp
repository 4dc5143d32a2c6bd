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
#include <functional>
#include <map>
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

namespace {

/// Mesh axes that split dims together (one dim over several axes) form a group: a parameter's
/// chunk lengths depend on each group's coordinates separately. Each group's coordinates fall
/// into classes holding equal lengths for every parameter.
struct AxisGroup {
  std::vector<int> axes;             // mesh order
  std::vector<int> order;            // the order every dim on this group lists its axes, or
                                     // empty when dims disagree (then each value is enumerated)
  int64_t size = 1;
  struct Class {
    std::vector<int64_t> coords;     // a representative's coordinates on `axes`, its lowest
    int64_t weight = 0;              // how many coordinate tuples share the lengths
    std::vector<uint64_t> factor;    // per parameter, its elements' factor from this group
  };
  std::vector<Class> classes;
};

// The factor parameter `p` takes from the group at coordinates `coords` (mesh-wide vector; only
// the group's axes are read): the lengths of the dims split over the group's axes, times 0 off
// the parameter's stage.
uint64_t groupFactor(const initrt::Mesh &mesh, const initrt::Param &p, const AxisGroup &group,
                     const std::vector<int64_t> &coords) {
  uint64_t factor = 1;
  if (p.stageAxis >= 0 && llvm::is_contained(group.axes, p.stageAxis) &&
      coords[size_t(p.stageAxis)] != p.stage)
    return 0;
  for (size_t d = 0; d < p.splitAxes.size() && d < p.shape.size(); ++d) {
    if (p.splitAxes[d].empty() || !llvm::is_contained(group.axes, p.splitAxes[d][0]))
      continue;
    int64_t parts = 1, index = 0, begin, length;
    for (int axis : p.splitAxes[d]) {
      parts *= mesh.shape[size_t(axis)];
      index = index * mesh.shape[size_t(axis)] + coords[size_t(axis)];
    }
    initrt::chunkRange(p.shape[d], parts, index, begin, length);
    factor *= uint64_t(length);
  }
  return factor;
}

} // namespace

RankBytes rankBytesOf(const initrt::Program &program) {
  const initrt::Mesh &mesh = program.mesh;
  const size_t numAxes = mesh.shape.size(), numParams = program.params.size();
  // Union the axes each dim is split over.
  std::vector<int> root(numAxes);
  for (size_t a = 0; a < numAxes; ++a)
    root[a] = int(a);
  std::function<int(int)> find = [&](int a) { return root[a] == a ? a : root[a] = find(root[a]); };
  for (const initrt::Param &p : program.params)
    for (const std::vector<int> &axes : p.splitAxes)
      for (int axis : axes)
        root[size_t(find(axis))] = find(axes[0]);
  std::vector<AxisGroup> groups;
  std::vector<int> groupOf(numAxes, -1);
  for (size_t a = 0; a < numAxes; ++a) {
    int r = find(int(a));
    if (groupOf[size_t(r)] < 0) {
      groupOf[size_t(r)] = int(groups.size());
      groups.emplace_back();
    }
    groupOf[a] = groupOf[size_t(r)];
    groups[size_t(groupOf[a])].axes.push_back(int(a));
    groups[size_t(groupOf[a])].size *= mesh.shape[a];
  }
  // Elements each parameter has from dims no axis splits.
  std::vector<uint64_t> unsplit(numParams, 1), elementBytes(numParams);
  for (size_t i = 0; i < numParams; ++i) {
    const initrt::Param &p = program.params[i];
    elementBytes[i] = initrt::dtypeBytes(p.dtype);
    for (size_t d = 0; d < p.shape.size(); ++d)
      if (d >= p.splitAxes.size() || p.splitAxes[d].empty())
        unsplit[i] *= uint64_t(p.shape[d]);
  }
  for (AxisGroup &group : groups) {
    // One shared order: then a dim's part index is the group's value in that order, its chunk
    // length changes only at two values (end of the full chunks, end of the short one), and the
    // stage indicator at two more; classes are the runs between these breakpoints.
    bool shared = true;
    std::vector<int64_t> breaks = {0, group.size};
    for (const initrt::Param &p : program.params) {
      for (const std::vector<int> &axes : p.splitAxes) {
        if (axes.empty() || groupOf[size_t(axes[0])] != groupOf[size_t(group.axes[0])])
          continue;
        if (group.order.empty())
          group.order = axes;
        shared = shared && axes == group.order && axes.size() == group.axes.size();
      }
    }
    if (group.order.empty() || !shared)
      group.order = group.axes; // an unused axis, the stage axis, or values enumerated
    for (size_t i = 0; shared && i < numParams; ++i) {
      const initrt::Param &p = program.params[i];
      if (p.stageAxis >= 0 && groupOf[size_t(p.stageAxis)] == groupOf[size_t(group.axes[0])]) {
        breaks.push_back(p.stage);
        breaks.push_back(p.stage + 1);
      }
      for (size_t d = 0; d < p.splitAxes.size() && d < p.shape.size(); ++d) {
        if (p.splitAxes[d].empty() ||
            groupOf[size_t(p.splitAxes[d][0])] != groupOf[size_t(group.axes[0])])
          continue;
        int64_t chunk = (p.shape[d] + group.size - 1) / group.size;
        int64_t full = chunk == 0 ? 0 : p.shape[d] / chunk;
        breaks.push_back(std::min(full, group.size));
        breaks.push_back(std::min(full + 1, group.size));
      }
    }
    std::vector<std::pair<int64_t, int64_t>> runs; // [first value, weight)
    if (shared) {
      std::sort(breaks.begin(), breaks.end());
      breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
      for (size_t k = 0; k + 1 < breaks.size(); ++k)
        runs.push_back({breaks[k], breaks[k + 1] - breaks[k]});
    } else {
      for (int64_t v = 0; v < group.size; ++v)
        runs.push_back({v, 1});
    }
    std::map<std::vector<uint64_t>, size_t> classOf;
    std::vector<int64_t> coords(numAxes, 0);
    for (auto [value, weight] : runs) {
      // The value's coordinates, `order` a mixed-radix number, first listed axis major.
      int64_t rest = value;
      for (size_t k = group.order.size(); k-- > 0;) {
        coords[size_t(group.order[k])] = rest % mesh.shape[size_t(group.order[k])];
        rest /= mesh.shape[size_t(group.order[k])];
      }
      std::vector<uint64_t> factor(numParams);
      for (size_t i = 0; i < numParams; ++i)
        factor[i] = groupFactor(mesh, program.params[i], group, coords);
      std::vector<int64_t> own;
      for (int axis : group.axes)
        own.push_back(coords[size_t(axis)]);
      auto [it, added] = classOf.try_emplace(factor, group.classes.size());
      if (added) {
        group.classes.push_back({own, weight, std::move(factor)});
      } else {
        AxisGroup::Class &known = group.classes[it->second];
        known.weight += weight;
        known.coords = std::min(known.coords, own); // mesh order: the lower rank
      }
    }
  }
  // Every combination of one class per group: its bytes, and how many ranks it stands for.
  RankBytes out;
  long double total = 0;
  std::vector<size_t> pick(groups.size(), 0);
  bool first = true;
  while (true) {
    uint64_t bytes = 0;
    long double weight = 1;
    for (size_t g = 0; g < groups.size(); ++g)
      weight *= groups[g].classes[pick[g]].weight;
    for (size_t i = 0; i < numParams; ++i) {
      uint64_t elements = unsplit[i];
      for (size_t g = 0; g < groups.size() && elements; ++g)
        elements *= groups[g].classes[pick[g]].factor[i];
      bytes += elements * elementBytes[i];
    }
    std::vector<int64_t> coords(numAxes, 0);
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t k = 0; k < groups[g].axes.size(); ++k)
        coords[size_t(groups[g].axes[k])] = groups[g].classes[pick[g]].coords[k];
    int64_t rank = 0;
    for (size_t a = 0; a < numAxes; ++a)
      rank = rank * mesh.shape[a] + coords[a];
    total += (long double)bytes * weight;
    if (first || bytes > out.max || (bytes == out.max && rank < out.maxRank)) {
      out.max = bytes;
      out.maxRank = rank;
    }
    if (first || bytes < out.min || (bytes == out.min && rank < out.minRank)) {
      out.min = bytes;
      out.minRank = rank;
    }
    first = false;
    ++out.classes;
    size_t g = 0;
    for (; g < groups.size(); ++g) {
      if (++pick[g] < groups[g].classes.size())
        break;
      pick[g] = 0;
    }
    if (g == groups.size())
      break;
  }
  out.mean = double(total / (long double)mesh.size());
  return out;
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
  e.perRank = rankBytesOf(program);
  e.largestRank = e.perRank.maxRank;
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
    // The parameter's largest slice: rank 0's, or on a stage, the slice of that stage's first
    // rank (coordinate 0 on every other axis).
    int64_t firstHolder = 0;
    if (p.stageAxis >= 0) {
      firstHolder = p.stage;
      for (size_t a = size_t(p.stageAxis) + 1; a < program.mesh.shape.size(); ++a)
        firstHolder *= program.mesh.shape[a];
    }
    e.maxSliceBytes[i] =
        initrt::sliceForRank(program.mesh, p, firstHolder).numElements() * elementBytes;
    e.largest += elements * elementBytes;
    if (p.load) {
      e.loadedBytes += elements * elementBytes;
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
