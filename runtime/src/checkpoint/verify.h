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

/// Whether `dir` holds an hf checkpoint's record (initc-checkpoint.json).
bool holdsHfRecord(const std::string &dir);
/// Whether `dir` holds files of the dcp layout (shard-*-of-*.safetensors).
bool holdsDcpFiles(const std::string &dir);
/// verifyCheckpoint of the dcp layout (dcp_verify.cpp): each file's records and checksums, and
/// that the files together hold every element of every tensor exactly once.
bool verifyDcpCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                         std::string &error, const ProgressFn &progress = {}, int threads = 0);
/// The same for an hf checkpoint (dir/initc-checkpoint.json and the files it lists): each file's
/// size and header, each slice's checksum; a problem names the tensor, the slice and the rank
/// command that repairs it.
bool verifyHfCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                        std::string &error, const ProgressFn &progress = {}, int threads = 0);

} // namespace initrt
