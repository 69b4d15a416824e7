// Batch normalization with plain per-channel loops (rows outer, channels
// inner, so the inner loops vectorise); statistics accumulate in double.
#include "engine/layers/batch_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/ops/dispatch.hpp"

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
  cache.ints.assign(1, batch_stats ? 1 : 0);
  cache.saved.resize(2);
  Tensor& mean_t = cache.saved[0];
  Tensor& inv_std_t = cache.saved[1];
  prepare_output(mean_t, {c}, {&x});
  prepare_output(inv_std_t, {c}, {&x});
  prepare_output(y, x.shape(), {&x, &params[0], &params[1]});
  ops::on_device(*ctx.ops, "batch_norm", {&x, &params[0], &params[1], &params[2], &params[3], &mean_t, &inv_std_t, &y},
                 [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* gamma = static_cast<const float*>(params[0].raw());
    const auto* beta = static_cast<const float*>(params[1].raw());
    auto* moving_mean = static_cast<float*>(params[2].raw());
    auto* moving_var = static_cast<float*>(params[3].raw());
    auto* mean = static_cast<float*>(mean_t.raw());
    auto* inv_std = static_cast<float*>(inv_std_t.raw());
    if (batch_stats) {
      std::vector<double> sum_v(c, 0.0), sq_v(c, 0.0);
      double* sum = sum_v.data();
      double* sq = sq_v.data();
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = xp + r * c;
        for (int64_t j = 0; j < c; ++j) sum[j] += row[j];
      }
      for (int64_t j = 0; j < c; ++j) mean[j] = static_cast<float>(sum[j] / static_cast<double>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = xp + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const double d = static_cast<double>(row[j]) - mean[j];
          sq[j] += d * d;
        }
      }
      for (int64_t j = 0; j < c; ++j) {
        const auto var = static_cast<float>(sq[j] / static_cast<double>(rows));
        inv_std[j] = 1.0f / std::sqrt(var + epsilon_);
        moving_mean[j] = momentum_ * moving_mean[j] + (1.0f - momentum_) * mean[j];
        moving_var[j] = momentum_ * moving_var[j] + (1.0f - momentum_) * var;
      }
    } else {
      for (int64_t j = 0; j < c; ++j) {
        mean[j] = moving_mean[j];
        inv_std[j] = 1.0f / std::sqrt(moving_var[j] + epsilon_);
      }
    }
    // y = x * scale + shift, per channel.
    std::vector<float> scale_v(c), shift_v(c);
    float* scale = scale_v.data();
    float* shift = shift_v.data();
    for (int64_t j = 0; j < c; ++j) {
      scale[j] = gamma[j] * inv_std[j];
      shift[j] = beta[j] - mean[j] * scale[j];
    }
    auto* yp = static_cast<float*>(y.raw());
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = xp + r * c;
      float* out = yp + r * c;
      for (int64_t j = 0; j < c; ++j) out[j] = in[j] * scale[j] + shift[j];
    }
  });
}

void BatchNorm::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  const int64_t c = channels_;
  const int64_t rows = x.numel() / c;
  assert(dy.numel() == x.numel() && cache.saved.size() == 2);
  const bool batch_stats = cache.ints[0] != 0;
  prepare_output(grads[0], {c}, {&x, &dy});
  prepare_output(grads[1], {c}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x});
  ops::on_device(*ctx.ops, "batch_norm_backward",
                 {&x, &dy, &params[0], &cache.saved[0], &cache.saved[1], &grads[0], &grads[1], dx}, [&] {
    const auto* mean = static_cast<const float*>(cache.saved[0].raw());
    const auto* inv_std = static_cast<const float*>(cache.saved[1].raw());
    const auto* gamma = static_cast<const float*>(params[0].raw());
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* g = static_cast<const float*>(dy.raw());
    // dbeta = sum dy; dgamma = sum dy * xhat, xhat = (x - mean) * inv_std.
    std::vector<double> dbeta_v(c, 0.0), dgamma_v(c, 0.0);
    double* dbeta = dbeta_v.data();
    double* dgamma = dgamma_v.data();
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = xp + r * c;
      const float* gr = g + r * c;
      for (int64_t j = 0; j < c; ++j) {
        dbeta[j] += gr[j];
        dgamma[j] += static_cast<double>(gr[j]) * ((in[j] - mean[j]) * inv_std[j]);
      }
    }
    auto* dgamma_out = static_cast<float*>(grads[0].raw());
    auto* dbeta_out = static_cast<float*>(grads[1].raw());
    for (int64_t j = 0; j < c; ++j) {
      dgamma_out[j] = static_cast<float>(dgamma[j]);
      dbeta_out[j] = static_cast<float>(dbeta[j]);
    }
    if (dx == nullptr) return;
    // Training: dx = gamma * inv_std * (dy - dbeta / N - xhat * dgamma / N).
    // Inference: dx = gamma * inv_std * dy.
    std::vector<float> a_v(c), mb_v(c), mg_v(c);
    float* a = a_v.data();
    float* mb = mb_v.data();
    float* mg = mg_v.data();
    for (int64_t j = 0; j < c; ++j) {
      a[j] = gamma[j] * inv_std[j];
      mb[j] = batch_stats ? static_cast<float>(dbeta[j] / static_cast<double>(rows)) : 0.0f;
      mg[j] = batch_stats ? static_cast<float>(dgamma[j] / static_cast<double>(rows)) : 0.0f;
    }
    auto* out = static_cast<float*>(dx->raw());
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = xp + r * c;
      const float* gr = g + r * c;
      float* o = out + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mean[j]) * inv_std[j];
        o[j] = a[j] * (gr[j] - mb[j] - xhat * mg[j]);
      }
    }
  });
}

}  // namespace dtrain
