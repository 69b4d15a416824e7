// Schema branches, reading and writing of layers from the layer table's rows.
#include "config_schema/layer_schema.hpp"

#include "config_schema/field_io.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {

namespace {

constexpr const char* kNameDoc =
    "Name of the layer, unique in the model; its variables are named \"<name>/<variable>\". null: Keras naming by "
    "type (\"{T}\", \"{T}_1\", ...).";
constexpr const char* kMergeNameDoc = "Name of the layer, unique in the model. null: Keras naming by type (\"{T}\", \"{T}_1\", ...).";
constexpr const char* kInputsDoc =
    "The layer (or model input) this one reads, by name, or a list of names for a layer of several inputs. A layer "
    "can use only layers above it. null: the layer above (the model's input for the first layer).";

std::string with_type(std::string text, const std::string& type) {
  for (size_t at = text.find("{T}"); at != std::string::npos; at = text.find("{T}", at + type.size()))
    text.replace(at, 3, type);
  return text;
}

Json branch(const LayerRow& row) {
  const bool merge = row.inputs == LayerInputs::kMerge;
  Json properties = Json::object();
  properties["type"] = Json{{"const", row.type}, {"description", "The layer type."}};
  properties["name"] = Json{{"$ref", "#/$defs/layer_name"},
                            {"description", with_type(merge ? kMergeNameDoc : kNameDoc, row.type)},
                            {"default", nullptr}};
  properties["inputs"] = Json{{"$ref", "#/$defs/layer_inputs"},
                              {"description", row.inputs_doc != nullptr ? row.inputs_doc : kInputsDoc},
                              {"default", nullptr}};
  Json required = Json::array({"type"});
  if (merge) required.push_back("inputs");
  const OptionsBox defaults = row.options->make();
  fields_schema(row.fields(), defaults.data(), properties, required);
  return Json{{"type", "object"},
              {"description", row.doc},
              {"properties", properties},
              {"required", required},
              {"additionalProperties", false}};
}

}  // namespace

Json layer_schema_branches() {
  Json out = Json::array();
  for (const LayerRow& row : layer_rows()) out.push_back(branch(row));
  return out;
}

void read_layer_options(const Node& node, LayerSpec& spec) {
  const LayerRow* row = find_layer_row(spec.type);
  if (row == nullptr) return;
  spec.options = row->options->make();
  read_fields(node, row->fields(), spec.options.data(), FieldReading{&spec.activation, ""});
  if (row->options->resolve != nullptr) row->options->resolve(spec.options.data());
}

void write_layer_options(const LayerSpec& spec, Json& out) {
  const LayerRow* row = find_layer_row(spec.type);
  if (row == nullptr || spec.options.empty()) return;
  const OptionsBox defaults = row->options->make();
  write_fields(row->fields(), spec.options.data(), defaults.data(), spec.activation, out);
}

}  // namespace dtrain
