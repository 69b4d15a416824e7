// The activations' float32 plain loops (gelu, tanh and sigmoid are oneDNN's,
// kernels/eltwise.hpp): relu and leaky relu elementwise, softmax row by row
// (kernels/softmax.hpp). Large tensors are split over the OpenMP team
// (kernels/parallel.hpp); every element or row is computed alone, so results
// do not depend on the thread count. Thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// y := max(x, 0) (x if x > 0, else 0). y may be x.
void relu_forward(const float* x, float* y, int64_t n);
// dx := dy where y > 0, else 0 (y: relu's output, or any output that is
// positive exactly where relu passes, as a fused conv2d + relu's). dx may be dy.
void relu_backward(const float* y, const float* dy, float* dx, int64_t n);

// y := x if x > 0, else slope x. y may be x.
void leaky_relu_forward(const float* x, float slope, float* y, int64_t n);
// dx := dy if x > 0, else slope dy. dx may be dy.
void leaky_relu_backward(const float* x, const float* dy, float slope, float* dx, int64_t n);

// y (rows, n) := softmax of each row of x (rows, n) (kernels::softmax_row).
void softmax_rows(const float* x, float* y, int64_t rows, int64_t n);
// dx (rows, n) := y * (dy - sum(dy * y)) per row (kernels::softmax_backward_row),
// y the forward's output. dx may be dy.
void softmax_backward_rows(const float* y, const float* dy, float* dx, int64_t rows, int64_t n);

}  // namespace dtrain::kernels
