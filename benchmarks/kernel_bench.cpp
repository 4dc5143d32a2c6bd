// Kernel throughput: bytes written per second into resident memory, one thread.
//
// Compiles a small init module (uniform, normal, trunc_normal in f32, bf16, f16) through the
// real pipeline for x86-64-v3, loads kernels.so and times each kernel over a 4M-element shard
// whose pages are already resident, so the number is the kernel's own speed. The per-core rates
// `initc inspect` quotes come from here.
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Target/SharedObject.h"
#include "initrt/program.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
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
};

const char *kRecipes[][2] = {
    {"uniform", "init.uniform -0.1, 0.1 stream 0"},
    {"normal", "init.normal mean 0.0 std 0.02 stream 0"},
    {"trunc_normal", "init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04] stream 0"},
};
const char *kDtypes[] = {"f32", "bf16", "f16"};

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
    if (!module ||
        failed(initc::runPipeline(*module, {}, initc::Stage::Partitioned)) ||
        failed(initc::buildProgram(*module, "bench", l.program, error)) ||
        llvm::sys::fs::createUniqueDirectory("initc-kernel-bench", dir)) {
      std::fprintf(stderr, "compiling the benchmark kernels failed: %s\n", error.c_str());
      std::exit(1);
    }
    auto kernelModule = initc::extractKernels(*module);
    std::string so = (dir + "/kernels.so").str();
    initc::target::TargetOptions target; // x86-64-v3, as initc compile's default
    if (failed(initc::target::emitSharedObject(*kernelModule, so, target, error))) {
      std::fprintf(stderr, "compiling the benchmark kernels failed: %s\n", error.c_str());
      std::exit(1);
    }
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
  auto kernel = reinterpret_cast<initrt::KernelFn>(dlsym(l.handle, param->kernel.c_str()));
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

BENCHMARK_MAIN();
