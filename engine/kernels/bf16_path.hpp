// Where bfloat16 compute runs on this CPU: oneDNN's native bf16 kernels
// (AVX512_BF16, AMX, or oneDNN's own emulation on AVX-512), or, where oneDNN
// has no bf16 matmul or convolution (AVX2 and older), dtrain's emulation: the
// bf16 operands widened to f32 (exact), the f32 kernel, a bf16 result rounded
// to nearest even once at the end, as the native kernels round it. Decided once
// per process by a probe; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/kernels/cast.hpp"
#include "engine/kernels/ktype.hpp"

namespace dtrain::kernels {

// True when bf16 matmul, convolution and pooling go through the emulation.
bool bf16_emulated();

// Test hook: force the emulation on (true) or off (false, which only works
// where oneDNN has native bf16), or back to the probe's answer (nullopt).
void set_bf16_emulation_for_testing(std::optional<bool> emulate);

// The start-up line: "bfloat16: native (oneDNN avx512_core_amx)" or
// "bfloat16: emulated on avx2 (no native bf16 on this CPU): operands rounded
// to bf16, math in float32".
std::string describe_bf16_path();

// n bf16 values (uint16_t bits) widened to f32 in the calling thread's
// emulation buffer `slot` (0..2); valid until the thread's next use of the slot.
const float* widen_bf16(const void* x, int64_t n, int slot);

// An f32 buffer of n elements, the calling thread's `slot` (0..2), contents
// unspecified.
float* bf16_scratch(int64_t n, int slot);

// The emulation's result: compute(out) writes n f32 values into out, which is
// dst itself when dst_type is f32, else the thread's scratch `slot`, rounded
// once into dst (bf16 bits) afterwards.
template <class Compute>
void emulated_result(KType dst_type, void* dst, int64_t n, int slot, Compute&& compute) {
  if (dst_type == KType::kF32) {
    compute(static_cast<float*>(dst));
    return;
  }
  float* out = bf16_scratch(n, slot);
  compute(out);
  cast_f32_to_bf16(out, static_cast<uint16_t*>(dst), n);
}

}  // namespace dtrain::kernels
