// Kernel throughput: bytes written per second into resident memory, one thread.
//
// Compiles a small init module (uniform, normal, trunc_normal in f32, bf16, f16) through the
// real pipeline for the CPUs `initc compile` targets by default (x86-64-v4,x86-64-v3; or
// --target-cpu=LIST), loads kernels.so, picks the variant prog/init would run on this CPU
// (INITRT_TARGET_CPU forces one) and times each kernel over a 4M-element shard whose pages are
// already resident, so the number is the kernel's own speed. The per-core rates `initc inspect`
// quotes come from here.
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Target/SharedObject.h"
#include "initrt/executor.h"
#include "initrt/program.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
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
};
const char *kDtypes[] = {"f32", "bf16", "f16"};

/// --target-cpu=LIST, taken out of argv before Google Benchmark reads it.
std::string &targetCpus() {
  static std::string cpus = "x86-64-v4,x86-64-v3";
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
        text += std::string("init.param @") + recipe[0] + "_" + dtype + " : " + t + " {\n  %0 = " +
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
    target.cpu = cpus.back();
    if (!module || failed(initc::kernelTargets(cpus, target, options.kernelTargets, error)) ||
        failed(initc::runPipeline(*module, options, initc::Stage::Partitioned)) ||
        failed(initc::buildProgram(*module, "bench", l.program, error)) ||
        llvm::sys::fs::createUniqueDirectory("initc-kernel-bench", dir))
      fail();
    auto kernelModule = initc::extractKernels(*module);
    l.program.kernelVariants = initc::kernelVariants(*kernelModule, target);
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

void runKernel(benchmark::State &state, const std::string &name) {
  Loaded &l = kernels();
  const initrt::Param *param = nullptr;
  for (const initrt::Param &p : l.program.params)
    if (p.name == name)
      param = &p;
  auto kernel = reinterpret_cast<initrt::KernelFn>(
      dlsym(l.handle, (param->kernel + l.suffix).c_str()));
  const int64_t n = kRows * kCols;
  const size_t width = size_t(initrt::dtypeBytes(param->dtype));
  std::vector<char> out(size_t(n) * width, 1); // resident
  const int64_t shape[] = {kRows, kCols}, offset[] = {0, 0};
  for (auto _ : state) {
    kernel(out.data(), shape, offset, shape, 0, n, param->kernelArgs.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * int64_t(width));
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

int registerAll() {
  for (auto &recipe : kRecipes)
    for (const char *dtype : kDtypes) {
      std::string name = std::string(recipe[0]) + "_" + dtype;
      benchmark::RegisterBenchmark(("kernel/" + name).c_str(),
                                   [name](benchmark::State &s) { runKernel(s, name); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  return 0;
}
const int registered = registerAll();

} // namespace

int main(int argc, char **argv) {
  const std::string flag = "--target-cpu=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind(flag, 0) == 0)
      targetCpus() = argv[i] + flag.size();
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
