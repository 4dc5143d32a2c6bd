// Which slice of each parameter a rank holds (ir-spec/sharding.md).
#include "initrt/base/sharding.h"

#include <algorithm>

namespace initrt {

// The ranks holding exactly the same slice as `rank`, ascending, `rank` included. Belongs in
// sharding.h next to isSliceOwner, whose comment describes it.
std::vector<int64_t> replicaRanks(const Mesh &mesh, const Param &param, int64_t rank);

int64_t Slice::numElements() const {
  int64_t total = 1;
  for (int64_t extent : shape)
    total *= extent;
  return total;
}

std::vector<int64_t> meshCoords(const Mesh &mesh, int64_t rank) {
  std::vector<int64_t> coords(mesh.shape.size(), 0);
  for (size_t i = mesh.shape.size(); i-- > 0;) {
    coords[i] = rank % mesh.shape[i];
    rank /= mesh.shape[i];
  }
  return coords;
}

void chunkRange(int64_t size, int64_t parts, int64_t index, int64_t &begin, int64_t &length) {
  int64_t chunk = parts <= 0 ? size : (size + parts - 1) / parts;
  begin = std::min(index * chunk, size);
  int64_t end = std::min((index + 1) * chunk, size);
  length = end - begin;
}

namespace {

// The number of parts dim `axes` splits into and which part `coords` selects: the listed axes
// form a mixed-radix number, the first listed axis most significant.
void partOf(const Mesh &mesh, const std::vector<int> &axes, const std::vector<int64_t> &coords,
            int64_t &parts, int64_t &index) {
  parts = 1;
  index = 0;
  for (int axis : axes) {
    parts *= mesh.shape[axis];
    index = index * mesh.shape[axis] + coords[axis];
  }
}

// Inverse of partOf for the coordinates of the listed axes.
void setPartCoords(const Mesh &mesh, const std::vector<int> &axes, int64_t index,
                   std::vector<int64_t> &coords) {
  for (size_t k = axes.size(); k-- > 0;) {
    coords[axes[k]] = index % mesh.shape[axes[k]];
    index /= mesh.shape[axes[k]];
  }
}

// Parts [first, last] of a split dim hold the same range as part `index`. Non-empty chunks are
// unique; all empty chunks are the same empty range at the end of the dim.
void matchingParts(int64_t size, int64_t parts, int64_t index, int64_t &first, int64_t &last) {
  int64_t begin, length;
  chunkRange(size, parts, index, begin, length);
  if (length > 0) {
    first = last = index;
    return;
  }
  int64_t chunk = (size + parts - 1) / parts;
  first = chunk == 0 ? 0 : (size + chunk - 1) / chunk;
  last = parts - 1;
}

// False for a rank of another pipeline stage than the parameter's: it holds none of it.
bool onStage(const Param &param, const std::vector<int64_t> &coords) {
  return param.stageAxis < 0 || size_t(param.stageAxis) >= coords.size() ||
         coords[size_t(param.stageAxis)] == param.stage;
}

int64_t rankOf(const Mesh &mesh, const std::vector<int64_t> &coords) {
  int64_t rank = 0;
  for (size_t i = 0; i < coords.size(); ++i)
    rank = rank * mesh.shape[i] + coords[i];
  return rank;
}

} // namespace

bool onParamStage(const Mesh &mesh, const Param &param, int64_t rank) {
  return param.stageAxis < 0 || onStage(param, meshCoords(mesh, rank));
}

Slice sliceForRank(const Mesh &mesh, const Param &param, int64_t rank) {
  std::vector<int64_t> coords = meshCoords(mesh, rank);
  Slice slice;
  slice.offset.assign(param.shape.size(), 0);
  slice.shape = param.shape;
  if (!onStage(param, coords) && !slice.shape.empty()) {
    // Nothing, written as the empty range at the end of dim 0 as an empty chunk is.
    slice.offset[0] = slice.shape[0];
    slice.shape[0] = 0;
    return slice;
  }
  for (size_t d = 0; d < param.splitAxes.size() && d < param.shape.size(); ++d) {
    if (param.splitAxes[d].empty())
      continue;
    int64_t parts, index;
    partOf(mesh, param.splitAxes[d], coords, parts, index);
    chunkRange(param.shape[d], parts, index, slice.offset[d], slice.shape[d]);
  }
  return slice;
}

bool isSliceOwner(const Mesh &mesh, const Param &param, int64_t rank) {
  // The replicas of a slice form a product over disjoint groups of mesh axes (each unused axis
  // alone, the axes of each split dim together), so the lowest replica is the lowest choice for
  // each group on its own.
  std::vector<int64_t> coords = meshCoords(mesh, rank);
  // Ranks of other stages hold nothing, which no index lists; the stage axis is fixed.
  if (!onStage(param, coords))
    return false;
  std::vector<bool> used(mesh.shape.size(), false);
  if (param.stageAxis >= 0 && size_t(param.stageAxis) < used.size())
    used[size_t(param.stageAxis)] = true;
  for (size_t d = 0; d < param.splitAxes.size() && d < param.shape.size(); ++d) {
    const std::vector<int> &axes = param.splitAxes[d];
    if (axes.empty())
      continue;
    for (int axis : axes)
      used[axis] = true;
    int64_t parts, index, first, last;
    partOf(mesh, axes, coords, parts, index);
    matchingParts(param.shape[d], parts, index, first, last);
    if (first == last)
      continue;
    // Several parts hold the same (empty) range: find the one whose coordinates come first in
    // mesh order, which need not be the lowest part index when the axes are listed out of order.
    std::vector<int> meshOrder = axes;
    std::sort(meshOrder.begin(), meshOrder.end());
    std::vector<int64_t> candidate = coords, best;
    for (int64_t part = first; part <= last; ++part) {
      setPartCoords(mesh, axes, part, candidate);
      std::vector<int64_t> key;
      for (int axis : meshOrder)
        key.push_back(candidate[axis]);
      if (best.empty() || key < best)
        best = key;
      if (meshOrder == axes)
        break; // mesh order and part order agree: the first part is the lowest
    }
    for (size_t k = 0; k < meshOrder.size(); ++k)
      if (coords[meshOrder[k]] != best[k])
        return false;
  }
  for (size_t axis = 0; axis < mesh.shape.size(); ++axis)
    if (!used[axis] && coords[axis] != 0)
      return false;
  return true;
}

std::vector<int64_t> replicaRanks(const Mesh &mesh, const Param &param, int64_t rank) {
  std::vector<int64_t> coords = meshCoords(mesh, rank);
  if (!onStage(param, coords)) { // every rank of another stage holds the same nothing
    std::vector<int64_t> ranks;
    for (int64_t other = 0; other < mesh.size(); ++other)
      if (!onStage(param, meshCoords(mesh, other)))
        ranks.push_back(other);
    return ranks;
  }
  // Each group of axes contributes a list of coordinate assignments; replicas are their product.
  std::vector<std::vector<int64_t>> candidates = {coords};
  std::vector<bool> used(mesh.shape.size(), false);
  if (param.stageAxis >= 0 && size_t(param.stageAxis) < used.size())
    used[size_t(param.stageAxis)] = true;
  for (size_t d = 0; d < param.splitAxes.size() && d < param.shape.size(); ++d) {
    const std::vector<int> &axes = param.splitAxes[d];
    if (axes.empty())
      continue;
    for (int axis : axes)
      used[axis] = true;
    int64_t parts, index, first, last;
    partOf(mesh, axes, coords, parts, index);
    matchingParts(param.shape[d], parts, index, first, last);
    std::vector<std::vector<int64_t>> expanded;
    for (const std::vector<int64_t> &base : candidates) {
      for (int64_t part = first; part <= last; ++part) {
        std::vector<int64_t> next = base;
        setPartCoords(mesh, axes, part, next);
        expanded.push_back(std::move(next));
      }
    }
    candidates = std::move(expanded);
  }
  for (size_t axis = 0; axis < mesh.shape.size(); ++axis) {
    if (used[axis])
      continue;
    std::vector<std::vector<int64_t>> expanded;
    for (const std::vector<int64_t> &base : candidates) {
      for (int64_t value = 0; value < mesh.shape[axis]; ++value) {
        std::vector<int64_t> next = base;
        next[axis] = value;
        expanded.push_back(std::move(next));
      }
    }
    candidates = std::move(expanded);
  }
  std::vector<int64_t> ranks;
  ranks.reserve(candidates.size());
  for (const std::vector<int64_t> &candidate : candidates)
    ranks.push_back(rankOf(mesh, candidate));
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

namespace {
/// Mesh axes that split none of the param's dims and are not its stage axis: its copies differ
/// only in them.
std::vector<bool> replicatingAxes(const Mesh &mesh, const Param &param) {
  std::vector<bool> replicating(mesh.shape.size(), true);
  if (param.stageAxis >= 0 && size_t(param.stageAxis) < replicating.size())
    replicating[size_t(param.stageAxis)] = false;
  for (size_t d = 0; d < param.splitAxes.size() && d < param.shape.size(); ++d)
    for (int axis : param.splitAxes[d])
      replicating[size_t(axis)] = false;
  return replicating;
}
} // namespace

bool isReplicated(const Mesh &mesh, const Param &param) {
  std::vector<bool> replicating = replicatingAxes(mesh, param);
  for (size_t axis = 0; axis < mesh.shape.size(); ++axis)
    if (replicating[axis] && mesh.shape[axis] > 1)
      return true;
  return false;
}

std::vector<int64_t> replicaRoots(const Mesh &mesh, const Param &param) {
  std::vector<bool> replicating = replicatingAxes(mesh, param);
  std::vector<int64_t> roots(size_t(mesh.size()));
  for (int64_t rank = 0; rank < int64_t(roots.size()); ++rank) {
    int64_t root = rank, stride = 1;
    for (size_t axis = mesh.shape.size(); axis-- > 0;) {
      if (replicating[axis])
        root -= (rank / stride) % mesh.shape[axis] * stride;
      stride *= mesh.shape[axis];
    }
    roots[size_t(rank)] = root;
  }
  return roots;
}

bool writeBox(const Mesh &mesh, const Param &param, int64_t rank, Slice &box) {
  if (!param.persistent)
    return false;
  Slice slice = sliceForRank(mesh, param, rank);
  if (slice.numElements() == 0)
    return false;
  std::vector<int64_t> coords = meshCoords(mesh, rank);
  // The replicas within the parameter's stage (its rank is on it: the slice is not empty).
  std::vector<bool> used = replicatingAxes(mesh, param);
  used.flip();
  int64_t replicas = 1, replica = 0;
  for (size_t axis = 0; axis < mesh.shape.size(); ++axis) {
    if (used[axis])
      continue;
    replicas *= mesh.shape[axis];
    replica = replica * mesh.shape[axis] + coords[axis];
  }
  const uint64_t bytes = uint64_t(slice.numElements()) * uint64_t(dtypeBytes(param.dtype));
  const int64_t rows = slice.shape.empty() ? 1 : slice.shape[0];
  int64_t parts = std::min<int64_t>(replicas, rows);
  parts = std::max<int64_t>(1, std::min<int64_t>(parts, int64_t(bytes / kMinWriteBoxBytes)));
  if (replica >= parts)
    return false;
  if (!slice.shape.empty()) {
    int64_t begin, length;
    chunkRange(rows, parts, replica, begin, length);
    if (length == 0)
      return false;
    slice.offset[0] += begin;
    slice.shape[0] = length;
  }
  box = std::move(slice);
  return true;
}

std::vector<ParamBox> writeBoxes(const Program &program, int64_t rank) {
  std::vector<ParamBox> boxes;
  ParamBox mine;
  for (size_t p = 0; p < program.params.size(); ++p)
    if (writeBox(program.mesh, program.params[p], rank, mine.box)) {
      mine.param = p;
      boxes.push_back(mine);
    }
  return boxes;
}

} // namespace initrt
