// The arith expansion of the RNG contract (initc/Random/Expand.h) must give the scalar
// reference's bits (initrt/rng.h) for every element, as scalars and as vector<8> lanes, after
// lowering to LLVM, optimizing at O3 and JIT-compiling for the host CPU.

#include "initc/Random/Expand.h"
#include "initrt/base/rng.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace mlir;
namespace rng = initrt::rng;
using initc::random::PhiloxKey;

namespace {

constexpr int kWidth = 8; // vector lanes

// One kernel: loads its operand from `in`, stores `results` consecutively at `out` (result k of
// a vector kernel lands at out + k * kWidth elements).
struct KernelSpec {
  std::string name;
  Type (*inElem)(Builder &);
  Type (*outElem)(Builder &);
  std::function<SmallVector<Value>(OpBuilder &, Location, Value)> emit;
};

using KernelFn = void (*)(const void *, void *);

// Calls a JIT'd kernel. Clang's -fsanitize=function (in the sanitized tree's
// -fsanitize=undefined) reads a type signature from the 8 bytes before the target of every
// indirect call; generated code has none, and the JIT puts a kernel at the start of a fresh
// mapping, so that read faults. The check can say nothing about generated code: it is off here
// only.
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
void callJitted(KernelFn kernel, const void *in, void *out) {
  kernel(in, out);
}

PhiloxKey keyOf(rng::Key k) { return PhiloxKey{k.k0, k.k1}; }

const rng::Key kKey = rng::deriveKey(20240601, "model.layers.7.self_attn.o_proj.weight", 2);

Type i64(Builder &b) { return b.getI64Type(); }
Type i32(Builder &b) { return b.getI32Type(); }
Type i16(Builder &b) { return b.getI16Type(); }
Type f32(Builder &b) { return b.getF32Type(); }

constexpr uint64_t kBelow2To34 = uint64_t{1} << 34;

std::vector<KernelSpec> kernelSpecs() {
  PhiloxKey key = keyOf(kKey);
  using namespace initc::random;
  auto one = [](Value (*f)(OpBuilder &, Location, Value)) {
    return [f](OpBuilder &b, Location loc, Value x) { return SmallVector<Value>{f(b, loc, x)}; };
  };
  return {
      {"philox", i64, i32,
       [key](OpBuilder &b, Location loc, Value block) {
         auto x = emitPhilox(b, loc, block, key);
         return SmallVector<Value>(x.begin(), x.end());
       }},
      {"philox7", i64, i32,
       [key](OpBuilder &b, Location loc, Value block) {
         auto x = emitPhilox(b, loc, block, key, 7);
         return SmallVector<Value>(x.begin(), x.end());
       }},
      {"unit", i32, f32, one(emitUnitFloat)},
      {"uniform", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitUniform(b, loc, i, key, -0.0625, 0.1)};
       }},
      {"normal", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitNormal(b, loc, i, key, 0.25, 0.02)};
       }},
      // hf's zero mean, which adds nothing (x + 0 differs from x only at -0).
      {"normal_hf", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitNormal(b, loc, i, key, 0.0, 0.02)};
       }},
      // Indices below 2^34: the counter's high word is known to be zero.
      {"uniform_below_2_34", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitUniform(b, loc, i, key, -0.0625, 0.1, kBelow2To34)};
       }},
      {"normal_below_2_34", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitNormal(b, loc, i, key, 0.0, 0.02, kBelow2To34)};
       }},
      {"trunc_below_2_34", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{
             emitTruncNormal(b, loc, i, key, 0.0, 0.02, -2.0, 2.0, kBelow2To34)};
       }},
      {"trunc_hf", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitTruncNormal(b, loc, i, key, 0.0, 0.02, -2.0, 2.0)};
       }},
      {"trunc_tight", i64, f32,
       [key](OpBuilder &b, Location loc, Value i) {
         return SmallVector<Value>{emitTruncNormal(b, loc, i, key, 0.1, 1.0, -0.5, 1.5)};
       }},
      {"log", f32, f32, one(emitLog)},
      {"exp", f32, f32, one(emitExp)},
      {"expm1", f32, f32, one(emitExpm1)},
      {"log1p", f32, f32, one(emitLog1p)},
      {"erfinv", f32, f32, one(emitErfinv)},
      // x in the low half of the i64, y in the high half.
      {"pow", i64, f32,
       [](OpBuilder &b, Location loc, Value packed) {
         auto like = [&](Type elem) -> Type {
           auto vec = dyn_cast<VectorType>(packed.getType());
           return vec ? Type(VectorType::get(vec.getShape(), elem)) : elem;
         };
         auto half = [&](Value word) {
           Value low = b.create<arith::TruncIOp>(loc, like(b.getI32Type()), word);
           return b.create<arith::BitcastOp>(loc, like(b.getF32Type()), low).getResult();
         };
         Value shift = b.create<arith::ConstantOp>(
             loc, like(b.getI64Type()),
             isa<VectorType>(packed.getType())
                 ? TypedAttr(DenseElementsAttr::get(cast<ShapedType>(like(b.getI64Type())),
                                                    b.getI64IntegerAttr(32)))
                 : TypedAttr(b.getI64IntegerAttr(32)));
         Value x = half(packed), y = half(b.create<arith::ShRUIOp>(loc, packed, shift));
         return SmallVector<Value>{emitPow(b, loc, x, y)};
       }},
      {"sin2pi", f32, f32, one(emitSin2Pi)},
      {"cos2pi", f32, f32, one(emitCos2Pi)},
      {"bf16", f32, i16,
       [](OpBuilder &b, Location loc, Value x) {
         return SmallVector<Value>{emitRoundToBF16Bits(b, loc, x)};
       }},
      {"bf16_never_nan", f32, i16,
       [](OpBuilder &b, Location loc, Value x) {
         return SmallVector<Value>{emitRoundToBF16Bits(b, loc, x, BF16Operand::NeverNaN)};
       }},
      {"bf16_split", f32, i16,
       [](OpBuilder &b, Location loc, Value x) {
         return SmallVector<Value>{emitRoundToBF16Bits(b, loc, x, BF16Operand::ModerateNormal)};
       }},
      {"f16", f32, i16, one(emitRoundToF16Bits)},
  };
}

