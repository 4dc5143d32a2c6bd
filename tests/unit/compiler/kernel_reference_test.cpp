// The compiled kernels against the scalar reference (runtime/include/initrt/rng.h), bit for bit.
//
// Small init modules go through the real pipeline (fuse, partition, kernels.so); each kernel is
// run on several slices of its tensor and several splits of [begin, end), and every element is
// compared with the reference evaluated at its global index. The same module compiled for
// x86-64 (SSE2 only), x86-64-v3 (AVX2) and the host CPU must give the same bytes: the RNG
// contract holds across vector widths, and any restructuring of the kernels' loops (Philox
// blocks shared by four elements, prologue and epilogue around aligned blocks) is checked here.
#include "initc/Pipeline/Pipeline.h"
#include "initc/Registration.h"
#include "initc/Target/LLVMCPU/LibraryBuilder.h"
#include "initrt/base/program.h"
#include "initrt/base/rng.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

using namespace mlir;
namespace rng = initrt::rng;

namespace {

constexpr uint64_t kSeed = 1234;

// WideTruncNormal: bounds at +-100 std, so erfinv's tail branch (|v| > 0.9966) is taken now and
// then, which vector kernels compute only for iterations where some lane takes it;
// WideTruncNormalSum: two of them (streams s and s + 1) added, two such branches in one kernel.
// UniformMinusNormal: a uniform sample of stream s less a normal one of stream s + 1, whose
// keys cannot be swapped unnoticed.
enum class Dist {
  Uniform,
  Normal,
  TruncNormal,
  WideTruncNormal,
  WideTruncNormalSum,
  UniformMinusNormal,
  ScaledUniform,
  ScaledNormal,
  // Parameters whose samples are often subnormal: bf16 must round them by rule 8's integer
  // form, never by a conversion instruction that flushes them to zero.
  TinyUniform,
  TinyNormal,
  TinyTruncNormal,
  // Parameters whose samples are too large for the split rounding (x * 65537 overflows): bf16
  // must round them by the integer form or the conversion instruction.
  HugeUniform,
  HugeNormal
};

struct Case {
  std::string name;
  Dist dist;
  std::string dtype; // f32, bf16, f16, f64
  std::vector<int64_t> shape;
  int stream;
};

std::string tensorType(const Case &c) {
  std::string t = "tensor<";
  for (int64_t d : c.shape)
    t += std::to_string(d) + "x";
  return t + c.dtype + ">";
}

std::string recipe(const Case &c) {
  std::string s = " stream " + std::to_string(c.stream) + " : " + tensorType(c);
  switch (c.dist) {
  case Dist::Uniform:
    return "init.uniform -0.1, 0.1" + s;
  case Dist::Normal:
    return "init.normal mean 0.5 std 0.02" + s;
  case Dist::TruncNormal:
    return "init.trunc_normal mean 0.0 std 0.02 bounds [-0.04, 0.04]" + s;
  case Dist::WideTruncNormal:
  case Dist::WideTruncNormalSum:
    return "init.trunc_normal mean 0.0 std 0.02 bounds [-2.0, 2.0]" + s;
  case Dist::UniformMinusNormal:
    return "init.uniform -0.1, 0.1" + s;
  case Dist::ScaledUniform:
    return "init.variance_scaling scale 0.333333 fan_in uniform" + s;
  case Dist::ScaledNormal:
    return "init.variance_scaling scale 2.0 fan_in normal" + s;
  case Dist::TinyUniform:
    return "init.uniform -1.0e-38, 1.0e-38" + s;
  case Dist::TinyNormal:
    return "init.normal mean 0.0 std 1.0e-38" + s;
  case Dist::TinyTruncNormal:
    return "init.trunc_normal mean 0.0 std 1.0e-38 bounds [-2.0e-38, 2.0e-38]" + s;
  case Dist::HugeUniform:
    return "init.uniform -1.0e+38, 1.0e+38" + s;
  case Dist::HugeNormal:
    return "init.normal mean 0.0 std 1.0e+36" + s;
  }
  return "";
}

double fanIn(const std::vector<int64_t> &shape) {
  double fan = double(shape[1]);
  for (size_t d = 2; d < shape.size(); ++d)
    fan *= double(shape[d]);
  return fan;
}

// The f32 sample of element `i` of a case, by the reference.
float referenceSample(const Case &c, uint64_t i) {
  rng::Key key = rng::deriveKey(kSeed, c.name, uint64_t(c.stream));
  switch (c.dist) {
  case Dist::Uniform:
    return rng::uniformAt(key, i, -0.1, 0.1);
  case Dist::Normal:
    return rng::normalAt(key, i, 0.5, 0.02);
  case Dist::TruncNormal:
    return rng::truncNormalAt(key, i, 0.0, 0.02, -0.04, 0.04);
  case Dist::WideTruncNormal:
    return rng::truncNormalAt(key, i, 0.0, 0.02, -2.0, 2.0);
  case Dist::WideTruncNormalSum:
    return rng::truncNormalAt(key, i, 0.0, 0.02, -2.0, 2.0) +
           rng::truncNormalAt(rng::deriveKey(kSeed, c.name, uint64_t(c.stream) + 1), i, 0.0,
                              0.02, -2.0, 2.0);
  case Dist::UniformMinusNormal:
    return rng::uniformAt(key, i, -0.1, 0.1) -
           rng::normalAt(rng::deriveKey(kSeed, c.name, uint64_t(c.stream) + 1), i, 0.5, 0.02);
  case Dist::ScaledUniform: {
    double bound = std::sqrt(3.0 * 0.333333 / fanIn(c.shape));
    return rng::uniformAt(key, i, -bound, bound);
  }
  case Dist::ScaledNormal:
    return rng::normalAt(key, i, 0.0, std::sqrt(2.0 / fanIn(c.shape)));
  case Dist::TinyUniform:
    return rng::uniformAt(key, i, -1.0e-38, 1.0e-38);
  case Dist::TinyNormal:
    return rng::normalAt(key, i, 0.0, 1.0e-38);
  case Dist::TinyTruncNormal:
    return rng::truncNormalAt(key, i, 0.0, 1.0e-38, -2.0e-38, 2.0e-38);
  case Dist::HugeUniform:
    return rng::uniformAt(key, i, -1.0e38, 1.0e38);
  case Dist::HugeNormal:
    return rng::normalAt(key, i, 0.0, 1.0e36);
  }
  return 0;
}

size_t elementBytes(const Case &c) {
  if (c.dtype == "f64")
    return 8;
  if (c.dtype == "f32")
    return 4;
  return 2;
}

// The stored bytes of element `i` of a case, by the reference.
std::vector<uint8_t> referenceElement(const Case &c, uint64_t i) {
  float f = referenceSample(c, i);
  std::vector<uint8_t> bytes(elementBytes(c));
  if (c.dtype == "f32") {
    std::memcpy(bytes.data(), &f, 4);
  } else if (c.dtype == "f64") {
    double d = f;
    std::memcpy(bytes.data(), &d, 8);
  } else {
    uint16_t h = c.dtype == "bf16" ? rng::toBF16Bits(f) : rng::toF16Bits(f);
    std::memcpy(bytes.data(), &h, 2);
  }
  return bytes;
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  // {11, 32} and {3, 104}: rows of whole Philox blocks shorter than the main loop's
  // iterations, which the kernels take across rows (see boxesOf). {2, 1601}: rows of 400 and
  // 399 whole blocks, which leave single groups after the iterations of two or three groups
  // of 16 (400 = 8 * 48 + 16 = 12 * 32 + 16) and of two of 8 (399 = 24 * 16 + 15).
  const std::vector<std::vector<int64_t>> shapes = {{1001},    {7, 13},  {3, 5, 7},
                                                    {2, 1601}, {11, 32}, {3, 104}};
  const char *dtypes[] = {"f32", "bf16", "f16", "f64"};
  int n = 0;
  for (Dist dist : {Dist::Uniform, Dist::Normal, Dist::TruncNormal, Dist::WideTruncNormal,
                    Dist::ScaledUniform, Dist::ScaledNormal, Dist::TinyUniform, Dist::TinyNormal,
                    Dist::TinyTruncNormal, Dist::HugeUniform, Dist::HugeNormal})
    for (const char *dtype : dtypes)
      for (const auto &shape : shapes) {
        bool scaled = dist == Dist::ScaledUniform || dist == Dist::ScaledNormal;
        if (scaled && shape.size() < 2)
          continue; // the fan needs rank >= 2
        // The tail branch's laziness depends on neither the stored type nor the rank: two
        // types, and shapes that run both vector loops (along rows and across rows).
        if (dist == Dist::WideTruncNormal &&
            ((std::string(dtype) != "f32" && std::string(dtype) != "bf16") ||
             shape.size() > 2 || shape == std::vector<int64_t>{7, 13}))
          continue;
        bool bf16Only = dist == Dist::TinyUniform || dist == Dist::TinyNormal ||
                        dist == Dist::TinyTruncNormal || dist == Dist::HugeUniform ||
                        dist == Dist::HugeNormal;
        if (bf16Only && (std::string(dtype) != "bf16" || shape.size() > 2))
          continue;
        Case c;
        c.name = "model.layers." + std::to_string(n) + ".weight";
        c.dist = dist;
        c.dtype = dtype;
        c.shape = shape;
        c.stream = n % 3;
        cases.push_back(c);
        ++n;
      }
  for (const std::vector<int64_t> &shape : {shapes[3], shapes[4]}) {
    Case sum;
    sum.name = "model.layers." + std::to_string(n++) + ".weight";
    sum.dist = Dist::WideTruncNormalSum;
    sum.dtype = "f32";
    sum.shape = shape;
    sum.stream = 1;
    cases.push_back(sum);
  }
  Case difference;
  difference.name = "model.layers." + std::to_string(n++) + ".weight";
  difference.dist = Dist::UniformMinusNormal;
  difference.dtype = "f32";
  difference.shape = shapes[1];
  difference.stream = 2;
  cases.push_back(difference);
  // Parameters with the same recipe and shape: they may share a kernel (and fusion one
  // region: init.elementwise_like), never values. The difference's twin has two keys, whose
  // order must follow the region's arguments.
  Case twin = cases.front();
  twin.name = "model.twin.weight";
  cases.push_back(twin);
  difference.name = "model.difference_twin.weight";
  cases.push_back(difference);
  return cases;
}

std::string moduleText(const std::vector<Case> &cases) {
  std::string text = "init.seed " + std::to_string(kSeed) + "\n";
  for (const Case &c : cases) {
    text += "init.param @" + c.name + " : " + tensorType(c) + " {\n";
    if (c.dist == Dist::WideTruncNormalSum || c.dist == Dist::UniformMinusNormal) {
      Case second = c;
      second.stream = c.stream + 1;
      bool difference = c.dist == Dist::UniformMinusNormal;
      if (difference)
        second.dist = Dist::Normal;
      text += "  %a = " + recipe(c) + "\n  %b = " + recipe(second) + "\n";
      text += std::string("  %0 = init.") + (difference ? "sub" : "add") +
              " %a, %b : " + tensorType(c) + "\n";
    } else {
      text += "  %0 = " + recipe(c) + "\n";
    }
    text += "  init.yield %0 : " + tensorType(c) + "\n}\n";
  }
  return text;
}

// A box of the global tensor: offset and local shape.
struct Box {
  std::vector<int64_t> offset, shape;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

std::vector<Box> boxesOf(const std::vector<int64_t> &shape) {
  std::vector<Box> boxes;
  Box whole{std::vector<int64_t>(shape.size(), 0), shape};
  boxes.push_back(whole);
  // An interior box with odd offsets: rows start off the 4-element block grid.
  Box inner = whole;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 2) {
      inner.offset[d] = 1;
      inner.shape[d] = shape[d] - 2;
    }
  boxes.push_back(inner);
  // The last 3 columns (shorter than a block), and one element.
  Box tail = whole;
  tail.offset.back() = shape.back() - 3;
  tail.shape.back() = 3;
  boxes.push_back(tail);
  Box one = whole;
  for (size_t d = 0; d < shape.size(); ++d) {
    one.offset[d] = shape[d] / 2;
    one.shape[d] = 1;
  }
  boxes.push_back(one);
  // A band of 16 columns from column 8 and row 1: rows of whole blocks, offset on both dims.
  if (shape.size() == 2 && shape[0] > 1 && shape[1] >= 24 && shape[1] % 4 == 0) {
    Box band{{1, 8}, {shape[0] - 1, 16}};
    boxes.push_back(band);
  }
  // A torch.chunk-style half along dim 0.
  if (shape[0] > 1) {
    Box half = whole;
    half.offset[0] = (shape[0] + 1) / 2;
    half.shape[0] = shape[0] - half.offset[0];
    boxes.push_back(half);
  }
  return boxes;
}

// Splits of [0, n) into [begin, end) pieces.
std::vector<std::vector<int64_t>> splitsOf(int64_t n) {
  std::vector<std::vector<int64_t>> splits;
  splits.push_back({0, n});
  std::vector<int64_t> ones;
  for (int64_t i = 0; i <= n && n <= 4096; ++i)
    ones.push_back(i);
  if (!ones.empty())
    splits.push_back(ones);
  for (int64_t step : {3, 5, 17, 258}) {
    std::vector<int64_t> cut;
    for (int64_t i = 0; i < n; i += step)
      cut.push_back(i);
    cut.push_back(n);
    splits.push_back(cut);
  }
  return splits;
}

// The stored bytes of a float result: rule 9's one NaN, else the value (widened for f64).
std::vector<uint8_t> storedBytes(float v, const std::string &dtype) {
  std::vector<uint8_t> bytes(dtype == "f64" ? 8 : dtype == "bf16" ? 2 : 4);
  if (dtype == "f64") {
    double d = std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : double(v);
    std::memcpy(bytes.data(), &d, 8);
  } else if (dtype == "bf16") {
    uint16_t h = std::isnan(v) ? uint16_t(0x7fc0) : rng::toBF16Bits(v);
    std::memcpy(bytes.data(), &h, 2);
  } else {
    uint32_t b = std::isnan(v) ? 0x7fc00000u : rng::bitsOf(v);
    std::memcpy(bytes.data(), &b, 4);
  }
  return bytes;
}

class KernelReferenceTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    initc::registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("initc-kernel-ref", dir));
    tempDir = dir.str().str();
  }
  void TearDown() override {
    for (void *handle : handles)
      dlclose(handle);
    llvm::sys::fs::remove_directories(tempDir);
  }

  // Compiles `cases` for `spec`, a CPU, CPU:GROUPS or CPU:GROUPSxBLOCKS (init-partition's
  // targets: block groups per iteration, blocks per vector); returns the program (kernel names
  // and args) and the library.
  void *compile(const std::vector<Case> &cases, const std::string &spec,
                initrt::Program &program) {
    return compile(moduleText(cases), spec, program);
  }
  void *compile(const std::string &text, const std::string &spec, initrt::Program &program) {
    std::string cpu = llvm::StringRef(spec).split(':').first.str();
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module);
    if (!module)
      return nullptr;
    initc::target::TargetOptions target;
    target.cpu = cpu;
    initc::PipelineOptions options;
    std::string error;
    EXPECT_TRUE(succeeded(initc::kernelTargets({spec}, target, options, error))) << error;
    EXPECT_TRUE(succeeded(initc::runPipeline(*module, options, initc::Stage::Partitioned)));
    EXPECT_TRUE(succeeded(initc::buildProgram(*module, "ref", program, error))) << error;
    OwningOpRef<ModuleOp> kernels = initc::extractKernels(*module);
    std::string soPath = tempDir + "/kernels-" + std::to_string(handles.size()) + ".so";
    EXPECT_TRUE(succeeded(initc::target::emitSharedObject(*kernels, soPath, target, error)))
        << error;
    void *handle = dlopen(soPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << dlerror();
    if (handle)
      handles.push_back(handle);
    return handle;
  }

  // Runs every case on every box and split; checks each element against the reference and
  // returns all bytes written, in order, for comparing CPUs.
  std::vector<uint8_t> runAll(const std::vector<Case> &cases, const std::string &cpu) {
    initrt::Program program;
    void *handle = compile(cases, cpu, program);
    std::vector<uint8_t> all;
    if (!handle)
      return all;
    EXPECT_EQ(program.params.size(), cases.size());
    int failures = 0;
    for (size_t p = 0; p < cases.size() && p < program.params.size(); ++p) {
      const Case &c = cases[p];
      const initrt::Param &param = program.params[p];
      EXPECT_EQ(param.name, c.name);
      auto kernel =
          reinterpret_cast<initrt::KernelFn>(dlsym(handle, param.kernel.c_str()));
      EXPECT_NE(kernel, nullptr) << param.kernel;
      if (!kernel)
        continue;
      size_t width = elementBytes(c);
      for (const Box &box : boxesOf(c.shape)) {
        int64_t n = box.elements();
        for (const std::vector<int64_t> &cuts : splitsOf(n)) {
          // Guards of a vector group's 64 elements on both sides, and the elements after each
          // call's [begin, end) still unwritten, catch writes outside it (a masked store's
          // lanes past either end of the range).
          const size_t guard = 64 * width;
          std::vector<uint8_t> out(size_t(n) * width + 2 * guard, 0xa5);
          uint8_t *elements = out.data() + guard;
          const uint8_t *outBegin = out.data(), *outEnd = out.data() + out.size();
          auto untouched = [](const uint8_t *from, const uint8_t *to) {
            return std::all_of(from, to, [](uint8_t byte) { return byte == 0xa5; });
          };
          for (size_t s = 0; s + 1 < cuts.size(); ++s) {
            const uint8_t *begin = elements + size_t(cuts[s]) * width;
            std::vector<uint8_t> before(begin - std::min(guard, size_t(begin - outBegin)), begin);
            callKernel(kernel, param, elements, c.shape, box, cuts[s], cuts[s + 1]);
            EXPECT_TRUE(std::equal(before.begin(), before.end(), begin - before.size()))
                << cpu << ": " << c.name << " wrote before element " << cuts[s];
            const uint8_t *next = elements + size_t(cuts[s + 1]) * width;
            EXPECT_TRUE(untouched(next, std::min(next + guard, outEnd)))
                << cpu << ": " << c.name << " wrote past element " << cuts[s + 1] - 1;
          }
          EXPECT_TRUE(untouched(out.data(), elements))
              << cpu << ": " << c.name << " wrote before element 0";
          // Compare every element with the reference at its global index.
          for (int64_t local = 0; local < n && failures < 20; ++local) {
            int64_t rest = local, global = 0, stride = 1;
            for (int64_t d = int64_t(c.shape.size()) - 1; d >= 0; --d) {
              int64_t index = rest % box.shape[d] + box.offset[d];
              rest /= box.shape[d];
              global += index * stride;
              stride *= c.shape[d];
            }
            std::vector<uint8_t> want = referenceElement(c, uint64_t(global));
            if (std::memcmp(want.data(), elements + size_t(local) * width, width)) {
              ++failures;
              ADD_FAILURE() << cpu << ": " << c.name << " (" << c.dtype << ") element " << global
                            << " (local " << local << ", " << cuts.size() - 1
                            << " pieces) differs from the reference";
            }
          }
          all.insert(all.end(), out.begin(), out.end());
        }
      }
    }
    return all;
  }

  static void callKernel(initrt::KernelFn kernel, const initrt::Param &param, void *out,
                         const std::vector<int64_t> &shape, const Box &box, int64_t begin,
                         int64_t end) {
    const uint64_t noArgs[1] = {0};
    const uint64_t *args = param.kernelArgs.empty() ? noArgs : param.kernelArgs.data();
    kernel(out, shape.data(), box.offset.data(), box.shape.data(), begin, end, args);
  }

  // Runs `kernel` over `box` of a tensor of `shape` in every split of splitsOf, compares each
  // element with want(local index) and returns all bytes written, for comparing CPUs.
  static std::vector<uint8_t> runSplits(initrt::KernelFn kernel, const initrt::Param &param,
                                        const std::vector<int64_t> &shape, const Box &box,
                                        size_t width,
                                        const std::function<std::vector<uint8_t>(int64_t)> &want,
                                        const std::string &what) {
    std::vector<uint8_t> all;
    for (const std::vector<int64_t> &cuts : splitsOf(box.elements())) {
      std::vector<uint8_t> out(size_t(box.elements()) * width, 0xa5);
      for (size_t s = 0; s + 1 < cuts.size(); ++s)
        callKernel(kernel, param, out.data(), shape, box, cuts[s], cuts[s + 1]);
      int failures = 0;
      for (int64_t local = 0; local < box.elements() && failures < 5; ++local) {
        std::vector<uint8_t> bytes = want(local);
        if (std::memcmp(bytes.data(), out.data() + size_t(local) * width, width)) {
          ++failures;
          ADD_FAILURE() << what << ": local element " << local << " of box offset "
                        << box.offset.back() << " (" << cuts.size() - 1
                        << " pieces) differs from the reference";
        }
      }
      all.insert(all.end(), out.begin(), out.end());
    }
    return all;
  }

  // One parameter of a 1-d tensor: its init ops over TYPE ending in %0, and each element's value
  // from the scalar reference, as f32.
  struct Recipe {
    std::string name, dtype, body;
    std::function<float(uint64_t)> reference;
  };

  // Compiles `recipes` (tensor<n x dtype> each) for SSE2, AVX2 with two block groups (the loop
  // as it is and software-pipelined) and the host's widest vectors: every element has the reference's stored bytes on the whole tensor and
  // on an inner slice, in every split, and every CPU's kernels write the same bytes.
  void expectRecipesMatch(const std::vector<Recipe> &recipes, int64_t n) {
    std::string text = "init.seed " + std::to_string(kSeed) + "\n";
    for (const Recipe &r : recipes) {
      std::string type = "tensor<" + std::to_string(n) + "x" + r.dtype + ">", body = r.body;
      for (size_t at; (at = body.find("TYPE")) != std::string::npos;)
        body.replace(at, 4, type);
      text += "init.param @\"" + r.name + "\" : " + type + " {\n" + body + "init.yield %0 : " +
              type + "\n}\n";
    }
    const std::vector<std::string> specs = {"x86-64", "x86-64-v3:2", "x86-64-v3:2p",
                                            "native:3x16"};
    std::vector<uint8_t> first;
    for (const std::string &spec : specs) {
      initrt::Program program;
      void *handle = compile(text, spec, program);
      ASSERT_NE(handle, nullptr);
      ASSERT_EQ(program.params.size(), recipes.size());
      std::vector<uint8_t> all;
      for (size_t p = 0; p < recipes.size(); ++p) {
        const Recipe &r = recipes[p];
        auto kernel = reinterpret_cast<initrt::KernelFn>(
            dlsym(handle, program.params[p].kernel.c_str()));
        ASSERT_NE(kernel, nullptr) << r.name;
        size_t width = storedBytes(0, r.dtype).size();
        for (const Box &box : {Box{{0}, {n}}, Box{{3}, {n - 5}}}) {
          std::vector<uint8_t> bytes = runSplits(
              kernel, program.params[p], {n}, box, width,
              [&](int64_t local) {
                return storedBytes(r.reference(uint64_t(local + box.offset[0])), r.dtype);
              },
              spec + ": " + r.name);
          all.insert(all.end(), bytes.begin(), bytes.end());
        }
      }
      if (first.empty())
        first = all;
      else
        EXPECT_TRUE(first == all) << specs.front() << " and " << spec << " kernels differ";
    }
  }

  MLIRContext context;
  std::string tempDir;
  std::vector<void *> handles;
};

