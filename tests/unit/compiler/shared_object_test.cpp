// Kernel modules -> kernels.so: values, vectorization, exports and error messages.
#include "initc/Conversion/InitToKernels/KernelABI.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "initrt/base/cpu.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
using initc::target::TargetOptions;

namespace {

using KernelFn = void (*)(void *, const int64_t *, const int64_t *, const int64_t *, int64_t,
                          int64_t);

// The shape of a Philox kernel: integer mul/xor/shift on the global index, then float mul+add.
// The mul+add is the pattern an FMA would contract: its bits must stay those of two roundings.
constexpr const char *kPhiloxShapedKernel = R"mlir(
func.func @philox_shaped(%out: !llvm.ptr {llvm.noalias, llvm.nocapture},
                         %gshape: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
                         %off: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
                         %lshape: !llvm.ptr {llvm.noalias, llvm.nocapture, llvm.readonly},
                         %begin: i64, %end: i64) {
  %c1 = arith.constant 1 : index
  %key = arith.constant 3528531795 : i64
  %c32 = arith.constant 32 : i64
  %c8 = arith.constant 8 : i32
  %scale = arith.constant 0.370000005 : f32
  %bias = arith.constant 0.100000001 : f32
  %offset = llvm.load %off : !llvm.ptr -> i64
  %b = arith.index_cast %begin : i64 to index
  %e = arith.index_cast %end : i64 to index
  scf.for %i = %b to %e step %c1 {
    %local = arith.index_cast %i : index to i64
    %global = arith.addi %local, %offset : i64
    %m = arith.muli %global, %key : i64
    %hi = arith.shrui %m, %c32 : i64
    %x = arith.xori %m, %hi : i64
    %w = arith.trunci %x : i64 to i32
    %bits = arith.shrui %w, %c8 : i32
    %f = arith.uitofp %bits : i32 to f32
    %y = arith.mulf %f, %scale : f32
    %z = arith.addf %y, %bias : f32
    %p = llvm.getelementptr %out[%local] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %z, %p : f32, !llvm.ptr
  }
  return
}
)mlir";

float philoxShapedReference(int64_t global) {
  uint64_t m = static_cast<uint64_t>(global) * 3528531795ull;
  uint32_t w = static_cast<uint32_t>(m ^ (m >> 32));
  float f = static_cast<float>(w >> 8);
  volatile float y = f * 0.370000005f; // two roundings, as the contract says
  return y + 0.100000001f;
}

class SharedObjectTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<arith::ArithDialect, cf::ControlFlowDialect, func::FuncDialect,
                    LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                    scf::SCFDialect, vector::VectorDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("initc-so-test", dir));
    tempDir = dir.str().str();
  }
  void TearDown() override {
    for (void *handle : handles)
      dlclose(handle);
    llvm::sys::fs::remove_directories(tempDir);
  }

  OwningOpRef<ModuleOp> parse(const char *source) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    return module;
  }

  std::string path(const std::string &name) { return tempDir + "/" + name; }

  void *load(const std::string &soPath) {
    void *handle = dlopen(soPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << dlerror();
    if (handle)
      handles.push_back(handle);
    return handle;
  }

  /// Defined symbols in the dynamic symbol table, as `nm -D --defined-only` lists them.
  std::set<std::string> exportedSymbols(const std::string &soPath) {
    std::set<std::string> names;
    auto buffer = llvm::MemoryBuffer::getFile(soPath);
    EXPECT_TRUE(bool(buffer));
    auto object = llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
    EXPECT_TRUE(bool(object));
    auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(object->get());
    EXPECT_NE(elf, nullptr);
    for (const llvm::object::SymbolRef &symbol : elf->getDynamicSymbolIterators()) {
      llvm::Expected<uint32_t> flags = symbol.getFlags();
      llvm::Expected<llvm::StringRef> name = symbol.getName();
      if (!flags || !name) {
        llvm::consumeError(flags.takeError());
        llvm::consumeError(name.takeError());
        continue;
      }
      if (!name->empty() && !(*flags & llvm::object::SymbolRef::SF_Undefined))
        names.insert(name->str());
    }
    return names;
  }

  std::string assemblyFor(ModuleOp module, const TargetOptions &options) {
    llvm::LLVMContext llvmContext;
    std::string error;
    std::unique_ptr<llvm::Module> llvmModule =
        initc::target::translateAndOptimize(module, llvmContext, options, error);
    EXPECT_TRUE(llvmModule) << error;
    if (!llvmModule)
      return "";
    llvm::SmallString<0> text;
    llvm::raw_svector_ostream os(text);
    EXPECT_TRUE(succeeded(initc::target::emitMachineCode(
        *llvmModule, options, initc::target::CodeFileKind::Assembly, os, error)))
        << error;
    return text.str().str();
  }

  MLIRContext context;
  std::string tempDir;
  std::vector<void *> handles;
};

