// The schema file itself: embedded text, keywords our validator implements,
// documentation of every field, and defaults that agree with job_spec.hpp.
#include <doctest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "config_schema/job_json.hpp"
#include "config_schema/schema.hpp"
#include "job_test_util.hpp"

namespace dtrain {
namespace {

// Calls f(schema, path) for every subschema (properties, items, oneOf,
// allOf, if/then, $defs).
void walk(const Json& s, const std::string& path, const std::function<void(const Json&, const std::string&)>& f) {
  if (!s.is_object()) return;
  f(s, path);
  if (s.contains("properties"))
    for (const auto& [k, v] : s["properties"].items()) walk(v, path + "." + k, f);
  if (s.contains("$defs"))
    for (const auto& [k, v] : s["$defs"].items()) walk(v, "$defs." + k, f);
  if (s.contains("items")) walk(s["items"], path + "[]", f);
  if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
    walk(s["additionalProperties"], path + ".*", f);
  }
  for (const char* list : {"oneOf", "allOf"})
    if (s.contains(list))
      for (size_t i = 0; i < s[list].size(); ++i) walk(s[list][i], path + "/" + list + std::to_string(i), f);
  for (const char* key : {"if", "then"})
    if (s.contains(key)) walk(s[key], path + "/" + key, f);
}

TEST_CASE("schema: the embedded text is config_schema/job.schema.json") {
  std::ifstream in(std::string(DTRAIN_SOURCE_ROOT) + "/config_schema/job.schema.json");
  std::ostringstream file;
  file << in.rdbuf();
  CHECK(job_schema_text() == file.str());
  CHECK(job_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema");
}

TEST_CASE("schema: uses only the keywords our validator implements") {
  walk(job_schema(), "", [](const Json& s, const std::string& path) {
    for (const auto& item : s.items()) {
      const std::string& key = item.key();
      INFO(path << " uses " << key);
      CHECK(is_supported_keyword(key));
    }
    if (s.contains("enum"))
      for (const Json& v : s["enum"]) CHECK(v.is_string());
    // Closed, or (a mapping of names, model.inputs) every value of one schema.
    if (s.contains("additionalProperties")) CHECK((s["additionalProperties"] == false || s["additionalProperties"].is_object()));
  });
}

TEST_CASE("schema: every object is closed and every field is documented with a default unless required") {
  walk(job_schema(), "", [](const Json& s, const std::string& path) {
    if (!s.contains("properties") || path.find("/if") != std::string::npos) return;  // if-conditions only constrain
    INFO(path);
    CHECK(s.contains("additionalProperties"));
    std::vector<std::string> required;
    if (s.contains("required"))
      for (const Json& r : s["required"]) required.push_back(r.get<std::string>());
    for (const auto& item : s["properties"].items()) {
      const std::string& key = item.key();
      const auto& prop = item.value();
      INFO(path << "." << key);
      CHECK(prop.contains("description"));
      const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
      // model.input and model.inputs: one of the two is required (config_schema/semantic.cpp).
      const bool one_of_two = path == ".model" && (key == "input" || key == "inputs");
      // An output's labels default to the output's own name (a value no schema default can hold).
      const bool named_default = path == ".model.outputs.*" && key == "labels";
      CHECK((prop.contains("default") || is_required || one_of_two || named_default));
    }
  });
}

// Compares a schema default with a resolved value; a size default n matches [n, n].
bool same_value(const Json& def, const Json& value) {
  if (def.is_number() && value.is_number()) return def.get<double>() == value.get<double>();
  if (def.is_number() && value.is_array() && value.size() == 2)
    return same_value(def, value[0]) && same_value(def, value[1]);
  return def == value;
}

// Every default in the schema under `schema` equals the value of the
// resolved job under `value`, except the listed computed ones.
void check_defaults(const Json& value, const Json& schema, const std::string& path,
                    const std::vector<std::string>& computed) {
  const Json s = resolve_ref(job_schema(), schema);
  if (!s.contains("properties") || !value.is_object()) return;
  for (const auto& item : s["properties"].items()) {
    const std::string& key = item.key();
    const auto& prop = item.value();
    const std::string p = path + "." + key;
    if (!value.contains(key)) continue;
    const Json resolved_prop = resolve_ref(job_schema(), prop);
    // Object defaults ({}) stand for "all defaults": their fields are compared one by one below.
    const bool object_default = resolved_prop.contains("default") && resolved_prop["default"].is_object();
    if (std::find(computed.begin(), computed.end(), p) == computed.end() && resolved_prop.contains("default") &&
        !object_default) {
      INFO(p << ": schema default " << resolved_prop["default"].dump() << ", loader gives " << value[key].dump());
      CHECK(same_value(resolved_prop["default"], value[key]));
    }
    check_defaults(value[key], resolved_prop, p, computed);
  }
}

TEST_CASE("schema: defaults agree with what the loader fills in (job_spec.hpp)") {
  Result<JobSpec> job = testing::load_text(
      "model:\n  input: {shape: [28, 28, 1]}\n  layers:\n"
      "    - {type: conv2d, filters: 1, kernel: 3}\n    - {type: max_pool2d}\n    - {type: avg_pool2d}\n"
      "    - {type: batch_norm}\n    - {type: dropout, rate: 0.5}\n    - {type: flatten}\n"
      "    - {type: reshape, target_shape: [1]}\n    - {type: activation, activation: relu}\n"
      "    - {type: dense, units: 1}\n"
      "cluster: {task: {type: chief}}\n"
      "data: {train: {format: synthetic}, eval: {format: synthetic}, predict: {format: synthetic}}\n");
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  const OrderedJson resolved = resolved_json(job.value());
  // Computed defaults, documented in their descriptions: layer names, pool
  // strides (= size), repeat of eval/predict (false); the sections given above.
  std::vector<std::string> computed = {".data.eval.repeat", ".data.predict.repeat", ".cluster.task", ".data.train",
                                       ".data.eval", ".data.predict"};
  for (size_t i = 0; i < resolved["model"]["layers"].size(); ++i) {
    const Json& layer = resolved["model"]["layers"][i];
    const std::string type = layer["type"].get<std::string>();
    const Json* branch = branch_for_type(job_schema()["properties"]["model"]["properties"]["layers"]["items"]["oneOf"], type);
    REQUIRE(branch != nullptr);
    std::vector<std::string> layer_computed = {".name", ".strides"};
    if (type == "conv2d") layer_computed.pop_back();
    INFO("layer " << type);
    check_defaults(layer, *branch, "", layer_computed);
  }
  Json without_layers = resolved;
  without_layers["model"].erase("layers");
  check_defaults(without_layers, job_schema(), "", computed);
  CHECK(resolved["data"]["eval"]["repeat"] == false);
  CHECK(resolved["model"]["layers"][1]["strides"] == Json::array({2, 2}));
}

TEST_CASE("schema: the defaults of the sequence formats agree with what the loader fills in") {
  Result<JobSpec> job = testing::load_text(
      "model:\n  input: {shape: [4]}\n  layers:\n    - {type: dense, units: 1}\n"
      "data: {train: {format: text, files: a.txt, sequence_length: 4}, eval: {format: synthetic_sequence}}\n");
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  const OrderedJson resolved = resolved_json(job.value());
  const Json source = job_schema()["$defs"]["data_source"];
  for (const char* role : {"train", "eval"}) {
    INFO(role);
    const Json value = resolved["data"][role];
    CHECK(value.contains(std::string(role) == "train" ? "unit" : "synthetic_sequence"));
    // Given in the job above: files, sequence_length; computed: eval's repeat.
    check_defaults(value, source, std::string(".data.") + role,
                   {".data.train.files", ".data.train.sequence_length", ".data.eval.repeat"});
  }
}

TEST_CASE("schema: describing what a field expects") {
  const Json& root = job_schema();
  auto expect = [&](const char* pointer) { return describe_expected(root, root.at(Json::json_pointer(pointer))); };
  CHECK(expect("/$defs/size2") == "an integer >= 1 or a list of 2 integers >= 1");
  CHECK(expect("/properties/strategy/properties/devices") == "\"auto\" or a non-empty list of strings like \"cpu:0\" or \"gpu:1\"");
  CHECK(expect("/properties/strategy/properties/type") == "one of one_device, towers, mirrored, collective, parameter_server");
  CHECK(expect("/properties/optimizer/properties/momentum") == "a number >= 0 and < 1");
  CHECK(expect("/properties/eval/properties/steps") == "an integer >= 1 or null");
  CHECK(expect("/$defs/data_source/properties/delimiter") == "a single character");
  CHECK(expect("/properties/cluster/properties/evaluator") == "a list of at most one string like \"worker0.example.com:2222\"");
  CHECK(expect("/properties/model/properties/layers") == "a non-empty list of mappings with a type key");
}

}  // namespace
}  // namespace dtrain
