#include "executor/orthogonal.h"

#include "initrt/base/cpu.h"
#include "executor/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace initrt {
namespace {

// Eight running sums, one per lane of an eight-double vector: the compiler builds it from the
// vectors the target has (four SSE2 registers, two AVX ones, one AVX-512 one), lane for lane, so
// the arithmetic is the same everywhere. The project builds with -ffp-contract=off: a product
// and a sum never fuse.
constexpr int64_t kLanes = 8;
using Lanes = double __attribute__((vector_size(kLanes * sizeof(double))));
// Functions taking or returning Lanes are always inlined, so no call passes one and GCC's
// note that the ABI of such calls differs with and without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

[[gnu::always_inline]] inline Lanes load(const double *p) {
  Lanes x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

[[gnu::always_inline]] inline void store(double *p, Lanes x) { std::memcpy(p, &x, sizeof x); }

// The running sums of a dot product, added in their fixed order.
[[gnu::always_inline]] inline double addLanes(const double *s) {
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// x . y_j over [0, len) for each of the `Columns` vectors y: eight running sums, sum l taking
// x_i y_i for i mod 8 = l in order of i.
template <int Columns>
[[gnu::always_inline]] inline void dots(const double *x, const double *const *y, int64_t len,
                                        double *out) {
  Lanes sums[Columns] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    const Lanes xi = load(x + i);
    for (int j = 0; j < Columns; ++j)
      sums[j] += xi * load(y[j] + i);
  }
  for (int j = 0; j < Columns; ++j) {
    double s[kLanes];
    store(s, sums[j]);
    for (int64_t r = i, l = 0; r < len; ++r, ++l)
      s[l] += x[r] * y[j][r];
    out[j] = addLanes(s);
  }
}

[[gnu::always_inline]] inline double dot(const double *x, const double *y, int64_t len) {
  double out;
  dots<1>(x, &y, len, &out);
  return out;
}

// The reflectors k in [k0, k1) of the m-row matrix `v` (column k from row k down), ascending
// or descending, applied to the `Columns` columns `c` from row k. One pass over the columns per
// reflector: each pass updates the rows by one reflector and adds up, in the same order as dot()
// would, the products of the next reflector with the rows it has just updated. Each column gets
// exactly the operations it would get alone; together, the columns share the loads of the
// reflectors, and their running sums are independent chains of additions (one column alone
// waits for each addition before the next).
template <int Columns>
[[gnu::always_inline]] inline void reflectColumnsWith(const double *v, int64_t m,
                                                      const double *beta, int64_t k0, int64_t k1,
                                                      bool descending, double *const *c) {
  int64_t step = 0;
  auto nextReflector = [&]() -> int64_t { // the next with beta != 0, or -1
    for (; step < k1 - k0; ++step) {
      const int64_t k = descending ? k1 - 1 - step : k0 + step;
      if (beta[k] != 0) {
        ++step;
        return k;
      }
    }
    return -1;
  };
  int64_t k = nextReflector();
  if (k < 0)
    return;
  double s[Columns];
  const double *fromK[Columns];
  for (int j = 0; j < Columns; ++j)
    fromK[j] = c[j] + k;
  dots<Columns>(v + k * m + k, fromK, m - k, s);
  for (int j = 0; j < Columns; ++j)
    s[j] *= beta[k];
  for (;;) {
    const double *vk = v + k * m; // row i of reflector k: vk[i], from row k
    const int64_t b = nextReflector();
    if (b < 0) {
      for (int j = 0; j < Columns; ++j)
        for (int64_t i = k; i < m; ++i)
          c[j][i] -= s[j] * vk[i];
      return;
    }
    const double *vb = v + b * m; // the next reflector's dot product runs over rows b.., lanes
    double sums[Columns][kLanes] = {}; // (i - b) mod 8
    int64_t i = b;
    for (; i < k; ++i) // rows above k (descending): not changed by reflector k
      for (int j = 0; j < Columns; ++j)
        sums[j][(i - b) % kLanes] += vb[i] * c[j][i];
    for (i = k; i < b; ++i) // rows above b (ascending): not in the next dot product
      for (int j = 0; j < Columns; ++j)
        c[j][i] -= s[j] * vk[i];
    for (i = std::max(k, b); i < m && (i - b) % kLanes != 0; ++i)
      for (int j = 0; j < Columns; ++j) {
        c[j][i] -= s[j] * vk[i];
        sums[j][(i - b) % kLanes] += vb[i] * c[j][i];
      }
    if (i + kLanes <= m) {
      Lanes laneSums[Columns];
      for (int j = 0; j < Columns; ++j)
        laneSums[j] = load(sums[j]);
      for (; i + kLanes <= m; i += kLanes) {
        const Lanes vki = load(vk + i), vbi = load(vb + i);
        for (int j = 0; j < Columns; ++j) {
          const Lanes updated = load(c[j] + i) - s[j] * vki;
          store(c[j] + i, updated);
          laneSums[j] += vbi * updated;
        }
      }
      for (int j = 0; j < Columns; ++j)
        store(sums[j], laneSums[j]);
    }
    for (; i < m; ++i)
      for (int j = 0; j < Columns; ++j) {
        c[j][i] -= s[j] * vk[i];
        sums[j][(i - b) % kLanes] += vb[i] * c[j][i];
      }
    for (int j = 0; j < Columns; ++j)
      s[j] = addLanes(sums[j]) * beta[b];
    k = b;
  }
}

// Columns taken four at a time (eight vectors of running sums: half of AVX2's registers), then
// two, then one.
[[gnu::always_inline]] inline void reflectColumnsIn(const double *v, int64_t m, const double *beta,
                                                    int64_t k0, int64_t k1, bool descending,
                                                    double *const *cs, int64_t count) {
  int64_t j = 0;
  for (; j + 4 <= count; j += 4)
    reflectColumnsWith<4>(v, m, beta, k0, k1, descending, cs + j);
  for (; j + 2 <= count; j += 2)
    reflectColumnsWith<2>(v, m, beta, k0, k1, descending, cs + j);
  for (; j < count; ++j)
    reflectColumnsWith<1>(v, m, beta, k0, k1, descending, cs + j);
}

void reflectColumnsPortable(const double *v, int64_t m, const double *beta, int64_t k0, int64_t k1,
                            bool descending, double *const *cs, int64_t count) {
  reflectColumnsIn(v, m, beta, k0, k1, descending, cs, count);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same operations on AVX2's and AVX-512's wider vectors, chosen at run time where the CPU
// has them (by a plain check rather than an ifunc, which would run before a sanitizer's run time
// is ready).
__attribute__((target("avx2"))) void reflectColumnsAvx2(const double *v, int64_t m,
                                                        const double *beta, int64_t k0, int64_t k1,
                                                        bool descending, double *const *cs,
                                                        int64_t count) {
  reflectColumnsIn(v, m, beta, k0, k1, descending, cs, count);
}

__attribute__((target("avx512f"))) void reflectColumnsAvx512(const double *v, int64_t m,
                                                             const double *beta, int64_t k0,
                                                             int64_t k1, bool descending,
                                                             double *const *cs, int64_t count) {
  reflectColumnsIn(v, m, beta, k0, k1, descending, cs, count);
}
#endif

using ReflectColumns = void (*)(const double *, int64_t, const double *, int64_t, int64_t, bool,
                                double *const *, int64_t);

ReflectColumns chooseReflectColumns() {
#if defined(__x86_64__) && defined(__GNUC__)
  using Loops = OrthogonalMatrix::Loops;
  static const bool avx512 = cpuHasExtension("avx512f"), avx2 = cpuHasExtension("avx2");
  if (avx512 && OrthogonalMatrix::loops == Loops::Widest)
    return reflectColumnsAvx512;
  if (avx2 && OrthogonalMatrix::loops != Loops::Portable)
    return reflectColumnsAvx2;
#endif
  return reflectColumnsPortable;
}

// Columns of m doubles whose panel of reflectors (kPanelBytes of them) stays in a core's
// cache while they are applied to one column after another. The values do not depend on it.
constexpr int64_t kPanelBytes = int64_t(256) << 10;
// Below this many elements a matrix is factored on the calling thread alone.
constexpr int64_t kThreadedElements = int64_t(1) << 16;

// A barrier for a fixed number of threads, reusable (C++17 has none).
class Barrier {
public:
  void setCount(int threads) { count = threads; }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    const uint64_t mine = generation;
    if (++arrived == count) {
      arrived = 0;
      ++generation;
      released.notify_all();
      return;
    }
    released.wait(lock, [&] { return generation != mine; });
  }

private:
  std::mutex mutex;
  std::condition_variable released;
  int count = 1, arrived = 0;
  uint64_t generation = 0;
};

// Runs `body(worker, barrier)` on `threads` threads started once (worker 0 to threads - 1; a
// barrier of that many), and `monitor` (if any) on this thread every `interval` seconds
// meanwhile. The body must not throw: a thread that left early would hold the others at the
// barrier. Fewer threads than asked for, when the system has no more, is slower, not wrong.
template <typename Body>
void runTeam(int threads, const Body &body, const std::function<void()> &monitor, double interval) {
  Barrier barrier;
  if (threads <= 1 && !monitor) {
    body(0, barrier);
    return;
  }
  std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  int finished = 0;
  std::vector<std::thread> team;
  team.reserve(size_t(threads));
  for (int worker = 0; worker < threads; ++worker) {
    try {
      team.emplace_back([&, worker]() noexcept {
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return started; }); // the team's size is known
        }
        body(worker, barrier);
        std::lock_guard<std::mutex> lock(mutex);
        ++finished;
        changed.notify_all();
      });
    } catch (const std::system_error &) {
      break;
    }
  }
  if (team.empty()) {
    body(0, barrier);
    return;
  }
  std::exception_ptr failure; // the monitor's, rethrown once the team is done
  std::unique_lock<std::mutex> lock(mutex);
  barrier.setCount(int(team.size()));
  started = true;
  changed.notify_all();
  while (finished < int(team.size())) {
    changed.wait_for(lock, std::chrono::duration<double>(interval));
    if (monitor && !failure) {
      lock.unlock();
      try {
        monitor();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
    }
  }
  lock.unlock();
  for (std::thread &thread : team)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
}