std::string kernelName(const std::string &name, int width) {
  return name + "_" + std::to_string(width);
}

void buildKernel(OpBuilder &b, ModuleOp module, const KernelSpec &spec, int width) {
  Location loc = b.getUnknownLoc();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(loc, kernelName(spec.name, width),
                                   b.getFunctionType({ptr, ptr}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto shaped = [&](Type elem) -> Type {
    return width == 1 ? elem : VectorType::get({width}, elem);
  };
  Type inElem = spec.inElem(b), outElem = spec.outElem(b);
  Value x = b.create<LLVM::LoadOp>(loc, shaped(inElem), body->getArgument(0),
                                   inElem.getIntOrFloatBitWidth() / 8);
  SmallVector<Value> results = spec.emit(b, loc, x);
  for (auto [k, r] : llvm::enumerate(results)) {
    Value at = body->getArgument(1);
    if (k > 0)
      at = b.create<LLVM::GEPOp>(loc, ptr, outElem, at,
                                 ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(k * width)});
    b.create<LLVM::StoreOp>(loc, r, at, outElem.getIntOrFloatBitWidth() / 8);
  }
  b.create<func::ReturnOp>(loc);
}

class RandomExpandTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    context = new MLIRContext();
    context->loadDialect<arith::ArithDialect, math::MathDialect, func::FuncDialect,
                         LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(*context);
    registerLLVMDialectTranslation(*context);

    OpBuilder b(context);
    module = new OwningOpRef<ModuleOp>(ModuleOp::create(b.getUnknownLoc()));
    for (const KernelSpec &spec : kernelSpecs())
      for (int width : {1, kWidth})
        buildKernel(b, **module, spec, width);
    ASSERT_TRUE(succeeded(verify(**module)));

    PassManager pm(context);
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertFuncToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    ASSERT_TRUE(succeeded(pm.run(**module)));

    ExecutionEngineOptions options;
    auto optimize = makeOptimizingTransformer(3, 0, nullptr);
    options.transformer = optimize;
    auto created = ExecutionEngine::create(**module, options);
    ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
    engine = created->release();
  }

  static void TearDownTestSuite() {
    delete engine;
    delete module;
    delete context;
  }

  static KernelFn lookup(const std::string &name, int width) {
    auto fn = engine->lookup(kernelName(name, width));
    if (!fn) {
      ADD_FAILURE() << llvm::toString(fn.takeError());
      return nullptr;
    }
    return reinterpret_cast<KernelFn>(*fn);
  }

  // Runs kernel `name` on `inputs`, scalar and vector, and compares each of its `results`
  // outputs per element to `reference`.
  template <typename In, typename Out>
  static void compare(const std::string &name, const std::vector<In> &inputs, int results,
                      const std::function<void(In, Out *)> &reference) {
    ASSERT_EQ(inputs.size() % kWidth, 0u);
    KernelFn scalar = lookup(name, 1), vector = lookup(name, kWidth);
    ASSERT_TRUE(scalar && vector);
    std::vector<Out> expected(results), got(results), lanes(results * kWidth);
    size_t mismatches = 0;
    for (size_t base = 0; base < inputs.size(); base += kWidth) {
      callJitted(vector, &inputs[base], lanes.data());
      for (int lane = 0; lane < kWidth; ++lane) {
        In x = inputs[base + lane];
        reference(x, expected.data());
        callJitted(scalar, &x, got.data());
        for (int k = 0; k < results; ++k) {
          bool scalarOk = same(got[k], expected[k]);
          bool vectorOk = same(lanes[k * kWidth + lane], expected[k]);
          if ((!scalarOk || !vectorOk) && ++mismatches <= 5)
            ADD_FAILURE() << name << " input " << describe(x) << " result " << k
                          << ": reference " << describe(expected[k]) << ", scalar "
                          << describe(got[k]) << ", vector " << describe(lanes[k * kWidth + lane]);
        }
      }
    }
    EXPECT_EQ(mismatches, 0u) << name << " over " << inputs.size() << " inputs";
  }

  // Bitwise equality; any NaN equals any NaN (payloads are not part of the contract for f32).
  template <typename T>
  static bool same(T a, T b) {
    if constexpr (std::is_same_v<T, float>)
      return (std::isnan(a) && std::isnan(b)) || rng::bitsOf(a) == rng::bitsOf(b);
    else
      return a == b;
  }
  template <typename T>
  static std::string describe(T v) {
    char buf[64];
    if constexpr (std::is_same_v<T, float>)
      std::snprintf(buf, sizeof buf, "%a (0x%08x)", v, rng::bitsOf(v));
    else
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  static MLIRContext *context;
  static OwningOpRef<ModuleOp> *module;
  static ExecutionEngine *engine;
};

