// ZeroPadding2D's CPU kernels (engine/kernels/zero_padding.hpp).
#include "engine/kernels/zero_padding.hpp"

#include <cstring>

namespace dtrain::kernels {

void zero_pad2d(const float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw, float* y) {
  const int64_t oh = h + 2 * ph, ow = w + 2 * pw;
  std::memset(y, 0, static_cast<size_t>(n * oh * ow * c) * sizeof(float));
  const int64_t row_in = w * c, row_out = ow * c;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < h; ++r) {
      std::memcpy(y + (b * oh + r + ph) * row_out + pw * c, x + (b * h + r) * row_in,
                  static_cast<size_t>(row_in) * sizeof(float));
    }
  }
}

void zero_pad2d_backward(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw,
                         float* dx) {
  const int64_t oh = h + 2 * ph, ow = w + 2 * pw;
  const int64_t row_in = w * c, row_out = ow * c;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < h; ++r) {
      std::memcpy(dx + (b * h + r) * row_in, dy + (b * oh + r + ph) * row_out + pw * c,
                  static_cast<size_t>(row_in) * sizeof(float));
    }
  }
}

}  // namespace dtrain::kernels