TEST_F(KernelReferenceTest, EveryElementMatchesTheReference) {
  runAll(allCases(), "x86-64-v3");
}

TEST(KernelReferenceCases, WideTruncNormalTakesTheTailBranch) {
  // The wide cases must hold elements from erfinv's tail branch (w >= 5, |v| > 0.9966: beyond
  // erfinv(0.9966) * 0.02 * sqrt(2) = 0.0585), else the lazy branch would go untested.
  int tail = 0, elements = 0;
  for (const Case &c : allCases())
    if (c.dist == Dist::WideTruncNormal)
      for (uint64_t i = 0; i < uint64_t(std::accumulate(c.shape.begin(), c.shape.end(),
                                                          int64_t(1), std::multiplies<>()));
           ++i, ++elements)
        tail += std::fabs(referenceSample(c, i)) > 0.06f;
  EXPECT_GE(tail, 10) << "of " << elements;
  EXPECT_LT(tail, elements / 50);
}

TEST_F(KernelReferenceTest, SameRecipesShareAKernel) {
  // Parameters that differ only in name (so in their Philox keys) share one kernel.
  std::vector<Case> all = allCases();
  auto twin = std::find_if(all.begin(), all.end(),
                           [](const Case &c) { return c.name == "model.twin.weight"; });
  ASSERT_NE(twin, all.end());
  std::vector<Case> cases = {all.front(), all[1], *twin};
  initrt::Program program;
  ASSERT_NE(compile(cases, "x86-64-v3", program), nullptr);
  ASSERT_EQ(program.params.size(), cases.size());
  EXPECT_EQ(program.params.front().kernel, program.params.back().kernel);
  EXPECT_NE(program.params.front().kernelArgs, program.params.back().kernelArgs);
}

