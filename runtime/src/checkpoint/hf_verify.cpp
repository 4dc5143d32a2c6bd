// `initc verify` of an hf checkpoint: initc-checkpoint.json, the ranks' sums files and the data
// files alone (no program): every file's size and header against the record, then rank by rank
// its sums file and each of its boxes (writeBoxes of the record's mesh and split axes) against it.
#include "checkpoint/verify.h"

#include "checkpoint/hf_files.h"
#include "initrt/base/checksum.h"
#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace initrt {

using namespace hf;

namespace {

std::string sliceText(const Slice &box) {
  auto list = [](const std::vector<int64_t> &values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i)
      text += (i ? "," : "") + std::to_string(values[i]);
    return text + "]";
  };
  return "offset " + list(box.offset) + " shape " + list(box.shape);
}

std::string repairHint(const std::string &dir, int64_t rank) {
  return "repair it with `prog/init --rank " + std::to_string(rank) + " --out " + dir + "`";
}

// The file's header matches the record: its size, and each tensor's dtype, shape and place.
bool checkFile(const std::string &dir, const Record &record, const FileRecord &file,
               std::vector<std::string> &problems) {
  const std::string path = joinPath(dir, file.name);
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    problems.push_back(file.name + " is missing: rerun the whole job (`mpirun -np N prog/init "
                       "--out " + dir + "`)");
    return false;
  }
  if (uint64_t(info.st_size) != file.size) {
    problems.push_back(file.name + " is " + std::to_string(info.st_size) + " bytes, not the " +
                       std::to_string(file.size) + " recorded (" +
                       (uint64_t(info.st_size) < file.size ? "truncated" : "changed") +
                       "): rerun the whole job with --overwrite");
    return false;
  }
  SafetensorsReader reader;
  std::string error;
  if (!reader.open(path, error)) {
    problems.push_back(file.name + ": " + error + ": rerun the whole job with --overwrite");
    return false;
  }
  size_t expected = 0;
  // A tensor written per expert: the header lists each of its pieces in this file under the
  // expert's own name (not recorded), with its dtype, place and size.
  std::map<uint64_t, const SafetensorsEntry *> byOffset;
  for (const SafetensorsEntry &found : reader.tensors())
    byOffset[reader.dataStart() + found.begin] = &found;
  for (const auto &entry : record.tensors) {
    const TensorRecord &tensor = entry.second;
    if (!tensor.pieces.empty()) {
      for (const HfPiece &piece : tensor.pieces) {
        if (record.files[size_t(piece.file)].name != file.name)
          continue;
        ++expected;
        auto found = byOffset.find(piece.offset);
        if (found == byOffset.end() || found->second->dtype != tensor.dtype ||
            found->second->bytes() != piece.bytes) {
          problems.push_back(file.name + ": its header does not list a tensor of " + entry.first +
                             "'s bytes at offset " + std::to_string(piece.offset) +
                             " as recorded (dtype, size): the file changed after the job wrote "
                             "it; rerun the whole job with --overwrite");
          return false;
        }
      }
      continue;
    }
    if (tensor.file != file.name)
      continue;
    ++expected;
    const SafetensorsEntry *found =
        reader.find(tensor.storedName.empty() ? entry.first : tensor.storedName);
    if (!found || found->dtype != tensor.dtype || found->shape != tensor.shape ||
        reader.dataStart() + found->begin != tensor.offset) {
      problems.push_back(file.name + ": its header does not list " + entry.first +
                         " as recorded (dtype, shape, offset): the file changed after the job "
                         "wrote it; rerun the whole job with --overwrite");
      return false;
    }
  }
  if (reader.tensors().size() != expected) {
    problems.push_back(file.name + ": its header lists tensors the record does not: the file "
                       "changed after the job wrote it; rerun the whole job with --overwrite");
    return false;
  }
  return true;
}

} // namespace