MLIRContext *RandomExpandTest::context = nullptr;
OwningOpRef<ModuleOp> *RandomExpandTest::module = nullptr;
ExecutionEngine *RandomExpandTest::engine = nullptr;

// Deterministic 64-bit stream for test inputs.
struct SplitMix {
  uint64_t state;
  uint64_t next() { return rng::mix64(state++); }
};

// ~100k element indices: a dense run from 0, runs straddling 2^32 and 2^63, the top of the
// range, and random 64-bit indices.
std::vector<uint64_t> elementIndices() {
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < 40000; ++i)
    v.push_back(i);
  for (uint64_t start : {(uint64_t{1} << 32) - 4000, (uint64_t{1} << 63) - 4000,
                         ~uint64_t{0} - 7999, uint64_t{0x123456789abc}})
    for (uint64_t i = start; i < start + 8000; ++i)
      v.push_back(i);
  SplitMix r{99};
  while (v.size() < 100000)
    v.push_back(r.next());
  return v;
}

// Floats: every sign/exponent with random mantissas, the specials, then random bit patterns.
std::vector<float> allKindsOfFloats(size_t count) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN,
                          0x1p-149f, 0x1p-126f, 3.4028235e38f, 0.5f, 2.0f, 65520.0f,
                          0x1p-25f, 0x1p-24f, 0x1p-14f, 1.0f + 0x1p-8f, 1.0f + 0x1p-11f,
                          rng::floatOf(0x7f800001u), rng::floatOf(0xffc02000u),
                          rng::floatOf(0x3f808000u), rng::floatOf(0x3f818000u)};
  SplitMix r{7};
  for (uint32_t top = 0; top < 512; ++top)
    for (int k = 0; k < 16; ++k)
      v.push_back(rng::floatOf((top << 23) | (static_cast<uint32_t>(r.next()) & 0x7fffffu)));
  while (v.size() < count)
    v.push_back(rng::floatOf(static_cast<uint32_t>(r.next())));
  v.resize(count - count % kWidth);
  return v;
}

std::vector<float> uniformGridSample(SplitMix &r, size_t count) {
  std::vector<float> v;
  for (size_t k = 0; k < count; ++k)
    v.push_back(rng::unitFloat(static_cast<uint32_t>(r.next())));
  return v;
}

TEST_F(RandomExpandTest, PhiloxWords) {
  std::vector<uint64_t> blocks = elementIndices();
  for (uint64_t &b : blocks)
    b >>= 2;
  compare<uint64_t, uint32_t>("philox", blocks, 4, [](uint64_t block, uint32_t *out) {
    rng::philoxBlock(kKey, block, out);
  });
  compare<uint64_t, uint32_t>("philox7", blocks, 4, [](uint64_t block, uint32_t *out) {
    const uint32_t ctr[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0,
                             0};
    rng::philox4x32(ctr, kKey, out, 7);
  });
}

