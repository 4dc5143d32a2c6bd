// streamShardJobs: a rank's shards computed in pieces into a small ring of slots on worker
// threads, and handed to the sink in order on the calling thread.
#include "executor/arena.h"
#include "executor/executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace initrt {

namespace {

using Clock = std::chrono::steady_clock;

// Progress of a stream: bytes handed to the sink, shown at most every interval, never stepping
// back after a whole-tensor step showed its computing.
class StreamProgress {
public:
  StreamProgress(const RunOptions &options, uint64_t totalBytes)
      : options(options), totalBytes(totalBytes) {}
  void handedOver(uint64_t bytes) { bytesDone += bytes; }
  void show(bool force) {
    if (!options.progress)
      return;
    if (force || std::chrono::duration<double>(Clock::now() - lastProgress).count() >=
                     options.progressIntervalSeconds) {
      shown = std::max(shown, bytesDone);
      options.progress(shown, totalBytes);
      lastProgress = Clock::now();
    }
  }
  // A whole-tensor step's computing, before any of it is handed over.
  void computed(uint64_t bytes) {
    shown = std::max(shown, bytes);
    options.progress(shown, totalBytes);
  }

private:
  const RunOptions &options;
  const uint64_t totalBytes;
  uint64_t bytesDone = 0, shown = 0;
  Clock::time_point lastProgress = Clock::now();
};

// Whole-tensor steps need the whole tensor: computed first, each handed over in one piece.
bool streamWholeTensorJobs(const std::vector<ShardJob> &jobs, const RunOptions &options,
                           const PieceSink &sink, StreamProgress &progress, std::string &error) {
  std::vector<ShardJob> transformed;
  std::vector<size_t> transformedIndex;
  std::vector<uint64_t> transformedSizes;
  for (size_t j = 0; j < jobs.size(); ++j)
    if (!jobs[j].param->transform.empty()) {
      transformed.push_back(jobs[j]);
      transformedIndex.push_back(j);
      transformedSizes.push_back(jobs[j].bytes);
    }
  if (transformed.empty())
    return true;
  Arena arena;
  if (!arena.allocate(transformedSizes, error))
    return false;
  for (size_t t = 0; t < transformed.size(); ++t)
    transformed[t].out = arena.shard(t);
  RunOptions whole = options;
  whole.progress = nullptr;
  if (options.progress)
    whole.progress = [&](uint64_t computed, uint64_t) { progress.computed(computed); };
  runShardJobs(transformed, whole);
  for (size_t t = 0; t < transformed.size(); ++t) {
    if (!sink(transformedIndex[t], 0, transformed[t].out, transformed[t].bytes, error))
      return false;
    progress.handedOver(transformed[t].bytes);
    progress.show(false);
  }
  return true;
}

// The other jobs in pieces: piece p is elements [begin, end) of job `job`, computed at byte
// `at` of its slot. Pieces of consecutive small jobs share a slot (their starts 64-byte
// aligned), so that a model of many small tensors costs one hand-over per kPieceBytes, not
// one per tensor; a load is the pieces [first, last) that one slot holds.
struct Piece {
  size_t job;
  int64_t begin, end;
  uint64_t at;
};
struct Load {
  size_t first, last;
};
struct PiecePlan {
  std::vector<Piece> pieces;
  std::vector<Load> loads;
  uint64_t slotBytes = 64;
};

PiecePlan planPieces(const std::vector<ShardJob> &jobs) {
  PiecePlan plan;
  uint64_t loadBytes = 0;
  auto add = [&](size_t j, int64_t begin, int64_t end) {
    uint64_t bytes = uint64_t(end - begin) * uint64_t(dtypeBytes(jobs[j].param->dtype));
    uint64_t at = (loadBytes + 63) / 64 * 64;
    if (plan.loads.empty() || at + bytes > kPieceBytes) {
      plan.loads.push_back({plan.pieces.size(), plan.pieces.size()});
      at = 0;
    }
    plan.pieces.push_back({j, begin, end, at});
    plan.loads.back().last = plan.pieces.size();
    loadBytes = at + bytes;
    plan.slotBytes = std::max(plan.slotBytes, loadBytes);
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!jobs[j].param->transform.empty())
      continue;
    int64_t width = dtypeBytes(jobs[j].param->dtype);
    // A multiple of 64 elements: pieces start 64-byte aligned relative to the shard.
    int64_t step = std::max<int64_t>(64, int64_t(kPieceBytes) / width / 64 * 64);
    int64_t elements = jobs[j].slice.numElements();
    if (elements == 0)
      add(j, 0, 0);
    for (int64_t begin = 0; begin < elements; begin += step)
      add(j, begin, std::min(elements, begin + step));
  }
  return plan;
}

