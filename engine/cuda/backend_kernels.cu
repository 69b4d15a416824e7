// The compute backend's own kernels (backend_kernels.hpp). Elementwise ones
// are grid-stride loops; row ones use one block per row; the reductions use a
// fixed grid, so their results do not depend on timing.
#include "engine/cuda/backend_kernels.hpp"
#include "engine/cuda/check.hpp"
#include "engine/cuda/launch.cuh"

namespace dtrain::cuda {

namespace {

__global__ void fill32_kernel(uint32_t* p, uint32_t word, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) p[i] = word;
}

__global__ void sigmoid_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

__global__ void sigmoid_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = y[i];
    dx[i] = __fmul_rn(dy[i], __fmul_rn(v, __fsub_rn(1.0f, v)));
  }
}

__global__ void tanh_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = tanhf(x[i]);
}

__global__ void tanh_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = y[i];
    dx[i] = __fmul_rn(dy[i], __fsub_rn(1.0f, __fmul_rn(v, v)));
  }
}

__global__ void mul_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = __fmul_rn(a[i], b[i]);
}

// Sum (op: 0) or max (op: 1) of one value per thread over the block.
template <int Op>
__device__ float block_reduce(float v) {
  __shared__ float shared[kThreadsPerBlock];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      const float o = shared[threadIdx.x + stride];
      shared[threadIdx.x] = Op == 0 ? __fadd_rn(shared[threadIdx.x], o) : fmaxf(shared[threadIdx.x], o);
    }
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

__global__ void softmax_rows_kernel(const float* x, float* y, int64_t cols) {
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce<1>(m);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
  s = block_reduce<0>(s);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(row[j] - m) / s;
}

__global__ void softmax_backward_rows_kernel(const float* y, const float* dy, float* dx, int64_t cols) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += dy[base + j] * y[base + j];
  dot = block_reduce<0>(dot);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dx[base + j] = y[base + j] * (dy[base + j] - dot);
}

__global__ void sum_rows_kernel(const float* x, float* out, int64_t rows, int64_t cols) {
  for (int64_t j = global_thread(); j < cols; j += grid_threads()) {
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s = __fadd_rn(s, x[r * cols + j]);
    out[j] = s;
  }
}

// One thread per row, in the CPU loss's order (engine/kernels/losses.cpp).
__global__ void sparse_xent_kernel(const float* logits, const float* labels, float* dlogits, float row_scale_in,
                                   double* row_loss, int64_t rows, int64_t c, const float* weights,
                                   int64_t positions) {
  for (int64_t r = global_thread(); r < rows; r += grid_threads()) {
    const float* x = logits + r * c;
    float m = x[0];
    for (int64_t j = 1; j < c; ++j) m = x[j] > m ? x[j] : m;
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j) s += static_cast<double>(expf(__fsub_rn(x[j], m)));
    const double lse = static_cast<double>(m) + log(s);
    const float label = labels[r];
    const bool valid = label >= 0.0f && label < static_cast<float>(c) && label == floorf(label);
    const int64_t k = valid ? static_cast<int64_t>(label) : 0;
    row_loss[r] = valid ? lse - static_cast<double>(x[k]) : nan("");
    const float weight = weights != nullptr ? weights[r / positions] : 1.0f;
    if (weights != nullptr) row_loss[r] *= static_cast<double>(weight);
    if (dlogits == nullptr) continue;
    const float row_scale = weights != nullptr ? __fmul_rn(row_scale_in, weight) : row_scale_in;
    float* g = dlogits + r * c;
    const float l = static_cast<float>(lse);
    for (int64_t j = 0; j < c; ++j) g[j] = valid ? __fmul_rn(row_scale, expf(__fsub_rn(x[j], l))) : nanf("");
    if (valid) g[k] = __fsub_rn(g[k], row_scale);
  }
}

__global__ void reduce_kernel(bool nonfinite, const float* x, int64_t n, double* partials) {
  __shared__ double shared[kThreadsPerBlock];
  double acc = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const double v = x[i];
    acc += nonfinite ? (isfinite(x[i]) ? 0.0 : 1.0) : v * v;
  }
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

unsigned rows_grid(int64_t rows) { return static_cast<unsigned>(rows); }

}  // namespace

Status fill32(void* p, uint32_t word, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  fill32_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(static_cast<uint32_t*>(p), word, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("fill32_kernel");
}

Status sigmoid_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  sigmoid_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(x, y, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("sigmoid_kernel");
}

Status sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  sigmoid_backward_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(y, dy, dx, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("sigmoid_backward_kernel");
}

Status tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  tanh_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(x, y, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("tanh_kernel");
}

Status tanh_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  tanh_backward_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(y, dy, dx, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("tanh_backward_kernel");
}

Status mul(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return {};
  mul_kernel<<<grid_for(n), kThreadsPerBlock, 0, stream>>>(a, b, out, n);
  return DTRAIN_CUDA_LAUNCH_STATUS("mul_kernel");
}

Status softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return {};
  softmax_rows_kernel<<<rows_grid(rows), kThreadsPerBlock, 0, stream>>>(x, y, cols);
  return DTRAIN_CUDA_LAUNCH_STATUS("softmax_rows_kernel");
}

Status softmax_backward_rows(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return {};
  softmax_backward_rows_kernel<<<rows_grid(rows), kThreadsPerBlock, 0, stream>>>(y, dy, dx, cols);
  return DTRAIN_CUDA_LAUNCH_STATUS("softmax_backward_rows_kernel");
}

Status sum_rows(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols <= 0) return {};
  sum_rows_kernel<<<grid_for(cols), kThreadsPerBlock, 0, stream>>>(x, out, rows, cols);
  return DTRAIN_CUDA_LAUNCH_STATUS("sum_rows_kernel");
}

Status sparse_xent_rows(const float* logits, const float* labels, float* dlogits, float row_scale, double* row_loss,
                        int64_t rows, int64_t classes, const float* weights, int64_t positions, cudaStream_t stream) {
  if (rows <= 0) return {};
  sparse_xent_kernel<<<grid_for(rows), kThreadsPerBlock, 0, stream>>>(logits, labels, dlogits, row_scale, row_loss,
                                                                      rows, classes, weights, positions);
  return DTRAIN_CUDA_LAUNCH_STATUS("sparse_xent_kernel");
}

Status reduce_partials(bool nonfinite, const float* x, int64_t n, double* partials, cudaStream_t stream) {
  reduce_kernel<<<kReduceBlocks, kThreadsPerBlock, 0, stream>>>(nonfinite, x, n, partials);
  return DTRAIN_CUDA_LAUNCH_STATUS("reduce_kernel");
}

}  // namespace dtrain::cuda
