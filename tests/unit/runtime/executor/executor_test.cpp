// The executor and the C API on the test kernels (testkernels.c): every rank of several meshes
// gets exactly its box of the tensor the whole-tensor kernel call produces.
#include "initrt/base/cpu.h"
#include "executor/executor.h"
#include "initrt/initrt.h"
#include "initrt/base/program_io.h"
#include "testprogram.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <sys/mman.h>
#include <thread>

using namespace initrt;

namespace {

class ExecutorTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-executor-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + root).c_str()); }

  std::string makeProgramDir(const std::string &name, const std::string &meshText) {
    Mesh mesh;
    EXPECT_TRUE(testprog::parseMesh(meshText, mesh));
    std::string dir = root + "/" + name;
    std::string error;
    EXPECT_TRUE(testprog::writeProgramDir(dir, mesh, INITRT_TESTKERNELS_PATH, error)) << error;
    return dir;
  }

  std::string root;
};

// The whole tensor, from one kernel call over the global shape.
std::vector<char> wholeTensor(const Param &param, KernelFn kernel) {
  int64_t bytes = param.numElements() * dtypeBytes(param.dtype);
  std::vector<char> data(size_t(bytes) + 1);
  std::vector<int64_t> zeros(param.shape.size() + 1, 0);
  std::vector<int64_t> shape = param.shape;
  shape.push_back(0);
  std::vector<uint64_t> args = param.kernelArgs;
  args.push_back(0);
  kernel(data.data(), shape.data(), zeros.data(), shape.data(), 0, param.numElements(),
         args.data());
  data.resize(size_t(bytes));
  return data;
}

// The box `slice` cut out of a row-major global tensor.
std::vector<char> cutBox(const std::vector<char> &global, const Param &param, const Slice &slice) {
  int64_t elementBytes = dtypeBytes(param.dtype);
  int64_t count = slice.numElements();
  std::vector<char> box(size_t(count * elementBytes));
  size_t rank = param.shape.size();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, global_index = 0;
    std::vector<int64_t> coords(rank);
    for (size_t d = rank; d-- > 0;) {
      coords[d] = rest % slice.shape[d] + slice.offset[d];
      rest /= slice.shape[d];
    }
    for (size_t d = 0; d < rank; ++d)
      global_index = global_index * param.shape[d] + coords[d];
    std::memcpy(&box[size_t(i * elementBytes)], &global[size_t(global_index * elementBytes)],
                size_t(elementBytes));
  }
  return box;
}

} // namespace

TEST_F(ExecutorTest, EveryRankOfEveryMeshGetsItsBox) {
  for (const char *meshText : {"dp=1", "dp=2", "dp=3", "dp=4", "dp=2,tp=2", "dp=2,tp=3", "a=3,b=2"}) {
    SCOPED_TRACE(meshText);
    std::string dir = makeProgramDir(std::string("p-") + meshText, meshText);
    Program program;
    std::string error;
    ASSERT_TRUE(readProgram(dir, program, error)) << error;
    std::unique_ptr<KernelLibrary> kernels = KernelLibrary::load(dir, program, error);
    ASSERT_TRUE(kernels) << error;
    std::vector<std::vector<char>> globals;
    for (size_t p = 0; p < program.params.size(); ++p)
      globals.push_back(wholeTensor(program.params[p], kernels->kernel(p)));
    std::vector<int64_t> ownedBytes(program.params.size(), 0);
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank) {
      RankShards shards;
      RunOptions options;
      options.threads = 3;
      ASSERT_TRUE(computeRank(program, *kernels, rank, /*persistentOnly=*/false, options, shards,
                              error))
          << error;
      ASSERT_EQ(shards.tensors.size(), program.params.size());
      for (size_t t = 0; t < shards.tensors.size(); ++t) {
        const ShardTensor &tensor = shards.tensors[t];
        const Param &param = program.params[shards.paramIndices[t]];
        SCOPED_TRACE(param.name + " rank " + std::to_string(rank));
        EXPECT_TRUE(tensor.slice == sliceForRank(program.mesh, param, rank));
        std::vector<char> expected = cutBox(globals[shards.paramIndices[t]], param, tensor.slice);
        ASSERT_EQ(tensor.bytes, expected.size());
        EXPECT_TRUE(expected.empty() || std::memcmp(tensor.data, expected.data(), expected.size()) == 0);
        EXPECT_EQ(tensor.checksum, checksumHex(expected.data(), expected.size()));
        EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data) % Arena::kAlignment, 0u);
        if (tensor.bytes >= Arena::kHugePage)
          EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data) % Arena::kHugePage, 0u);
        if (isSliceOwner(program.mesh, param, rank))
          ownedBytes[shards.paramIndices[t]] += int64_t(tensor.bytes);
      }
    }
    for (size_t p = 0; p < program.params.size(); ++p)
      EXPECT_EQ(ownedBytes[p], int64_t(globals[p].size())) << program.params[p].name;
  }
}

