// initrt::OrthogonalMatrix: orthogonal and the unique QR (a non-negative diagonal of R), and bit
// for bit the unblocked algorithm of its specification, whatever the blocking and the threads.
#include "executor/orthogonal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace initrt;

namespace {

std::vector<float> normalMatrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(size_t(rows * cols));
  for (float &value : values)
    value = normal(generator);
  return values;
}

// The dot product of ir-spec/dialect.md (init.orthogonal), written as the text says.
double specDot(const double *x, const double *y, int64_t len) {
  double s[8] = {};
  for (int64_t i = 0; i < len; ++i)
    s[i % 8] += x[i] * y[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// The unblocked Householder QR of the specification, one reflector at a time over every column
// right of it, then Q from the last reflector to the first: rows x cols, row-major, times gain.
std::vector<double> specOrthogonal(const std::vector<float> &normal, int64_t rows, int64_t cols,
                                   double gain) {
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  std::vector<double> a(size_t(m * n)), v(size_t(m * n), 0.0), beta(size_t(n), 0.0);
  std::vector<bool> negative(size_t(n), false);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      a[size_t(i + j * m)] =
          wide ? double(normal[size_t(j * cols + i)]) : double(normal[size_t(i * cols + j)]);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t len = m - k;
    const double *x = &a[size_t(k * m + k)];
    double *vk = &v[size_t(k * m + k)];
    const double norm = std::sqrt(specDot(x, x, len));
    const double alpha = x[0] >= 0 ? -norm : norm;
    for (int64_t i = 0; i < len; ++i)
      vk[i] = x[i];
    vk[0] -= alpha;
    const double vnorm2 = specDot(vk, vk, len);
    negative[size_t(k)] = norm != 0 && alpha < 0;
    beta[size_t(k)] = vnorm2 == 0 ? 0.0 : 2.0 / vnorm2;
    if (beta[size_t(k)] == 0)
      continue;
    for (int64_t j = k + 1; j < n; ++j) {
      double *c = &a[size_t(j * m + k)];
      const double s = specDot(vk, c, len) * beta[size_t(k)];
      for (int64_t i = 0; i < len; ++i)
        c[i] -= s * vk[i];
    }
  }
  std::vector<double> q(size_t(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j)
    q[size_t(j + j * m)] = 1.0;
  for (int64_t k = n - 1; k >= 0; --k) {
    if (beta[size_t(k)] == 0)
      continue;
    const double *vk = &v[size_t(k * m + k)];
    for (int64_t j = k; j < n; ++j) {
      double *c = &q[size_t(j * m + k)];
      const double s = specDot(vk, c, m - k) * beta[size_t(k)];
      for (int64_t i = 0; i < m - k; ++i)
        c[i] -= s * vk[i];
    }
  }
  std::vector<double> out(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = wide ? c : r, j = wide ? r : c;
      const double value = q[size_t(i + j * m)] * (negative[size_t(j)] ? -gain : gain);
      out[size_t(r * cols + c)] = value;
    }
  return out;
}

std::vector<double> elements(const OrthogonalMatrix &q, int64_t rows, int64_t cols, double gain) {
  std::vector<double> out(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[size_t(r * cols + c)] = q.at(r, c, gain);
  return out;
}

// The shorter side's vectors of `q` (rows x cols, row-major) are orthonormal to `tolerance`.
void expectOrthonormal(const std::vector<double> &q, int64_t rows, int64_t cols, double tolerance) {
  const bool wide = rows < cols;
  const int64_t n = wide ? rows : cols, len = wide ? cols : rows;
  auto at = [&](int64_t vector, int64_t i) {
    return wide ? q[size_t(vector * cols + i)] : q[size_t(i * cols + vector)];
  };
  double worst = 0;
  for (int64_t p = 0; p < n; ++p)
    for (int64_t r = p; r < n; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < len; ++i)
        sum += at(p, i) * at(r, i);
      worst = std::max(worst, std::abs(sum - (p == r ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, tolerance) << rows << "x" << cols;
}

struct Shape {
  int64_t rows, cols;
};

TEST(OrthogonalMatrix, IsTheUnblockedAlgorithmBitForBitWhateverTheBlocksThreadsAndVectors) {
  // Panels of 64 columns (150 rows) and of 4 (9000 and 40000 rows, the first over 16 panels);
  // 300 x 300 and the long ones are factored on several threads; the last has a zero column
  // and a repeated one.
  const Shape shapes[] = {{1, 1},     {2, 1},     {1, 3},     {7, 5},     {5, 7},
                          {9, 9},     {33, 17},   {17, 33},   {150, 140}, {300, 300},
                          {40000, 6}, {6, 40000}, {9000, 64}, {300, 260}};
  for (const Shape &shape : shapes) {
    std::vector<float> normal = normalMatrix(shape.rows, shape.cols, 7);
    if (shape.rows == 300 && shape.cols == 260)
      for (int64_t i = 0; i < shape.rows; ++i) {
        normal[size_t(i * shape.cols + 4)] = 0.0f;
        normal[size_t(i * shape.cols + 9)] = normal[size_t(i * shape.cols + 8)];
      }
    const std::vector<double> expected = specOrthogonal(normal, shape.rows, shape.cols, 1.5);
    using Loops = OrthogonalMatrix::Loops;
    for (Loops loops : {Loops::Widest, Loops::Avx2, Loops::Portable})
      for (int threads : {1, 3}) {
        OrthogonalMatrix::loops = loops;
        const OrthogonalMatrix q(normal, shape.rows, shape.cols, threads);
        OrthogonalMatrix::loops = Loops::Widest;
        const std::vector<double> got = elements(q, shape.rows, shape.cols, 1.5);
        ASSERT_EQ(got.size(), expected.size());
        size_t differing = 0;
        for (size_t i = 0; i < got.size(); ++i)
          differing += std::memcmp(&got[i], &expected[i], sizeof(double)) != 0;
        const char *names[] = {"the widest vectors", "AVX2 at most", "the portable build"};
        EXPECT_EQ(differing, 0u) << shape.rows << "x" << shape.cols << " on " << threads
                                 << " threads, " << names[int(loops)];
      }
  }
}

TEST(OrthogonalMatrix, IsOrthogonalAndTheQOfTheUniqueQr) {
  for (const Shape &shape : {Shape{64, 40}, Shape{40, 64}, Shape{200, 200}}) {
    const int64_t rows = shape.rows, cols = shape.cols;
    const std::vector<float> normal = normalMatrix(rows, cols, 11);
    const std::vector<double> q = elements(OrthogonalMatrix(normal, rows, cols, 2), rows, cols, 1);
    expectOrthonormal(q, rows, cols, 1e-12);
    // R = Q^T A (of the matrix, or of its transpose when wide) is upper triangular with a
    // non-negative diagonal: what makes the factorization, and so the result, unique.
    const bool wide = rows < cols;
    const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
    auto A = [&](int64_t i, int64_t j) {
      return double(wide ? normal[size_t(j * cols + i)] : normal[size_t(i * cols + j)]);
    };
    auto Q = [&](int64_t i, int64_t j) {
      return wide ? q[size_t(j * cols + i)] : q[size_t(i * cols + j)];
    };
    double belowDiagonal = 0, smallestDiagonal = 1e300;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0;
        for (int64_t i = 0; i < m; ++i)
          sum += Q(i, r) * A(i, c);
        if (r > c)
          belowDiagonal = std::max(belowDiagonal, std::abs(sum));
        if (r == c)
          smallestDiagonal = std::min(smallestDiagonal, sum);
      }
    EXPECT_LT(belowDiagonal, 1e-10) << rows << "x" << cols;
    EXPECT_GT(smallestDiagonal, 0.0) << rows << "x" << cols;
  }
}

TEST(OrthogonalMatrix, ZeroAndDependentColumnsStayOrthonormal) {
  // All zeros: no reflector does anything, Q is [I; 0].
  const OrthogonalMatrix zeros(std::vector<float>(12, 0.0f), 4, 3, 1);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(zeros.at(r, c, 2.0), r == c ? 2.0 : 0.0) << r << "," << c;
  // A zero column and a repeated one: rank-deficient, still an orthonormal Q, no NaN.
  const int64_t rows = 50, cols = 20;
  std::vector<float> normal = normalMatrix(rows, cols, 3);
  for (int64_t i = 0; i < rows; ++i) {
    normal[size_t(i * cols + 4)] = 0.0f;
    normal[size_t(i * cols + 9)] = normal[size_t(i * cols + 8)];
  }
  const std::vector<double> q = elements(OrthogonalMatrix(normal, rows, cols, 1), rows, cols, 1.0);
  for (double value : q)
    ASSERT_TRUE(std::isfinite(value));
  expectOrthonormal(q, rows, cols, 1e-12);
}

TEST(OrthogonalMatrix, ReportsItsProgressInOrderOnTheCallingThread) {
  const std::vector<float> normal = normalMatrix(400, 300, 5);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<double> fractions;
  bool elsewhere = false;
  const OrthogonalMatrix q(
      normal, 400, 300, 2,
      [&](double fraction) {
        fractions.push_back(fraction);
        elsewhere |= std::this_thread::get_id() != caller;
      },
      0.0);
  ASSERT_FALSE(fractions.empty());
  EXPECT_FALSE(elsewhere);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_GE(fractions.front(), 0.0);
  EXPECT_LE(fractions.back(), 1.0);
  EXPECT_GT(fractions.back(), 0.5); // reported while Q, the second half of the work, is formed
  // The same bits with or without a progress callback.
  const OrthogonalMatrix quiet(normal, 400, 300, 2);
  for (int64_t r = 0; r < 400; r += 7)
    for (int64_t c = 0; c < 300; c += 5)
      ASSERT_EQ(q.at(r, c, 1.0), quiet.at(r, c, 1.0));
}

TEST(OrthogonalMatrix, FlopsOfASquareAndATallMatrix) {
  EXPECT_DOUBLE_EQ(orthogonalFlops(3, 3), 2 * (2 * 27.0 - 2 * 27.0 / 3));
  EXPECT_DOUBLE_EQ(orthogonalFlops(2, 10), orthogonalFlops(10, 2));
  EXPECT_DOUBLE_EQ(orthogonalFlops(10, 2), 2 * (2 * 10 * 4.0 - 2 * 8.0 / 3));
}

} // namespace
