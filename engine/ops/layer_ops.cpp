// Layer computations as ops (engine/ops/layer_ops.hpp).
#include "engine/ops/layer_ops.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <vector>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/activation.hpp"
#include "engine/kernels/attention.hpp"
#include "engine/kernels/batch_norm.hpp"
#include "engine/kernels/dropout.hpp"
#include "engine/kernels/embedding.hpp"
#include "engine/kernels/global_pool.hpp"
#include "engine/kernels/layer_norm.hpp"
#include "engine/kernels/zero_padding.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain::ops {

namespace {
const float* in(const Tensor* t) { return t != nullptr ? static_cast<const float*>(t->raw()) : nullptr; }
float* out(Tensor* t) { return t != nullptr ? static_cast<float*>(t->raw()) : nullptr; }

// The inputs' and the gradients' memory (call inside a kernel: raw()).
std::vector<const float*> ins(std::span<const Tensor* const> ts) {
  std::vector<const float*> p;
  for (const Tensor* t : ts) p.push_back(in(t));
  return p;
}
std::vector<float*> outs(std::span<Tensor* const> ts) {
  std::vector<float*> p;
  for (Tensor* t : ts) p.push_back(out(t));
  return p;
}
}  // namespace

void layer_norm_forward(const Context& ctx, const Tensor& x, const Tensor* gamma, const Tensor* beta, float epsilon,
                        Tensor& y, Tensor& mean, Tensor& inv_std) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  assert(y.numel() == x.numel() && mean.numel() == rows && inv_std.numel() == rows);
  on_device(ctx, "layer_norm", {&x, gamma, beta, &mean, &inv_std, &y}, [&] {
    kernels::layer_norm_forward(in(&x), in(gamma), in(beta), rows, c, epsilon, out(&y), out(&mean), out(&inv_std));
  });
}

void layer_norm_backward(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor* gamma,
                         const Tensor& mean, const Tensor& inv_std, Tensor* dgamma, Tensor* dbeta, Tensor* dx) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  assert(dy.numel() == x.numel() && mean.numel() == rows && inv_std.numel() == rows);
  on_device(ctx, "layer_norm_backward", {&x, &dy, gamma, &mean, &inv_std, dgamma, dbeta, dx}, [&] {
    kernels::layer_norm_backward(in(&x), in(&dy), in(gamma), in(&mean), in(&inv_std), rows, c, out(dgamma),
                                 out(dbeta), out(dx));
  });
}

void global_pool_forward(const Context& ctx, const Tensor& x, int64_t positions, bool max, Tensor& y) {
  const int64_t batch = x.dim(0), c = x.numel() / (batch * positions);
  assert(y.numel() == batch * c);
  on_device(ctx, "global_pool", {&x, &y},
            [&] { kernels::global_pool_forward(in(&x), batch, positions, c, max, out(&y)); });
}

void global_pool_backward(const Context& ctx, const Tensor& x, const Tensor& dy, int64_t positions, bool max,
                          Tensor& dx) {
  const int64_t batch = x.dim(0), c = x.numel() / (batch * positions);
  assert(dy.numel() == batch * c && dx.numel() == x.numel());
  on_device(ctx, "global_pool_backward", {&x, &dy, &dx},
            [&] { kernels::global_pool_backward(in(&x), in(&dy), batch, positions, c, max, out(&dx)); });
}

void batch_norm_sums(const Context& ctx, const Tensor& x, double* sum) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  on_device(ctx, "batch_norm", {&x}, [&] { kernels::batch_norm_sums(in(&x), rows, c, sum); });
}

void batch_norm_squared_deviations(const Context& ctx, const Tensor& x, const float* mean, double* sq) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  on_device(ctx, "batch_norm", {&x}, [&] { kernels::batch_norm_squared_deviations(in(&x), mean, rows, c, sq); });
}

void batch_norm_apply(const Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      Tensor& moving_mean, Tensor& moving_var, const float* batch_mean, const float* batch_var,
                      float momentum, float epsilon, Tensor& mean, Tensor& inv_std, Tensor& y) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  assert(y.numel() == x.numel() && mean.numel() == c && inv_std.numel() == c);
  on_device(ctx, "batch_norm", {&x, &gamma, &beta, &moving_mean, &moving_var, &mean, &inv_std, &y}, [&] {
    kernels::batch_norm_apply(in(&x), in(&gamma), in(&beta), out(&moving_mean), out(&moving_var), batch_mean,
                              batch_var, momentum, epsilon, rows, c, out(&mean), out(&inv_std), out(&y));
  });
}

