//===- initc.cpp - the initc command-line compiler ------------------------===//
//
// initc import hf | inspect | compile | assemble | verify. Each subcommand is a thin layer over
// the compiler libraries (import, pipeline, target) and the runtime's checkpoint library.
//
//===----------------------------------------------------------------------===//
#include "initc/Dialect/Init/IR/InitOps.h"
#include "initc/Import/HFConfig.h"
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Support/DType.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "initc/Transforms/Passes.h"
#include "initc/Transforms/Sharding.h"
#include "initrt/checkpoint.h"
#include "initrt/direct_io.h"
#include "initrt/executor.h"
#include "initrt/orthogonal.h"
#include "initrt/program_io.h"
#include "initrt/report.h"
#include "initrt/safetensors.h"
#include "initrt/sharding.h"
#include "initrt/temporaries.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <unistd.h>

using namespace mlir;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "initc: error: " << message << "\n";
  return 1;
}

/// A command line that cannot run as given (exit 2, as CLI11's own usage errors).
int usageError(const std::string &message) {
  llvm::errs() << "initc: error: " << message << " (see initc --help)\n";
  return 2;
}

/// One MLIR context with every dialect initc reads, and diagnostics printed with file and line.
struct Session {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticHandler> diagnostics;
  Session() {
    initc::registerDialects(registry);
    registerAllToLLVMIRTranslations(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    // One message per error: the file and line say where, a dump of the op would only bury it.
    context->printOpOnDiagnostic(false);
    diagnostics = std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, context.get());
  }
};

/// Writes to `path` ("-" for stdout) atomically (initrt::AtomicFile: a temporary name next to it,
/// then a rename, so that a full disk or a kill never leaves a partial file under the final name;
/// a pipe or a device is written as it is). `input`, when given, is the file the output was made
/// from: writing over it is refused.
int writeOutput(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> print,
                llvm::StringRef input = {}) {
  std::error_code ec;
  if (path == "-") {
    print(llvm::outs());
    llvm::outs().flush();
    if (!llvm::outs().has_error())
      return 0;
    ec = llvm::outs().error();
    llvm::outs().clear_error();
    return fail("cannot write to stdout: " + ec.message());
  }
  bool same = false;
  if (!input.empty() && !llvm::sys::fs::equivalent(input, path, same) && same)
    return fail("-o '" + path + "' is the input file: choose another -o");
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  os.flush();
  std::string error;
  if (!initrt::writeFileAtomically(path, text, error))
    return fail(error);
  return 0;
}

std::string modelNameOf(ModuleOp module, llvm::StringRef path) {
  if (auto name = module->getAttrOfType<StringAttr>(initc::import::kModelAttrName))
    return name.getValue().str();
  return llvm::sys::path::stem(path).str();
}

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

//===----------------------------------------------------------------------===//
// initc import hf
//===----------------------------------------------------------------------===//

struct ImportArgs {
  std::string config, output = "-", initStyle = "hf", dtype = "f32";
  std::string seed = "0"; // checked here: CLI11 saturates out-of-range integers
  std::string base;       // --load: a checkpoint whose tensors the model takes
};

