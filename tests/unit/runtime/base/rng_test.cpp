// Tests of the scalar reference of the RNG contract (runtime/include/initrt/rng.h) against the
// Random123 known-answer vectors, the worked examples of ir-spec/rng.md, double-precision libm,
// and the distributions' moments.

#include "initrt/base/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace initrt::rng;

namespace {

struct KatRow {
  int rounds;
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t expected[4];
};

// The philox4x32 rows of Random123's tests/kat_vectors (../shared/reference/philox_kat.txt).
const KatRow kEmbeddedKat[] = {
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
};

void expectKat(const KatRow &row) {
  uint32_t out[4];
  philox4x32(row.ctr, Key{row.key[0], row.key[1]}, out, row.rounds);
  for (int w = 0; w < 4; ++w)
    EXPECT_EQ(out[w], row.expected[w]) << "rounds " << row.rounds << " word " << w;
}

TEST(Philox, EmbeddedKnownAnswers) {
  for (const KatRow &row : kEmbeddedKat)
    expectKat(row);
}

TEST(Philox, KnownAnswerFile) {
  std::ifstream in(INITC_SOURCE_DIR "/../shared/reference/philox_kat.txt");
  if (!in)
    GTEST_SKIP() << "philox_kat.txt not present; the embedded rows still ran";
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name) || name != "philox4x32")
      continue;
    KatRow row;
    fields >> std::dec >> row.rounds >> std::hex;
    for (uint32_t &w : row.ctr)
      fields >> w;
    for (uint32_t &w : row.key)
      fields >> w;
    for (uint32_t &w : row.expected)
      fields >> w;
    ASSERT_FALSE(fields.fail()) << line;
    expectKat(row);
    ++rows;
  }
  EXPECT_EQ(rows, 6);
}

TEST(Key, Derivation) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull); // published FNV-1a test vector
  EXPECT_EQ(fnv1a64("model.embed_tokens.weight"), 0xa88fd795d5c6d156ull);
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull); // first SplitMix64 output for state 0
  EXPECT_EQ(mix64(42), 0xbdd732262feb6e95ull);

  Key k = deriveKey(0, "", 0);
  EXPECT_EQ(k.k0, 0xbe30928cu);
  EXPECT_EQ(k.k1, 0xa6bbc8dcu);
  k = deriveKey(42, "model.embed_tokens.weight", 0);
  EXPECT_EQ(k.k0, 0xc0bbdabbu);
  EXPECT_EQ(k.k1, 0x977fe162u);
  k = deriveKey(1234, "model.layers.0.mlp.down_proj.weight", 1);
  EXPECT_EQ(k.k0, 0x74a03952u);
  EXPECT_EQ(k.k1, 0x3e4ad956u);

  // Every input changes the key; the name's bytes count, NUL included.
  Key base = deriveKey(7, "w", 0);
  for (Key other : {deriveKey(8, "w", 0), deriveKey(7, "v", 0), deriveKey(7, "w", 1),
                    deriveKey(7, std::string_view("w\0", 2), 0)})
    EXPECT_TRUE(other.k0 != base.k0 || other.k1 != base.k1);
}

TEST(Counter, BlocksAndLanes) {
  Key k = deriveKey(0, "", 0);
  uint32_t x[4];
  philoxBlock(k, 0x48d159e2ull, x); // element 0x123456789 >> 2
  EXPECT_EQ(x[0], 0xd7f4374bu);
  EXPECT_EQ(x[1], 0x2b646950u);
  EXPECT_EQ(x[2], 0x92374d81u);
  EXPECT_EQ(x[3], 0xd501cc60u);
  EXPECT_EQ(wordAt(k, 0x123456789ull), x[1]);
  // The high half of the block index feeds ctr[1].
  const uint32_t ctr[4] = {0x9abcdef0u, 0x12345678u >> 2, 0, 0};
  uint32_t direct[4];
  philox4x32(ctr, k, direct);
  philoxBlock(k, (uint64_t{0x12345678u >> 2} << 32) | 0x9abcdef0u, x);
  for (int w = 0; w < 4; ++w)
    EXPECT_EQ(x[w], direct[w]);
}

