// The C API (initrt.h) over the program reader and the executor.
#include "initrt/initrt.h"
#include "executor/executor.h"
#include "initrt/base/program_io.h"

#include <cstdint>
#include <cstring>
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
    initrt::adviseHugePages(buf, job.bytes);
    initrt::RunOptions options;
    options.threads = threads;
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
      initrt::adviseHugePages(bufs[p], jobs[p].bytes);
      wanted.push_back(std::move(jobs[p]));
    }
    initrt::RunOptions options;
    options.threads = threads;
    initrt::runShardJobs(wanted, options);
    return INITRT_OK;
  });
}

} // extern "C"
