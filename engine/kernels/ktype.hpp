// Element types of CPU kernel operands. A bf16 value is stored as a uint16_t
// holding the high half of a float32 (see engine/kernels/cast.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtrain::kernels {

enum class KType : uint8_t {
  kF32,   // float
  kBf16,  // bfloat16 in a uint16_t: 8 exponent bits like f32, 7 mantissa bits
};

constexpr size_t ktype_bytes(KType t) { return t == KType::kBf16 ? 2 : 4; }
constexpr const char* ktype_name(KType t) { return t == KType::kBf16 ? "bf16" : "f32"; }

}  // namespace dtrain::kernels
