// `initc verify` of an hf checkpoint: initc-checkpoint.json and the data files alone (no program):
// every file's size and header against the record, every slice's checksum.
#include "checkpoint/verify.h"

#include "checkpoint/hf_files.h"
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
  for (const auto &entry : record.tensors) {
    const TensorRecord &tensor = entry.second;
    if (tensor.file != file.name)
      continue;
    ++expected;
    const SafetensorsEntry *found = reader.find(entry.first);
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

  // Every slice, in tensor order; workers take them in turn, one open file per data file each.
  struct Task {
    const std::string *name;
    const TensorRecord *tensor;
    const SliceRecord *slice;
  };
  std::vector<Task> tasks;
  uint64_t total = 0;
  for (const auto &entry : record.tensors) {
    const int bits = safetensorsDTypeBits(entry.second.dtype);
    if (bits <= 0 || bits % 8 != 0) {
      problems.push_back(entry.first + ": the record's dtype " + entry.second.dtype +
                         " is not one initc writes");
      continue;
    }
    if (!fileOk.count(entry.second.file)) {
      problems.push_back(entry.first + ": the record places it in " + entry.second.file +
                         ", which it does not list");
      continue;
    }
    for (const SliceRecord &slice : entry.second.slices) {
      tasks.push_back({&entry.first, &entry.second, &slice});
      total += uint64_t(slice.box.numElements()) * uint64_t(bits / 8);
    }
  }
  std::vector<std::string> found(tasks.size());
  std::atomic<size_t> next{0};
  std::mutex progressLock;
  uint64_t done = 0;
  auto work = [&] {
    std::map<std::string, int> fds;
    for (size_t t; (t = next++) < tasks.size();) {
      const Task &task = tasks[t];
      const TensorRecord &tensor = *task.tensor;
      if (!fileOk[tensor.file])
        continue; // said once, for the file
      int &fd = fds[tensor.file];
      if (fd == 0)
        fd = ::open(joinPath(dir, tensor.file).c_str(), O_RDONLY | O_CLOEXEC);
      const uint64_t elementBytes = uint64_t(safetensorsDTypeBits(tensor.dtype) / 8);
      BoxRuns runs(tensor.shape, task.slice->box, elementBytes, tensor.offset);
      std::string hex, why;
      std::string where = *task.name + " (" + tensor.file + ") slice " +
                          sliceText(task.slice->box) + " written by rank " +
                          std::to_string(task.slice->rank);
      if (fd < 0)
        found[t] = where + ": cannot open the file: " + std::strerror(errno);
      else if (!checksumBox(fd, runs, hex, why))
        found[t] = where + ": " + why + ": " + repairHint(dir, task.slice->rank);
      else if (hex != task.slice->checksum)
        found[t] = where + ": checksum " + hex + " is not the recorded " + task.slice->checksum +
                   ": " + repairHint(dir, task.slice->rank);
      if (progress) {
        std::lock_guard<std::mutex> hold(progressLock);
        done += runs.count() * runs.runBytes();
        progress(done, total);
      }
    }
    for (auto &entry : fds)
      if (entry.second > 0)
        ::close(entry.second);
  };
  unsigned workers = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<unsigned>(workers, std::max<size_t>(1, tasks.size()));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();
  for (std::string &problem : found)
    if (!problem.empty())
      problems.push_back(std::move(problem));
  return problems.empty();
}

} // namespace initrt
