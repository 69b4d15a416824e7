// softmax_cross_entropy: probability (e.g. one-hot) targets t against
// softmax(logits), per example -sum_c t_c log softmax(x)_c, computed as
// lse * sum(t) - sum(t * x) with gradient softmax * sum(t) - t, exact also for
// targets that do not sum to one. The math is ops::softmax_cross_entropy
// (engine/ops/loss_ops.hpp).
#include "engine/losses/loss_kind.hpp"
#include "engine/losses/softmax_rows.hpp"
#include "engine/ops/loss_ops.hpp"

namespace dtrain {

namespace {
class SoftmaxCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "softmax_cross_entropy"; }

  Status check_shapes(const Shape& output, const Shape& label) const override {
    if (output.size() == 1 && output[0] >= 1 && label == output) return Status::Ok();
    std::string msg = "softmax_cross_entropy needs model output (classes) and targets of the same shape; got output " +
                      shape_str(output) + " and labels " + shape_str(label);
    if (output.size() == 1 && (label.empty() || label == Shape{1})) {
      msg += " (for class-id labels use sparse_softmax_cross_entropy)";
    }
    return config_error(std::move(msg));
  }

  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx, const Tensor* weights) const override {
    prepare_dlogits(logits, dlogits);
    const double total = ops::softmax_cross_entropy(ctx, logits, labels, grad_scale, dlogits, weights);
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return softmax_last_dim(logits); }
};
}  // namespace

std::unique_ptr<Loss> new_softmax_cross_entropy() { return std::make_unique<SoftmaxCrossEntropy>(); }

}  // namespace dtrain
