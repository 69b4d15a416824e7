// Seeded test inputs for the backend tests: a float32 host tensor of values
// uniform in [lo, hi) from a xorshift stream, the same on every machine.
#pragma once

#include <cstdint>

#include "engine/tensor.hpp"

namespace dtrain::test {

inline Tensor seeded_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    t[i] = lo + (hi - lo) * static_cast<float>(s >> 40) / static_cast<float>(1ull << 24);
  }
  return t;
}

}  // namespace dtrain::test