TEST_F(RandomExpandTest, UnitFloat) {
  // U depends on x >> 9 only: every one of its 2^23 values, with random low bits, and the
  // extreme words.
  SplitMix r{3};
  std::vector<uint32_t> words = {0, 0xffffffffu, 0x1ffu, 0x200u, 0x80000000u, 0x7fffffffu,
                                 0xfffffe00u, 0x000001ffu};
  for (uint32_t high = 0; high < (1u << 23); ++high)
    words.push_back(high << 9 | static_cast<uint32_t>(r.next() & 0x1ff));
  compare<uint32_t, float>("unit", words, 1,
                           [](uint32_t x, float *out) { *out = rng::unitFloat(x); });
}

TEST_F(RandomExpandTest, Distributions) {
  std::vector<uint64_t> idx = elementIndices();
  compare<uint64_t, float>("uniform", idx, 1, [](uint64_t i, float *out) {
    *out = rng::uniformAt(kKey, i, -0.0625, 0.1);
  });
  compare<uint64_t, float>("normal", idx, 1, [](uint64_t i, float *out) {
    *out = rng::normalAt(kKey, i, 0.25, 0.02);
  });
  compare<uint64_t, float>("normal_hf", idx, 1, [](uint64_t i, float *out) {
    *out = rng::normalAt(kKey, i, 0.0, 0.02);
  });
  rng::TruncNormalParams hf = rng::truncNormalParams(0.0, 0.02, -2.0, 2.0);
  compare<uint64_t, float>("trunc_hf", idx, 1, [&](uint64_t i, float *out) {
    *out = rng::truncNormalFromWord(rng::wordAt(kKey, i), hf);
  });
  rng::TruncNormalParams tight = rng::truncNormalParams(0.1, 1.0, -0.5, 1.5);
  compare<uint64_t, float>("trunc_tight", idx, 1, [&](uint64_t i, float *out) {
    *out = rng::truncNormalFromWord(rng::wordAt(kKey, i), tight);
  });
}

// Below the index limit, the same values as without it: a dense run from 0, runs straddling
// 2^32 and ending at 2^34 - 1, and random indices below 2^34.
TEST_F(RandomExpandTest, DistributionsBelowAnIndexLimit) {
  std::vector<uint64_t> idx;
  for (uint64_t i = 0; i < 16000; ++i)
    idx.push_back(i);
  for (uint64_t start : {(uint64_t{1} << 32) - 4000, kBelow2To34 - 8000})
    for (uint64_t i = start; i < start + 8000; ++i)
      idx.push_back(i);
  SplitMix r{5};
  while (idx.size() < 48000)
    idx.push_back(r.next() % kBelow2To34);
  compare<uint64_t, float>("uniform_below_2_34", idx, 1, [](uint64_t i, float *out) {
    *out = rng::uniformAt(kKey, i, -0.0625, 0.1);
  });
  compare<uint64_t, float>("normal_below_2_34", idx, 1, [](uint64_t i, float *out) {
    *out = rng::normalAt(kKey, i, 0.0, 0.02);
  });
  rng::TruncNormalParams hf = rng::truncNormalParams(0.0, 0.02, -2.0, 2.0);
  compare<uint64_t, float>("trunc_below_2_34", idx, 1, [&](uint64_t i, float *out) {
    *out = rng::truncNormalFromWord(rng::wordAt(kKey, i), hf);
  });
}

TEST_F(RandomExpandTest, Log) {
  SplitMix r{11};
  std::vector<float> x = uniformGridSample(r, 50000);
  std::vector<float> more = allKindsOfFloats(50000);
  x.insert(x.end(), more.begin(), more.end());
  // Every mantissa, in [0.5, 1): the emitted frexp finds the exponent and the `small` step
  // with one subtraction, differently from the reference.
  for (uint32_t mantissa = 0; mantissa < (1u << 23); ++mantissa)
    x.push_back(rng::floatOf(0x3f000000u | mantissa));
  x.resize(x.size() - x.size() % kWidth);
  compare<float, float>("log", x, 1, [](float v, float *out) { *out = rng::logF(v); });
}

TEST_F(RandomExpandTest, Exp) {
  SplitMix r{12};
  std::vector<float> x = allKindsOfFloats(40000);
  for (int k = 0; k < 60000; ++k) // dense over [-110, 95], where the interesting cases are
    x.push_back(-110.0f + 205.0f * rng::unitFloat(static_cast<uint32_t>(r.next())));
  compare<float, float>("exp", x, 1, [](float v, float *out) { *out = rng::expF(v); });
}

