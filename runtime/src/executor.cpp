// Loading kernels.so and running a rank's kernels on a pool of threads.
#include "initrt/executor.h"
#include "initrt/checksum.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace initrt {

namespace {

struct CpuLevel {
  const char *name;
  int level; // 3: x86-64-v3 (AVX2, BMI2, FMA, F16C), 4: x86-64-v4 (AVX-512)
};

// CPU names LLVM accepts for -mcpu whose code may use AVX2 or AVX-512 instructions.
const CpuLevel kCpuLevels[] = {
    {"x86-64-v3", 3},      {"haswell", 3},         {"broadwell", 3},       {"skylake", 3},
    {"alderlake", 3},      {"raptorlake", 3},      {"meteorlake", 3},      {"arrowlake", 3},
    {"arrowlake-s", 3},    {"lunarlake", 3},       {"pantherlake", 3},     {"gracemont", 3},
    {"sierraforest", 3},   {"grandridge", 3},      {"clearwaterforest", 3}, {"znver1", 3},
    {"znver2", 3},         {"znver3", 3},          {"bdver4", 3},          {"x86-64-v4", 4},
    {"skylake-avx512", 4}, {"cascadelake", 4},     {"cooperlake", 4},      {"cannonlake", 4},
    {"icelake-client", 4}, {"icelake-server", 4},  {"tigerlake", 4},       {"rocketlake", 4},
    {"sapphirerapids", 4}, {"emeraldrapids", 4},   {"graniterapids", 4},   {"graniterapids-d", 4},
    {"diamondrapids", 4},  {"znver4", 4},          {"znver5", 4},
};

const int64_t kNoDims[1] = {0};

const int64_t *dimsOrDummy(const std::vector<int64_t> &dims) {
  return dims.empty() ? kNoDims : dims.data();
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `work` on `threads` threads. Without a monitor the caller is one of them; with one, the
// caller calls `monitor` about every `interval` seconds until the workers are done.
void runOnThreads(int threads, const std::function<void()> &work,
                  const std::function<void()> &monitor, double interval) {
  std::mutex mutex;
  std::condition_variable done;
  size_t finished = 0;
  std::vector<std::thread> workers;
  int spawn = monitor ? threads : threads - 1;
  for (int i = 0; i < spawn; ++i) {
    try {
      workers.emplace_back([&] {
        work();
        std::lock_guard<std::mutex> lock(mutex);
        ++finished;
        done.notify_all();
      });
    } catch (const std::system_error &) {
      break; // fewer threads than asked for is slower, not wrong
    }
  }
  if (monitor && !workers.empty()) {
    std::unique_lock<std::mutex> lock(mutex);
    while (finished < workers.size()) {
      done.wait_for(lock, std::chrono::duration<double>(interval));
      lock.unlock();
      monitor();
      lock.lock();
    }
  } else {
    work();
  }
  for (std::thread &worker : workers)
    worker.join();
}

} // namespace

bool checkTargetCpu(const std::string &targetCpu, std::string &error) {
  int level = 0;
  for (const CpuLevel &entry : kCpuLevels)
    if (targetCpu == entry.name)
      level = entry.level;
  if (level == 0)
    return true;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
            __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (level >= 4)
    ok = ok && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (ok)
    return true;
  error = std::string("the kernels were compiled for ") + targetCpu + ", which needs " +
          (level >= 4 ? "AVX-512" : "AVX2") +
          ", and this CPU lacks it: recompile with --target-cpu=x86-64";
#else
  error = "the kernels were compiled for the x86-64 CPU " + targetCpu +
          " and this machine is not x86-64: recompile on (or for) this machine";
#endif
  return false;
}

KernelLibrary::~KernelLibrary() {
  if (handle)
    dlclose(handle);
}

std::unique_ptr<KernelLibrary> KernelLibrary::load(const std::string &progDir,
                                                   const Program &program, std::string &error) {
  if (!checkTargetCpu(program.targetCpu, error))
    return nullptr;
  const std::string path = progDir + "/" + program.kernelsFile;
  const std::string corrupt = ": " + progDir + " is corrupt or from another compile: recompile";

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno) + corrupt;
    return nullptr;
  }
  StreamingChecksum checksum;
  std::vector<char> buffer(size_t(4) << 20);
  for (;;) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    if (got == 0)
      break;
    checksum.update(buffer.data(), size_t(got));
  }
  ::close(fd);
  if (checksum.hex() != program.kernelsChecksum) {
    error = path + " has checksum " + checksum.hex() + " but program.json expects " +
            program.kernelsChecksum + corrupt;
    return nullptr;
  }

  std::unique_ptr<KernelLibrary> library(new KernelLibrary());
  // A relative path would make dlopen search the library path instead of progDir.
  std::string openPath = path.find('/') == 0 ? path : "./" + path;
  library->handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library->handle) {
    const char *why = dlerror();
    error = "cannot load " + path + ": " + (why ? why : "unknown error") + corrupt;
    return nullptr;
  }
  library->kernels.reserve(program.params.size());
  for (const Param &param : program.params) {
    dlerror();
    void *symbol = dlsym(library->handle, param.kernel.c_str());
    if (!symbol) {
      error = "kernel " + param.kernel + " of " + param.name + " is missing from " + path +
              corrupt;
      return nullptr;
    }
    library->kernels.push_back(reinterpret_cast<KernelFn>(symbol));
  }
  return library;
}

