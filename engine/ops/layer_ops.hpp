// The math of layers that is not a library call (ops/library.hpp): one op
// per layer computation, on the context's device through on_device(), so
// that a backend implements the op rather than the layer. CPU kernels in
// engine/kernels/; an op with no GPU kernel is refused on cuda by the support
// table (ops/support.cpp). Outputs are allocated by the caller.
#pragma once

#include <span>

#include "engine/kernels/eltwise.hpp"
#include "engine/kernels/merge.hpp"
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

// Batch normalization (kernels/batch_norm.hpp), float32, x (..., c) as rows
// of c channels. The statistics' sums are host doubles (c, or 2c for the
// backward), so that the caller can add them over the replicas between the
// passes (synchronised batch norm). Training passes batch_mean and batch_var
// (host, c) to batch_norm_apply, which moves the moving averages; inference
// passes null. mean and inv_std (c) are kept for the backward.
void batch_norm_sums(const Context& ctx, const Tensor& x, double* sum);
void batch_norm_squared_deviations(const Context& ctx, const Tensor& x, const float* mean, double* sq);
void batch_norm_apply(const Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      Tensor& moving_mean, Tensor& moving_var, const float* batch_mean, const float* batch_var,
                      float momentum, float epsilon, Tensor& mean, Tensor& inv_std, Tensor& y);
void batch_norm_param_grads(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& mean,
                            const Tensor& inv_std, double* sums, Tensor& dgamma, Tensor& dbeta);
void batch_norm_input_grad(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                           const Tensor& mean, const Tensor& inv_std, const double* sums, double total,
                           bool batch_stats, Tensor& dx);

// Multi-head attention's own loops (kernels/attention.hpp), float32 (the op
// "attention" of the support table):
// attention_permute_heads: dst (B, H, T, D) = scale * src (B, T, H, D) when
// to_heads, else the reverse; attention_softmax_rows: in place over the rows
// of tk scores of p (row r is query r % tq; causal keeps keys <= r % tq);
// attention_softmax_backward: g (shape of p) becomes the scores' gradient,
// through the dropout mask first when not null.
void attention_permute_heads(const Context& ctx, const Tensor& src, Tensor& dst, int64_t b, int64_t t, int64_t h,
                             int64_t d, float scale, bool to_heads);
void attention_softmax_rows(const Context& ctx, Tensor& p, int64_t tq, int64_t tk, bool causal);
void attention_softmax_backward(const Context& ctx, const Tensor& p, const Tensor* mask, Tensor& g, int64_t tk);
// attention_add_input_grads: dx += a + b (dx += a when b is null), all of
// dx's shape: the gradient of an input that was also the key and/or value.
void attention_add_input_grads(const Context& ctx, Tensor& dx, const Tensor& a, const Tensor* b);

// Inverted dropout (kernels/dropout.hpp), float32: x, mask, y (B, ...) with
// row r of the batch global example example_offset + r; mask := its
// kernels::dropout_mask(key, example) (0 or 1 / (1 - rate)), y := x * mask.
// The dropout layer and multi_head_attention's dropout of probabilities.
void dropout(const Context& ctx, const Tensor& x, uint64_t key, int64_t example_offset, float rate, Tensor& mask,
             Tensor& y);

// Embedding (kernels/embedding.hpp): y (ids..., d) := the row of table
// (rows, d) that each id of ids (int32, or float32 holding integers) picks,
// NaN for an id not in [0, rows); its backward: dtable (rows, d) := dy's rows
// (ids..., d) summed into the rows their ids pick, in token order, and
// dids := 0 when not null (ids have no gradient).
void embedding_forward(const Context& ctx, const Tensor& ids, const Tensor& table, Tensor& y);
void embedding_backward(const Context& ctx, const Tensor& ids, const Tensor& dy, Tensor& dtable, Tensor* dids);

// Position embedding (kernels/embedding.hpp), float32: x, y (..., steps, c),
// y := x + rows [0, steps) of table (length, c) for every sequence; its
// backward: dtable (length, c) := dy summed over the sequences (in double,
// in order) in rows [0, steps), 0 in the rows after them.
void position_embedding_forward(const Context& ctx, const Tensor& x, const Tensor& table, Tensor& y);
void position_embedding_backward(const Context& ctx, const Tensor& dy, Tensor& dtable);

// The merge layers (kernels/merge.hpp), float32 (the op "merge" of the
// support table). merge_forward: y := xs[0] op ... op xs[k-1], all of one
// shape; merge_backward: dxs[i] (xs[i]'s shape, or null) := input i's
// gradient given dy. concatenate_forward: y (outer, sum of widths) := the
// inputs (outer, widths[i]) side by side, outer = y.numel() / sum of widths;
// concatenate_backward: dxs[i] (or null) := its columns of dy.
void merge_forward(const Context& ctx, kernels::MergeOp op, std::span<const Tensor* const> xs, Tensor& y);
void merge_backward(const Context& ctx, kernels::MergeOp op, std::span<const Tensor* const> xs, const Tensor& dy,
                    std::span<Tensor* const> dxs);
void concatenate_forward(const Context& ctx, std::span<const Tensor* const> xs, std::span<const int64_t> widths,
                         Tensor& y);
void concatenate_backward(const Context& ctx, const Tensor& dy, std::span<const int64_t> widths,
                          std::span<Tensor* const> dxs);

// Zero padding (kernels/zero_padding.hpp), float32 (the op "pad"): y
// (n, h + 2 ph, w + 2 pw, c) := x (n, h, w, c) framed by zeros; its
// backward: dx (n, h, w, c) := the middle of dy (y's shape).
void zero_pad2d(const Context& ctx, const Tensor& x, int64_t ph, int64_t pw, Tensor& y);
void zero_pad2d_backward(const Context& ctx, const Tensor& dy, int64_t ph, int64_t pw, Tensor& dx);

// Activations, float32, every tensor of one shape (the op "activation";
// kernels/activation.hpp and oneDNN's kernels/eltwise.hpp on the CPU, the
// CUDA module's on a GPU). relu: y := x if x > 0, else 0; its backward
// dx := dy where y > 0, else 0 (also the mask of a conv2d fused with relu).
// softmax over the last dimension and its backward from y. eltwise: gelu
// (no GPU kernel: refused on cuda by the support table), tanh, sigmoid; its
// backward reads `saved`, x for gelu and y for tanh and sigmoid. dx may share
// dy's storage (every kernel reads an element, or a row, of dy before
// writing it), never x's or y's.
void relu_forward(const Context& ctx, const Tensor& x, Tensor& y);
void relu_backward(const Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx);
void softmax_forward(const Context& ctx, const Tensor& x, Tensor& y);
void softmax_backward(const Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx);
void eltwise_forward(const Context& ctx, kernels::EltwiseKind kind, const Tensor& x, Tensor& y);
void eltwise_backward(const Context& ctx, kernels::EltwiseKind kind, const Tensor& saved, const Tensor& dy,
                      Tensor& dx);

// Leaky relu (kernels/activation.hpp), float32 (its own op, "leaky_relu"):
// y := x if x > 0, else slope x; dx := dy if x > 0, else slope dy (dx may
// share dy's storage).
void leaky_relu_forward(const Context& ctx, const Tensor& x, float slope, Tensor& y);
void leaky_relu_backward(const Context& ctx, const Tensor& x, const Tensor& dy, float slope, Tensor& dx);

}  // namespace dtrain::ops