TEST_F(SharedObjectTest, PhiloxShapedKernelComputesExpectedBits) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  std::string soPath = path("kernels.so"), error;
  ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, {}, error))) << error;
  void *handle = load(soPath);
  ASSERT_NE(handle, nullptr);
  auto kernel = reinterpret_cast<KernelFn>(dlsym(handle, "philox_shaped"));
  ASSERT_NE(kernel, nullptr);

  // A shard [1000, 1000 + 1037) of a 1-D tensor, computed as two odd chunks: the split must not
  // matter, and elements outside [begin, end) must not be touched.
  const int64_t globalShape[] = {4096}, offset[] = {1000}, localShape[] = {1037};
  std::vector<float> out(1037 + 8, -1.0f);
  kernel(out.data(), globalShape, offset, localShape, 0, 13);
  kernel(out.data(), globalShape, offset, localShape, 13, 1037);
  for (int64_t i = 0; i < 1037; ++i) {
    float expected = philoxShapedReference(1000 + i);
    ASSERT_EQ(std::memcmp(&out[i], &expected, sizeof(float)), 0)
        << "element " << i << ": " << out[i] << " != " << expected;
  }
  for (size_t i = 1037; i < out.size(); ++i)
    EXPECT_EQ(out[i], -1.0f);
}

TEST_F(SharedObjectTest, LoopIsVectorizedWithoutFma) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  TargetOptions options; // x86-64-v3: AVX2 and FMA are available, so FMA must be refused
  std::string assembly = assemblyFor(*module, options);
  EXPECT_NE(assembly.find("ymm"), std::string::npos) << assembly;
  EXPECT_EQ(assembly.find("vfmadd"), std::string::npos) << assembly;
  EXPECT_EQ(assembly.find("vfmsub"), std::string::npos);
  EXPECT_EQ(assembly.find("vfnmadd"), std::string::npos);

  // Fast-math flags on the input are stripped: still two roundings.
  std::string relaxed = kPhiloxShapedKernel;
  for (const char *op : {"arith.mulf %f, %scale", "arith.addf %y, %bias"}) {
    size_t at = relaxed.find(op);
    ASSERT_NE(at, std::string::npos);
    relaxed.insert(at + std::strlen(op), " fastmath<fast>");
  }
  OwningOpRef<ModuleOp> relaxedModule = parse(relaxed.c_str());
  std::string relaxedAssembly = assemblyFor(*relaxedModule, options);
  EXPECT_NE(relaxedAssembly.find("ymm"), std::string::npos);
  EXPECT_EQ(relaxedAssembly.find("vfmadd"), std::string::npos) << relaxedAssembly;
}

