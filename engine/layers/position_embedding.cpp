// Position embedding: a broadcast add forward, a sum over examples backward
// (ops::position_embedding_forward, _backward).
#include "engine/layers/position_embedding.hpp"

#include <fmt/format.h>

#include <cassert>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

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
  assert(x.dim(-1) == channels_ && x.dim(-2) == steps_);
  prepare_output(y, x.shape(), {&x, &params[0]});
  ops::position_embedding_forward(*ctx.ops, x, params[0], y);
}

void PositionEmbedding::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor> grads,
                                 const Tensor&, const Tensor&, const Tensor& dy, Tensor* dx,
                                 const LayerCache&) const {
  prepare_output(grads[0], {sequence_length_, channels_}, {&dy});
  ops::position_embedding_backward(*ctx.ops, dy, grads[0]);
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
