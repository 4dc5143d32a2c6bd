// A/B timing of two compiles of one model: which kernels got faster, measured so that a noisy
// machine cannot fake it.
//
//   initc-kernel-ab A_DIR B_DIR [--copies=N] [--rounds=N] [--elements=N] [--target-cpu=CPU]
//
// A_DIR and B_DIR are program directories of the same model (e.g. written by two builds of
// initc). Both libraries are loaded into this one process and each parameter's A and B kernels
// run alternately, round after round, over the same resident buffer, so that drift moves both
// alike. Where a library's pages land can matter as much as its code (one copy of a kernels.so
// ran a kernel at half the speed of a byte-identical copy, in the same process), so each
// library is loaded --copies times, each time from a private copy of its own, and every
// copy's ratio is printed. A and B must give the same bytes: the RNG contract says so, and the
// tool fails if they do not.
#include "executor/executor.h"
#include "initrt/base/program.h"
#include "initrt/base/program_io.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string dirA, dirB, targetCpu;
  int copies = 3, rounds = 21;
  int64_t elements = int64_t(1) << 22;
};

const char *kUsage =
    "usage: initc-kernel-ab A_DIR B_DIR [--copies=N] [--rounds=N] [--elements=N] "
    "[--target-cpu=CPU]\n"
    "Times each parameter's kernel from two program directories of the same model (two\n"
    "builds of initc) alternately in one process, and prints B's time over A's.\n"
    "  --copies=N      load each kernels.so N times, each from a private copy (default 3)\n"
    "  --rounds=N      A/B rounds per parameter and copy; medians are printed (default 21)\n"
    "  --elements=N    elements computed per call, at most the parameter's (default 4194304)\n"
    "  --target-cpu=CPU  the kernel variant to run in both (default: what prog/init picks)\n";

bool parseCount(const char *text, int64_t low, int64_t high, int64_t &out) {
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end || value < low || value > high)
    return false;
  out = value;
  return true;
}

/// Parses argv; prints why and returns false on bad input.
bool parseOptions(int argc, char **argv, Options &options) {
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    int64_t count = 0;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (const char *v = value("--copies=")) {
      if (!parseCount(v, 1, 1000, count)) {
        std::fprintf(stderr, "initc-kernel-ab: --copies takes 1 to 1000, not '%s'\n", v);
        return false;
      }
      options.copies = int(count);
    } else if (const char *v = value("--rounds=")) {
      if (!parseCount(v, 1, 100000, count)) {
        std::fprintf(stderr, "initc-kernel-ab: --rounds takes 1 to 100000, not '%s'\n", v);
        return false;
      }
      options.rounds = int(count);
    } else if (const char *v = value("--elements=")) {
      if (!parseCount(v, 1, int64_t(1) << 32, count)) {
        std::fprintf(stderr, "initc-kernel-ab: --elements takes 1 to 2^32, not '%s'\n", v);
        return false;
      }
      options.elements = count;
    } else if (const char *v = value("--target-cpu=")) {
      options.targetCpu = v;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "initc-kernel-ab: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return false;
    } else {
      dirs.push_back(arg);
    }
  }
  if (dirs.size() != 2) {
    std::fputs(kUsage, stderr);
    return false;
  }
  options.dirA = dirs[0];
  options.dirB = dirs[1];
  return true;
}

