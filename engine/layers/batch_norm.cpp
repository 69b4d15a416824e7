// Batch normalization with plain per-channel loops (rows outer, channels
// inner, so the inner loops vectorise); statistics accumulate in double.
// The sums over rows are kernels::column_sums (chunks of rows in parallel,
// added in a fixed order) and the elementwise passes split the rows over the
// OpenMP team: results do not depend on the number of threads.
#include "engine/layers/batch_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <vector>

#include "engine/kernels/parallel.hpp"
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
  // Synchronised: the sums below are taken over every replica's rows.
  CrossReplicaSum* across = sync_ && batch_stats ? ctx.cross_replica : nullptr;
  cache.saved.resize(2);
  Tensor& mean_t = cache.saved[0];
  Tensor& inv_std_t = cache.saved[1];
  prepare_output(mean_t, {c}, {&x});
  prepare_output(inv_std_t, {c}, {&x});
  prepare_output(y, x.shape(), {&x, &params[0], &params[1]});
  const auto* xp = static_cast<const float*>(x.raw());
  std::vector<float> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c));
  double total = static_cast<double>(rows);
  if (batch_stats) {
    // Two passes (the mean, then squared deviations from it), each a sum in
    // double; with `across` each is summed over the replicas in between.
    std::vector<double> sum(static_cast<size_t>(c) + 1, 0.0);
    ops::on_device(*ctx.ops, "batch_norm", {&x}, [&] {
      kernels::column_sums(rows, c, c, sum.data(), [&](int64_t r, double* acc) {
        const float* row = xp + r * c;
        for (int64_t j = 0; j < c; ++j) acc[j] += row[j];
      });
    });
    sum[static_cast<size_t>(c)] = static_cast<double>(rows);
    if (across != nullptr) across->all_reduce(sum);
    total = sum[static_cast<size_t>(c)];
    for (int64_t j = 0; j < c; ++j) mean[static_cast<size_t>(j)] = static_cast<float>(sum[static_cast<size_t>(j)] / total);
    std::vector<double> sq(static_cast<size_t>(c), 0.0);
    ops::on_device(*ctx.ops, "batch_norm", {&x}, [&] {
      const float* mu = mean.data();
      kernels::column_sums(rows, c, c, sq.data(), [&](int64_t r, double* acc) {
        const float* row = xp + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const double d = static_cast<double>(row[j]) - mu[j];
          acc[j] += d * d;
        }
      });
    });
    if (across != nullptr) across->all_reduce(sq);
    for (int64_t j = 0; j < c; ++j) var[static_cast<size_t>(j)] = static_cast<float>(sq[static_cast<size_t>(j)] / total);
  }
  assert(total < 2147483647.0);
  cache.ints = {batch_stats ? 1 : 0, static_cast<int32_t>(total)};
  ops::on_device(*ctx.ops, "batch_norm", {&x, &params[0], &params[1], &params[2], &params[3], &mean_t, &inv_std_t, &y},
                 [&] {
    const auto* gamma = static_cast<const float*>(params[0].raw());
    const auto* beta = static_cast<const float*>(params[1].raw());
    auto* moving_mean = static_cast<float*>(params[2].raw());
    auto* moving_var = static_cast<float*>(params[3].raw());
    auto* mean_out = static_cast<float*>(mean_t.raw());
    auto* inv_std = static_cast<float*>(inv_std_t.raw());
    if (batch_stats) {
      for (int64_t j = 0; j < c; ++j) {
        mean_out[j] = mean[static_cast<size_t>(j)];
        inv_std[j] = 1.0f / std::sqrt(var[static_cast<size_t>(j)] + epsilon_);
        moving_mean[j] = momentum_ * moving_mean[j] + (1.0f - momentum_) * mean[static_cast<size_t>(j)];
        moving_var[j] = momentum_ * moving_var[j] + (1.0f - momentum_) * var[static_cast<size_t>(j)];
      }
    } else {
      for (int64_t j = 0; j < c; ++j) {
        mean_out[j] = moving_mean[j];
        inv_std[j] = 1.0f / std::sqrt(moving_var[j] + epsilon_);
      }
    }
    // y = x * scale + shift, per channel.
    std::vector<float> scale_v(c), shift_v(c);
    float* scale = scale_v.data();
    float* shift = shift_v.data();
    for (int64_t j = 0; j < c; ++j) {
      scale[j] = gamma[j] * inv_std[j];
      shift[j] = beta[j] - mean_out[j] * scale[j];
    }
    auto* yp = static_cast<float*>(y.raw());
    kernels::parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const float* in = xp + r * c;
        float* out = yp + r * c;
        for (int64_t j = 0; j < c; ++j) out[j] = in[j] * scale[j] + shift[j];
      }
    });
  });
}

