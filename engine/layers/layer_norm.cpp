// Layer normalization with plain per-row loops; row statistics and the
// parameter-gradient sums accumulate in double.
#include "engine/layers/layer_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

Result<Shape> LayerNorm::build(const Shape& input) {
  if (input.empty() || input.back() <= 0) {
    return config_error(
        fmt::format("layer_norm expects an input with a feature (last) dimension; got shape {}", shape_str(input)));
  }
  channels_ = input.back();
  return input;
}

std::vector<ParamSpec> LayerNorm::params() const {
  const Shape c{channels_};
  std::vector<ParamSpec> p;
  if (scale_) p.push_back({"gamma", c, {"ones", 0.0f}, true});
  if (center_) p.push_back({"beta", c, {"zeros", 0.0f}, true});
  return p;
}

void LayerNorm::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                        LayerCache& cache) const {
  const int64_t c = channels_;
  assert(x.rank() >= 2 && x.dim(-1) == c);
  const int64_t rows = x.numel() / c;
  const Tensor* gamma_t = scale_ ? &params[0] : nullptr;
  const Tensor* beta_t = center_ ? &params[scale_ ? 1 : 0] : nullptr;
  cache.saved.resize(2);
  Tensor& mean_t = cache.saved[0];
  Tensor& inv_std_t = cache.saved[1];
  prepare_output(mean_t, {rows}, {&x});
  prepare_output(inv_std_t, {rows}, {&x});
  prepare_output(y, x.shape(), {&x, gamma_t, beta_t});
  ops::on_device(*ctx.ops, "layer_norm", {&x, gamma_t, beta_t, &mean_t, &inv_std_t, &y}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* gamma = gamma_t ? static_cast<const float*>(gamma_t->raw()) : nullptr;
    const auto* beta = beta_t ? static_cast<const float*>(beta_t->raw()) : nullptr;
    auto* mean = static_cast<float*>(mean_t.raw());
    auto* inv_std = static_cast<float*>(inv_std_t.raw());
    auto* yp = static_cast<float*>(y.raw());
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = xp + r * c;
      float* out = yp + r * c;
      double sum = 0.0;
      for (int64_t j = 0; j < c; ++j) sum += in[j];
      const double m = sum / static_cast<double>(c);
      double sq = 0.0;
      for (int64_t j = 0; j < c; ++j) sq += (in[j] - m) * (in[j] - m);
      const auto var = static_cast<float>(sq / static_cast<double>(c));
      mean[r] = static_cast<float>(m);
      inv_std[r] = 1.0f / std::sqrt(var + epsilon_);
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mean[r]) * inv_std[r];
        out[j] = (gamma ? gamma[j] * xhat : xhat) + (beta ? beta[j] : 0.0f);
      }
    }
  });
}

void LayerNorm::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  const int64_t c = channels_;
  const int64_t rows = x.numel() / c;
  assert(dy.numel() == x.numel() && cache.saved.size() == 2);
  const Tensor* gamma_t = scale_ ? &params[0] : nullptr;
  Tensor* dgamma_t = scale_ ? &grads[0] : nullptr;
  Tensor* dbeta_t = center_ ? &grads[scale_ ? 1 : 0] : nullptr;
  if (dgamma_t) prepare_output(*dgamma_t, {c}, {&x, &dy});
  if (dbeta_t) prepare_output(*dbeta_t, {c}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x});
  ops::on_device(*ctx.ops, "layer_norm_backward",
                 {&x, &dy, gamma_t, &cache.saved[0], &cache.saved[1], dgamma_t, dbeta_t, dx}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* g = static_cast<const float*>(dy.raw());
    const auto* gamma = gamma_t ? static_cast<const float*>(gamma_t->raw()) : nullptr;
    const auto* mean = static_cast<const float*>(cache.saved[0].raw());
    const auto* inv_std = static_cast<const float*>(cache.saved[1].raw());
    std::vector<double> dgamma(static_cast<size_t>(c), 0.0), dbeta(static_cast<size_t>(c), 0.0);
    std::vector<float> gx(static_cast<size_t>(c));  // dy * gamma of one row
    auto* out = dx ? static_cast<float*>(dx->raw()) : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = xp + r * c;
      const float* gr = g + r * c;
      double sum_g = 0.0, sum_gx = 0.0;
      for (int64_t j = 0; j < c; ++j) {
        const auto k = static_cast<size_t>(j);
        const float xhat = (in[j] - mean[r]) * inv_std[r];
        dgamma[k] += static_cast<double>(gr[j]) * xhat;
        dbeta[k] += gr[j];
        gx[k] = gamma ? gr[j] * gamma[j] : gr[j];
        sum_g += gx[k];
        sum_gx += static_cast<double>(gx[k]) * xhat;
      }
      if (out == nullptr) continue;
      const auto mg = static_cast<float>(sum_g / static_cast<double>(c));
      const auto mgx = static_cast<float>(sum_gx / static_cast<double>(c));
      float* o = out + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mean[r]) * inv_std[r];
        o[j] = inv_std[r] * (gx[static_cast<size_t>(j)] - mg - xhat * mgx);
      }
    }
    if (dgamma_t) {
      auto* dg = static_cast<float*>(dgamma_t->raw());
      for (int64_t j = 0; j < c; ++j) dg[j] = static_cast<float>(dgamma[static_cast<size_t>(j)]);
    }
    if (dbeta_t) {
      auto* db = static_cast<float*>(dbeta_t->raw());
      for (int64_t j = 0; j < c; ++j) db[j] = static_cast<float>(dbeta[static_cast<size_t>(j)]);
    }
  });
}

}  // namespace dtrain