TEST(UnitFloat, BoundsAndExactness) {
  EXPECT_EQ(unitFloat(0), 0x1p-24f);
  EXPECT_EQ(unitFloat(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_LT(unitFloat(0xffffffffu), 1.0f);
  EXPECT_EQ(unitFloat(0x80000000u), 0.5f + 0x1p-24f);
  EXPECT_EQ(unitFloat(0x1ffu), unitFloat(0)); // the low 9 bits are dropped
  for (uint32_t m = 0; m < (1u << 23); m += 997) {
    uint32_t x = m << 9;
    EXPECT_EQ(static_cast<double>(unitFloat(x)), (m + 0.5) * 0x1p-23);
    EXPECT_EQ(unitFloat(~x), 1.0f - unitFloat(x));
  }
}

//===----------------------------------------------------------------------===//
// Worked examples (the table in ir-spec/rng.md)
//===----------------------------------------------------------------------===//

struct Example {
  uint64_t seed;
  const char *name;
  uint64_t stream;
  uint64_t index;
  uint32_t uniform, normal, trunc;       // f32 bits
  uint16_t uniformBF16, normalBF16, truncBF16;
  uint16_t uniformF16, normalF16, truncF16;
};

// uniform(-0.1, 0.1), normal(0, 0.02), trunc_normal(0, 0.02, -0.04, 0.04).
const Example kExamples[] = {
    {0, "", 0, 0, 0xbdba1b0b, 0xbd0e3866, 0xbcf662bb, 0xbdba, 0xbd0e, 0xbcf6, 0xadd1, 0xa872,
     0xa7b3},
    {0, "", 0, 1, 0x3ccfe1bc, 0xbd119f4d, 0x3bca1b87, 0x3cd0, 0xbd12, 0x3bca, 0x267f, 0xa88d,
     0x1e51},
    {0, "", 0, 2, 0xbd131c84, 0x3ca38e68, 0xbc116d1c, 0xbd13, 0x3ca4, 0xbc11, 0xa899, 0x251c,
     0xa08b},
    {0, "", 0, 3, 0x3d9588e1, 0xbcb95799, 0x3ca8bbc6, 0x3d96, 0xbcb9, 0x3ca9, 0x2cac, 0xa5cb,
     0x2546},
    {0, "", 0, 0x123456789, 0xbd875f58, 0x3c27334b, 0xbc93295b, 0xbd87, 0x3c27, 0xbc93, 0xac3b,
     0x213a, 0xa499},
    {42, "model.embed_tokens.weight", 0, 0, 0xbbe45980, 0xbc20b072, 0xbadaca8b, 0xbbe4, 0xbc21,
     0xbadb, 0x9f23, 0xa106, 0x96d6},
    {42, "model.embed_tokens.weight", 0, 1000003, 0x3d7648f6, 0xbd2c5733, 0x3c82676e, 0x3d76,
     0xbd2c, 0x3c82, 0x2bb2, 0xa963, 0x2413},
    {1234, "model.layers.0.mlp.down_proj.weight", 1, 1, 0xbd3f4cd7, 0x3b81f009, 0xbc41cfa8,
     0xbd3f, 0x3b82, 0xbc42, 0xa9fa, 0x1c10, 0xa20e},
    {1234, "model.layers.0.mlp.down_proj.weight", 1, 0x123456789, 0x3db2961b, 0xbc89f90b,
     0x3ce20dac, 0x3db3, 0xbc8a, 0x3ce2, 0x2d95, 0xa450, 0x2710},
};

TEST(WorkedExamples, MatchSpec) {
  for (const Example &ex : kExamples) {
    Key k = deriveKey(ex.seed, ex.name, ex.stream);
    float u = uniformAt(k, ex.index, -0.1, 0.1);
    float n = normalAt(k, ex.index, 0.0, 0.02);
    float t = truncNormalAt(k, ex.index, 0.0, 0.02, -0.04, 0.04);
    SCOPED_TRACE(std::string(ex.name) + " index " + std::to_string(ex.index));
    EXPECT_EQ(bitsOf(u), ex.uniform);
    EXPECT_EQ(bitsOf(n), ex.normal);
    EXPECT_EQ(bitsOf(t), ex.trunc);
    EXPECT_EQ(toBF16Bits(u), ex.uniformBF16);
    EXPECT_EQ(toBF16Bits(n), ex.normalBF16);
    EXPECT_EQ(toBF16Bits(t), ex.truncBF16);
    EXPECT_EQ(toF16Bits(u), ex.uniformF16);
    EXPECT_EQ(toF16Bits(n), ex.normalF16);
    EXPECT_EQ(toF16Bits(t), ex.truncF16);
  }
}

//===----------------------------------------------------------------------===//
// Statistics on 1e6 samples
//===----------------------------------------------------------------------===//

struct Moments {
  double mean, stdev, min, max;
};

template <typename Sample>
Moments momentsOf(uint64_t first, uint64_t count, Sample sample) {
  double sum = 0, sumSq = 0, lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = first; i < first + count; ++i) {
    double v = sample(i);
    sum += v;
    sumSq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  double mean = sum / count;
  return Moments{mean, std::sqrt(sumSq / count - mean * mean), lo, hi};
}

constexpr uint64_t kSamples = 1000000;
// Far above 2^32, so the high counter word is exercised too.
constexpr uint64_t kFarIndex = (uint64_t{3} << 40) + 12345;

TEST(Statistics, Uniform) {
  Key k = deriveKey(1, "stats.uniform", 0);
  for (uint64_t first : {uint64_t{0}, kFarIndex}) {
    Moments m = momentsOf(first, kSamples, [&](uint64_t i) { return uniformAt(k, i, -1, 3); });
    // U(-1, 3): mean 1, std 4 / sqrt(12); 5-sigma bounds.
    EXPECT_NEAR(m.mean, 1.0, 5 * 1.155 / 1000);
    EXPECT_NEAR(m.stdev, 4 / std::sqrt(12.0), 5e-3);
    EXPECT_GE(m.min, -1.0);
    EXPECT_LE(m.max, 3.0);
  }
}

TEST(Statistics, Normal) {
  Key k = deriveKey(2, "stats.normal", 3);
  for (uint64_t first : {uint64_t{0}, kFarIndex}) {
    Moments m = momentsOf(first, kSamples, [&](uint64_t i) { return normalAt(k, i, 1.5, 2.0); });
    EXPECT_NEAR(m.mean, 1.5, 5 * 2.0 / 1000);
    EXPECT_NEAR(m.stdev, 2.0, 8e-3);
    // 1e6 standard normals reach about 4.9 sigma; the grid caps |z| at sqrt(2 ln 2^24) = 5.77.
    EXPECT_GT((m.max - 1.5) / 2, 4.0);
    EXPECT_LT((1.5 - m.min) / 2, 5.8);
  }
  // The fraction below a few quantiles matches Phi.
  Key k2 = deriveKey(2, "stats.normal.cdf", 0);
  const double cuts[] = {-2.0, -1.0, 0.0, 0.5, 1.0, 2.0};
  int below[6] = {};
  for (uint64_t i = 0; i < kSamples; ++i) {
    float z = normalAt(k2, i, 0, 1);
    for (int c = 0; c < 6; ++c)
      below[c] += z < cuts[c];
  }
  for (int c = 0; c < 6; ++c) {
    double p = normalCdf(cuts[c]);
    EXPECT_NEAR(below[c] / double(kSamples), p, 5 * std::sqrt(p * (1 - p) / kSamples))
        << "cut " << cuts[c];
  }
}

TEST(Statistics, TruncNormal) {
  Key k = deriveKey(3, "stats.trunc", 0);
  // torch default trunc_normal_(std=1, a=-2, b=2): truncated std is 0.87962.
  for (uint64_t first : {uint64_t{0}, kFarIndex}) {
    Moments m =
        momentsOf(first, kSamples, [&](uint64_t i) { return truncNormalAt(k, i, 0, 1, -2, 2); });
    EXPECT_NEAR(m.mean, 0.0, 5 * 0.88 / 1000);
    EXPECT_NEAR(m.stdev, 0.87962, 4e-3);
    EXPECT_GE(m.min, -2.0);
    EXPECT_LE(m.max, 2.0);
  }
  // HF style: std 0.02 with absolute cutoffs at +-2, which never bind.
  Moments hf =
      momentsOf(0, kSamples, [&](uint64_t i) { return truncNormalAt(k, i, 0, 0.02, -2, 2); });
  EXPECT_NEAR(hf.mean, 0.0, 5 * 0.02 / 1000);
  EXPECT_NEAR(hf.stdev, 0.02, 1e-4);
  // Asymmetric window, shifted mean.
  Moments asym =
      momentsOf(0, kSamples, [&](uint64_t i) { return truncNormalAt(k, i, 1.0, 0.5, 0.8, 2.5); });
  EXPECT_GE(asym.min, 0.8f);
  EXPECT_LE(asym.max, 2.5f);
  // Mean of N(1, 0.5) truncated to [0.8, 2.5]: 1 + 0.5 (phi(-0.4) - phi(3)) / (Phi(3) - Phi(-0.4)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  double expected =
      1.0 + 0.5 * (phi(-0.4) - phi(3.0)) / (normalCdf(3.0) - normalCdf(-0.4));
  EXPECT_NEAR(asym.mean, expected, 2e-3);
}

//===----------------------------------------------------------------------===//
// Elementary functions against double libm
//===----------------------------------------------------------------------===//

void recordMeasure(const char *name, double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  ::testing::Test::RecordProperty(name, text);
}

double ulpOf(double ref) {
  float f = static_cast<float>(ref);
  if (f == 0)
    return 0x1p-149;
  int e = std::ilogb(f);
  return std::ldexp(1.0, std::max(e, -126) - 23);
}

double ulpError(float got, double ref) { return std::fabs(got - ref) / ulpOf(ref); }

TEST(ElementaryFunctions, LogOnUniformGrid) {
  // Every value unitFloat can produce.
  double worst = 0;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    float u = unitFloat(m << 9);
    worst = std::max(worst, ulpError(logF(u), std::log(static_cast<double>(u))));
  }
  recordMeasure("log_max_ulp_on_grid", worst);
  EXPECT_LE(worst, 0.8051); // rng.md: 0.805055, at U = 0x3f3358ab
  EXPECT_GT(worst, 0.8050);
}

TEST(ElementaryFunctions, LogEverywhere) {
  double worst = 0;
  // Positive floats from the smallest subnormal to the largest finite, every 251st pattern.
  for (uint32_t b = 1; b < 0x7f800000u; b += 251) {
    float x = floatOf(b);
    worst = std::max(worst, ulpError(logF(x), std::log(static_cast<double>(x))));
  }
  float at = floatOf(0x3f3331aeu);
  worst = std::max(worst, ulpError(logF(at), std::log(double(at))));
  recordMeasure("log_max_ulp", worst);
  EXPECT_LE(worst, 0.8291); // rng.md: 0.829078, at 0x3f3331ae
  EXPECT_GT(worst, 0.8290);
  EXPECT_EQ(logF(1.0f), 0.0f);
  EXPECT_EQ(logF(0.0f), -INFINITY);
  EXPECT_EQ(logF(-0.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(logF(-1.0f)));
  EXPECT_TRUE(std::isnan(logF(-INFINITY)));
  EXPECT_TRUE(std::isnan(logF(NAN)));
  EXPECT_EQ(logF(INFINITY), INFINITY);
  EXPECT_NEAR(logF(0x1p-149f), -149 * std::log(2.0), 1e-5);
}

// The bounds of rng.md's rule 7 hold over every f32 of each domain: benchmarks/rng_accuracy.cpp
// (initc-rng-accuracy) measures them so, in minutes. Here, in a second, every 251st f32 of the
// domain and the worst inputs it found: each reaches its bound, none exceeds it.
double worstUlpOfRange(uint32_t first, uint32_t last, float (*f)(float), double (*ref)(double)) {
  double worst = 0;
  for (uint64_t b = first; b <= last; b += 251) {
    float x = floatOf(static_cast<uint32_t>(b));
    worst = std::max(worst, ulpError(f(x), ref(static_cast<double>(x))));
  }
  return worst;
}

TEST(ElementaryFunctions, Exp) {
  // [-103, 88.7]: bits 0-0x42b16666 and 0x80000000-0xc2ce0000.
  double worst = std::max(worstUlpOfRange(0, 0x42b16666u, expF, std::exp),
                          worstUlpOfRange(0x80000000u, 0xc2ce0000u, expF, std::exp));
  recordMeasure("exp_max_ulp", worst);
  EXPECT_LE(worst, 0.9904);
  double at = ulpError(expF(floatOf(0x428cce63u)), std::exp(double(floatOf(0x428cce63u))));
  EXPECT_GT(at, 0.9903) << "the worst input of rng.md";
  EXPECT_LE(at, 0.9904);
  EXPECT_EQ(expF(0.0f), 1.0f);
  EXPECT_EQ(expF(INFINITY), INFINITY);
  EXPECT_EQ(expF(-INFINITY), 0.0f);
  EXPECT_EQ(expF(89.0f), INFINITY);
  EXPECT_EQ(expF(-104.0f), 0.0f);
  EXPECT_TRUE(std::isnan(expF(NAN)));
  // Subnormal results are rounded once: exp(-100) = 3.72e-44 = 26.6 * 2^-149.
  EXPECT_EQ(expF(-100.0f), 27 * 0x1p-149f);
  EXPECT_TRUE(std::isfinite(expF(88.72f)));
}

TEST(ElementaryFunctions, ConstantsAreFdlibms) {
  EXPECT_EQ(bitsOf(kFdLn2Hi), 0x3f317180u);
  EXPECT_EQ(bitsOf(kFdLn2Lo), 0x3717f7d1u);
  EXPECT_EQ(bitsOf(kFdInvLn2), 0x3fb8aa3bu);
  EXPECT_EQ(bitsOf(kExpm1Q1), 0xbd088868u);
  EXPECT_EQ(bitsOf(kExpm1Q2), 0x3acf3010u);
  EXPECT_EQ(bitsOf(kExpm1Overflow), 0x42b17180u);
  EXPECT_EQ(bitsOf(kLog1pLg[0]), 0x3f2aaaaau);
  EXPECT_EQ(bitsOf(kLog1pLg[1]), 0x3eccce13u);
  EXPECT_EQ(bitsOf(kLog1pLg[2]), 0x3e91e9eeu);
  EXPECT_EQ(bitsOf(kLog1pLg[3]), 0x3e789e26u);
}

// Every 251st float of both signs (reference: the double function, rounded only in the ulp).
template <typename F, typename R>
double worstUlpOver(uint32_t first, uint32_t last, F f, R ref) {
  double worst = 0;
  for (uint64_t b = first; b <= last; b += 251)
    for (uint32_t sign : {0u, 0x80000000u}) {
      float x = floatOf(static_cast<uint32_t>(b) | sign);
      double want = ref(static_cast<double>(x));
      if (std::isfinite(want) && std::fabs(want) < 3.4e38)
        worst = std::max(worst, ulpError(f(x), want));
    }
  return worst;
}

TEST(ElementaryFunctions, Expm1) {
  double worst = worstUlpOver(1, 0x42b17180u, expm1F, [](double v) { return std::expm1(v); });
  float at = floatOf(0x4193601eu);
  worst = std::max(worst, ulpError(expm1F(at), std::expm1(double(at))));
  recordMeasure("expm1_max_ulp", worst);
  EXPECT_LE(worst, 0.8759); // rng.md: 0.875873, at 0x4193601e
  EXPECT_GT(worst, 0.8758);
  EXPECT_EQ(bitsOf(expm1F(0.0f)), 0u);
  EXPECT_EQ(bitsOf(expm1F(-0.0f)), 0x80000000u);
  EXPECT_EQ(expm1F(0x1p-149f), 0x1p-149f);
  EXPECT_EQ(expm1F(INFINITY), INFINITY);
  EXPECT_EQ(expm1F(-INFINITY), -1.0f);
  EXPECT_EQ(expm1F(-20.0f), -1.0f);
  EXPECT_EQ(expm1F(88.73f), INFINITY);
  EXPECT_TRUE(std::isfinite(expm1F(88.72f)));
  EXPECT_TRUE(std::isnan(expm1F(NAN)));
  EXPECT_EQ(expm1F(1e-10f), 1e-10f);
}

TEST(ElementaryFunctions, PowIsCorrectlyRoundedOnSamples) {
  // Bases over every binade and exponents that keep |y log2 x| <= 150, plus RoPE's 10000^t and
  // negative bases with integer exponents: each result is the f32 nearest the exact power
  // (glibc's f64 pow, whose own error is about 2^-29 of an f32 ulp).
  uint64_t state = 17;
  auto next = [&] { return state = mix64(state); };
  double worst = 0;
  int64_t misrounded = 0, ties = 0, count = 0;
  auto check = [&](float x, float y) {
    double ref = std::pow(static_cast<double>(x), static_cast<double>(y));
    float got = powF(x, y);
    if (!std::isfinite(ref) || std::fabs(ref) < 0x1p-126 || std::fabs(ref) > 0x1p127)
      return;
    ++count;
    worst = std::max(worst, ulpError(got, ref));
    float nearest = static_cast<float>(ref);
    // An exact tie (x^2 of a short mantissa) may go either way: 0.5 ulp, not ties-to-even.
    bool tie = static_cast<double>(nearest) + static_cast<double>(got) == 2 * ref;
    misrounded += got != nearest && !tie;
    ties += got != nearest && tie;
  };
  for (int k = 0; k < 1000000; ++k) {
    float x = floatOf(static_cast<uint32_t>(next() % 0x7f800000u)); // any positive finite
    double l = std::log2(static_cast<double>(x));
    float y = static_cast<float>((unitFloat(static_cast<uint32_t>(next())) * 2 - 1) * 150 /
                                 std::max(std::fabs(l), 1e-3));
    check(x, y);
    check(10000.0f, unitFloat(static_cast<uint32_t>(next())));
    check(-x, static_cast<float>(static_cast<int>(next() % 9) - 4));
  }
  recordMeasure("pow_max_ulp", worst);
  recordMeasure("pow_ties_not_to_even", static_cast<double>(ties));
  EXPECT_GT(count, 2000000);
  // The f64 y log2 x is off by up to about 2^-46 of its 150 or so: only a power that close to a
  // tie could round the other way (none does here, nor in 72 million samples), by at most
  // 2^-20 ulp past 0.5.
  EXPECT_EQ(misrounded, 0);
  EXPECT_LE(worst, 0.5 + 0x1p-20);
}

TEST(ElementaryFunctions, PowSpecialValuesAreCs) {
  const float values[] = {0.0f,  -0.0f,    1.0f,      -1.0f, 2.0f,    -2.0f,
                          0.5f,  -0.5f,    3.0f,      -3.0f, 1.5f,    -1.5f,
                          0x1p24f, -0x1p24f, 0x1p-149f, INFINITY, -INFINITY, NAN};
  for (float x : values)
    for (float y : values) {
      float want = std::pow(x, y), got = powF(x, y);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << x << " ^ " << y;
      else
        EXPECT_EQ(bitsOf(got), bitsOf(want)) << x << " ^ " << y << ": " << got << " vs " << want;
    }
  EXPECT_EQ(powF(10.0f, 3.0f), 1000.0f);
  EXPECT_EQ(powF(2.0f, -3.0f), 0.125f);
  EXPECT_EQ(powF(-2.0f, 5.0f), -32.0f);
  EXPECT_EQ(powF(2.0f, 128.0f), INFINITY);
  EXPECT_EQ(powF(2.0f, -149.0f), 0x1p-149f);
  EXPECT_EQ(powF(2.0f, -151.0f), 0.0f);
  EXPECT_EQ(powF(1e30f, 1e30f), INFINITY);
  EXPECT_EQ(powF(1e-30f, 1e30f), 0.0f);
}

TEST(ElementaryFunctions, Log1p) {
  double worst = worstUlpOver(1, 0x7f7fffffu, log1pF, [](double v) {
    return v <= -1 ? NAN : std::log1p(v);
  });
  float at = floatOf(0x3ecf9864u);
  worst = std::max(worst, ulpError(log1pF(at), std::log1p(double(at))));
  recordMeasure("log1p_max_ulp", worst);
  EXPECT_LE(worst, 0.8348); // rng.md: 0.834788, at 0x3ecf9864
  EXPECT_GT(worst, 0.8347);
  EXPECT_EQ(bitsOf(log1pF(0.0f)), 0u);
  EXPECT_EQ(bitsOf(log1pF(-0.0f)), 0x80000000u);
  EXPECT_EQ(log1pF(-1.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(log1pF(-1.5f)));
  EXPECT_TRUE(std::isnan(log1pF(-INFINITY)));
  EXPECT_TRUE(std::isnan(log1pF(NAN)));
  EXPECT_EQ(log1pF(INFINITY), INFINITY);
  EXPECT_EQ(log1pF(1e-10f), 1e-10f);
  EXPECT_NEAR(log1pF(3.4e38f), std::log1p(3.4e38), 1e-4);
}

TEST(ElementaryFunctions, SinCos2Pi) {
  double worst = 0;
  auto check = [&](float u) {
    double a = 2 * M_PI * static_cast<double>(u);
    worst = std::max(worst, std::fabs(sin2Pi(u) - std::sin(a)));
    worst = std::max(worst, std::fabs(cos2Pi(u) - std::cos(a)));
  };
  for (uint32_t i = 0; i <= 4000000; ++i)
    check(i / 4000000.0f);
  for (uint32_t m = 0; m < (1u << 23); m += 7)
    check(unitFloat(m << 9));
  check(floatOf(0x3e015633u)); // sin's worst in [0, 1]
  check(floatOf(0x3dfd539au)); // cos's
  recordMeasure("sincos_max_abs_error", worst);
  EXPECT_LE(worst, 9.216e-8); // rng.md: 9.21566e-8
  EXPECT_GT(worst, 9.215e-8);
  // Exact at the quadrant points.
  EXPECT_EQ(sin2Pi(0.0f), 0.0f);
  EXPECT_EQ(cos2Pi(0.0f), 1.0f);
  EXPECT_EQ(sin2Pi(0.25f), 1.0f);
  EXPECT_EQ(cos2Pi(0.5f), -1.0f);
  EXPECT_EQ(sin2Pi(0.75f), -1.0f);
  // Ties of 4u go up: 0.125 is in quadrant 1, so sin uses the cosine polynomial.
  EXPECT_EQ(sin2Pi(0.125f), cosPoly(-0.125f * kTwoPi));
}

double erfinvDouble(double y) {
  // Newton on erf from the single-precision guess.
  double x = erfinvF(static_cast<float>(y));
  for (int it = 0; it < 4; ++it)
    x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

TEST(ElementaryFunctions, Erfinv) {
  double worstRel = 0;
  auto check = [&](float x) {
    double ref = erfinvDouble(x);
    if (ref != 0)
      worstRel = std::max(worstRel, std::fabs(erfinvF(x) - ref) / std::fabs(ref));
  };
  for (int i = -999999; i <= 999999; ++i)
    check(i / 1000000.0f);
  for (uint32_t m = 0; m < (1u << 23); m += 13) // the tails: v = 2U - 1 near +-1
    check(2.0f * unitFloat(m << 9) - 1.0f);
  check(floatOf(0x3f7f5ebfu)); // the worst in [2^-125, 1)
  recordMeasure("erfinv_max_rel_error", worstRel);
  EXPECT_LE(worstRel, 2.773e-7); // rng.md: 2.7721e-7
  EXPECT_GT(worstRel, 2.772e-7);
  EXPECT_EQ(erfinvF(0.0f), 0.0f);
  EXPECT_EQ(erfinvF(1.0f), INFINITY);
  EXPECT_EQ(erfinvF(-1.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(erfinvF(1.5f)));
  EXPECT_TRUE(std::isnan(erfinvF(NAN)));
  EXPECT_EQ(erfinvF(-0.3f), -erfinvF(0.3f)); // odd
}

//===----------------------------------------------------------------------===//
// Rounding to bf16 and f16
//===----------------------------------------------------------------------===//

TEST(Rounding, BF16) {
  EXPECT_EQ(toBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(toBF16Bits(-2.0f), 0xc000);
  // Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(toBF16Bits(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(toBF16Bits(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);
  EXPECT_EQ(toBF16Bits(floatOf(0x3f808001u)), 0x3f81); // just above the tie
  EXPECT_EQ(toBF16Bits(floatOf(0x3f807fffu)), 0x3f80); // just below
  EXPECT_EQ(toBF16Bits(INFINITY), 0x7f80);
  EXPECT_EQ(toBF16Bits(-INFINITY), 0xff80);
  EXPECT_EQ(toBF16Bits(3.4028235e38f), 0x7f80); // FLT_MAX rounds up to inf
  EXPECT_EQ(toBF16Bits(floatOf(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(toBF16Bits(0.0f), 0x0000);
  EXPECT_EQ(toBF16Bits(-0.0f), 0x8000);
  EXPECT_EQ(toBF16Bits(floatOf(0x00018000u)), 0x0002); // subnormal tie, odd -> up
  EXPECT_EQ(toBF16Bits(floatOf(0x00008000u)), 0x0000); // subnormal tie, even -> down
  // NaN stays NaN and becomes quiet, even when its payload lives in the low bits only.
  EXPECT_EQ(toBF16Bits(floatOf(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(toBF16Bits(floatOf(0xffc00000u)), 0xffc0);
  EXPECT_EQ(toBF16Bits(floatOf(0x7fa00000u)), 0x7fe0);
  EXPECT_EQ(bitsOf(fromBF16Bits(0x3f81)), 0x3f810000u);
  // Round trip of every bf16 value.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7fff) <= 0x7f80)
      EXPECT_EQ(toBF16Bits(fromBF16Bits(static_cast<uint16_t>(h))), h);
  }
}

TEST(Rounding, F16) {
  EXPECT_EQ(toF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(toF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(toF16Bits(65504.0f), 0x7bff);
  EXPECT_EQ(toF16Bits(65519.996f), 0x7bff);
  EXPECT_EQ(toF16Bits(65520.0f), 0x7c00); // tie above the max rounds to inf
  EXPECT_EQ(toF16Bits(1e10f), 0x7c00);
  EXPECT_EQ(toF16Bits(-INFINITY), 0xfc00);
  EXPECT_EQ(toF16Bits(1.0f + 0x1p-11f), 0x3c00);              // tie, even
  EXPECT_EQ(toF16Bits(1.0f + 0x1p-10f + 0x1p-11f), 0x3c02);   // tie, odd -> up
  EXPECT_EQ(toF16Bits(0x1p-14f), 0x0400);                     // smallest normal
  EXPECT_EQ(toF16Bits(0x1p-24f), 0x0001);                     // smallest subnormal
  EXPECT_EQ(toF16Bits(0x1p-25f), 0x0000);                     // tie with zero, even
  EXPECT_EQ(toF16Bits(floatOf(0x33000001u)), 0x0001);         // just above that tie
  EXPECT_EQ(toF16Bits(3 * 0x1p-25f), 0x0002);                 // 1.5 ulp, tie -> even
  EXPECT_EQ(toF16Bits(0x1p-14f - 0x1p-26f), 0x0400);          // rounds up into the normals
  EXPECT_EQ(toF16Bits(-0x1p-20f), 0x8010);
  EXPECT_EQ(toF16Bits(1e-30f), 0x0000);
  EXPECT_EQ(toF16Bits(-0.0f), 0x8000);
  EXPECT_EQ(toF16Bits(floatOf(0x7f800001u)), 0x7e00);
  EXPECT_EQ(toF16Bits(floatOf(0xffc02000u)), 0xfe01);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7fff) <= 0x7c00)
      EXPECT_EQ(toF16Bits(fromF16Bits(static_cast<uint16_t>(h))), h);
  }
  EXPECT_EQ(fromF16Bits(0x0001), 0x1p-24f);
  EXPECT_EQ(fromF16Bits(0x83ff), -1023 * 0x1p-24f);
}

#ifdef __FLT16_MAX__
TEST(Rounding, F16MatchesCompilerConversion) {
  // The compiler's float -> _Float16 conversion is IEEE round-to-nearest-even.
  uint64_t mismatches = 0;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 1021) {
    float f = floatOf(static_cast<uint32_t>(b));
    if (std::isnan(f))
      continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    mismatches += hb != toF16Bits(f);
  }
  EXPECT_EQ(mismatches, 0u);
}
#endif

} // namespace