int resolveThreads(int requested) {
  if (requested > 0)
    return requested;
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : int(hardware);
}

void runShardJobs(const std::vector<ShardJob> &jobs, const RunOptions &options) {
  // Chunk c of the whole run is chunk c - firstChunk[j] of job j.
  std::vector<uint64_t> firstChunk(jobs.size() + 1, 0);
  std::vector<int64_t> chunkElements(jobs.size(), 1);
  uint64_t totalBytes = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    int64_t elementBytes = dtypeBytes(jobs[j].param->dtype);
    chunkElements[j] = std::max<int64_t>(1, int64_t(kChunkBytes) / elementBytes);
    int64_t elements = jobs[j].slice.numElements();
    firstChunk[j + 1] = firstChunk[j] + uint64_t((elements + chunkElements[j] - 1) / chunkElements[j]);
    totalBytes += jobs[j].bytes;
  }
  const uint64_t totalChunks = firstChunk.back();
  std::atomic<uint64_t> nextChunk{0};
  std::atomic<uint64_t> bytesDone{0};

  auto work = [&] {
    for (;;) {
      uint64_t chunk = nextChunk.fetch_add(1, std::memory_order_relaxed);
      if (chunk >= totalChunks)
        return;
      size_t j = size_t(std::upper_bound(firstChunk.begin(), firstChunk.end(), chunk) -
                        firstChunk.begin()) - 1;
      const ShardJob &job = jobs[j];
      int64_t elements = job.slice.numElements();
      int64_t begin = int64_t(chunk - firstChunk[j]) * chunkElements[j];
      int64_t end = std::min(elements, begin + chunkElements[j]);
      job.kernel(job.out, dimsOrDummy(job.param->shape), dimsOrDummy(job.slice.offset),
                 dimsOrDummy(job.slice.shape), begin, end);
      bytesDone.fetch_add(uint64_t(end - begin) * uint64_t(dtypeBytes(job.param->dtype)),
                          std::memory_order_relaxed);
    }
  };
  int threads = int(std::min<uint64_t>(uint64_t(resolveThreads(options.threads)),
                                       std::max<uint64_t>(totalChunks, 1)));
  std::function<void()> monitor;
  if (options.progress)
    monitor = [&] { options.progress(bytesDone.load(std::memory_order_relaxed), totalBytes); };
  runOnThreads(threads, work, monitor, options.progressIntervalSeconds);
  if (options.progress)
    options.progress(totalBytes, totalBytes);
}

std::vector<std::string> checksumShardJobs(const std::vector<ShardJob> &jobs, int threads) {
  std::vector<std::string> checksums(jobs.size());
  // Largest shards first, so that a big one does not start last and run alone.
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].bytes > jobs[b].bytes; });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (;;) {
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= order.size())
        return;
      const ShardJob &job = jobs[order[i]];
      checksums[order[i]] = checksumHex(job.out, size_t(job.bytes));
    }
  };
  int workers = int(std::min<size_t>(size_t(resolveThreads(threads)), std::max<size_t>(jobs.size(), 1)));
  runOnThreads(workers, work, nullptr, 0);
  return checksums;
}

std::vector<ShardJob> planRank(const Program &program, const KernelLibrary &kernels, int64_t rank,
                               bool persistentOnly) {
  std::vector<ShardJob> jobs;
  for (size_t p = 0; p < program.params.size(); ++p) {
    const Param &param = program.params[p];
    if (persistentOnly && !param.persistent)
      continue;
    ShardJob job;
    job.param = &param;
    job.kernel = kernels.kernel(p);
    job.slice = sliceForRank(program.mesh, param, rank);
    job.bytes = uint64_t(job.slice.numElements()) * uint64_t(dtypeBytes(param.dtype));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

bool computeRank(const Program &program, const KernelLibrary &kernels, int64_t rank,
                 bool persistentOnly, const RunOptions &options, RankShards &out,
                 std::string &error) {
  if (rank < 0 || rank >= program.mesh.size()) {
    error = "rank " + std::to_string(rank) + " is outside the mesh of " +
            std::to_string(program.mesh.size()) + " devices";
    return false;
  }
  std::vector<ShardJob> jobs = planRank(program, kernels, rank, persistentOnly);
  std::vector<uint64_t> sizes;
  out = RankShards();
  for (const ShardJob &job : jobs) {
    sizes.push_back(job.bytes);
    out.bytes += job.bytes;
    out.elements += job.slice.numElements();
  }
  if (!out.arena.allocate(sizes, error))
    return false;
  for (size_t p = 0, j = 0; p < program.params.size(); ++p) {
    if (persistentOnly && !program.params[p].persistent)
      continue;
    out.paramIndices.push_back(p);
    jobs[j].out = out.arena.shard(j);
    ++j;
  }

  Clock::time_point start = Clock::now();
  runShardJobs(jobs, options);
  out.computeSeconds = secondsSince(start);

  start = Clock::now();
  std::vector<std::string> checksums = checksumShardJobs(jobs, options.threads);
  out.checksumSeconds = secondsSince(start);

  for (size_t j = 0; j < jobs.size(); ++j) {
    ShardTensor tensor;
    tensor.param = jobs[j].param;
    tensor.slice = std::move(jobs[j].slice);
    tensor.data = jobs[j].out;
    tensor.bytes = jobs[j].bytes;
    tensor.checksum = std::move(checksums[j]);
    out.tensors.push_back(std::move(tensor));
  }
  return true;
}

} // namespace initrt
