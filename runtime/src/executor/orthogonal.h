#pragma once
// torch.nn.init.orthogonal_ as a whole-tensor step of the runtime: a Householder QR in double
// precision whose every operation is in a fixed order, so that each element is the same bits
// whatever the number of threads, the vector width of the CPU and the blocking.

#include "initrt/base/costs.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace initrt {

/// The orthogonal matrix torch.nn.init.orthogonal_ makes of a rows x cols matrix of N(0, 1)
/// samples: the matrix, or its transpose when rows < cols, factored as QR by Householder
/// reflectors; column j of Q times the sign of r_jj (+1 when r_jj is 0); transposed back.
///
/// The operation order (ir-spec/dialect.md, init.orthogonal): column k's reflector is
/// v = x - alpha e_0 with x the column from row k down, alpha = -|x| when x_0 >= 0 and |x|
/// otherwise, beta = 2 / |v|^2 (no reflection when |v| is 0); a reflector applies to a column c
/// as c - (beta (v . c)) v, each product and difference rounded; every column receives the
/// reflectors in the order of the unblocked algorithm (factoring: 0, 1, ...; forming Q from the
/// identity: j, j - 1, ..., 0). Every dot product x . y is eight running sums, sum l taking
/// x_i y_i for i mod 8 = l in order of i, added as
/// ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
class OrthogonalMatrix {
public:
  /// Called on the constructing thread with the fraction of the factorization's work done.
  using Progress = std::function<void(double fraction)>;

  /// Factors `normal` (row-major; its memory is released before Q is allocated) on `threads`
  /// threads, calling `progress` (if any) at most every `interval` seconds; a matrix of fewer
  /// than 65536 elements is factored on the calling thread alone, without progress. Throws
  /// std::bad_alloc when the scratch does not fit.
  OrthogonalMatrix(std::vector<float> normal, int64_t rows, int64_t cols, int threads,
                   const Progress &progress = nullptr, double interval = 0.1);

  /// Element (row, col) of the result times `gain`, rounded once.
  double at(int64_t row, int64_t col, double gain) const {
    const int64_t i = wide ? col : row, j = wide ? row : col;
    const double value = q[size_t(i + j * m)] * gain;
    return negative[size_t(j)] ? -value : value;
  }

  /// For tests: the widest vectors the loops may use, where the CPU has them (the bits are the
  /// same with any).
  enum class Loops { Widest, Avx2, Portable };
  static Loops loops;

private:
  int64_t m = 0, n = 0;       // the factored matrix is m x n, m >= n
  bool wide = false;          // rows < cols: the factored matrix is the transpose
  std::unique_ptr<double[]> q; // m x n, column-major
  std::vector<char> negative; // r_jj < 0: column j of q is negated
};

} // namespace initrt
