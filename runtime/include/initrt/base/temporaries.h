// Temporaries that a signal ending the process removes (SIGINT, SIGTERM, SIGHUP, SIGABRT), and the
// file size signal ignored: no half-written file or directory outlives an interrupted run.
#pragma once

#include <string>

namespace initrt {

/// Registers `path`, a file or (`directory`) a directory of files, for removal should SIGINT,
/// SIGTERM, SIGHUP or SIGABRT end the process; the handler is installed on first use, and an
/// ignored signal stays ignored (nohup). Returns the slot to unregister, or -1 when the table is
/// full or the path too long (then a signal leaves it behind, as kill -9 would). Thread-safe.
int registerTemporary(const std::string &path, bool directory = false);

/// Unregisters the slot (before its path is renamed or removed) and sets it to -1.
void unregisterTemporary(int &slot);

/// Ignores SIGXFSZ, so that writing past `ulimit -f` fails with EFBIG, which is reported,
/// instead of killing the process.
void ignoreFileSizeSignal();

} // namespace initrt