int runImport(const ImportArgs &args) {
  Session session;
  initc::import::HFImportOptions options;
  options.initStyle = args.initStyle;
  options.dtype = args.dtype;
  if (llvm::StringRef(args.seed).getAsInteger(10, options.seed))
    return fail("--seed '" + args.seed + "' is not an integer from 0 to 18446744073709551615");
  std::string error;
  auto module = initc::import::importHFConfig(*session.context, args.config, options, error);
  if (!module)
    return fail(error);
  if (failed(mlir::verify(*module)))
    return fail("the imported model does not verify (a bug in initc: please report it)");
  if (!args.base.empty()) {
    // Weights of another dtype are --dtype's to fix: say so before the per-tensor check does.
    initrt::BaseFiles files;
    std::string why;
    if (!files.tensorNames(args.base, why))
      return fail("--load: " + why);
    std::map<std::string, std::vector<std::string>> byDtype; // the base's weights the model has
    for (auto param : module->getOps<initc::init::ParamOp>()) {
      std::optional<initrt::BaseTensor> tensor =
          files.find(args.base, param.getSymName().str(), why);
      if (!tensor || param.getBuffer())
        continue;
      std::vector<int64_t> shape(param.getTensorType().getShape());
      if (tensor->entry->shape != shape) {
        std::string shard = initrt::shardOfInitcCheckpoint(*tensor->file);
        if (!shard.empty())
          return fail("--load: " + shard);
        return fail(args.base + " holds " + param.getSymName().str() + " as " +
                    initrt::shapeText(tensor->entry->shape) + " but " + args.config + " makes it " +
                    initrt::shapeText(shape) + ": " + args.base +
                    " is not a checkpoint of this config");
      }
      byDtype[tensor->entry->dtype].push_back(param.getSymName().str());
    }
    if (byDtype.size() > 1) {
      std::string mix;
      for (const auto &[dtype, names] : byDtype)
        mix += (mix.empty() ? "" : ", ") + std::to_string(names.size()) + " " + dtype + " ('" +
               names[0] + "'" + (names.size() > 1 ? ", ..." : "") + ")";
      return fail(args.base + " holds its weights in several dtypes: " + mix +
                  ". init.load copies tensors as they are, and import gives every weight the "
                  "one --dtype: convert the base to one dtype");
    }
    if (byDtype.size() == 1 && byDtype.begin()->first != llvm::StringRef(args.dtype).upper()) {
      std::string lower = llvm::StringRef(byDtype.begin()->first).lower();
      bool importable = lower == "f32" || lower == "bf16" || lower == "f16";
      return fail(args.base + " holds the model's weights as " + byDtype.begin()->first +
                  " but --dtype is " + args.dtype +
                  (importable ? ": import with --dtype " + lower
                              : ", and import makes f32, bf16 or f16 weights: convert the base"));
    }
    initc::BaseLoadSummary summary;
    // Said of the base, not of a line of the config (every imported op is at its 1:1).
    mlir::ScopedDiagnosticHandler plain(session.context.get(), [](mlir::Diagnostic &diag) {
      const char *severity = diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
                             : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                                                       : "note";
      std::fprintf(stderr, "initc: %s: %s\n", severity, diag.str().c_str());
      return mlir::success();
    });
    if (failed(initc::loadFromBase(*module, args.base, summary)))
      return 1;
    if (failed(mlir::verify(*module)))
      return fail("the model does not verify after --load (a bug in initc: please report it)");
    std::string computed;
    for (size_t i = 0; i < summary.computed.size() && i < 3; ++i)
      computed += (i ? ", " : "") + summary.computed[i];
    if (summary.computed.size() > 3)
      computed += ", ...";
    std::fprintf(stderr, "initc: %zu of %zu tensors load from %s%s%s%s\n", summary.loaded.size(),
                 summary.loaded.size() + summary.computed.size(), args.base.c_str(),
                 summary.computed.empty() ? "" : "; the others are initialized (", computed.c_str(),
                 summary.computed.empty() ? "" : ")");
  }
  return writeOutput(
      args.output, [&](llvm::raw_ostream &os) { module->print(os); }, args.config);
}

//===----------------------------------------------------------------------===//
// initc inspect
//===----------------------------------------------------------------------===//

struct InspectArgs {
  std::string model, mesh, shard;
  bool json = false;
};

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

/// --mesh and --shard on their own, before the model is read: their mistakes are not the
/// model's, so they are reported without its file and line. (Whether the rules fit the model is
/// the sharding pass's to say.)
int checkMeshAndShard(const std::string &mesh, const std::string &shard) {
  if (mesh.empty())
    return 0;
  initc::MeshSpec spec;
  std::string error;
  if (failed(initc::parseMeshSpec(mesh, spec, error)))
    return fail("--mesh: " + error);
  if (!shard.empty() && !initc::ShardingRules::load(shard, spec, error))
    return fail("--shard: " + error);
  return 0;
}

