// Elementwise CUDA kernels: relu forward and backward, bias add, scale and
// axpy. Every buffer is float32 device memory; work is queued on `stream`
// and the Status reports a failed launch (execution errors surface at the
// next synchronising call). n == 0 queues nothing. Each result is
// bit-identical to the CPU code it mirrors (named per function): one
// correctly rounded operation per element, never an FMA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

// y = x > 0 ? x : 0 (engine/layers/activation.cpp). x, y: (n); y may be x.
Status relu_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
// dx = y > 0 ? dy : 0, from the forward output y as the CPU layer does.
// y, dy, dx: (n); dx may be dy.
Status relu_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);
// y[r, c] = x[r, c] + bias[c]. x, y: (rows, cols) row-major; bias: (cols); y may be x.
Status bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
// y = alpha * x. x, y: (n); y may be x.
Status scale(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream);
// y = y + alpha * x (the product rounded, then the sum). x, y: (n), distinct.
Status axpy(float alpha, const float* x, float* y, int64_t n, cudaStream_t stream);

}  // namespace dtrain::cuda
