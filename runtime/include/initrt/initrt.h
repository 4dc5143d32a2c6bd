/* The initc runtime's C API: fill a training process's own buffers with a rank's shards.
 *
 *   initrt_program *prog;
 *   char err[512];
 *   if (initrt_program_open("prog", &prog, err, sizeof err) != INITRT_OK) { puts(err); ... }
 *   struct initrt_param_info info;
 *   initrt_param_info(prog, rank, 0, &info);          // name, dtype, global shape, slice, bytes
 *   initrt_fill(prog, rank, info.name, buf, info.bytes, 0, err, sizeof err);
 *   initrt_fill_box(prog, name, ndim, offset, shape, strides, buf, bytes, 0, err, sizeof err);
 *                                                    // any box, whatever the program's mesh
 *   initrt_fill_boxes(prog, count, boxes, 0, err, sizeof err);   // many, in one parallel run
 *   initrt_program_close(prog);
 *
 * Nothing here aborts: every failure is a status plus a message in `err` (when given). A program
 * handle may be used from several threads at once; each call uses its own worker threads.
 *
 * Linking: the static library build/lib/libinitrt.a and what it uses,
 *   cc app.c -Iruntime/include build/lib/libinitrt.a -lxxhash -lstdc++ -lpthread -ldl -lm */
#ifndef INITRT_INITRT_H
#define INITRT_INITRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum initrt_status {
  INITRT_OK = 0,
  INITRT_INVALID_ARGUMENT = 1, /* a null pointer, a rank outside the mesh, an index out of range */
  INITRT_BAD_PROGRAM = 2,      /* program.json or kernels.so missing, invalid or mismatched */
  INITRT_UNSUPPORTED_CPU = 3,  /* no kernel variant this CPU can run (or the one named is absent) */
  INITRT_NOT_FOUND = 4,        /* no parameter (or alias) of that name */
  INITRT_SIZE_MISMATCH = 5,    /* the buffer size differs from the rank's shard */
  INITRT_OUT_OF_MEMORY = 6,
  INITRT_TOO_MANY_DIMS = 7, /* a tensor with more than INITRT_MAX_DIMS dims */
  INITRT_INTERNAL = 8,
  INITRT_BAD_BASE = 9 /* a base checkpoint (init.load) missing, unreadable or mismatched */
} initrt_status;

/* Short name of a status ("INITRT_OK", ...). */
const char *initrt_status_name(initrt_status status);

typedef struct initrt_program initrt_program;

#define INITRT_MAX_DIMS 16

/* Like `struct stat` and stat(): the struct is always written `struct initrt_param_info`, since
 * the function initrt_param_info fills it. */
struct initrt_param_info {
  const char *name;        /* valid until initrt_program_close */
  const char *dtype;       /* "F32", "BF16", "F16", "F64", "BOOL", "I64" */
  int32_t ndim;
  int32_t is_buffer;       /* 1 for a buffer, 0 for a trainable parameter */
  int32_t persistent;      /* 0 for a buffer a checkpoint does not store */
  int64_t global_shape[INITRT_MAX_DIMS];
  int64_t slice_offset[INITRT_MAX_DIMS]; /* the rank's box: [offset, offset + shape) per dim */
  int64_t slice_shape[INITRT_MAX_DIMS];
  int64_t elements;        /* elements in the rank's slice */
  uint64_t bytes;          /* bytes of the rank's slice: the buffer size initrt_fill wants */
};

/* Opens prog_dir (program.json + kernels.so): validates the program, picks the kernels compiled
 * for the best CPU of program.json's variants this CPU supports (the environment variable
 * INITRT_TARGET_CPU names one instead), checks the kernels' checksum, loads them. The values do
 * not depend on the variant. The bytes checked are the bytes loaded: a handle keeps running the
 * kernels.so it opened, and opening a directory again after another compile replaced it runs the
 * new kernels, while older handles stay open. It also opens the base checkpoints the program's
 * init.load parameters read and checks their dtypes and shapes (a relative path starts at the
 * working directory); when they cannot be, the program still opens, and filling a loaded
 * parameter returns INITRT_BAD_BASE with the reason. On failure *out is NULL and err holds the
 * reason. */
initrt_status initrt_program_open(const char *prog_dir, initrt_program **out, char *err,
                                  size_t errlen);

/* Releases the program; NULL is allowed. As after free(), the handle is gone: using it or
 * closing it again is undefined (names from initrt_param_info die with it too). */
void initrt_program_close(initrt_program *prog);