/// The model at `path` for inspect and compile, once --mesh and --shard are found usable; null
/// after an error was reported, with the exit code in `status`.
OwningOpRef<ModuleOp> loadModelForMesh(Session &session, const std::string &path,
                                       const std::string &mesh, const std::string &shard,
                                       int &status) {
  if ((status = checkMeshAndShard(mesh, shard)))
    return nullptr;
  std::string error;
  OwningOpRef<ModuleOp> module = initc::loadModel(*session.context, path, error);
  if (!module)
    status = error.empty() ? 1 : fail(error);
  return module;
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

//===----------------------------------------------------------------------===//
// initc compile
//===----------------------------------------------------------------------===//

struct CompileArgs {
  std::string model, mesh, shard, output, emit, stage = "partitioned";
  std::string targetCpu = "x86-64-v4+avx512bf16,x86-64-v4,x86-64-v3", linker;
  bool timing = false, stageGiven = false, targetCpuGiven = false;
};

/// "x86-64-v4, x86-64-v3" for a program with kernels for both.
std::string targetsText(const initrt::Program &program) {
  std::string text;
  for (const initrt::KernelVariant &variant : program.kernelVariants)
    text += (text.empty() ? "" : ", ") + variant.targetCpu;
  return text;
}

std::string runtimePath() {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, "initrt-run");
  return path.str().str();
}

