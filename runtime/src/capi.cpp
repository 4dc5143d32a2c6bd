// The C API (initrt.h) over the program reader and the executor.
#include "initrt/initrt.h"
#include "executor/executor.h"
#include "initrt/base/program_io.h"

#include <cstdint>
#include <cstring>
#include <vector>
#include <new>
#include <string>
#include <unordered_map>

struct initrt_program {
  initrt::Program program;
  std::unique_ptr<initrt::KernelLibrary> kernels;
  std::unordered_map<std::string, size_t> indexByName; // names and aliases
};

namespace {

initrt_status report(initrt_status status, const std::string &message, char *err,
                     size_t errlen) {
  if (err && errlen > 0) {
    size_t length = std::min(message.size(), errlen - 1);
    std::memcpy(err, message.data(), length);
    err[length] = '\0';
  }
  return status;
}

bool rankInMesh(const initrt_program *prog, int64_t rank) {
  return rank >= 0 && rank < prog->program.mesh.size();
}

std::string rankError(const initrt_program *prog, int64_t rank) {
  return "rank " + std::to_string(rank) + " is outside the mesh of " +
         std::to_string(prog->program.mesh.size()) + " devices";
}

// Whether `buf` is aligned to the parameter's element size: the kernels store whole elements.
bool alignedFor(const void *buf, const initrt::Param &param) {
  return reinterpret_cast<uintptr_t>(buf) % uintptr_t(initrt::dtypeBytes(param.dtype)) == 0;
}

std::string misalignment(const void *buf, const initrt::Param &param) {
  return "the buffer for " + param.name + " is at an address that is not a multiple of " +
         std::to_string(initrt::dtypeBytes(param.dtype)) + ", the size of its " +
         initrt::dtypeName(param.dtype) + " elements";
}

// Runs `body`, turning an escaping exception into a status: nothing may unwind into C.
template <typename Body>
initrt_status guarded(char *err, size_t errlen, Body body) {
  try {
    return body();
  } catch (const initrt::OutOfMemory &e) {
    return report(INITRT_OUT_OF_MEMORY, std::string("out of memory: ") + e.what(), err, errlen);
  } catch (const std::bad_alloc &) {
    return report(INITRT_OUT_OF_MEMORY, "out of memory", err, errlen);
  } catch (const initrt::BaseReadError &e) {
    return report(INITRT_BAD_BASE, e.what(), err, errlen);
  } catch (const std::exception &e) {
    return report(INITRT_INTERNAL, std::string("internal error: ") + e.what(), err, errlen);
  } catch (...) {
    return report(INITRT_INTERNAL, "internal error", err, errlen);
  }
}

// A checked box of one parameter, as the jobs that fill it: written in place for a row-major
// destination (one job) or a strided one (one job per contiguous block); a whole-tensor
// transform into a strided destination is computed whole into scratch, then scattered.
struct BoxPlan {
  std::vector<initrt::ShardJob> jobs;
  bool scatter = false;
  initrt::ShardJob whole;       // with scatter: the box, computed into scratch
  std::vector<int64_t> blockAt; // with scatter: block b goes to out + blockAt[b] elements
  size_t blockBytes = 0;
  int64_t elementBytes = 0;
  char *out = nullptr;
};

// Checks one box as initrt_fill_box describes it and plans its jobs; writes nothing. Messages
// start with `caller`.
initrt_status planBox(const initrt_program *prog, const std::string &caller, const char *name,
                      int32_t ndim, const int64_t *offset, const int64_t *shape,
                      const int64_t *strides, void *buf, size_t buf_bytes, BoxPlan &plan, char *err,
                      size_t errlen) {
  auto found = prog->indexByName.find(name);
  if (found == prog->indexByName.end())
    return report(INITRT_NOT_FOUND, caller + "the program has no parameter named " + name, err,
                  errlen);
  const size_t p = found->second;
  const initrt::Param &param = prog->program.params[p];
  const std::string where = caller + param.name + ": ";
  const size_t rank = param.shape.size();
  if (ndim < 0 || size_t(ndim) != rank)
    return report(INITRT_INVALID_ARGUMENT,
                  where + "the box has " + std::to_string(ndim) + " dims, the parameter " +
                      std::to_string(rank),
                  err, errlen);
  if (rank > 0 && (!offset || !shape))
    return report(INITRT_INVALID_ARGUMENT, where + "offset and shape must not be NULL", err,
                  errlen);
  initrt::Slice box;
  box.offset.assign(offset, offset + rank);
  box.shape.assign(shape, shape + rank);
  for (size_t d = 0; d < rank; ++d)
    if (box.offset[d] < 0 || box.shape[d] < 0 || box.offset[d] > param.shape[d] - box.shape[d])
      return report(INITRT_INVALID_ARGUMENT,
                    where + "the box [" + std::to_string(box.offset[d]) + ", " +
                        std::to_string(box.offset[d] + box.shape[d]) + ") of dim " +
                        std::to_string(d) + " is outside [0, " + std::to_string(param.shape[d]) +
                        ")",
                    err, errlen);
  const int64_t elementBytes = initrt::dtypeBytes(param.dtype);
  const int64_t elements = box.numElements();
  // Element strides with those of dims of size 1 made contiguous (any value is valid there).
  std::vector<int64_t> stride(rank);
  for (size_t d = rank; d-- > 0;) {
    int64_t contiguous = d + 1 < rank ? stride[d + 1] * box.shape[d + 1] : 1;
    stride[d] = strides && box.shape[d] > 1 ? strides[d] : contiguous;
  }
  if (elements > 0) {
    for (size_t d = rank; d-- > 0;) {
      int64_t inner = d + 1 < rank ? stride[d + 1] * box.shape[d + 1] : 1;
      if (d + 1 == rank ? stride[d] != 1 : stride[d] < inner)
        return report(INITRT_INVALID_ARGUMENT,
                      where + "the destination's stride " + std::to_string(stride[d]) + " of dim " +
                          std::to_string(d) +
                          (d + 1 == rank ? " is not 1: the innermost dim must be contiguous"
                                         : " is below the " + std::to_string(inner) +
                                               " elements of the dims after it") +
                          "; fill a row-major (contiguous) buffer and copy it instead",
                      err, errlen);
    }
  }
  uint64_t extent = 0; // elements from buf to just past the last element
  if (elements > 0) {
    extent = 1;
    for (size_t d = 0; d < rank; ++d)
      extent += uint64_t(box.shape[d] - 1) * uint64_t(stride[d]);
  }
  if (extent * uint64_t(elementBytes) > buf_bytes)
    return report(INITRT_SIZE_MISMATCH,
                  where + "the box needs " + std::to_string(extent * uint64_t(elementBytes)) +
                      " bytes from buf but it has " + std::to_string(buf_bytes),
                  err, errlen);
  if (elements == 0)
    return INITRT_OK;
  if (!buf)
    return report(INITRT_INVALID_ARGUMENT, where + "buf must not be NULL", err, errlen);
  if (!alignedFor(buf, param))
    return report(INITRT_INVALID_ARGUMENT, caller + misalignment(buf, param), err, errlen);
  initrt::ShardJob whole;
  whole.param = &param;
  whole.kernel = prog->kernels->kernel(p);
  whole.base = prog->kernels->baseTensor(p);
  if (param.load && !whole.base)
    return report(INITRT_BAD_BASE, caller + prog->kernels->baseFailure(p), err, errlen);
  // Dims [contiguousFrom, rank) are laid out row-major in buf: each index of the dims before
  // them is one contiguous block, which a kernel writes in place.
  size_t contiguousFrom = rank;
  while (contiguousFrom > 0 &&
         stride[contiguousFrom - 1] ==
             (contiguousFrom < rank ? stride[contiguousFrom] * box.shape[contiguousFrom] : 1))
    --contiguousFrom;
  char *out = static_cast<char *>(buf);
  if (contiguousFrom == 0) {
    whole.slice = box;
    whole.bytes = uint64_t(elements) * uint64_t(elementBytes);
    whole.out = buf;
    plan.jobs.push_back(std::move(whole));
    return INITRT_OK;
  }
  initrt::Slice block = box;
  for (size_t d = 0; d < contiguousFrom; ++d)
    block.shape[d] = 1;
  const int64_t blockElements = block.numElements();
  const int64_t blocks = elements / blockElements;
  // Block b, whose outer index is b in row-major order, starts at element `at` of buf.
  std::vector<int64_t> index(contiguousFrom, 0);
  const bool scatter = !param.transform.empty();
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t at = 0;
    for (size_t d = 0; d < contiguousFrom; ++d)
      at += index[d] * stride[d];
    if (scatter) {
      plan.blockAt.push_back(at);
    } else {
      initrt::ShardJob job = whole;
      job.slice = block;
      for (size_t d = 0; d < contiguousFrom; ++d)
        job.slice.offset[d] = box.offset[d] + index[d];
      job.bytes = uint64_t(blockElements) * uint64_t(elementBytes);
      job.out = out + at * elementBytes;
      plan.jobs.push_back(std::move(job));
    }
    for (size_t d = contiguousFrom; d-- > 0;) {
      if (++index[d] < box.shape[d])
        break;
      index[d] = 0;
    }
  }
  if (scatter) {
    // A whole-tensor transform computes the whole matrix for every job: compute the box once
    // into scratch (runBoxPlans) and scatter its blocks.
    plan.scatter = true;
    whole.slice = box;
    whole.bytes = uint64_t(elements) * uint64_t(elementBytes);
    plan.whole = std::move(whole);
    plan.blockBytes = size_t(blockElements * elementBytes);
    plan.elementBytes = elementBytes;
    plan.out = out;
  }
  return INITRT_OK;
}

