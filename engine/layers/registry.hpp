// The one table of layer types (engine/layers/registry.cpp). A layer type is
// one header (its class and its options struct), one CPU source (the layer,
// its field table, its factory and, for a new layer, its ONNX exporter) and
// one row here. Everything else a user sees of it is derived from the row:
// the job schema's branch and so dtrain-job(5) (config_schema/layer_schema),
// how a job's YAML is read and written back (config_schema/field_io), ONNX
// export (engine/export) and the "known types" of an error.
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/base/fields.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/layer.hpp"

namespace dtrain {

namespace onnx_export {
class GraphBuilder;
struct LayerIO;
// Writes the layer's inference computation as ONNX nodes; returns the value
// holding its output (engine/export/onnx_layers.hpp).
using LayerExporter = Result<std::string> (*)(GraphBuilder& g, const LayerIO& io);
}  // namespace onnx_export

// How a layer takes its inputs: the layer above or any one named layer, or
// two and more named layers (merges: inputs is required).
enum class LayerInputs { kOne, kMerge };

// How to make a type's options struct: with every default, and resolve()
// after reading (defaults that depend on other options) when T has one.
struct OptionsType {
  OptionsBox (*make)();
  void (*resolve)(void* options);  // null: nothing to resolve
};
template <class T>
constexpr void (*resolve_of())(void*) {
  if constexpr (requires(T& t) { t.resolve(); }) {
    return [](void* p) { static_cast<T*>(p)->resolve(); };
  } else {
    return nullptr;
  }
}
template <class T>
inline constexpr OptionsType kOptionsOf{[] { return OptionsBox::of<T>(); }, resolve_of<T>()};

struct LayerRow {
  const char* type;
  const char* doc;                              // the schema's description of the type
  std::span<const Field> (*fields)();           // its options, in the order the job shows them
  const OptionsType* options;                   // the struct the fields address
  Result<std::unique_ptr<Layer>> (*make)(const LayerSpec& spec);  // the (unbuilt) layer
  onnx_export::LayerExporter export_onnx;       // null: the type cannot be exported
  LayerInputs inputs = LayerInputs::kOne;
  const char* inputs_doc = nullptr;             // replaces the usual text of its inputs option
};

// The rows, in table order.
std::span<const LayerRow> layer_rows();
// The row of `type`, or null.
const LayerRow* find_layer_row(const std::string& type);
// A spec of `type` with its options at their defaults (for code that builds
// layers without a job file). REQUIRES: type is a registered type.
LayerSpec default_layer_spec(const std::string& type);

// Builds the layer a spec names (not yet built: call Layer::build with the
// input shape); a spec without options takes its type's defaults.
// spec.activation is NOT applied here; see make_activation.
Result<std::unique_ptr<Layer>> make_layer(const LayerSpec& spec);
// An elementwise activation layer: relu | gelu | tanh | sigmoid | softmax
// (softmax over the last dimension).
Result<std::unique_ptr<Layer>> make_activation(const std::string& name);
// Names of the registered layer types, in table order.
std::vector<std::string> layer_types();

// A layer's options as its own struct. REQUIRES: the spec holds a T (its
// type's row made it).
template <class T>
const T& layer_options(const LayerSpec& spec) {
  const T* o = spec.options.get<T>();
  if (o == nullptr) throw std::logic_error("layer " + spec.name + " (" + spec.type + ") does not hold these options");
  return *o;
}
template <class T>
T& layer_options(LayerSpec& spec) {
  T* o = spec.options.get<T>();
  if (o == nullptr) throw std::logic_error("layer " + spec.name + " (" + spec.type + ") does not hold these options");
  return *o;
}

}  // namespace dtrain
