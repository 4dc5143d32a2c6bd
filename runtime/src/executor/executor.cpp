// Loading kernels.so and running a rank's kernels on a pool of threads.
#include "executor/executor.h"
#include "executor/arena.h"
#include "initrt/base/checksum.h"
#include "initrt/base/cpu.h"
#include "executor/orthogonal.h"
#include "initrt/base/rng.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <mutex>
#include <optional>
#include <sched.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace initrt {

namespace {

const int64_t kNoDims[1] = {0};

const int64_t *dimsOrDummy(const std::vector<int64_t> &dims) {
  return dims.empty() ? kNoDims : dims.data();
}

const uint64_t kNoArgs[1] = {0};

// The kernel's `args`: the parameter's kernel arguments, or a valid dummy when it has none.
const uint64_t *argsOf(const Param &param) {
  return param.kernelArgs.empty() ? kNoArgs : param.kernelArgs.data();
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// How far the thread that faults in pages runs ahead of the workers: 8 MiB, a few huge pages,
// within the last-level cache.
constexpr uint64_t kPrefaultLeadChunks = (uint64_t(8) << 20) / kChunkBytes;

// Whether the machine has one NUMA node (or says nothing of its nodes).
bool singleMemoryNode() {
  static const bool single = [] {
    FILE *file = std::fopen("/sys/devices/system/node/online", "r");
    if (!file)
      return true;
    char text[64] = {0};
    bool one = std::fgets(text, sizeof text, file) && std::strcmp(text, "0\n") == 0;
    std::fclose(file);
    return one;
  }();
  return single;
}

} // namespace

void fillElements(const ShardJob &job, void *out, int64_t begin, int64_t end) {
  if (!job.base && !job.kernel)
    throw std::logic_error(job.param->name + " loads its values, and its base checkpoint was not "
                                             "opened (KernelLibrary::openBaseCheckpoints)");
  if (job.base)
    readBaseElements(*job.base, *job.param, job.slice, out, begin, end);
  else
    job.kernel(out, dimsOrDummy(job.param->shape), dimsOrDummy(job.slice.offset),
               dimsOrDummy(job.slice.shape), begin, end, argsOf(*job.param));
}

void runOnThreads(int threads, const std::function<void()> &work,
                  const std::function<void()> &monitor, double interval) {
  std::mutex mutex;
  std::condition_variable done;
  size_t finished = 0;
  std::exception_ptr failure; // the first exception of any thread, rethrown when all are done
  auto guarded = [&](const std::function<void()> &task) {
    try {
      task();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure)
        failure = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  int spawn = monitor ? threads : threads - 1;
  workers.reserve(size_t(std::max(spawn, 0)));
  for (int i = 0; i < spawn; ++i) {
    try {
      workers.emplace_back([&] {
        guarded(work);
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
      if (failure)
        continue; // a failed monitor is not called again
      lock.unlock();
      guarded(monitor);
      lock.lock();
    }
  } else {
    guarded(work);
  }
  for (std::thread &worker : workers)
    worker.join();
  if (failure)
    std::rethrow_exception(failure);
}

namespace {

// Stores v rounded to the shard's dtype (RNG contract rule 8, from f32; f64 kept as is), a NaN
// as the one NaN of rule 9.
void storeRounded(void *out, int64_t index, DType dtype, double v) {
  const float f = rng::canonicalNaN(static_cast<float>(v));
  switch (dtype) {
  case DType::F64:
    static_cast<double *>(out)[index] = rng::canonicalNaN(v);
    break;
  case DType::F32:
    static_cast<float *>(out)[index] = f;
    break;
  case DType::BF16:
    static_cast<uint16_t *>(out)[index] = rng::toBF16Bits(f);
    break;
  case DType::F16:
    static_cast<uint16_t *>(out)[index] = rng::toF16Bits(f);
    break;
  default:
    break; // program validation only allows float dtypes with a transform
  }
}

// Strategy "redundant": the kernel writes the whole N(0, 1) matrix (F32, at global indices) into
// scratch; the rank orthogonalizes all of it on `threads` threads and keeps its slice.
void computeOrthogonalShard(const ShardJob &job, int threads,
                            const OrthogonalMatrix::Progress &progress, double interval) {
  const Param &param = *job.param;
  const int64_t total = param.numElements();
  const int64_t local = job.slice.numElements();
  if (total == 0 || local == 0)
    return;
  const int64_t rows = param.shape[0], cols = total / rows;
  std::optional<OrthogonalMatrix> factored;
  try {
    std::vector<float> normal(size_t(total), 0.0f);
    std::vector<int64_t> origin(param.shape.size(), 0);
    job.kernel(normal.data(), param.shape.data(), origin.data(), param.shape.data(), 0, total,
               argsOf(param));
    factored.emplace(std::move(normal), rows, cols, threads, progress, interval);
  } catch (const std::bad_alloc &) {
    throw OutOfMemory("the orthogonal tensor " + param.name + " (" + std::to_string(rows) + " x " +
                      std::to_string(cols) + ") needs " +
                      formatBytes(uint64_t(total) * kOrthogonalScratchBytesPerElement) +
                      " of scratch on every rank that holds part of it, whatever the mesh: use "
                      "machines with more memory, or fewer ranks on each");
  }
  const OrthogonalMatrix &q = *factored;
  // Walk the slice in local row-major order, tracking the global linear index.
  const size_t rank = param.shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t l = 0; l < local; ++l) {
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d)
      global = global * param.shape[d] + job.slice.offset[d] + index[d];
    storeRounded(job.out, l, param.dtype, q.at(global / cols, global % cols, param.gain));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < job.slice.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// What to recompile for when this CPU runs none of a program's variants.
std::string recompileAdvice() {
#if defined(__aarch64__)
  const char *portable = "aarch64 (any AArch64 CPU)";
#else
  const char *portable = "x86-64 (any x86-64 CPU)";
#endif
  return std::string("recompile with --target-cpu=") + portable +
         " or a CPU this machine has (--target-cpu=native)";
}
} // namespace

bool checkKernelVariant(const KernelVariant &variant, std::string &error) {
  std::vector<std::string> missing = missingCpuExtensions(variant.extensions);
  if (missing.empty())
    return true;
  std::string names;
  for (size_t i = 0; i < missing.size(); ++i)
    names += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
  error = "the kernels for " + variant.targetCpu + " use " + names + ", which this CPU lacks (" +
          cpuDescription() + "): " + recompileAdvice();
  return false;
}

int selectKernelVariant(const Program &program, const std::string &requested,
                        std::string &error) {
  std::string wanted = requested;
  const char *fromEnvironment = "";
  if (wanted.empty())
    if (const char *env = std::getenv("INITRT_TARGET_CPU"); env && *env) {
      wanted = env;
      fromEnvironment = " (from INITRT_TARGET_CPU)";
    }
  std::string listed;
  for (const KernelVariant &variant : program.kernelVariants)
    listed += (listed.empty() ? "" : ", ") + variant.targetCpu;
  if (!wanted.empty()) {
    for (size_t v = 0; v < program.kernelVariants.size(); ++v)
      if (program.kernelVariants[v].targetCpu == wanted)
        return checkKernelVariant(program.kernelVariants[v], error) ? int(v) : -1;
    error = "no kernels were compiled for " + wanted + fromEnvironment + "; this program has " +
            listed + ": pick one of them, or recompile with --target-cpu=" + wanted;
    return -1;
  }
  std::string why;
  for (size_t v = 0; v < program.kernelVariants.size(); ++v)
    if (checkKernelVariant(program.kernelVariants[v], why))
      return int(v);
  if (program.kernelVariants.size() == 1) {
    error = why;
    return -1;
  }
  // Each variant, with what it needs that this CPU lacks.
  std::string needs;
  for (const KernelVariant &variant : program.kernelVariants) {
    std::vector<std::string> missing = missingCpuExtensions(variant.extensions);
    std::string names;
    for (size_t i = 0; i < missing.size(); ++i)
      names += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    needs += (needs.empty() ? "" : "; ") + variant.targetCpu + " uses " + names;
  }
  error = "this CPU (" + cpuDescription() + ") can run none of the program's kernel variants (" +
          listed + "): " + needs + ", which it lacks: " + recompileAdvice();
  return -1;
}

KernelLibrary::~KernelLibrary() {
  // dlclose before the descriptor is closed: while a library is loaded under the name
  // /proc/self/fd/N, no other handle can be given descriptor N.
  if (handle)
    dlclose(handle);
  if (fd >= 0)
    ::close(fd);
}

bool KernelLibrary::forceCopy = false;

namespace {

// Reads the whole of `fd` from offset 0 into `checksum`, and into `copy` when it is >= 0.
bool checksumDescriptor(int fd, StreamingChecksum &checksum, int copy, std::string &why) {
  std::vector<char> buffer(size_t(4) << 20);
  for (off_t offset = 0;;) {
    ssize_t got = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      why = std::strerror(errno);
      return false;
    }
    if (got == 0)
      return true;
    checksum.update(buffer.data(), size_t(got));
    for (ssize_t put = 0; copy >= 0 && put < got;) {
      ssize_t wrote = ::write(copy, buffer.data() + put, size_t(got - put));
      if (wrote < 0 && errno == EINTR)
        continue;
      if (wrote <= 0) {
        why = std::string("cannot copy it: ") + std::strerror(wrote < 0 ? errno : ENOSPC);
        return false;
      }
      put += wrote;
    }
    offset += got;
  }
}

// The name under which the dynamic loader finds the library open on `fd`: /proc/self/fd/N,
// unless /proc is missing or a library loaded under that name earlier is still mapped (the
// loader would return that one). Empty when it cannot be used.
std::string descriptorName(int fd) {
  std::string name = "/proc/self/fd/" + std::to_string(fd);
  struct stat byName, byFd;
  if (::stat(name.c_str(), &byName) != 0 || ::fstat(fd, &byFd) != 0 ||
      byName.st_dev != byFd.st_dev || byName.st_ino != byFd.st_ino)
    return "";
  // RTLD_NOLOAD finds a loaded object by name, or by device and inode. The latter is this very
  // file, loaded by another live handle: the same bytes, fine to share. The former is a library
  // once loaded from a descriptor of the same number that dlclose did not unmap.
  if (void *loaded = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    struct link_map *map = nullptr;
    bool stale = dlinfo(loaded, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name ||
                 name == map->l_name;
    dlclose(loaded);
    if (stale)
      return "";
  }
  return name;
}

} // namespace

std::unique_ptr<KernelLibrary> KernelLibrary::load(const std::string &progDir,
                                                   const Program &program, std::string &error,
                                                   const std::string &requestedCpu) {
  const std::string path = progDir + "/" + program.kernelsFile;
  const std::string corrupt = ": " + progDir + " is corrupt or from another compile: recompile";

  // The library is opened once: the bytes checksummed are those of the file the loader maps,
  // whatever happens to the path meanwhile (a program directory replaced by another compile).
  // Loading it by path instead would return a library already loaded under that path by an
  // open handle: the old kernels, even for another dtype.
  std::unique_ptr<KernelLibrary> library(new KernelLibrary());
  do {
    library->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (library->fd < 0 && errno == EINTR);
  if (library->fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno) + corrupt;
    return nullptr;
  }
  struct stat info;
  if (::fstat(library->fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = path + " is not a regular file" + corrupt;
    return nullptr;
  }
  // Code for another architecture is refused by its ELF header, before any variant's
  // extensions are looked for on a CPU that could not run any of them.
  unsigned char header[64] = {};
  ssize_t headerBytes = ::pread(library->fd, header, sizeof header, 0);
  std::string foreign = foreignElfArchitecture(header, headerBytes > 0 ? size_t(headerBytes) : 0);
  if (!foreign.empty()) {
    std::string host = elfMachineName(hostElfMachine());
    error = path + " holds " + foreign + " code, and this machine (" + cpuDescription() +
            ") runs " + host + ": run the program on an " + foreign +
            " host, or compile it for this one (initc compile --target-cpu for an " + host +
            " CPU)";
    return nullptr;
  }
  int variant = selectKernelVariant(program, requestedCpu, error);
  if (variant < 0)
    return nullptr;
  const KernelVariant &chosen = program.kernelVariants[size_t(variant)];
  StreamingChecksum checksum;
  std::string why;
  if (!checksumDescriptor(library->fd, checksum, -1, why)) {
    error = "cannot read " + path + ": " + why;
    return nullptr;
  }
  if (checksum.hex() != program.kernelsChecksum) {
    error = path + " has checksum " + checksum.hex() + " but program.json expects " +
            program.kernelsChecksum + corrupt;
    return nullptr;
  }

  std::string openPath = forceCopy ? "" : descriptorName(library->fd);
  if (!openPath.empty()) {
    library->handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  } else {
    // Without /proc: a private copy under a unique name, checksummed as it is written, removed
    // once loaded (the mapping keeps it, and its inode, until dlclose).
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/initrt-kernels-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int copy = ::mkstemp(name.data());
    if (copy < 0) {
      error = "cannot load " + path + ": cannot create a private copy " + pattern + ": " +
              std::strerror(errno) + " (set TMPDIR to a writable directory)";
      return nullptr;
    }
    StreamingChecksum copied;
    bool ok = checksumDescriptor(library->fd, copied, copy, why);
    ::close(copy);
    if (ok && copied.hex() != program.kernelsChecksum) {
      ok = false;
      why = "it changed while it was read";
    }
    if (ok)
      library->handle = dlopen(name.data(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(name.data());
    if (!ok) {
      error = "cannot load " + path + ": " + why + corrupt;
      return nullptr;
    }
  }
  if (!library->handle) {
    const char *why = dlerror();
    error = "cannot load " + path + ": " + (why ? why : "unknown error") + corrupt;
    return nullptr;
  }
  library->cpu = chosen.targetCpu;
  library->kernels.reserve(program.params.size());
  for (const Param &param : program.params) {
    if (param.load) {
      library->kernels.push_back(nullptr);
      continue;
    }
    dlerror();
    const std::string name = param.kernel + chosen.suffix;
    void *symbol = dlsym(library->handle, name.c_str());
    if (!symbol) {
      error = "kernel " + name + " of " + param.name + " is missing from " + path + corrupt;
      return nullptr;
    }
    library->kernels.push_back(reinterpret_cast<KernelFn>(symbol));
  }
  return library;
}

int resolveThreads(int requested) {
  if (requested > 0)
    return requested;
  // The CPUs this process may run on: mpirun binds each rank to its cores, and a container or
  // taskset may allow fewer than the machine has; more threads would only take turns.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
    return CPU_COUNT(&allowed);
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : int(hardware);
}

CpuShare shareCpus(const std::vector<cpu_set_t> &host, size_t self) {
  const cpu_set_t &mine = host[self];
  CpuShare share;
  share.cpus = CPU_COUNT(&mine);
  if (share.cpus == 0) { // the mask could not be read
    share.threads = resolveThreads(0);
    return share;
  }
  bool sameMask = true;
  int sharingBefore = 0;
  share.sharing = 0;
  for (size_t p = 0; p < host.size(); ++p) {
    cpu_set_t common;
    CPU_AND(&common, &mine, &host[p]);
    if (CPU_COUNT(&common) == 0)
      continue;
    sameMask = sameMask && CPU_EQUAL(&mine, &host[p]);
    ++share.sharing;
    sharingBefore += p < self;
  }
  if (sameMask) {
    share.threads = share.cpus / share.sharing + (sharingBefore < share.cpus % share.sharing);
  } else {
    double cpus = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &mine))
        continue;
      int allowed = 0;
      for (const cpu_set_t &other : host)
        allowed += CPU_ISSET(cpu, &other) ? 1 : 0;
      cpus += 1.0 / allowed;
    }
    share.threads = int(cpus + 1e-9);
  }
  share.threads = std::max(share.threads, 1);
  return share;
}

void runShardJobs(const std::vector<ShardJob> &allJobs, const RunOptions &options) {
  // Jobs with a whole-tensor transform are computed first, the others in chunks.
  std::vector<ShardJob> jobs;
  std::vector<const ShardJob *> transformed;
  uint64_t transformedBytes = 0;
  for (const ShardJob &job : allJobs) {
    if (job.param->transform.empty()) {
      jobs.push_back(job);
    } else {
      transformed.push_back(&job);
      transformedBytes += job.bytes;
    }
  }
  uint64_t totalBytes = transformedBytes;
  for (const ShardJob &job : jobs)
    totalBytes += job.bytes;
  // One after another, each on all the threads: a rank holds one whole matrix at a time. Its
  // bytes count as done in proportion to its factorization's work.
  uint64_t transformedDone = 0;
  for (const ShardJob *job : transformed) {
    OrthogonalMatrix::Progress fraction;
    if (options.progress)
      fraction = [&](double f) {
        options.progress(transformedDone + uint64_t(f * double(job->bytes)), totalBytes);
      };
    computeOrthogonalShard(*job, resolveThreads(options.threads), fraction,
                           options.progressIntervalSeconds);
    transformedDone += job->bytes;
  }
  // Chunk c of the whole run is chunk c - firstChunk[j] of job j.
  std::vector<uint64_t> firstChunk(jobs.size() + 1, 0);
  std::vector<int64_t> chunkElements(jobs.size(), 1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    int64_t elementBytes = dtypeBytes(jobs[j].param->dtype);
    chunkElements[j] = std::max<int64_t>(1, int64_t(kChunkBytes) / elementBytes);
    int64_t elements = jobs[j].slice.numElements();
    firstChunk[j + 1] =
        firstChunk[j] + uint64_t((elements + chunkElements[j] - 1) / chunkElements[j]);
  }
  const uint64_t totalChunks = firstChunk.back();
  std::atomic<uint64_t> nextChunk{0};
  std::atomic<uint64_t> bytesDone{transformedBytes};
  std::vector<char> prefaulted(jobs.size(), 0);
  if (options.prefault)
    for (size_t j = 0; j < jobs.size(); ++j)
      if (jobs[j].bytes >= kPrefaultMinBytes) {
        prefaulted[j] = 1;
        adviseHugePages(jobs[j].out, jobs[j].bytes);
      }
  // Chunk `chunk` (of job j) as the byte range it writes.
  auto chunkRange = [&](uint64_t chunk, size_t j) {
    int64_t elementBytes = dtypeBytes(jobs[j].param->dtype);
    int64_t elements = jobs[j].slice.numElements();
    int64_t begin = int64_t(chunk - firstChunk[j]) * chunkElements[j];
    int64_t end = std::min(elements, begin + chunkElements[j]);
    return std::make_pair(static_cast<char *>(jobs[j].out) + begin * elementBytes,
                          uint64_t(end - begin) * uint64_t(elementBytes));
  };
  auto populateChunk = [&](uint64_t chunk, size_t j) {
    auto [data, bytes] = chunkRange(chunk, j);
    const char *lo = static_cast<const char *>(jobs[j].out);
    return populatePages(data, bytes, lo, lo + jobs[j].bytes);
  };

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
      if (prefaulted[j])
        populateChunk(chunk, j);
      fillElements(job, job.out, begin, end);
      bytesDone.fetch_add(uint64_t(end - begin) * uint64_t(dtypeBytes(job.param->dtype)),
                          std::memory_order_relaxed);
    }
  };
  int threads = int(std::min<uint64_t>(uint64_t(resolveThreads(options.threads)),
                                       std::max<uint64_t>(totalChunks, 1)));
  std::function<void()> monitor;
  if (options.progress)
    monitor = [&] { options.progress(bytesDone.load(std::memory_order_relaxed), totalBytes); };
  // The thread that faults in pages ahead of the workers: only on a CPU they leave idle, and on
  // one memory node (elsewhere a page is best first touched by the thread that fills it).
  std::atomic<bool> finished{false};
  std::thread ahead;
  if (options.prefault && totalChunks > 1 && threads < resolveThreads(0) && singleMemoryNode() &&
      std::find(prefaulted.begin(), prefaulted.end(), 1) != prefaulted.end()) {
    try {
      ahead = std::thread([&] {
        size_t j = 0;
        for (uint64_t chunk = 0; chunk < totalChunks && !finished.load(std::memory_order_relaxed);
             ++chunk) {
          // Behind the workers: skip to where they are. Far ahead: wait, so that the pages it
          // cleared are still in the cache when the workers write them.
          uint64_t next = nextChunk.load(std::memory_order_relaxed);
          while (chunk > next + kPrefaultLeadChunks && !finished.load(std::memory_order_relaxed)) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            next = nextChunk.load(std::memory_order_relaxed);
          }
          chunk = std::max(chunk, next);
          while (j + 1 < jobs.size() && firstChunk[j + 1] <= chunk)
            ++j;
          if (chunk >= totalChunks)
            break;
          if (prefaulted[j] && !populateChunk(chunk, j))
            break;
        }
      });
    } catch (const std::system_error &) {
      // No thread to spare: the workers fault their own pages.
    }
  }
  struct JoinAhead {
    std::atomic<bool> &finished;
    std::thread &ahead;
    ~JoinAhead() {
      finished.store(true, std::memory_order_relaxed);
      if (ahead.joinable())
        ahead.join();
    }
  } joinAhead{finished, ahead};
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
    job.base = kernels.baseTensor(p);
    job.slice = sliceForRank(program.mesh, param, rank);
    job.bytes = uint64_t(job.slice.numElements()) * uint64_t(dtypeBytes(param.dtype));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<ShardJob> planBoxes(const Program &program, const KernelLibrary &kernels,
                                const std::vector<ParamBox> &boxes) {
  std::vector<ShardJob> jobs;
  for (const ParamBox &box : boxes) {
    const Param &param = program.params[box.param];
    ShardJob job;
    job.param = &param;
    job.kernel = kernels.kernel(box.param);
    job.base = kernels.baseTensor(box.param);
    job.slice = box.box;
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
  std::vector<std::string> checksums(jobs.size());
  if (options.checksums)
    checksums = checksumShardJobs(jobs, options.threads);
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
