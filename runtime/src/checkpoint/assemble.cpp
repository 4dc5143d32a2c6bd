#include "checkpoint/assemble.h"

#include "checkpoint/hf_files.h"
#include "checkpoint/records.h"
#include "checkpoint/slice_source.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/json_text.h"
#include "io/direct_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;

namespace {

std::vector<std::string> directoryNames(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *handle = ::opendir(dir.c_str())) {
    while (dirent *entry = ::readdir(handle))
      if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
        names.push_back(entry->d_name);
    ::closedir(handle);
  }
  std::sort(names.begin(), names.end());
  return names;
}

uint64_t tensorBytes(const Param &param) {
  return elementCount(param.shape) * uint64_t(dtypeBytes(param.dtype));
}

/// The canonical path of `path`, which need not exist: its longest existing prefix resolved,
/// the rest appended.
std::string canonicalPath(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  std::string tail;
  for (;;) { // "." and "/" always resolve
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) {
      std::string head = resolved;
      return tail.empty() ? head : (head == "/" ? "" : head) + tail;
    }
    size_t slash = path.find_last_of('/');
    tail = (slash == std::string::npos ? "/" + path : path.substr(slash)) + tail;
    path = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  }
}

/// Refuses a one-file output that is one of the checkpoint's own files (by device and inode,
/// hard links and symbolic links included), or a name the checkpoint's directory reserves for
/// them: writing it would destroy the checkpoint being read.
bool fileOutsideCheckpoint(const std::string &dir, const std::string &layout,
                           const std::string &outPath, std::string &error) {
  auto refuse = [&](const std::string &name) {
    error = "-o " + outPath + " is the checkpoint's own " + name + " (in " + dir +
            "): writing it would destroy the checkpoint being assembled; choose another -o";
    return false;
  };
  std::vector<std::string> own;
  for (const std::string &name : directoryNames(dir))
    if (layoutReservesName(layout, name))
      own.push_back(name);
  struct stat out, theirs;
  if (::stat(outPath.c_str(), &out) == 0)
    for (const std::string &name : own)
      if (::stat(joinPath(dir, name).c_str(), &theirs) == 0 && out.st_dev == theirs.st_dev &&
          out.st_ino == theirs.st_ino)
        return refuse(name);
  // By name, for files missing from the checkpoint: is the output's directory the checkpoint's?
  std::string target = writtenPath(outPath);
  size_t slash = target.rfind('/');
  std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  struct stat parentInfo, dirInfo;
  if (layoutReservesName(layout, base) && ::stat(parent.c_str(), &parentInfo) == 0 &&
      ::stat(dir.c_str(), &dirInfo) == 0 && parentInfo.st_dev == dirInfo.st_dev &&
      parentInfo.st_ino == dirInfo.st_ino)
    return refuse(base);
  return true;
}

/// Writes runs of bytes to a file in order, gathering short ones into one write: a tensor split
/// along its last dim comes as one run per row and slice, a few bytes each. Or, for a tensor
/// stored in pieces (an MoE model's experts written per expert), writes the bytes of its pieces
/// in file `file` at their offsets and drops the rest (written with another file).
class RunWriter {
public:
  explicit RunWriter(AtomicFile &file) : file(file) {}
  /// The tensor's bytes from its first on go to its `pieces` that lie in file `onlyFile`.
  void scatter(std::vector<HfPiece> tensorPieces, int64_t onlyFile) {
    pieces = std::move(tensorPieces);
    scatterFile = onlyFile;
    position = 0;
  }
  bool write(const char *data, uint64_t bytes, std::string &error) {
    if (bytes >= kGatherBytes)
      return flush(error) && put(data, bytes, error);
    if (gathered.size() + bytes > kGatherBytes && !flush(error))
      return false;
    gathered.insert(gathered.end(), data, data + bytes);
    return true;
  }
  bool flush(std::string &error) {
    bool ok = gathered.empty() || put(gathered.data(), gathered.size(), error);
    gathered.clear();
    return ok;
  }

private:
  bool put(const char *data, uint64_t bytes, std::string &error) {
    if (pieces.empty())
      return file.write(data, bytes, error);
    while (bytes > 0) {
      auto next = std::upper_bound(pieces.begin(), pieces.end(), position,
                                   [](uint64_t at, const HfPiece &p) { return at < p.begin; });
      if (next == pieces.begin()) {
        error = "internal: a byte before the tensor's first piece (run again)";
        return false;
      }
      const HfPiece &piece = *(next - 1);
      const uint64_t n = std::min(bytes, piece.begin + piece.bytes - position);
      if (n == 0 || n > bytes) {
        error = "internal: bytes past the tensor's last piece (run again)";
        return false;
      }
      if (piece.file == scatterFile &&
          !file.writeAt(piece.offset + (position - piece.begin), data, n, error))
        return false;
      data += n;
      position += n;
      bytes -= n;
    }
    return true;
  }