// Runs every plan's in-place jobs in one parallel run (the threads share them all and meet once
// at the end), then the scattered boxes one after another (one box of scratch at a time).
void runBoxPlans(const std::vector<BoxPlan> &plans, int threads) {
  initrt::RunOptions options;
  options.threads = threads;
  options.prefault = true; // the caller's buffers are often new, never touched
  std::vector<initrt::ShardJob> jobs;
  for (const BoxPlan &plan : plans)
    jobs.insert(jobs.end(), plan.jobs.begin(), plan.jobs.end());
  if (!jobs.empty())
    initrt::runShardJobs(jobs, options);
  for (const BoxPlan &plan : plans) {
    if (!plan.scatter)
      continue;
    std::vector<char> scratch(size_t(plan.whole.bytes));
    initrt::ShardJob whole = plan.whole;
    whole.out = scratch.data();
    initrt::runShardJobs({whole}, options);
    for (size_t b = 0; b < plan.blockAt.size(); ++b)
      std::memcpy(plan.out + plan.blockAt[b] * plan.elementBytes,
                  scratch.data() + b * plan.blockBytes, plan.blockBytes);
  }
}

} // namespace

extern "C" {

const char *initrt_status_name(initrt_status status) {
  switch (status) {
  case INITRT_OK:
    return "INITRT_OK";
  case INITRT_INVALID_ARGUMENT:
    return "INITRT_INVALID_ARGUMENT";
  case INITRT_BAD_PROGRAM:
    return "INITRT_BAD_PROGRAM";
  case INITRT_UNSUPPORTED_CPU:
    return "INITRT_UNSUPPORTED_CPU";
  case INITRT_NOT_FOUND:
    return "INITRT_NOT_FOUND";
  case INITRT_SIZE_MISMATCH:
    return "INITRT_SIZE_MISMATCH";
  case INITRT_OUT_OF_MEMORY:
    return "INITRT_OUT_OF_MEMORY";
  case INITRT_TOO_MANY_DIMS:
    return "INITRT_TOO_MANY_DIMS";
  case INITRT_INTERNAL:
    return "INITRT_INTERNAL";
  case INITRT_BAD_BASE:
    return "INITRT_BAD_BASE";
  }
  return "INITRT_UNKNOWN_STATUS";
}

initrt_status initrt_program_open(const char *prog_dir, initrt_program **out, char *err,
                                  size_t errlen) {
  if (out)
    *out = nullptr;
  if (!prog_dir || !out)
    return report(INITRT_INVALID_ARGUMENT, "initrt_program_open: prog_dir and out must not be NULL",
                  err, errlen);
  if (!*prog_dir) // would read /program.json
    return report(
        INITRT_INVALID_ARGUMENT,
        "initrt_program_open: prog_dir is empty: pass the program directory, e.g. \"prog\"", err,
        errlen);
  return guarded(err, errlen, [&] {
    std::unique_ptr<initrt_program> prog(new initrt_program());
    std::string error;
    if (!initrt::readProgram(prog_dir, prog->program, error))
      return report(INITRT_BAD_PROGRAM, error, err, errlen);
    if (initrt::selectKernelVariant(prog->program, "", error) < 0)
      return report(INITRT_UNSUPPORTED_CPU, error, err, errlen);
    prog->kernels = initrt::KernelLibrary::load(prog_dir, prog->program, error);
    if (!prog->kernels)
      return report(INITRT_BAD_PROGRAM, error, err, errlen);
    // The parameters it computes stay available without the base checkpoints: a loaded one
    // says why it cannot be filled when it is asked for.
    (void)prog->kernels->openBaseCheckpoints(prog->program, error);
    for (size_t p = 0; p < prog->program.params.size(); ++p) {
      const initrt::Param &param = prog->program.params[p];
      prog->indexByName[param.name] = p;
      for (const std::string &alias : param.aliases)
        prog->indexByName[alias] = p;
    }
    *out = prog.release();
    return INITRT_OK;
  });
}

void initrt_program_close(initrt_program *prog) { delete prog; }

int64_t initrt_world_size(const initrt_program *prog) {
  return prog ? prog->program.mesh.size() : 0;
}

int64_t initrt_param_count(const initrt_program *prog) {
  return prog ? int64_t(prog->program.params.size()) : 0;
}

int64_t initrt_param_index(const initrt_program *prog, const char *name) {
  if (!prog || !name)
    return -1;
  auto found = prog->indexByName.find(name);
  return found == prog->indexByName.end() ? -1 : int64_t(found->second);
}

initrt_status initrt_param_info(const initrt_program *prog, int64_t rank, int64_t index,
                                struct initrt_param_info *out) {
  if (!prog || !out || !rankInMesh(prog, rank) || index < 0 ||
      index >= int64_t(prog->program.params.size()))
    return INITRT_INVALID_ARGUMENT;
  return guarded(nullptr, 0, [&] {
    const initrt::Param &param = prog->program.params[size_t(index)];
    if (param.shape.size() > INITRT_MAX_DIMS)
      return INITRT_TOO_MANY_DIMS;
    initrt::Slice slice = initrt::sliceForRank(prog->program.mesh, param, rank);
    std::memset(out, 0, sizeof(*out));
    out->name = param.name.c_str();
    out->dtype = initrt::dtypeName(param.dtype);
    out->ndim = int32_t(param.shape.size());
    out->is_buffer = param.buffer ? 1 : 0;
    out->persistent = param.persistent ? 1 : 0;
    for (size_t d = 0; d < param.shape.size(); ++d) {
      out->global_shape[d] = param.shape[d];
      out->slice_offset[d] = slice.offset[d];
      out->slice_shape[d] = slice.shape[d];
    }
    out->elements = slice.numElements();
    out->bytes = uint64_t(out->elements) * uint64_t(initrt::dtypeBytes(param.dtype));
    return INITRT_OK;
  });
}

initrt_status initrt_fill(const initrt_program *prog, int64_t rank, const char *name, void *buf,
                          size_t buf_bytes, int threads, char *err, size_t errlen) {
  if (!prog || !name)
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill: prog and name must not be NULL", err,
                  errlen);
  if (!rankInMesh(prog, rank))
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill: " + rankError(prog, rank), err, errlen);
  return guarded(err, errlen, [&] {
    auto found = prog->indexByName.find(name);
    if (found == prog->indexByName.end())
      return report(INITRT_NOT_FOUND,
                    std::string("initrt_fill: the program has no parameter named ") + name, err,
                    errlen);
    size_t p = found->second;
    const initrt::Param &param = prog->program.params[p];
    initrt::ShardJob job;
    job.param = &param;
    job.kernel = prog->kernels->kernel(p);
    job.base = prog->kernels->baseTensor(p);
    if (param.load && !job.base)
      return report(INITRT_BAD_BASE, "initrt_fill: " + prog->kernels->baseFailure(p), err, errlen);
    job.slice = initrt::sliceForRank(prog->program.mesh, param, rank);
    job.bytes = uint64_t(job.slice.numElements()) * uint64_t(initrt::dtypeBytes(param.dtype));
    if (job.bytes != buf_bytes)
      return report(INITRT_SIZE_MISMATCH,
                    "initrt_fill: " + param.name + " on rank " + std::to_string(rank) + " needs " +
                        std::to_string(job.bytes) + " bytes but the buffer has " +
                        std::to_string(buf_bytes),
                    err, errlen);
    if (!buf && job.bytes > 0)
      return report(INITRT_INVALID_ARGUMENT, "initrt_fill: buf must not be NULL", err, errlen);
    if (!alignedFor(buf, param))
      return report(INITRT_INVALID_ARGUMENT, "initrt_fill: " + misalignment(buf, param), err,
                    errlen);
    job.out = buf;
    initrt::RunOptions options;
    options.threads = threads;
    options.prefault = true; // the caller's buffers are often new, never touched
    initrt::runShardJobs({job}, options);
    return INITRT_OK;
  });
}