TEST_F(ExecutorTest, KernelValuesAreTheDocumentedFunctions) {
  std::string dir = makeProgramDir("values", "dp=2");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  auto kernels = KernelLibrary::load(dir, program, error);
  ASSERT_TRUE(kernels) << error;
  RankShards shards;
  ASSERT_TRUE(computeRank(program, *kernels, 1, false, RunOptions(), shards, error)) << error;
  for (size_t t = 0; t < shards.tensors.size(); ++t) {
    const ShardTensor &tensor = shards.tensors[t];
    if (tensor.param->name == "counts") {
      // counts [5, 3, 2], dim 1 split 2 + 1 over dp: rank 1 holds [:, 2:3, :], whose first
      // elements are global indices 4 and 5; element = 3 g + 7.
      const int64_t *values = static_cast<const int64_t *>(tensor.data);
      EXPECT_EQ(tensor.slice.offset, (std::vector<int64_t>{0, 2, 0}));
      EXPECT_EQ(values[0], 3 * 4 + 7);
      EXPECT_EQ(values[1], 3 * 5 + 7);
      EXPECT_EQ(values[2], 3 * 10 + 7);
    }
    if (tensor.param->name == "scale")
      EXPECT_EQ(*static_cast<const double *>(tensor.data), 0.25);
  }
}

TEST_F(ExecutorTest, ThreadCountDoesNotChangeBits) {
  std::string dir = makeProgramDir("threads", "dp=3");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  auto kernels = KernelLibrary::load(dir, program, error);
  ASSERT_TRUE(kernels) << error;
  for (int64_t rank = 0; rank < 3; ++rank) {
    RankShards one, four;
    RunOptions options;
    options.threads = 1;
    ASSERT_TRUE(computeRank(program, *kernels, rank, true, options, one, error)) << error;
    options.threads = 4;
    uint64_t lastDone = 0, calls = 0;
    options.progress = [&](uint64_t done, uint64_t total) {
      EXPECT_GE(done, lastDone);
      EXPECT_LE(done, total);
      lastDone = done;
      ++calls;
    };
    ASSERT_TRUE(computeRank(program, *kernels, rank, true, options, four, error)) << error;
    EXPECT_GE(calls, 1u);
    EXPECT_EQ(lastDone, four.bytes);
    ASSERT_EQ(one.tensors.size(), four.tensors.size());
    for (size_t t = 0; t < one.tensors.size(); ++t) {
      ASSERT_EQ(one.tensors[t].bytes, four.tensors[t].bytes);
      EXPECT_EQ(std::memcmp(one.tensors[t].data, four.tensors[t].data, one.tensors[t].bytes), 0);
      EXPECT_EQ(one.tensors[t].checksum, four.tensors[t].checksum);
    }
  }
}

TEST_F(ExecutorTest, PersistentOnlySkipsNonPersistentBuffers) {
  std::string dir = makeProgramDir("persistent", "dp=1");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  auto kernels = KernelLibrary::load(dir, program, error);
  ASSERT_TRUE(kernels) << error;
  RankShards shards;
  ASSERT_TRUE(computeRank(program, *kernels, 0, true, RunOptions(), shards, error)) << error;
  EXPECT_EQ(shards.tensors.size(), program.params.size() - 1);
  for (const ShardTensor &tensor : shards.tensors)
    EXPECT_NE(tensor.param->name, "rope.inv_freq");
  EXPECT_FALSE(computeRank(program, *kernels, 1, true, RunOptions(), shards, error));
  EXPECT_NE(error.find("rank 1 is outside the mesh of 1 devices"), std::string::npos) << error;
}

TEST_F(ExecutorTest, RefusesKernelsFromAnotherCompile) {
  std::string dir = makeProgramDir("corrupt", "dp=2");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  std::ofstream(dir + "/kernels.so", std::ios::app) << "x";
  EXPECT_EQ(KernelLibrary::load(dir, program, error), nullptr);
  EXPECT_NE(error.find("is corrupt or from another compile: recompile"), std::string::npos)
      << error;
  EXPECT_NE(error.find("but program.json expects " + program.kernelsChecksum), std::string::npos)
      << error;
}

TEST_F(ExecutorTest, RefusesAMissingKernelSymbol) {
  std::string dir = makeProgramDir("symbol", "dp=1");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  program.params[2].kernel = "tk_no_such_kernel";
  EXPECT_EQ(KernelLibrary::load(dir, program, error), nullptr);
  EXPECT_NE(error.find("kernel tk_no_such_kernel of layer.b is missing"), std::string::npos)
      << error;
}

