// The error bounds of rule 7 (ir-spec/rng.md), measured over every f32 of each function's
// documented domain: the worst error, where it is reached, and whether it is within the bound
// rng.md states (exit 1 if one is not). About 9e9 evaluations, some 10 CPU-minutes, so
// tests/unit/runtime/base/rng_test.cpp checks the same bounds on a sample and at the worst
// inputs found here.
//
// The reference is the C library's double function (glibc's exp, log, expm1, log1p, sin and
// cos are within about one double ulp), exact enough: one double ulp is 2^-29 f32 ulps, so the
// figures are exact to about 1e-8 of an f32 ulp. erfinv's reference is two Newton steps
// on double erf from erfinv_f's own result (relative error 3e-7 -> 1e-13 -> 1e-16).
//
// Usage: initc-rng-accuracy [--threads N] [FUNCTION...]   (default: all; --list names them)
#include "initrt/base/rng.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace rng = initrt::rng;

namespace {

// The ulp of the f32 nearest `ref`: 2^(e - 23) for 2^e <= |float(ref)| < 2^(e + 1), and the
// subnormals' 2^-149 below 2^-126 (rng_test.cpp's definition).
double ulpOf(double ref) {
  float f = static_cast<float>(ref);
  if (f == 0)
    return 0x1p-149;
  return std::ldexp(1.0, std::max(std::ilogb(f), -126) - 23);
}

double ulpError(float got, double ref) { return std::fabs(got - ref) / ulpOf(ref); }

double erfinvDouble(double y) {
  double x = rng::erfinvF(static_cast<float>(y));
  for (int step = 0; step < 2; ++step)
    x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

// A sweep: every f32 whose bits lie in one of `ranges` (inclusive), the error of each, the bound.
struct Sweep {
  const char *name, *domain, *unit;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  std::function<double(uint32_t)> error; // of the f32 of these bits; < 0: not counted
  double bound;                        // as rng.md states it
};

std::vector<Sweep> sweeps() {
  auto ulps = [](float (*f)(float), double (*ref)(double)) {
    return [f, ref](uint32_t b) {
      float x = rng::floatOf(b);
      double want = ref(static_cast<double>(x));
      return std::isfinite(want) && std::fabs(want) < 0x1p128 ? ulpError(f(x), want) : -1.0;
    };
  };
  const uint32_t sign = 0x80000000u;
  return {
      // [-103, 88.7]: 0x80000000-0xc2ce0000 and 0-0x42b16666.
      {"exp", "[-103, 88.7]", "ulp", {{0u, 0x42b16666u}, {sign, 0xc2ce0000u}},
       ulps(rng::expF, std::exp), 0.9904},
      {"log", "positive floats, subnormal to max", "ulp", {{1u, 0x7f7fffffu}},
       ulps(rng::logF, std::log), 0.8291},
      {"log_on_u", "the 2^23 values of U (rule 3)", "ulp", {{0u, (1u << 23) - 1}},
       [](uint32_t m) { // here the bits are U's 23-bit mantissa
         float u = rng::unitFloat(m << 9);
         return ulpError(rng::logF(u), std::log(static_cast<double>(u)));
       },
       0.8051},
      {"expm1", "|x| <= OVER (88.72), both signs", "ulp",
       {{1u, 0x42b17180u}, {sign | 1u, sign | 0x42b17180u}}, ulps(rng::expm1F, std::expm1),
       0.8759},
      {"log1p", "(-1, max float]", "ulp", {{1u, 0x7f7fffffu}, {sign | 1u, 0xbf7fffffu}},
       ulps(rng::log1pF, std::log1p), 0.8348},
      {"sin_2pi", "u in [0, 1]", "absolute", {{0u, 0x3f800000u}},
       [](uint32_t b) { float u = rng::floatOf(b); return std::fabs(rng::sin2Pi(u) - std::sin(2 * M_PI * double(u))); },
       9.216e-8},
      {"cos_2pi", "u in [0, 1]", "absolute", {{0u, 0x3f800000u}},
       [](uint32_t b) { float u = rng::floatOf(b); return std::fabs(rng::cos2Pi(u) - std::cos(2 * M_PI * double(u))); },
       9.216e-8},
      // erfinv_f is odd bit for bit ((1 - x) * (1 + x) is symmetric): [0, 1) covers (-1, 1).
      // Relative error where the result is a normal float (x >= 2^-125); below, p * x is
      // rounded to a subnormal.
      {"erfinv", "[2^-125, 1), and (-1, -2^-125] by symmetry", "relative",
       {{0x01000000u, 0x3f7fffffu}},
       [](uint32_t b) {
         float x = rng::floatOf(b);
         double ref = erfinvDouble(x);
         return std::fabs(rng::erfinvF(x) - ref) / std::fabs(ref);
       },
       2.773e-7},
  };
}

// Bits, not values, index the f32s; each thread keeps its own worst.
struct Worst {
  double error = 0;
  uint32_t bits = 0;
};

Worst run(const Sweep &sweep, unsigned threads) {
  std::vector<uint64_t> starts;
  uint64_t total = 0;
  for (auto [first, last] : sweep.ranges) {
    starts.push_back(total);
    total += uint64_t(last) - first + 1;
  }
  auto bitsAt = [&](uint64_t k) {
    size_t r = size_t(std::upper_bound(starts.begin(), starts.end(), k) - starts.begin()) - 1;
    return uint32_t(sweep.ranges[r].first + (k - starts[r]));
  };
  const uint64_t chunk = 1 << 20;
  std::atomic<uint64_t> next{0};
  std::vector<Worst> worst(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t begin; (begin = next.fetch_add(chunk)) < total;)
        for (uint64_t k = begin; k < std::min(total, begin + chunk); ++k) {
          uint32_t b = bitsAt(k);
          double e = sweep.error(b);
          if (e > worst[t].error)
            worst[t] = {e, b};
        }
    });
  for (std::thread &thread : pool)
    thread.join();
  return *std::max_element(worst.begin(), worst.end(),
                           [](const Worst &a, const Worst &b) { return a.error < b.error; });
}

} // namespace

