// CUDA kernels of the compute backend that engine/cuda/eltwise.hpp lacks:
// fill, sigmoid/tanh and their gradients, elementwise product, row softmax
// and its gradient, column sums, the sparse softmax cross-entropy rows and
// deterministic reductions. float32 device memory; work is queued on `stream`
// (the Status reports a failed launch). Each names the CPU code it mirrors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

// n 4-byte words at p := word.
Status fill32(void* p, uint32_t word, int64_t n, cudaStream_t stream);
// engine/kernels/eltwise (oneDNN logistic / tanh, backward from the output y):
// y = 1 / (1 + exp(-x)), dx = dy * y * (1 - y); y = tanh(x), dx = dy * (1 - y * y).
// Within a few ulps of oneDNN (different exp/tanh), not bit-identical.
Status sigmoid_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
Status sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);
Status tanh_forward(const float* x, float* y, int64_t n, cudaStream_t stream);
Status tanh_backward(const float* y, const float* dy, float* dx, int64_t n, cudaStream_t stream);
// out = a * b (ops::mul); out may alias a or b. Bit-identical.
Status mul(const float* a, const float* b, float* out, int64_t n, cudaStream_t stream);
// Row softmax of (rows, cols) and its gradient dx = y * (dy - sum(dy * y))
// (kernels/softmax.hpp; sums in another order: within a few ulps).
Status softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
Status softmax_backward_rows(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                             cudaStream_t stream);
// out (cols) = sum over rows of x (rows, cols), each column in row order:
// bit-identical to ops::sum_rows.
Status sum_rows(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream);
// The sparse softmax cross-entropy of engine/losses, one thread per row:
// row_loss[r] = lse(x_r) - x_r[label_r] (NaN for a label that is not an
// integer in [0, classes)), and when dlogits is not null dlogits_r =
// row_scale * softmax(x_r) - row_scale * onehot(label_r) (NaN row for a bad label).
// weights (or null): row r's loss and gradient times weights[r / positions].
Status sparse_xent_rows(const float* logits, const float* labels, float* dlogits, float row_scale, double* row_loss,
                        int64_t rows, int64_t classes, const float* weights, int64_t positions, cudaStream_t stream);
// Deterministic partial reductions: kReduceBlocks partials (double) of sum x^2
// or of the count of non-finite x, to be added on the host in index order.
inline constexpr int kReduceBlocks = 256;
Status reduce_partials(bool nonfinite, const float* x, int64_t n, double* partials, cudaStream_t stream);

}  // namespace dtrain::cuda