TEST_F(RandomExpandTest, Expm1) {
  SplitMix r{14};
  std::vector<float> x = allKindsOfFloats(40000);
  // Dense over [-20, 90] (every k of the reduction), and near each threshold of the selects.
  for (int k = 0; k < 60000; ++k)
    x.push_back(-20.0f + 110.0f * rng::unitFloat(static_cast<uint32_t>(r.next())));
  for (uint32_t bits : {0x3eb17218u, 0x3f851592u, 0x33000000u, 0x4195b844u, 0x42b17180u})
    for (int d = -4; d <= 4; ++d)
      for (uint32_t sign : {0u, 0x80000000u})
        x.push_back(rng::floatOf((bits + d) | sign));
  x.resize(x.size() - x.size() % kWidth);
  compare<float, float>("expm1", x, 1, [](float v, float *out) { *out = rng::expm1F(v); });
}

TEST_F(RandomExpandTest, Log1p) {
  SplitMix r{15};
  std::vector<float> x = allKindsOfFloats(40000);
  for (int k = 0; k < 60000; ++k) // dense over (-1, 3], where the reduction changes
    x.push_back(-1.0f + 4.0f * rng::unitFloat(static_cast<uint32_t>(r.next())));
  for (uint32_t bits : {0x3ed413d0u, 0xbe95f619u, 0x33800000u, 0xbf800000u, 0x4b800000u})
    for (int d = -4; d <= 4; ++d)
      x.push_back(rng::floatOf(bits + d));
  x.resize(x.size() - x.size() % kWidth);
  compare<float, float>("log1p", x, 1, [](float v, float *out) { *out = rng::log1pF(v); });
}

TEST_F(RandomExpandTest, Pow) {
  SplitMix r{16};
  std::vector<float> kinds = allKindsOfFloats(2000);
  std::vector<uint64_t> xy;
  auto pack = [](float x, float y) {
    return static_cast<uint64_t>(rng::bitsOf(x)) | static_cast<uint64_t>(rng::bitsOf(y)) << 32;
  };
  // Every pair of special and ordinary values, then dense positive bases with exponents that
  // keep the result in range (RoPE's 10000^t among them), and negative bases with integers.
  std::vector<float> specials = {0.0f,  -0.0f, 1.0f,  -1.0f, 2.0f,     -2.0f,    0.5f,
                                 -0.5f, 3.0f,  -3.0f, 1e-3f, INFINITY, -INFINITY, NAN,
                                 0x1p24f, 0x1p24f + 2.0f, 0x1.fffffep23f, 0x1p-149f, 1e30f, 1.5f, -1.5f, -2.5f};
  for (float x : specials)
    for (float y : specials)
      xy.push_back(pack(x, y));
  for (size_t k = 0; k + 1 < kinds.size(); k += 2)
    xy.push_back(pack(kinds[k], kinds[k + 1]));
  for (int k = 0; k < 40000; ++k) {
    float x = 100.0f * rng::unitFloat(static_cast<uint32_t>(r.next()));
    float y = -20.0f + 40.0f * rng::unitFloat(static_cast<uint32_t>(r.next()));
    xy.push_back(pack(x, y));
    xy.push_back(pack(10000.0f, rng::unitFloat(static_cast<uint32_t>(r.next()))));
    float n = static_cast<float>(static_cast<int>(r.next() % 41) - 20);
    xy.push_back(pack(-x, n));
  }
  xy.resize(xy.size() - xy.size() % kWidth);
  compare<uint64_t, float>("pow", xy, 1, [](uint64_t v, float *out) {
    *out = rng::powF(rng::floatOf(static_cast<uint32_t>(v)),
                     rng::floatOf(static_cast<uint32_t>(v >> 32)));
  });
}

TEST_F(RandomExpandTest, Erfinv) {
  SplitMix r{13};
  std::vector<float> x = allKindsOfFloats(20000);
  for (int k = 0; k < 80000; ++k) { // the values trunc_normal feeds it, tails included
    float u = rng::unitFloat(static_cast<uint32_t>(r.next()));
    x.push_back(k % 2 ? 2.0f * u - 1.0f : (k % 4 ? 1.0f - u * 0x1p-10f : -1.0f + u * 0x1p-10f));
  }
  compare<float, float>("erfinv", x, 1, [](float v, float *out) { *out = rng::erfinvF(v); });
}

