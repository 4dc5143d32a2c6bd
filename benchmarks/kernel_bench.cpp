// Kernel throughput: bytes written per second into resident memory, one thread.
//
// Compiles a small init module (uniform, normal, trunc_normal with bounds at +-2 std and at
// torch's default +-100 std; in f32, bf16, f16) through the real pipeline for the CPUs `initc
// compile` targets by default (x86-64-v4+avx512bf16,x86-64-v4,x86-64-v3; or --target-cpu=LIST),
// loads kernels.so, picks the variant prog/init would run on this CPU (INITRT_TARGET_CPU forces
// one) and times each kernel over a 4M-element shard, page-aligned and already resident, so the
// number is the kernel's own speed. The per-core rates `initc inspect` quotes come from here.
// --paired=N times the 16-bit kernels against f32 in back-to-back rounds instead.
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "executor/executor.h"
#include "initrt/base/program.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

namespace {

constexpr int64_t kRows = 2048, kCols = 2048;

struct Loaded {
  initrt::Program program;
  void *handle = nullptr;
  std::string suffix; // of the variant that runs
};

const char *kRecipes[][2] = {
    {"uniform", "init.uniform -0.1, 0.1 stream 0"},
    {"normal", "init.normal mean 0.0 std 0.02 stream 0"},
    {"trunc_normal", "init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0"},
    // torch's default bounds (a=-2, b=2: +-100 std), which reach erfinv's tail branch.
    {"trunc_normal_wide", "init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0] stream 0"},
};
const char *kDtypes[] = {"f32", "bf16", "f16"};

/// The param's name in the benchmark module, and its benchmark's name.
std::string paramName(const char *recipe, const char *dtype) {
  return std::string(recipe) + "_" + dtype;
}
std::string benchmarkName(const char *recipe, const char *dtype) {
  return "kernel/" + paramName(recipe, dtype);
}

/// --target-cpu=LIST, taken out of argv before Google Benchmark reads it.
std::string &targetCpus() {
  static std::string cpus = "x86-64-v4+avx512bf16,x86-64-v4,x86-64-v3";
  return cpus;
}

Loaded &kernels() {
  static Loaded loaded = [] {
    Loaded l;
    std::string type = "tensor<" + std::to_string(kRows) + "x" + std::to_string(kCols) + "x";
    std::string text = "init.seed 42\n";
    for (auto &recipe : kRecipes)
      for (const char *dtype : kDtypes) {
        std::string t = type + dtype + ">";
        text += "init.param @" + paramName(recipe[0], dtype) + " : " + t + " {\n  %0 = " +
                recipe[1] + " : " + t + "\n  init.yield %0 : " + t + "\n}\n";
      }
    mlir::DialectRegistry registry;
    initc::registerDialects(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    std::string error;
    llvm::SmallString<128> dir;
    auto fail = [&] {
      std::fprintf(stderr, "compiling the benchmark kernels failed: %s\n", error.c_str());
      std::exit(1);
    };
    initc::target::TargetOptions target;
    initc::PipelineOptions options;
    std::vector<std::string> cpus;
    for (llvm::StringRef cpu : llvm::split(targetCpus(), ','))
      cpus.push_back(cpu.str());
    target.cpu = initc::targetCpuName(cpus.back());
    if (!module || failed(initc::kernelTargets(cpus, target, options, error)) ||
        failed(initc::runPipeline(*module, options, initc::Stage::Partitioned)) ||
        failed(initc::buildProgram(*module, "bench", l.program, error)) ||
        llvm::sys::fs::createUniqueDirectory("initc-kernel-bench", dir))
      fail();
    auto kernelModule = initc::extractKernels(*module);
    auto variants = initc::kernelVariants(*kernelModule, target, error);
    if (mlir::failed(variants))
      fail();
    l.program.kernelVariants = std::move(*variants);
    int variant = initrt::selectKernelVariant(l.program, "", error);
    if (variant < 0)
      fail();
    l.suffix = l.program.kernelVariants[size_t(variant)].suffix;
    std::printf("kernels compiled for %s; running the %s variant\n", targetCpus().c_str(),
                l.program.kernelVariants[size_t(variant)].targetCpu.c_str());
    std::string so = (dir + "/kernels.so").str();
    if (failed(initc::target::emitSharedObject(*kernelModule, so, target, error)))
      fail();
    l.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    llvm::sys::fs::remove_directories(dir);
    if (!l.handle) {
      std::fprintf(stderr, "cannot load the benchmark kernels: %s\n", dlerror());
      std::exit(1);
    }
    return l;
  }();
  return loaded;
}

/// The kernel of param `name` with its output buffer, over kRows * kCols elements: the whole
/// square tensor, or with `columns`, a slice `columns` wide (from column 64) of a tensor 16384
/// columns wide, whose short rows the kernels take across rows (as a 405B weight split over
/// dp=512).
class KernelRun {
public:
  explicit KernelRun(const std::string &name, int64_t columns = 0) : out(nullptr, &std::free) {
    Loaded &l = kernels();
    const initrt::Param *param = nullptr;
    for (const initrt::Param &p : l.program.params)
      if (p.name == name)
        param = &p;
    kernel = reinterpret_cast<initrt::KernelFn>(
        dlsym(l.handle, (param->kernel + l.suffix).c_str()));
    args = param->kernelArgs.data();
    width = size_t(initrt::dtypeBytes(param->dtype));
    // Page-aligned and resident, as prog/init's buffers are (a std::vector's data starts 16
    // bytes into a page, where every 64-byte store would straddle two cache lines).
    const size_t bytes = size_t(kElements) * width, page = 4096;
    out.reset(static_cast<char *>(std::aligned_alloc(page, (bytes + page - 1) / page * page)));
    if (out)
      std::memset(out.get(), 1, bytes);
    if (columns) {
      shape[0] = local[0] = kElements / columns;
      shape[1] = 16384;
      offset[1] = 64;
      local[1] = columns;
    }
  }
  bool allocated() const { return out != nullptr; }
  size_t elementBytes() const { return width; }
  void operator()() {
    kernel(out.get(), shape, offset, local, 0, kElements, args);
    benchmark::DoNotOptimize(out.get());
    benchmark::ClobberMemory();
  }

  static constexpr int64_t kElements = kRows * kCols;

private:
  std::unique_ptr<char, decltype(&std::free)> out;
  initrt::KernelFn kernel = nullptr;
  const uint64_t *args = nullptr;
  size_t width = 0;
  int64_t shape[2] = {kRows, kCols}, offset[2] = {0, 0}, local[2] = {kRows, kCols};
};

void runKernel(benchmark::State &state, const std::string &name, int64_t columns = 0) {
  KernelRun run(name, columns);
  if (!run.allocated()) {
    state.SkipWithError("cannot allocate the output buffer");
    return;
  }
  for (auto _ : state)
    run();
  const int64_t n = KernelRun::kElements;
  state.SetBytesProcessed(int64_t(state.iterations()) * n * int64_t(run.elementBytes()));
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

int registerAll() {
  for (auto &recipe : kRecipes)
    for (const char *dtype : kDtypes) {
      std::string name = paramName(recipe[0], dtype);
      benchmark::RegisterBenchmark(benchmarkName(recipe[0], dtype).c_str(),
                                   [name](benchmark::State &s) { runKernel(s, name); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  for (auto &recipe : kRecipes) {
    std::string name = paramName(recipe[0], "f32");
    benchmark::RegisterBenchmark((benchmarkName(recipe[0], "f32") + "/columns:32").c_str(),
                                 [name](benchmark::State &s) { runKernel(s, name, 32); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return 0;
}
const int registered = registerAll();

/// The console output, then each recipe's elements/s in f32 and the ratios to it of the 16-bit
/// dtypes and of a 32-column slice (medians where there are repetitions): ratios within one run
/// hold on a noisy machine where absolute rates do not.
class RatioReporter : public benchmark::ConsoleReporter {
public:
  using ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run> &runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run &run : runs) {
      auto rate = run.counters.find("items_per_second");
      if (run.error_occurred || rate == run.counters.end())
        continue;
      Rates &r = rates[run.run_name.function_name];
      if (run.run_type == Run::RT_Iteration)
        r.last = rate->second.value;
      else if (run.aggregate_name == "median")
        r.median = rate->second.value;
      else if (run.aggregate_name == "mean")
        r.mean = rate->second.value;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::ostream &os = GetOutputStream();
    os << "\nelements/s, 16-bit and 32-column slices over f32 ("
       << (anyMedian() ? "medians" : "one run each") << "):\n";
    char line[160];
    std::snprintf(line, sizeof line, "%-18s %12s %20s %20s %20s\n", "kernel", "f32", "bf16", "f16",
                  "f32 32 columns");
    os << line;
    for (auto &recipe : kRecipes) {
      double f32 = rateOf(recipe[0], "f32");
      std::string cells[4];
      for (int d = 0; d < 4; ++d) {
        double v = d < 3 ? rateOf(recipe[0], kDtypes[d]) : rateOf(recipe[0], "f32", "/columns:32");
        char cell[32];
        if (v <= 0)
          std::snprintf(cell, sizeof cell, "-");
        else if (d == 0 || f32 <= 0)
          std::snprintf(cell, sizeof cell, "%.2f G", v / 1e9);
        else
          std::snprintf(cell, sizeof cell, "%.2f G (%.2fx)", v / 1e9, v / f32);
        cells[d] = cell;
      }
      std::snprintf(line, sizeof line, "%-18s %12s %20s %20s %20s\n", recipe[0],
                    cells[0].c_str(), cells[1].c_str(), cells[2].c_str(), cells[3].c_str());
      os << line;
    }
  }

private:
  struct Rates {
    double median = 0, mean = 0, last = 0;
  };
  std::map<std::string, Rates> rates;

  double rateOf(const char *recipe, const char *dtype, const char *variant = "") const {
    auto it = rates.find(benchmarkName(recipe, dtype) + variant);
    if (it == rates.end())
      return 0;
    const Rates &r = it->second;
    return r.median > 0 ? r.median : r.mean > 0 ? r.mean : r.last;
  }
  bool anyMedian() const {
    for (auto &[name, r] : rates)
      if (r.median > 0)
        return true;
    return false;
  }
};

/// --paired=N: N rounds, each timing a recipe's f32, bf16 and f16 kernels back to back, in an
/// order that rotates from round to round. The machine's drift (another guest, the clock) moves
/// the three alike within a round, so their ratios hold where the medians of separately timed
/// benchmarks still move by several percent from one run to the next. The fastest single call of
/// each kernel over all rounds gives a second ratio: interference only ever adds time, so on a
/// busy shared host the best calls are the least disturbed.
void runPaired(int rounds, const std::string &filter, std::ostream &os) {
  using Clock = std::chrono::steady_clock;
  constexpr double kMinSeconds = 0.02; // per timing: at least 5 calls and this long
  // Google Benchmark's filter: a regular expression, "all", or "-REGEX" for what it leaves out.
  bool leftOut = !filter.empty() && filter[0] == '-';
  std::string pattern = leftOut ? filter.substr(1) : filter;
  std::regex selected(pattern.empty() || pattern == "all" ? "." : pattern);
  kernels(); // compiled first, so that its line comes before the table
  char line[200];
  std::snprintf(
      line, sizeof line,
      "\n16-bit elements/s over f32, %d paired rounds: median [min, max], fastest calls' ratio\n"
      "%-18s %31s %31s\n",
      rounds, "kernel", "bf16", "f16");
  os << line;
  for (auto &recipe : kRecipes) {
    std::vector<const char *> dtypes;
    for (const char *dtype : kDtypes)
      if (std::regex_search(benchmarkName(recipe[0], dtype) + "/real_time", selected) != leftOut)
        dtypes.push_back(dtype);
    if (dtypes.size() < 2 || std::string(dtypes[0]) != "f32")
      continue;
    std::vector<std::unique_ptr<KernelRun>> runs;
    for (const char *dtype : dtypes) {
      runs.push_back(std::make_unique<KernelRun>(paramName(recipe[0], dtype)));
      if (!runs.back()->allocated()) {
        os << "cannot allocate the output buffers\n";
        return;
      }
      (*runs.back())(); // warm: code, page tables
    }
    std::vector<std::vector<double>> ratios(dtypes.size());
    std::vector<double> seconds(dtypes.size()),
        fastestCall(dtypes.size(), std::numeric_limits<double>::infinity());
    for (int round = 0; round < rounds; ++round) {
      for (size_t k = 0; k < dtypes.size(); ++k) {
        size_t d = (k + size_t(round)) % dtypes.size();
        int calls = 0;
        Clock::time_point start = Clock::now(), now, callStart = start;
        do {
          (*runs[d])();
          ++calls;
          now = Clock::now();
          fastestCall[d] =
              std::min(fastestCall[d], std::chrono::duration<double>(now - callStart).count());
          callStart = now;
        } while (calls < 5 || std::chrono::duration<double>(now - start).count() < kMinSeconds);
        seconds[d] = std::chrono::duration<double>(now - start).count() / calls;
      }
      for (size_t d = 1; d < dtypes.size(); ++d)
        ratios[d].push_back(seconds[0] / seconds[d]);
    }
    std::string cells[2] = {"-", "-"};
    for (size_t d = 1; d < dtypes.size(); ++d) {
      std::vector<double> &r = ratios[d];
      std::sort(r.begin(), r.end());
      double median = r.size() % 2 ? r[r.size() / 2] : (r[r.size() / 2 - 1] + r[r.size() / 2]) / 2;
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.3fx [%.3f, %.3f] %.3fx", median, r.front(), r.back(),
                    fastestCall[0] / fastestCall[d]);
      cells[std::string(dtypes[d]) == "bf16" ? 0 : 1] = cell;
    }
    std::snprintf(line, sizeof line, "%-18s %31s %31s\n", recipe[0], cells[0].c_str(),
                  cells[1].c_str());
    os << line;
  }
}

} // namespace

int main(int argc, char **argv) {
  const std::string flag = "--target-cpu=", pairedFlag = "--paired=",
                    filterFlag = "--benchmark_filter=";
  int pairedRounds = 0;
  std::string filter;
  // The ratio table goes after the console output; other formats (--benchmark_format=json)
  // stay as Google Benchmark writes them. (Initialize takes its flags out of argv.)
  bool console = true;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--benchmark_format=", 0) == 0)
      console = std::string(argv[i]) == "--benchmark_format=console";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help")
      // Google Benchmark's own usage follows.
      std::printf(
          "initc-kernel-bench: each kernel's elements and bytes per second on one thread, and\n"
          "the bf16, f16 and 32-column rates over f32's (benchmarks/README.md).\n"
          "  --target-cpu=LIST  CPUs to compile the kernels for, as `initc compile\n"
          "                     --target-cpu` takes them (default x86-64-v4+avx512bf16,\n"
          "                     x86-64-v4,x86-64-v3);\n"
          "                     CPU:GROUPSxBLOCKS sets a vector loop shape, e.g. x86-64-v4:2x16\n"
          "  --paired=N         instead of Google Benchmark's runs, N rounds that each time a\n"
          "                     recipe's f32, bf16 and f16 kernels back to back; prints the\n"
          "                     median of the rounds' 16-bit over f32 ratios and their range\n"
          "                     (steadier than separate medians on a noisy machine)\n"
          "  INITRT_TARGET_CPU=CPU in the environment runs that CPU's variant, e.g. x86-64-v3\n\n");
    std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0) {
      targetCpus() = arg.substr(flag.size());
    } else if (arg.rfind(pairedFlag, 0) == 0) {
      std::string rounds = arg.substr(pairedFlag.size());
      if (llvm::StringRef(rounds).getAsInteger(10, pairedRounds) || pairedRounds < 1 ||
          pairedRounds > 100000) {
        std::fprintf(stderr,
                     "initc-kernel-bench: --paired takes a number of rounds from 1 to "
                     "100000, not '%s'\n",
                     rounds.c_str());
        return 1;
      }
    } else {
      if (arg.rfind(filterFlag, 0) == 0)
        filter = arg.substr(filterFlag.size());
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  if (pairedRounds) {
    try {
      runPaired(pairedRounds, filter, std::cout);
    } catch (const std::regex_error &) {
      std::fprintf(stderr,
                   "initc-kernel-bench: --benchmark_filter '%s' is not a regular "
                   "expression\n",
                   filter.c_str());
      return 1;
    }
  } else if (console) {
    RatioReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color
                                                 : benchmark::ConsoleReporter::OO_None);
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
