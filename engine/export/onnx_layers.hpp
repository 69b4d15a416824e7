// ONNX export of layers: the exporter of each type is a column of the layer
// table (engine/layers/registry.cpp); it writes the layer's inference
// computation (dropout removed, batch norm with its moving statistics) as
// ONNX nodes. A type with no exporter cannot be exported.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/export/onnx_graph.hpp"
#include "engine/model/model.hpp"
#include "engine/base/status.hpp"
#include "engine/layers/registry.hpp"  // LayerExporter

namespace dtrain::onnx_export {

// What one layer's exporter gets. Tensors are per example in dtrain's layout
// (NHWC images, (T, C) sequences); every ONNX value has a leading batch axis.
struct LayerIO {
  const Model::LayerView& view;
  std::vector<std::string> inputs;   // ONNX value names, one per layer input
  std::vector<Shape> in_shapes;      // their shapes without the batch axis
  std::span<const Tensor> params;    // the layer's variables (host float32), in Layer::params() order
};

// The exporters of the layer types, named in their rows of the layer table
// (engine/layers/registry.cpp). Each returns the ONNX value holding the
// layer's output (B, view.out_shape...).
Result<std::string> export_dense(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_conv2d(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_pool2d(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_global_pool(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_batch_norm(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_layer_norm(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_activation(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_dropout(GraphBuilder& g, const LayerIO& io);  // identity in inference
Result<std::string> export_reshape(GraphBuilder& g, const LayerIO& io);  // flatten and reshape
Result<std::string> export_zero_padding2d(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_embedding(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_position_embedding(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_merge(GraphBuilder& g, const LayerIO& io);
Result<std::string> export_concatenate(GraphBuilder& g, const LayerIO& io);

// The exporter of a layer type (its row's), or null.
LayerExporter find_layer_exporter(const std::string& type);

// multi_head_attention (onnx_attention.cpp): projections, scaled dot
// products, causal mask and softmax as MatMul/Transpose/Softmax nodes.
Result<std::string> export_attention(GraphBuilder& g, const LayerIO& io);
// An activation by name (relu, gelu, tanh, sigmoid, softmax over the last axis).
Result<std::string> export_activation_fn(GraphBuilder& g, const std::string& fn, const std::string& x,
                                         const std::string& hint);

}  // namespace dtrain::onnx_export
