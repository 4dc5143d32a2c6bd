/* The speed limit of initialization: memset into fresh pages (never touched before), with
 * MADV_HUGEPAGE as prog/init's arena uses, or 4 KiB pages, or into pages already resident.
 *
 *   initc-memset-fresh BYTES [huge|small|resident]     prints "<seconds> <GB/s>"
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s BYTES [huge|small|resident]\n", argv[0]);
    return 2;
  }
  size_t bytes = strtoull(argv[1], NULL, 10);
  const char *mode = argc > 2 ? argv[2] : "huge";
  if (bytes == 0) {
    fprintf(stderr, "BYTES must be a positive integer\n");
    return 2;
  }
  size_t align = (size_t)2 << 20, mapped = bytes + align;
  char *raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
  if (strcmp(mode, "small") != 0)
    madvise(p, bytes, MADV_HUGEPAGE);
  if (strcmp(mode, "resident") == 0)
    memset(p, 1, bytes);
  double start = now();
  memset(p, 0x5a, bytes);
  double seconds = now() - start;
  /* Keep the stores observable. */
  volatile char sink = p[bytes / 2];
  (void)sink;
  printf("%.6f %.3f\n", seconds, (double)bytes / seconds * 1e-9);
  munmap(raw, mapped);
  return 0;
}
