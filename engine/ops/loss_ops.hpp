// The losses' math as ops: each on the context's device through on_device(),
// CPU kernels in engine/kernels/losses.cpp; only the sparse softmax
// cross-entropy has a GPU kernel (the others are refused on cuda by the
// support table). engine/losses/ keeps the shape rules, predictions and the
// table of losses.
#pragma once

#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"

namespace dtrain::ops {

// Every op: logits (B, ...) float32 on ctx.device, labels on the same device;
// returns the sum over the B examples of the example's loss (back on the host:
// a wait on a GPU); dlogits, when not null, is a float32 tensor of logits'
// shape on ctx.device (the caller allocates it), set to grad_scale *
// d(sum)/d(logits).
// `weights`, when not null, is (B) float32 on ctx.device: each example's loss
// and gradient are multiplied by its weight (null: every weight 1).
//
// Labels (B, P...) class ids as floats against logits (B, P..., C); an
// example's loss is the mean over its P positions of lse - logit[label]. A
// label that is not an integer in [0, C) gives NaN (loss and gradient row).
double sparse_softmax_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                                    Tensor* dlogits, const Tensor* weights = nullptr);
// Targets (B, C) (probabilities, not necessarily summing to one):
// lse(x) sum(t) - sum(t x) per example.
double softmax_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                             Tensor* dlogits, const Tensor* weights = nullptr);
// Targets of logits' shape in [0, 1]: the mean over the example's elements of
// max(x, 0) - x t + log1p(exp(-|x|)).
double sigmoid_cross_entropy(const Context& ctx, const Tensor& logits, const Tensor& labels, float grad_scale,
                             Tensor* dlogits, const Tensor* weights = nullptr);
// Targets of the prediction's shape: the mean over the example's elements of (x - t)^2.
double mean_squared_error(const Context& ctx, const Tensor& prediction, const Tensor& labels, float grad_scale,
                          Tensor* dlogits, const Tensor* weights = nullptr);

}  // namespace dtrain::ops
