// The one table of ONNX layer exporters: layer type -> a function that writes
// the layer's inference computation (dropout removed, batch norm with its
// moving statistics) as ONNX nodes. A type missing here cannot be exported.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/export/onnx_graph.hpp"
#include "engine/model/model.hpp"
#include "engine/base/status.hpp"

namespace dtrain::onnx_export {

// What one layer's exporter gets. Tensors are per example in dtrain's layout
// (NHWC images, (T, C) sequences); every ONNX value has a leading batch axis.
struct LayerIO {
  const Model::LayerView& view;
  std::vector<std::string> inputs;   // ONNX value names, one per layer input
  std::vector<Shape> in_shapes;      // their shapes without the batch axis
  std::span<const Tensor> params;    // the layer's variables (host float32), in Layer::params() order
};

// Returns the ONNX value holding the layer's output (B, view.out_shape...).
using LayerExporter = Result<std::string> (*)(GraphBuilder& g, const LayerIO& io);

struct LayerExportEntry {
  const char* type;  // Layer::type()
  LayerExporter fn;
};

// The table, in registry order.
const std::vector<LayerExportEntry>& layer_exporters();
// The exporter of `type`, or null.
LayerExporter find_layer_exporter(const std::string& type);

// multi_head_attention (onnx_attention.cpp): projections, scaled dot
// products, causal mask and softmax as MatMul/Transpose/Softmax nodes.
Result<std::string> export_attention(GraphBuilder& g, const LayerIO& io);
// An activation by name (relu, gelu, tanh, sigmoid, softmax over the last axis).
Result<std::string> export_activation_fn(GraphBuilder& g, const std::string& fn, const std::string& x,
                                         const std::string& hint);

}  // namespace dtrain::onnx_export
