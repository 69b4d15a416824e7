// Loading the embedded schema and describing what its parts expect.
#include "config_schema/schema.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include "config_schema/diagnostics.hpp"
#include "config_schema/field_io.hpp"
#include "config_schema/job_loader.hpp"
#include "config_schema/layer_schema.hpp"
#include "config_schema/schema_embedded.hpp"

namespace dtrain {

std::string_view job_schema_text() { return kJobSchemaJson; }

const Json& job_schema() {
  // The layer branches come from the layer table (engine/layers/registry.cpp);
  // the committed file holds the same, for editors and dtrain-job(5): a test
  // compares them (regenerate with `dtrain schema > config_schema/job.schema.json`).
  static const Json schema = [] {
    Json s = Json::parse(kJobSchemaJson);
    s["properties"]["model"]["properties"]["layers"]["items"]["oneOf"] = layer_schema_branches();
    // Every other section from its field table (engine/base/job_fields.cpp), in place.
    const JobSpec defaults;
    for (const Field& f : job_section_fields()) s["properties"][f.name] = field_schema(f, &defaults);
    const DataSourceSpec source;
    s["$defs"]["data_source"] = fields_object_schema(data_source_fields(), &source, data_source_schema_extra());
    return s;
  }();
  return schema;
}

std::string job_schema_json() { return job_schema().dump(2) + "\n"; }

bool is_supported_keyword(std::string_view keyword) {
  static constexpr std::array<std::string_view, 28> kKeywords = {
      // annotations
      "$schema", "$defs", "$comment", "title", "description", "default", "examples",
      // validation implemented in validate.cpp
      "$ref", "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
      "minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "properties", "required",
      "additionalProperties", "oneOf", "allOf", "if", "then"};
  for (std::string_view k : kKeywords)
    if (k == keyword) return true;
  return false;
}

Json resolve_ref(const Json& root, const Json& schema) {
  if (!schema.is_object() || !schema.contains("$ref")) return schema;
  const std::string ref = schema["$ref"].get<std::string>();
  Json merged = resolve_ref(root, root.at(Json::json_pointer(ref.substr(1))));
  for (const auto& [key, value] : schema.items())
    if (key != "$ref") merged[key] = value;
  return merged;
}

std::vector<std::string> schema_types(const Json& schema) {
  std::vector<std::string> types;
  if (schema.contains("type")) {
    const Json& t = schema["type"];
    if (t.is_string()) return {t.get<std::string>()};
    for (const Json& x : t) types.push_back(x.get<std::string>());
    return types;
  }
  if (schema.contains("enum") || schema.contains("const")) return {"string"};
  return types;
}

std::vector<std::string> property_names(const Json& schema) {
  std::vector<std::string> names;
  if (schema.contains("properties"))
    for (const auto& [key, value] : schema["properties"].items()) names.push_back(key);
  return names;
}

std::vector<std::string> enum_names(const Json& schema) {
  std::vector<std::string> names;
  if (schema.contains("const")) names.push_back(schema["const"].get<std::string>());
  if (schema.contains("enum"))
    for (const Json& v : schema["enum"]) names.push_back(v.get<std::string>());
  return names;
}

bool is_type_discriminated(const Json& root, const Json& one_of) {
  for (const Json& branch : one_of) {
    const Json b = resolve_ref(root, branch);
    if (!b.contains("properties") || !b["properties"].contains("type") || !b["properties"]["type"].contains("const"))
      return false;
  }
  return !one_of.empty();
}

const Json* branch_for_type(const Json& one_of, std::string_view type) {
  for (const Json& branch : one_of)
    if (branch["properties"]["type"]["const"].get<std::string>() == type) return &branch;
  return nullptr;
}

std::vector<std::string> discriminator_values(const Json& one_of) {
  std::vector<std::string> names;
  for (const Json& branch : one_of) names.push_back(branch["properties"]["type"]["const"].get<std::string>());
  return names;
}

namespace {

std::string number_text(const Json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  const double d = v.get<double>();
  if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

std::string range_text(const Json& s) {
  std::vector<std::string> parts;
  if (s.contains("minimum")) parts.push_back(">= " + number_text(s["minimum"]));
  if (s.contains("exclusiveMinimum")) parts.push_back("> " + number_text(s["exclusiveMinimum"]));
  if (s.contains("maximum")) parts.push_back("<= " + number_text(s["maximum"]));
  if (s.contains("exclusiveMaximum")) parts.push_back("< " + number_text(s["exclusiveMaximum"]));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? " " : " and ") + p;
  return out;
}

std::string describe_one(const Json& root, const Json& s, const std::string& type, bool plural);

std::string describe_all(const Json& root, const Json& schema, bool plural) {
  const Json s = resolve_ref(root, schema);
  if (s.contains("oneOf")) {
    if (is_type_discriminated(root, s["oneOf"])) return plural ? "mappings with a type key" : "a mapping with a type key";
    std::string out;
    for (const Json& branch : s["oneOf"]) out += (out.empty() ? "" : " or ") + describe_all(root, branch, plural);
    return out;
  }
  if (s.contains("enum") || s.contains("const")) {
    const std::vector<std::string> names = enum_names(s);
    if (names.size() == 1) return in_quotes(names[0]);
    return (plural ? "values among " : "one of ") + join_names(names);
  }
  const std::vector<std::string> types = schema_types(s);
  if (types.empty()) return plural ? "values" : "a value";
  std::string out;
  for (const std::string& t : types) out += (out.empty() ? "" : " or ") + describe_one(root, s, t, plural);
  return out;
}

std::string describe_one(const Json& root, const Json& s, const std::string& type, bool plural) {
  if (type == "integer") return (plural ? "integers" : "an integer") + range_text(s);
  if (type == "number") return (plural ? "numbers" : "a number") + range_text(s);
  if (type == "boolean") return plural ? "booleans" : "true or false";
  if (type == "null") return "null";
  if (type == "object") return plural ? "mappings" : "a mapping";
  if (type == "string") {
    if (s.contains("examples")) {
      std::string like;
      for (const Json& e : s["examples"]) {
        if (!e.is_string()) continue;  // layer_inputs also shows a list: not an example of a string
        like += (like.empty() ? "" : " or ") + in_quotes(e.get<std::string>());
      }
      if (like.empty()) return plural ? "strings" : "a string";
      return (plural ? "strings like " : "a string like ") + like;
    }
    if (s.value("minLength", 0) == 1 && s.value("maxLength", 0) == 1) return plural ? "single characters" : "a single character";
    if (s.value("minLength", 0) >= 1) return plural ? "non-empty strings" : "a non-empty string";
    return plural ? "strings" : "a string";
  }
  if (type == "array") {
    std::string out = plural ? "lists" : "a list";
    const int64_t lo = s.value("minItems", int64_t{0}), hi = s.value("maxItems", int64_t{-1});
    std::string count;
    if (lo == hi) count = std::to_string(lo) + " ";
    else if (hi >= 0) count = "at most " + std::to_string(hi) + " ";
    else if (lo == 1) out = plural ? "non-empty lists" : "a non-empty list";
    else if (lo > 1) count = "at least " + std::to_string(lo) + " ";
    if (!s.contains("items")) return out;
    if (hi != 1) return out + " of " + count + describe_all(root, s["items"], true);
    // One item at most: "a list of at most one string like ...", without the item's article.
    std::string item = describe_all(root, s["items"], false);
    if (item.rfind("a ", 0) == 0) item.erase(0, 2);
    else if (item.rfind("an ", 0) == 0) item.erase(0, 3);
    return out + " of " + (lo == 1 ? "one " : "at most one ") + item;
  }
  return "a " + type;
}

}  // namespace

std::string describe_expected(const Json& root, const Json& schema) { return describe_all(root, schema, false); }

}  // namespace dtrain
