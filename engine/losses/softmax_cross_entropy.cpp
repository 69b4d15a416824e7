// softmax_cross_entropy: probability (e.g. one-hot) targets t against
// softmax(logits), per example -sum_c t_c log softmax(x)_c.
#include <cassert>

#include "engine/losses/loss_kind.hpp"
#include "engine/losses/softmax_rows.hpp"

#include "engine/ops/dispatch.hpp"

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

  // Per example: lse * sum(t) - sum(t * x); gradient softmax * sum(t) - t,
  // exact also for targets that do not sum to one.
  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx) const override {
    const int64_t b = logits.dim(0);
    const int64_t c = b == 0 ? 0 : logits.numel() / b;
    assert(labels.numel() == logits.numel());
    prepare_dlogits(logits, dlogits);
    double total = 0.0;
    ops::on_device(ctx, "softmax_cross_entropy", {&logits, &labels, dlogits}, [&] {
      const auto* x = static_cast<const float*>(logits.raw());
      const auto* t = static_cast<const float*>(labels.raw());
      for (int64_t i = 0; i < b; ++i) {
        const float* row = x + i * c;
        const float* trow = t + i * c;
        const double lse = log_sum_exp(row, c);
        double tsum = 0.0, tx = 0.0;
        for (int64_t j = 0; j < c; ++j) {
          tsum += static_cast<double>(trow[j]);
          tx += static_cast<double>(trow[j]) * static_cast<double>(row[j]);
        }
        total += lse * tsum - tx;
        if (dlogits != nullptr) {
          float* g = static_cast<float*>(dlogits->raw()) + i * c;
          softmax_from_lse(row, lse, grad_scale * static_cast<float>(tsum), g, c);
          for (int64_t j = 0; j < c; ++j) g[j] -= grad_scale * trow[j];
        }
      }
    });
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return softmax_last_dim(logits); }
};
}  // namespace

std::unique_ptr<Loss> new_softmax_cross_entropy() { return std::make_unique<SoftmaxCrossEntropy>(); }

}  // namespace dtrain
