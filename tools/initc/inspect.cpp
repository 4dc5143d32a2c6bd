//===- inspect.cpp - initc inspect ----------------------------------------===//
//
// Every parameter with its dtype, shape, sharding and bytes per rank, and the estimate of the
// largest rank's memory and time, as a table or as JSON.
//
//===----------------------------------------------------------------------===//
#include "session.h"
#include "subcommands.h"

#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Pipeline/Pipeline.h"
#include "initrt/direct_io.h"
#include "initrt/executor.h"
#include "initrt/orthogonal.h"
#include "initrt/program.h"
#include "initrt/report.h"
#include "initrt/sharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

using namespace mlir;

namespace initc::driver {

namespace {

/// A name as one table cell: control characters (NUL, newline, ...) escaped as \XX so that a
/// hostile name can neither cut the row short nor break it.
std::string printableName(const std::string &name) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::printEscapedString(name, os);
  return os.str();
}

/// `[dp, tp]`-style text of a parameter's sharding: the mesh axes of each dim, `-` for none.
std::string shardingText(const initrt::Program &program, const initrt::Param &param) {
  if (param.splitAxes.empty())
    return "replicated";
  std::string s = "[";
  for (size_t d = 0; d < param.shape.size(); ++d) {
    s += d ? ", " : "";
    if (d >= param.splitAxes.size() || param.splitAxes[d].empty()) {
      s += "-";
      continue;
    }
    for (size_t i = 0; i < param.splitAxes[d].size(); ++i)
      s += (i ? "*" : "") + program.mesh.axisNames[param.splitAxes[d][i]];
  }
  return s + "]";
}

// Per-core generation rates, elements per second, of the kernel variants `initc compile` builds
// by default, from the kernel benchmark (items_per_second; see benchmarks/README.md):
//   build/bin/initc-kernel-bench --benchmark_min_time=0.2 --benchmark_repetitions=8
//   INITRT_TARGET_CPU=x86-64-v3 build/bin/initc-kernel-bench ...
// Each is the slowest of f32, bf16 and f16 on the slowest host measured (one core of an AMD EPYC
// Zen 4, of a Zen 3 without AVX-512 and of an Intel Xeon, 2 vCPUs each), so that the estimate
// bounds the time.
// Elementwise recipes without randomness (fills, iota, masks) count at the uniform rate, an
// upper bound on their time.
struct KernelRates {
  const char *targetCpu;
  const char *instructions;
  double uniform, normal, truncNormal; // normal: Box-Muller, also variance scaling, orthogonal
};
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
// `/usr/bin/time -f %M` (tests/e2e/memory.sh) on a program of 20,000 parameters of 2 KiB, now
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

enum class Cost { Uniform, Normal, TruncNormal };

// The float ops of a fused region: what is left of its distribution once init ops became arith.
int64_t floatOpsOf(Region &region) {
  int64_t count = 0;
  region.walk([&](Operation *op) {
    if (op->getNumResults() == 1 && !isa<arith::ConstantOp, CastOpInterface>(op) &&
        isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
      ++count;
  });
  return count;
}

/// What each parameter's recipe costs per element: its costliest random op. A fused region
/// (init.elementwise, and the init.elementwise_like that share it) no longer names its
/// distribution: one with no more float ops than uniform fused here is as cheap; any other
/// counts at the slowest rate (a normal and a truncated normal leave about as many), as does a
/// partitioned kernel, which shows neither. Those bound the time.
class RecipeCosts {
public:
  explicit RecipeCosts(ModuleOp module) : module(module) {}

  Cost of(initc::init::ParamOp param) {
    if (param.getKernelAttr())
      return Cost::TruncNormal;
    Value yielded = param.getYieldedValue();
    if (auto like = yielded ? yielded.getDefiningOp<initc::init::ElementwiseLikeOp>() : nullptr)
      if (auto leader = SymbolTable::lookupSymbolIn(module, like.getLikeAttr()))
        return of(cast<initc::init::ParamOp>(leader));
    if (auto fused = yielded ? yielded.getDefiningOp<initc::init::ElementwiseOp>() : nullptr)
      return floatOpsOf(fused.getBody()) <= uniformFloatOps() ? Cost::Uniform : Cost::TruncNormal;
    Cost cost = Cost::Uniform;
    param.getBody().walk([&](Operation *op) {
      if (isa<initc::init::TruncNormalOp, initc::init::ErfinvOp>(op))
        cost = Cost::TruncNormal;
      else if (isa<initc::init::NormalOp, initc::init::OrthogonalOp>(op))
        cost = std::max(cost, Cost::Normal);
      else if (auto v = dyn_cast<initc::init::VarianceScalingOp>(op))
        if (v.getDistribution() != initc::init::Distribution::uniform)
          cost = std::max(cost, Cost::Normal);
    });
    return cost;
  }

private:
  // Fused once, when a fused region asks; 0 if it does not fuse (it always should).
  int64_t uniformFloatOps() {
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
      for (auto param : reference->getOps<initc::init::ParamOp>())
        if (Value yielded = param.getYieldedValue())
          if (auto fused = yielded.getDefiningOp<initc::init::ElementwiseOp>())
            uniformOps = floatOpsOf(fused.getBody());
    return *uniformOps;
  }

  ModuleOp module;
  std::optional<int64_t> uniformOps;
};

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

/// What inspect reports: the largest rank's bytes, memory and time, estimated before anything
/// runs. Rank 0 holds the most of every parameter: a split dim's part index never decreases with
/// a mesh coordinate, and torch.chunk's parts never grow with the index. So rank 0's slices bound
/// every rank's bytes and time, without a walk over all ranks (2^31 of them at most).
struct RankEstimate {
  static constexpr int64_t largestRank = 0;
  int64_t ranks = 0;
  std::vector<uint64_t> maxSliceBytes;  // per parameter, the largest rank's
  uint64_t totalBytes = 0, largest = 0; // below 2^63: verifyModel bounds the model's bytes
  uint64_t paramCount = 0, bufferCount = 0;
  uint64_t loadedBytes = 0;     // of the largest rank's, read from base checkpoints
  double orthogonalScratch = 0; // the largest: they are computed one at a time
  double orthogonalFlops = 0;
  // Its seconds on one core, for each kernel variant's rates (kKernelRates).
  struct Time {
    int64_t slowestRank = 0;
    double seconds = 0;
  };
  std::vector<Time> times;
  double runtimeOverhead = 0, streamingOverhead = 0, largestMemory = 0, writingStaging = 0;
};

RankEstimate estimateRanks(ModuleOp module, const initrt::Program &program) {
  RecipeCosts costs(module);
  llvm::StringMap<Cost> costByName;
  llvm::StringSet<> orthogonal; // whole tensors: every rank holding a part computes all of it
  for (initc::init::ParamOp param : module.getOps<initc::init::ParamOp>()) {
    costByName[param.getSymName()] = costs.of(param);
    if (!param.getBody().getOps<initc::init::OrthogonalOp>().empty())
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
    RankEstimate::Time t{e.largestRank, e.orthogonalFlops / kOrthogonalFlopsPerSecond};
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
  return e;
}

void printInspectJson(const initrt::Program &program, const RankEstimate &e) {
  nlohmann::json out;
  out["model"] = program.modelName;
  out["seed"] = program.seed;
  out["mesh"] = {{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}};
  out["params"] = nlohmann::json::array();
  for (size_t i = 0; i < program.params.size(); ++i) {
    const initrt::Param &p = program.params[i];
    out["params"].push_back({{"name", p.name},
                             {"aliases", p.aliases},
                             {"dtype", initrt::dtypeName(p.dtype)},
                             {"shape", p.shape},
                             {"sharding", shardingText(program, p)},
                             {"split_axes", p.splitAxes},
                             {"buffer", p.buffer},
                             {"persistent", p.persistent},
                             {"bytes", p.numElements() * initrt::dtypeBytes(p.dtype)},
                             {"max_rank_bytes", e.maxSliceBytes[i]}});
    if (p.load)
      out["params"].back()["load"] = {{"file", p.load->file}, {"tensor", p.load->tensor}};
  }
  out["totals"] = {{"parameter_count", e.paramCount},
                   {"buffer_elements", e.bufferCount},
                   {"bytes", e.totalBytes},
                   {"ranks", e.ranks},
                   {"largest_rank", e.largestRank},
                   {"largest_rank_bytes", e.largest},
                   {"largest_rank_loaded_bytes", e.loadedBytes}};
  out["estimate"] = {
      {"note", "an estimate, not a measurement: in memory (the C API) shard bytes plus the "
               "runtime's measured overhead; prog/init (writing, or --discard) its own "
               "overhead plus the streaming buffers (and whole orthogonal shards), and writing the "
               "direct I/O staging buffer; both plus the largest "
               "orthogonal tensor's scratch (one is computed at a time); time at the kernel "
               "benchmark's one-core rates and orthogonal factorizations at "
               "orthogonal_flops_per_second, without page faults, reading base checkpoints "
               "(init.load) or writing the checkpoint"},
      {"runtime_overhead_bytes", uint64_t(e.runtimeOverhead)},
      {"writing_overhead_bytes", uint64_t(e.streamingOverhead)},
      {"orthogonal_scratch_bytes", uint64_t(e.orthogonalScratch)},
      {"orthogonal_flops", e.orthogonalFlops},
      {"orthogonal_flops_per_second", kOrthogonalFlopsPerSecond},
      {"largest_rank_memory_bytes", uint64_t(e.largestMemory)},
      {"writing_memory_bytes_per_thread", uint64_t(kStreamBytesPerThread)},
      {"writing_staging_bytes", uint64_t(e.writingStaging)},
      {"writing_memory_bytes_one_thread",
       uint64_t(e.streamingOverhead + 2 * kStreamBytesPerThread + e.orthogonalScratch)},
      {"time_one_core", nlohmann::json::array()}};
  for (size_t k = 0; k < e.times.size(); ++k) {
    const KernelRates &rates = kKernelRates[k];
    out["estimate"]["time_one_core"].push_back({{"target_cpu", rates.targetCpu},
                                                {"slowest_rank", e.times[k].slowestRank},
                                                {"slowest_rank_seconds", e.times[k].seconds},
                                                {"rates_elements_per_second",
                                                 {{"uniform", rates.uniform},
                                                  {"normal", rates.normal},
                                                  {"trunc_normal", rates.truncNormal}}}});
  }
  std::cout << out.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace)
            << "\n";
}

void printInspectTable(const initrt::Program &program, const RankEstimate &e) {
  // A name with its aliases, as the first column shows it.
  auto shownName = [](const initrt::Param &p) {
    std::string name = printableName(p.name);
    if (!p.aliases.empty())
      name += " (= " + printableName(p.aliases[0]) + (p.aliases.size() > 1 ? ", ..." : "") + ")";
    return name;
  };
  size_t nameWidth = 4;
  for (auto &p : program.params)
    nameWidth = std::max(nameWidth, std::min<size_t>(shownName(p).size(), 60));
  std::printf("%-*s  %-5s  %-22s  %-18s  %12s\n", (int)nameWidth, "name", "dtype", "shape",
              "sharding", "bytes/rank");
  for (size_t i = 0; i < program.params.size(); ++i) {
    const initrt::Param &p = program.params[i];
    std::string name = shownName(p);
    std::vector<std::string> notes;
    if (p.buffer)
      notes.push_back(p.persistent ? "buffer" : "buffer, not saved");
    if (p.load)
      notes.push_back("loaded");
    std::printf("%-*s  %-5s  %-22s  %-18s  %12s%s%s\n", (int)nameWidth, name.c_str(),
                initrt::dtypeName(p.dtype), initrt::shapeText(p.shape).c_str(),
                shardingText(program, p).c_str(), initrt::formatBytes(e.maxSliceBytes[i]).c_str(),
                notes.empty() ? "" : "  ", llvm::join(notes, ", ").c_str());
  }
  std::string meshText = "single device";
  if (!program.mesh.shape.empty()) {
    meshText.clear();
    for (size_t a = 0; a < program.mesh.shape.size(); ++a)
      meshText +=
          (a ? "," : "") + program.mesh.axisNames[a] + "=" + std::to_string(program.mesh.shape[a]);
  }
  std::printf("\nmodel %s, seed %llu, mesh %s (%lld rank%s)\n", program.modelName.c_str(),
              (unsigned long long)program.seed, meshText.c_str(), (long long)e.ranks,
              e.ranks == 1 ? "" : "s");
  std::printf("%llu parameters in %zu tensors, %s in all; largest rank: %lld with %s\n",
              (unsigned long long)e.paramCount, program.params.size(),
              initrt::formatBytes(e.totalBytes).c_str(), (long long)e.largestRank,
              initrt::formatBytes(e.largest).c_str());
  std::string timeText;
  for (size_t k = 0; k < e.times.size(); ++k) {
    char text[128];
    std::snprintf(text, sizeof(text), "%s%s with %s kernels (rank %lld)", k ? ", " : "",
                  initrt::formatSeconds(e.times[k].seconds).c_str(), kKernelRates[k].instructions,
                  (long long)e.times[k].slowestRank);
    timeText += text;
  }
  std::printf("estimate per rank (not measured): memory up to %s through the C API (shards + %s "
              "runtime), %s + %s per thread in prog/init (streamed, --discard; writing adds %s "
              "of direct I/O staging); time "
              "on one core up to %s; divide by --threads; page faults and writing the "
              "checkpoint not included\n",
              initrt::formatBytes(uint64_t(e.largestMemory)).c_str(),
              initrt::formatBytes(uint64_t(e.runtimeOverhead)).c_str(),
              initrt::formatBytes(
                  uint64_t(e.streamingOverhead + kStreamBytesPerThread + e.orthogonalScratch))
                  .c_str(),
              initrt::formatBytes(uint64_t(kStreamBytesPerThread)).c_str(),
              initrt::formatBytes(uint64_t(e.writingStaging)).c_str(), timeText.c_str());
  if (e.loadedBytes > 0)
    std::printf("rank %lld reads %s of its shards from base checkpoints (init.load, marked "
                "loaded): at the file system's speed, not in the time above\n",
                (long long)e.largestRank, initrt::formatBytes(e.loadedBytes).c_str());
  if (e.orthogonalScratch > 0)
    std::printf("both memory figures include %s of scratch for the largest orthogonal tensor the "
                "rank holds part of (each rank computes it whole, one tensor at a time), and the "
                "times its sampling and its QR factorization (%.3g GFLOP at %.3g GFLOP/s)\n",
                initrt::formatBytes(uint64_t(e.orthogonalScratch)).c_str(), e.orthogonalFlops / 1e9,
                kOrthogonalFlopsPerSecond / 1e9);
}

} // namespace

int runInspect(const InspectArgs &args) {
  Session session;
  int status = 0;
  OwningOpRef<ModuleOp> module =
      loadModelForMesh(session, args.model, args.mesh, args.shard, status);
  if (!module)
    return status;
  initc::PipelineOptions options{args.mesh, args.shard};
  if (failed(initc::runPipeline(*module, options, initc::Stage::Sharded)))
    return 1;
  // What compile would refuse (an op that cannot be fused), inspect refuses too: a copy of the
  // sharded model goes on through fusion, while the table and estimates read the ops as written.
  {
    OwningOpRef<ModuleOp> fused = module->clone();
    initc::PipelineOptions rest;
    rest.first = initc::Stage::Canonical;
    if (failed(initc::runPipeline(*fused, rest, initc::Stage::Fused)))
      return 1;
  }
  initrt::Program program;
  std::string error;
  if (failed(initc::buildProgram(*module, modelNameOf(*module, args.model), program, error)))
    return fail(error);
  RankEstimate estimate = estimateRanks(*module, program);
  if (args.json)
    printInspectJson(program, estimate);
  else
    printInspectTable(program, estimate);
  return 0;
}

} // namespace initc::driver
