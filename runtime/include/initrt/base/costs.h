// What the runtime's buffers hold and its whole-tensor steps cost: the constants the compiler's
// estimate of a run (`initc inspect`) shares with the runtime, so that the two never disagree.
#pragma once

#include <cstdint>

namespace initrt {

/// Bytes of output per piece of streamShardJobs: large writes, a few per thread in flight.
inline constexpr uint64_t kPieceBytes = uint64_t(4) << 20;

/// A staging buffer: large enough that the device sees long requests, small enough to stay in
/// the last-level cache while pieces are copied in.
inline constexpr uint64_t kDirectStageBytes = 16ull << 20;
/// Staging buffers per writer: one is filled while the other is written.
inline constexpr uint64_t kDirectStages = 2;
/// Files this large are written and read past the page cache; smaller ones gain little.
inline constexpr uint64_t kDirectMinFileBytes = 64ull << 20;

/// Bytes per element of a whole orthogonal tensor that a rank holding any part of it needs at
/// the peak of computing it: two double matrices (the reflectors and Q). The F32 normal matrix is
/// released once it is widened, before Q is allocated.
inline constexpr uint64_t kOrthogonalScratchBytesPerElement = 2 * 8;

/// Floating-point operations of orthogonalizing a rows x cols matrix: with m >= n its long and
/// short sides, 2mn^2 - 2n^3/3 to factor it and as many to form Q.
double orthogonalFlops(int64_t rows, int64_t cols);

} // namespace initrt
