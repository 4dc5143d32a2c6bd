// Detecting the CPU's instruction-set extensions, for choosing a kernel variant.
#include "initrt/base/cpu.h"

#include <cstring>
#include <elf.h>
#include <fstream>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace initrt {

namespace {

struct Extension {
  std::string_view name;
  bool (*supported)();
};

// __builtin_cpu_supports takes a string literal, so each name gets its own function. libgcc's
// detection also checks that the OS saves the AVX and AVX-512 registers.
#if defined(__x86_64__) || defined(__i386__)
#define INITRT_SUPPORTS(name) (__builtin_cpu_supports(name) != 0)
#else
#define INITRT_SUPPORTS(name) false
#endif
#define INITRT_EXTENSION(name) Extension{name, [] { return INITRT_SUPPORTS(name); }}

const Extension kExtensions[] = {
    // SSE and scalar bit manipulation
    INITRT_EXTENSION("sse3"), INITRT_EXTENSION("ssse3"), INITRT_EXTENSION("sse4.1"),
    INITRT_EXTENSION("sse4.2"), INITRT_EXTENSION("sse4a"), INITRT_EXTENSION("popcnt"),
    INITRT_EXTENSION("lzcnt"), INITRT_EXTENSION("movbe"), INITRT_EXTENSION("bmi"),
    INITRT_EXTENSION("bmi2"), INITRT_EXTENSION("adx"), INITRT_EXTENSION("aes"),
    INITRT_EXTENSION("pclmul"), INITRT_EXTENSION("sha"),
    // AVX and AVX2
    INITRT_EXTENSION("avx"), INITRT_EXTENSION("avx2"), INITRT_EXTENSION("fma"),
    INITRT_EXTENSION("fma4"), INITRT_EXTENSION("xop"), INITRT_EXTENSION("f16c"),
    INITRT_EXTENSION("avxvnni"), INITRT_EXTENSION("vaes"), INITRT_EXTENSION("vpclmulqdq"),
    INITRT_EXTENSION("gfni"),
    // AVX-512
    INITRT_EXTENSION("avx512f"), INITRT_EXTENSION("avx512bw"), INITRT_EXTENSION("avx512dq"),
    INITRT_EXTENSION("avx512vl"), INITRT_EXTENSION("avx512cd"), INITRT_EXTENSION("avx512vbmi"),
    INITRT_EXTENSION("avx512vbmi2"), INITRT_EXTENSION("avx512ifma"), INITRT_EXTENSION("avx512vnni"),
    INITRT_EXTENSION("avx512bitalg"), INITRT_EXTENSION("avx512vpopcntdq"),
    INITRT_EXTENSION("avx512bf16"), INITRT_EXTENSION("avx512fp16"),
    INITRT_EXTENSION("avx512vp2intersect"),
};

#undef INITRT_EXTENSION
#undef INITRT_SUPPORTS

// AArch64: the kernel's HWCAP and HWCAP2 bits (arch/arm64 elf_hwcaps), each extension with
// every bit it needs. Features LLVM uses only for atomic operations (lse, lse2, rcpc, rcpc-immo:
// the kernels have none) or in system code (pauth, bti, mte's tags, ras, spe, ...) never appear
// in the kernels and need no check.
struct AArch64Extension {
  std::string_view name;
  unsigned long hwcap;
  unsigned long hwcap2;
};

#if defined(__aarch64__)
#define INITRT_HWCAP(bit) HWCAP_##bit
#define INITRT_HWCAP2(bit) HWCAP2_##bit
#else
#define INITRT_HWCAP(bit) 0ul
#define INITRT_HWCAP2(bit) 0ul
#endif

const AArch64Extension kAArch64Extensions[] = {
    {"aes", INITRT_HWCAP(AES) | INITRT_HWCAP(PMULL), 0},
    {"sha2", INITRT_HWCAP(SHA1) | INITRT_HWCAP(SHA2), 0},
    {"crc", INITRT_HWCAP(CRC32), 0},
    {"fullfp16", INITRT_HWCAP(FPHP) | INITRT_HWCAP(ASIMDHP), 0},
    {"rdm", INITRT_HWCAP(ASIMDRDM), 0},
    {"jsconv", INITRT_HWCAP(JSCVT), 0},
    {"complxnum", INITRT_HWCAP(FCMA), 0},
    {"sha3", INITRT_HWCAP(SHA3) | INITRT_HWCAP(SHA512), 0},
    {"sm4", INITRT_HWCAP(SM3) | INITRT_HWCAP(SM4), 0},
    {"dotprod", INITRT_HWCAP(ASIMDDP), 0},
    {"sve", INITRT_HWCAP(SVE), 0},
    {"fp16fml", INITRT_HWCAP(ASIMDFHM), 0},
    {"flagm", INITRT_HWCAP(FLAGM), 0},
    {"sve2", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVE2)},
    {"sve2-aes", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVE2) | INITRT_HWCAP2(SVEAES) | INITRT_HWCAP2(SVEPMULL)},
    {"sve2-bitperm", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVE2) | INITRT_HWCAP2(SVEBITPERM)},
    {"sve2-sha3", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVE2) | INITRT_HWCAP2(SVESHA3)},
    {"sve2-sm4", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVE2) | INITRT_HWCAP2(SVESM4)},
    {"altnzcv", 0, INITRT_HWCAP2(FLAGM2)},
    {"fptoint", 0, INITRT_HWCAP2(FRINT)},
    {"i8mm", 0, INITRT_HWCAP2(I8MM)},
    {"f32mm", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVEF32MM)},
    {"f64mm", INITRT_HWCAP(SVE), INITRT_HWCAP2(SVEF64MM)},
    {"bf16", 0, INITRT_HWCAP2(BF16)},
    {"rand", 0, INITRT_HWCAP2(RNG)},
};

