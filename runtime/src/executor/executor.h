// Running a rank's kernels: load kernels.so, lay out the shards, compute them on threads.
#pragma once

#include "checkpoint/shard_file.h"
#include "executor/arena.h"
#include "initrt/base/base_checkpoint.h"
#include "initrt/base/costs.h"
#include "initrt/base/program.h"
#include "initrt/base/report.h"
#include "initrt/base/sharding.h"

#include <functional>
#include <memory>
#include <new>
#include <sched.h>
#include <string>
#include <vector>

namespace initrt {

/// Checks that this CPU has every extension `variant`'s kernels may use (its `extensions`, from
/// program.json); the error names those it lacks.
bool checkKernelVariant(const KernelVariant &variant, std::string &error);

/// The index in program.kernelVariants of the kernels to run: the variant compiled for
/// `requested` when it is not empty (else for the INITRT_TARGET_CPU environment variable, when
/// set), or the first variant this CPU supports. Every variant computes the same bits; this
/// only picks the fastest the CPU can run. Returns -1 and sets `error` when the requested
/// variant is absent or unsupported, or no variant is supported.
int selectKernelVariant(const Program &program, const std::string &requested,
                        std::string &error);

/// A program's kernels.so, verified and loaded, with every parameter's kernel resolved; and, once
/// opened, the base checkpoint tensors its init.load parameters read.
class KernelLibrary {
public:
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  /// Picks the variant (selectKernelVariant with `requestedCpu`), checks that
  /// progDir/<kernels.file> has the checksum program.json records, dlopens it
  /// (RTLD_NOW | RTLD_LOCAL) and looks up each parameter's kernel. Returns null and sets `error`
  /// on failure.
  static std::unique_ptr<KernelLibrary> load(const std::string &progDir, const Program &program,
                                             std::string &error,
                                             const std::string &requestedCpu = "");

  /// Finds and checks the tensors the program's init.load parameters read (BaseCheckpoints::open):
  /// needed before planRank, only by a process that computes shards.
  bool openBaseCheckpoints(const Program &program, std::string &error) {
    return bases.open(program, error);
  }
  /// The kernel of program.params[paramIndex]; null for one that loads its values.
  KernelFn kernel(size_t paramIndex) const { return kernels[paramIndex]; }
  /// Why the base checkpoint of program.params[paramIndex] did not open, or "".
  const std::string &baseFailure(size_t paramIndex) const { return bases.failure(paramIndex); }
  /// The tensor program.params[paramIndex] loads, or null when its kernel computes it.
  const BaseTensor *baseTensor(size_t paramIndex) const { return bases.tensor(paramIndex); }
  /// Which versions of the base checkpoints were read (BaseCheckpoints::stamps).
  std::string baseStamps() const { return bases.stamps(); }
  /// The first base checkpoint file that changed since it was read, or "".
  std::string baseChangedSinceRead() const { return bases.changedSinceOpened(); }
  /// After openBaseCheckpoints failed: whether only absent files failed (BaseCheckpoints).
  bool basesOnlyAbsent() const { return bases.onlyAbsent(); }
  /// The CPU the loaded kernels were compiled for.
  const std::string &targetCpu() const { return cpu; }

