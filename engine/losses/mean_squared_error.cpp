// mean_squared_error: per example the mean over elements of (x - t)^2; the
// model output is the prediction itself. The math is ops::mean_squared_error
// (engine/ops/loss_ops.hpp).
#include "engine/losses/elementwise_shapes.hpp"
#include "engine/losses/loss_kind.hpp"
#include "engine/ops/loss_ops.hpp"

namespace dtrain {

namespace {
class MeanSquaredError final : public Loss {
 public:
  std::string name() const override { return "mean_squared_error"; }

  Status check_shapes(const Shape& output, const Shape& label) const override {
    return check_elementwise_shapes(name(), output, label);
  }

  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx, const Tensor* weights) const override {
    prepare_dlogits(logits, dlogits);
    const double total = ops::mean_squared_error(ctx, logits, labels, grad_scale, dlogits, weights);
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return logits.clone(); }
};
}  // namespace

std::unique_ptr<Loss> new_mean_squared_error() { return std::make_unique<MeanSquaredError>(); }

}  // namespace dtrain
