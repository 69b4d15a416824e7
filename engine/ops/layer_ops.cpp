// Layer computations as ops (engine/ops/layer_ops.hpp).
#include "engine/ops/layer_ops.hpp"

#include <cassert>

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

}  // namespace dtrain::ops
