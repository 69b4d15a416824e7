// The merge layers' float32 CPU loops: elementwise add, subtract, multiply,
// average and maximum of k same-shaped inputs (elements split over the
// OpenMP team, kernels/parallel.hpp; each element is computed alone, in input
// order, so results do not depend on the thread count) and concatenation
// along one axis. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtrain::kernels {

enum class MergeOp { kAdd, kSubtract, kMultiply, kAverage, kMaximum };

// y (n) := xs[0] op xs[1] op ... op xs[k-1] (k >= 1 inputs of n elements), left
// to right; average: the sum times 1 / k. y may not alias an input.
void merge_forward(MergeOp op, const float* const* xs, size_t k, int64_t n, float* y);
// dxs[i] (n) := the gradient of input i given dy (n), for each i whose dxs[i]
// is not null: add: dy; subtract: dy, -dy; average: dy / k; multiply: dy
// times the other inputs in input order; maximum: dy at the first input
// holding the element's maximum, 0 at the others.
void merge_backward(MergeOp op, const float* const* xs, size_t k, const float* dy, float* const* dxs, int64_t n);

// Concatenation of k inputs along one axis: with `outer` the product of the
// dims before the axis, input i is (outer, widths[i]) and y is (outer,
// sum of widths) (a width is the input's size along the axis times the
// product of the dims after it). The backward copies each input's columns of
// dy (outer, sum of widths) into dxs[i] when not null.
void concatenate_forward(const float* const* xs, const int64_t* widths, size_t k, int64_t outer, float* y);
void concatenate_backward(const float* dy, const int64_t* widths, size_t k, int64_t outer, float* const* dxs);

}  // namespace dtrain::kernels
