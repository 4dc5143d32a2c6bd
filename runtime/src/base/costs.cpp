#include "initrt/base/costs.h"

#include <algorithm>

namespace initrt {

double orthogonalFlops(int64_t rows, int64_t cols) {
  const double m = double(std::max(rows, cols)), n = double(std::min(rows, cols));
  return 2 * (2 * m * n * n - 2 * n * n * n / 3);
}

} // namespace initrt