int main(int argc, char **argv) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> wanted;
  std::vector<Sweep> all = sweeps();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = unsigned(std::max(1, std::atoi(argv[++i])));
    } else if (arg == "--list") {
      for (const Sweep &s : all)
        std::printf("%s\n", s.name);
      return 0;
    } else if (std::any_of(all.begin(), all.end(), [&](const Sweep &s) { return arg == s.name; })) {
      wanted.push_back(arg);
    } else {
      std::fprintf(stderr, "initc-rng-accuracy: unknown argument '%s': give function names "
                           "(--list), or --threads N\n", argv[i]);
      return 2;
    }
  }
  int exceeded = 0;
  std::printf("%-9s %-44s %-12s %-10s %s\n", "function", "domain (every f32)", "max error",
              "bound", "reached at");
  for (const Sweep &sweep : all) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), sweep.name) == wanted.end())
      continue;
    Worst w = run(sweep, threads);
    bool within = w.error <= sweep.bound;
    exceeded += !within;
    char at[64];
    if (std::string(sweep.name) == "log_on_u")
      std::snprintf(at, sizeof at, "U = %a", double(rng::unitFloat(w.bits << 9)));
    else
      std::snprintf(at, sizeof at, "0x%08x (%.9g)", w.bits, double(rng::floatOf(w.bits)));
    std::printf("%-9s %-44s %-12.6g %-10.4g %s %s%s\n", sweep.name, sweep.domain, w.error,
                sweep.bound, sweep.unit, at, within ? "" : "  EXCEEDS THE BOUND");
    std::fflush(stdout);
  }
  return exceeded ? 1 : 0;
}