void BatchNorm::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  const int64_t c = channels_;
  const int64_t rows = x.numel() / c;
  assert(dy.numel() == x.numel() && cache.saved.size() == 2);
  const bool batch_stats = cache.ints[0] != 0;
  CrossReplicaSum* across = sync_ && batch_stats ? ctx.cross_replica : nullptr;
  prepare_output(grads[0], {c}, {&x, &dy});
  prepare_output(grads[1], {c}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x});
  const auto* mean = static_cast<const float*>(cache.saved[0].raw());
  const auto* inv_std = static_cast<const float*>(cache.saved[1].raw());
  const auto* xp = static_cast<const float*>(x.raw());
  const auto* g = static_cast<const float*>(dy.raw());
  // sums[j] = dbeta = sum dy; sums[c + j] = dgamma = sum dy * xhat, with
  // xhat = (x - mean) * inv_std, over this replica's rows.
  std::vector<double> sums(2 * static_cast<size_t>(c), 0.0);
  ops::on_device(*ctx.ops, "batch_norm_backward", {&x, &dy, &cache.saved[0], &cache.saved[1], &grads[0], &grads[1]},
                 [&] {
    kernels::column_sums(rows, c, 2 * c, sums.data(), [&](int64_t r, double* acc) {
      const float* in = xp + r * c;
      const float* gr = g + r * c;
      double* dbeta = acc;
      double* dgamma = acc + c;
      for (int64_t j = 0; j < c; ++j) {
        dbeta[j] += gr[j];
        dgamma[j] += static_cast<double>(gr[j]) * ((in[j] - mean[j]) * inv_std[j]);
      }
    });
    const double* dbeta = sums.data();
    const double* dgamma = sums.data() + c;
    // The parameter gradients are this replica's part; the strategy sums
    // them over the replicas like every other gradient.
    auto* dgamma_out = static_cast<float*>(grads[0].raw());
    auto* dbeta_out = static_cast<float*>(grads[1].raw());
    for (int64_t j = 0; j < c; ++j) {
      dgamma_out[j] = static_cast<float>(dgamma[j]);
      dbeta_out[j] = static_cast<float>(dbeta[j]);
    }
  });
  if (dx == nullptr) return;
  // Training: dx = gamma * inv_std * (dy - dbeta / N - xhat * dgamma / N),
  // with the sums and N over the global batch when synchronised.
  // Inference: dx = gamma * inv_std * dy.
  if (across != nullptr) across->all_reduce(sums);
  const double total = static_cast<double>(cache.ints[1]);
  ops::on_device(*ctx.ops, "batch_norm_backward", {&x, &dy, &params[0], &cache.saved[0], &cache.saved[1], dx}, [&] {
    const auto* gamma = static_cast<const float*>(params[0].raw());
    std::vector<float> a_v(c), mb_v(c), mg_v(c);
    float* a = a_v.data();
    float* mb = mb_v.data();
    float* mg = mg_v.data();
    for (int64_t j = 0; j < c; ++j) {
      a[j] = gamma[j] * inv_std[j];
      mb[j] = batch_stats ? static_cast<float>(sums[static_cast<size_t>(j)] / total) : 0.0f;
      mg[j] = batch_stats ? static_cast<float>(sums[static_cast<size_t>(c + j)] / total) : 0.0f;
    }
    auto* out = static_cast<float*>(dx->raw());
    kernels::parallel_ranges(rows, c, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const float* in = xp + r * c;
        const float* gr = g + r * c;
        float* o = out + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float xhat = (in[j] - mean[j]) * inv_std[j];
          o[j] = a[j] * (gr[j] - mb[j] - xhat * mg[j]);
        }
      }
    });
  });
}

}  // namespace dtrain
