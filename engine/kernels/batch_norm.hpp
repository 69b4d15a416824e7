// Batch normalization over the channels (last dimension) of float32 rows:
// the statistics' sums, the normalisation with the moving averages' update,
// and the backward's sums and input gradient. Plain per-channel loops (rows
// outer, channels inner, so that they vectorise); the sums over rows are
// column_sums in double (chunks of rows in parallel, added in a fixed order)
// and the elementwise passes split the rows over the OpenMP team: results do
// not depend on the number of threads. The sums come back to the caller,
// which may add them over replicas (synchronised batch norm) in between.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// sum[j] = sum over the rows of x (rows, c) of x[., j]; sum has c doubles.
void batch_norm_sums(const float* x, int64_t rows, int64_t c, double* sum);
// sq[j] = sum over the rows of (x[., j] - mean[j])^2 in double.
void batch_norm_squared_deviations(const float* x, const float* mean, int64_t rows, int64_t c, double* sq);

// The forward's per-channel state and y. Training (batch_mean, batch_var not
// null): mean_out = batch_mean, inv_std = 1 / sqrt(batch_var + epsilon), and
// the moving averages move by `momentum` towards the batch's; inference
// (both null): mean_out and inv_std from the moving averages. Then
// y = (x - mean_out) * inv_std * gamma + beta, as x * scale + shift.
void batch_norm_apply(const float* x, const float* gamma, const float* beta, float* moving_mean, float* moving_var,
                      const float* batch_mean, const float* batch_var, float momentum, float epsilon, int64_t rows,
                      int64_t c, float* mean_out, float* inv_std, float* y);

// sums[j] = sum of dy[., j]; sums[c + j] = sum of dy[., j] * xhat[., j], with
// xhat = (x - mean) * inv_std, over these rows (2c doubles); dgamma and dbeta
// (c) get them as float.
void batch_norm_param_grads(const float* x, const float* dy, const float* mean, const float* inv_std, int64_t rows,
                            int64_t c, double* sums, float* dgamma, float* dbeta);
// dx = gamma * inv_std * (dy - sums[j] / total - xhat * sums[c + j] / total)
// when `batch_stats` (training), dx = gamma * inv_std * dy otherwise.
void batch_norm_input_grad(const float* x, const float* dy, const float* gamma, const float* mean,
                           const float* inv_std, const double* sums, double total, bool batch_stats, int64_t rows,
                           int64_t c, float* dx);

}  // namespace dtrain::kernels