int runCompile(const CompileArgs &args) {
  auto start = std::chrono::steady_clock::now();
  Session session;
  int status = 0;
  OwningOpRef<ModuleOp> module =
      loadModelForMesh(session, args.model, args.mesh, args.shard, status);
  if (!module)
    return status;
  // IR already partitioned (--stage=partitioned) has its kernels' CPUs: a --target-cpu would be
  // ignored, and the program run on a CPU its kernels were not built for.
  if (args.targetCpuGiven) {
    llvm::SetVector<llvm::StringRef> built;
    for (auto func : module->getOps<func::FuncOp>())
      if (auto cpu = func->getAttrOfType<StringAttr>("initc.target_cpu"))
        built.insert(cpu.getValue());
    if (!built.empty())
      return fail(args.model + " is already partitioned, with kernels for " +
                  llvm::join(built, ", ") +
                  ": --target-cpu cannot change them; drop it, or compile IR from before "
                  "partitioning (--emit=mlir --stage=fused)");
  }
  // --timing: one report on stderr at the end, each stage's passes and then native code.
  DefaultTimingManager timingManager;
  timingManager.setEnabled(args.timing);
  TimingScope timing = timingManager.getRootScope();
  initc::PipelineOptions options{args.mesh, args.shard};
  if (args.timing)
    options.timing = &timing;
  initc::target::TargetOptions targetOptions;
  targetOptions.linker = args.linker;
  llvm::SmallVector<llvm::StringRef> cpuList;
  llvm::StringRef(args.targetCpu).split(cpuList, ',');
  std::vector<std::string> cpus;
  for (llvm::StringRef cpu : cpuList) {
    if (cpu.trim().empty())
      return fail("--target-cpu '" + args.targetCpu +
                  "' has an empty entry: list CPUs separated by commas, e.g. x86-64-v4,x86-64-v3");
    cpus.push_back(cpu.trim().str());
  }
  // The target machine's own CPU: the last, most portable one (every kernel names its own).
  targetOptions.cpu = initc::targetCpuName(cpus.back());
  {
    std::string error;
    if (failed(initc::kernelTargets(cpus, targetOptions, options, error)))
      return fail(error);
  }

  initc::Stage stage = initc::Stage::Partitioned;
  if (!initc::parseStage(args.stage, stage))
    return fail("unknown --stage '" + args.stage + "'");
  if (args.stageGiven && args.emit != "mlir")
    return usageError("--stage applies to --emit=mlir only: add --emit=mlir, or drop --stage");
  if (!args.emit.empty()) {
    if (args.emit != "mlir")
      stage = initc::Stage::Partitioned;
    if (failed(initc::runPipeline(*module, options, stage)))
      return 1;
    std::string output = args.output.empty() ? "-" : args.output;
    if (args.emit == "mlir" && stage != initc::Stage::LLVM)
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { module->print(os); }, args.model);
    auto kernels = initc::extractKernels(*module);
    std::string error;
    if (failed(initc::target::lowerToLLVMDialect(*kernels, targetOptions, error)))
      return fail(error);
    if (args.emit == "mlir")
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { kernels->print(os); }, args.model);
    llvm::LLVMContext llvmContext;
    auto llvmModule =
        initc::target::translateAndOptimize(*kernels, llvmContext, targetOptions, error);
    if (!llvmModule)
      return fail(error);
    if (args.emit == "llvm")
      return writeOutput(
          output, [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); }, args.model);
    llvm::SmallString<0> assembly;
    llvm::raw_svector_ostream assemblyStream(assembly);
    if (failed(initc::target::emitMachineCode(*llvmModule, targetOptions,
                                              initc::target::CodeFileKind::Assembly,
                                              assemblyStream, error)))
      return fail(error);
    return writeOutput(
        output, [&](llvm::raw_ostream &os) { os << assembly; }, args.model);
  }

  if (args.output.empty())
    return usageError("compile needs -o DIR (the program directory), or --emit=mlir|llvm|asm");
  if (args.output == "-")
    return usageError(
        "-o -: a program is a directory, not a stream: name the directory, or print the "
        "IR, LLVM IR or assembly with --emit=mlir|llvm|asm");
  if (failed(initc::runPipeline(*module, options, initc::Stage::Partitioned)))
    return 1;
  initrt::Program program;
  std::string error;
  TimingScope codegenTiming = timing.nest("native code, program directory");
  if (failed(initc::writeProgramDir(*module, modelNameOf(*module, args.model), args.output,
                                    runtimePath(), targetOptions, program, error)))
    return fail(error);
  codegenTiming.stop();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::set<std::string> kernelNames; // one per recipe, whatever the number of targets
  for (const auto &param : program.params)
    if (!param.kernel.empty())
      kernelNames.insert(param.kernel);
  size_t kernels = kernelNames.size();
  uint64_t bytes = 0;
  for (auto &p : program.params)
    bytes += p.numElements() * initrt::dtypeBytes(p.dtype);
  std::string dir = args.output;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  llvm::outs() << "compiled " << program.modelName << ": " << program.params.size() << " tensors ("
               << initrt::formatBytes(bytes) << "), " << kernels << " kernels, "
               << program.mesh.size() << (program.mesh.size() == 1 ? " rank" : " ranks")
               << ", target " << targetsText(program) << ", in " << llvm::format("%.2f", seconds)
               << " s -> " << dir << "\n"
               << "run it: mpirun -np " << program.mesh.size() << " ";
  // The command as a shell takes it: a directory with spaces or quotes is quoted.
  auto printInit = [&] {
    std::string init = dir + "/init";
    bool plain = llvm::all_of(
        init, [](char c) { return llvm::isAlnum(c) || llvm::StringRef("_./-+=:,@%").contains(c); });
    llvm::sys::printArg(llvm::outs(), init, /*Quote=*/!plain);
  };
  printInit();
  llvm::outs() << " --out CKPT_DIR   (or ";
  printInit();
  llvm::outs() << " --rank K --out CKPT_DIR for one rank)\n";
  return 0;
}