TEST_F(SharedObjectTest, AllCpusGiveTheSameBits) {
  // Build one library per CPU from identical modules; every element must match bit for bit.
  // x86-64-v3+avx512f: AVX-512 added to a CPU without it needs LLVM's evex512 too.
  std::vector<std::string> cpus = {"x86-64", "x86-64-v3", "x86-64-v4", "x86-64-v3+avx512f",
                                   "native"};
  std::vector<std::vector<float>> results;
  for (const std::string &cpu : cpus) {
    OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
    TargetOptions options;
    options.cpu = cpu;
    std::string soPath = path("kernels-" + cpu + ".so"), error;
    ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, options, error)))
        << error;
    if ((cpu == "x86-64-v4" || cpu == "x86-64-v3+avx512f") && !__builtin_cpu_supports("avx512f"))
      continue; // compiles, but this host cannot run it
    void *handle = load(soPath);
    ASSERT_NE(handle, nullptr);
    auto kernel = reinterpret_cast<KernelFn>(dlsym(handle, "philox_shaped"));
    const int64_t globalShape[] = {1 << 20}, offset[] = {123457}, localShape[] = {4099};
    results.emplace_back(4099);
    kernel(results.back().data(), globalShape, offset, localShape, 0, 4099);
  }
  for (size_t r = 1; r < results.size(); ++r)
    EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), 4099 * sizeof(float)), 0);
}

TEST_F(SharedObjectTest, KernelBuiltInCppReadsShapesThroughMemRefViews) {
  // A 2-D shard: out[i] = float(global row-major index of local element i).
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  func::FuncOp kernel = initc::createKernelFunction(builder, loc, "iota_2d");
  ASSERT_TRUE(initc::hasKernelSignature(kernel));
  Block *entry = &kernel.getBody().front();
  builder.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  auto index = [&](int64_t v) { return builder.create<arith::ConstantIndexOp>(loc, v); };
  Value two = index(2);
  Value globalShape = initc::viewPointerAsMemRef(
      builder, loc, arg(initc::kKernelGlobalShape), builder.getI64Type(), two);
  Value offsets = initc::viewPointerAsMemRef(
      builder, loc, arg(initc::kKernelOffset), builder.getI64Type(), two);
  Value localShape = initc::viewPointerAsMemRef(
      builder, loc, arg(initc::kKernelLocalShape), builder.getI64Type(), two);
  Value end = builder.create<arith::IndexCastOp>(loc, builder.getIndexType(),
                                                 arg(initc::kKernelEnd));
  Value begin = builder.create<arith::IndexCastOp>(loc, builder.getIndexType(),
                                                   arg(initc::kKernelBegin));
  Value outView = initc::viewPointerAsMemRef(
      builder, loc, arg(initc::kKernelOut), builder.getF32Type(), end);
  auto loadIndex = [&](Value memref, int64_t i) -> Value {
    Value v = builder.create<memref::LoadOp>(loc, memref, ValueRange{index(i)});
    return builder.create<arith::IndexCastOp>(loc, builder.getIndexType(), v);
  };
  Value globalCols = loadIndex(globalShape, 1);
  Value rowOffset = loadIndex(offsets, 0), colOffset = loadIndex(offsets, 1);
  Value localCols = loadIndex(localShape, 1);
  auto loop = builder.create<scf::ForOp>(loc, begin, end, index(1));
  builder.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  Value row = builder.create<arith::AddIOp>(
      loc, builder.create<arith::DivUIOp>(loc, i, localCols), rowOffset);
  Value col = builder.create<arith::AddIOp>(
      loc, builder.create<arith::RemUIOp>(loc, i, localCols), colOffset);
  Value global = builder.create<arith::AddIOp>(
      loc, builder.create<arith::MulIOp>(loc, row, globalCols), col);
  Value asInt = builder.create<arith::IndexCastOp>(loc, builder.getI64Type(), global);
  Value value = builder.create<arith::SIToFPOp>(loc, builder.getF32Type(), asInt);
  builder.create<memref::StoreOp>(loc, value, outView, ValueRange{i});
  builder.setInsertionPointToEnd(entry);
  builder.create<func::ReturnOp>(loc);
  ASSERT_TRUE(succeeded(verify(*module)));

  std::string soPath = path("iota.so"), error;
  ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, {}, error))) << error;
  void *handle = load(soPath);
  ASSERT_NE(handle, nullptr);
  // createKernelFunction gives the runtime's ABI, with the trailing `args` pointer.
  using KernelWithArgsFn = void (*)(void *, const int64_t *, const int64_t *, const int64_t *,
                                    int64_t, int64_t, const uint64_t *);
  auto fn = reinterpret_cast<KernelWithArgsFn>(dlsym(handle, "iota_2d"));
  ASSERT_NE(fn, nullptr);
  // The shard rows [2, 5), cols [3, 7) of a 6x10 tensor.
  const int64_t gshape[] = {6, 10}, off[] = {2, 3}, lshape[] = {3, 4};
  const uint64_t noArgs[1] = {0};
  std::vector<float> out(12, -1.0f);
  fn(out.data(), gshape, off, lshape, 0, 12, noArgs);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c)
      EXPECT_EQ(out[r * 4 + c], float((r + 2) * 10 + (c + 3)));
}

