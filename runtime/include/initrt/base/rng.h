//===- rng.h - Scalar reference of the initc RNG contract -------*- C++ -*-===//
//
// Every element of every parameter is a pure function of (seed, parameter name, stream, global
// row-major element index). This header is the executable form of ir-spec/rng.md: the compiler's
// vectorized expansion (compiler/lib/Random/Expand.cpp) must reproduce it bit for bit, and it
// reads its polynomial coefficients from here so that both share one source of truth.
//
// All float arithmetic is single precision with one IEEE round-to-nearest-even rounding per
// operation; the project compiles with -ffp-contract=off so no multiply-add is ever fused.
//
//===----------------------------------------------------------------------===//

#ifndef INITRT_RNG_H
#define INITRT_RNG_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace initrt::rng {

struct Key {
  uint32_t k0, k1;
};

//===----------------------------------------------------------------------===//
// Constants (ir-spec/rng.md lists the same values)
//===----------------------------------------------------------------------===//

// Philox4x32 (Random123 philox.h).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// Cephes logf: degree-8 polynomial in t = m - 1, m in [sqrt(1/2), sqrt(2)).
inline constexpr float kLogPoly[9] = {
    7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
    -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
    2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
inline constexpr float kSqrtHalf = 0.707106781186547524f;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits so e * kLn2Hi is exact.
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;

// Cephes sinf/cosf minimax polynomials on [-pi/4, pi/4], in z = t * t.
inline constexpr float kSinPoly[3] = {-1.9515295891E-4f, 8.3321608736E-3f,
                                      -1.6666654611E-1f};
inline constexpr float kCosPoly[3] = {2.443315711809948E-5f, -1.388731625493765E-3f,
                                      4.166664568298827E-2f};
inline constexpr float kTwoPi = 6.28318530717958647692f;

// Cephes expf.
inline constexpr float kExpPoly[6] = {1.9875691500E-4f, 1.3981999507E-3f,
                                      8.3334519073E-3f, 4.1665795894E-2f,
                                      1.6666665459E-1f, 5.0000001201E-1f};
inline constexpr float kLog2e = 1.44269504088896341f;
// Arguments are clamped to [kExpMin, kExpMax] before reduction; beyond those the exact result
// is already 0 (below 2^-150) or +inf, which the clamped computation reproduces.
inline constexpr float kExpMin = -104.0f;
inline constexpr float kExpMax = 89.0f;

// fdlibm expm1f/log1pf (as in musl). ln 2 = kFdLn2Hi + kFdLn2Lo; kFdLn2Hi has 16 significant
// bits so k * kFdLn2Hi is exact for the |k| <= 128 they meet.
inline constexpr float kFdLn2Hi = 0x1.62e3p-1f;     // 3f317180
inline constexpr float kFdLn2Lo = 0x1.2fefa2p-17f;  // 3717f7d1
inline constexpr float kFdInvLn2 = 0x1.715476p+0f;  // 3fb8aa3b
// expm1f: the rational approximation's Q1, Q2 on [-0.5 ln 2, 0.5 ln 2] (scaled as fdlibm's).
inline constexpr float kExpm1Q1 = -0x888868.0p-28f; // bd088868
inline constexpr float kExpm1Q2 = 0xcf3010.0p-33f;  // 3acf3010
// Above this expm1 overflows; from 27 ln 2 down it is -1.
inline constexpr float kExpm1Overflow = 0x1.62e3p+6f; // 42b17180 (88.7216796875)
inline constexpr uint32_t kExpm1MinusOneBits = 0x4195b844u; // |x| >= 27 ln 2
// log1pf: Lg1..Lg4 of log(1 + s) - log(1 - s) ~ s * Lg(s^2).
inline constexpr float kLog1pLg[4] = {0xaaaaaa.0p-24f, 0xccce13.0p-25f, 0x91e9ee.0p-25f,
                                      0xf89e26.0p-26f};

// pow: f64 log2 and exp2, one rounding to f32 at the end. kPowAtanh[k] = 1 / (21 - 2k), the
// series of atanh(s) / s in z = s^2 (|s| <= 3 - 2 sqrt 2, so z^11 / 23 < 2^-59); kPowExp2[k] =
// 1 / (13 - k)!, the Taylor series of exp(g) (|g| <= ln(2) / 2, so g^14 / 14! < 2^-57).
inline constexpr double kPowAtanh[11] = {1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11,
                                         1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};
inline constexpr double kPowExp2[14] = {
    1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
    1.0 / 40320,      1.0 / 5040,      1.0 / 720,      1.0 / 120,     1.0 / 24,
    1.0 / 6,          1.0 / 2,         1.0,            1.0};
inline constexpr double kPowSqrt2 = 0x1.6a09e667f3bcdp+0;      // sqrt(2)
inline constexpr double kPowTwoOverLn2 = 0x1.71547652b82fep+1; // 2 / ln 2
inline constexpr double kPowLn2 = 0x1.62e42fefa39efp-1;        // ln 2
// y log2|x| is clamped to this magnitude: 2^200 overflows an f32 and 2^-200 rounds to 0.
inline constexpr double kPowExponentMax = 200.0;

// Giles (2010), "Approximating the erfinv function", single precision.
inline constexpr float kErfinvCentral[9] = {
    2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
    -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
    -0.00417768164f,  0.246640727f,    1.50140941f};
inline constexpr float kErfinvTail[9] = {
    -0.000200214257f, 0.000100950558f, 0.00134934322f,
    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
    0.00943887047f,   1.00167406f,     2.83297682f};

//===----------------------------------------------------------------------===//
// Bits
//===----------------------------------------------------------------------===//

inline uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

//===----------------------------------------------------------------------===//
// Key and counter (rules 1 and 2)
//===----------------------------------------------------------------------===//

inline uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = kFnvOffset;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnvPrime;
  }
  return h;
}