/// Why A and B are not programs of one model, or "".
std::string differentModels(const initrt::Program &a, const initrt::Program &b) {
  if (a.params.size() != b.params.size())
    return std::to_string(a.params.size()) + " parameters against " +
           std::to_string(b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const initrt::Param &p = a.params[i], &q = b.params[i];
    if (p.name != q.name || p.dtype != q.dtype || p.shape != q.shape ||
        p.kernelArgs != q.kernelArgs || p.transform != q.transform)
      return "parameter " + std::to_string(i) + " is '" + p.name + "' in A and '" + q.name +
             "' in B, or differs in dtype, shape, seed or transform";
  }
  return "";
}

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Buffer {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
  explicit Buffer(size_t bytes) {
    data.reset(static_cast<char *>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)));
    if (data)
      std::memset(data.get(), 0, bytes); // resident before any timing
  }
};

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (!parseOptions(argc, argv, options))
    return 2;
  initrt::Program a, b;
  std::string error;
  if (!initrt::readProgram(options.dirA, a, error) || !initrt::readProgram(options.dirB, b, error)) {
    std::fprintf(stderr, "initc-kernel-ab: %s\n", error.c_str());
    return 1;
  }
  std::string why = differentModels(a, b);
  if (!why.empty()) {
    std::fprintf(stderr,
                 "initc-kernel-ab: %s and %s are not programs of the same model: %s\n",
                 options.dirA.c_str(), options.dirB.c_str(), why.c_str());
    return 1;
  }

  // Each parameter's calls: the first `elements` of the whole tensor, as one shard.
  struct Call {
    size_t param;
    int64_t elements;
    size_t bytes;
  };
  std::vector<Call> calls;
  size_t largest = 0;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const initrt::Param &p = a.params[i];
    if (p.load)
      continue; // read from a base checkpoint: no kernel to time
    // An orthogonal parameter's kernel writes its N(0, 1) matrix in F32.
    size_t elementBytes = p.transform.empty() ? size_t(initrt::dtypeBytes(p.dtype)) : 4;
    int64_t elements = std::min(p.numElements(), options.elements);
    if (elements == 0)
      continue;
    calls.push_back({i, elements, size_t(elements) * elementBytes});
    largest = std::max(largest, calls.back().bytes);
  }
  Buffer outA(largest), outB(largest);
  if (!outA.data || !outB.data) {
    std::fprintf(stderr, "initc-kernel-ab: cannot allocate 2 x %zu bytes\n", largest);
    return 1;
  }

  // ratios[call][copy]: B's median time over A's.
  std::vector<std::vector<double>> timeA(calls.size()), timeB(calls.size()), ratios(calls.size());
  initrt::KernelLibrary::forceCopy = true; // each load from a private copy: its own pages
  std::string cpu;
  for (int copy = 0; copy < options.copies; ++copy) {
    auto kernelsA = initrt::KernelLibrary::load(options.dirA, a, error, options.targetCpu);
    auto kernelsB = kernelsA ? initrt::KernelLibrary::load(options.dirB, b, error,
                                                           options.targetCpu)
                             : nullptr;
    if (!kernelsB) {
      std::fprintf(stderr, "initc-kernel-ab: %s\n", error.c_str());
      return 1;
    }
    cpu = kernelsA->targetCpu();
    for (size_t c = 0; c < calls.size(); ++c) {
      const initrt::Param &p = a.params[calls[c].param];
      if (!kernelsA->kernel(calls[c].param) || !kernelsB->kernel(calls[c].param)) {
        std::fprintf(stderr, "initc-kernel-ab: no kernel for '%s'\n", p.name.c_str());
        return 1;
      }
      std::vector<int64_t> offset(p.shape.size(), 0);
      const uint64_t noArgs = 0;
      const uint64_t *args = p.kernelArgs.empty() ? &noArgs : p.kernelArgs.data();
      auto run = [&](const initrt::KernelLibrary &kernels, char *out) {
        double start = seconds();
        kernels.kernel(calls[c].param)(out, p.shape.data(), offset.data(), p.shape.data(), 0,
                                       calls[c].elements, args);
        return seconds() - start;
      };
      std::vector<double> roundsA, roundsB;
      for (int r = 0; r < options.rounds; ++r) {
        // Alternate which goes first, so that neither always runs on the other's heels.
        if (r % 2) {
          roundsB.push_back(run(*kernelsB, outB.data.get()));
          roundsA.push_back(run(*kernelsA, outA.data.get()));
        } else {
          roundsA.push_back(run(*kernelsA, outA.data.get()));
          roundsB.push_back(run(*kernelsB, outB.data.get()));
        }
      }
      if (std::memcmp(outA.data.get(), outB.data.get(), calls[c].bytes) != 0) {
        std::fprintf(stderr,
                     "initc-kernel-ab: A and B give different bytes for '%s': the two "
                     "compiles break the RNG contract (ir-spec/rng.md)\n",
                     p.name.c_str());
        return 1;
      }
      double medianA = median(roundsA), medianB = median(roundsB);
      timeA[c].push_back(medianA / double(calls[c].elements));
      timeB[c].push_back(medianB / double(calls[c].elements));
      ratios[c].push_back(medianB / medianA);
    }
    std::fprintf(stderr, "copy %d of %d done\n", copy + 1, options.copies);
  }

  std::printf("%s kernels, %d copies x %d rounds; ns/element (median over copies) and B's time "
              "over A's, each copy:\n",
              cpu.c_str(), options.copies, options.rounds);
  std::printf("%-32s %9s %9s  %s\n", "param", "A", "B", "B/A");
  double logSum = 0;
  for (size_t c = 0; c < calls.size(); ++c) {
    std::string each;
    for (double ratio : ratios[c]) {
      char text[16];
      std::snprintf(text, sizeof text, " %.3f", ratio);
      each += text;
      logSum += std::log(ratio);
    }
    std::printf("%-32s %9.4f %9.4f %s\n", a.params[calls[c].param].name.c_str(),
                1e9 * median(timeA[c]), 1e9 * median(timeB[c]), each.c_str());
  }
  if (!calls.empty())
    std::printf("geometric mean of B/A: %.3f (%zu parameters, same bytes)\n",
                std::exp(logSum / double(calls.size() * size_t(options.copies))), calls.size());
  return 0;
}