TEST_F(SharedObjectTest, ExportsOnlyPublicKernels) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func private @scale(%x: f32) -> f32 {
  %c = arith.constant 2.5 : f32
  %y = arith.mulf %x, %c : f32
  return %y : f32
}
func.func @fill_a(%out: !llvm.ptr, %g: !llvm.ptr, %o: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %c1 = arith.constant 1.0 : f32
  %v = func.call @scale(%c1) : (f32) -> f32
  %lb = arith.index_cast %b : i64 to index
  %ub = arith.index_cast %e : i64 to index
  %one = arith.constant 1 : index
  scf.for %i = %lb to %ub step %one {
    %ii = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %out[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %p : f32, !llvm.ptr
  }
  return
}
func.func @fill_zero(%out: !llvm.ptr, %g: !llvm.ptr, %o: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %z = arith.constant 0.0 : f32
  %lb = arith.index_cast %b : i64 to index
  %ub = arith.index_cast %e : i64 to index
  %one = arith.constant 1 : index
  scf.for %i = %lb to %ub step %one {
    %ii = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %out[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %z, %p : f32, !llvm.ptr
  }
  return
}
)mlir");
  std::string soPath = path("exports.so"), error;
  ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, {}, error))) << error;
  // fill_zero would become a memset call without "no-builtins": it must not need libc.
  EXPECT_EQ(exportedSymbols(soPath), (std::set<std::string>{"fill_a", "fill_zero"}));
  void *handle = load(soPath);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(dlsym(handle, "scale"), nullptr);
  auto fillA = reinterpret_cast<KernelFn>(dlsym(handle, "fill_a"));
  auto fillZero = reinterpret_cast<KernelFn>(dlsym(handle, "fill_zero"));
  ASSERT_NE(fillA, nullptr);
  ASSERT_NE(fillZero, nullptr);
  std::vector<float> out(100, 7.0f);
  fillA(out.data(), nullptr, nullptr, nullptr, 10, 90);
  EXPECT_EQ(out[9], 7.0f);
  EXPECT_EQ(out[10], 2.5f);
  EXPECT_EQ(out[89], 2.5f);
  EXPECT_EQ(out[90], 7.0f);
  fillZero(out.data(), nullptr, nullptr, nullptr, 0, 50);
  EXPECT_EQ(out[49], 0.0f);
  EXPECT_EQ(out[50], 2.5f);
  // Written atomically: no temporary is left next to the output.
  std::error_code ec;
  int entries = 0;
  for (llvm::sys::fs::directory_iterator it(tempDir, ec), end; it != end && !ec;
       it.increment(ec))
    ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(SharedObjectTest, ManyKernelsSplitAcrossThreadsGiveTheSameLibrary) {
  // Enough kernels for several partitions, all calling one private helper that must stay
  // internal; the library must not depend on the thread count.
  std::string source = R"mlir(
func.func private @affine(%x: f32, %a: f32) -> f32 {
  %c = arith.constant 0.5 : f32
  %y = arith.mulf %x, %a : f32
  %z = arith.addf %y, %c : f32
  return %z : f32
}
)mlir";
  // Every kernel but k0 also calls k0, which lands in another partition.
  const int kernels = 100;
  for (int k = 0; k < kernels; ++k) {
    source += "func.func @k" + std::to_string(k) + R"mlir((%out: !llvm.ptr, %g: !llvm.ptr,
    %o: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %a = arith.constant )mlir" + std::to_string(k) + R"mlir(.0 : f32
  %x = arith.sitofp %b : i64 to f32
  %y = func.call @affine(%x, %a) : (f32, f32) -> f32
)mlir";
    if (k > 0)
      source += R"mlir(
  func.call @k0(%out, %g, %o, %l, %b, %e)
      : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
  %base = llvm.load %out : !llvm.ptr -> f32
  %sum = arith.addf %y, %base : f32
  llvm.store %sum, %out : f32, !llvm.ptr
  return
}
)mlir";
    else
      source += "  llvm.store %y, %out : f32, !llvm.ptr\n  return\n}\n";
  }
  std::vector<std::string> libraries;
  for (unsigned threads : {1u, 2u}) {
    OwningOpRef<ModuleOp> module = parse(source.c_str());
    TargetOptions options;
    options.threads = threads;
    std::string soPath = path("many-" + std::to_string(threads) + ".so"), error;
    ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, options, error)))
        << error;
    std::set<std::string> exports = exportedSymbols(soPath);
    EXPECT_EQ(exports.size(), size_t(kernels));
    EXPECT_EQ(exports.count("affine"), 0u);
    void *handle = load(soPath);
    ASSERT_NE(handle, nullptr);
    for (int k = 0; k < kernels; ++k) {
      auto kernel = reinterpret_cast<KernelFn>(dlsym(handle, ("k" + std::to_string(k)).c_str()));
      ASSERT_NE(kernel, nullptr);
      float out = -1.0f;
      kernel(&out, nullptr, nullptr, nullptr, 3, 4);
      EXPECT_EQ(out, 3.0f * float(k) + 0.5f + (k > 0 ? 0.5f : 0.0f));
    }
    auto bytes = llvm::MemoryBuffer::getFile(soPath);
    ASSERT_TRUE(bool(bytes));
    libraries.push_back((*bytes)->getBuffer().str());
  }
  EXPECT_TRUE(libraries[0] == libraries[1]) << "kernels.so depends on the thread count";
}