// SplitMix64 step: golden-ratio increment, then the finalizer.
inline uint64_t mix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline Key deriveKey(uint64_t seed, std::string_view name, uint64_t stream) {
  uint64_t k = mix64(mix64(mix64(seed) ^ fnv1a64(name)) ^ stream);
  return Key{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

// Random123 Philox4x32-R: round 1 uses the key as given, each later round bumps it first.
inline void philox4x32(const uint32_t ctr[4], Key key, uint32_t out[4],
                       int rounds = kPhiloxRounds) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key.k0, k1 = key.k1;
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = static_cast<uint32_t>(p1);
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

// The four words of counter block b = i >> 2: ctr = (lo32(b), hi32(b), 0, 0).
inline void philoxBlock(Key key, uint64_t block, uint32_t out[4]) {
  const uint32_t ctr[4] = {static_cast<uint32_t>(block),
                           static_cast<uint32_t>(block >> 32), 0, 0};
  philox4x32(ctr, key, out);
}

// The word x_j, j = i & 3, that feeds element i of a uniform or truncated normal.
inline uint32_t wordAt(Key key, uint64_t i) {
  uint32_t x[4];
  philoxBlock(key, i >> 2, x);
  return x[i & 3];
}

//===----------------------------------------------------------------------===//
// Uniform bits to float (rule 3)
//===----------------------------------------------------------------------===//

// (2 * (x >> 9) + 1) * 2^-24: 24 significant bits, so exact; in [2^-24, 1 - 2^-24], never 0
// or 1, and symmetric: unitFloat(~x) == 1 - unitFloat(x).
inline float unitFloat(uint32_t x) {
  return static_cast<float>(static_cast<int32_t>(((x >> 9) << 1) | 1u)) * 0x1p-24f;
}

//===----------------------------------------------------------------------===//
// Elementary functions (rule 7): +, -, *, /, sqrt, comparisons, selects, bit casts and
// integer ops only, in exactly the order the compiler's expansion emits them.
//===----------------------------------------------------------------------===//

template <int N>
inline float horner(const float (&c)[N], float x) {
  float p = c[0];
  for (int k = 1; k < N; ++k)
    p = p * x + c[k];
  return p;
}

// Cephes logf. Subnormals are scaled by 2^23 first; 0 -> -inf, < 0 -> NaN, +inf -> +inf,
// NaN -> NaN.
inline float logF(float x) {
  bool sub = x < 0x1p-126f;
  float xs = sub ? x * 0x1p23f : x;
  uint32_t b = bitsOf(xs);
  int32_t e = static_cast<int32_t>((b >> 23) & 0xffu) - 126 - (sub ? 23 : 0);
  float m = floatOf((b & 0x007fffffu) | 0x3f000000u); // frexp mantissa in [0.5, 1)
  bool small = m < kSqrtHalf;
  e = small ? e - 1 : e;
  float t = small ? (m + m) - 1.0f : m - 1.0f;
  float fe = static_cast<float>(e);
  float z = t * t;
  float y = (horner(kLogPoly, t) * t) * z;
  y = y + kLn2Lo * fe;
  y = y - 0.5f * z;
  float r = t + y;
  r = r + kLn2Hi * fe;
  if (x == 0.0f)
    return -INFINITY;
  if (x < 0.0f)
    return NAN;
  if (x == INFINITY)
    return INFINITY;
  if (x != x)
    return x;
  return r;
}

// Cephes expf, with ldexp done as two exact power-of-two scalings so that a subnormal result
// is rounded once. Overflow gives +inf, underflow 0, NaN stays NaN.
inline float expF(float x) {
  float xc = x >= kExpMin ? x : kExpMin; // NaN takes kExpMin, replaced at the end
  xc = xc > kExpMax ? kExpMax : xc;
  float v = kLog2e * xc + 0.5f;
  int32_t n = static_cast<int32_t>(v); // truncation, then floor
  n = static_cast<float>(n) > v ? n - 1 : n;
  float fn = static_cast<float>(n);
  float r = xc - fn * kLn2Hi;
  r = r - fn * kLn2Lo;
  float z = r * r;
  float y = (horner(kExpPoly, r) * z + r) + 1.0f;
  int32_t n1 = n >> 1; // arithmetic shift: floor(n / 2)
  int32_t n2 = n - n1;
  y = y * floatOf(static_cast<uint32_t>(n1 + 127) << 23);
  y = y * floatOf(static_cast<uint32_t>(n2 + 127) << 23);
  return x != x ? x : y;
}

// 2^k * y for an int k in [-252, 254], as two exact power-of-two scalings (y * 2^k when that is a
// normal float; overflow gives inf).
inline float scaleByPowerOfTwo(float y, int32_t k) {
  int32_t k1 = k >> 1; // arithmetic shift: floor(k / 2)
  int32_t k2 = k - k1;
  y = y * floatOf(static_cast<uint32_t>(k1 + 127) << 23);
  return y * floatOf(static_cast<uint32_t>(k2 + 127) << 23);
}

// fdlibm expm1f with every branch computed and one selected. NaN stays NaN, x <= -27 ln 2 gives
// -1, x > kExpm1Overflow +inf, |x| < 2^-25 (zeros and subnormals too) x itself.
inline float expm1F(float x) {
  uint32_t hx = bitsOf(x) & 0x7fffffffu;
  float xc = x >= -32.0f ? x : -32.0f; // NaN takes -32, replaced at the end
  xc = xc > 90.0f ? 90.0f : xc;
  bool negative = xc < 0.0f;
  // k = 0 for |x| <= 0.5 ln 2, +-1 below 1.5 ln 2, else round(x / ln 2) (ties away from 0).
  int32_t kRound = static_cast<int32_t>(kFdInvLn2 * xc + (negative ? -0.5f : 0.5f));
  int32_t kOne = negative ? -1 : 1;
  int32_t k = hx < 0x3f851592u ? kOne : kRound;
  k = hx <= 0x3eb17218u ? 0 : k;
  float fk = static_cast<float>(k);
  float hi = xc - fk * kFdLn2Hi;
  float lo = fk * kFdLn2Lo;
  float r = hi - lo;       // x - k ln 2, |r| <= 0.5 ln 2 (about)
  float c = (hi - r) - lo; // what r lost
  float hfx = 0.5f * r;
  float hxs = r * hfx;
  float r1 = 1.0f + hxs * (kExpm1Q1 + hxs * kExpm1Q2);
  float t = 3.0f - r1 * hfx;
  float e = hxs * ((r1 - t) / (6.0f - r * t));
  float atZero = r - (r * e - hxs); // k == 0: c is 0
  e = r * (e - c) - c;
  e = e - hxs;
  // exp(x) - 1 = 2^k (r - e + 1) - 1, arranged per k so that the last rounding is the only big one.
  float atMinusOne = 0.5f * (r - e) - 0.5f;
  float atOne = r < -0.25f ? -2.0f * (e - (r + 0.5f)) : 1.0f + 2.0f * (r - e);
  float wide = scaleByPowerOfTwo((r - e) + 1.0f, k) - 1.0f; // k < 0 or k > 56
  float twoToK = floatOf(static_cast<uint32_t>(k + 127) << 23);
  float twoToMinusK = floatOf(static_cast<uint32_t>(127 - k) << 23);
  float middle = ((r - e) + (1.0f - twoToMinusK)) * twoToK;   // 2 <= k < 23
  float upper = (((r - e) - twoToMinusK) + 1.0f) * twoToK;    // 23 <= k <= 56
  float y = k < 23 ? middle : upper;
  y = (k < 0 || k > 56) ? wide : y;
  y = k == 1 ? atOne : y;
  y = k == -1 ? atMinusOne : y;
  y = k == 0 ? atZero : y;
  y = hx < 0x33000000u ? x : y;
  y = x > kExpm1Overflow ? INFINITY : y;
  y = (x < 0.0f && hx >= kExpm1MinusOneBits) ? -1.0f : y;
  return x != x ? x : y;
}

// fdlibm log1pf with every branch computed and one selected. -1 -> -inf, below -1 -> NaN,
// +inf -> +inf, NaN stays NaN, |x| < 2^-24 (zeros and subnormals too) x itself.
inline float log1pF(float x) {
  uint32_t ix = bitsOf(x);
  // Reduction: 1 + x = 2^k * (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)), and c the error of 1 + x.
  float u = 1.0f + x;
  uint32_t iu = bitsOf(u) + (0x3f800000u - 0x3f3504f3u);
  int32_t k = static_cast<int32_t>(iu >> 23) - 0x7f;
  float c = k >= 2 ? 1.0f - (u - x) : x - (u - 1.0f);
  c = k < 25 ? c / u : 0.0f;
  float f = floatOf((iu & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  // sqrt(2)/2 <= 1 + x < sqrt(2): no reduction.
  bool near = ix < 0x3ed413d0u || (ix >= 0x80000000u && ix <= 0xbe95f619u);
  k = near ? 0 : k;
  c = near ? 0.0f : c;
  f = near ? x : f;
  float s = f / (2.0f + f);
  float z = s * s;
  float w = z * z;
  float t1 = w * (kLog1pLg[1] + w * kLog1pLg[3]);
  float t2 = z * (kLog1pLg[0] + w * kLog1pLg[2]);
  float rr = t2 + t1;
  float hfsq = (0.5f * f) * f;
  float dk = static_cast<float>(k);
  float y = s * (hfsq + rr) + (dk * kFdLn2Lo + c);
  y = ((y - hfsq) + f) + dk * kFdLn2Hi;
  y = (ix & 0x7fffffffu) < 0x33800000u ? x : y;
  y = x == INFINITY ? x : y;
  y = x < -1.0f ? NAN : y;
  y = x == -1.0f ? -INFINITY : y;
  return x != x ? x : y;
}

inline uint64_t bitsOf(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

inline double doubleOf(uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

template <int N>
inline double horner(const double (&c)[N], double x) {
  double p = c[0];
  for (int k = 1; k < N; ++k)
    p = p * x + c[k];
  return p;
}

// |x|^y for a finite positive x, before rounding: log2 x = e + log2 m with m in [sqrt(1/2),
// sqrt(2)] (log m = 2 atanh((m - 1) / (m + 1))), then 2^t = 2^n * exp((t - n) ln 2), all in f64.
// The f64 result is within about 2^-46 of |x|^y relative, so its one rounding to f32 is the
// correct one but for powers that close to a tie (rng.md: at most 0.5 + 2^-20 ulp).
inline double powMagnitude(float ax, float y) {
  uint64_t b = bitsOf(static_cast<double>(ax));
  int32_t e = static_cast<int32_t>((b >> 52) & 0x7ff) - 1023;
  double m = doubleOf((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull); // in [1, 2)
  bool high = m > kPowSqrt2;
  m = high ? m * 0.5 : m;
  e = high ? e + 1 : e;
  double s = (m - 1.0) / (m + 1.0); // m - 1 exact
  double log2x = static_cast<double>(e) + (s * horner(kPowAtanh, s * s)) * kPowTwoOverLn2;
  double t = static_cast<double>(y) * log2x;
  t = t >= -kPowExponentMax ? t : -kPowExponentMax; // NaN takes the minimum (never selected)
  t = t > kPowExponentMax ? kPowExponentMax : t;
  double v = t + 0.5;
  int32_t n = static_cast<int32_t>(v);
  n = static_cast<double>(n) > v ? n - 1 : n; // floor: n = round(t), ties up
  double g = (t - static_cast<double>(n)) * kPowLn2; // t - n exact, |g| <= ln(2) / 2
  double p = horner(kPowExp2, g);
  return p * doubleOf(static_cast<uint64_t>(n + 1023) << 52); // exact: 2^n is a normal f64
}

// x^y as C's powf and torch.pow define it, every case computed and one selected: a negative x
// takes an integer y's parity (a non-integer y gives NaN), zeros and infinities give 0 or inf
// with that sign, y = +-inf gives 0, 1 or inf by |x| against 1, NaN gives NaN, and x == 1 or
// y == 0 gives 1 whatever the other is.
inline float powF(float x, float y) {
  float ax = std::fabs(x), ay = std::fabs(y);
  // y's parity: every f32 of magnitude 2^24 and up is an even integer.
  bool yBig = !(ay < 0x1p24f);
  int32_t yi = static_cast<int32_t>(yBig ? 0.0f : y);
  bool yInt = yBig || static_cast<float>(yi) == y;
  bool yOdd = !yBig && static_cast<float>(yi) == y && (yi & 1) != 0;
  bool negative = (bitsOf(x) >> 31) != 0 && yOdd; // the result's sign
  float mag = static_cast<float>(powMagnitude(ax, y));
  float r = negative ? -mag : mag;
  r = (x < 0.0f && x > -INFINITY && !yInt) ? NAN : r;
  float edge = (ax == 0.0f) == (y < 0.0f) ? INFINITY : 0.0f; // x = +-0 or +-inf
  r = (ax == 0.0f || ax == INFINITY) ? (negative ? -edge : edge) : r;
  float side = (ax > 1.0f) == (y > 0.0f) ? INFINITY : 0.0f; // y = +-inf
  r = ay == INFINITY ? (ax == 1.0f ? 1.0f : side) : r;
  r = (x != x || y != y) ? NAN : r;
  return (x == 1.0f || y == 0.0f) ? 1.0f : r;
}

// Reduction on the turn: u = q / 4 + r exactly, q = round-half-up(4u), |r| <= 1/8.
inline void reduceTurn(float u, int32_t &q, float &t) {
  float u4 = u * 4.0f;
  int32_t n = static_cast<int32_t>(u4);
  float f = u4 - static_cast<float>(n);
  q = f >= 0.5f ? n + 1 : n;
  float r = u - static_cast<float>(q) * 0.25f;
  t = r * kTwoPi;
}

inline float sinPoly(float t) {
  float z = t * t;
  return ((horner(kSinPoly, z) * z) * t) + t;
}

inline float cosPoly(float t) {
  float z = t * t;
  float y = (horner(kCosPoly, z) * z) * z;
  y = y - 0.5f * z;
  return y + 1.0f;
}

// sin(q * pi / 2 + t).
inline float sinQuadrant(int32_t q, float t) {
  switch (q & 3) {
  case 0:
    return sinPoly(t);
  case 1:
    return cosPoly(t);
  case 2:
    return -sinPoly(t);
  default:
    return -cosPoly(t);
  }
}

// sin(2 pi u) and cos(2 pi u) for u in [0, 1]; cos is sin one quadrant further on.
inline float sin2Pi(float u) {
  int32_t q;
  float t;
  reduceTurn(u, q, t);
  return sinQuadrant(q, t);
}

inline float cos2Pi(float u) {
  int32_t q;
  float t;
  reduceTurn(u, q, t);
  return sinQuadrant(q + 1, t);
}

// Giles' single-precision erfinv; both branches are computed and one selected.
// +-1 -> +-inf, |x| > 1 or NaN -> NaN.
inline float erfinvF(float x) {
  float w = -logF((1.0f - x) * (1.0f + x));
  float wc = w - 2.5f;
  float pc = horner(kErfinvCentral, wc);
  float wt = std::sqrt(w) - 3.0f;
  float pt = horner(kErfinvTail, wt);
  float p = w < 5.0f ? pc : pt;
  return std::fabs(x) == 1.0f ? x * INFINITY : p * x;
}

//===----------------------------------------------------------------------===//
// Distributions (rules 4-6)
//===----------------------------------------------------------------------===//

// value = low + width * U, the constants rounded to f32 once, at compile time.
struct UniformParams {
  float low, width;
};

inline UniformParams uniformParams(double low, double high) {
  return UniformParams{static_cast<float>(low), static_cast<float>(high - low)};
}

struct TruncNormalParams {
  UniformParams v;  // v = uniform(2l - 1, 2h - 1)
  float scale;      // std * sqrt(2)
  float mean, a, b; // y = erfinv(v) * scale + mean, clamped to [a, b]
};

inline double normalCdf(double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; }

inline TruncNormalParams truncNormalParams(double mean, double stdev, double a, double b) {
  double l = normalCdf((a - mean) / stdev);
  double h = normalCdf((b - mean) / stdev);
  return TruncNormalParams{uniformParams(2.0 * l - 1.0, 2.0 * h - 1.0),
                           static_cast<float>(stdev * std::sqrt(2.0)),
                           static_cast<float>(mean), static_cast<float>(a),
                           static_cast<float>(b)};
}

inline float uniformFromWord(uint32_t x, UniformParams p) {
  return p.low + p.width * unitFloat(x);
}

inline float uniformAt(Key key, uint64_t i, double low, double high) {
  return uniformFromWord(wordAt(key, i), uniformParams(low, high));
}

// Standard normal of element i: Box-Muller on the lane pair (x_{2p}, x_{2p+1}), p = j >> 1;
// even lanes take the cosine, odd lanes the sine.
inline float standardNormalAt(Key key, uint64_t i) {
  uint32_t x[4];
  philoxBlock(key, i >> 2, x);
  unsigned j = static_cast<unsigned>(i & 3), p = j >> 1;
  float u1 = unitFloat(x[2 * p]);
  float u2 = unitFloat(x[2 * p + 1]);
  float r = std::sqrt(-2.0f * logF(u1));
  return (j & 1) == 0 ? r * cos2Pi(u2) : r * sin2Pi(u2);
}

inline float normalAt(Key key, uint64_t i, double mean, double stdev) {
  return static_cast<float>(mean) + static_cast<float>(stdev) * standardNormalAt(key, i);
}

inline float truncNormalFromWord(uint32_t x, const TruncNormalParams &p) {
  float v = uniformFromWord(x, p.v);
  float y = erfinvF(v) * p.scale + p.mean;
  y = y < p.a ? p.a : y; // max, then min; a NaN would pass through
  y = y > p.b ? p.b : y;
  return y;
}

inline float truncNormalAt(Key key, uint64_t i, double mean, double stdev, double a,
                           double b) {
  return truncNormalFromWord(wordAt(key, i), truncNormalParams(mean, stdev, a, b));
}

//===----------------------------------------------------------------------===//
// Rounding to the parameter dtype (rule 8)
//===----------------------------------------------------------------------===//

// Round to nearest even; NaN keeps its sign and top payload bits and becomes quiet.
inline uint16_t toBF16Bits(float f) {
  uint32_t b = bitsOf(f);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((b >> 16) | 0x0040u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

inline float fromBF16Bits(uint16_t h) { return floatOf(static_cast<uint32_t>(h) << 16); }

// IEEE binary16, round to nearest even, with subnormals; overflow -> inf; NaN -> quiet NaN
// keeping sign and top payload bits.
inline uint16_t toF16Bits(float f) {
  uint32_t b = bitsOf(f);
  uint32_t sign = (b >> 16) & 0x8000u;
  uint32_t a = b & 0x7fffffffu;
  uint32_t r;
  if (a > 0x7f800000u) {
    r = 0x7e00u | ((a >> 13) & 0x3ffu);
  } else if (a >= 0x477ff000u) { // >= 65520 rounds to inf
    r = 0x7c00u;
  } else if (a >= 0x38800000u) { // normal half: rebias the exponent, round off 13 bits
    uint32_t v = a - 0x38000000u;
    r = (v + 0xfffu + ((v >> 13) & 1u)) >> 13;
  } else { // subnormal half (or zero): value / 2^-24, rounded to nearest even
    int32_t e = static_cast<int32_t>(a >> 23);
    uint32_t m = (a & 0x007fffffu) | 0x00800000u;
    int32_t shift = 126 - e;
    shift = shift < 14 ? 14 : (shift > 25 ? 25 : shift);
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  }
  return static_cast<uint16_t>(sign | r);
}

inline float fromF16Bits(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f)
    return floatOf(sign | 0x7f800000u | (m << 13));
  if (e != 0)
    return floatOf(sign | ((e + 112u) << 23) | (m << 13));
  // Subnormal or zero: m * 2^-24 is exact in f32.
  float v = static_cast<float>(m) * 0x1p-24f;
  return floatOf(sign | bitsOf(v));
}

//===----------------------------------------------------------------------===//
// The one NaN of a result (rule 9)
//===----------------------------------------------------------------------===//

// A result element that is NaN is stored as its type's positive quiet NaN with no other
// payload bit, whatever NaN the operations made: CPUs differ there (x86's default NaN is
// negative, AArch64's positive; an operation on two NaNs keeps one of them, which one depends
// on the instruction's operand order). Each 16-bit one is rule 8's rounding of the f32 one.
inline constexpr uint32_t kCanonicalNaNF32 = 0x7fc00000u;
inline constexpr uint64_t kCanonicalNaNF64 = 0x7ff8000000000000ull;
inline constexpr uint16_t kCanonicalNaNBF16 = 0x7fc0u;
inline constexpr uint16_t kCanonicalNaNF16 = 0x7e00u;

inline float canonicalNaN(float x) { return x != x ? floatOf(kCanonicalNaNF32) : x; }

inline double canonicalNaN(double x) {
  if (x == x)
    return x;
  double nan;
  std::memcpy(&nan, &kCanonicalNaNF64, sizeof nan);
  return nan;
}

} // namespace initrt::rng

#endif // INITRT_RNG_H
