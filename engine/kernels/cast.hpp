// float32 <-> bfloat16 conversion on the CPU: bulk casts for kernel operands
// and constexpr scalar helpers for tests and host code. A bf16 value is a
// uint16_t bit pattern, the high half of the float32 it stands for.
#pragma once

#include <bit>
#include <cstdint>

namespace dtrain::kernels {

// Rounds to nearest, ties to even. NaN stays NaN (quieted, sign kept), +-inf
// stays +-inf, finite values beyond bf16's largest round to +-inf, denormals
// are rounded like any other value (never flushed to zero).
constexpr uint16_t float_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Exact (every bf16 value is a float32 value).
constexpr float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// y[i] = float_to_bf16(x[i]) for i in [0, n), bit for bit (AVX512_BF16 where
// the CPU has it, a vectorised loop elsewhere; see cast.cpp).
// REQUIRES: x and y do not overlap. Runs on the calling thread (no OpenMP: the
// loop is memory-bound). Thread-safe.
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n);
// y[i] = bf16_to_float(x[i]) for i in [0, n). REQUIRES and threading as above.
void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n);
// The gradient through a ReLU, rounded to bf16 in the same pass:
// dx[i] = float_to_bf16(y[i] > 0 ? dy[i] : 0.0f) for i in [0, n), bit for bit
// (y is the ReLU's output; a NaN y masks its gradient to 0, as the plain
// comparison does). One pass instead of a float32 mask and a cast: it reads
// dy and y once and writes 2 bytes an element instead of 4 + 4 + 2.
// REQUIRES: dx overlaps neither dy nor y. Threading as above.
void relu_grad_f32_to_bf16(const float* dy, const float* y, uint16_t* dx, int64_t n);

namespace detail {
// cast_f32_to_bf16's path for CPUs without AVX512_BF16 (for tests).
void cast_f32_to_bf16_portable(const float* x, uint16_t* y, int64_t n);
// relu_grad_f32_to_bf16's path for CPUs without AVX512_BF16 (for tests).
void relu_grad_f32_to_bf16_portable(const float* dy, const float* y, uint16_t* dx, int64_t n);
}  // namespace detail

}  // namespace dtrain::kernels
