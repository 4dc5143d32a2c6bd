#include "checkpoint/assemble.h"

#include "checkpoint/verify.h"

#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/json_text.h"
#include "checkpoint/shard_file.h"
#include "io/direct_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;
//===----------------------------------------------------------------------===//
// Assemble and verify
//===----------------------------------------------------------------------===//

namespace {

/// Opened shard files with their parsed initc.tensors metadata, checked against the index:
/// the file's program, rank and world size, and its records' digest.
struct OpenShard {
  SafetensorsReader reader;
  std::map<std::string, ShardTensorRecord> records;
};

class ShardCache {
public:
  ShardCache(std::string shardDir, const Index &index) : dir(std::move(shardDir)), index(index) {}
  // `otherId`: set as shardMetadataMatches sets it.
  OpenShard *get(int64_t rank, std::string &error, std::string *otherId = nullptr) {
    auto it = shards.find(rank);
    if (it != shards.end())
      return it->second.get();
    if (shards.size() >= 256) // stay well below the open-file limit
      shards.clear();
    auto shard = std::make_unique<OpenShard>();
    std::string why;
    uint64_t digest = 0;
    if (!shard->reader.open(joinPath(dir, index.files[size_t(rank)]), error) ||
        !parseShardTensors(shard->reader, shard->records, error))
      return nullptr;
    if (!shardMetadataMatches(shard->reader, index.programId, rank, index.worldSize, why,
                              otherId)) {
      error = why;
      return nullptr;
    }
    if (!recordsDigest(index, shard->records, digest) || digest != index.digests[size_t(rank)]) {
      error = kNotThisJobsFile;
      return nullptr;
    }
    return (shards[rank] = std::move(shard)).get();
  }

private:
  std::string dir;
  const Index &index;
  std::map<int64_t, std::unique_ptr<OpenShard>> shards;
};

/// Refuses an assemble output that is one of the checkpoint's own files (its index or a shard,
/// by device and inode, hard links and symbolic links included), or a name the checkpoint
/// directory reserves for them: writing it would destroy the checkpoint being read.
bool outputOutsideCheckpoint(const std::string &dir, const Index &index,
                             const std::string &outPath, std::string &error) {
  std::vector<std::string> names = index.files;
  names.push_back(kIndexFile);
  auto refuse = [&](const std::string &name) {
    error = "-o " + outPath + " is the checkpoint's own " + name + " (in " + dir +
            "): writing it would destroy the checkpoint being assembled; choose another -o";
    return false;
  };
  struct stat out, theirs;
  if (::stat(outPath.c_str(), &out) == 0)
    for (const std::string &name : names)
      if (::stat(joinPath(dir, name).c_str(), &theirs) == 0 && out.st_dev == theirs.st_dev &&
          out.st_ino == theirs.st_ino)
        return refuse(name);
  // By name, for files missing from the checkpoint: is the output's directory the checkpoint's?
  std::string target = writtenPath(outPath);
  size_t slash = target.rfind('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  int64_t rank, world;
  bool reserved = base == kIndexFile || parseShardFileName(base, rank, world);
  struct stat parentInfo, dirInfo;
  if (reserved && ::stat(parent.c_str(), &parentInfo) == 0 && ::stat(dir.c_str(), &dirInfo) == 0 &&
      parentInfo.st_dev == dirInfo.st_dev && parentInfo.st_ino == dirInfo.st_ino)
    return refuse(base);
  return true;
}

/// One distinct slice of the tensor being assembled, as its owner's file holds it: read in its
/// own row-major order, band after band, and checked against its checksum at the end.
struct OwnedSlice {
  int64_t rank = 0;
  std::string where;                           // "NAME on rank R (FILE)"
  std::vector<int64_t> offset, shape, strides; // strides in elements, of the slice's layout
  uint64_t begin = 0, bytes = 0;               // its data in the file
  std::string checksum;
  StreamingChecksum sum;
  uint64_t consumed = 0; // bytes read so far
  // In the current band: where its part is in the band buffer, and the part's first element
  // (slice-linear) and bounds along the band's dim.
  uint64_t bandAt = 0, firstElement = 0;
  int64_t lo = 0, hi = 0;
};

/// Writes runs of bytes to a file in order, gathering short ones into one write: a tensor split
/// along its last dim comes as one run per row and slice, a few bytes each.
class RunWriter {
public:
  explicit RunWriter(AtomicFile &file) : file(file) {}
  bool write(const char *data, uint64_t bytes, std::string &error) {
    if (bytes >= kGatherBytes)
      return flush(error) && file.write(data, bytes, error);
    if (gathered.size() + bytes > kGatherBytes && !flush(error))
      return false;
    gathered.insert(gathered.end(), data, data + bytes);
    return true;
  }
  bool flush(std::string &error) {
    bool ok = gathered.empty() || file.write(gathered.data(), gathered.size(), error);
    gathered.clear();
    return ok;
  }

private:
  static constexpr uint64_t kGatherBytes = 1 << 20;
  AtomicFile &file;
  std::vector<char> gathered;
};

/// Writes one tensor of an assembled checkpoint to `out`, straight from its owners' slices: a
/// band of its global rows (at most `bandBytes`) is read from the slices that cross it, then
/// written in the global order by runs out of their parts. Memory stays at one band, whatever
/// the model's size.
bool assembleTensor(const std::string &dir, const Index &index, const IndexParam &item,
                    uint64_t bandBytes, ShardCache &cache, RunWriter &out, std::vector<char> &band,
                    std::string &error, const std::function<void(uint64_t)> &bandDone) {
  const Param &param = item.param;
  const uint64_t elementBytes = uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
  // A scalar is a tensor of one element here.
  const std::vector<int64_t> global = param.shape.empty() ? std::vector<int64_t>{1} : param.shape;
  const size_t rank = global.size();
  std::vector<std::unique_ptr<OwnedSlice>> slices;
  for (int64_t owner = 0; owner < index.worldSize; ++owner) {
    if (!isSliceOwner(index.mesh, param, owner))
      continue;
    Slice slice = sliceForRank(index.mesh, param, owner);
    auto part = std::make_unique<OwnedSlice>();
    part->rank = owner;
    part->where =
        param.name + " on rank " + std::to_string(owner) + " (" + index.files[size_t(owner)] + ")";
    OpenShard *shard = cache.get(owner, error);
    const SafetensorsEntry *entry =
        shard ? indexedEntry(shard->reader, shard->records, index, item, owner, error) : nullptr;
    if (!entry) {
      error = part->where + ": " + error + ": " + rerunHint(dir, owner);
      return false;
    }
    part->offset = param.shape.empty() ? std::vector<int64_t>{0} : slice.offset;
    part->shape = param.shape.empty() ? std::vector<int64_t>{1} : slice.shape;
    part->strides.assign(rank, 1);
    for (size_t d = rank - 1; d-- > 0;)
      part->strides[d] = part->strides[d + 1] * part->shape[d + 1];
    part->begin = entry->begin;
    part->bytes = entry->bytes();
    part->checksum = shard->records.at(param.name).checksum;
    slices.push_back(std::move(part));
  }

  // Bands: the outermost dim `k` whose rows (one index of it, every index of the dims after it)
  // fit `bandBytes`, `perBand` of its indices at a time, under each index of the dims before it.
  std::vector<uint64_t> rowBytes(rank);
  for (size_t d = rank; d-- > 0;)
    rowBytes[d] = d + 1 == rank ? elementBytes : rowBytes[d + 1] * uint64_t(global[d + 1]);
  size_t k = 0;
  while (k + 1 < rank && rowBytes[k] > bandBytes)
    ++k;
  // A tensor with a dim of 0 has no bands (and rows of 0 bytes); its slices are checked below.
  const bool empty = elementCount(global) == 0;
  const int64_t perBand = empty ? 1 : int64_t(std::max<uint64_t>(1, bandBytes / rowBytes[k]));
  if (!empty)
    band.resize(size_t(std::min(uint64_t(perBand), uint64_t(global[k])) * rowBytes[k]));

  std::vector<int64_t> prefix(k, 0), row(rank, 0);
  std::vector<OwnedSlice *> parts;
  const char *pending = nullptr; // a run written when the next one does not continue it
  uint64_t pendingBytes = 0, bandWritten = 0;
  auto append = [&](const char *data, uint64_t bytes) {
    bandWritten += bytes;
    if (pending && pending + pendingBytes == data) {
      pendingBytes += bytes;
      return true;
    }
    bool ok = !pending || out.write(pending, pendingBytes, error);
    pending = data;
    pendingBytes = bytes;
    return ok;
  };
  while (!empty) {
    for (int64_t a = 0; a < global[k]; a += perBand) {
      const int64_t b = std::min(global[k], a + perBand);
      // The slices crossing this band, and their parts of it, read in their own order.
      parts.clear();
      uint64_t at = 0;
      for (auto &slice : slices) {
        bool crosses = true;
        for (size_t d = 0; d < k && crosses; ++d)
          crosses = slice->offset[d] <= prefix[d] && prefix[d] < slice->offset[d] + slice->shape[d];
        slice->lo = std::max(a, slice->offset[k]);
        slice->hi = std::min(b, slice->offset[k] + slice->shape[k]);
        if (!crosses || slice->lo >= slice->hi)
          continue;
        uint64_t first = uint64_t(slice->lo - slice->offset[k]) * uint64_t(slice->strides[k]);
        for (size_t d = 0; d < k; ++d)
          first += uint64_t(prefix[d] - slice->offset[d]) * uint64_t(slice->strides[d]);
        uint64_t bytes =
            uint64_t(slice->hi - slice->lo) * uint64_t(slice->strides[k]) * elementBytes;
        if (first * elementBytes != slice->consumed || slice->consumed + bytes > slice->bytes ||
            at + bytes > band.size()) {
          error = slice->where + ": read out of order (internal error; run again)";
          return false;
        }
        OpenShard *shard = cache.get(slice->rank, error);
        if (!shard ||
            !shard->reader.read(slice->begin + slice->consumed, band.data() + at, bytes, error)) {
          error = slice->where + ": " + error;
          return false;
        }
        slice->sum.update(band.data() + at, size_t(bytes));
        slice->consumed += bytes;
        slice->bandAt = at;
        slice->firstElement = first;
        at += bytes;
        parts.push_back(slice.get());
      }
      // The band in the global order: its rows (every index but the last dim's), each made of
      // the runs of the slices that cross it, left to right.
      std::sort(parts.begin(), parts.end(), [&](const OwnedSlice *x, const OwnedSlice *y) {
        return x->offset[rank - 1] < y->offset[rank - 1];
      });
      if (k + 1 == rank) { // the band lies within one row
        for (OwnedSlice *part : parts)
          if (!append(band.data() + part->bandAt, uint64_t(part->hi - part->lo) * elementBytes))
            return false;
      } else {
        for (size_t d = 0; d < k; ++d)
          row[d] = prefix[d];
        for (size_t d = k; d + 1 < rank; ++d)
          row[d] = d == k ? a : 0;
        for (;;) {
          for (OwnedSlice *part : parts) {
            bool covers = true;
            uint64_t element = 0;
            for (size_t d = k; d + 1 < rank && covers; ++d) {
              covers = part->offset[d] <= row[d] && row[d] < part->offset[d] + part->shape[d];
              element += uint64_t(row[d] - part->offset[d]) * uint64_t(part->strides[d]);
            }
            for (size_t d = 0; d < k; ++d)
              element += uint64_t(row[d] - part->offset[d]) * uint64_t(part->strides[d]);
            if (covers &&
                !append(band.data() + part->bandAt + (element - part->firstElement) * elementBytes,
                        uint64_t(part->shape[rank - 1]) * elementBytes))
              return false;
          }
          bool more = false; // the next row: an odometer over dims k .. rank-2
          for (size_t d = rank - 1; d-- > k + 1 && !more;)
            if (!(more = ++row[d] < global[d]))
              row[d] = 0;
          if (!more && !(++row[k] < b))
            break;
        }
      }
      if (pending && !out.write(pending, pendingBytes, error))
        return false;
      pending = nullptr;
      // The slices tile the tensor: a band is exactly its bytes, or the file would shift.
      if (at != uint64_t(b - a) * rowBytes[k] || bandWritten != at) {
        error = param.name + ": the slices do not tile rows " + std::to_string(a) + " to " +
                std::to_string(b) + " of dim " + std::to_string(k) + " (internal error; run again)";
        return false;
      }
      bandWritten = 0;
      bandDone(uint64_t(b - a) * rowBytes[k]);
    }
    bool more = false; // the next prefix: an odometer over dims 0 .. k-1
    for (size_t d = k; d-- > 0 && !more;)
      if (!(more = ++prefix[d] < global[d]))
        prefix[d] = 0;
    if (!more)
      break;
  }

  for (auto &slice : slices) {
    if (slice->consumed != slice->bytes) {
      error = slice->where + ": " + std::to_string(slice->bytes - slice->consumed) +
              " bytes never read (internal error; run again)";
      return false;
    }
    if (slice->sum.hex() != slice->checksum) {
      error =
          slice->where + ": checksum mismatch, the file is corrupt: " + rerunHint(dir, slice->rank);
      return false;
    }
  }
  return true;
}

} // namespace

bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error,
                        const ProgressFn &progress, const AssembleOptions &options) {
  // A dcp checkpoint has no index.json to say so: its files name the layout.
  if (::access(joinPath(dir, kIndexFile).c_str(), F_OK) != 0 && holdsDcpFiles(dir)) {
    error = dir + " is a checkpoint of the dcp layout (shard-*-of-*.safetensors), which assemble "
                  "does not join: load it with torch.distributed.checkpoint's "
                  "HuggingFaceStorageReader, or write the program's checkpoint with --layout hf";
    return false;
  }
  Index index;
  if (!readIndex(dir, index, error))
    return false;
  if (!outputOutsideCheckpoint(dir, index, outPath, error))
    return false;
  uint64_t total = 0; // the model's bytes
  for (const IndexParam &item : index.params)
    total += elementCount(item.param.shape) * uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
  ShardCache cache(dir, index);
  std::vector<SafetensorsTensor> tensors;
  nlohmann::ordered_json aliases = nlohmann::ordered_json::object();

  // Every file of the checkpoint, not only those slices are read from: a rank that owns no
  // slice (replicas) missing or damaged is a broken checkpoint too. Headers only; the data
  // read below is checked against its checksums on the way.
  for (int64_t rank = 0; rank < index.worldSize; ++rank) {
    std::string where = "rank " + std::to_string(rank) + " (" + index.files[size_t(rank)] + ")";
    std::string otherId;
    OpenShard *shard = cache.get(rank, error, &otherId);
    if (!shard) {
      error = where + ": " + error + ": " + rerunHint(dir, rank, !otherId.empty());
      return false;
    }
    for (const IndexParam &item : index.params)
      if (!indexedEntry(shard->reader, shard->records, index, item, rank, error)) {
        error = item.param.name + " on " + where + ": " + error + ": " + rerunHint(dir, rank);
        return false;
      }
    if (shard->reader.tensors().size() != index.params.size()) {
      error = where + ": holds tensors index.json does not list: " + rerunHint(dir, rank);
      return false;
    }
  }

  // The output's layout first: its header, and the order in which the tensors follow it.
  static const char noData = 0; // the bytes come from the shards below
  for (const IndexParam &item : index.params) {
    SafetensorsTensor tensor;
    tensor.name = item.param.name;
    tensor.dtype = item.dtype;
    tensor.shape = item.param.shape;
    tensor.data = &noData;
    tensor.bytes = elementCount(item.param.shape) * uint64_t(safetensorsDTypeBits(item.dtype)) / 8;
    tensors.push_back(std::move(tensor));
    for (const std::string &alias : item.param.aliases)
      aliases[alias] = item.param.name;
  }
  SafetensorsMetadata metadata = {{"format", "pt"}};
  if (!aliases.empty())
    metadata.emplace_back("initc.aliases", aliases.dump(-1, ' ', false,
                                                        Json::error_handler_t::replace));
  // A pipe or a device cannot take back what it was given: before writing to one, every slice is
  // checked against its checksum (a regular file is a temporary until the end).
  struct stat info;
  const bool checkFirst = ::stat(outPath.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
  const uint64_t work = checkFirst ? 2 * total : total;
  uint64_t done = 0;
  for (const IndexParam &item : index.params) {
    for (int64_t owner = 0; checkFirst && owner < index.worldSize; ++owner) {
      if (!isSliceOwner(index.mesh, item.param, owner))
        continue;
      std::string where = item.param.name + " on rank " + std::to_string(owner) + " (" +
                          index.files[size_t(owner)] + ")";
      OpenShard *shard = cache.get(owner, error);
      const SafetensorsEntry *entry =
          shard ? indexedEntry(shard->reader, shard->records, index, item, owner, error) : nullptr;
      if (!entry) {
        error = where + ": " + error + ": " + rerunHint(dir, owner);
        return false;
      }
      std::string hex;
      if (!shard->reader.checksum(*entry, hex, error)) {
        error = where + ": " + error;
        return false;
      }
      if (hex != shard->records.at(item.param.name).checksum) {
        error = where + ": checksum mismatch, the file is corrupt: " + rerunHint(dir, owner);
        return false;
      }
      if (progress)
        progress(done += entry->bytes(), work);
    }
  }
  std::string header;
  std::vector<size_t> order;
  AtomicFile file;
  if (!buildSafetensorsHeader(tensors, metadata, header, order, error)) {
    error = "cannot write " + outPath + ": " + error;
    return false;
  }
  if (!file.open(outPath, header.size() + total, error, bypassPageCache) ||
      !file.write(header.data(), header.size(), error))
    return false;
  std::vector<char> band;
  RunWriter out(file);
  for (size_t position : order)
    if (!assembleTensor(dir, index, index.params[position], options.bandBytes, cache, out, band,
                        error, [&](uint64_t bytes) {
                          if (progress)
                            progress(done += bytes, work);
                        }))
      return false;
  return out.flush(error) && file.commit(error);
}

} // namespace initrt
