// Global gradient norm and tf.clip_by_global_norm.
#include <cmath>

#include "engine/optim/optimizer.hpp"

#include "engine/ops/core.hpp"

namespace dtrain {


double global_norm(std::span<Tensor* const> grads, const ops::Context& ctx) {
  double total = 0.0;
  for (const Tensor* g : grads) {
    if (g != nullptr) total += ops::sum_squares(ctx, *g);
  }
  return std::sqrt(total);
}

double clip_by_global_norm(std::span<Tensor*> grads, double clip_norm, const ops::Context& ctx) {
  const double norm = global_norm(grads, ctx);
  // A NaN or infinite norm makes the scale NaN and so every gradient NaN, as
  // in TensorFlow: the NaN guard then stops the run instead of a silent skip.
  if (norm <= clip_norm) return norm;
  const float scale = static_cast<float>(clip_norm / (std::isinf(norm) ? std::nan("") : norm));
  for (Tensor* g : grads) {
    if (g == nullptr) continue;
    ops::scale(ctx, *g, scale);
  }
  return norm;
}

}  // namespace dtrain