TEST_F(RandomExpandTest, SinCos2Pi) {
  // Every unit float: the emitted reduction rounds 4u to nearest, which is the reference's
  // round-half-up only because 4u is never a half-integer on this grid.
  std::vector<float> u;
  for (uint32_t high = 0; high < (1u << 23); ++high)
    u.push_back(rng::unitFloat(high << 9));
  compare<float, float>("sin2pi", u, 1, [](float v, float *out) { *out = rng::sin2Pi(v); });
  compare<float, float>("cos2pi", u, 1, [](float v, float *out) { *out = rng::cos2Pi(v); });
}

TEST_F(RandomExpandTest, RoundToHalfPrecisions) {
  std::vector<float> x = allKindsOfFloats(100000);
  // Every tie and its neighbours, for every upper half: the rounding's carry decisions.
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u})
      x.push_back(rng::floatOf(high << 16 | low));
  compare<float, uint16_t>("bf16", x, 1,
                           [](float v, uint16_t *out) { *out = rng::toBF16Bits(v); });
  // Without the NaN case: every number, infinities and the largest finite floats included.
  std::vector<float> numbers;
  for (float v : x)
    if (!std::isnan(v))
      numbers.push_back(v);
  for (float v : {INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f, 3.39e38f, 0.0f, -0.0f})
    numbers.push_back(v);
  numbers.resize(numbers.size() / kWidth * kWidth);
  ASSERT_GT(numbers.size(), 90000u);
  compare<float, uint16_t>("bf16_never_nan", numbers, 1,
                           [](float v, uint16_t *out) { *out = rng::toBF16Bits(v); });
  compare<float, uint16_t>("f16", x, 1, [](float v, uint16_t *out) { *out = rng::toF16Bits(v); });
}

TEST_F(RandomExpandTest, RoundToBF16BySplit) {
  // Each of the split's operations is exact under scaling by a power of two while every value is
  // normal and finite, as for x of magnitude 2^-126 to kBF16SplitLimit, and exact under negation:
  // the rounding of every significand in one binade is that of every binade. Every float of
  // [1, 2) then, and of the ends of the range, and both zeros.
  auto binade = [](float low) {
    std::vector<float> x;
    for (uint32_t k = 0; k < (1u << 23); ++k)
      x.push_back(std::copysign(
          std::fabs(low) + std::ldexp(static_cast<float>(k), std::ilogb(low) - 23), low));
    return x;
  };
  auto toBF16 = [](float v, uint16_t *out) { *out = rng::toBF16Bits(v); };
  using initc::random::kBF16SplitLimit;
  for (float low : {1.0f, -1.0f, 0x1p-126f, -0x1p-126f, kBF16SplitLimit / 2, -kBF16SplitLimit / 2})
    compare<float, uint16_t>("bf16_split", binade(low), 1, toBF16);
  std::vector<float> ends = {0.0f, -0.0f, kBF16SplitLimit, -kBF16SplitLimit};
  // Every tie and its neighbours in range, for every upper half.
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u}) {
      float v = rng::floatOf(high << 16 | low);
      if (std::isnormal(v) && std::fabs(v) <= kBF16SplitLimit)
        ends.push_back(v);
    }
  ends.resize(ends.size() / kWidth * kWidth);
  compare<float, uint16_t>("bf16_split", ends, 1, toBF16);
}

TEST(NeverNaN, FromTheParameters) {
  using namespace initc::random;
  EXPECT_TRUE(uniformIsNeverNaN(-0.1, 0.1));
  EXPECT_FALSE(uniformIsNeverNaN(-1e39, 1e39)); // infinite in f32
  EXPECT_TRUE(normalIsNeverNaN(0.0, 0.02));
  EXPECT_TRUE(normalIsNeverNaN(1e38, 1e38)); // overflows to infinity, not NaN
  EXPECT_FALSE(normalIsNeverNaN(0.0, 1e39));
  EXPECT_FALSE(normalIsNeverNaN(NAN, 1.0));
  EXPECT_TRUE(truncNormalIsNeverNaN(0.0, 0.02, -0.04, 0.04));
  EXPECT_TRUE(truncNormalIsNeverNaN(0.0, 1.0, -20.0, 20.0)); // v stays inside (-1, 1)
  EXPECT_FALSE(truncNormalIsNeverNaN(NAN, 1.0, -2.0, 2.0));
  EXPECT_FALSE(truncNormalIsNeverNaN(0.0, 1e39, -2.0, 2.0));
}