TEST_F(SharedObjectTest, Bf16AndF16StoresNeedNoLibrary) {
  // bf16 rounding is expanded to integer ops; f16 uses F16C or libgcc's helper on a baseline CPU.
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @round_bf16(%out: !llvm.ptr, %g: !llvm.ptr, %in: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %lb = arith.index_cast %b : i64 to index
  %ub = arith.index_cast %e : i64 to index
  %one = arith.constant 1 : index
  scf.for %i = %lb to %ub step %one {
    %ii = arith.index_cast %i : index to i64
    %src = llvm.getelementptr %in[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %src : !llvm.ptr -> f32
    %h = arith.truncf %x : f32 to bf16
    %p = llvm.getelementptr %out[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
    llvm.store %h, %p : bf16, !llvm.ptr
  }
  return
}
func.func @round_f16(%out: !llvm.ptr, %g: !llvm.ptr, %in: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %lb = arith.index_cast %b : i64 to index
  %ub = arith.index_cast %e : i64 to index
  %one = arith.constant 1 : index
  scf.for %i = %lb to %ub step %one {
    %ii = arith.index_cast %i : index to i64
    %src = llvm.getelementptr %in[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %src : !llvm.ptr -> f32
    %h = arith.truncf %x : f32 to f16
    %p = llvm.getelementptr %out[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f16
    llvm.store %h, %p : f16, !llvm.ptr
  }
  return
}
)mlir");
  TargetOptions baseline;
  baseline.cpu = "x86-64"; // no F16C: f16 goes through __truncsfhf2
  std::string soPath = path("round.so"), error;
  ASSERT_TRUE(succeeded(initc::target::emitSharedObject(*module, soPath, baseline, error)))
      << error;
  EXPECT_EQ(exportedSymbols(soPath), (std::set<std::string>{"round_bf16", "round_f16"}));
  void *handle = load(soPath);
  ASSERT_NE(handle, nullptr);
  auto roundBf16 = reinterpret_cast<KernelFn>(dlsym(handle, "round_bf16"));
  auto roundF16 = reinterpret_cast<KernelFn>(dlsym(handle, "round_f16"));
  ASSERT_NE(roundBf16, nullptr);
  ASSERT_NE(roundF16, nullptr);

  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto fromBits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  // Ties in both directions, a carry into the exponent, and the largest finite value.
  std::vector<float> in = {1.0f,          fromBits(0x3f808000), fromBits(0x3f818000),
                           fromBits(0x3f80c000), fromBits(0x3fffffff), -3.14159f,
                           65504.0f,      1e-8f,                fromBits(0x7f7fffff)};
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> out(in.size());
  roundBf16(out.data(), nullptr, reinterpret_cast<const int64_t *>(in.data()), nullptr, 0, n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = bits(in[i]);
    uint32_t rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16; // round to nearest even
    EXPECT_EQ(out[i], rounded) << "input 0x" << std::hex << u;
  }
  roundF16(out.data(), nullptr, reinterpret_cast<const int64_t *>(in.data()), nullptr, 0, n);
  EXPECT_EQ(out[0], 0x3c00);
  EXPECT_EQ(out[6], 0x7bff); // 65504, the largest f16
}

TEST_F(SharedObjectTest, CallToLibmIsRejectedWithItsName) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @uses_exp(%out: !llvm.ptr, %g: !llvm.ptr, %o: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  %x = arith.sitofp %b : i64 to f32
  %y = math.exp %x : f32
  llvm.store %y, %out : f32, !llvm.ptr
  return
}
)mlir");
  std::string error;
  EXPECT_TRUE(failed(
      initc::target::emitSharedObject(*module, path("exp.so"), TargetOptions{}, error)));
  EXPECT_NE(error.find("'expf'"), std::string::npos) << error;
  EXPECT_NE(error.find("arith"), std::string::npos) << error;
  EXPECT_FALSE(llvm::sys::fs::exists(path("exp.so")));
}

TEST_F(SharedObjectTest, MissingLinkerSaysWhatToDo) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  TargetOptions options;
  options.linker = "/nonexistent/bin/cc";
  std::string error;
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("/nonexistent/bin/cc"), std::string::npos) << error;
  EXPECT_NE(error.find("install gcc"), std::string::npos) << error;
  EXPECT_NE(error.find("--linker"), std::string::npos) << error;

  options.linker = "no-such-linker-initc";
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("not on PATH"), std::string::npos) << error;
}

