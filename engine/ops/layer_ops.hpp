// The math of layers that is not a library call (ops/library.hpp): one op
// per layer computation, on the context's device through on_device(), so
// that a backend implements the op rather than the layer. CPU kernels in
// engine/kernels/; an op with no GPU kernel is refused on cuda by the support
// table (ops/support.cpp). Outputs are allocated by the caller.
#pragma once

#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"

namespace dtrain::ops {

// Layer normalization over the last dimension (kernels/layer_norm.hpp),
// float32: x, y (..., c); gamma, beta (c) or null; mean, inv_std (rows) with
// rows = x.numel() / c, kept for the backward.
void layer_norm_forward(const Context& ctx, const Tensor& x, const Tensor* gamma, const Tensor* beta, float epsilon,
                        Tensor& y, Tensor& mean, Tensor& inv_std);
// Its gradients given dy (shape of x): dgamma, dbeta (c) and dx (shape of x),
// each when not null.
void layer_norm_backward(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor* gamma,
                         const Tensor& mean, const Tensor& inv_std, Tensor* dgamma, Tensor* dbeta, Tensor* dx);

// Global pooling (kernels/global_pool.hpp), float32: y (batch, c) = the mean
// or the max over the p positions of x (batch, p, c), and its dx (shape of x)
// given dy (batch, c).
void global_pool_forward(const Context& ctx, const Tensor& x, int64_t positions, bool max, Tensor& y);
void global_pool_backward(const Context& ctx, const Tensor& x, const Tensor& dy, int64_t positions, bool max,
                          Tensor& dx);

}  // namespace dtrain::ops