void batch_norm_param_grads(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& mean,
                            const Tensor& inv_std, double* sums, Tensor& dgamma, Tensor& dbeta) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  assert(dy.numel() == x.numel());
  on_device(ctx, "batch_norm_backward", {&x, &dy, &mean, &inv_std, &dgamma, &dbeta}, [&] {
    kernels::batch_norm_param_grads(in(&x), in(&dy), in(&mean), in(&inv_std), rows, c, sums, out(&dgamma),
                                    out(&dbeta));
  });
}

void batch_norm_input_grad(const Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                           const Tensor& mean, const Tensor& inv_std, const double* sums, double total,
                           bool batch_stats, Tensor& dx) {
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  assert(dy.numel() == x.numel() && dx.numel() == x.numel());
  on_device(ctx, "batch_norm_backward", {&x, &dy, &gamma, &mean, &inv_std, &dx}, [&] {
    kernels::batch_norm_input_grad(in(&x), in(&dy), in(&gamma), in(&mean), in(&inv_std), sums, total, batch_stats,
                                   rows, c, out(&dx));
  });
}

void attention_permute_heads(const Context& ctx, const Tensor& src, Tensor& dst, int64_t b, int64_t t, int64_t h,
                             int64_t d, float scale, bool to_heads) {
  assert(src.numel() == b * t * h * d && dst.numel() == src.numel());
  on_device(ctx, "attention", {&src, &dst},
            [&] { kernels::attention_permute_heads(in(&src), out(&dst), b, t, h, d, scale, to_heads); });
}

void attention_softmax_rows(const Context& ctx, Tensor& p, int64_t tq, int64_t tk, bool causal) {
  const int64_t rows = tk == 0 ? 0 : p.numel() / tk;
  on_device(ctx, "attention", {&p}, [&] { kernels::attention_softmax_rows(out(&p), rows, tq, tk, causal); });
}

void attention_softmax_backward(const Context& ctx, const Tensor& p, const Tensor* mask, Tensor& g, int64_t tk) {
  const int64_t rows = tk == 0 ? 0 : p.numel() / tk;
  assert(g.numel() == p.numel() && (mask == nullptr || mask->numel() == p.numel()));
  on_device(ctx, "attention", {&p, mask, &g},
            [&] { kernels::attention_softmax_backward(in(&p), in(mask), out(&g), rows, tk); });
}

void attention_add_input_grads(const Context& ctx, Tensor& dx, const Tensor& a, const Tensor* b) {
  assert(a.numel() == dx.numel() && (b == nullptr || b->numel() == dx.numel()));
  on_device(ctx, "attention", {&dx, &a, b},
            [&] { kernels::attention_add_input_grads(out(&dx), in(&a), in(b), dx.numel()); });
}

void dropout(const Context& ctx, const Tensor& x, uint64_t key, int64_t example_offset, float rate, Tensor& mask,
             Tensor& y) {
  const int64_t rows = x.dim(0), per = rows == 0 ? 0 : x.numel() / rows;
  assert(mask.numel() == x.numel() && y.numel() == x.numel());
  on_device(ctx, "dropout", {&x, &mask, &y}, [&] {
    kernels::dropout_forward(in(&x), out(&mask), out(&y), rows, per, key, example_offset, rate);
  }, [&] {
    // The same masks, bit for bit (engine/cuda/dropout.hpp).
    gpu::dropout(ctx.device, key, example_offset, rate, in(&x), out(&mask), out(&y), rows, per);
  });
}

void embedding_forward(const Context& ctx, const Tensor& ids, const Tensor& table, Tensor& y) {
  assert(ids.dtype() == DType::i32 || ids.dtype() == DType::f32);
  const int64_t tokens = ids.numel(), rows = table.dim(0), d = table.dim(1);
  assert(y.numel() == tokens * d);
  on_device(ctx, "embedding", {&ids, &table, &y}, [&] {
    if (ids.dtype() == DType::i32) {
      kernels::embedding_gather(static_cast<const int32_t*>(ids.raw()), tokens, in(&table), rows, d, out(&y));
    } else {
      kernels::embedding_gather(in(&ids), tokens, in(&table), rows, d, out(&y));
    }
  });
}