TEST_F(KernelReferenceTest, VectorWidthsGiveTheSameBytes) {
  // Every CPU, every number of block groups per iteration (interleaved dependency chains), both
  // vector lengths and software-pipelined loops (x86-64-v3's default, `p`) give the same bytes;
  // AVX-512 code runs only where the host has it.
  // native:3x16 on a CPU with AVX512-BF16 orders its bf16 lanes for the conversion instruction
  // as x86-64-v4+avx512bf16 does, known by the CPU's name.
  std::vector<Case> cases = allCases();
  std::vector<uint8_t> portable = runAll(cases, "x86-64");
  ASSERT_FALSE(portable.empty());
  std::vector<std::string> specs = {"x86-64-v3",     "x86-64-v3:2",  "x86-64-v3:1p",
                                    "x86-64-v3:1x16", "x86-64-v3:4p", "native:3x16"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    specs.insert(specs.end(),
                 {"x86-64-v4:2", "x86-64-v4:2x16", "x86-64-v4:3x16", "x86-64-v4:3x16p"});
  // bf16 samples by the conversion instruction, where the host has it.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
    specs.push_back("x86-64-v4+avx512bf16:3x16");
  for (const std::string &spec : specs)
    EXPECT_TRUE(portable == runAll(cases, spec)) << "x86-64 and " << spec << " kernels differ";
}

TEST_F(KernelReferenceTest, IndexArgumentsHoldAcrossRows) {
  // A recipe of the row and column indices, on slices whose short rows the kernels take across
  // rows: every element gets its own row and column, for every CPU and split.
  const int64_t rows = 37, cols = 32;
  std::string type = "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) + "xf32>";
  std::string text = "init.seed 1\n"
                     "init.param @grid : " + type + " {\n"
                     "  %r = init.iota dim 0 start 0.0 step 1000.0 : " + type + "\n"
                     "  %c = init.iota dim 1 start 0.0 step 1.0 : " + type + "\n"
                     "  %0 = init.add %r, %c : " + type + "\n"
                     "  init.yield %0 : " + type + "\n}\n";
  std::vector<std::string> specs = {"x86-64", "x86-64-v3:2"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    specs.push_back("x86-64-v4:3x16");
  const std::vector<int64_t> shape = {rows, cols};
  for (const std::string &spec : specs) {
    initrt::Program program;
    void *handle = compile(text, spec, program);
    ASSERT_NE(handle, nullptr);
    auto kernel = reinterpret_cast<initrt::KernelFn>(
        dlsym(handle, program.params[0].kernel.c_str()));
    ASSERT_NE(kernel, nullptr);
    for (const Box &box : {Box{{0, 0}, {rows, cols}}, Box{{1, 8}, {rows - 1, 16}},
                           Box{{3, 4}, {rows - 3, 8}}})
      for (const std::vector<int64_t> &cuts : splitsOf(box.elements())) {
        std::vector<float> out(size_t(box.elements()), -1.0f);
        for (size_t s = 0; s + 1 < cuts.size(); ++s)
          callKernel(kernel, program.params[0], out.data(), shape, box, cuts[s], cuts[s + 1]);
        int failures = 0;
        for (int64_t local = 0; local < box.elements() && failures < 5; ++local) {
          int64_t r = local / box.shape[1] + box.offset[0];
          int64_t c = local % box.shape[1] + box.offset[1];
          if (out[size_t(local)] != float(r * 1000 + c)) {
            ++failures;
            ADD_FAILURE() << spec << ": element (" << r << ", " << c << ") is "
                          << out[size_t(local)] << " (" << cuts.size() - 1 << " pieces)";
          }
        }
      }
  }
}

// `v` as an element of `dtype` holds it, as f32: bf16 rounded (rule 8), f32 and f64 as they are
// (an f64 sample is the f32 one widened, and the transcendental ops take f32).
float held(float v, const std::string &dtype) {
  return dtype == "bf16" ? rng::floatOf(uint32_t(rng::toBF16Bits(v)) << 16) : v;
}

std::string exactDecimal(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  return s.find_first_of(".en") == std::string::npos ? s + ".0" : s;
}

TEST_F(KernelReferenceTest, Expm1AndLog1pMatchTheReference) {
  // init.expm1 and init.log1p of random samples and of index sweeps through their branches
  // (expm1: |x| < 2^-25, the k = 0, -1 and 1 ranges and the scaled ones, x <= -27 ln 2,
  // overflow; log1p: below -1, -1, the near-zero and reduced ranges), and mamba's dt_proj.bias
  // recipe dt + log(-expm1(-dt)) as the capture writes it, in f32, bf16 and f64: every element
  // has the reference's bits, on slices and splits, and every vector width the same bytes.
  const int64_t n = 517;
  auto key = [](const std::string &name) { return rng::deriveKey(kSeed, name, 0); };
  std::vector<Recipe> recipes;
  struct Uniform {
    const char *op;
    float (*fn)(float);
    double low, high; // the operand's bounds
  };
  const Uniform uniforms[] = {{"expm1", rng::expm1F, -30.0, 30.0},
                              {"log1p", rng::log1pF, -1.0, 4.0}};
  for (std::string dtype : {"f32", "bf16", "f64"})
    for (const Uniform &u : uniforms) {
      std::string name = std::string(u.op) + "_uniform_" + dtype;
      recipes.push_back({name, dtype,
                         "%x = init.uniform " + exactDecimal(u.low) + ", " + exactDecimal(u.high) +
                             " stream 0 : TYPE\n%0 = init." + u.op + " %x : TYPE\n",
                         [=](uint64_t i) {
                           return u.fn(held(rng::uniformAt(key(name), i, u.low, u.high), dtype));
                         }});
    }
  // Sweeps: x = start + step * i in f64, rounded to f32, as init.iota computes it.
  struct Sweep {
    const char *name, *op;
    double start, step;
    float (*fn)(float);
  };
  for (Sweep sweep : {Sweep{"expm1_wide", "expm1", -100.0, 0.375, rng::expm1F},
                      Sweep{"expm1_small", "expm1", -0x1p-21, 0x1p-29, rng::expm1F},
                      Sweep{"log1p_wide", "log1p", -1.5, 0x1p-7, rng::log1pF},
                      Sweep{"log1p_small", "log1p", -0x1p-21, 0x1p-29, rng::log1pF}})
    recipes.push_back({sweep.name, "f32",
                       "%x = init.iota dim 0 start " + exactDecimal(sweep.start) + " step " +
                           exactDecimal(sweep.step) + " : TYPE\n%0 = init." + sweep.op +
                           " %x : TYPE\n",
                       [=](uint64_t i) {
                         return sweep.fn(float(sweep.start + sweep.step * double(i)));
                       }});
  // mamba's dt_proj.bias (transformers' init_mamba_weights: time_step_min 0.001, max 0.1,
  // floor 1e-4); the capture writes -x as -0.0 - x.
  const double span = std::log(0.1) - std::log(0.001), low = std::log(0.001);
  recipes.push_back(
      {"dt_proj.bias", "f32",
       "%u = init.uniform 0.0, 1.0 stream 0 : TYPE\n"
       "%span = init.fill " + exactDecimal(span) + " : TYPE\n"
       "%low = init.fill " + exactDecimal(low) + " : TYPE\n"
       "%z = init.fill -0.0 : TYPE\n"
       "%a = init.mul %u, %span : TYPE\n%b = init.add %a, %low : TYPE\n"
       "%e = init.exp %b : TYPE\n"
       "%dt = init.clamp %e min 1.0e-4 max 0x7FF0000000000000 : TYPE\n"
       "%n = init.sub %z, %dt : TYPE\n%m = init.expm1 %n : TYPE\n%p = init.sub %z, %m : TYPE\n"
       "%l = init.log %p : TYPE\n%0 = init.add %dt, %l : TYPE\n",
       [=](uint64_t i) {
         float u = rng::uniformAt(key("dt_proj.bias"), i, 0.0, 1.0);
         float e = rng::expF(u * float(span) + float(low));
         float dt = e < 1.0e-4f ? 1.0e-4f : e;
         return dt + rng::logF(-0.0f - rng::expm1F(-0.0f - dt));
       }});

  expectRecipesMatch(recipes, n);
  // The sweeps reach the branches named above.
  EXPECT_EQ(rng::expm1F(-100.0f), -1.0f);
  EXPECT_TRUE(std::isinf(rng::expm1F(float(-100.0 + 0.375 * (n - 1)))));
  EXPECT_TRUE(std::isnan(rng::log1pF(-1.5f)));
  EXPECT_TRUE(std::isinf(rng::log1pF(float(-1.5 + 0x1p-7 * 64))));
}

TEST_F(KernelReferenceTest, PowMatchesTheReference) {
  // init.pow as captures write it: RoPE's 1 / 10000^(2i / d) (a fill base, an iota exponent),
  // random bases to random exponents, negative bases to integer exponents (both parities) and
  // to a fraction (NaN, stored as rule 9's), in f32, bf16 and f64: every element has the
  // reference's bits on slices and splits, and every vector width gives the same bytes.
  const int64_t n = 517;
  auto key = [](const std::string &name, uint64_t stream) {
    return rng::deriveKey(kSeed, name, stream);
  };
  std::vector<Recipe> recipes;
  recipes.push_back({"rope.inv_freq", "f32",
                     "%i = init.iota dim 0 start 0.0 step 2.0 : TYPE\n"
                     "%d = init.fill 128.0 : TYPE\n%t = init.div %i, %d : TYPE\n"
                     "%b = init.fill 10000.0 : TYPE\n%p = init.pow %b, %t : TYPE\n"
                     "%one = init.fill 1.0 : TYPE\n%0 = init.div %one, %p : TYPE\n",
                     [](uint64_t i) {
                       return 1.0f / rng::powF(10000.0f, float(2.0 * double(i)) / 128.0f);
                     }});
  for (std::string dtype : {"f32", "bf16", "f64"}) {
    std::string name = "random_pow_" + dtype;
    recipes.push_back({name, dtype,
                       "%x = init.uniform 0.0, 10.0 stream 0 : TYPE\n"
                       "%y = init.uniform -3.0, 3.0 stream 1 : TYPE\n"
                       "%0 = init.pow %x, %y : TYPE\n",
                       [=](uint64_t i) {
                         return rng::powF(held(rng::uniformAt(key(name, 0), i, 0.0, 10.0), dtype),
                                          held(rng::uniformAt(key(name, 1), i, -3.0, 3.0), dtype));
                       }});
  }
  recipes.push_back({"negative_integer_pow", "f32",
                     "%x = init.fill -1.5 : TYPE\n"
                     "%y = init.iota dim 0 start -200.0 step 1.0 : TYPE\n"
                     "%0 = init.pow %x, %y : TYPE\n",
                     [](uint64_t i) { return rng::powF(-1.5f, float(-200.0 + double(i))); }});
  recipes.push_back({"negative_fraction_pow", "f32",
                     "%x = init.uniform -2.0, 2.0 stream 0 : TYPE\n"
                     "%y = init.fill 0.75 : TYPE\n%0 = init.pow %x, %y : TYPE\n",
                     [=](uint64_t i) {
                       return rng::powF(rng::uniformAt(key("negative_fraction_pow", 0), i, -2.0,
                                                       2.0),
                                        0.75f);
                     }});
  expectRecipesMatch(recipes, n);
  // The recipes reach the cases named above: odd and even powers, overflow, NaN.
  EXPECT_LT(rng::powF(-1.5f, -199.0f), 0.0f);
  EXPECT_GT(rng::powF(-1.5f, -200.0f), 0.0f);
  EXPECT_EQ(rng::powF(-1.5f, 300.0f), INFINITY);
  EXPECT_TRUE(std::isnan(rng::powF(-1.0f, 0.75f)));
}

TEST_F(KernelReferenceTest, LinspaceMatchesTheReference) {
  // init.linspace (ir-spec/dialect.md) in f32 (one rounding per half's multiply-add, which the
  // portable kernels make without an FMA instruction) and bf16 (every operation rounded), along
  // the last dim of a matrix and alone, on every vector width.
  struct Line {
    double start, end;
    int64_t n;
  };
  const std::vector<Line> lines = {{-3.7, 11.3, 30}, {0.001, 0.1, 12}, {2.5, -1.0e4, 257},
                                   {-1.0, 1.0, 1000}, {1.0e-3, 7.0, 65}, {5.0, 5.0, 9}};
  auto reference = [](const Line &l, const std::string &dtype, int64_t k) {
    auto r = [&](float v) { return held(v, dtype); };
    float s = r(float(l.start)), e = r(float(l.end));
    float step = r(r(e - s) / r(float(l.n - 1)));
    if (dtype == "f32")
      return k < l.n / 2 ? std::fma(step, float(k), s) : std::fma(-step, float(l.n - 1 - k), e);
    return k < l.n / 2 ? r(s + r(step * r(float(k)))) : r(e - r(step * r(float(l.n - 1 - k))));
  };
  std::string text = "init.seed 1\n";
  std::vector<std::pair<Line, std::string>> params;
  for (const Line &l : lines)
    for (std::string dtype : {"f32", "bf16"}) {
      std::string type = "tensor<3x" + std::to_string(l.n) + "x" + dtype + ">";
      text += "init.param @p" + std::to_string(params.size()) + " : " + type +
              " {\n  %0 = init.linspace dim 1 start " + exactDecimal(l.start) + " end " +
              exactDecimal(l.end) + " : " + type + "\n  init.yield %0 : " + type + "\n}\n";
      params.push_back({l, dtype});
    }
  std::vector<uint8_t> first;
  for (const std::string &spec : {"x86-64", "x86-64-v3:2", "native:3x16"}) {
    initrt::Program program;
    void *handle = compile(text, spec, program);
    ASSERT_NE(handle, nullptr);
    ASSERT_EQ(program.params.size(), params.size());
    std::vector<uint8_t> all;
    for (size_t p = 0; p < params.size(); ++p) {
      const auto &[line, dtype] = params[p];
      auto kernel = reinterpret_cast<initrt::KernelFn>(
          dlsym(handle, program.params[p].kernel.c_str()));
      ASSERT_NE(kernel, nullptr);
      size_t width = dtype == "f32" ? 4 : 2;
      const std::vector<int64_t> shape = {3, line.n};
      for (const Box &box : {Box{{0, 0}, shape}, Box{{1, 1}, {2, line.n - 2}}}) {
        std::vector<uint8_t> bytes = runSplits(
            kernel, program.params[p], shape, box, width,
            [&](int64_t local) {
              int64_t k = local % box.shape[1] + box.offset[1];
              return storedBytes(reference(line, dtype, k), dtype);
            },
            spec + ": linspace(" + exactDecimal(line.start) + ", " + exactDecimal(line.end) +
                ", " + std::to_string(line.n) + ") " + dtype);
        all.insert(all.end(), bytes.begin(), bytes.end());
      }
    }
    if (first.empty())
      first = all;
    else
      EXPECT_TRUE(first == all) << "x86-64 and " << spec << " kernels differ";
  }
}

TEST_F(KernelReferenceTest, FloatToI64IsDefinedOutsideTheRange) {
  // init.cast and init.iota to i64: toward zero, and INT64_MIN for NaN, infinities and values
  // outside [-2^63, 2^63), on every vector width (LLVM's fptosi alone leaves those undefined).
  const int64_t n = 64;
  std::string type = "tensor<" + std::to_string(n) + "xf32>";
  std::string text = "init.seed 1\n"
                     "init.param @cast : tensor<64xi64> {\n"
                     "  %a = init.iota dim 0 start -1.0e20 step 3.3e18 : " + type + "\n"
                     "  %z = init.fill 0.0 : " + type + "\n"
                     "  %m = init.index_mask dim 0 index 7 : tensor<64xi1>\n"
                     "  %q = init.div %a, %z : " + type + "\n"
                     "  %s = init.select %m, %q, %a : tensor<64xi1>, " + type + "\n"
                     "  %0 = init.cast %s : " + type + " to tensor<64xi64>\n"
                     "  init.yield %0 : tensor<64xi64>\n}\n"
                     "init.param @iota : tensor<64xi64> {\n"
                     "  %0 = init.iota dim 0 start -3.7 step 1.3e18 : tensor<64xi64>\n"
                     "  init.yield %0 : tensor<64xi64>\n}\n"
                     // A constant out of range: LLVM would fold a bare fptosi of it to poison.
                     "init.param @constant : tensor<64xi64> {\n"
                     "  %c = init.fill 1.0e30 : " + type + "\n"
                     "  %0 = init.cast %c : " + type + " to tensor<64xi64>\n"
                     "  init.yield %0 : tensor<64xi64>\n}\n";
  auto convert = [](double x) {
    return x >= -0x1p63 && x < 0x1p63 ? int64_t(x) : std::numeric_limits<int64_t>::min();
  };
  std::vector<int64_t> cast(n), iota(n);
  for (int64_t k = 0; k < n; ++k) {
    float a = float(-1.0e20 + 3.3e18 * double(k));
    cast[size_t(k)] = convert(k == 7 ? double(a / 0.0f) : double(a));
    iota[size_t(k)] = convert(-3.7 + 1.3e18 * double(k));
  }
  int edges = 0;
  for (int64_t k = 0; k < n; ++k)
    edges += cast[size_t(k)] == std::numeric_limits<int64_t>::min();
  ASSERT_GT(edges, 10); // the test covers both sides of the range and infinity
  std::vector<std::string> specs = {"x86-64", "x86-64-v3"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    specs.push_back("x86-64-v4:3x16");
  for (const std::string &spec : specs) {
    initrt::Program program;
    void *handle = compile(text, spec, program);
    ASSERT_NE(handle, nullptr);
    ASSERT_EQ(program.params.size(), 3u);
    const std::vector<int64_t> constant(n, std::numeric_limits<int64_t>::min());
    const std::vector<int64_t> *want[] = {&cast, &iota, &constant};
    for (size_t p = 0; p < 3; ++p) {
      auto kernel = reinterpret_cast<initrt::KernelFn>(
          dlsym(handle, program.params[p].kernel.c_str()));
      ASSERT_NE(kernel, nullptr);
      std::vector<int64_t> out(n, 0);
      Box whole{{0}, {n}};
      callKernel(kernel, program.params[p], out.data(), {n}, whole, 0, n);
      EXPECT_EQ(out, *want[p]) << spec << ": " << program.params[p].name;
    }
  }
}

TEST_F(KernelReferenceTest, NaNResultsAreTheOneNaNOnEveryVariant) {
  // Rule 9 of ir-spec/rng.md: a stored NaN is 0x7fc00000 (f32), 0x7ff8000000000000 (f64),
  // 0x7fc0 (bf16) or 0x7e00 (f16) whatever NaN the CPU made, so every variant stores the same
  // bytes. x86's invalid operations give 0xffc00000, and an operation on two NaNs keeps the
  // one its instruction's operand order picks: add(log(x), sqrt(x)) differed between x86-64
  // and x86-64-v3 before the kernels stored one NaN. Each recipe makes NaNs at run time (no
  // fill folds them away); `where` says which elements of a normal x are NaN.
  const int64_t n = 1001; // vector loops, their epilogue and, split, single elements
  struct Producer {
    const char *name, *body;
    std::function<bool(float)> where;
  };
  auto negative = [](float x) { return x < 0; };
  auto always = [](float) { return true; };
  const std::vector<Producer> producers = {
      {"log_plus_sqrt", "%l = init.log %x : T\n  %s = init.sqrt %x : T\n  %r = init.add %l, %s : T",
       negative},
      {"log", "%r = init.log %x : T", negative},
      {"sqrt", "%r = init.sqrt %x : T", negative},
      {"zero_times_inf", "%z = init.sub %x, %x : T\n  %i = init.div %x, %z : T\n"
                         "  %r = init.mul %z, %i : T", always},
      {"inf_minus_inf", "%z = init.sub %x, %x : T\n  %i = init.div %x, %z : T\n"
                        "  %r = init.sub %i, %i : T", always},
      {"zero_by_zero", "%z = init.sub %x, %x : T\n  %r = init.div %z, %z : T", always},
      {"erfinv_outside", "%t = init.fill 3.0 : T\n  %y = init.add %x, %t : T\n"
                         "  %r = init.erfinv %y : T", [](float x) { return x + 3.0f > 1.0f; }},
      // A NaN operand of either sign: the negative NaN of log, the one of a NaN fill.
      {"nan_operand", "%l = init.log %x : T\n  %f = init.fill 0xFFF8000000000123 : T\n"
                      "  %m = init.mul %l, %f : T\n  %r = init.exp %m : T", always},
  };
  const char *dtypes[] = {"f32", "f64", "bf16", "f16"};
  std::string text = "init.seed " + std::to_string(kSeed) + "\n";
  std::vector<std::pair<const Producer *, std::string>> params; // in the module's order
  for (const char *dtype : dtypes)
    for (const Producer &p : producers) {
      std::string type = "tensor<" + std::to_string(n) + "x" + dtype + ">";
      std::string body = p.body;
      for (size_t at; (at = body.find(": T")) != std::string::npos;)
        body.replace(at, 3, ": " + type);
      std::string name = std::string(p.name) + "_" + dtype;
      text += "init.param @" + name + " : " + type + " {\n  %x = init.normal mean 0.0 std 1.0 "
              "stream 0 : " + type + "\n  " + body + "\n  init.yield %r : " + type + "\n}\n";
      params.push_back({&p, dtype});
    }

  std::vector<std::string> specs = {"x86-64", "x86-64-v3"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    specs.push_back("x86-64-v4");
    if (__builtin_cpu_supports("avx512bf16"))
      specs.push_back("x86-64-v4+avx512bf16");
  }
  std::vector<uint8_t> first;
  for (const std::string &spec : specs) {
    initrt::Program program;
    void *handle = compile(text, spec, program);
    ASSERT_NE(handle, nullptr) << spec;
    ASSERT_EQ(program.params.size(), params.size());
    std::vector<uint8_t> all;
    for (size_t p = 0; p < params.size(); ++p) {
      const initrt::Param &param = program.params[p];
      const Producer &producer = *params[p].first;
      const std::string &dtype = params[p].second;
      auto kernel = reinterpret_cast<initrt::KernelFn>(dlsym(handle, param.kernel.c_str()));
      ASSERT_NE(kernel, nullptr) << param.kernel;
      const size_t width = dtype == "f64" ? 8 : dtype == "f32" ? 4 : 2;
      const std::vector<int64_t> shape = {n};
      rng::Key key = rng::deriveKey(kSeed, param.name, 0);
      for (const std::vector<int64_t> &cuts : splitsOf(n)) {
        std::vector<uint8_t> out(size_t(n) * width, 0xa5);
        for (size_t s = 0; s + 1 < cuts.size(); ++s)
          callKernel(kernel, param, out.data(), shape, Box{{0}, {n}}, cuts[s], cuts[s + 1]);
        int nans = 0, failures = 0;
        for (int64_t i = 0; i < n && failures < 5; ++i) {
          const uint8_t *element = out.data() + size_t(i) * width;
          uint64_t bits = 0;
          std::memcpy(&bits, element, width);
          bool isNaN, canonical;
          if (width == 8) {
            isNaN = (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
            canonical = bits == rng::kCanonicalNaNF64;
          } else if (width == 4) {
            isNaN = (bits & 0x7fffffffu) > 0x7f800000u;
            canonical = bits == rng::kCanonicalNaNF32;
          } else if (dtype == "bf16") {
            isNaN = (bits & 0x7fffu) > 0x7f80u;
            canonical = bits == rng::kCanonicalNaNBF16;
          } else {
            isNaN = (bits & 0x7fffu) > 0x7c00u;
            canonical = bits == rng::kCanonicalNaNF16;
          }
          nans += isNaN;
          bool wanted = producer.where(rng::normalAt(key, uint64_t(i), 0.0, 1.0));
          if (isNaN != wanted || (isNaN && !canonical)) {
            ++failures;
            ADD_FAILURE() << spec << ": " << param.name << " element " << i << " is 0x"
                          << std::hex << bits << std::dec << (wanted ? ", not the" : ", a")
                          << " canonical NaN (" << cuts.size() - 1 << " pieces)";
          }
        }
        EXPECT_GT(nans, 0) << spec << ": " << param.name;
        all.insert(all.end(), out.begin(), out.end());
      }
    }
    if (first.empty())
      first = all;
    else
      EXPECT_TRUE(first == all) << specs.front() << " and " << spec << " kernels differ";
  }
}

} // namespace