// Workers take the next load, wait for its slot to be free (the sink is done with the load
// `slots` earlier) and compute its pieces. The calling thread hands finished pieces to the sink
// in order and frees their slots. When it runs out of finished loads it sleeps until a batch
// of them is: waking a thread costs the worker that wakes it tens of microseconds on a
// virtual machine, which once per piece (a sink faster than the kernels, as --discard is)
// was 5% of a worker's time. The batch leaves `threads` slots free, so no worker waits.
class PieceRing {
public:
  PieceRing(const std::vector<ShardJob> &jobs, const PiecePlan &plan, const RunOptions &options)
      : jobs(jobs), pieces(plan.pieces), loads(plan.loads), options(options),
        threads(int(std::min<size_t>(size_t(resolveThreads(options.threads)),
                                     std::max<size_t>(loads.size(), 1)))),
        slots(std::min<size_t>(2 * size_t(threads) + 2, std::max<size_t>(loads.size(), 1))),
        batch(slots > size_t(threads) ? slots - size_t(threads) : 1), ready(loads.size(), 0) {}

  bool allocate(uint64_t slotBytes, std::string &error) {
    // The ring grows with the threads, not with the shards: more ranks would not shrink it.
    return ring.allocate(std::vector<uint64_t>(slots, slotBytes), error,
                         "of streaming buffers (" + std::to_string(slots) + " pieces for " +
                             std::to_string(threads) + " threads)",
                         "use fewer --threads or a machine with more memory");
  }

  /// Starts the workers; false with `error` when not even one starts.
  bool startWorkers(std::string &error) {
    workers.reserve(size_t(threads)); // no allocation failure once threads run
    for (int t = 0; t < threads; ++t) {
      try {
        workers.emplace_back([this] { work(); });
      } catch (const std::system_error &e) {
        if (workers.empty()) {
          error = std::string("cannot start a worker thread: ") + e.code().message() +
                  "; raise the process limits (ulimit -u, ulimit -v) or free memory";
          return false;
        }
        break; // fewer threads than asked for is slower, not wrong
      }
    }
    return true;
  }

  /// Hands every load's pieces to `sink` in order, then joins the workers; rethrows a worker's
  /// exception (a base checkpoint that cannot be read) or the sink's.
  bool handOver(const PieceSink &sink, StreamProgress &progress, std::string &error) {
    bool ok = true;
    std::exception_ptr failure; // from the sink or the progress display: stops the workers
    try {
      for (size_t l = 0; l < loads.size() && ok; ++l) {
        if (!awaitLoad(l))
          break;
        for (size_t p = loads[l].first; p < loads[l].last && ok; ++p) {
          const Piece &piece = pieces[p];
          const uint64_t width = uint64_t(dtypeBytes(jobs[piece.job].param->dtype));
          const uint64_t bytes = uint64_t(piece.end - piece.begin) * width;
          ok = sink(piece.job, uint64_t(piece.begin) * width,
                    static_cast<const char *>(ring.shard(l % slots)) + piece.at, bytes, error);
          progress.handedOver(bytes);
        }
        progress.show(false);
        std::lock_guard<std::mutex> lock(mutex);
        released = l + 1;
        stop = stop || !ok; // a worker may have stopped the run meanwhile
        slotFreed.notify_all();
      }
    } catch (...) {
      failure = std::current_exception();
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      slotFreed.notify_all();
    }
    for (std::thread &worker : workers)
      worker.join();
    if (failure)
      std::rethrow_exception(failure);
    if (workerFailure)
      std::rethrow_exception(workerFailure);
    return ok;
  }

private:
  bool batchIsReady() const {
    for (size_t q = awaitedFrom; q < awaitedTo; ++q)
      if (!ready[q])
        return false;
    return true;
  }