  static constexpr uint64_t kGatherBytes = 1 << 20;
  AtomicFile &file;
  std::vector<char> gathered;
  std::vector<HfPiece> pieces; // empty: in order, at the file's position
  int64_t scatterFile = -1;
  uint64_t position = 0; // of the next byte, in the tensor's bytes
};

/// One stored box of the tensor being assembled: read in its own row-major order, band after
/// band, and checked against its checksum at the end.
struct Reading {
  const StoredBox *box = nullptr;
  std::vector<int64_t> offset, shape, strides; // strides in elements, of the box's own order
  uint64_t bytes = 0;
  StreamingChecksum sum;
  uint64_t consumed = 0; // bytes read so far
  // In the current band: where its part is in the band buffer, and the part's first element
  // (box-linear) and bounds along the band's dim.
  uint64_t bandAt = 0, firstElement = 0;
  int64_t lo = 0, hi = 0;
};

/// A box of the output's record, hashed in its own row-major order as the
/// tensor's bytes go out in the global order (a box's elements keep their order in it).
struct Hashing {
  std::vector<int64_t> offset, shape;
  StreamingChecksum sum;
};

std::vector<int64_t> orOne(const std::vector<int64_t> &shape, int64_t value) {
  return shape.empty() ? std::vector<int64_t>{value} : shape;
}

