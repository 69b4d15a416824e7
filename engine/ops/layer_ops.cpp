// Layer computations as ops (engine/ops/layer_ops.hpp).
#include "engine/ops/layer_ops.hpp"

#include <cassert>

#include "engine/kernels/attention.hpp"
#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/batch_norm.hpp"
#include "engine/kernels/dropout.hpp"
#include "engine/kernels/global_pool.hpp"
#include "engine/kernels/layer_norm.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain::ops {

namespace {
const float* in(const Tensor* t) { return t != nullptr ? static_cast<const float*>(t->raw()) : nullptr; }
float* out(Tensor* t) { return t != nullptr ? static_cast<float*>(t->raw()) : nullptr; }
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

}  // namespace dtrain::ops