#undef INITRT_HWCAP
#undef INITRT_HWCAP2

} // namespace

const std::vector<std::string_view> &detectableCpuExtensions(uint16_t machine) {
  static const std::vector<std::string_view> x86 = [] {
    std::vector<std::string_view> all;
    for (const Extension &extension : kExtensions)
      all.push_back(extension.name);
    return all;
  }();
  static const std::vector<std::string_view> aarch64 = [] {
    std::vector<std::string_view> all;
    for (const AArch64Extension &extension : kAArch64Extensions)
      all.push_back(extension.name);
    return all;
  }();
  static const std::vector<std::string_view> none;
  return machine == EM_X86_64 ? x86 : machine == EM_AARCH64 ? aarch64 : none;
}

const std::vector<std::string_view> &undetectableCpuExtensions(uint16_t machine) {
  // Newer than the detection above knows (AVX-IFMA, AVX-NE-CONVERT, AVX-VNNI-INT8/16, SHA512,
  // SM3, SM4), AMD's TBM, and APX's registers and instruction forms.
  static const std::vector<std::string_view> x86 = {
      "avxifma", "avxneconvert", "avxvnniint8", "avxvnniint16", "sha512", "sm3",  "sm4", "tbm",
      "egpr",    "ndd",          "ccmp",        "cf",           "nf",     "ppx",  "push2pop2",
      "zu"};
  // Armv8.7 and later scalar and vector forms (CSSC's integer min/max/abs/count, MOPS's memcpy
  // instructions, SVE2.1, SME, RCpc 3, 128-bit atomics, LUT), which this table does not map yet.
  static const std::vector<std::string_view> aarch64 = {
      "cssc", "mops", "sve2p1", "sme", "sme2", "sve-b16b16", "rcpc3", "lse128", "lut", "fp8",
      "faminmax"};
  static const std::vector<std::string_view> none;
  return machine == EM_X86_64 ? x86 : machine == EM_AARCH64 ? aarch64 : none;
}

bool cpuHasExtension(std::string_view extension) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  for (const Extension &known : kExtensions)
    if (known.name == extension)
      return known.supported();
#elif defined(__aarch64__)
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  for (const AArch64Extension &known : kAArch64Extensions)
    if (known.name == extension)
      return (hwcap & known.hwcap) == known.hwcap && (hwcap2 & known.hwcap2) == known.hwcap2;
#endif
  return false;
}

std::vector<std::string> missingCpuExtensions(const std::vector<std::string> &extensions) {
  std::vector<std::string> missing;
  for (const std::string &extension : extensions)
    if (!cpuHasExtension(extension))
      missing.push_back(extension);
  return missing;
}

std::string cpuDescription() {
  std::string name;
#if defined(__x86_64__) || defined(__i386__)
  unsigned int words[12] = {};
  unsigned int highest = __get_cpuid_max(0x80000000u, nullptr);
  if (highest >= 0x80000004u) {
    for (unsigned int leaf = 0; leaf < 3; ++leaf)
      __get_cpuid(0x80000002u + leaf, &words[4 * leaf], &words[4 * leaf + 1],
                  &words[4 * leaf + 2], &words[4 * leaf + 3]);
    name.assign(reinterpret_cast<const char *>(words), strnlen(reinterpret_cast<const char *>(words), sizeof words));
  }
#endif
  if (name.find_first_not_of(' ') == std::string::npos) {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; name.empty() && std::getline(cpuinfo, line);)
      if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
        name = line.substr(line.find(':') + 1);
  }
  size_t first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');
  name = first == std::string::npos ? "" : name.substr(first, last - first + 1);
  std::string arch = elfMachineName(hostElfMachine());
  return name.empty() ? "an " + arch + " CPU" : name + " (" + arch + ")";
}

uint16_t hostElfMachine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__i386__)
  return EM_386;
#elif defined(__arm__)
  return EM_ARM;
#elif defined(__riscv)
  return EM_RISCV;
#elif defined(__powerpc64__)
  return EM_PPC64;
#elif defined(__s390x__)
  return EM_S390;
#else
#error "hostElfMachine: name this architecture's ELF machine"
#endif
}

std::string elfMachineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86-64";
  case EM_AARCH64:
    return "AArch64";
  case EM_386:
    return "32-bit x86";
  case EM_ARM:
    return "32-bit Arm";
  case EM_RISCV:
    return "RISC-V";
  case EM_PPC64:
    return "POWER";
  case EM_S390:
    return "s390x";
  default:
    return "ELF machine " + std::to_string(machine);
  }
}

std::string foreignElfArchitecture(const unsigned char *header, size_t size, uint16_t host) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(header, ELFMAG, SELFMAG) != 0)
    return "";
  const unsigned char elfClass = header[EI_CLASS], data = header[EI_DATA];
  if ((elfClass != ELFCLASS32 && elfClass != ELFCLASS64) ||
      (data != ELFDATA2LSB && data != ELFDATA2MSB))
    return "";
  // e_machine is at the same offset in both classes, in the file's byte order.
  const unsigned char *at = header + offsetof(Elf64_Ehdr, e_machine);
  uint16_t machine = data == ELFDATA2LSB ? uint16_t(at[0] | at[1] << 8) : uint16_t(at[0] << 8 | at[1]);
  const bool host64 = host != EM_386 && host != EM_ARM;
  if (machine == host && (elfClass == ELFCLASS64) == host64)
    return "";
  std::string name = elfMachineName(machine);
  if (machine == host) // the same machine, the other word size
    name = (elfClass == ELFCLASS64 ? "64-bit " : "32-bit ") + name;
  return name;
}

} // namespace initrt