/// Writes one tensor to `out` in the global row-major order, straight from its stored boxes: a
/// band of its global rows (at most `bandBytes`) is read from the boxes that cross it, then
/// written by runs out of their parts. Memory stays at one band, whatever the model's size.
/// `sums` gets the checksum of the whole tensor's bytes.
bool assembleTensor(SliceSource &source, size_t index, uint64_t bandBytes, RunWriter &out,
                    std::vector<char> &band, std::vector<std::string> &sums, std::string &error,
                    const std::function<void(uint64_t)> &bandDone) {
  const Param &param = source.tensors()[index].param;
  std::vector<StoredBox> stored;
  if (!source.boxes(index, stored, error))
    return false;
  const uint64_t elementBytes = uint64_t(dtypeBytes(param.dtype));
  // A scalar is a tensor of one element here.
  const std::vector<int64_t> global = orOne(param.shape, 1);
  const size_t rank = global.size();
  std::vector<std::unique_ptr<Reading>> slices;
  for (const StoredBox &box : stored) {
    auto part = std::make_unique<Reading>();
    part->box = &box;
    part->offset = orOne(box.offset, 0);
    part->shape = orOne(box.shape, 1);
    part->strides.assign(rank, 1);
    for (size_t d = rank - 1; d-- > 0;)
      part->strides[d] = part->strides[d + 1] * part->shape[d + 1];
    part->bytes = elementCount(part->shape) * elementBytes;
    slices.push_back(std::move(part));
  }
  // The output's record holds one checksum of the whole tensor (one box, written by one rank).
  std::vector<std::unique_ptr<Hashing>> hashing;
  hashing.push_back(std::make_unique<Hashing>());
  hashing.back()->offset.assign(rank, 0);
  hashing.back()->shape = global;

  // Bands: the outermost dim `k` whose rows (one index of it, every index of the dims after it)
  // fit `bandBytes`, `perBand` of its indices at a time, under each index of the dims before it.
  std::vector<uint64_t> rowBytes(rank);
  for (size_t d = rank; d-- > 0;)
    rowBytes[d] = d + 1 == rank ? elementBytes : rowBytes[d + 1] * uint64_t(global[d + 1]);
  size_t k = 0;
  while (k + 1 < rank && rowBytes[k] > bandBytes)
    ++k;
  // A tensor with a dim of 0 has no bands (and rows of 0 bytes); its boxes are checked below.
  const bool empty = elementCount(global) == 0;
  const int64_t perBand = empty ? 1 : int64_t(std::max<uint64_t>(1, bandBytes / rowBytes[k]));
  if (!empty)
    band.resize(size_t(std::min(uint64_t(perBand), uint64_t(global[k])) * rowBytes[k]));

  std::vector<int64_t> prefix(k, 0), row(rank, 0);
  std::vector<Reading *> parts;
  std::vector<Hashing *> hashed; // the record's boxes crossing the band
  const char *pending = nullptr; // a run written when the next one does not continue it
  uint64_t pendingBytes = 0, bandWritten = 0;
  // A run of the row at `coords` (every dim but the last), from column `column` on.
  auto append = [&](const char *data, uint64_t bytes, const std::vector<int64_t> &coords,
                    int64_t column) {
    const int64_t columns = int64_t(bytes / elementBytes);
    for (Hashing *box : hashed) {
      bool covers = true;
      for (size_t d = 0; d + 1 < rank && covers; ++d)
        covers = box->offset[d] <= coords[d] && coords[d] < box->offset[d] + box->shape[d];
      const int64_t lo = std::max(column, box->offset[rank - 1]);
      const int64_t hi = std::min(column + columns, box->offset[rank - 1] + box->shape[rank - 1]);
      if (covers && lo < hi)
        box->sum.update(data + uint64_t(lo - column) * elementBytes,
                        size_t(uint64_t(hi - lo) * elementBytes));
    }
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
      // The boxes crossing this band, and their parts of it, read in their own order.
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
          error = slice->box->where + ": read out of order (internal error; run again)";
          return false;
        }
        if (!source.readBox(*slice->box, elementBytes, slice->consumed, band.data() + at, bytes,
                            error)) {
          error = slice->box->where + ": " + error;
          return false;
        }
        slice->sum.update(band.data() + at, size_t(bytes));
        slice->consumed += bytes;
        slice->bandAt = at;
        slice->firstElement = first;
        at += bytes;
        parts.push_back(slice.get());
      }
      hashed.clear();
      for (auto &box : hashing) {
        bool crosses = box->offset[k] < b && a < box->offset[k] + box->shape[k];
        for (size_t d = 0; d < k && crosses; ++d)
          crosses = box->offset[d] <= prefix[d] && prefix[d] < box->offset[d] + box->shape[d];
        if (crosses)
          hashed.push_back(box.get());
      }
      // The band in the global order: its rows (every index but the last dim's), each made of
      // the runs of the boxes that cross it, left to right.
      std::sort(parts.begin(), parts.end(), [&](const Reading *x, const Reading *y) {
        return x->offset[rank - 1] < y->offset[rank - 1];
      });
      if (k + 1 == rank) { // the band lies within one row
        for (Reading *part : parts)
          if (!append(band.data() + part->bandAt, uint64_t(part->hi - part->lo) * elementBytes,
                      prefix, part->lo))
            return false;
      } else {
        for (size_t d = 0; d < k; ++d)
          row[d] = prefix[d];
        for (size_t d = k; d + 1 < rank; ++d)
          row[d] = d == k ? a : 0;
        for (;;) {
          for (Reading *part : parts) {
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
                        uint64_t(part->shape[rank - 1]) * elementBytes, row,
                        part->offset[rank - 1]))
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
      // The boxes tile the tensor: a band is exactly its bytes, or the file would shift.
      if (at != uint64_t(b - a) * rowBytes[k] || bandWritten != at) {
        error = param.name + ": the stored boxes do not tile rows " + std::to_string(a) + " to " +
                std::to_string(b) + " of dim " + std::to_string(k) +
                " (internal error; run again)";
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
      error = slice->box->where + ": " + std::to_string(slice->bytes - slice->consumed) +
              " bytes never read (internal error; run again)";
      return false;
    }
    if (slice->sum.hex() != slice->box->checksum) {
      error = slice->box->where + ": checksum mismatch, the file is corrupt: " + slice->box->hint;
      return false;
    }
  }
  sums.clear();
  for (auto &box : hashing)
    sums.push_back(box->sum.hex());
  return true;
}

