// Bulk f32 <-> bf16 casts. f32 -> bf16 uses AVX512_BF16's vcvtneps2bf16 when
// the CPU has it (picked at run time: dtrain is built without -march), else a
// plain loop that GCC vectorises, compiled for x86-64-v4 (AVX-512) and the
// baseline and picked once by cpu_isa() (DTRAIN_MAX_CPU_ISA caps both
// choices). bf16 -> f32 is that plain loop (a shift).
//
// Measured on this Zen 4 (2 vCPUs, one thread), n = 64*28*28*32, median us:
//   f32 -> bf16: vcvtneps2bf16 path ~114; oneDNN's reorder (jit:uni) ~119,
//                which moreover flushes denormals to zero; plain loop ~163
//                (AVX-512), ~510 (baseline SSE2)
//   bf16 -> f32: plain loop ~112; reorder ~123
// An OpenMP loop over both vCPUs was far slower while other work shared the
// machine (thread wake-ups dominate a 100 us loop), so the casts stay on the
// calling thread. bench/bench_kernels_bf16 repeats the comparison.
#include "engine/kernels/cast.hpp"

#include <cstring>

#include "engine/cpu_isa.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DTRAIN_HAVE_X86_BF16 1
#else
#define DTRAIN_HAVE_X86_BF16 0
#endif

namespace dtrain::kernels {

namespace {

// The same arithmetic as float_to_bf16, written branch-free so it vectorises.
[[gnu::always_inline]] inline void f32_to_bf16_body(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x0040u;
    y[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

[[gnu::always_inline]] inline void relu_grad_body(const float* dy, const float* y, uint16_t* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, dy + i, sizeof u);
    u = y[i] > 0.0f ? u : 0u;
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x0040u;
    dx[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

[[gnu::always_inline]] inline void bf16_to_f32_body(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &u, sizeof u);
  }
}

DTRAIN_V4 void f32_to_bf16_v4(const float* x, uint16_t* y, int64_t n) { f32_to_bf16_body(x, y, n); }
void f32_to_bf16_base(const float* x, uint16_t* y, int64_t n) { f32_to_bf16_body(x, y, n); }
DTRAIN_V4 void relu_grad_v4(const float* dy, const float* y, uint16_t* dx, int64_t n) { relu_grad_body(dy, y, dx, n); }
void relu_grad_base(const float* dy, const float* y, uint16_t* dx, int64_t n) { relu_grad_body(dy, y, dx, n); }
DTRAIN_V4 void bf16_to_f32_v4(const uint16_t* x, float* y, int64_t n) { bf16_to_f32_body(x, y, n); }
void bf16_to_f32_base(const uint16_t* x, float* y, int64_t n) { bf16_to_f32_body(x, y, n); }

#if DTRAIN_HAVE_X86_BF16

bool cpu_has_avx512_bf16() {
  static const bool has = cpu_isa() >= CpuIsa::kAvx512Bf16;
  return has;
}

// Stores v (x's values in `lanes`, or 0 where the caller masked them out) as
// bf16 to y's `lanes`. vcvtneps2bf16 rounds to nearest even and quiets NaN
// exactly as float_to_bf16 does, but reads denormal inputs as zero: lanes of v
// holding a denormal (rare) are redone one by one from x.
[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] inline void store_bf16(__m512 v, const float* x, uint16_t* y,
                                                                                __mmask16 lanes) {
  _mm256_mask_storeu_epi16(y, lanes, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
  const __m512i u = _mm512_castps_si512(v);
  unsigned denormal = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)), u,
                                                  _mm512_set1_epi32(0x007fffff));
  for (; denormal != 0; denormal &= denormal - 1) {
    const int j = __builtin_ctz(denormal);
    y[j] = float_to_bf16(x[j]);
  }
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] inline void bf16_block(const float* x, uint16_t* y,
                                                                                __mmask16 lanes) {
  store_bf16(_mm512_maskz_loadu_ps(lanes, x), x, y, lanes);
}

// The lanes where y > 0 (ordered: NaN is not) keep dy; the others load 0.
[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] inline void relu_grad_block(const float* dy, const float* y,
                                                                                     uint16_t* dx, __mmask16 lanes) {
  const __m512 out = _mm512_maskz_loadu_ps(lanes, y);
  const __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes, out, _mm512_setzero_ps(), _CMP_GT_OQ);
  store_bf16(_mm512_maskz_loadu_ps(keep, dy), dy, dx, lanes);
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] void relu_grad_avx512_bf16(const float* dy, const float* y,
                                                                                     uint16_t* dx, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) relu_grad_block(dy + i, y + i, dx + i, 0xffff);
  if (i < n) relu_grad_block(dy + i, y + i, dx + i, static_cast<__mmask16>((1u << (n - i)) - 1));
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] void f32_to_bf16_avx512_bf16(const float* x, uint16_t* y,
                                                                                       int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) bf16_block(x + i, y + i, 0xffff);
  if (i < n) bf16_block(x + i, y + i, static_cast<__mmask16>((1u << (n - i)) - 1));
}

#else

bool cpu_has_avx512_bf16() { return false; }
void f32_to_bf16_avx512_bf16(const float*, uint16_t*, int64_t) {}
void relu_grad_avx512_bf16(const float*, const float*, uint16_t*, int64_t) {}

#endif

}  // namespace

void detail::cast_f32_to_bf16_portable(const float* x, uint16_t* y, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&f32_to_bf16_v4, &f32_to_bf16_base, &f32_to_bf16_base);
  fn(x, y, n);
}

void detail::relu_grad_f32_to_bf16_portable(const float* dy, const float* y, uint16_t* dx, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&relu_grad_v4, &relu_grad_base, &relu_grad_base);
  fn(dy, y, dx, n);
}

void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  if (cpu_has_avx512_bf16()) {
    f32_to_bf16_avx512_bf16(x, y, n);
  } else {
    detail::cast_f32_to_bf16_portable(x, y, n);
  }
}

void relu_grad_f32_to_bf16(const float* dy, const float* y, uint16_t* dx, int64_t n) {
  if (cpu_has_avx512_bf16()) {
    relu_grad_avx512_bf16(dy, y, dx, n);
  } else {
    detail::relu_grad_f32_to_bf16_portable(dy, y, dx, n);
  }
}

void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&bf16_to_f32_v4, &bf16_to_f32_base, &bf16_to_f32_base);
  fn(x, y, n);
}

}  // namespace dtrain::kernels