TEST_F(SharedObjectTest, FailingLinkerReportsItsOutput) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  TargetOptions options;
  options.linker = "false"; // runs, fails, prints nothing
  std::string error;
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("failed"), std::string::npos) << error;
  EXPECT_FALSE(llvm::sys::fs::exists(path("k.so")));
}

TEST_F(SharedObjectTest, UnwritableOutputIsReported) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  std::string error;
  std::string missingDir = path("no-such-dir/kernels.so");
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, missingDir, {}, error)));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  EXPECT_NE(error.find("no-such-dir"), std::string::npos) << error;

  // A parent that is a file, not a directory (permission bits would not stop root).
  std::error_code ec;
  llvm::raw_fd_ostream(path("plain-file"), ec) << "x";
  ASSERT_FALSE(ec);
  EXPECT_TRUE(failed(
      initc::target::emitSharedObject(*module, path("plain-file/kernels.so"), {}, error)));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
}

TEST_F(SharedObjectTest, BadTargetOptionsAreReported) {
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  std::string error;
  TargetOptions options;
  options.cpu = "pentium-9000";
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("unknown target CPU 'pentium-9000'"), std::string::npos) << error;

  options = TargetOptions();
  options.features = "+avx9";
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("unknown target feature 'avx9'"), std::string::npos) << error;

  options = TargetOptions();
  options.features = "avx2";
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("must start with '+'"), std::string::npos) << error;

  options = TargetOptions();
  options.cpu = "x86-64-v3+avx512f";
  options.features = "-evex512";
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("without 512-bit vectors (-evex512)"), std::string::npos) << error;

  options = TargetOptions();
  options.optLevel = 7;
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), options, error)));
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;

  options = TargetOptions();
  options.cpu = "native";
  EXPECT_NE(initc::target::resolveTargetCpu(options), "native");
}

