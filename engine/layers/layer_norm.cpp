// Layer normalization with plain per-row loops; row statistics (8 partial
// sums a row, so that they vectorise) and the parameter-gradient sums
// accumulate in double. Rows are split over the
// OpenMP team; the parameter gradients are kernels::column_sums (chunks of
// rows added in a fixed order): results do not depend on the thread count.
#include "engine/layers/layer_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <vector>

#include "engine/kernels/parallel.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {

// The sum over j in [0, n) of f(j), over 8 interleaved partial sums added in
// a fixed order: it vectorises, and the order depends on n alone.
template <class F>
double lane_sum(int64_t n, F&& f) {
  double s[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) s[l] += f(j + l);
  }
  for (; j < n; ++j) s[j % 8] += f(j);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

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
    kernels::parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const float* in = xp + r * c;
        float* out = yp + r * c;
        const double m = lane_sum(c, [&](int64_t j) { return static_cast<double>(in[j]); }) / static_cast<double>(c);
        const double sq = lane_sum(c, [&](int64_t j) { return (in[j] - m) * (in[j] - m); });
        const auto var = static_cast<float>(sq / static_cast<double>(c));
        const auto mu = static_cast<float>(m);
        const float is = 1.0f / std::sqrt(var + epsilon_);
        mean[r] = mu;
        inv_std[r] = is;
        for (int64_t j = 0; j < c; ++j) {
          const float xhat = (in[j] - mu) * is;
          out[j] = (gamma ? gamma[j] * xhat : xhat) + (beta ? beta[j] : 0.0f);
        }
      }
    });
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
    // sums[j] = dgamma, sums[c + j] = dbeta; each row also writes its dx.
    std::vector<double> sums(2 * static_cast<size_t>(c));
    auto* out = dx ? static_cast<float*>(dx->raw()) : nullptr;
    kernels::column_sums(rows, c, 2 * c, sums.data(), [&](int64_t r, double* acc) {
      const float* in = xp + r * c;
      const float* gr = g + r * c;
      double* dgamma = acc;
      double* dbeta = acc + c;
      const float mu = mean[r], is = inv_std[r];
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mu) * is;
        dgamma[j] += static_cast<double>(gr[j]) * xhat;
        dbeta[j] += gr[j];
      }
      if (out == nullptr) return;
      // gx = dy * gamma; dx = inv_std * (gx - mean(gx) - xhat * mean(gx * xhat)).
      auto gx = [&](int64_t j) { return gamma ? gr[j] * gamma[j] : gr[j]; };
      const double sum_g = lane_sum(c, [&](int64_t j) { return static_cast<double>(gx(j)); });
      const double sum_gx = lane_sum(c, [&](int64_t j) { return static_cast<double>(gx(j)) * ((in[j] - mu) * is); });
      const auto mg = static_cast<float>(sum_g / static_cast<double>(c));
      const auto mgx = static_cast<float>(sum_gx / static_cast<double>(c));
      float* o = out + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float xhat = (in[j] - mu) * is;
        o[j] = is * (gx(j) - mg - xhat * mgx);
      }
    });
    const double* dgamma = sums.data();
    const double* dbeta = sums.data() + c;
    if (dgamma_t) {
      auto* dg = static_cast<float*>(dgamma_t->raw());
      for (int64_t j = 0; j < c; ++j) dg[j] = static_cast<float>(dgamma[j]);
    }
    if (dbeta_t) {
      auto* db = static_cast<float*>(dbeta_t->raw());
      for (int64_t j = 0; j < c; ++j) db[j] = static_cast<float>(dbeta[j]);
    }
  });
}

}  // namespace dtrain
