// The one table of layer types: {type name, factory}. A factory checks the
// spec fields its layer uses and returns the (unbuilt) layer.
#include "engine/layers/registry.hpp"

#include <fmt/format.h>

#include "engine/layers/activation.hpp"
#include "engine/layers/attention.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/flatten.hpp"
#include "engine/layers/global_pool.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/merge.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/position_embedding.hpp"
#include "engine/layers/reshape.hpp"
#include "engine/layers/zero_padding2d.hpp"

namespace dtrain {

namespace {

using LayerPtr = std::unique_ptr<Layer>;
using Factory = Result<LayerPtr> (*)(const LayerSpec&);

Result<LayerPtr> make_dense(const LayerSpec& s) {
  if (s.units < 1) return config_error(fmt::format("dense: units must be >= 1; got {}", s.units));
  return LayerPtr(std::make_unique<Dense>(s.units, s.use_bias, s.kernel_initializer, s.bias_initializer));
}

Result<LayerPtr> make_conv2d(const LayerSpec& s) {
  Conv2dOptions o;
  if (s.filters < 1) return config_error(fmt::format("conv2d: filters must be >= 1; got {}", s.filters));
  if (s.kernel.empty()) return config_error("conv2d: kernel is required (e.g. kernel: 3 or kernel: [3, 5])");
  auto kernel = window_pair(s.kernel, "conv2d: kernel", {1, 1});
  if (!kernel) return kernel.error();
  auto strides = window_pair(s.strides, "conv2d: strides", {1, 1});
  if (!strides) return strides.error();
  auto dilation = window_pair(s.dilation, "conv2d: dilation", {1, 1});
  if (!dilation) return dilation.error();
  auto same = parse_padding(s.padding);
  if (!same) return config_error("conv2d: " + same.error().message);
  o.filters = s.filters;
  o.kernel = *kernel;
  o.strides = *strides;
  o.dilation = *dilation;
  o.same = *same;
  o.use_bias = s.use_bias;
  o.kernel_init = s.kernel_initializer;
  o.bias_init = s.bias_initializer;
  return LayerPtr(std::make_unique<Conv2D>(std::move(o)));
}

Result<LayerPtr> make_pool(const LayerSpec& s, kernels::PoolKind kind) {
  Pool2dOptions o;
  o.kind = kind;
  const std::string where = s.type + ": ";
  auto size = window_pair(s.size, where + "size", {2, 2});
  if (!size) return size.error();
  auto strides = window_pair(s.strides, where + "strides", *size);
  if (!strides) return strides.error();
  auto same = parse_padding(s.padding);
  if (!same) return config_error(where + same.error().message);
  o.size = *size;
  o.strides = *strides;
  o.same = *same;
  return LayerPtr(std::make_unique<Pool2D>(o));
}

Result<LayerPtr> make_max_pool2d(const LayerSpec& s) { return make_pool(s, kernels::PoolKind::kMax); }
Result<LayerPtr> make_avg_pool2d(const LayerSpec& s) { return make_pool(s, kernels::PoolKind::kAvg); }

Result<LayerPtr> make_global_avg_pool2d(const LayerSpec&) {
  return LayerPtr(std::make_unique<GlobalPool>(GlobalPoolKind::kAvg2d));
}
Result<LayerPtr> make_global_max_pool2d(const LayerSpec&) {
  return LayerPtr(std::make_unique<GlobalPool>(GlobalPoolKind::kMax2d));
}
Result<LayerPtr> make_global_avg_pool1d(const LayerSpec&) {
  return LayerPtr(std::make_unique<GlobalPool>(GlobalPoolKind::kAvg1d));
}

Result<LayerPtr> make_flatten(const LayerSpec&) { return LayerPtr(std::make_unique<Flatten>()); }

Result<LayerPtr> make_reshape(const LayerSpec& s) {
  if (s.target_shape.empty()) return config_error("reshape: target_shape is required (without the batch dimension)");
  return LayerPtr(std::make_unique<Reshape>(Shape(s.target_shape.begin(), s.target_shape.end())));
}

Result<LayerPtr> make_dropout(const LayerSpec& s) {
  if (!(s.rate >= 0.0f && s.rate < 1.0f)) {
    return config_error(fmt::format("dropout: rate must be in [0, 1); got {}", s.rate));
  }
  return LayerPtr(std::make_unique<Dropout>(s.rate, s.name));
}

Result<LayerPtr> make_batch_norm(const LayerSpec& s) {
  if (!(s.momentum >= 0.0f && s.momentum <= 1.0f)) {
    return config_error(fmt::format("batch_norm: momentum must be in [0, 1]; got {}", s.momentum));
  }
  if (!(s.epsilon > 0.0f)) return config_error(fmt::format("batch_norm: epsilon must be > 0; got {}", s.epsilon));
  return LayerPtr(std::make_unique<BatchNorm>(s.momentum, s.epsilon, s.sync));
}

Result<LayerPtr> make_layer_norm(const LayerSpec& s) {
  if (!(s.epsilon > 0.0f)) return config_error(fmt::format("layer_norm: epsilon must be > 0; got {}", s.epsilon));
  return LayerPtr(std::make_unique<LayerNorm>(s.epsilon, s.center, s.scale));
}

Result<LayerPtr> make_embedding(const LayerSpec& s) {
  if (s.input_dim < 1) {
    return config_error(fmt::format("embedding: input_dim (the number of token ids) must be >= 1; got {}", s.input_dim));
  }
  if (s.output_dim < 1) return config_error(fmt::format("embedding: output_dim must be >= 1; got {}", s.output_dim));
  return LayerPtr(std::make_unique<Embedding>(s.input_dim, s.output_dim, s.embeddings_initializer));
}

Result<LayerPtr> make_position_embedding(const LayerSpec& s) {
  if (s.sequence_length < 1) {
    return config_error(fmt::format("position_embedding: sequence_length must be >= 1; got {}", s.sequence_length));
  }
  return LayerPtr(std::make_unique<PositionEmbedding>(s.sequence_length));
}

Result<LayerPtr> make_activation_layer(const LayerSpec& s) {
  if (s.activation.empty()) {
    return config_error(fmt::format("activation: the activation field is required (one of {})",
                                    join(Activation::names())));
  }
  return make_activation(s.activation);
}

template <MergeKind kKind>
Result<LayerPtr> make_merge(const LayerSpec&) {
  return LayerPtr(std::make_unique<Merge>(kKind));
}

Result<LayerPtr> make_concatenate(const LayerSpec& s) { return LayerPtr(std::make_unique<Concatenate>(s.axis)); }

Result<LayerPtr> make_zero_padding2d(const LayerSpec& s) {
  std::vector<int64_t> pad = s.pad.empty() ? std::vector<int64_t>{1, 1} : s.pad;
  if (pad.size() == 1) pad.push_back(pad[0]);
  if (pad.size() != 2 || pad[0] < 0 || pad[1] < 0) {
    return config_error(fmt::format("zero_padding2d: padding must be an integer >= 0 or [rows, columns]; got {}",
                                    shape_str(Shape(s.pad.begin(), s.pad.end()))));
  }
  return LayerPtr(std::make_unique<ZeroPadding2D>(pad[0], pad[1]));
}

Result<LayerPtr> make_multi_head_attention(const LayerSpec& s) {
  const char* where = "multi_head_attention: ";
  if (s.num_heads < 1) return config_error(fmt::format("{}num_heads must be >= 1; got {}", where, s.num_heads));
  if (s.key_dim < 1) return config_error(fmt::format("{}key_dim must be >= 1; got {}", where, s.key_dim));
  if (s.value_dim && *s.value_dim < 1) {
    return config_error(fmt::format("{}value_dim must be >= 1 (or null for key_dim); got {}", where, *s.value_dim));
  }
  if (s.output_shape && *s.output_shape < 1) {
    return config_error(
        fmt::format("{}output_shape must be >= 1 (or null for the input's last dimension); got {}", where,
                    *s.output_shape));
  }
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) {
    return config_error(fmt::format("{}dropout must be in [0, 1); got {}", where, s.dropout));
  }
  if (s.inputs.size() > 3) {
    return config_error(fmt::format("{}takes one input (self-attention), [query, value] or [query, value, key]; "
                                    "got {} inputs",
                                    where, s.inputs.size()));
  }
  AttentionOptions o;
  o.num_heads = s.num_heads;
  o.key_dim = s.key_dim;
  o.value_dim = s.value_dim.value_or(0);
  o.output_dim = s.output_shape.value_or(0);
  o.dropout = s.dropout;
  o.use_bias = s.use_bias;
  o.causal = s.use_causal_mask;
  o.kernel_init = s.kernel_initializer;
  o.bias_init = s.bias_initializer;
  const int arity = s.inputs.size() >= 2 ? static_cast<int>(s.inputs.size()) : 1;
  return LayerPtr(std::make_unique<MultiHeadAttention>(std::move(o), s.name, arity));
}

struct Entry {
  const char* type;
  Factory make;
};

constexpr Entry kLayers[] = {
    {"dense", make_dense},
    {"conv2d", make_conv2d},
    {"max_pool2d", make_max_pool2d},
    {"avg_pool2d", make_avg_pool2d},
    {"global_avg_pool2d", make_global_avg_pool2d},
    {"global_max_pool2d", make_global_max_pool2d},
    {"global_avg_pool1d", make_global_avg_pool1d},
    {"flatten", make_flatten},
    {"reshape", make_reshape},
    {"zero_padding2d", make_zero_padding2d},
    {"dropout", make_dropout},
    {"batch_norm", make_batch_norm},
    {"layer_norm", make_layer_norm},
    {"activation", make_activation_layer},
    {"embedding", make_embedding},
    {"position_embedding", make_position_embedding},
    {"multi_head_attention", make_multi_head_attention},
    {"add", make_merge<MergeKind::kAdd>},
    {"subtract", make_merge<MergeKind::kSubtract>},
    {"multiply", make_merge<MergeKind::kMultiply>},
    {"average", make_merge<MergeKind::kAverage>},
    {"maximum", make_merge<MergeKind::kMaximum>},
    {"concatenate", make_concatenate},
};

}  // namespace

Result<std::unique_ptr<Layer>> make_layer(const LayerSpec& spec) {
  for (const Entry& e : kLayers) {
    if (spec.type == e.type) return e.make(spec);
  }
  const auto types = layer_types();
  return config_error(fmt::format("unknown layer type \"{}\"; known types: {}{}", spec.type, join(types),
                                  did_you_mean(spec.type, types)));
}

Result<std::unique_ptr<Layer>> make_activation(const std::string& name) {
  auto kind = Activation::parse(name);
  if (!kind) return kind.error();
  return LayerPtr(std::make_unique<Activation>(*kind));
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const Entry& e : kLayers) out.emplace_back(e.type);
  return out;
}

}  // namespace dtrain
