// Checksums of tensor bytes: XXH3-64, written as 16 lowercase hex digits (ir-spec/checkpoint.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace initrt {

/// XXH3-64 (seed 0) of `bytes` bytes at `data`, as 16 lowercase hex digits.
std::string checksumHex(const void *data, size_t bytes);

/// checksumHex of no bytes: what a rank records for a tensor it holds none of.
std::string emptyChecksum();

/// XXH3-64 as 16 lowercase hex digits.
std::string checksumToHex(uint64_t hash);

/// The value of a checksum written as 16 lowercase hex digits; false for anything else.
bool parseChecksumHex(const std::string &hex, uint64_t &hash);

/// XXH3-64 over data fed in pieces; gives the same value as checksumHex over the concatenation.
class StreamingChecksum {
public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum &) = delete;
  StreamingChecksum &operator=(const StreamingChecksum &) = delete;

  void reset();
  void update(const void *data, size_t bytes);
  uint64_t value() const;
  std::string hex() const;

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace initrt
