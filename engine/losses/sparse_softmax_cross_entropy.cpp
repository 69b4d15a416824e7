// sparse_softmax_cross_entropy: class-id labels against softmax(logits),
// per example lse(x) - x[label] (tf.nn.sparse_softmax_cross_entropy_with_logits).
#include <cassert>
#include <cmath>
#include <limits>

#include "engine/losses/loss_kind.hpp"
#include "engine/losses/softmax_rows.hpp"

#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class SparseSoftmaxCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "sparse_softmax_cross_entropy"; }

  Status check_shapes(const Shape& output, const Shape& label) const override {
    const bool label_ok = label.empty() || (label.size() == 1 && label[0] == 1);
    if (output.size() != 1 || output[0] < 1 || !label_ok) {
      return config_error("sparse_softmax_cross_entropy needs model output (classes) and labels () or (1); got output " +
                          shape_str(output) + " and labels " + shape_str(label));
    }
    return Status::Ok();
  }

  // A label that is not an integer in [0, C) gives that example a NaN loss
  // and NaN gradient row (check_labels reports it properly beforehand).
  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx) const override {
    const int64_t b = logits.dim(0);
    const int64_t c = b == 0 ? 0 : logits.numel() / b;
    assert(labels.numel() == b);
    prepare_dlogits(logits, dlogits);
    double total = 0.0;
    ops::on_device(ctx, "sparse_softmax_cross_entropy", {&logits, &labels, dlogits}, [&] {
      const auto* x = static_cast<const float*>(logits.raw());
      const auto* y = static_cast<const float*>(labels.raw());
      for (int64_t i = 0; i < b; ++i) {
        const float* row = x + i * c;
        const double lse = log_sum_exp(row, c);
        const float label = y[i];
        const bool valid = label >= 0.0f && label < static_cast<float>(c) && label == std::floor(label);
        const int64_t k = valid ? static_cast<int64_t>(label) : 0;
        total += valid ? lse - static_cast<double>(row[k]) : std::numeric_limits<double>::quiet_NaN();
        if (dlogits != nullptr) {
          float* g = static_cast<float*>(dlogits->raw()) + i * c;
          softmax_from_lse(row, lse, grad_scale, g, c);
          if (valid) {
            g[k] -= grad_scale;
          } else {
            for (int64_t j = 0; j < c; ++j) g[j] = std::numeric_limits<float>::quiet_NaN();
          }
        }
      }
    });
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return softmax_last_dim(logits); }
};
}  // namespace

std::unique_ptr<Loss> new_sparse_softmax_cross_entropy() { return std::make_unique<SparseSoftmaxCrossEntropy>(); }

}  // namespace dtrain