TEST(NeverSubnormal, StandardNormalMinimumOverEveryUnitFloat) {
  // z = r * cos or r * sin (rule 5); |z| >= rmin * cmin over the 2^23 values of rule 3 each.
  // And |z| <= rmax * cmax stays below kStandardNormalMax.
  float rmin = INFINITY, cmin = INFINITY, rmax = 0.0f, cmax = 0.0f;
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    float u = rng::unitFloat(k << 9);
    float r = std::sqrt(-2.0f * rng::logF(u));
    float s = std::fabs(rng::sin2Pi(u)), c = std::fabs(rng::cos2Pi(u));
    ASSERT_GT(r, 0.0f) << "u = " << u;
    ASSERT_GT(std::min(s, c), 0.0f) << "u = " << u;
    rmin = std::min(rmin, r);
    cmin = std::min({cmin, s, c});
    rmax = std::max(rmax, r);
    cmax = std::max({cmax, s, c});
  }
  EXPECT_GE(rmin * cmin, initc::random::kStandardNormalMin);
  EXPECT_EQ(rmin * cmin, initc::random::kStandardNormalMin) << "the bound can be raised";
  EXPECT_LT(rmax * cmax, initc::random::kStandardNormalMax);
}

TEST(NeverSubnormal, ErfinvFactorMinimumOverEveryArgument) {
  // erfinv(x) = p * x (rule 7). p is the central polynomial of w - 2.5 (w < 5) or the tail's of
  // sqrt(w) - 3, w = -log((1 - x)(1 + x)) in [0, 16.7) for |x| < 1: the first is a multiple of
  // 2^-23 in [-2.6, 2.5) (an f32 of magnitude 1.25 or more, or w - 2.5 exactly), the second
  // one of 2^-22 in [-0.77, 1.2] (sqrt(w) - 3 exactly). Every such argument: p's minimum.
  float central = INFINITY, tail = INFINITY;
  for (int64_t k = -int64_t(2.6 * (1 << 23)); k < int64_t(2.5 * (1 << 23)); ++k)
    central = std::min(central, rng::horner(rng::kErfinvCentral, std::ldexp(float(k), -23)));
  for (int64_t k = -int64_t(0.77 * (1 << 22)); k <= int64_t(1.2 * (1 << 22)); ++k)
    tail = std::min(tail, rng::horner(rng::kErfinvTail, std::ldexp(float(k), -22)));
  EXPECT_GE(std::min(central, tail), initc::random::kErfinvFactorMin);
  EXPECT_EQ(std::min(central, tail), initc::random::kErfinvFactorMin) << "the bound can be raised";
  // Those ranges and grids hold each argument of a trunc_normal whose v reaches both branches
  // (torch's default bounds, +-100 std), for every unit float of rule 3, and p stays above.
  rng::TruncNormalParams p = rng::truncNormalParams(0.0, 0.02, -2.0, 2.0);
  int tails = 0;
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    float v = rng::uniformFromWord(k << 9, p.v);
    float w = -rng::logF((1.0f - v) * (1.0f + v));
    float argument = w < 5.0f ? w - 2.5f : std::sqrt(w) - 3.0f;
    float grid = w < 5.0f ? 0x1p23f : 0x1p22f;
    ASSERT_EQ(std::trunc(argument * grid), argument * grid) << "v = " << v;
    ASSERT_TRUE(w < 5.0f ? argument >= -2.6f && argument < 2.5f
                         : argument >= -0.77f && argument <= 1.2f)
        << "v = " << v;
    if (v != 0.0f)
      ASSERT_GE(rng::erfinvF(v) / v, initc::random::kErfinvFactorMin) << "v = " << v;
    tails += w >= 5.0f;
  }
  EXPECT_GT(tails, 0);
}