/// Reads every stored box whole and checks it against its checksum, before anything is given
/// to an output that cannot take it back (a pipe, a device).
bool checkEveryBox(SliceSource &source, std::string &error,
                   const std::function<void(uint64_t)> &read) {
  std::vector<char> chunk;
  std::vector<StoredBox> stored;
  for (size_t index = 0; index < source.tensors().size(); ++index) {
    const uint64_t elementBytes = uint64_t(dtypeBytes(source.tensors()[index].param.dtype));
    if (!source.boxes(index, stored, error))
      return false;
    for (const StoredBox &box : stored) {
      const uint64_t bytes = elementCount(orOne(box.shape, 1)) * elementBytes;
      StreamingChecksum sum;
      for (uint64_t from = 0; from < bytes;) {
        uint64_t take = std::min(bytes - from, kReadChunk / elementBytes * elementBytes);
        chunk.resize(size_t(take));
        if (!source.readBox(box, elementBytes, from, chunk.data(), take, error)) {
          error = box.where + ": " + error;
          return false;
        }
        sum.update(chunk.data(), size_t(take));
        from += take;
        read(take);
      }
      if (sum.hex() != box.checksum) {
        error = box.where + ": checksum mismatch, the file is corrupt: " + box.hint;
        return false;
      }
    }
  }
  return true;
}

bool oneFile(SliceSource &source, const std::string &outPath, std::string &error,
             const ProgressFn &progress, const AssembleOptions &options) {
  const std::vector<SourceTensor> &tensors = source.tensors();
  uint64_t total = 0; // the model's bytes
  std::vector<SafetensorsTensor> layout;
  nlohmann::ordered_json aliases = nlohmann::ordered_json::object();
  static const char noData = 0; // the bytes come from the checkpoint below
  for (const SourceTensor &tensor : tensors) {
    SafetensorsTensor entry;
    entry.name = tensor.param.name;
    entry.dtype = dtypeName(tensor.param.dtype);
    entry.shape = tensor.param.shape;
    entry.data = &noData;
    entry.bytes = tensorBytes(tensor.param);
    total += entry.bytes;
    layout.push_back(std::move(entry));
    for (const std::string &alias : tensor.param.aliases)
      aliases[alias] = tensor.param.name;
  }
  SafetensorsMetadata metadata = {{"format", "pt"}};
  if (!aliases.empty())
    metadata.emplace_back("initc.aliases",
                          aliases.dump(-1, ' ', false, Json::error_handler_t::replace));
  // A pipe or a device cannot take back what it was given: before writing to one, every box is
  // checked against its checksum (a regular file is a temporary until the end).
  struct stat info;
  const bool checkFirst = ::stat(outPath.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
  const uint64_t work = checkFirst ? 2 * total : total;
  uint64_t done = 0;
  auto advance = [&](uint64_t bytes) {
    if (progress)
      progress(done += bytes, work);
  };
  if (checkFirst && !checkEveryBox(source, error, advance))
    return false;
  std::string header;
  std::vector<size_t> order;
  AtomicFile file;
  if (!buildSafetensorsHeader(layout, metadata, header, order, error)) {
    error = "cannot write " + outPath + ": " + error;
    return false;
  }
  if (!file.open(outPath, header.size() + total, error, bypassPageCache) ||
      !file.write(header.data(), header.size(), error))
    return false;
  std::vector<char> band;
  std::vector<std::string> sums;
  RunWriter out(file);
  for (size_t position : order)
    if (!assembleTensor(source, position, options.bandBytes, out, band, sums, error, advance))
      return false;
  return out.flush(error) && file.commit(error);
}

// The files an hf output directory may hold: those assemble writes, and their temporaries.
bool hfOutputName(const std::string &name) {
  return parseHfFileName(name) || name == kHfIndexFile || name == kHfConfigFile ||
         name == kHfRecordFile || name == hf::kSumsDir;
}
bool hfOutputTemporary(const std::string &name) {
  size_t tmp = name.rfind(".tmp-");
  return name.size() > 1 && name[0] == '.' && tmp != std::string::npos &&
         hfOutputName(name.substr(1, tmp - 1));
}

bool syncDirectory(const std::string &dir, std::string &error) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool ok = fd >= 0 && ::fsync(fd) == 0;
  if (!ok)
    error = "cannot sync " + dir + ": " + std::strerror(errno);
  if (fd >= 0)
    ::close(fd);
  return ok;
}

