// Row-major float32 matrix multiply on the GPU through cuBLASLt: the GPU
// counterpart of engine/kernels/matmul.hpp (same MatmulShape, same layouts),
// with bias and ReLU fused in the epilogue, and the dense layer's forward and
// backward built on it. One cuBLASLt handle and one 32 MiB workspace per GPU
// (from its caching allocator), created on first use and kept, and one plan
// (descriptors and the heuristic's algorithm) per distinct problem, made on
// its first call and reused, so a warm call only runs the kernel. Every call
// queues its work on dev.compute without waiting for it; calls for one GPU
// are thread-safe (serialised on that GPU's lock).
#pragma once

#include <cstdint>

#include "engine/cuda/device_context.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cuda {

// float32 math (CUBLAS_COMPUTE_32F) or TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32), the latter only where the job asks for
// `precision.matmul: tf32`.
enum class MathMode { kFloat32, kTf32 };

// What cuBLASLt applies to the product before writing c.
enum class Epilogue { kNone, kBias, kBiasRelu, kRelu };

// The column-major cuBLASLt problem equal to a row-major one: row-major
// C (M, N) = op(A) op(B) is column-major C^T (N, M) = op(B)^T op(A)^T, so
// cuBLASLt's "A" is our B and its "B" our A, each read in place. Plain
// arithmetic, usable (and tested) without a GPU.
struct LtGemmPlan {
  int64_t m = 0, n = 0, k = 0;          // the column-major problem: D (m, n) = op(A') (m, k) op(B') (k, n)
  bool trans_a = false, trans_b = false;  // op on A' (our B) and on B' (our A)
  int64_t a_rows = 0, a_cols = 0, lda = 0;  // A' as stored, column-major
  int64_t b_rows = 0, b_cols = 0, ldb = 0;  // B' as stored, column-major
  int64_t c_rows = 0, c_cols = 0, ldc = 0;  // C^T (N, M), column-major
  // Strided batch: `batch` problems, the i-th one's A', B' and C^T starting
  // stride_* elements after the (i-1)-th's (our products stored one after another).
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};
LtGemmPlan plan_row_major(const kernels::MatmulShape& s);

// c (M, N) = epilogue(op(a) (M, K) x op(b) (K, N) [+ bias (N) broadcast over rows]),
// all row-major device memory on `dev`, queued on dev.compute. bias is
// required for kBias/kBiasRelu and must be null otherwise. c must not alias
// a, b or bias. M, N, K >= 1; s.batch == 1 (a batch is refused with a
// kRuntime error). Errors: a cuBLASLt failure, or no algorithm for this
// problem (kRuntime, naming the shape).
Status matmul(GpuDevice& dev, const kernels::MatmulShape& s, const float* a, const float* b, const float* bias,
              float* c, Epilogue epilogue, MathMode mode);

// The dense layer (engine/layers/dense.hpp) on the GPU:
//   x: (batch, in)   w: (in, units)   b: (units) or null   y, dy: (batch, units)
struct DenseShape {
  int64_t batch = 0, in = 0, units = 0;
};
// y = x w [+ b], then relu when asked (fused in the epilogue).
Status dense_forward(GpuDevice& dev, const DenseShape& s, const float* x, const float* w, const float* b, bool relu,
                     float* y, MathMode mode);
// dx (batch, in) = dy w^T.
Status dense_backward_data(GpuDevice& dev, const DenseShape& s, const float* dy, const float* w, float* dx,
                           MathMode mode);
// dw (in, units) = x^T dy; db (units) = column sums of dy when db is not
// null (the BGRADA epilogue of the same matmul where it works; after any
// failure of that attempt, for this problem from then on, a plain matmul and
// a product with a ones vector). Both are overwritten.
Status dense_backward_weights(GpuDevice& dev, const DenseShape& s, const float* x, const float* dy, float* dw,
                              float* db, MathMode mode);

}  // namespace dtrain::cuda