initrt_status initrt_fill_all(const initrt_program *prog, int64_t rank, void *const *bufs,
                              int threads, char *err, size_t errlen) {
  if (!prog || !bufs)
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill_all: prog and bufs must not be NULL", err,
                  errlen);
  if (!rankInMesh(prog, rank))
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill_all: " + rankError(prog, rank), err,
                  errlen);
  return guarded(err, errlen, [&] {
    std::vector<initrt::ShardJob> jobs =
        initrt::planRank(prog->program, *prog->kernels, rank, /*persistentOnly=*/false);
    std::vector<initrt::ShardJob> wanted;
    for (size_t p = 0; p < jobs.size(); ++p) {
      if (!bufs[p])
        continue;
      if (jobs[p].param->load && !jobs[p].base)
        return report(INITRT_BAD_BASE, "initrt_fill_all: " + prog->kernels->baseFailure(p), err,
                      errlen);
      if (!alignedFor(bufs[p], *jobs[p].param))
        return report(INITRT_INVALID_ARGUMENT,
                      "initrt_fill_all: bufs[" + std::to_string(p) +
                          "]: " + misalignment(bufs[p], *jobs[p].param),
                      err, errlen);
      jobs[p].out = bufs[p];
      wanted.push_back(std::move(jobs[p]));
    }
    initrt::RunOptions options;
    options.threads = threads;
    options.prefault = true; // the caller's buffers are often new, never touched
    initrt::runShardJobs(wanted, options);
    return INITRT_OK;
  });
}