TEST(NeverSubnormal, FromTheParameters) {
  using namespace initc::random;
  EXPECT_TRUE(uniformIsNeverSubnormal(-0.1, 0.1));
  EXPECT_TRUE(uniformIsNeverSubnormal(0.0, 0.0));
  EXPECT_FALSE(uniformIsNeverSubnormal(-1e-38, 1e-38));
  EXPECT_FALSE(uniformIsNeverSubnormal(-1e39, 1e39));
  EXPECT_TRUE(normalIsNeverSubnormal(0.0, 0.02));
  EXPECT_TRUE(normalIsNeverSubnormal(1.0, 0.0));
  EXPECT_TRUE(normalIsNeverSubnormal(0.0, 0x1p-70)); // std * z is a multiple of 2^-126
  EXPECT_FALSE(normalIsNeverSubnormal(0.0, 0x1p-71));
  EXPECT_FALSE(normalIsNeverSubnormal(0.0, 1e-38));
  EXPECT_FALSE(normalIsNeverSubnormal(NAN, 1.0));
  EXPECT_TRUE(truncNormalIsNeverSubnormal(0.0, 0.02, -0.04, 0.04));
  EXPECT_TRUE(truncNormalIsNeverSubnormal(0.0, 0.02, -2.0, 2.0));
  EXPECT_TRUE(truncNormalIsNeverSubnormal(0.0, 0.02, 0.0, 0.04)); // a bound of 0 is no subnormal
  EXPECT_FALSE(truncNormalIsNeverSubnormal(0.0, 0.02, -1e-40, 0.04)); // a subnormal bound
  EXPECT_FALSE(truncNormalIsNeverSubnormal(0.0, 1e-38, -2e-38, 2e-38));
  EXPECT_FALSE(truncNormalIsNeverSubnormal(NAN, 1.0, -2.0, 2.0));
  // Where it says no, there are subnormals: std 1e-38 over every unit float.
  rng::TruncNormalParams tiny = rng::truncNormalParams(0.0, 1e-38, -2e-38, 2e-38);
  int tinySubnormals = 0;
  for (uint32_t k = 0; k < (1u << 23); k += 64) {
    float y = rng::truncNormalFromWord(k << 9, tiny);
    tinySubnormals += y != 0.0f && std::fabs(y) < 0x1p-126f;
  }
  EXPECT_GT(tinySubnormals, 0);
  // The uniform bound is tight: every unit float of rule 3 for the widest range it accepts
  // gives no subnormal, and the next narrower range gives some.
  auto subnormals = [](double bound) {
    rng::UniformParams p = rng::uniformParams(-bound, bound);
    int count = 0;
    for (uint32_t k = 0; k < (1u << 23); ++k) {
      float v = rng::uniformFromWord(k << 9, p);
      count += v != 0.0f && std::fabs(v) < 0x1p-126f;
    }
    return count;
  };
  EXPECT_TRUE(uniformIsNeverSubnormal(-0x1p-103, 0x1p-103));
  EXPECT_EQ(subnormals(0x1p-103), 0);
  EXPECT_FALSE(uniformIsNeverSubnormal(-0x1p-104, 0x1p-104));
  EXPECT_GT(subnormals(0x1p-104), 0);
}

TEST(MagnitudeBound, FromTheParameters) {
  using namespace initc::random;
  // Uniform's is its samples' largest magnitude over every unit float of rule 3; truncated
  // normal's, the larger bound's, which a sample need not reach.
  rng::UniformParams u = rng::uniformParams(-0.0625, 0.1);
  rng::TruncNormalParams t = rng::truncNormalParams(0.1, 1.0, -0.5, 1.5);
  float uniformMax = 0.0f, truncMax = 0.0f;
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    uniformMax = std::max(uniformMax, std::fabs(rng::uniformFromWord(k << 9, u)));
    truncMax = std::max(truncMax, std::fabs(rng::truncNormalFromWord(k << 9, t)));
  }
  EXPECT_EQ(uniformMagnitudeBound(-0.0625, 0.1), uniformMax);
  EXPECT_GE(truncNormalMagnitudeBound(0.1, 1.0, -0.5, 1.5), truncMax);
  EXPECT_EQ(truncNormalMagnitudeBound(0.1, 1.0, -0.5, 1.5), 1.5f);
  // Normal's: |mean| + 6 |std| and a little (kStandardNormalMax's test bounds z).
  EXPECT_GE(normalMagnitudeBound(0.25, 0.02), 0.25f + 6 * 0.02f);
  EXPECT_LT(normalMagnitudeBound(0.25, 0.02), 0.3701f);
  // None where a sample can be infinite or NaN.
  EXPECT_TRUE(std::isinf(uniformMagnitudeBound(-1e39, 1e39)));
  EXPECT_TRUE(std::isinf(uniformMagnitudeBound(NAN, 1.0)));
  EXPECT_TRUE(std::isinf(normalMagnitudeBound(1e38, 1e38)));
  EXPECT_TRUE(std::isinf(normalMagnitudeBound(0.0, NAN)));
  EXPECT_TRUE(std::isinf(truncNormalMagnitudeBound(0.0, 1.0, -INFINITY, 2.0)));
  EXPECT_TRUE(std::isinf(truncNormalMagnitudeBound(0.0, 1.0, -2.0, NAN)));
}

TEST_F(RandomExpandTest, KeyDerivationMatchesRuntime) {
  PhiloxKey k = initc::random::derivePhiloxKey(42, "model.embed_tokens.weight", 0);
  EXPECT_EQ(k.k0, 0xc0bbdabbu);
  EXPECT_EQ(k.k1, 0x977fe162u);
}

} // namespace
