// JobSpec -> JSON in schema order, and the model hash.
#include "config_schema/job_json.hpp"

#include <cstdio>

#include "config_schema/field_io.hpp"
#include "config_schema/layer_schema.hpp"
#include "config_schema/schema.hpp"

namespace dtrain {
namespace {

Json layer_json(const LayerSpec& l) {
  Json j{{"type", l.type}, {"name", l.name}};
  // Graph fields only where used, so a sequential model's resolved form (and
  // its model_hash, kept in checkpoints) is what it was before graphs.
  if (!l.inputs.empty()) j["inputs"] = l.inputs;
  write_layer_options(l, j);  // the type's own options, through its row's field table
  return j;
}

// model.class_weight as written: "balanced" or {"id": weight}.
Json class_weight_json(const ClassWeightSpec& c) {
  if (c.balanced) return "balanced";
  Json j = Json::object();
  for (const auto& [id, w] : c.weights) j[std::to_string(id)] = w;
  return j;
}

Json job_json(const JobSpec& job) {
  const ModelSpec& m = job.model;
  Json layers = Json::array();
  for (const LayerSpec& l : m.layers) layers.push_back(layer_json(l));
  Json input = {{"shape", m.input_shape}};
  // Only when not the default, so that a float32 job's model_hash stays what it was.
  if (m.input_dtype != "float32") input["dtype"] = m.input_dtype;
  // A named input (model.inputs) keeps its form; the default name, input's.
  const bool named = m.input_name != "input" || !m.extra_inputs.empty();
  Json inputs = Json{{m.input_name, input}};
  for (const ModelInputSpec& in : m.extra_inputs) {
    Json j = {{"shape", in.shape}};
    if (in.dtype != "float32") j["dtype"] = in.dtype;
    inputs[in.name] = j;
  }
  Json model = {{named ? "inputs" : "input", named ? inputs : input}, {"layers", layers}, {"loss", m.loss}, {"metrics", m.metrics}};
  // Only when given, so that other jobs' model_hash stays what it was.
  if (m.class_weight.given()) model["class_weight"] = class_weight_json(m.class_weight);
  // Only with model.outputs, so that a one-output job's model_hash stays what it was.
  if (!m.outputs.empty()) {
    model.erase("loss");
    model.erase("metrics");
    Json outputs = Json::object();
    for (const ModelOutputSpec& o : m.outputs) {
      outputs[o.name] = {{"loss", o.loss}, {"labels", o.labels}, {"weight", o.weight}, {"metrics", o.metrics}};
      if (o.class_weight.given()) outputs[o.name]["class_weight"] = class_weight_json(o.class_weight);
    }
    model["outputs"] = outputs;
  }
  Json j{{"model", model}};
  // Every other section through its field table (engine/base/job_fields.cpp).
  write_fields(job_section_fields(), &job, nullptr, "", j);
  return j;
}

std::string json_type(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// `value` restricted to the keys `schema` lists, in its order (recursively).
OrderedJson in_schema_order(const Json& value, const Json& root, const Json& schema) {
  const Json s = resolve_ref(root, schema);
  if (s.contains("oneOf")) {
    const Json& branches = s["oneOf"];
    if (is_type_discriminated(root, branches)) {
      const Json* branch = branch_for_type(branches, value.value("type", std::string()));
      if (branch != nullptr) return in_schema_order(value, root, *branch);
    } else {
      const std::string t = json_type(value);
      for (const Json& b : branches)
        for (const std::string& admitted : schema_types(resolve_ref(root, b)))
          if (admitted == t || (admitted == "number" && t == "integer")) return in_schema_order(value, root, b);
    }
  }
  if (value.is_object() && s.contains("properties")) {
    OrderedJson out = OrderedJson::object();
    for (const auto& [key, sub] : s["properties"].items())
      if (value.contains(key)) out[key] = in_schema_order(value[key], root, sub);
    return out;
  }
  if (value.is_array() && s.contains("items")) {
    OrderedJson out = OrderedJson::array();
    for (const Json& item : value) out.push_back(in_schema_order(item, root, s["items"]));
    return out;
  }
  return value;
}

}  // namespace

OrderedJson resolved_json(const JobSpec& job) {
  return in_schema_order(job_json(job), job_schema(), job_schema());
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string model_hash(const OrderedJson& resolved) {
  // nlohmann::json (unlike ordered_json) sorts keys: the canonical form.
  const std::string canonical = nlohmann::json::parse(resolved["model"].dump()).dump();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(canonical)));
  return buf;
}

}  // namespace dtrain
