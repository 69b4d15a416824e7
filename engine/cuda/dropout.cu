// Dropout kernels (dropout.hpp): one thread per Philox block, i.e. four
// consecutive elements of one row, the CPU layer's grouping.
#include <cassert>

#include "engine/cuda/check.hpp"
#include "engine/cuda/dropout.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/philox.hpp"

namespace dtrain::cuda {

namespace {

__global__ void dropout_forward_kernel(uint64_t key, uint64_t example0, float rate, float keep_scale,
                                       const float* x, float* __restrict__ mask, float* y, int64_t rows,
                                       int64_t per, int64_t blocks_per_row) {
  const int64_t total = rows * blocks_per_row;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t r = i / blocks_per_row;
    const int64_t b = i - r * blocks_per_row;
    const Philox4 draw = counter_block(key, example0 + static_cast<uint64_t>(r), static_cast<uint64_t>(b));
    const int64_t row = r * per;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t e = 4 * b + j;
      if (e < per) {
        const float m = philox_uniform(draw.v[j]) >= rate ? keep_scale : 0.0f;
        mask[row + e] = m;
        y[row + e] = __fmul_rn(x[row + e], m);
      }
    }
  }
}

__global__ void dropout_backward_kernel(const float* __restrict__ mask, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) dx[i] = __fmul_rn(dy[i], mask[i]);
}

}  // namespace

Status dropout_forward(uint64_t key, int64_t example_offset, float rate, const float* x, float* mask, float* y,
                       int64_t rows, int64_t per, cudaStream_t stream) {
  assert(rate >= 0.0f && rate < 1.0f);
  if (rows <= 0 || per <= 0) return {};
  const float keep_scale = 1.0f / (1.0f - rate);  // as the CPU layer computes it
  const int64_t blocks_per_row = (per + 3) / 4;
  dropout_forward_kernel<<<grid_for(rows * blocks_per_row), kThreadsPerBlock, 0, stream>>>(
      key, static_cast<uint64_t>(example_offset), rate, keep_scale, x, mask, y, rows, per, blocks_per_row);
  return DTRAIN_CUDA_LAUNCH_STATUS("dropout_forward_kernel");
}

Status dropout_backward(const float* mask, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  dropout_backward_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(mask, dy, dx, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("dropout_backward_kernel");
}

}  // namespace dtrain::cuda
