// Writing and reading large files past the page cache (O_DIRECT).
//
// Through the page cache, every byte of a checkpoint is copied once more into cache pages, which
// then have to be found, written back and evicted; on the machines measured (benchmarks/README.md)
// that made a buffered write plus fsync 3 to 5 times slower than writing the same bytes with
// O_DIRECT, and a cold read take 1 to 5 s of system time per 4 GiB where a direct one takes 0.15 s.
// Direct I/O asks for block-aligned offsets, lengths and buffers, which tensor data does not have:
// readFileRange reads whole blocks around the range it is asked for; the runtime's DirectWriter
// (src/io/direct_writer.h) stages the ranges it writes into aligned buffers.
#pragma once

#include "initrt/base/costs.h"

#include <cstdint>
#include <functional>
#include <string>

namespace initrt {

/// Reads this long, of such files, are past the page cache: a shorter one would wait on the
/// device alone, where the kernel's read-ahead serves a sequence of them from memory.
inline constexpr uint64_t kDirectMinReadBytes = 1ull << 20;

/// Whether the file open as `fd`, `fileBytes` long, is written, or read `readBytes` at a time,
/// past the page cache: INITRT_DIRECT_IO=1 says always and =0 never; by default, files of
/// kDirectMinFileBytes or more on local file systems, in reads of kDirectMinReadBytes or more.
/// Network and FUSE file systems, where each direct request is a synchronous one of the server
/// and the gain was not measured, keep the page cache.
bool directIoWanted(int fd, uint64_t fileBytes, uint64_t readBytes = UINT64_MAX);
/// False, with `error` saying what it takes, for an INITRT_DIRECT_IO that is not 0, 1 or unset:
/// checked before a run, so that a mistyped setting is not silently the default.
bool checkDirectIoSetting(std::string &error);
/// The alignment the file system asks of direct I/O on `fd` (a power of two, at least 4096), or 0
/// when it says it takes none.
uint64_t directIoBlock(int fd);

/// Reads bytes [offset, offset + bytes) of the file open as `fd`, handing them to `take` in
/// order, in pieces of at most kDirectStageBytes; past the page cache when `pastCache` (a file
/// read once), going on through it where the file system refuses. Returns 0, the errno of a
/// failed read, or -1 when the file ends first. The pieces are in a buffer of the calling
/// thread's, valid during `take`.
int readFileRange(int fd, uint64_t offset, uint64_t bytes, bool pastCache,
                  const std::function<void(const char *data, uint64_t bytes)> &take);

} // namespace initrt