  /// Load from a private copy, as where /proc is missing: for tests, and for benchmarks that
  /// load one library several times, each with pages of its own.
  static bool forceCopy;

private:
  KernelLibrary() = default;
  void *handle = nullptr;
  int fd = -1; // kernels.so, open for as long as the library is loaded from it
  std::vector<KernelFn> kernels;
  BaseCheckpoints bases;
  std::string cpu;
};

/// Memory exhaustion that can say what ran out and what to do (std::bad_alloc says neither):
/// caught as a std::bad_alloc by whoever only needs to know that memory ran out.
class OutOfMemory : public std::bad_alloc {
public:
  explicit OutOfMemory(std::string advice) : advice(std::move(advice)) {}
  const char *what() const noexcept override { return advice.c_str(); }

private:
  std::string advice;
};

/// One shard to compute: `kernel` writes the `slice` of `param` into `out` (`bytes` long), or,
/// for a parameter that loads its values, the slice is read from `base`.
struct ShardJob {
  const Param *param = nullptr;
  KernelFn kernel = nullptr;
  const BaseTensor *base = nullptr;
  Slice slice;
  void *out = nullptr;
  uint64_t bytes = 0;
};

struct RunOptions {
  int threads = 0;                       // 0: resolveThreads, one per CPU it may run on
  ProgressFn progress;                   // optional; on the calling thread: bytes computed, total
  double progressIntervalSeconds = 0.1;  // at most this often
  bool checksums = true;                 // computeRank: checksum every shard after computing
  // The outputs are the caller's memory, maybe never touched (a new tensor): fault in the pages
  // of each large one before its kernels write them (prefaultDestinations).
  bool prefault = false;
};

/// Destinations smaller than this are left to fault page by page: the advice would cost more
/// than it saves.
inline constexpr uint64_t kPrefaultMinBytes = uint64_t(4) << 20;

/// Bytes of output per unit of work handed to a thread.
inline constexpr uint64_t kChunkBytes = uint64_t(256) << 10;

/// `requested` if positive, else the number of CPUs this process may run on (its affinity mask;
/// the hardware threads when that cannot be read), at least 1.
int resolveThreads(int requested);

/// A process's share of the CPUs it may run on, when other processes of its host may run on some
/// of them too (mpirun --bind-to none or socket gives every rank of a host the same CPUs).
struct CpuShare {
  int threads = 1; // at least 1
  int cpus = 0;    // in the process's affinity mask
  int sharing = 1; // processes of the host allowed on any of those CPUs, this one included
};

/// The share of `host[self]` among the affinity masks of its host's processes, in rank order:
/// each CPU counts 1/k for each of the k processes allowed on it. When those processes all have
/// the same mask, the CPUs left over go to the first ones, so that each CPU gets one thread.
CpuShare shareCpus(const std::vector<cpu_set_t> &host, size_t self);

/// Runs `work` on `threads` threads (fewer if the system starts no more). Without a monitor the
/// caller is one of them; with one, the caller calls `monitor` about every `interval` seconds
/// until the workers are done. The first exception thrown on any thread is rethrown on the
/// caller once every thread has returned (the others finish their work first).
void runOnThreads(int threads, const std::function<void()> &work,
                  const std::function<void()> &monitor = nullptr, double interval = 0);

/// Computes every job's whole shard. Each shard is cut at element indices into chunks of
/// kChunkBytes of output (so chunk starts are 64-byte aligned relative to the shard, and no two
/// threads write one cache line of a 64-byte-aligned shard); workers take chunks from a shared
/// counter. With `options.prefault`, each destination of at least kPrefaultMinBytes gets huge
/// pages advised on its 2 MiB-aligned interior, and each worker faults in a chunk's pages in one
/// call before writing it (so a page is first touched by the thread that fills it); when the
/// process may run on more CPUs than it fills with and they share one memory node, one more
/// thread faults in the chunks ahead of the workers, so that the kernel's zeroing of fresh pages
/// overlaps the computation instead of adding to it.
void runShardJobs(const std::vector<ShardJob> &jobs, const RunOptions &options);

/// Receives piece [offset, offset + bytes) of job `job`'s shard; returns false with `error` to
/// stop the run.
using PieceSink = std::function<bool(size_t job, uint64_t offset, const void *data,
                                     uint64_t bytes, std::string &error)>;

/// Elements [begin, end) of the job's shard, element i at out + i * dtype bytes: computed by its
/// kernel, or read from its base checkpoint.
void fillElements(const ShardJob &job, void *out, int64_t begin, int64_t end);

/// Computes every job's shard in pieces of about kPieceBytes into a small ring of reusable
/// slots (2 * threads + 2, touched once), and hands each piece to `sink` on the calling
/// thread, in job order and in offset order within a job (so a streaming checksum can follow;
/// jobs with a whole-tensor transform come first),
/// while the worker threads compute the next pieces. The pieces of consecutive small jobs share
/// a slot, so that a thread takes kPieceBytes of work at a time however small the tensors.
/// Memory stays a few MiB per thread whatever the shard sizes, and no page is faulted in more
/// than once: for writing a checkpoint. When the sink is ahead, the calling thread sleeps until
/// all but `threads` slots are ready, so that the workers wake it once per batch rather than
/// once per slot. Jobs with
/// a whole-tensor transform are computed whole first and handed over as one piece. Returns
/// false with `error` when the sink fails or memory cannot be mapped.
bool streamShardJobs(const std::vector<ShardJob> &jobs, const RunOptions &options,
                     const PieceSink &sink, std::string &error);

/// checksumHex of each job's output, shards spread over `threads` workers.
std::vector<std::string> checksumShardJobs(const std::vector<ShardJob> &jobs, int threads);

/// The shards of a rank, computed into one arena.
struct RankShards {
  Arena arena;
  std::vector<size_t> paramIndices;  // program.params indices, in program order
  std::vector<ShardTensor> tensors;  // one per paramIndices entry, data in `arena`
  uint64_t bytes = 0;                // sum of shard bytes
  int64_t elements = 0;              // sum of shard elements
  double computeSeconds = 0;
  double checksumSeconds = 0;
};

/// The shards `rank` holds: every parameter, or only persistent ones (what a checkpoint stores).
/// The jobs of init.load parameters have a base only after `kernels.openBaseCheckpoints`.
std::vector<ShardJob> planRank(const Program &program, const KernelLibrary &kernels, int64_t rank,
                               bool persistentOnly);

/// Jobs that compute the given boxes (writeBoxes), one per box, in the order given.
std::vector<ShardJob> planBoxes(const Program &program, const KernelLibrary &kernels,
                                const std::vector<ParamBox> &boxes);

/// Allocates the rank's arena, computes its shards and their checksums.
bool computeRank(const Program &program, const KernelLibrary &kernels, int64_t rank,
                 bool persistentOnly, const RunOptions &options, RankShards &out,
                 std::string &error);

} // namespace initrt
