// The one table of layer types (engine/layers/registry.cpp). Adding a layer is
// one header + one CPU source under engine/layers/ + one row in that table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// Builds the layer a spec names (not yet built: call Layer::build with the
// input shape). spec.activation is NOT applied here; see make_activation.
Result<std::unique_ptr<Layer>> make_layer(const LayerSpec& spec);
// An elementwise activation layer: relu | gelu | tanh | sigmoid | softmax
// (softmax over the last dimension).
Result<std::unique_ptr<Layer>> make_activation(const std::string& name);
// Names of the registered layer types, in table order.
std::vector<std::string> layer_types();

}  // namespace dtrain
