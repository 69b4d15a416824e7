// Global pooling over the positions of float32 (batch, positions, channels)
// data: the mean (accumulated in double) or the max of each channel. Plain
// loops, channels innermost so that they vectorise. Thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// y (batch, c) = mean or max over p positions of x (batch, p, c).
void global_pool_forward(const float* x, int64_t batch, int64_t p, int64_t c, bool max, float* y);

// dx (batch, p, c) from dy (batch, c): mean: dy / p at every position; max:
// dy at the first position holding the maximum (a later one wins only when
// strictly greater, as PyTorch's max(dim); TensorFlow's reduce_max splits
// ties), 0 elsewhere, recomputed from x.
void global_pool_backward(const float* x, const float* dy, int64_t batch, int64_t p, int64_t c, bool max, float* dx);

}  // namespace dtrain::kernels