// What assemble and verify show as they read a whole checkpoint: progress (a bar on a
// terminal), then the bytes and the time.
class ReadProgress {
public:
  initrt::ProgressFn callback() {
    return [this](uint64_t done, uint64_t total) {
      bytes = total;
      bar.update(done, total);
    };
  }
  void finish() { bar.finish(); }
  std::string took() const { // "4.10 GiB in 0.89 s, 4.63 GiB/s"
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char text[96];
    std::snprintf(text, sizeof(text), "%s in %.2f s, %s/s",
                  initrt::formatBytes(double(bytes)).c_str(), seconds,
                  initrt::formatBytes(seconds > 0 ? double(bytes) / seconds : 0).c_str());
    return text;
  }

private:
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  initrt::ProgressBar bar;
  uint64_t bytes = 0;
};

int runAssemble(const std::string &ckptDir, const std::string &out) {
  std::string error;
  if (!initrt::checkDirectIoSetting(error))
    return fail(error);
  // A killed assemble leaves a temporary as large as the model: the next one removes it.
  initrt::removeAbandonedTemporariesOf(out);
  ReadProgress progress;
  bool ok = initrt::assembleCheckpoint(ckptDir, out, error, progress.callback());
  progress.finish();
  if (!ok)
    return fail(error);
  llvm::outs() << "wrote " << out << " (" << progress.took() << ")\n";
  return 0;
}

int runVerify(const std::string &ckptDir, int threads) {
  std::string error;
  std::vector<std::string> problems;
  ReadProgress progress;
  bool ok = initrt::verifyCheckpoint(ckptDir, problems, error, progress.callback(), threads);
  progress.finish();
  if (!error.empty())
    return fail(error);
  for (auto &p : problems)
    llvm::errs() << "initc: " << p << "\n";
  if (!ok) {
    llvm::errs() << "initc: " << ckptDir << ": " << problems.size() << " problem"
                 << (problems.size() == 1 ? "" : "s") << " found\n";
    return 1;
  }
  llvm::outs() << ckptDir << ": every shard matches its checksum and the index (" << progress.took()
               << ")\n";
  return 0;
}

} // namespace