/// The record of the output: what the hf layout's writer records (ir-spec/checkpoint.md, "The
/// hf layout"), as if one rank had written every tensor whole, so that `initc verify` reads the
/// output as it reads prog/init's: initc-checkpoint.json and that rank's sums file.
bool writeHfRecord(SliceSource &source, const HfPlan &plan, uint64_t maxShardBytes,
                   const std::vector<std::vector<std::string>> &sums, const std::string &outDir,
                   std::string &error) {
  const Program &program = source.program();
  const std::string record = hf::wholeTensorRecordJson(program, plan, maxShardBytes);
  // The boxes verify recomputes from the record: one per tensor with elements, in its order.
  std::vector<uint64_t> boxSums;
  for (size_t i = 0; i < program.params.size(); ++i) {
    if (plan.places[i].file < 0 || program.params[i].numElements() == 0)
      continue;
    uint64_t value = 0;
    if (sums[i].size() != 1 || !parseChecksumHex(sums[i][0], value)) {
      error = program.params[i].name + ": no checksum of the whole tensor (internal error; run "
              "again)";
      return false;
    }
    boxSums.push_back(value);
  }
  std::error_code failed;
  std::filesystem::create_directories(hf::sumsDir(outDir), failed);
  if (failed) {
    error = "cannot create " + hf::sumsDir(outDir) + ": " + failed.message();
    return false;
  }
  // Sums of an earlier output's other ranks vouch for nothing here.
  for (const std::string &name : directoryNames(hf::sumsDir(outDir)))
    if (name != "." && name != ".." && joinPath(hf::sumsDir(outDir), name) != hf::sumsPath(outDir, 0))
      std::filesystem::remove_all(joinPath(hf::sumsDir(outDir), name), failed);
  return writeFileAtomically(hf::sumsPath(outDir, 0),
                             hf::sumsFileBytes(program.programId, 0, 1, boxSums), error) &&
         writeFileAtomically(joinPath(outDir, kHfRecordFile), record, error);
}

/// Refuses a directory output that is the checkpoint or inside it, is not a directory, or holds
/// files an hf checkpoint does not have.
bool directoryOutputAllowed(const std::string &ckptDir, const std::string &outDir,
                            std::string &error) {
  // Not the checkpoint being read, nor inside it.
  const std::string out = canonicalPath(outDir), ckpt = canonicalPath(ckptDir);
  if (out == ckpt || out.compare(0, ckpt.size() + 1, ckpt + "/") == 0) {
    error = "-o " + outDir + " is inside the checkpoint " + ckptDir +
            " being assembled: writing there would change what is read; choose a directory "
            "outside it";
    return false;
  }
  struct stat info;
  if (::stat(outDir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) {
      error = "-o " + outDir + " is " + fileKindText(info.st_mode) +
              ": an -o not ending in .safetensors is the directory of an hf checkpoint; name a "
              ".safetensors file for one file, or a directory";
      return false;
    }
    for (const std::string &name : directoryNames(outDir))
      if (!hfOutputName(name) && !hfOutputTemporary(name)) {
        error = "-o " + outDir + " holds " + name +
                ", which is not a file of an hf checkpoint: choose a new or empty directory";
        return false;
      }
  }
  return true;
}