void embedding_backward(const Context& ctx, const Tensor& ids, const Tensor& dy, Tensor& dtable, Tensor* dids) {
  const int64_t tokens = ids.numel(), rows = dtable.dim(0), d = dtable.dim(1);
  assert(dy.numel() == tokens * d && (dids == nullptr || dids->numel() == tokens));
  on_device(ctx, "embedding_backward", {&ids, &dy, &dtable, dids}, [&] {
    if (ids.dtype() == DType::i32) {
      kernels::embedding_scatter_add(static_cast<const int32_t*>(ids.raw()), tokens, in(&dy), rows, d, out(&dtable));
    } else {
      kernels::embedding_scatter_add(in(&ids), tokens, in(&dy), rows, d, out(&dtable));
    }
    if (dids != nullptr) std::fill(out(dids), out(dids) + dids->numel(), 0.0f);
  });
}

void position_embedding_forward(const Context& ctx, const Tensor& x, const Tensor& table, Tensor& y) {
  const int64_t block = x.dim(-2) * x.dim(-1), sequences = block == 0 ? 0 : x.numel() / block;
  assert(x.dim(-1) == table.dim(1) && x.dim(-2) <= table.dim(0) && y.numel() == x.numel());
  on_device(ctx, "position_embedding", {&x, &table, &y},
            [&] { kernels::position_embedding_forward(in(&x), in(&table), sequences, block, out(&y)); });
}

void position_embedding_backward(const Context& ctx, const Tensor& dy, Tensor& dtable) {
  const int64_t block = dy.dim(-2) * dy.dim(-1), sequences = block == 0 ? 0 : dy.numel() / block;
  assert(dy.dim(-1) == dtable.dim(1) && dy.dim(-2) <= dtable.dim(0));
  on_device(ctx, "position_embedding_backward", {&dy, &dtable}, [&] {
    kernels::position_embedding_backward(in(&dy), sequences, block, dtable.numel(), out(&dtable));
  });
}

void merge_forward(const Context& ctx, kernels::MergeOp op, std::span<const Tensor* const> xs, Tensor& y) {
  assert(!xs.empty() && xs[0]->numel() == y.numel());
  on_device(ctx, "merge", {xs[0], &y},
            [&] { kernels::merge_forward(op, ins(xs).data(), xs.size(), y.numel(), out(&y)); });
}

void merge_backward(const Context& ctx, kernels::MergeOp op, std::span<const Tensor* const> xs, const Tensor& dy,
                    std::span<Tensor* const> dxs) {
  assert(!xs.empty() && dxs.size() == xs.size());
  on_device(ctx, "merge_backward", {&dy, xs[0]}, [&] {
    kernels::merge_backward(op, ins(xs).data(), xs.size(), in(&dy), outs(dxs).data(), dy.numel());
  });
}

void concatenate_forward(const Context& ctx, std::span<const Tensor* const> xs, std::span<const int64_t> widths,
                         Tensor& y) {
  assert(!xs.empty() && widths.size() == xs.size());
  const int64_t width = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  const int64_t outer = width == 0 ? 0 : y.numel() / width;  // the batch and the dims before the axis
  on_device(ctx, "concatenate", {xs[0], &y},
            [&] { kernels::concatenate_forward(ins(xs).data(), widths.data(), xs.size(), outer, out(&y)); });
}

void concatenate_backward(const Context& ctx, const Tensor& dy, std::span<const int64_t> widths,
                          std::span<Tensor* const> dxs) {
  assert(widths.size() == dxs.size());
  const int64_t width = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  const int64_t outer = width == 0 ? 0 : dy.numel() / width;
  on_device(ctx, "concatenate_backward", {&dy},
            [&] { kernels::concatenate_backward(in(&dy), widths.data(), dxs.size(), outer, outs(dxs).data()); });
}

void zero_pad2d(const Context& ctx, const Tensor& x, int64_t ph, int64_t pw, Tensor& y) {
  assert(x.rank() == 4 && y.rank() == 4 && y.dim(1) == x.dim(1) + 2 * ph && y.dim(2) == x.dim(2) + 2 * pw);
  on_device(ctx, "zero_padding2d", {&x, &y}, [&] {
    kernels::zero_pad2d(in(&x), x.dim(0), x.dim(1), x.dim(2), x.dim(3), ph, pw, out(&y));
  });
}

