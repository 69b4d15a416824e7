// Elementwise CUDA kernels (eltwise.hpp): grid-stride loops, one element per
// iteration. Pointers that may alias carry no __restrict__.
#include "engine/cuda/check.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/launch.cuh"

namespace dtrain::cuda {

namespace {

__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

__global__ void relu_backward_kernel(const float* __restrict__ y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

__global__ void bias_add_kernel(const float* x, const float* __restrict__ bias, float* y, int64_t rows,
                                int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fadd_rn(x[i], bias[i % cols]);
}

__global__ void scale_kernel(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fmul_rn(alpha, x[i]);
}

__global__ void axpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = __fadd_rn(y[i], __fmul_rn(alpha, x[i]));
}

}  // namespace

Status relu_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  relu_forward_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(x, y, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("relu_forward_kernel");
}

Status relu_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  relu_backward_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(y, dy, dx, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("relu_backward_kernel");
}

Status bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return {};
  bias_add_kernel<<<grid_for(rows * cols), kThreadsPerBlock, 0, stream>>>(x, bias, y, rows, cols);
  return DTRAIN_CUDA_LAUNCH_STATUS("bias_add_kernel");
}

Status scale(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  scale_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(alpha, x, y, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("scale_kernel");
}

Status axpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  axpy_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(alpha, x, y, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("axpy_kernel");
}

}  // namespace dtrain::cuda