TEST(KernelVariantChoice, NeedsEveryExtensionTheVariantRecords) {
  std::string error;
  EXPECT_TRUE(checkKernelVariant({"x86-64", "", {}}, error)) << error;

  // An extension the runtime cannot detect is never assumed present.
  EXPECT_FALSE(cpuHasExtension("avx-from-the-future"));
  EXPECT_FALSE(checkKernelVariant({"future-cpu", "", {"avx2", "avx-from-the-future"}}, error));
  EXPECT_NE(error.find("use avx-from-the-future, which this CPU lacks"), std::string::npos)
      << error;
  EXPECT_NE(error.find("recompile with --target-cpu=x86-64"), std::string::npos) << error;

  // What this CPU has, a variant may use.
  std::vector<std::string> present;
  for (std::string_view name : detectableCpuExtensions())
    if (cpuHasExtension(name))
      present.emplace_back(name);
  EXPECT_TRUE(checkKernelVariant({"this-cpu", "", present}, error)) << error;
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(cpuHasExtension("avx2"), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(cpuHasExtension("avx512f"), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(cpuHasExtension("sse4.2"), __builtin_cpu_supports("sse4.2") != 0);
#endif
  for (uint16_t machine : {uint16_t(EM_X86_64), uint16_t(EM_AARCH64)}) {
    const std::vector<std::string_view> &detectable = detectableCpuExtensions(machine);
    EXPECT_FALSE(detectable.empty()) << machine;
    for (std::string_view name : undetectableCpuExtensions(machine))
      EXPECT_EQ(std::count(detectable.begin(), detectable.end(), name), 0) << name;
  }
  // The tables are per architecture: this machine's are the default, another's never match here.
  EXPECT_EQ(&detectableCpuExtensions(), &detectableCpuExtensions(hostElfMachine()));
  EXPECT_TRUE(detectableCpuExtensions(EM_RISCV).empty());
  const uint16_t other = hostElfMachine() == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
  for (std::string_view name : detectableCpuExtensions(other))
    if (std::count(detectableCpuExtensions().begin(), detectableCpuExtensions().end(), name) == 0)
      EXPECT_FALSE(cpuHasExtension(name)) << name;
}

TEST(KernelVariantChoice, TheFirstVariantThisCpuCanRunIsChosen) {
  Program program;
  program.kernelVariants = {{"future-cpu", "", {"avx-from-the-future"}},
                            {"x86-64", ".x86_64", {}}};
  std::string error;
  EXPECT_EQ(selectKernelVariant(program, "", error), 1) << error;
  EXPECT_EQ(selectKernelVariant(program, "x86-64", error), 1) << error;

  // Asked for by name, a variant this CPU cannot run is an error, not a crash later.
  EXPECT_EQ(selectKernelVariant(program, "future-cpu", error), -1);
  EXPECT_NE(error.find("the kernels for future-cpu use avx-from-the-future"), std::string::npos)
      << error;

  program.kernelVariants.pop_back();
  EXPECT_EQ(selectKernelVariant(program, "", error), -1);
  EXPECT_NE(error.find("which this CPU lacks"), std::string::npos) << error;
}

TEST(KernelVariantChoice, NoVariantThisCpuRunsNamesTheCpuAndEachVariant) {
  Program program;
  program.kernelVariants = {{"future-cpu", "", {"avx-from-the-future"}},
                            {"other-cpu", ".other", {"avx2", "avx-of-another-vendor"}}};
  std::string error;
  EXPECT_EQ(selectKernelVariant(program, "", error), -1);
  EXPECT_NE(error.find("this CPU (" + cpuDescription() + ") can run none of the program's kernel "
                       "variants (future-cpu, other-cpu): future-cpu uses avx-from-the-future; "
                       "other-cpu uses avx-of-another-vendor"),
            std::string::npos)
      << error;
  EXPECT_FALSE(cpuDescription().empty());
}

// The first bytes of a 64-bit little-endian ELF file for `machine`.
static std::vector<unsigned char> elfHeader(uint16_t machine, unsigned char elfClass = ELFCLASS64) {
  std::vector<unsigned char> header(64, 0);
  std::memcpy(header.data(), ELFMAG, SELFMAG);
  header[EI_CLASS] = elfClass;
  header[EI_DATA] = ELFDATA2LSB;
  header[18] = uint8_t(machine & 0xff);
  header[19] = uint8_t(machine >> 8);
  return header;
}

TEST(KernelArchitecture, CodeForAnotherArchitectureIsNamed) {
  auto foreign = [](const std::vector<unsigned char> &header, uint16_t host) {
    return foreignElfArchitecture(header.data(), header.size(), host);
  };
  // An AArch64 program on x86-64 and the reverse.
  EXPECT_EQ(foreign(elfHeader(EM_AARCH64), EM_X86_64), "AArch64");
  EXPECT_EQ(foreign(elfHeader(EM_X86_64), EM_AARCH64), "x86-64");
  EXPECT_EQ(foreign(elfHeader(EM_X86_64), EM_X86_64), "");
  EXPECT_EQ(foreign(elfHeader(EM_AARCH64), EM_AARCH64), "");
  EXPECT_EQ(foreign(elfHeader(EM_386, ELFCLASS32), EM_X86_64), "32-bit x86");
  EXPECT_EQ(foreign(elfHeader(EM_X86_64, ELFCLASS32), EM_X86_64), "32-bit x86-64");
  EXPECT_EQ(foreign(elfHeader(4242), EM_X86_64), "ELF machine 4242");
  // Not ELF, or cut short: left to the checksum, which calls it damaged.
  std::vector<unsigned char> text(64, 'x');
  EXPECT_EQ(foreign(text, EM_X86_64), "");
  std::vector<unsigned char> cut = elfHeader(EM_AARCH64);
  EXPECT_EQ(foreignElfArchitecture(cut.data(), 20, EM_X86_64), "");
  // This runtime's own kernels are its machine's.
  EXPECT_EQ(foreign(elfHeader(hostElfMachine()), hostElfMachine()), "");
}

TEST_F(ExecutorTest, CApiFillMatchesTheExecutor) {
  std::string dir = makeProgramDir("capi", "dp=2,tp=2");
  Program program;
  std::string error;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  auto kernels = KernelLibrary::load(dir, program, error);
  ASSERT_TRUE(kernels) << error;

  char err[512] = "";
  initrt_program *prog = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &prog, err, sizeof err), INITRT_OK) << err;
  EXPECT_EQ(initrt_world_size(prog), 4);
  ASSERT_EQ(initrt_param_count(prog), int64_t(program.params.size()));
  for (int64_t rank = 0; rank < 4; ++rank) {
    RankShards shards;
    ASSERT_TRUE(computeRank(program, *kernels, rank, false, RunOptions(), shards, error)) << error;
    std::vector<std::vector<char>> all(program.params.size());
    std::vector<void *> pointers;
    for (size_t p = 0; p < program.params.size(); ++p) {
      struct initrt_param_info info;
      ASSERT_EQ(initrt_param_info(prog, rank, int64_t(p), &info), INITRT_OK);
      const ShardTensor &tensor = shards.tensors[p];
      EXPECT_STREQ(info.name, program.params[p].name.c_str());
      EXPECT_STREQ(info.dtype, dtypeName(program.params[p].dtype));
      ASSERT_EQ(info.ndim, int32_t(program.params[p].shape.size()));
      for (int d = 0; d < info.ndim; ++d) {
        EXPECT_EQ(info.global_shape[d], program.params[p].shape[size_t(d)]);
        EXPECT_EQ(info.slice_offset[d], tensor.slice.offset[size_t(d)]);
        EXPECT_EQ(info.slice_shape[d], tensor.slice.shape[size_t(d)]);
      }
      ASSERT_EQ(info.bytes, tensor.bytes);
      std::vector<char> buffer(info.bytes + 1, 0x55);
      ASSERT_EQ(initrt_fill(prog, rank, info.name, buffer.data(), info.bytes, 2, err, sizeof err),
                INITRT_OK)
          << err;
      EXPECT_EQ(std::memcmp(buffer.data(), tensor.data, tensor.bytes), 0) << info.name;
      EXPECT_EQ(buffer[info.bytes], 0x55) << "wrote past the shard of " << info.name;
      all[p].assign(info.bytes + 1, 0);
      pointers.push_back(all[p].data());
    }
    pointers[1] = nullptr; // skipped
    ASSERT_EQ(initrt_fill_all(prog, rank, pointers.data(), 3, err, sizeof err), INITRT_OK) << err;
    for (size_t p = 0; p < program.params.size(); ++p)
      if (p != 1)
        EXPECT_EQ(std::memcmp(all[p].data(), shards.tensors[p].data, shards.tensors[p].bytes), 0);
  }

  // An alias fills the tensor it names.
  struct initrt_param_info info;
  ASSERT_EQ(initrt_param_info(prog, 1, 0, &info), INITRT_OK);
  std::vector<char> a(info.bytes), b(info.bytes);
  ASSERT_EQ(initrt_fill(prog, 1, "lm_head.weight", a.data(), a.size(), 1, err, sizeof err), INITRT_OK);
  ASSERT_EQ(initrt_fill(prog, 1, "embed.weight", b.data(), b.size(), 1, err, sizeof err), INITRT_OK);
  EXPECT_EQ(a, b);

  // Errors are statuses with messages.
  EXPECT_EQ(initrt_fill(prog, 1, "embed.weight", a.data(), a.size() - 1, 1, err, sizeof err),
            INITRT_SIZE_MISMATCH);
  EXPECT_NE(std::string(err).find("embed.weight on rank 1 needs"), std::string::npos) << err;
  EXPECT_EQ(initrt_fill(prog, 1, "nope", a.data(), a.size(), 1, err, sizeof err), INITRT_NOT_FOUND);
  EXPECT_NE(std::string(err).find("no parameter named nope"), std::string::npos) << err;
  EXPECT_EQ(initrt_fill(prog, 4, "embed.weight", a.data(), a.size(), 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("rank 4 is outside the mesh of 4 devices"), std::string::npos);
  EXPECT_EQ(initrt_param_info(prog, 0, 99, &info), INITRT_INVALID_ARGUMENT);
  ASSERT_STREQ(info.dtype, "F32");
  std::vector<float> roomy(info.bytes / 4 + 1);
  void *misaligned = reinterpret_cast<char *>(roomy.data()) + 2;
  EXPECT_EQ(initrt_fill(prog, 1, "embed.weight", misaligned, a.size(), 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("not a multiple of 4, the size of its F32 elements"),
            std::string::npos)
      << err;
  std::vector<void *> someMisaligned(size_t(initrt_param_count(prog)), nullptr);
  someMisaligned[0] = misaligned;
  EXPECT_EQ(initrt_fill_all(prog, 1, someMisaligned.data(), 1, err, sizeof err),
            INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("bufs[0]: the buffer for"), std::string::npos) << err;
  void *none[16] = {};
  EXPECT_EQ(initrt_fill_all(prog, -1, none, 1, err, sizeof err), INITRT_INVALID_ARGUMENT);
  char tiny[8];
  EXPECT_EQ(initrt_fill(prog, 1, "nope", a.data(), a.size(), 1, tiny, sizeof tiny), INITRT_NOT_FOUND);
  EXPECT_EQ(std::strlen(tiny), sizeof tiny - 1); // truncated, terminated
  initrt_program_close(prog);
  initrt_program_close(nullptr);

  initrt_program *missing = reinterpret_cast<initrt_program *>(1);
  EXPECT_EQ(initrt_program_open((root + "/nowhere").c_str(), &missing, err, sizeof err),
            INITRT_BAD_PROGRAM);
  EXPECT_EQ(missing, nullptr);
  EXPECT_NE(std::string(err).find("program.json"), std::string::npos) << err;
  EXPECT_EQ(initrt_program_open(nullptr, &missing, err, sizeof err), INITRT_INVALID_ARGUMENT);
  EXPECT_EQ(initrt_program_open("", &missing, err, sizeof err), INITRT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("prog_dir is empty"), std::string::npos) << err;
  EXPECT_STREQ(initrt_status_name(INITRT_SIZE_MISMATCH), "INITRT_SIZE_MISMATCH");
}

// A program directory replaced by another compile while a handle on the old one is open: opening
// it again runs the new kernels, and the old handle keeps its own. (Loading by path, the loader
// returned the library already loaded under that path: the old kernels, silently.)
void reopenReplacedProgram(const std::string &dir) {
  Mesh mesh;
  ASSERT_TRUE(testprog::parseMesh("dp=2", mesh));
  std::string error;
  ASSERT_TRUE(testprog::writeProgramDir(dir, mesh, INITRT_TESTKERNELS_PATH, error)) << error;
  char err[512] = "";
  initrt_program *first = nullptr, *second = nullptr;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &first, err, sizeof err), INITRT_OK) << err;
  struct initrt_param_info info;
  ASSERT_EQ(initrt_param_info(first, 1, 0, &info), INITRT_OK);
  std::vector<char> old(info.bytes), fresh(info.bytes), again(info.bytes);
  ASSERT_EQ(initrt_fill(first, 1, info.name, old.data(), old.size(), 1, err, sizeof err), INITRT_OK)
      << err;

  ASSERT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  ASSERT_TRUE(testprog::writeProgramDir(dir, mesh, INITRT_TESTKERNELS_ALT_PATH, error)) << error;
  ASSERT_EQ(initrt_program_open(dir.c_str(), &second, err, sizeof err), INITRT_OK) << err;
  ASSERT_EQ(initrt_fill(second, 1, info.name, fresh.data(), fresh.size(), 1, err, sizeof err),
            INITRT_OK)
      << err;

  // The new compile's values, straight from its library.
  void *alt = dlopen(INITRT_TESTKERNELS_ALT_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(alt, nullptr) << dlerror();
  Program program;
  ASSERT_TRUE(readProgram(dir, program, error)) << error;
  const Param &param = program.params[0];
  auto kernel = reinterpret_cast<KernelFn>(dlsym(alt, param.kernel.c_str()));
  ASSERT_NE(kernel, nullptr);
  std::vector<char> expected =
      cutBox(wholeTensor(param, kernel), param, sliceForRank(program.mesh, param, 1));
  dlclose(alt);
  EXPECT_EQ(fresh, expected) << "the reopened program ran the old kernels";
  EXPECT_NE(fresh, old);
  ASSERT_EQ(initrt_fill(first, 1, info.name, again.data(), again.size(), 1, err, sizeof err),
            INITRT_OK)
      << err;
  EXPECT_EQ(again, old) << "the old handle lost its kernels";
  initrt_program_close(first);
  initrt_program_close(second);
}

TEST_F(ExecutorTest, CApiReopensAReplacedProgram) { reopenReplacedProgram(root + "/prog"); }

TEST_F(ExecutorTest, CApiReopensAReplacedProgramWithoutProc) {
  KernelLibrary::forceCopy = true;
  reopenReplacedProgram(root + "/prog");
  KernelLibrary::forceCopy = false;
}

namespace {

// A kernel that writes each element's global index (1-D slices) and, for the slow variant,
// takes its time, so that the sink runs ahead of the workers and has to wait for them.
void writeIndices(void *out, const int64_t *, const int64_t *offset, const int64_t *, int64_t begin,
                  int64_t end, const uint64_t *) {
  auto *words = static_cast<uint32_t *>(out);
  for (int64_t i = begin; i < end; ++i)
    words[i] = uint32_t(offset[0] + i);
}
void writeIndicesSlowly(void *out, const int64_t *globalShape, const int64_t *offset,
                        const int64_t *localShape, int64_t begin, int64_t end,
                        const uint64_t *args) {
  std::this_thread::sleep_for(std::chrono::microseconds(200 + (begin / 1024) % 7 * 300));
  writeIndices(out, globalShape, offset, localShape, begin, end, args);
}

} // namespace

TEST(StreamShardJobs, HandsEveryPieceOverInOrderWhateverWaits) {
  // Jobs of several pieces, of one, and empty; for each thread count, a sink that keeps up
  // (it waits for batches of pieces) and one that sleeps (the workers wait for slots).
  const int64_t pieceElements = int64_t(kPieceBytes) / 4;
  const std::vector<int64_t> sizes = {pieceElements * 5 / 2, 100, 0, pieceElements * 7 + 64, 1};
  std::vector<Param> params(sizes.size());
  std::vector<ShardJob> jobs(sizes.size());
  for (size_t j = 0; j < sizes.size(); ++j) {
    params[j].shape = {sizes[j] + 3};
    jobs[j].param = &params[j];
    jobs[j].slice = Slice{{3}, {sizes[j]}};
    jobs[j].bytes = uint64_t(sizes[j]) * 4;
  }
  for (KernelFn kernel : {&writeIndices, &writeIndicesSlowly})
    for (int threads : {1, 2, 3, 5})
      for (bool slowSink : {false, true}) {
        SCOPED_TRACE(testing::Message() << threads << " threads, slow kernel "
                                        << (kernel == &writeIndicesSlowly) << ", slow sink "
                                        << slowSink);
        for (ShardJob &job : jobs)
          job.kernel = kernel;
        RunOptions options;
        options.threads = threads;
        // The sink's waits time out only after a minute, so a lost wake-up hangs the test.
        options.progressIntervalSeconds = 60;
        std::vector<uint64_t> received(jobs.size(), 0);
        std::vector<int> calls(jobs.size(), 0);
        size_t lastJob = 0;
        uint64_t wrong = 0;
        auto sink = [&](size_t job, uint64_t offset, const void *data, uint64_t bytes,
                        std::string &) {
          EXPECT_GE(job, lastJob); // jobs in order
          lastJob = job;
          EXPECT_EQ(offset, received[job]); // pieces in order, none skipped
          const auto *words = static_cast<const uint32_t *>(data);
          for (uint64_t i = 0; i < bytes / 4; ++i)
            wrong += words[i] != uint32_t(3 + offset / 4 + i);
          received[job] += bytes;
          ++calls[job];
          if (slowSink)
            std::this_thread::sleep_for(std::chrono::microseconds(500));
          return true;
        };
        std::string error;
        ASSERT_TRUE(streamShardJobs(jobs, options, sink, error)) << error;
        EXPECT_EQ(wrong, 0u);
        for (size_t j = 0; j < jobs.size(); ++j) {
          EXPECT_EQ(received[j], jobs[j].bytes) << "job " << j;
          EXPECT_GE(calls[j], 1) << "job " << j;
        }
      }
}

TEST(StreamShardJobs, SmallJobsShareSlotsAndArriveWhole) {
  // Thousands of small jobs of odd sizes, between large ones: several share each slot, and
  // every one arrives in order, whole, 64-byte aligned and with its own values.
  const int64_t pieceElements = int64_t(kPieceBytes) / 4;
  std::vector<int64_t> sizes;
  for (int64_t j = 0; j < 3000; ++j)
    sizes.push_back(j % 500 == 250 ? pieceElements * 3 / 2 : (j * 37) % 1500);
  std::vector<Param> params(sizes.size());
  std::vector<ShardJob> jobs(sizes.size());
  for (size_t j = 0; j < sizes.size(); ++j) {
    params[j].shape = {sizes[j] + int64_t(j)};
    jobs[j].param = &params[j];
    jobs[j].kernel = &writeIndices;
    jobs[j].slice = Slice{{int64_t(j)}, {sizes[j]}};
    jobs[j].bytes = uint64_t(sizes[j]) * 4;
  }
  for (int threads : {1, 3}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    RunOptions options;
    options.threads = threads;
    options.progressIntervalSeconds = 60;
    std::vector<uint64_t> received(jobs.size(), 0);
    size_t lastJob = 0;
    uint64_t wrong = 0, misaligned = 0;
    const char *firstData = nullptr;
    auto sink = [&](size_t job, uint64_t offset, const void *data, uint64_t bytes, std::string &) {
      EXPECT_GE(job, lastJob);
      lastJob = job;
      EXPECT_EQ(offset, received[job]);
      firstData = firstData ? firstData : static_cast<const char *>(data);
      misaligned += (static_cast<const char *>(data) - firstData) % 64 != 0;
      const auto *words = static_cast<const uint32_t *>(data);
      for (uint64_t i = 0; i < bytes / 4; ++i)
        wrong += words[i] != uint32_t(job + offset / 4 + i);
      received[job] += bytes;
      return true;
    };
    std::string error;
    ASSERT_TRUE(streamShardJobs(jobs, options, sink, error)) << error;
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(misaligned, 0u);
    for (size_t j = 0; j < jobs.size(); ++j)
      ASSERT_EQ(received[j], jobs[j].bytes) << "job " << j;
  }
}

namespace {

// A job of 9 pieces of writeIndices over the whole of `param`, which it sets up.
ShardJob ninePieceJob(Param &param) {
  const int64_t elements = int64_t(kPieceBytes) / 4 * 9;
  param.shape = {elements};
  ShardJob job;
  job.param = &param;
  job.kernel = &writeIndices;
  job.slice = Slice{{0}, {elements}};
  job.bytes = uint64_t(elements) * 4;
  return job;
}

} // namespace

TEST(StreamShardJobs, AFailingOrThrowingSinkStopsTheRun) {
  // A throw must reach the caller after the workers stop: unwinding past joinable threads
  // would end the process (std::terminate).
  Param param;
  ShardJob job = ninePieceJob(param);
  for (bool throws : {false, true})
    for (int threads : {1, 3}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, throws " << throws);
      RunOptions options;
      options.threads = threads;
      int calls = 0;
      auto sink = [&](size_t, uint64_t, const void *, uint64_t, std::string &why) {
        if (++calls < 3)
          return true;
        if (throws)
          throw std::bad_alloc();
        why = "disk full";
        return false;
      };
      std::string error;
      if (throws) {
        EXPECT_THROW(streamShardJobs({job}, options, sink, error), std::bad_alloc);
      } else {
        EXPECT_FALSE(streamShardJobs({job}, options, sink, error));
        EXPECT_EQ(error, "disk full");
      }
      EXPECT_EQ(calls, 3);
    }
}

TEST(RunShardJobs, PrefaultedFreshDestinationsGetTheirValuesAndNoPageAround) {
  // Two large destinations in one fresh mapping, neither page aligned, and a small one: with
  // prefault on, each gets its values, and the pages wholly outside them stay untouched (neither
  // faulted in nor written), whatever the thread count.
  const uint64_t page = 4096;
  const int64_t large = int64_t(kPrefaultMinBytes / 4) + 12345;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    const uint64_t mapped = 64 << 20;
    auto *base = static_cast<char *>(
        mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(base, MAP_FAILED);
    // Destination j starts 64 bytes into a page, with one untouched page before it.
    const std::vector<int64_t> sizes = {large, 1000, large * 2};
    std::vector<char *> starts;
    uint64_t at = page + 64;
    for (int64_t size : sizes) {
      starts.push_back(base + at);
      at = (at + uint64_t(size) * 4 + page - 1) / page * page + 2 * page + 64;
    }
    ASSERT_LT(at, mapped);
    std::vector<Param> params(sizes.size());
    std::vector<ShardJob> jobs(sizes.size());
    for (size_t j = 0; j < sizes.size(); ++j) {
      params[j].shape = {sizes[j] + 5};
      jobs[j].param = &params[j];
      jobs[j].kernel = &writeIndices;
      jobs[j].slice = Slice{{5}, {sizes[j]}};
      jobs[j].bytes = uint64_t(sizes[j]) * 4;
      jobs[j].out = starts[j];
    }
    RunOptions options;
    options.threads = threads;
    options.prefault = true;
    runShardJobs(jobs, options);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const auto *words = reinterpret_cast<const uint32_t *>(starts[j]);
      int64_t wrong = 0;
      for (int64_t i = 0; i < sizes[j]; ++i)
        wrong += words[i] != uint32_t(5 + i);
      EXPECT_EQ(wrong, 0) << "destination " << j;
    }
    // Residency of every page, before reading any byte outside the destinations.
    std::vector<unsigned char> resident(mapped / page);
    ASSERT_EQ(mincore(base, mapped, resident.data()), 0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      uint64_t first = uint64_t(starts[j] - base) / page;
      uint64_t last = (uint64_t(starts[j] - base) + jobs[j].bytes - 1) / page;
      EXPECT_FALSE(resident[first - 1] & 1) << "the page before destination " << j;
      EXPECT_FALSE(resident[last + 1] & 1) << "the page after destination " << j;
    }
    munmap(base, mapped);
  }
}

