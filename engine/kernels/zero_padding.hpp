// ZeroPadding2D's float32 CPU loops: an image batch copied into the middle
// of a zeroed, larger one, and the matching crop (its backward). Row copies;
// thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// y (n, h + 2 ph, w + 2 pw, c) := 0 with x (n, h, w, c) at rows [ph, ph + h)
// and columns [pw, pw + w).
void zero_pad2d(const float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw, float* y);
// dx (n, h, w, c) := that window of dy (n, h + 2 ph, w + 2 pw, c).
void zero_pad2d_backward(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw,
                         float* dx);

}  // namespace dtrain::kernels
