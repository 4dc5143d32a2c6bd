// How a rank's slice of a parameter is computed (ir-spec/sharding.md).
#pragma once

#include "initrt/base/program.h"

#include <cstdint>
#include <vector>

namespace initrt {

/// A rank's box of a global tensor: elements [offset[d], offset[d] + shape[d]) along each dim d.
struct Slice {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  bool operator==(const Slice &other) const {
    return offset == other.offset && shape == other.shape;
  }
};

/// Coordinates of `rank` in the mesh, row-major (last axis fastest).
std::vector<int64_t> meshCoords(const Mesh &mesh, int64_t rank);

/// The torch.chunk rule: `size` split into `parts` chunks of ceil(size/parts); chunk `index`
/// covers [min(index*c, size), min((index+1)*c, size)), so trailing chunks may be short or empty.
void chunkRange(int64_t size, int64_t parts, int64_t index, int64_t &begin, int64_t &length);

/// The slice of `param` that `rank` holds. A dim split over several mesh axes is split over
/// their product, the first listed axis major.
Slice sliceForRank(const Mesh &mesh, const Param &param, int64_t rank);

/// False when `rank` is of another pipeline stage than `param`'s: it holds none of the parameter,
/// and its files of the `ranks` layout do not mention it (ir-spec/sharding.md).
bool onParamStage(const Mesh &mesh, const Param &param, int64_t rank);

/// The ranks holding exactly the same slice as `rank` (replicas), including `rank` itself.
/// The lowest of them is the slice's owner in the checkpoint index.
bool isSliceOwner(const Mesh &mesh, const Param &param, int64_t rank);

/// True when a mesh axis of size > 1 splits none of `param`'s dims: each slice has copies.
bool isReplicated(const Mesh &mesh, const Param &param);

/// For each rank, the rank with coordinate 0 on every mesh axis that splits none of `param`'s
/// dims: it holds the same slice (checkpoint writers compare the copies against it).
std::vector<int64_t> replicaRoots(const Mesh &mesh, const Param &param);

/// One box of a parameter: the part of it a rank computes and writes.
struct ParamBox {
  size_t param = 0; // index into Program::params
  Slice box;
};

/// A replicated slice is split between its replicas only into parts of at least this size:
/// smaller writes cost more in calls and in checkpoint metadata than they save.
inline constexpr uint64_t kMinWriteBoxBytes = uint64_t(1) << 20;

/// The boxes rank `rank` writes into a checkpoint that stores every element once (the hf and
/// dcp layouts), in parameter order: of each persistent parameter, its part of the rank's slice.
/// The R ranks holding one slice (its replicas, which differ only in their coordinates on the
/// mesh axes the parameter does not split) cut it along its first dim with the chunk rule into
/// min(R, rows, bytes / kMinWriteBoxBytes) parts (at least 1); the replica whose index (its
/// coordinates on those axes, mixed radix in mesh order) is i writes part i. So every rank writes
/// about the same share, and each element is written by exactly one rank. Empty boxes are left
/// out.
std::vector<ParamBox> writeBoxes(const Program &program, int64_t rank);

/// writeBoxes for one parameter: false when `rank` writes none of `param`, else its box.
bool writeBox(const Mesh &mesh, const Param &param, int64_t rank, Slice &box);

} // namespace initrt
