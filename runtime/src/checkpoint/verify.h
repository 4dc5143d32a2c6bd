// Every shard of a checkpoint re-read and checked against its checksums and the index
// (`initc verify`).
#pragma once

#include "initrt/base/report.h"

#include <string>
#include <vector>

namespace initrt {

/// Re-reads every shard, recomputes each checksum and checks coverage; one line per problem in
/// `problems`, naming the parameter and rank, in rank order. `threads` files are read at a time
/// (0: one per CPU it may run on). `progress` (optional) hears the tensor bytes checked of all the
/// ranks' (replicas included), tensor by tensor, under a lock, from the reading threads.
bool verifyCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                      std::string &error, const ProgressFn &progress = {}, int threads = 0);

/// Whether `dir` holds files of the dcp layout (shard-*-of-*.safetensors).
bool holdsDcpFiles(const std::string &dir);
/// verifyCheckpoint of the dcp layout (dcp_verify.cpp): each file's records and checksums, and
/// that the files together hold every element of every tensor exactly once.
bool verifyDcpCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                         std::string &error, const ProgressFn &progress = {}, int threads = 0);

} // namespace initrt