static int runInitc(int argc, char **argv) {
  CLI::App app{"initc: compiles a model's initialization into per-rank programs that compute\n"
               "exactly each rank's shards, bitwise the same on any mesh.\n\n"
               "  initc import hf config.json -o model.mlir\n"
               "  initc inspect model.mlir --mesh dp=2,tp=2 --shard fsdp+tp\n"
               "  initc compile model.mlir --mesh dp=2,tp=2 --shard fsdp+tp -o prog/\n"
               "  mpirun -np 4 prog/init --out ckpt/\n"
               "  initc assemble ckpt/ -o model.safetensors\n"
               "  initc verify ckpt/\n"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "initc 0.1 (LLVM/MLIR 19)");

  ImportArgs importArgs;
  auto *importCmd = app.add_subcommand("import", "Import a model description into init IR");
  importCmd->require_subcommand(1);
  auto *hf = importCmd->add_subcommand("hf", "Import a HuggingFace config.json (" +
                                                 [] {
                                                   std::string s;
                                                   for (auto t : initc::import::supportedModelTypes())
                                                     s += (s.empty() ? "" : ", ") + t.str();
                                                   return s;
                                                 }() + ")");
  // Usage errors (exit 2), caught before anything runs.
  // A value that is empty, or that looks like the next option (`-o --mesh` takes "--mesh" as
  // the file to write), is a mistake: a file would be made under that name. ('-' alone is
  // standard input or output.)
  auto givenValue = [](bool path) {
    return CLI::Validator(
        [path](std::string &value) {
          if (value.empty())
            return std::string("must not be empty");
          if (value.size() > 1 && value[0] == '-')
            return "'" + value + "' looks like an option, not a value: give the value first" +
                   (path ? " (./" + value + " for a file of that name)" : std::string());
          return std::string();
        },
        "");
  };
  const CLI::Validator nonEmpty = givenValue(/*path=*/true);
  const CLI::Validator nonEmptyWord = givenValue(/*path=*/false);
  const CLI::Validator seedValue(
      [](std::string &value) {
        uint64_t seed;
        return llvm::StringRef(value).getAsInteger(10, seed)
                   ? "'" + value + "' is not an integer from 0 to 18446744073709551615"
                   : std::string();
      },
      "UINT64");
  hf->add_option("config", importArgs.config, "config.json of the model (- for stdin)")->required();
  hf->add_option("-o,--output", importArgs.output, "output .mlir file ('-' for stdout)")
      ->check(nonEmpty);
  hf->add_option("--init-style", importArgs.initStyle,
                 "hf: transformers' _init_weights; torch: PyTorch's module defaults")
      ->check(CLI::IsMember({"hf", "torch"}))
      ->capture_default_str();
  hf->add_option("--dtype", importArgs.dtype, "dtype of the weights")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  hf->add_option("--seed", importArgs.seed, "the seed of every random value")
      ->check(seedValue)
      ->capture_default_str();
  hf->add_option("--load", importArgs.base,
                 "a base checkpoint (.safetensors, or a Hugging Face model.safetensors.index.json) "
                 "to fine-tune from: each parameter it has is read from it (init.load), each it "
                 "lacks is initialized. Its dtypes must match --dtype")
      ->check(nonEmpty);

  InspectArgs inspectArgs;
  auto *inspect = app.add_subcommand(
      "inspect", "List every parameter with its dtype, shape, sharding and bytes per rank");
  // The model and where it goes, as inspect and compile both take them.
  auto addModelOptions = [&](CLI::App *command, std::string &model, std::string &mesh,
                             std::string &shard) {
    command->add_option("model", model, "init IR (.mlir; - for stdin)")->required();
    command->add_option("--mesh", mesh, "mesh axes and sizes, e.g. dp=2,tp=2")->check(nonEmptyWord);
    command
        ->add_option("--shard", shard,
                     "preset (replicated, fsdp, tp, fsdp+tp) or a JSON rules file")
        ->check(nonEmpty);
  };
  addModelOptions(inspect, inspectArgs.model, inspectArgs.mesh, inspectArgs.shard);
  inspect->add_flag("--json", inspectArgs.json, "print JSON for scripts");

  CompileArgs compileArgs;
  auto *compile = app.add_subcommand(
      "compile", "Compile a model for a mesh into a program directory (kernels + rank table)");
  addModelOptions(compile, compileArgs.model, compileArgs.mesh, compileArgs.shard);
  compile
      ->add_option("-o,--output", compileArgs.output,
                   "program directory to write (with --emit: output file, '-' for stdout)")
      ->check(nonEmpty);
  compile->add_option("--emit", compileArgs.emit,
                      "print instead of building: mlir (after --stage), llvm (LLVM IR), asm")
      ->check(CLI::IsMember({"mlir", "llvm", "asm"}));
  std::string stages;
  for (auto s : initc::stageNames())
    stages += (stages.empty() ? "" : ", ") + s.str();
  auto *stageOption =
      compile->add_option("--stage", compileArgs.stage, "with --emit=mlir, the stage: " + stages)
          ->check(nonEmptyWord)
          ->capture_default_str();
  auto *targetCpuOption =
      compile
          ->add_option("--target-cpu", compileArgs.targetCpu,
                       "CPUs the kernels are compiled for, best first, comma-separated: x86-64, "
                       "x86-64-v2/v3/v4, native, znver4, ... kernels.so holds code for each and "
                       "prog/init runs the first the CPU it runs on supports (bits never depend "
                       "on it). CPU+FEATURE adds an extension (x86-64-v4+avx512bf16: bf16 "
                       "samples by a conversion instruction; left out when no kernel uses it). "
                       "CPU:GROUPSxBLOCKS sets a CPU's vector loop, for measuring: "
                       "GROUPS groups (1-4) of BLOCKS Philox blocks (8 or 16) per iteration "
                       "(default 3x16 with AVX-512, 2x8 otherwise)")
          ->check(nonEmptyWord)
          ->capture_default_str();
  compile->add_option("--linker", compileArgs.linker, "C compiler used to link kernels.so")
      ->check(nonEmpty);
  compile->add_flag("--timing", compileArgs.timing,
                    "print the time of each stage's passes and of native code generation");

  std::string ckptDir, assembleOut;
  auto *assemble =
      app.add_subcommand("assemble", "Join a checkpoint's shards into one model.safetensors");
  assemble->add_option("checkpoint", ckptDir, "checkpoint directory written by prog/init")
      ->required();
  assemble->add_option("-o,--output", assembleOut, "the safetensors file to write")
      ->required()
      ->check(nonEmpty)
      ->check(CLI::Validator(
          [](std::string &value) {
            return value == "-" ? std::string("standard output is not written: name a file (a "
                                              "named pipe is one)")
                                : std::string();
          },
          ""));

  auto *verifyCmd = app.add_subcommand(
      "verify", "Check every shard of a checkpoint against its checksums and the index");
  verifyCmd->add_option("checkpoint", ckptDir, "checkpoint directory")->required();
  int verifyThreads = 0;
  verifyCmd
      ->add_option("--threads", verifyThreads,
                   "files read at a time (default: one per CPU initc may run on)")
      ->check(CLI::Range(1, 65536));

  // CLI11 answers an unknown subcommand with "A subcommand is required": name it instead.
  auto unknownSubcommand = [&](CLI::App &parent, int index, const char *what) {
    if (index >= argc || argv[index][0] == '-')
      return false;
    std::string names;
    for (CLI::App *sub : parent.get_subcommands({}))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    for (CLI::App *sub : parent.get_subcommands({}))
      if (sub->get_name() == argv[index])
        return false;
    llvm::errs() << "initc: error: unknown " << what << " '" << argv[index] << "': use one of "
                 << names << " (see initc --help)\n";
    return true;
  };
  if (unknownSubcommand(app, 1, "subcommand") ||
      (argc > 1 && llvm::StringRef(argv[1]) == "import" &&
       unknownSubcommand(*importCmd, 2, "kind of import")))
    return 2;
  // Usage errors look like every other error of initc's.
  app.failure_message([](const CLI::App *, const CLI::Error &e) {
    return "initc: error: " + std::string(e.what()) + " (see initc --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  initrt::ignoreFileSizeSignal(); // past `ulimit -f`, an error message rather than a kill
  if (*hf)
    return runImport(importArgs);
  if (*inspect)
    return runInspect(inspectArgs);
  if (*compile) {
    compileArgs.stageGiven = stageOption->count() > 0;
    compileArgs.targetCpuGiven = targetCpuOption->count() > 0;
    return runCompile(compileArgs);
  }
  if (*assemble)
    return runAssemble(ckptDir, assembleOut);
  if (*verifyCmd)
    return runVerify(ckptDir, verifyThreads);
  return 2;
}

// Output lost to a full disk or a closed pipe is an error, not a success: and llvm::outs()
// would otherwise end the process with an LLVM fatal error when destroyed.
int main(int argc, char **argv) {
  int code = runInitc(argc, argv);
  std::cout.flush();
  llvm::outs().flush();
  bool lost = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  // errno is the failing write's (stdout is written last), or none.
  std::string reason = !lost ? "" : errno ? std::strerror(errno) : "write error";
  if (llvm::outs().has_error()) {
    lost = true;
    reason = llvm::outs().error().message();
    llvm::outs().clear_error();
  }
  if (lost && code == 0) {
    llvm::errs() << "initc: error: cannot write to stdout: " << reason << "\n";
    code = 1;
  }
  return code;
}
