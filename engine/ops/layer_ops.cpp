// Layer computations as ops (engine/ops/layer_ops.hpp).
#include "engine/ops/layer_ops.hpp"

#include <cassert>

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

}  // namespace dtrain::ops
