// The one table of layer types: a row per type with its documentation, its
// options (a field table over its own struct), its factory and its ONNX
// exporter. The job schema's layer branches are made from these rows
// (config_schema/layer_schema.cpp), so a type written here is documented.
#include "engine/layers/registry.hpp"

#include <fmt/format.h>

#include "engine/export/onnx_layers.hpp"
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
#include "engine/layers/leaky_relu.hpp"
#include "engine/layers/merge.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/position_embedding.hpp"
#include "engine/layers/reshape.hpp"
#include "engine/layers/zero_padding2d.hpp"

namespace dtrain {

namespace {

namespace onnx = onnx_export;
constexpr LayerInputs kMerge = LayerInputs::kMerge;
constexpr const char* kMergeInputs = "The layers merged, by name: a list of two or more.";

// {type, doc, fields, options struct, make, ONNX export [, inputs, inputs doc]}
const LayerRow kLayers[] = {
    {"dense",
     "Fully connected layer: y = activation(x W + b) over the last dimension (Keras Dense): an input (features) gives "
     "(units); an input (steps, features) gives (steps, units), with the same kernel (features, units) at every step.",
     dense_fields, &kOptionsOf<DenseSpec>, make_dense, onnx::export_dense},
    {"conv2d", "2-D convolution over NHWC input.", conv2d_fields, &kOptionsOf<Conv2dSpec>, make_conv2d,
     onnx::export_conv2d},
    {"max_pool2d", "Max pooling over NHWC input.", pool2d_fields, &kOptionsOf<Pool2dSpec>, make_max_pool2d,
     onnx::export_pool2d},
    {"avg_pool2d", "Average pooling over NHWC input.", pool2d_fields, &kOptionsOf<Pool2dSpec>, make_avg_pool2d,
     onnx::export_pool2d},
    {"global_avg_pool2d",
     "Global average pooling (Keras GlobalAveragePooling2D): the mean over height and width of each channel of NHWC "
     "input (height, width, channels), giving (channels).",
     no_fields, &kOptionsOf<NoOptions>, make_global_avg_pool2d, onnx::export_global_pool},
    {"global_max_pool2d",
     "Global max pooling (Keras GlobalMaxPooling2D): the maximum over height and width of each channel of NHWC input "
     "(height, width, channels), giving (channels). The gradient goes to the first maximal position.",
     no_fields, &kOptionsOf<NoOptions>, make_global_max_pool2d, onnx::export_global_pool},
    {"global_avg_pool1d",
     "Global average pooling over steps (Keras GlobalAveragePooling1D): the mean over the steps of each channel of a "
     "sequence (steps, channels), giving (channels).",
     no_fields, &kOptionsOf<NoOptions>, make_global_avg_pool1d, onnx::export_global_pool},
    {"flatten", "Flattens each example to one dimension.", no_fields, &kOptionsOf<NoOptions>, make_flatten,
     onnx::export_reshape},
    {"reshape", "Reshapes each example (the batch dimension is kept).", reshape_fields, &kOptionsOf<ReshapeSpec>,
     make_reshape, onnx::export_reshape},
    {"zero_padding2d",
     "Pads each NHWC image with zeros: padding rows above and below, padding columns left and right (Keras "
     "ZeroPadding2D).",
     zero_padding2d_fields, &kOptionsOf<ZeroPadding2dSpec>, make_zero_padding2d, onnx::export_zero_padding2d},
    {"dropout", "Sets a fraction of the inputs to zero during training (inverted dropout; identity at evaluation).",
     dropout_fields, &kOptionsOf<DropoutSpec>, make_dropout, onnx::export_dropout},
    {"batch_norm", "Batch normalization over the last (channel) dimension.", batch_norm_fields,
     &kOptionsOf<BatchNormSpec>, make_batch_norm, onnx::export_batch_norm},
    {"layer_norm",
     "Layer normalization over the last dimension (Keras LayerNormalization): each example's values at one position "
     "are normalised by their own mean and variance, then scaled by gamma and shifted by beta (variables of shape "
     "(features)).",
     layer_norm_fields, &kOptionsOf<LayerNormSpec>, make_layer_norm, onnx::export_layer_norm},
    {"activation", "An elementwise activation function as a layer.", activation_fields, &kOptionsOf<NoOptions>,
     make_activation_layer, onnx::export_activation},
    {"leaky_relu",
     "Leaky rectified linear unit (Keras LeakyReLU): x where x > 0, negative_slope * x elsewhere; no variables.",
     leaky_relu_fields, &kOptionsOf<LeakyReluSpec>, make_leaky_relu, onnx::export_leaky_relu},
    {"embedding",
     "Embedding lookup (Keras Embedding): each integer token id of the input selects a row of the variable embeddings "
     "(input_dim, output_dim); an input of shape (steps) gives (steps, output_dim). Ids must be integers in [0, "
     "input_dim); any other id is a data error. Ids get no gradient.",
     embedding_fields, &kOptionsOf<EmbeddingSpec>, make_embedding, onnx::export_embedding},
    {"position_embedding",
     "Learned position embedding (keras_hub PositionEmbedding): adds row t of the variable embeddings "
     "(sequence_length, features) to step t of a sequence (steps, features), for steps up to sequence_length. Unlike "
     "keras_hub's layer, which returns the embeddings for the caller to add, this layer adds them to its input.",
     position_embedding_fields, &kOptionsOf<PositionEmbeddingSpec>, make_position_embedding,
     onnx::export_position_embedding},
    {"multi_head_attention",
     "Multi-head attention over sequences (time, features), as Keras MultiHeadAttention: self-attention on one input "
     "(query = key = value), or inputs: [query, value] (the key is the value) or [query, value, key], as Keras's "
     "call(query, value, key); key and value have the same length. Each head projects the input to queries and keys "
     "of size key_dim and values of size value_dim, attends with softmax(Q K^T / sqrt(key_dim)) over the positions, "
     "and the heads' outputs are projected to output_shape features. Variables: query/kernel (features, num_heads, "
     "key_dim), query/bias (num_heads, key_dim), key/kernel (key features, num_heads, key_dim), key/bias, "
     "value/kernel (value features, num_heads, value_dim), value/bias (num_heads, value_dim), "
     "attention_output/kernel (num_heads, value_dim, output_shape), attention_output/bias (output_shape).",
     attention_fields, &kOptionsOf<AttentionSpec>, make_multi_head_attention, onnx::export_attention},
    {"add",
     "Elementwise sum of same-shaped inputs (no broadcasting), optionally followed by an activation (a residual "
     "connection).",
     add_fields, &kOptionsOf<NoOptions>, make_merge<MergeKind::kAdd>, onnx::export_merge, kMerge, kMergeInputs},
    {"subtract", "The first input minus the second; same shapes.", no_fields, &kOptionsOf<NoOptions>,
     make_merge<MergeKind::kSubtract>, onnx::export_merge, kMerge,
     "The layers merged, by name: a list of two or more (exactly two for subtract)."},
    {"multiply", "Elementwise product of same-shaped inputs.", no_fields, &kOptionsOf<NoOptions>,
     make_merge<MergeKind::kMultiply>, onnx::export_merge, kMerge, kMergeInputs},
    {"average", "Elementwise mean of same-shaped inputs.", no_fields, &kOptionsOf<NoOptions>,
     make_merge<MergeKind::kAverage>, onnx::export_merge, kMerge, kMergeInputs},
    {"maximum",
     "Elementwise maximum of same-shaped inputs; the gradient goes to the first input holding the maximum.",
     no_fields, &kOptionsOf<NoOptions>, make_merge<MergeKind::kMaximum>, onnx::export_merge, kMerge, kMergeInputs},
    {"concatenate", "Joins inputs along one axis; every other dimension must match.", concatenate_fields,
     &kOptionsOf<ConcatenateSpec>, make_concatenate, onnx::export_concatenate, kMerge, kMergeInputs},
};

}  // namespace

std::span<const LayerRow> layer_rows() { return kLayers; }

const LayerRow* find_layer_row(const std::string& type) {
  for (const LayerRow& row : kLayers) {
    if (type == row.type) return &row;
  }
  return nullptr;
}

LayerSpec default_layer_spec(const std::string& type) {
  const LayerRow* row = find_layer_row(type);
  if (row == nullptr) throw std::logic_error("default_layer_spec: no layer type \"" + type + "\"");
  LayerSpec spec;
  spec.type = type;
  spec.options = row->options->make();
  return spec;
}

Result<std::unique_ptr<Layer>> make_layer(const LayerSpec& spec) {
  if (const LayerRow* row = find_layer_row(spec.type)) {
    if (!spec.options.empty()) return row->make(spec);
    LayerSpec with_defaults = spec;  // a spec made in code without options: the type's defaults
    with_defaults.options = row->options->make();
    return row->make(with_defaults);
  }
  const auto types = layer_types();
  return config_error(fmt::format("unknown layer type \"{}\"; known types: {}{}", spec.type, join(types),
                                  did_you_mean(spec.type, types)));
}

Result<std::unique_ptr<Layer>> make_activation(const std::string& name) {
  auto kind = Activation::parse(name);
  if (!kind) return kind.error();
  return std::unique_ptr<Layer>(std::make_unique<Activation>(*kind));
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const LayerRow& row : kLayers) out.emplace_back(row.type);
  return out;
}

}  // namespace dtrain