// Floating-point operations of the reflectors [k0, k1) on one column: four per row they span.
uint64_t reflectorFlops(int64_t m, int64_t k0, int64_t k1) {
  return k1 <= k0 ? 0 : uint64_t(4 * (k1 - k0) * (2 * m - k0 - k1 + 1) / 2);
}

} // namespace

OrthogonalMatrix::Loops OrthogonalMatrix::loops = OrthogonalMatrix::Loops::Widest;

OrthogonalMatrix::OrthogonalMatrix(std::vector<float> normal, int64_t rows, int64_t cols,
                                   int threads, const Progress &progress, double interval)
    : m(std::max(rows, cols)), n(std::min(rows, cols)), wide(rows < cols) {
  const bool small = m * n < kThreadedElements;
  if (small)
    threads = 1;
  // Progress: the flops done, counted a column piece at a time, against all there are (column
  // j takes reflectors 0 .. j-1 while factoring, 0 .. j forming Q).
  std::atomic<uint64_t> flopsDone{0};
  uint64_t flopsAll = 0;
  for (int64_t j = 0; j < n; ++j)
    flopsAll += reflectorFlops(m, 0, j) + reflectorFlops(m, 0, j + 1);
  std::function<void()> monitor;
  if (progress && !small)
    monitor = [&, last = std::chrono::steady_clock::now()]() mutable {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last).count() < interval)
        return;
      last = now;
      progress(std::min(1.0, double(flopsDone.load(std::memory_order_relaxed)) /
                                 double(std::max<uint64_t>(flopsAll, 1))));
    };
  // a: m x n column-major, the matrix or its transpose; column k of it becomes reflector k.
  std::vector<double> a(size_t(m * n));
  constexpr int64_t kTile = 64; // the transposing copy by tiles, to read and write whole lines
  for (int64_t i0 = 0; i0 < m; i0 += kTile)
    for (int64_t j0 = 0; j0 < n; j0 += kTile)
      for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j)
        for (int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
          a[size_t(i + j * m)] =
              wide ? double(normal[size_t(j * cols + i)]) : double(normal[size_t(i * cols + j)]);
  std::vector<float>().swap(normal);

  std::vector<double> beta(size_t(n), 0.0);
  negative.assign(size_t(n), 0);
  auto column = [&](int64_t j) { return a.data() + j * m; };
  const ReflectColumns reflectColumns = chooseReflectColumns();
  const int64_t panel = std::clamp<int64_t>(kPanelBytes / (m * int64_t(sizeof(double))), 4, 64);

  // Each panel: worker 0 factors it while the others wait, then all take the columns right of it
  // a few at a time. Then Q, in pieces of columns from the last (the costliest) to the first.
  constexpr int64_t kFactorPiece = 8, kQPiece = 32;
  std::atomic<int64_t> nextPiece{0}, nextQPiece{0};
  q.reset(new double[size_t(m * n)]);
  auto work = [&](int worker, Barrier &barrier) {
    for (int64_t k0 = 0; k0 < n; k0 += panel) {
      const int64_t k1 = std::min(n, k0 + panel);
      if (worker == 0) {
        // Each column takes the panel's earlier reflectors, then becomes a reflector itself (in
        // place: v is the column from row k down, with alpha taken off).
        for (int64_t k = k0; k < k1; ++k) {
          double *const target = column(k), *x = target + k;
          reflectColumns(a.data(), m, beta.data(), k0, k, false, &target, 1);
          flopsDone.fetch_add(reflectorFlops(m, k0, k), std::memory_order_relaxed);
          const int64_t len = m - k;
          const double norm = std::sqrt(dot(x, x, len));
          const double alpha = x[0] >= 0 ? -norm : norm;
          x[0] -= alpha;
          const double vnorm2 = dot(x, x, len);
          negative[size_t(k)] = norm != 0 && alpha < 0; // r_kk = alpha
          beta[size_t(k)] = vnorm2 == 0 ? 0.0 : 2.0 / vnorm2;
        }
        nextPiece.store(0, std::memory_order_relaxed);
      }
      barrier.wait();
      const int64_t pieces = (n - k1 + kFactorPiece - 1) / kFactorPiece;
      for (int64_t p; (p = nextPiece.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
        const int64_t j0 = k1 + p * kFactorPiece, j1 = std::min(n, j0 + kFactorPiece);
        double *columns[kFactorPiece];
        for (int64_t j = j0; j < j1; ++j)
          columns[j - j0] = column(j);
        reflectColumns(a.data(), m, beta.data(), k0, k1, false, columns, j1 - j0);
        flopsDone.fetch_add(uint64_t(j1 - j0) * reflectorFlops(m, k0, k1),
                            std::memory_order_relaxed);
      }
      barrier.wait();
    }
    // Q = H_0 H_1 ... H_{n-1} [I; 0]: column j is e_j reflected by H_j, H_{j-1}, ..., H_0. A
    // piece goes over the reflectors a panel at a time, so that a panel is read from memory once
    // for the whole piece.
    const int64_t pieces = (n + kQPiece - 1) / kQPiece;
    for (int64_t p; (p = nextQPiece.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
      const int64_t j1 = n - p * kQPiece, j0 = std::max<int64_t>(0, j1 - kQPiece);
      std::fill(q.get() + j0 * m, q.get() + j1 * m, 0.0);
      for (int64_t j = j0; j < j1; ++j)
        q[size_t(j + j * m)] = 1.0;
      for (int64_t k1 = j1; k1 > 0;) {
        const int64_t k0 = std::max<int64_t>(0, k1 - panel);
        // Column j takes the reflectors k <= j: those from k1 - 1 on the whole panel, together.
        const int64_t whole = std::max(j0, k1 - 1);
        uint64_t flops = uint64_t(j1 - whole) * reflectorFlops(m, k0, k1);
        double *columns[kQPiece];
        for (int64_t j = whole; j < j1; ++j)
          columns[j - whole] = q.get() + j * m;
        reflectColumns(a.data(), m, beta.data(), k0, k1, true, columns, j1 - whole);
        for (int64_t j = std::max(j0, k0); j < whole; ++j) {
          double *const target = q.get() + j * m;
          reflectColumns(a.data(), m, beta.data(), k0, j + 1, true, &target, 1);
          flops += reflectorFlops(m, k0, j + 1);
        }
        flopsDone.fetch_add(flops, std::memory_order_relaxed);
        k1 = k0;
      }
    }
  };
  runTeam(threads, work, monitor, interval);
}

} // namespace initrt
