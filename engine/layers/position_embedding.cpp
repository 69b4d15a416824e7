// Position embedding: a broadcast add forward, a sum over examples backward.
#include "engine/layers/position_embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

Result<Shape> PositionEmbedding::build(const Shape& input) {
  if (input.size() < 2) {
    return config_error(fmt::format(
        "position_embedding expects a sequence input (steps, features); got shape {}; "
        "add {{type: reshape, target_shape: [steps, features]}} before it",
        shape_str(input)));
  }
  steps_ = input[input.size() - 2];
  channels_ = input.back();
  if (steps_ > sequence_length_) {
    return config_error(fmt::format(
        "position embedding shorter than the sequence: sequence_length is {} but the input (shape {}) has {} steps; "
        "set sequence_length to at least {}",
        sequence_length_, shape_str(input), steps_, steps_));
  }
  return input;
}

std::vector<ParamSpec> PositionEmbedding::params() const {
  return {{"embeddings", {sequence_length_, channels_}, {"glorot_uniform", 0.0f}, true}};
}

void PositionEmbedding::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                                LayerCache&) const {
  const int64_t block = steps_ * channels_;  // one (T, C) sequence
  assert(x.dim(-1) == channels_ && x.dim(-2) == steps_);
  const int64_t sequences = x.numel() / block;
  prepare_output(y, x.shape(), {&x, &params[0]});
  ops::on_device(*ctx.ops, "position_embedding", {&x, &params[0], &y}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* table = static_cast<const float*>(params[0].raw());  // rows [0, T) are the first block
    auto* yp = static_cast<float*>(y.raw());
    for (int64_t s = 0; s < sequences; ++s) {
      const float* in = xp + s * block;
      float* out = yp + s * block;
      for (int64_t i = 0; i < block; ++i) out[i] = in[i] + table[i];
    }
  });
}

void PositionEmbedding::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor> grads,
                                 const Tensor&, const Tensor&, const Tensor& dy, Tensor* dx,
                                 const LayerCache&) const {
  const int64_t block = steps_ * channels_;
  const int64_t sequences = dy.numel() / block;
  prepare_output(grads[0], {sequence_length_, channels_}, {&dy});
  ops::on_device(*ctx.ops, "position_embedding_backward", {&dy, &grads[0]}, [&] {
    const auto* g = static_cast<const float*>(dy.raw());
    auto* table = static_cast<float*>(grads[0].raw());
    // Sum in double, example order, then store: deterministic.
    std::vector<double> sum(static_cast<size_t>(block), 0.0);
    for (int64_t s = 0; s < sequences; ++s) {
      const float* gs = g + s * block;
      for (int64_t i = 0; i < block; ++i) sum[static_cast<size_t>(i)] += gs[i];
    }
    for (int64_t i = 0; i < block; ++i) table[i] = static_cast<float>(sum[static_cast<size_t>(i)]);
    std::fill(table + block, table + sequence_length_ * channels_, 0.0f);
  });
  if (dx != nullptr) *dx = dy;
}

std::span<const Field> position_embedding_fields() {
  static const Field kFields[] = {
      field<&PositionEmbeddingSpec::sequence_length>(
          "sequence_length", "The longest sequence the layer embeds; the input's steps must not exceed it.")
          .min(1)
          .need(),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_position_embedding(const LayerSpec& spec) {
  const auto& s = layer_options<PositionEmbeddingSpec>(spec);
  if (s.sequence_length < 1) {
    return config_error(fmt::format("position_embedding: sequence_length must be >= 1; got {}", s.sequence_length));
  }
  return std::unique_ptr<Layer>(std::make_unique<PositionEmbedding>(s.sequence_length));
}

}  // namespace dtrain
