// sparse_softmax_cross_entropy: class-id labels against softmax(logits),
// per position lse(x) - x[label] (tf.nn.sparse_softmax_cross_entropy_with_logits).
// Logits (B, P..., C) with labels (B, P...): an example's loss is the mean over
// its positions, so a strategy that sums example losses over replicas and
// divides by the global batch averages over the batch and every position.
// The math is ops::sparse_softmax_cross_entropy (engine/ops/loss_ops.hpp).
#include "engine/losses/loss_kind.hpp"
#include "engine/losses/softmax_rows.hpp"
#include "engine/ops/loss_ops.hpp"

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
                          const ops::Context& ctx, const Tensor* weights) const override {
    prepare_dlogits(logits, dlogits);
    const double total = ops::sparse_softmax_cross_entropy(ctx, logits, labels, grad_scale, dlogits, weights);
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return softmax_last_dim(logits); }
};
}  // namespace

std::unique_ptr<Loss> new_sparse_softmax_cross_entropy() { return std::make_unique<SparseSoftmaxCrossEntropy>(); }

}  // namespace dtrain