TEST(RunOnThreads, TheFirstExceptionOfAnyThreadReachesTheCaller) {
  for (bool monitored : {false, true}) {
    SCOPED_TRACE(monitored ? "with a monitor" : "without a monitor");
    std::atomic<int> started{0}, finished{0};
    auto work = [&] {
      if (started++ == 1) // one worker throws; the others finish
        throw std::runtime_error("worker failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++finished;
    };
    std::function<void()> monitor;
    if (monitored)
      monitor = [] {};
    try {
      runOnThreads(4, work, monitor, 0.001);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error &e) {
      EXPECT_STREQ(e.what(), "worker failed");
    }
    EXPECT_EQ(started.load(), 4);
    EXPECT_EQ(finished.load(), 3);
  }
  // A throwing monitor is not called again, and its exception reaches the caller too.
  int monitorCalls = 0;
  auto slowWork = [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); };
  auto throwingMonitor = [&] {
    ++monitorCalls;
    throw std::runtime_error("display failed");
  };
  EXPECT_THROW(runOnThreads(2, slowWork, throwingMonitor, 0.001), std::runtime_error);
  EXPECT_EQ(monitorCalls, 1);
}

namespace {
cpu_set_t cpus(std::initializer_list<int> ids) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int id : ids)
    CPU_SET(id, &set);
  return set;
}
std::vector<int> threadsOfEach(const std::vector<cpu_set_t> &host) {
  std::vector<int> threads;
  for (size_t p = 0; p < host.size(); ++p)
    threads.push_back(shareCpus(host, p).threads);
  return threads;
}
} // namespace

