// index.json of initc's own checkpoint layout: what each rank reports to rank 0, and the index
// rank 0 writes once every replica is checked (ir-spec/checkpoint.md, "index.json").
#pragma once

#include "initrt/base/program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace initrt {

/// The persistent params some ranks hold copies of (a mesh axis of size > 1 splits none of their
/// dims), in program order: the ones whose replicas index.json's writer compares.
std::vector<size_t> replicatedParams(const Program &program);

/// A rank's shard digest: XXH3-64 of its persistent tensors' checksums (16 hex digits each),
/// concatenated in program order. `checksums` holds one per param, as shardIsComplete fills it.
uint64_t shardDigest(const Program &program, const std::vector<std::string> &checksums);

/// What a rank tells rank 0 for index.json: its shard digest, and the checksums of its
/// replicatedParams() tensors in that order (XXH3-64 values).
struct RankReport {
  uint64_t digest = 0;
  std::vector<uint64_t> replicated;
  /// With a layout that gathersChecksums(): the XXH3-64 of the rank's part of every parameter
  /// (0 where it has none).
  std::vector<uint64_t> checksums;
};

/// A rank's report from its per-param checksums (16 hex digits; empty for params not stored).
RankReport makeRankReport(const Program &program, const std::vector<std::string> &checksums);

/// Checks that every replica holds the same bytes as its slice's owner, then writes
/// dir/index.json atomically. `reports[rank]` for every rank. The index's size grows with the
/// ranks and the params, not with their product: slices follow from the mesh and shardings.
bool writeIndex(const std::string &dir, const Program &program,
                const std::vector<RankReport> &reports, std::string &error);

} // namespace initrt