initrt_status initrt_fill_box(const initrt_program *prog, const char *name, int32_t ndim,
                              const int64_t *offset, const int64_t *shape, const int64_t *strides,
                              void *buf, size_t buf_bytes, int threads, char *err, size_t errlen) {
  if (!prog || !name)
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill_box: prog and name must not be NULL", err,
                  errlen);
  return guarded(err, errlen, [&] {
    std::vector<BoxPlan> plans(1);
    initrt_status status = planBox(prog, "initrt_fill_box: ", name, ndim, offset, shape, strides,
                                   buf, buf_bytes, plans[0], err, errlen);
    if (status == INITRT_OK)
      runBoxPlans(plans, threads);
    return status;
  });
}

initrt_status initrt_fill_boxes(const initrt_program *prog, size_t count,
                                const struct initrt_box *boxes, int threads, char *err,
                                size_t errlen) {
  if (!prog || (!boxes && count > 0))
    return report(INITRT_INVALID_ARGUMENT, "initrt_fill_boxes: prog and boxes must not be NULL",
                  err, errlen);
  return guarded(err, errlen, [&] {
    std::vector<BoxPlan> plans(count);
    for (size_t i = 0; i < count; ++i) {
      const std::string where = "initrt_fill_boxes: boxes[" + std::to_string(i) + "]: ";
      const struct initrt_box &box = boxes[i];
      if (!box.name)
        return report(INITRT_INVALID_ARGUMENT, where + "name must not be NULL", err, errlen);
      initrt_status status = planBox(prog, where, box.name, box.ndim, box.offset, box.shape,
                                     box.strides, box.buf, box.buf_bytes, plans[i], err, errlen);
      if (status != INITRT_OK)
        return status; // nothing written yet
    }
    runBoxPlans(plans, threads);
    return INITRT_OK;
  });
}

} // extern "C"
