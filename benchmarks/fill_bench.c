/* A training process's view of initialization: the C API filling its own freshly allocated
 * buffers (malloc, so never touched before) with one rank's persistent shards, as a framework
 * would before loading them into tensors.
 *
 *   initc-fill-bench PROG_DIR [RANK [THREADS [fresh|resident]]]
 *       prints "<seconds> <GB/s> <bytes>" for initrt_fill_all alone
 *
 * RANK defaults to 0, THREADS to 1; `resident` writes every buffer once before the timed fill,
 * so only the computation is timed, not the page faults. */
#include "initrt/initrt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A whole decimal integer >= 0, or false. */
static int parseCount(const char *text, long long *out) {
  char *end = NULL;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno || end == text || *end || value < 0)
    return 0;
  *out = value;
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    fprintf(stderr, "usage: %s PROG_DIR [RANK [THREADS [fresh|resident]]]\n", argv[0]);
    return 2;
  }
  long long rank = 0, threads = 1;
  if ((argc > 2 && !parseCount(argv[2], &rank)) || (argc > 3 && !parseCount(argv[3], &threads)) ||
      threads < 1 || threads > 65536) {
    fprintf(stderr, "%s: RANK must be an integer >= 0 and THREADS one from 1 to 65536\n", argv[0]);
    return 2;
  }
  const char *mode = argc > 4 ? argv[4] : "fresh";
  if (strcmp(mode, "fresh") != 0 && strcmp(mode, "resident") != 0) {
    fprintf(stderr, "%s: the mode is fresh or resident, not %s\n", argv[0], mode);
    return 2;
  }
  char err[1024];
  initrt_program *prog = NULL;
  if (initrt_program_open(argv[1], &prog, err, sizeof err) != INITRT_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], err);
    return 1;
  }
  int64_t count = initrt_param_count(prog);
  void **bufs = calloc((size_t)count + 1, sizeof(void *));
  unsigned long long total = 0;
  int status = 0;
  for (int64_t i = 0; bufs && i < count && status == 0; ++i) {
    struct initrt_param_info info;
    if (initrt_param_info(prog, rank, i, &info) != INITRT_OK) {
      fprintf(stderr, "%s: rank %lld is not in the program's mesh\n", argv[0], rank);
      status = 1;
    } else if (info.persistent && info.bytes > 0) {
      bufs[i] = malloc(info.bytes);
      if (!bufs[i]) {
        fprintf(stderr, "%s: out of memory for %s\n", argv[0], info.name);
        status = 1;
      } else if (strcmp(mode, "resident") == 0) {
        memset(bufs[i], 1, info.bytes);
      }
      total += info.bytes;
    }
  }
  if (!bufs) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    status = 1;
  }
  if (status == 0) {
    double start = now();
    if (initrt_fill_all(prog, rank, bufs, (int)threads, err, sizeof err) != INITRT_OK) {
      fprintf(stderr, "%s: %s\n", argv[0], err);
      status = 1;
    } else {
      double seconds = now() - start;
      printf("%.6f %.3f %llu\n", seconds, (double)total / seconds * 1e-9, total);
    }
  }
  for (int64_t i = 0; bufs && i < count; ++i)
    free(bufs[i]);
  free(bufs);
  initrt_program_close(prog);
  return status;
}