  // Sleeps until load `l` (and the batch after it) is ready; false when a worker failed.
  bool awaitLoad(size_t l) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!ready[l]) {
      awaitedFrom = l;
      awaitedTo = std::min(loads.size(), l + batch);
      while (!workerFailure && !batchIsReady())
        batchReady.wait_for(lock, std::chrono::duration<double>(
                                      std::max(options.progressIntervalSeconds, 0.01)));
      awaitedFrom = awaitedTo = 0;
    }
    if (workerFailure) { // the failed piece will never be ready: stop the others
      stop = true;
      slotFreed.notify_all();
      return false;
    }
    return true;
  }

  void work() {
    for (;;) {
      size_t l;
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (stop || next >= loads.size())
          return;
        l = next++;
        slotFreed.wait(lock, [&] { return stop || l < released + slots; });
        if (stop)
          return;
      }
      for (size_t p = loads[l].first; p < loads[l].last; ++p) {
        const Piece &piece = pieces[p];
        if (piece.end == piece.begin)
          continue;
        const ShardJob &job = jobs[piece.job];
        const uint64_t width = uint64_t(dtypeBytes(job.param->dtype));
        // The kernel writes element i at out + i * width: point `out` so that element `begin`
        // lands at the piece's place in the slot.
        auto out = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(ring.shard(l % slots)) +
                                            piece.at - uint64_t(piece.begin) * width);
        try {
          fillElements(job, out, piece.begin, piece.end);
        } catch (...) { // a base checkpoint that cannot be read: the calling thread rethrows it
          std::lock_guard<std::mutex> lock(mutex);
          if (!workerFailure)
            workerFailure = std::current_exception();
          stop = true;
          slotFreed.notify_all();
          batchReady.notify_one();
          return;
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      ready[l] = 1;
      if (awaitedFrom <= l && l < awaitedTo && batchIsReady())
        batchReady.notify_one();
    }
  }

  const std::vector<ShardJob> &jobs;
  const std::vector<Piece> &pieces;
  const std::vector<Load> &loads;
  const RunOptions &options;
  const int threads;
  const size_t slots, batch;
  Arena ring;
  std::vector<std::thread> workers;

  std::mutex mutex;
  std::condition_variable slotFreed, batchReady;
  size_t next = 0, released = 0;
  bool stop = false;
  std::exception_ptr workerFailure;
  std::vector<char> ready;
  size_t awaitedFrom = 0, awaitedTo = 0; // loads [from, to) the calling thread sleeps for
};

} // namespace

bool streamShardJobs(const std::vector<ShardJob> &jobs, const RunOptions &options,
                     const PieceSink &sink, std::string &error) {
  uint64_t totalBytes = 0;
  for (const ShardJob &job : jobs)
    totalBytes += job.bytes;
  StreamProgress progress(options, totalBytes);
  if (!streamWholeTensorJobs(jobs, options, sink, progress, error))
    return false;
  const PiecePlan plan = planPieces(jobs);
  PieceRing ring(jobs, plan, options);
  if (!ring.allocate(plan.slotBytes, error) || !ring.startWorkers(error))
    return false;
  bool ok = ring.handOver(sink, progress, error);
  if (ok)
    progress.show(true);
  return ok;
}

} // namespace initrt
