// Bulk f32 <-> bf16 casts as plain loops that GCC vectorises. Each loop is
// compiled twice (x86-64-v4 = AVX-512, and the baseline) and picked at load
// time, since dtrain is built without -march.
//
// Measured on this Zen 4 (2 vCPUs) for n = 64*28*28*32: f32 -> bf16 in
// ~165 us on one thread, the same as oneDNN's jit:uni reorder on two threads
// (~170 us), which moreover flushes denormals to zero; the baseline (SSE2)
// build of the loop takes ~510 us. bf16 -> f32: ~115 us vs ~180 us for the
// reorder. An OpenMP loop over both vCPUs was far slower while other work
// shared the machine (thread wake-ups dominate a 100 us loop).
// bench/bench_kernels_bf16 repeats the comparison.
#include "engine/kernels/cast.hpp"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#define DTRAIN_CAST_CLONES [[gnu::target_clones("arch=x86-64-v4", "default")]]
#else
#define DTRAIN_CAST_CLONES
#endif

namespace dtrain::kernels {

// The same arithmetic as float_to_bf16, written branch-free so it vectorises.
DTRAIN_CAST_CLONES void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x0040u;
    y[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

DTRAIN_CAST_CLONES void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &u, sizeof u);
  }
}

}  // namespace dtrain::kernels
