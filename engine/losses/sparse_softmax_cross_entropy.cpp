// sparse_softmax_cross_entropy: class-id labels against softmax(logits),
// per position lse(x) - x[label] (tf.nn.sparse_softmax_cross_entropy_with_logits).
// Logits (B, P..., C) with labels (B, P...): an example's loss is the mean over
// its positions, so a strategy that sums example losses over replicas and
// divides by the global batch averages over the batch and every position.
#include <cassert>
#include <vector>
#include <cmath>
#include <limits>

#include "engine/losses/loss_kind.hpp"
#include "engine/losses/softmax_rows.hpp"

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class SparseSoftmaxCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "sparse_softmax_cross_entropy"; }

  // Labels have the output's shape without its last (classes) dimension;
  // a trailing 1 is accepted too (Keras squeezes it): output (C) takes
  // labels () or (1), output (T, C) labels (T) or (T, 1).
  Status check_shapes(const Shape& output, const Shape& label) const override {
    if (output.empty() || output.back() < 1) {
      return config_error("sparse_softmax_cross_entropy needs a model output with a classes dimension, (..., classes); "
                          "got output " + shape_str(output));
    }
    const Shape positions(output.begin(), output.end() - 1);
    Shape with_one = positions;
    with_one.push_back(1);
    if (label == positions || label == with_one) return Status::Ok();
    std::string wanted = shape_str(label);  // the output that labels `label` need: [label..., classes]
    wanted = label.empty() ? "[classes]" : wanted.substr(0, wanted.size() - 1) + ", classes]";
    return config_error("sparse_softmax_cross_entropy: labels " + shape_str(label) + " do not fit model output " +
                        shape_str(output) + ": class-id labels have the output's shape without its last (classes) "
                        "dimension (" + shape_str(positions) + "); labels " + shape_str(label) + " need a model output " +
                        wanted);
  }

  // A label that is not an integer in [0, C) gives that example a NaN loss
  // and NaN gradient row (check_labels reports it properly beforehand).
  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx) const override {
    const int64_t b = logits.dim(0);
    const int64_t c = logits.rank() < 2 ? 1 : logits.dim(-1);
    const int64_t rows = logits.numel() / c;               // b * positions
    const int64_t positions = b == 0 ? 1 : rows / b;       // per example
    assert(labels.numel() == rows);
    prepare_dlogits(logits, dlogits);
    // Each position weighs 1 / positions of its example.
    const double weight = 1.0 / static_cast<double>(positions);
    const float row_scale = static_cast<float>(grad_scale * weight);
    double total = 0.0;
    ops::on_device(ctx, "sparse_softmax_cross_entropy", {&logits, &labels, dlogits}, [&] {
      const auto* x = static_cast<const float*>(logits.raw());
      const auto* y = static_cast<const float*>(labels.raw());
      for (int64_t i = 0; i < b; ++i) {
        double example = 0.0;
        for (int64_t p = i * positions; p < (i + 1) * positions; ++p) {
          const float* row = x + p * c;
          const double lse = log_sum_exp(row, c);
          const float label = y[p];
          const bool valid = label >= 0.0f && label < static_cast<float>(c) && label == std::floor(label);
          const int64_t k = valid ? static_cast<int64_t>(label) : 0;
          example += valid ? lse - static_cast<double>(row[k]) : std::numeric_limits<double>::quiet_NaN();
          if (dlogits != nullptr) {
            float* g = static_cast<float*>(dlogits->raw()) + p * c;
            softmax_from_lse(row, lse, row_scale, g, c);
            if (valid) {
              g[k] -= row_scale;
            } else {
              for (int64_t j = 0; j < c; ++j) g[j] = std::numeric_limits<float>::quiet_NaN();
            }
          }
        }
        total += example * weight;
      }
    }, [&] {
      // Each row's loss comes back to the host (a wait: the step's loss is
      // read every step) and is summed here in the CPU loop's order.
      thread_local std::vector<double> row_losses;
      row_losses.assign(static_cast<size_t>(rows), 0.0);
      gpu::sparse_xent(ctx.device, static_cast<const float*>(logits.raw()), static_cast<const float*>(labels.raw()),
                       dlogits ? static_cast<float*>(dlogits->raw()) : nullptr, row_scale, row_losses.data(), rows, c);
      for (int64_t i = 0; i < b; ++i) {
        double example = 0.0;
        for (int64_t p = i * positions; p < (i + 1) * positions; ++p) example += row_losses[static_cast<size_t>(p)];
        total += example * weight;
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