bool verifyHfCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                        std::string &error, const ProgressFn &progress, int threads) {
  problems.clear();
  Record record;
  if (!readRecord(dir, record, error))
    return false;
  std::map<std::string, bool> fileOk;
  for (const FileRecord &file : record.files)
    fileOk[file.name] = checkFile(dir, record, file, problems);

  // The tensors as a program: what writeBoxes recomputes every rank's boxes from.
  const Program program = record.program();
  std::vector<const TensorRecord *> byIndex(program.params.size());
  for (const auto &entry : record.tensors)
    byIndex[size_t(entry.second.index)] = &entry.second;
  std::vector<bool> usable(program.params.size(), true);
  uint64_t total = 0;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    const TensorRecord &tensor = *byIndex[p];
    const int bits = safetensorsDTypeBits(tensor.dtype);
    if (bits <= 0 || bits % 8 != 0) {
      problems.push_back(param.name + ": the record's dtype " + tensor.dtype +
                         " is not one initc writes");
      usable[p] = false;
    } else if (!fileOk.count(tensor.file)) {
      problems.push_back(param.name + ": the record places it in " + tensor.file +
                         ", which it does not list");
      usable[p] = false;
    } else {
      total += uint64_t(param.numElements()) * uint64_t(bits / 8);
    }
  }

  // Rank by rank: workers take ranks in turn, so that at most one rank's boxes and sums per
  // worker are held, however many ranks wrote the checkpoint.
  const int64_t world = program.mesh.size();
  std::vector<std::vector<std::string>> found(static_cast<size_t>(world));
  std::atomic<int64_t> next{0};
  std::mutex progressLock;
  uint64_t done = 0;
  auto work = [&] {
    std::map<std::string, int> fds;
    for (int64_t rank; (rank = next++) < world;) {
      std::vector<std::string> &mine = found[size_t(rank)];
      const std::vector<ParamBox> boxes = writeBoxes(program, rank);
      std::vector<uint64_t> sums;
      std::string why;
      if (!readSumsFile(sumsPath(dir, rank), record.programId, rank, world, boxes.size(), sums,
                        why)) {
        mine.push_back("rank " + std::to_string(rank) + "'s checksums: " + why + ": " +
                       repairHint(dir, rank));
        continue;
      }
      uint64_t bytes = 0;
      for (size_t b = 0; b < boxes.size(); ++b) {
        const Param &param = program.params[boxes[b].param];
        const TensorRecord &tensor = *byIndex[boxes[b].param];
        if (!usable[boxes[b].param] || !fileOk[tensor.file])
          continue; // said once, for the tensor or the file
        const uint64_t elementBytes = uint64_t(safetensorsDTypeBits(tensor.dtype) / 8);
        std::vector<HfPiece> pieces = tensor.pieces;
        if (pieces.empty())
          pieces.push_back(HfPiece{0, uint64_t(param.numElements()) * elementBytes, -1,
                                   tensor.offset});
        bool piecesOk = true;
        for (const HfPiece &piece : pieces)
          piecesOk = piecesOk && fileOk[piece.file < 0 ? tensor.file
                                                       : record.files[size_t(piece.file)].name];
        if (!piecesOk)
          continue; // said once, for the file
        auto nameOf = [&](int64_t file) {
          return file < 0 ? tensor.file : record.files[size_t(file)].name;
        };
        auto fdOf = [&](int64_t file) {
          int &fd = fds[nameOf(file)];
          if (fd == 0)
            fd = ::open(joinPath(dir, nameOf(file)).c_str(), O_RDONLY | O_CLOEXEC);
          return fd;
        };
        BoxPlaces places(tensor.shape, boxes[b].box, elementBytes, std::move(pieces));
        std::string hex;
        const std::string recorded = checksumToHex(sums[b]);
        std::string where = param.name + " (" + tensor.file + ") slice " +
                            sliceText(boxes[b].box) + " written by rank " + std::to_string(rank);
        if (!checksumBox(places, fdOf, nameOf, hex, why))
          mine.push_back(where + ": " + why + ": " + repairHint(dir, rank));
        else if (hex != recorded)
          mine.push_back(where + ": checksum " + hex + " is not the recorded " + recorded + ": " +
                         repairHint(dir, rank));
        bytes += places.bytes();
      }
      if (progress) {
        std::lock_guard<std::mutex> hold(progressLock);
        done += bytes;
        progress(done, total);
      }
    }
    for (auto &entry : fds)
      if (entry.second > 0)
        ::close(entry.second);
  };
  unsigned workers = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
  workers = unsigned(std::min<int64_t>(workers, std::max<int64_t>(1, world)));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  for (std::vector<std::string> &rankProblems : found)
    for (std::string &problem : rankProblems)
      problems.push_back(std::move(problem));
  return problems.empty();
}

} // namespace initrt
