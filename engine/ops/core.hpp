// Elementwise and reduction ops shared by layers, optimizers and strategies.
// float32 tensors. Ops returning a host value (sum_squares, all_finite) read
// a scalar back from the device: a counted device-to-host copy.
#pragma once

#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"

namespace dtrain::ops {

// acc += x elementwise (same numel). x may live on another device of the
// same kind as acc (an in-process all-reduce across replicas).
void add_into(const Context& ctx, Tensor& acc, const Tensor& x);
// x *= s
void scale(const Context& ctx, Tensor& x, float s);
// out = a * b elementwise; out may alias a or b.
void mul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor& out);
// out (n) = sum over rows of x (rows, n), in row order.
void sum_rows(const Context& ctx, const Tensor& x, Tensor& out);
// Sum of squares in double, fixed summation order (deterministic).
double sum_squares(const Context& ctx, const Tensor& x);
// True when every element is finite.
bool all_finite(const Context& ctx, const Tensor& x);

}  // namespace dtrain::ops