bool hfDirectory(SliceSource &source, const std::string &outDir, std::string &error,
                 const ProgressFn &progress, const AssembleOptions &options) {
  HfPlan plan;
  const HfExperts experts =
      options.hfExpertsGiven ? options.hfExperts : defaultHfExperts(source.program());
  if (!planHfCheckpoint(source.program(), options.maxShardBytes, plan, error, experts)) {
    error = "cannot lay out " + outDir + ": " + error;
    return false;
  }
  if (!makeDirectories(outDir, error))
    return false;
  std::vector<std::string> prefixes;
  for (const char *name : {".model-", ".model.safetensors.index.json.", ".config.json.",
                           ".initc-checkpoint.json."})
    prefixes.push_back(name);
  removeAbandonedTemporaries(outDir, prefixes);
  removeAbandonedTemporaries(hf::sumsDir(outDir), {".rank-"});
  // From here on the directory is not a complete checkpoint: its record goes first.
  const std::string recordPath = joinPath(outDir, kHfRecordFile);
  if (::unlink(recordPath.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove " + recordPath + ": " + std::strerror(errno);
    return false;
  }
  if (!syncDirectory(outDir, error))
    return false;

  const Program &program = source.program();
  uint64_t total = 0, done = 0;
  for (const Param &param : program.params)
    total += tensorBytes(param);
  auto advance = [&](uint64_t bytes) {
    if (progress)
      progress(done += bytes, total);
  };
  std::vector<std::vector<std::string>> sums(program.params.size());
  std::vector<std::string> written; // removed again should a later step fail
  auto failed = [&] {
    for (const std::string &name : written)
      ::unlink(joinPath(outDir, name).c_str());
    return false;
  };
  std::vector<char> band;
  std::vector<bool> counted(program.params.size(), false); // progress: each tensor once
  bool scattered = false; // an MoE model's experts written per expert
  for (const HfPlace &place : plan.places)
    scattered = scattered || !place.pieces.empty();
  for (size_t f = 0; f < plan.files.size(); ++f) {
    const HfFile &plannedFile = plan.files[f];
    const std::string path = joinPath(outDir, plannedFile.name);
    std::vector<size_t> order = plannedFile.params;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return plan.places[x].offset < plan.places[y].offset;
    });
    AtomicFile file;
    if (!file.open(path, plannedFile.size, error, bypassPageCache) ||
        !(scattered ? file.writeAt(0, plannedFile.header.data(), plannedFile.header.size(), error)
                    : file.write(plannedFile.header.data(), plannedFile.header.size(), error)))
      return failed();
    RunWriter runs(file);
    uint64_t at = plannedFile.header.size();
    for (size_t param : order) {
      const HfPlace &place = plan.places[param];
      std::vector<std::string> tensorSums;
      auto count = [&](uint64_t bytes) {
        if (!counted[param])
          advance(bytes);
      };
      if (scattered) {
        // A tensor written per expert: its bytes in this file, at its pieces' offsets; a tensor
        // whose pieces lie in two files is assembled once for each. The other tensors of such a
        // plan are written at their offsets too, since the pieces leave no position to follow.
        runs.scatter(hfPieces(place), int64_t(f));
        if (!assembleTensor(source, param, options.bandBytes, runs, band, tensorSums, error,
                            count) ||
            !runs.flush(error))
          return failed();
        for (const HfPiece &piece : hfPieces(place))
          at += piece.file == int64_t(f) ? piece.bytes : 0;
      } else {
        if (place.offset != at) {
          error = plannedFile.name + ": " + program.params[param].name +
                  " is not where the plan puts it (internal error; run again)";
          return failed();
        }
        if (!assembleTensor(source, param, options.bandBytes, runs, band, tensorSums, error,
                            count))
          return failed();
        at += tensorBytes(program.params[param]);
      }
      counted[param] = true;
      sums[param] = std::move(tensorSums);
    }
    if (at != plannedFile.size) {
      error = plannedFile.name + ": " + std::to_string(at) + " bytes written of " +
              std::to_string(plannedFile.size) + " (internal error; run again)";
      return failed();
    }
    if (!runs.flush(error) || !file.commit(error))
      return failed();
    written.push_back(plannedFile.name);
  }
  // Files of an earlier output this one does not have (another --max-shard-size).
  std::set<std::string> planned(written.begin(), written.end());
  for (const std::string &name : directoryNames(outDir))
    if (parseHfFileName(name) && !planned.count(name) &&
        ::unlink(joinPath(outDir, name).c_str()) != 0) {
      error = "cannot remove " + joinPath(outDir, name) + ", a file of an earlier output: " +
              std::strerror(errno);
      return failed();
    }
  // The config the source has; without one (a ranks checkpoint records none), a config.json
  // already in the directory is kept: one put there beside the weights on purpose.
  if (!writeFileAtomically(joinPath(outDir, kHfIndexFile), hfIndexJson(program, plan), error) ||
      (!program.hfConfig.empty() &&
       !writeFileAtomically(joinPath(outDir, kHfConfigFile), program.hfConfig, error)))
    return failed();
  written.push_back(kHfIndexFile);
  // Last: its presence means the directory is complete.
  return writeHfRecord(source, plan, options.maxShardBytes, sums, outDir, error) || failed();
}

} // namespace

bool assembleOutputIsDirectory(const std::string &outPath) {
  const std::string suffix = ".safetensors";
  if (outPath.size() >= suffix.size() &&
      outPath.compare(outPath.size() - suffix.size(), suffix.size(), suffix) == 0)
    return false;
  // An existing file (or pipe, or device) is written as one file, as before directories were.
  struct stat info;
  return ::stat(outPath.c_str(), &info) != 0 || S_ISDIR(info.st_mode);
}

bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error,
                        const ProgressFn &progress, const AssembleOptions &options) {
  // The output is checked first: refusing it needs no more of the checkpoint than its names.
  const bool directory = assembleOutputIsDirectory(outPath);
  if (directory ? !directoryOutputAllowed(dir, outPath, error)
                : !fileOutsideCheckpoint(dir, detectCheckpointLayout(dir), outPath, error))
    return false;
  std::unique_ptr<SliceSource> source = openSliceSource(dir, error);
  if (!source)
    return false;
  return directory ? hfDirectory(*source, outPath, error, progress, options)
                   : oneFile(*source, outPath, error, progress, options);
}

} // namespace initrt
