// The activations' plain-loop CPU kernels (engine/kernels/activation.hpp).
#include "engine/kernels/activation.hpp"

#include "engine/kernels/parallel.hpp"
#include "engine/kernels/softmax.hpp"

namespace dtrain::kernels {

// Memory-bound: large tensors are split over oneDNN's OpenMP threads.
void relu_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
  // Both loads are unconditional so the select vectorises (no branch).
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = dy[i];
    dx[i] = y[i] > 0.0f ? gi : 0.0f;
  }
}

void leaky_relu_forward(const float* x, float slope, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

void leaky_relu_backward(const float* x, const float* dy, float slope, float* dx, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = dy[i];
    dx[i] = x[i] > 0.0f ? gi : slope * gi;
  }
}

void softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
  parallel_ranges(rows, n, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) softmax_row(x + r * n, y + r * n, n, n);
  });
}

void softmax_backward_rows(const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
  parallel_ranges(rows, n, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) softmax_backward_row(y + r * n, dy + r * n, dx + r * n, n);
  });
}

}  // namespace dtrain::kernels
