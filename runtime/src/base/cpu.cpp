// Detecting the CPU's instruction-set extensions, for choosing a kernel variant.
#include "initrt/base/cpu.h"

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

} // namespace

const std::vector<std::string_view> &detectableCpuExtensions() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all;
    for (const Extension &extension : kExtensions)
      all.push_back(extension.name);
    return all;
  }();
  return names;
}

const std::vector<std::string_view> &undetectableCpuExtensions() {
  // Newer than the detection above knows (AVX-IFMA, AVX-NE-CONVERT, AVX-VNNI-INT8/16, SHA512,
  // SM3, SM4), AMD's TBM, and APX's registers and instruction forms.
  static const std::vector<std::string_view> names = {
      "avxifma", "avxneconvert", "avxvnniint8", "avxvnniint16", "sha512", "sm3",  "sm4", "tbm",
      "egpr",    "ndd",          "ccmp",        "cf",           "nf",     "ppx",  "push2pop2",
      "zu"};
  return names;
}

bool cpuHasExtension(std::string_view extension) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#endif
  for (const Extension &known : kExtensions)
    if (known.name == extension)
      return known.supported();
  return false;
}

std::vector<std::string> missingCpuExtensions(const std::vector<std::string> &extensions) {
  std::vector<std::string> missing;
  for (const std::string &extension : extensions)
    if (!cpuHasExtension(extension))
      missing.push_back(extension);
  return missing;
}

} // namespace initrt
