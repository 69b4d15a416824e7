// Global pooling: plain loops over (example, position, channel), channels
// innermost so the loops vectorise.
#include "engine/layers/global_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

std::string GlobalPool::type() const {
  switch (kind_) {
    case GlobalPoolKind::kAvg2d: return "global_avg_pool2d";
    case GlobalPoolKind::kMax2d: return "global_max_pool2d";
    case GlobalPoolKind::kAvg1d: return "global_avg_pool1d";
  }
  return "?";
}

Result<Shape> GlobalPool::build(const Shape& input) {
  const bool two_d = kind_ != GlobalPoolKind::kAvg1d;
  const size_t rank = two_d ? 3 : 2;
  if (input.size() != rank) {
    return config_error(two_d ? fmt::format("{} expects an image input (height, width, channels); got shape {}; "
                                            "add {{type: reshape, target_shape: [height, width, channels]}} before it",
                                            type(), shape_str(input))
                              : fmt::format("{} expects a sequence input (steps, channels); got shape {}; "
                                            "add {{type: reshape, target_shape: [steps, channels]}} before it",
                                            type(), shape_str(input)));
  }
  positions_ = two_d ? input[0] * input[1] : input[0];
  channels_ = input.back();
  return Shape{channels_};
}

void GlobalPool::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                         LayerCache&) const {
  const int64_t batch = x.dim(0), p = positions_, c = channels_;
  assert(x.numel() == batch * p * c);
  prepare_output(y, {batch, c}, {&x});
  ops::on_device(*ctx.ops, "global_pool", {&x, &y}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    auto* yp = static_cast<float*>(y.raw());
    std::vector<double> sum(static_cast<size_t>(c));
    for (int64_t b = 0; b < batch; ++b) {
      const float* in = xp + b * p * c;
      float* out = yp + b * c;
      if (kind_ == GlobalPoolKind::kMax2d) {
        std::copy(in, in + c, out);
        for (int64_t i = 1; i < p; ++i) {
          const float* row = in + i * c;
          for (int64_t j = 0; j < c; ++j) out[j] = row[j] > out[j] ? row[j] : out[j];
        }
        continue;
      }
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t i = 0; i < p; ++i) {
        const float* row = in + i * c;
        for (int64_t j = 0; j < c; ++j) sum[static_cast<size_t>(j)] += row[j];
      }
      for (int64_t j = 0; j < c; ++j) out[j] = static_cast<float>(sum[static_cast<size_t>(j)] / static_cast<double>(p));
    }
  });
}

void GlobalPool::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                          const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  const int64_t batch = x.dim(0), p = positions_, c = channels_;
  assert(dy.numel() == batch * c);
  prepare_output(*dx, x.shape(), {&x, &dy});
  ops::on_device(*ctx.ops, "global_pool_backward", {&x, &dy, dx}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* g = static_cast<const float*>(dy.raw());
    auto* out = static_cast<float*>(dx->raw());
    const float inv = 1.0f / static_cast<float>(p);
    std::vector<int64_t> arg(static_cast<size_t>(c));
    for (int64_t b = 0; b < batch; ++b) {
      const float* in = xp + b * p * c;
      const float* gb = g + b * c;
      float* ob = out + b * p * c;
      if (kind_ != GlobalPoolKind::kMax2d) {
        for (int64_t i = 0; i < p; ++i) {
          for (int64_t j = 0; j < c; ++j) ob[i * c + j] = gb[j] * inv;
        }
        continue;
      }
      // The first maximum of each channel: a later position wins only when
      // strictly greater. Ties give the whole gradient to the first, as
      // PyTorch's max(dim) does (TensorFlow's reduce_max splits it).
      std::fill(arg.begin(), arg.end(), 0);
      for (int64_t i = 1; i < p; ++i) {
        const float* row = in + i * c;
        for (int64_t j = 0; j < c; ++j) {
          if (row[j] > in[arg[static_cast<size_t>(j)] * c + j]) arg[static_cast<size_t>(j)] = i;
        }
      }
      std::fill(ob, ob + p * c, 0.0f);
      for (int64_t j = 0; j < c; ++j) ob[arg[static_cast<size_t>(j)] * c + j] = gb[j];
    }
  });
}

}  // namespace dtrain
