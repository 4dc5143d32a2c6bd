#include "initrt/base/checksum.h"

#include <xxhash.h>

#include <new>

namespace initrt {

std::string checksumToHex(uint64_t hash) {
  static const char digits[] = "0123456789abcdef";
  std::string hex(16, '0');
  for (int i = 15; i >= 0; --i) {
    hex[i] = digits[hash & 0xf];
    hash >>= 4;
  }
  return hex;
}

bool parseChecksumHex(const std::string &hex, uint64_t &hash) {
  if (hex.size() != 16)
    return false;
  hash = 0;
  for (char c : hex) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0)
      return false;
    hash = hash << 4 | uint64_t(digit);
  }
  return true;
}

std::string checksumHex(const void *data, size_t bytes) {
  return checksumToHex(XXH3_64bits(data, bytes));
}

std::string emptyChecksum() { return checksumHex(nullptr, 0); }

// XXH3_state_t wants 64-byte alignment; XXH3_createState provides it.
struct StreamingChecksum::State {
  XXH3_state_t *xxh = nullptr;
  State() : xxh(XXH3_createState()) {
    if (!xxh)
      throw std::bad_alloc();
  }
  ~State() { XXH3_freeState(xxh); }
};

StreamingChecksum::StreamingChecksum() : state(new State) { reset(); }
StreamingChecksum::~StreamingChecksum() = default;

void StreamingChecksum::reset() { XXH3_64bits_reset(state->xxh); }

void StreamingChecksum::update(const void *data, size_t bytes) {
  if (bytes)
    XXH3_64bits_update(state->xxh, data, bytes);
}

uint64_t StreamingChecksum::value() const { return XXH3_64bits_digest(state->xxh); }

std::string StreamingChecksum::hex() const { return checksumToHex(value()); }

} // namespace initrt
