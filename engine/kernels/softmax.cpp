// Softmax row kernels: plain loops that GCC vectorises at -O3 (checked with
// -fopt-info-vec), compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2) and
// the baseline and picked once by cpu_isa() (DTRAIN_MAX_CPU_ISA caps it); the
// project builds with
// -ffp-contract=off, so every clone rounds alike (no fused multiply-adds).
// The exponential is Cephes' expf (range reduction by n ln 2 in two parts,
// a degree-5 polynomial, then 2^n from the exponent bits); std::exp is a
// libm call that no loop around it can vectorise.
#include "engine/kernels/softmax.hpp"

#include <bit>
#include <cstdint>

#include "engine/cpu_isa.hpp"


namespace dtrain::kernels {

namespace {

constexpr int kLanes = 8;  // partial sums of a row

// cond ? a : b on the bits: GCC will not if-convert a float select under
// -ftrapping-math (the default), which would keep the loops scalar.
inline float pick(bool cond, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(cond);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// exp(v) for v <= 0; v < -87 gives 0, NaN gives NaN.
inline float exp_nonpositive(float v) {
  const uint32_t a = std::bit_cast<uint32_t>(v) & 0x7fffffffu;  // |v|, NaN above every number
  const bool small = a > 0x42ae0000u;                           // |v| > 87 or NaN
  const float c = pick(small, -87.0f, v);
  // n = round(c / ln 2) by the 1.5 * 2^23 trick, in [-126, 0].
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;  // c - n ln 2, |r| <= ln 2 / 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * (r * r) + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return pick(small, pick(a > 0x7f800000u, v, 0.0f), e * two_n);
}

// ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
inline float combine(const float* s) { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); }

}  // namespace

float detail::softmax_exp(float v) { return exp_nonpositive(v); }

[[gnu::always_inline]] inline void exp_row_body(const float* v, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] = exp_nonpositive(v[j]);
}

[[gnu::always_inline]] inline void softmax_row_body(const float* x, float* y, int64_t valid, int64_t n) {
  float m[kLanes];
  for (int l = 0; l < kLanes; ++l) m[l] = x[0];
  int64_t j = 0;
  for (; j + kLanes <= valid; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) m[l] = pick(x[j + l] > m[l], x[j + l], m[l]);
  }
  for (; j < valid; ++j) m[0] = x[j] > m[0] ? x[j] : m[0];
  float top = m[0];
  for (int l = 1; l < kLanes; ++l) top = m[l] > top ? m[l] : top;
  for (j = 0; j < valid; ++j) y[j] = exp_nonpositive(x[j] - top);
  float s[kLanes] = {};
  for (j = 0; j + kLanes <= valid; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) s[l] += y[j + l];
  }
  for (; j < valid; ++j) s[j % kLanes] += y[j];
  const float inv = 1.0f / combine(s);
  for (j = 0; j < valid; ++j) y[j] *= inv;
  for (j = valid; j < n; ++j) y[j] = 0.0f;
}

[[gnu::always_inline]] inline void backward_row_body(const float* y, const float* g, float* dx, int64_t n) {
  float s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) s[l] += g[j + l] * y[j + l];
  }
  for (; j < n; ++j) s[j % kLanes] += g[j] * y[j];
  const float dot = combine(s);
  for (j = 0; j < n; ++j) dx[j] = y[j] * (g[j] - dot);
}

// The three builds of each row kernel, picked once by cpu_isa().
namespace {

DTRAIN_V4 void exp_row_v4(const float* v, float* y, int64_t n) { exp_row_body(v, y, n); }
DTRAIN_V3 void exp_row_v3(const float* v, float* y, int64_t n) { exp_row_body(v, y, n); }
void exp_row_base(const float* v, float* y, int64_t n) { exp_row_body(v, y, n); }

DTRAIN_V4 void softmax_row_v4(const float* x, float* y, int64_t valid, int64_t n) { softmax_row_body(x, y, valid, n); }
DTRAIN_V3 void softmax_row_v3(const float* x, float* y, int64_t valid, int64_t n) { softmax_row_body(x, y, valid, n); }
void softmax_row_base(const float* x, float* y, int64_t valid, int64_t n) { softmax_row_body(x, y, valid, n); }

DTRAIN_V4 void backward_row_v4(const float* y, const float* g, float* dx, int64_t n) { backward_row_body(y, g, dx, n); }
DTRAIN_V3 void backward_row_v3(const float* y, const float* g, float* dx, int64_t n) { backward_row_body(y, g, dx, n); }
void backward_row_base(const float* y, const float* g, float* dx, int64_t n) { backward_row_body(y, g, dx, n); }

}  // namespace

void detail::softmax_exp_row(const float* v, float* y, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&exp_row_v4, &exp_row_v3, &exp_row_base);
  fn(v, y, n);
}

void softmax_row(const float* x, float* y, int64_t valid, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&softmax_row_v4, &softmax_row_v3, &softmax_row_base);
  fn(x, y, valid, n);
}

void softmax_backward_row(const float* y, const float* g, float* dx, int64_t n) {
  static const auto fn = pick_for_cpu_isa(&backward_row_v4, &backward_row_v3, &backward_row_base);
  fn(y, g, dx, n);
}

}  // namespace dtrain::kernels
