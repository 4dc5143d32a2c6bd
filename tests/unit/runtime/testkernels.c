/* Kernels with known values for the runtime tests: element g of a tensor (g = its global row-major
 * index) is a fixed function of g, so every shard can be checked against the whole tensor. They
 * follow the KernelFn ABI of runtime/include/initrt/program.h; the tensor rank is in the name. */
#include <stdint.h>
#include <string.h>

static int64_t globalIndex(int rank, const int64_t *globalShape, const int64_t *offset,
                           const int64_t *localShape, int64_t local) {
  int64_t coords[8];
  for (int d = rank - 1; d >= 0; --d) {
    coords[d] = local % localShape[d] + offset[d];
    local /= localShape[d];
  }
  int64_t global = 0;
  for (int d = 0; d < rank; ++d)
    global = global * globalShape[d] + coords[d];
  return global;
}

/* Built a second time with TK_ALT (libinitrt-testkernels-alt.so): the same kernels with other
 * values, to tell two compiles of one program apart. */
#ifdef TK_ALT
#define TK_SALT 0x5bd1e995ull
#else
#define TK_SALT 0
#endif

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull + TK_SALT;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A float in [1, 2) from the hash: any bit error shows. */
static float f32Value(int64_t g) {
  uint32_t bits = (uint32_t)(mix((uint64_t)g) >> 41) | 0x3f800000u;
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

#define DEFINE_KERNEL(NAME, RANK, TYPE, VALUE)                                                 \
  void NAME(void *out, const int64_t *globalShape, const int64_t *offset,                      \
            const int64_t *localShape, int64_t begin, int64_t end, const uint64_t *args) {    \
    (void)args;                                                                                \
    TYPE *data = (TYPE *)out;                                                                  \
    for (int64_t i = begin; i < end; ++i) {                                                    \
      int64_t g = globalIndex(RANK, globalShape, offset, localShape, i);                       \
      data[i] = (TYPE)(VALUE);                                                                 \
    }                                                                                          \
  }

DEFINE_KERNEL(tk_f32_r1, 1, float, f32Value(g))
DEFINE_KERNEL(tk_f32_r2, 2, float, f32Value(g))
DEFINE_KERNEL(tk_i64_r3, 3, int64_t, 3 * g + 7)
DEFINE_KERNEL(tk_bf16_r1, 1, uint16_t, mix((uint64_t)g) >> 48)
DEFINE_KERNEL(tk_bool_r2, 2, uint8_t, g % 3 == 0)
DEFINE_KERNEL(tk_f64_r0, 0, double, 0.25 + (double)g)