void zero_pad2d_backward(const Context& ctx, const Tensor& dy, int64_t ph, int64_t pw, Tensor& dx) {
  assert(dx.rank() == 4 && dy.rank() == 4 && dy.dim(1) == dx.dim(1) + 2 * ph && dy.dim(2) == dx.dim(2) + 2 * pw);
  on_device(ctx, "zero_padding2d_backward", {&dy, &dx}, [&] {
    kernels::zero_pad2d_backward(in(&dy), dx.dim(0), dx.dim(1), dx.dim(2), dx.dim(3), ph, pw, out(&dx));
  });
}

void relu_forward(const Context& ctx, const Tensor& x, Tensor& y) {
  assert(y.numel() == x.numel());
  on_device(ctx, "activation", {&x, &y}, [&] { kernels::relu_forward(in(&x), out(&y), x.numel()); },
            [&] { gpu::relu(ctx.device, in(&x), out(&y), x.numel()); });
}

void relu_backward(const Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx) {
  assert(dy.numel() == y.numel() && dx.numel() == y.numel());
  on_device(ctx, "activation_backward", {&y, &dy, &dx},
            [&] { kernels::relu_backward(in(&y), in(&dy), out(&dx), y.numel()); },
            [&] { gpu::relu_grad(ctx.device, in(&y), in(&dy), out(&dx), y.numel()); });
}

void softmax_forward(const Context& ctx, const Tensor& x, Tensor& y) {
  const int64_t cols = x.dim(-1), rows = cols == 0 ? 0 : x.numel() / cols;
  assert(y.numel() == x.numel());
  on_device(ctx, "activation", {&x, &y}, [&] { kernels::softmax_rows(in(&x), out(&y), rows, cols); },
            [&] { gpu::softmax(ctx.device, in(&x), out(&y), rows, cols); });
}

void softmax_backward(const Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx) {
  const int64_t cols = y.dim(-1), rows = cols == 0 ? 0 : y.numel() / cols;
  assert(dy.numel() == y.numel() && dx.numel() == y.numel());
  on_device(ctx, "activation_backward", {&y, &dy, &dx},
            [&] { kernels::softmax_backward_rows(in(&y), in(&dy), out(&dx), rows, cols); },
            [&] { gpu::softmax_grad(ctx.device, in(&y), in(&dy), out(&dx), rows, cols); });
}

void eltwise_forward(const Context& ctx, kernels::EltwiseKind kind, const Tensor& x, Tensor& y) {
  assert(y.numel() == x.numel());
  on_device(ctx, "activation", {&x, &y}, [&] { kernels::eltwise_forward(kind, in(&x), out(&y), x.numel()); }, [&] {
    switch (kind) {
      case kernels::EltwiseKind::kTanh: return gpu::tanh(ctx.device, in(&x), out(&y), x.numel());
      case kernels::EltwiseKind::kSigmoid: return gpu::sigmoid(ctx.device, in(&x), out(&y), x.numel());
      case kernels::EltwiseKind::kGelu: no_backend("activation gelu", ctx.device);
    }
  });
}

void eltwise_backward(const Context& ctx, kernels::EltwiseKind kind, const Tensor& saved, const Tensor& dy,
                      Tensor& dx) {
  assert(dy.numel() == saved.numel() && dx.numel() == saved.numel());
  on_device(ctx, "activation_backward", {&saved, &dy, &dx},
            [&] { kernels::eltwise_backward(kind, in(&saved), in(&dy), out(&dx), saved.numel()); }, [&] {
              switch (kind) {
                case kernels::EltwiseKind::kTanh:
                  return gpu::tanh_grad(ctx.device, in(&saved), in(&dy), out(&dx), saved.numel());
                case kernels::EltwiseKind::kSigmoid:
                  return gpu::sigmoid_grad(ctx.device, in(&saved), in(&dy), out(&dx), saved.numel());
                case kernels::EltwiseKind::kGelu: no_backend("activation_backward gelu", ctx.device);
              }
            });
}

void leaky_relu_forward(const Context& ctx, const Tensor& x, float slope, Tensor& y) {
  assert(y.numel() == x.numel());
  on_device(ctx, "leaky_relu", {&x, &y}, [&] { kernels::leaky_relu_forward(in(&x), slope, out(&y), x.numel()); });
}

void leaky_relu_backward(const Context& ctx, const Tensor& x, const Tensor& dy, float slope, Tensor& dx) {
  assert(dy.numel() == x.numel() && dx.numel() == x.numel());
  on_device(ctx, "leaky_relu_backward", {&x, &dy, &dx},
            [&] { kernels::leaky_relu_backward(in(&x), in(&dy), slope, out(&dx), x.numel()); });
}

}  // namespace dtrain::ops