TEST_F(SharedObjectTest, VariantsRecordTheExtensionsTheirCodeMayUse) {
  auto extensions = [](const char *cpu, const char *features = "") {
    TargetOptions options;
    options.features = features;
    std::string error;
    std::optional<std::vector<std::string>> found =
        initc::target::cpuExtensions(cpu, options, error);
    EXPECT_TRUE(found) << error;
    return found ? std::set<std::string>(found->begin(), found->end()) : std::set<std::string>();
  };
  EXPECT_TRUE(extensions("x86-64").empty());
  std::set<std::string> v3 = extensions("x86-64-v3");
  for (const char *name : {"avx", "avx2", "fma", "f16c", "bmi2", "popcnt", "sse4.2"})
    EXPECT_EQ(v3.count(name), 1u) << name;
  EXPECT_EQ(v3.count("avx512f"), 0u);
  std::set<std::string> v4 = extensions("x86-64-v4");
  for (const char *name : {"avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"})
    EXPECT_EQ(v4.count(name), 1u) << name;
  EXPECT_EQ(v4.count("avx512fp16"), 0u);
  EXPECT_EQ(extensions("x86-64-v4", "+avx512bf16").count("avx512bf16"), 1u);
  // A named CPU brings more than its AVX-512 level: sapphirerapids code may use AVX512-FP16
  // (LLVM converts f32 to f16 with vcvtps2phx), which an Ice Lake server lacks.
  std::set<std::string> spr = extensions("sapphirerapids");
  EXPECT_EQ(spr.count("avx512fp16"), 1u);
  EXPECT_EQ(spr.count("avx512bf16"), 1u);
  // Code for this machine needs only what it has.
  for (const std::string &name : extensions("native"))
    EXPECT_TRUE(initrt::cpuHasExtension(name)) << name;

  // Extensions prog/init cannot detect are turned off in the code itself.
  OwningOpRef<ModuleOp> module = parse(kPhiloxShapedKernel);
  TargetOptions options;
  options.cpu = "arrowlake";
  llvm::LLVMContext llvmContext;
  std::string error;
  std::unique_ptr<llvm::Module> llvmModule =
      initc::target::translateAndOptimize(*module, llvmContext, options, error);
  ASSERT_TRUE(llvmModule) << error;
  llvm::Function *kernel = llvmModule->getFunction("philox_shaped");
  ASSERT_NE(kernel, nullptr);
  std::string features = kernel->getFnAttribute("target-features").getValueAsString().str();
  for (const char *name : {"-avxneconvert", "-avxifma", "-avxvnniint8"})
    EXPECT_NE(features.find(name), std::string::npos) << name << " in " << features;
  EXPECT_EQ(extensions("arrowlake").count("avx2"), 1u);
}

TEST_F(SharedObjectTest, InvalidKernelNameIsReported) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @"bad name*"(%out: !llvm.ptr, %g: !llvm.ptr, %o: !llvm.ptr, %l: !llvm.ptr, %b: i64, %e: i64) {
  return
}
)mlir");
  std::string error;
  EXPECT_TRUE(failed(initc::target::emitSharedObject(*module, path("k.so"), {}, error)));
  EXPECT_NE(error.find("is not a valid symbol"), std::string::npos) << error;
}

} // namespace
