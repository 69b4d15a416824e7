// Inverted dropout's CPU kernels (engine/kernels/dropout.hpp).
#include "engine/kernels/dropout.hpp"

#include <algorithm>
#include <array>

#include "engine/kernels/parallel.hpp"
#include "engine/rng.hpp"

namespace dtrain::kernels {

// Draws exactly CounterRng(key, example).uniform(e) for each element e (the
// Philox block of e holds elements 4*(e/4) .. 4*(e/4)+3), four at a time.
void dropout_mask(uint64_t key, uint64_t example, float rate, float* mask, int64_t n) {
  const std::array<uint32_t, 2> k{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  const float scale = 1.0f / (1.0f - rate);
  for (int64_t base = 0; base < n; base += 4) {
    const auto block = static_cast<uint64_t>(base / 4);
    const auto r = philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                               static_cast<uint32_t>(example), static_cast<uint32_t>(example >> 32)},
                              k);
    const int64_t end = std::min<int64_t>(base + 4, n);
    for (int64_t e = base; e < end; ++e) {
      const float u = static_cast<float>(r[static_cast<size_t>(e - base)] >> 8) * (1.0f / 16777216.0f);
      mask[e] = u >= rate ? scale : 0.0f;
    }
  }
}

void dropout_forward(const float* x, float* mask, float* y, int64_t rows, int64_t per, uint64_t key,
                     int64_t example_offset, float rate) {
  parallel_ranges(rows, per, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      dropout_mask(key, static_cast<uint64_t>(example_offset + r), rate, mask + r * per, per);
    }
  });
  parallel_ranges(rows * per, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) y[i] = x[i] * mask[i];
  });
}

}  // namespace dtrain::kernels