/* Ranks in the program's mesh (0 for a NULL program). */
int64_t initrt_world_size(const initrt_program *prog);

/* Parameters and buffers in the program, in program order (0 for a NULL program). */
int64_t initrt_param_count(const initrt_program *prog);

/* The program-order index of the parameter (or alias) `name`, -1 when there is none (or for a
 * NULL argument). */
int64_t initrt_param_index(const initrt_program *prog, const char *name);

/* Describes parameter `index` (program order) as `rank` holds it. */
initrt_status initrt_param_info(const initrt_program *prog, int64_t rank, int64_t index,
                                struct initrt_param_info *out);

/* Fills `buf` with `rank`'s shard of the parameter (or alias) `name`, row-major. buf_bytes must
 * equal the shard's bytes, and buf be aligned to the element size (as malloc's is). threads <= 0
 * uses one thread per CPU the process may run on (its affinity mask); processes of one host
 * allowed on the same CPUs (torchrun, mpirun --bind-to none) should divide them through
 * `threads`, as prog/init does. The bytes are the same as those `prog/init` writes for that rank.
 * A buffer of at least 4 MiB is taken to be maybe fresh (never touched, as a new tensor's is):
 * transparent huge pages are asked for (MADV_HUGEPAGE) on its whole 2 MiB pages, and its pages
 * are faulted in (MADV_POPULATE_WRITE, where the kernel has it) by the thread that fills them,
 * and, when the process may run on a CPU the fill leaves idle, by one more thread a few MiB
 * ahead; no page holding memory outside the buffer is advised, and the contents of the caller's
 * memory outside the buffer and who owns it are unchanged. This applies to every fill below. */
initrt_status initrt_fill(const initrt_program *prog, int64_t rank, const char *name, void *buf,
                          size_t buf_bytes, int threads, char *err, size_t errlen);

/* Fills bufs[i] with `rank`'s shard of parameter i for every parameter, in program order, all
 * in one parallel run; each buffer must hold initrt_param_info(...).bytes and be aligned as
 * initrt_fill's. A NULL entry skips that parameter. */
initrt_status initrt_fill_all(const initrt_program *prog, int64_t rank, void *const *bufs,
                              int threads, char *err, size_t errlen);

/* Fills the box [offset, offset + shape) of the global tensor of the parameter (or alias) `name`
 * into `buf`, whatever mesh the program was compiled for: a process that shards its tensors its
 * own way (DTensor, FSDP, jax.Array) asks for exactly the box it holds. The values are those of
 * the same elements in any rank's prog/init output. `ndim` must be the parameter's; shape[d] may
 * be 0. Element (i_0, ..., i_{n-1}) of the box goes to buf + (sum_d i_d * strides[d]) elements;
 * strides == NULL means row-major contiguous. Strides must be positive, ordered as row-major
 * strides are (each at least the extent of the dims after it, so no two elements share memory),
 * and the innermost one 1: a transposed destination is refused (fill a contiguous copy instead).
 * buf_bytes is the writable size from buf, which must cover the box's last element; buf is
 * aligned to the element size. threads as in initrt_fill. Memory: none beyond the destination,
 * except for a parameter with a whole-tensor transform (orthogonal), whose matrix scratch every
 * fill of it needs, plus, into a strided destination, the box once more (it is computed whole,
 * then scattered). */
initrt_status initrt_fill_box(const initrt_program *prog, const char *name, int32_t ndim,
                              const int64_t *offset, const int64_t *shape, const int64_t *strides,
                              void *buf, size_t buf_bytes, int threads, char *err, size_t errlen);

/* One box for initrt_fill_boxes: the arguments of initrt_fill_box from name to buf_bytes. */
struct initrt_box {
  const char *name;
  int32_t ndim;
  const int64_t *offset;
  const int64_t *shape;
  const int64_t *strides; /* NULL: row-major contiguous */
  void *buf;
  size_t buf_bytes;
};

/* Fills `count` boxes, each as initrt_fill_box would, in one parallel run: the threads share the
 * boxes' work and meet once at the end, where a call per box makes them meet once per box (a
 * cost that grows with the tensors, and with the machine's load). Every box is checked before
 * anything is written: on a refusal, err names the box (boxes[i]) and no destination is written.
 * Boxes must not overlap in memory. Memory as initrt_fill_box's, for one box at a time. */
initrt_status initrt_fill_boxes(const initrt_program *prog, size_t count,
                                const struct initrt_box *boxes, int threads, char *err,
                                size_t errlen);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* INITRT_INITRT_H */