TEST(ShareCpus, RanksOfAHostDivideTheCpusTheyShare) {
  // Bound to their own cores (mpirun --bind-to core): each takes its CPUs.
  EXPECT_EQ(threadsOfEach({cpus({0, 1}), cpus({2, 3}), cpus({4})}), (std::vector<int>{2, 2, 1}));
  CpuShare own = shareCpus({cpus({0, 1}), cpus({2, 3})}, 1);
  EXPECT_EQ(own.cpus, 2);
  EXPECT_EQ(own.sharing, 1);
  // The same CPUs for all (--bind-to none or socket): the left-over CPUs go to the first ranks,
  // so that the threads add up to the CPUs.
  EXPECT_EQ(threadsOfEach({cpus({0, 1, 2}), cpus({0, 1, 2})}), (std::vector<int>{2, 1}));
  EXPECT_EQ(threadsOfEach(std::vector<cpu_set_t>(4, cpus({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))),
            (std::vector<int>{3, 3, 2, 2}));
  CpuShare shared = shareCpus(std::vector<cpu_set_t>(3, cpus({4, 5, 6, 7})), 2);
  EXPECT_EQ(shared.cpus, 4);
  EXPECT_EQ(shared.sharing, 3);
  // More ranks than CPUs: one thread each, never none.
  EXPECT_EQ(threadsOfEach(std::vector<cpu_set_t>(3, cpus({0}))), (std::vector<int>{1, 1, 1}));
  // Two sockets of two ranks each: ranks share only with their socket.
  EXPECT_EQ(threadsOfEach({cpus({0, 1, 2, 3}), cpus({0, 1, 2, 3}), cpus({4, 5, 6, 7, 8, 9}),
                           cpus({4, 5, 6, 7, 8, 9})}),
            (std::vector<int>{2, 2, 3, 3}));
  // Overlapping masks: a CPU allowed to k ranks counts 1/k for each.
  EXPECT_EQ(threadsOfEach({cpus({0, 1, 2, 3}), cpus({2, 3}), cpus({5})}),
            (std::vector<int>{3, 1, 1}));
  // A mask that could not be read falls back to resolveThreads.
  EXPECT_EQ(shareCpus({cpus({})}, 0).threads, resolveThreads(0));
}
