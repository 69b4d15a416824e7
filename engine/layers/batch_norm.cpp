// Batch normalization: shapes, variables, and the statistics' passes with
// their sums over replicas (synchronised batch norm); the math is the ops
// ops::batch_norm_* (engine/ops/layer_ops.hpp, CPU kernels in
// engine/kernels/batch_norm.cpp).
#include "engine/layers/batch_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

Result<Shape> BatchNorm::build(const Shape& input) {
  if (input.empty() || input.back() <= 0) {
    return config_error(
        fmt::format("batch_norm expects an input with a channel (last) dimension; got shape {}", shape_str(input)));
  }
  channels_ = input.back();
  return input;
}

std::vector<ParamSpec> BatchNorm::params() const {
  const Shape c{channels_};
  return {{"gamma", c, {"ones", 0.0f}, true},
          {"beta", c, {"zeros", 0.0f}, true},
          {"moving_mean", c, {"zeros", 0.0f}, false},
          {"moving_variance", c, {"ones", 0.0f}, false}};
}

void BatchNorm::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                        LayerCache& cache) const {
  const int64_t c = channels_;
  assert(x.rank() >= 2 && x.dim(-1) == c);
  const int64_t rows = x.numel() / c;
  const bool batch_stats = ctx.training && rows > 0;
  // Synchronised: the sums below are taken over every replica's rows.
  CrossReplicaSum* across = sync_ && batch_stats ? ctx.cross_replica : nullptr;
  cache.saved.resize(2);
  Tensor& mean_t = cache.saved[0];
  Tensor& inv_std_t = cache.saved[1];
  prepare_output(mean_t, {c}, {&x});
  prepare_output(inv_std_t, {c}, {&x});
  prepare_output(y, x.shape(), {&x, &params[0], &params[1]});
  std::vector<float> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c));
  double total = static_cast<double>(rows);
  if (batch_stats) {
    // Two passes (the mean, then squared deviations from it), each a sum in
    // double; with `across` each is summed over the replicas in between.
    std::vector<double> sum(static_cast<size_t>(c) + 1, 0.0);
    ops::batch_norm_sums(*ctx.ops, x, sum.data());
    sum[static_cast<size_t>(c)] = static_cast<double>(rows);
    if (across != nullptr) across->all_reduce(sum);
    total = sum[static_cast<size_t>(c)];
    for (int64_t j = 0; j < c; ++j) mean[static_cast<size_t>(j)] = static_cast<float>(sum[static_cast<size_t>(j)] / total);
    std::vector<double> sq(static_cast<size_t>(c), 0.0);
    ops::batch_norm_squared_deviations(*ctx.ops, x, mean.data(), sq.data());
    if (across != nullptr) across->all_reduce(sq);
    for (int64_t j = 0; j < c; ++j) var[static_cast<size_t>(j)] = static_cast<float>(sq[static_cast<size_t>(j)] / total);
  }
  assert(total < 2147483647.0);
  cache.ints = {batch_stats ? 1 : 0, static_cast<int32_t>(total)};
  ops::batch_norm_apply(*ctx.ops, x, params[0], params[1], params[2], params[3], batch_stats ? mean.data() : nullptr,
                        batch_stats ? var.data() : nullptr, momentum_, epsilon_, mean_t, inv_std_t, y);
}

void BatchNorm::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  const int64_t c = channels_;
  assert(dy.numel() == x.numel() && cache.saved.size() == 2);
  const bool batch_stats = cache.ints[0] != 0;
  CrossReplicaSum* across = sync_ && batch_stats ? ctx.cross_replica : nullptr;
  prepare_output(grads[0], {c}, {&x, &dy});
  prepare_output(grads[1], {c}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x});
  // sums[j] = dbeta = sum dy; sums[c + j] = dgamma = sum dy * xhat over this
  // replica's rows. The parameter gradients are this replica's part; the
  // strategy sums them over the replicas like every other gradient.
  std::vector<double> sums(2 * static_cast<size_t>(c), 0.0);
  ops::batch_norm_param_grads(*ctx.ops, x, dy, cache.saved[0], cache.saved[1], sums.data(), grads[0], grads[1]);
  if (dx == nullptr) return;
  // Training: dx = gamma * inv_std * (dy - dbeta / N - xhat * dgamma / N),
  // with the sums and N over the global batch when synchronised.
  // Inference: dx = gamma * inv_std * dy.
  if (across != nullptr) across->all_reduce(sums);
  ops::batch_norm_input_grad(*ctx.ops, x, dy, params[0], cache.saved[0], cache.saved[1], sums.data(),
                             static_cast<double>(cache.ints[1]), batch_stats, *dx);
}

std::span<const Field> batch_norm_fields() {
  static const Field kFields[] = {
      field<&BatchNormSpec::momentum>("momentum", "Momentum of the moving mean and variance.").min(0).max(1),
      field<&BatchNormSpec::epsilon>("epsilon", "Added to the variance for numerical stability.").above(0),
      // Shown only when true: jobs from before it keep their model hash.
      field<&BatchNormSpec::sync>(
          "sync",
          "Synchronised batch norm: in training, mean and variance over the global batch (every replica of towers and "
          "mirrored, every worker of collective and sync parameter_server), so the result equals one_device's; false: "
          "each replica normalises by its own shard's statistics.")
          .hidden_at_default(),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_batch_norm(const LayerSpec& spec) {
  const auto& s = layer_options<BatchNormSpec>(spec);
  if (!(s.momentum >= 0.0f && s.momentum <= 1.0f)) {
    return config_error(fmt::format("batch_norm: momentum must be in [0, 1]; got {}", s.momentum));
  }
  if (!(s.epsilon > 0.0f)) return config_error(fmt::format("batch_norm: epsilon must be > 0; got {}", s.epsilon));
  return std::unique_ptr<Layer>(std::make_unique<BatchNorm>(s.momentum, s.epsilon, s.sync));
}

bool is_synchronised_batch_norm(const LayerSpec& spec) {
  const auto* s = spec.options.get<BatchNormSpec>();
  return spec.type == "batch_norm" && s != nullptr && s->sync;
}

}  // namespace dtrain
