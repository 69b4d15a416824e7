// Layer normalization over the last dimension of float32 rows, forward and
// backward, with plain per-row loops: row statistics (8 interleaved partial
// sums, so that they vectorise) and the parameter-gradient sums accumulate in
// double. Rows are split over the OpenMP team; the parameter gradients are
// column_sums (chunks of rows added in a fixed order): results do not depend
// on the thread count. Thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// x, y (rows, c); gamma, beta (c) or null (scale 1, shift 0); mean, inv_std
// (rows): each row's mean and 1 / sqrt(variance + epsilon), for the backward.
// y = gamma * (x - mean) * inv_std + beta.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, int64_t rows, int64_t c, float epsilon,
                        float* y, float* mean, float* inv_std);

// The gradients given dy (rows, c): dgamma, dbeta (c) when not null (written,
// not added to), dx (rows, c) when not null. gamma as in the forward.
void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean, const float* inv_std,
                         int64_t rows, int64_t c, float* dgamma, float* dbeta, float* dx);

}  // namespace dtrain::kernels
