/* What one AVX-512 instruction costs the kernels: the reciprocal throughput, in core cycles, of
 * the instructions of the uniform loop and of the 16-bit conversions and permutes that could
 * follow it, and of the bf16 conversion beside an instruction of known ports (which ports its uops
 * take). Each is timed as a loop of independent copies (throughput, not latency), and a
 * chain of dependent scalar adds (one cycle each) timed just before and after it turns seconds
 * into core cycles, so the figures need no performance counters and do not depend on the clock rate
 * of the moment.
 *
 *   initc-instruction-cost      prints "instruction  cycles  elements  cycles per 32 elements"
 *
 * Exits 77 (skipped) on a CPU without AVX-512BW; the AVX512-BF16 rows need that extension.
 */
#include <stdio.h>
#include <time.h>

enum { kIterations = 1 << 15, kTimings = 15 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define X2(s) s s
#define X4(s) X2(s) X2(s)
#define X8(s) X4(s) X4(s)

/* 64 dependent adds of two registers per iteration: 64 core cycles. (Not of an immediate: a
 * Golden Cove renames chains of those faster than one per cycle.) */
static void addChain(long n) {
  long x = 0, y = 1;
  __asm__ volatile("1:\n\t" X8(X8("addq %2, %1\n\t")) "dec %0\n\tjnz 1b"
                   : "+r"(n), "+r"(x)
                   : "r"(y)
                   : "cc");
}

/* 32 independent copies per iteration of `INSN DST` for 8 destinations DST0-7, INSN's sources
 * zmm8 and zmm9 holding 1.5f in every lane (a normal number: no conversion takes a slow path). */
#define COPY(insn, dst, k) insn " %%" dst #k "\n\t"
#define COPY4(insn, dst, a, b, c, d)                                                               \
  COPY(insn, dst, a) COPY(insn, dst, b) COPY(insn, dst, c) COPY(insn, dst, d)
#define COPIES(insn, dst) COPY4(insn, dst, 0, 1, 2, 3) COPY4(insn, dst, 4, 5, 6, 7)
#define THROUGHPUT(name, insn, dst)                                                                \
  static void name(long n) {                                                                       \
    __asm__ volatile("movl $0x3fc00000, %%eax\n\tvpbroadcastd %%eax, %%zmm8\n\t"                   \
                     "vmovaps %%zmm8, %%zmm9\n\t"                                                  \
                     "1:\n\t" X4(COPIES(insn, dst)) "dec %0\n\tjnz 1b"                             \
                     : "+r"(n)                                                                     \
                     :                                                                             \
                     : "eax", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",        \
                       "xmm7", "xmm8", "xmm9");                                                    \
  }

THROUGHPUT(vpmuludq, "vpmuludq %%zmm8, %%zmm9,", "zmm")
THROUGHPUT(vpternlogq, "vpternlogq $0x96, %%zmm8, %%zmm9,", "zmm")
THROUGHPUT(vpshufd, "vpshufd $0xb1, %%zmm9,", "zmm")
THROUGHPUT(vshufps, "vshufps $0x11, %%zmm8, %%zmm9,", "zmm")
THROUGHPUT(vcvtudq2ps, "vcvtudq2ps %%zmm9,", "zmm")
THROUGHPUT(vpermw, "vpermw %%zmm8, %%zmm9,", "zmm")
THROUGHPUT(vcvtps2ph, "vcvtps2ph $0, %%zmm9,", "ymm")
THROUGHPUT(vcvtneps2bf16, "vcvtneps2bf16 %%zmm9,", "ymm")
THROUGHPUT(vcvtne2ps2bf16, "vcvtne2ps2bf16 %%zmm8, %%zmm9,", "zmm")

/* 16 conversions and 16 copies of another instruction, which runs on port 0 only (vpsllq), on
 * either vector port (vaddps) or on port 5 only (vpshufd): which ports a conversion's uops
 * take shows in how much time the other instruction adds to the conversions' own. Both write
 * the same eight registers, which renaming makes independent. */
#define PAIRED(name, other)                                                                        \
  static void name(long n) {                                                                       \
    __asm__ volatile("movl $0x3fc00000, %%eax\n\tvpbroadcastd %%eax, %%zmm8\n\t"                   \
                     "vmovaps %%zmm8, %%zmm9\n\t"                                                  \
                     "1:\n\t" X2(COPIES("vcvtne2ps2bf16 %%zmm8, %%zmm9,", "zmm")                   \
                                     COPIES(other, "zmm")) "dec %0\n\tjnz 1b"                      \
                     : "+r"(n)                                                                     \
                     :                                                                             \
                     : "eax", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",        \
                       "xmm7", "xmm8", "xmm9");                                                    \
  }

PAIRED(withPort0, "vpsllq $3, %%zmm9,")
PAIRED(withEitherPort, "vaddps %%zmm8, %%zmm9,")
PAIRED(withPort5, "vpshufd $0xb1, %%zmm9,")

struct Row {
  const char *name;
  void (*run)(long);
  int elements;     /* elements one instruction handles (words for vpermw, else 32-bit) */
  int bf16;         /* needs AVX512-BF16 */
  int instructions; /* in a row's unit: 2 for a conversion with another instruction */
};

static double seconds(void (*run)(long), long n) {
  double start = now();
  run(n);
  return now() - start;
}

/* Core cycles per instruction of `run`: its time over the clock's, timed just before and just
 * after it (the faster of the two: an interrupt only ever adds time), the fewest of kTimings.
 * A change of clock rate slows both alike; a guest on the other hardware thread of the core
 * takes vector pipes from `run` alone. */
static double cyclesPerInstruction(void (*run)(long)) {
  const long n = kIterations;
  double best = 1e30, before = seconds(addChain, n);
  for (int t = 0; t < kTimings; ++t) {
    double instructions = seconds(run, n), after = seconds(addChain, n);
    double cycle = (before < after ? before : after) / ((double)n * 64);
    double cycles = instructions / ((double)n * 32) / cycle;
    if (cycles < best)
      best = cycles;
    before = after;
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    fprintf(stderr, "usage: %s (no arguments)\n", argv[0]);
    return 2;
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bw")) {
    printf("skipped: this CPU has no AVX-512BW\n");
    return 77;
  }
  int bf16 = __builtin_cpu_supports("avx512bf16");
  static const struct Row rows[] = {
      {"vpmuludq zmm", vpmuludq, 16, 0, 1},
      {"vpternlogq zmm", vpternlogq, 16, 0, 1},
      {"vpshufd zmm", vpshufd, 16, 0, 1},
      {"vshufps zmm", vshufps, 16, 0, 1},
      {"vcvtudq2ps zmm", vcvtudq2ps, 16, 0, 1},
      {"vpermw zmm", vpermw, 32, 0, 1},
      {"vcvtps2ph zmm -> ymm", vcvtps2ph, 16, 0, 1},
      {"vcvtneps2bf16 zmm -> ymm", vcvtneps2bf16, 16, 1, 1},
      {"vcvtne2ps2bf16 zmm", vcvtne2ps2bf16, 32, 1, 1},
      {"  + vpsllq (port 0)", withPort0, 32, 1, 2},
      {"  + vaddps (port 0 or 5)", withEitherPort, 32, 1, 2},
      {"  + vpshufd (port 5)", withPort5, 32, 1, 2},
  };
  printf("%-26s %8s %9s %24s\n", "instruction", "cycles", "elements", "cycles per 32 elements");
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
    if (rows[r].bf16 && !bf16) {
      printf("%-26s %8s\n", rows[r].name, "(no AVX512-BF16)");
      continue;
    }
    double cycles = cyclesPerInstruction(rows[r].run) * rows[r].instructions;
    printf("%-26s %8.2f %9d %24.2f\n", rows[r].name, cycles, rows[r].elements,
           cycles * 32 / rows[r].elements);
  }
  printf("(reciprocal throughput in core cycles; a chain of dependent adds is the clock)\n");
  return 0;
}
