// The embedded job schema (config_schema/job.schema.json), parsed once, and
// the wording of what a schema expects ("an integer >= 1", "one of a, b").
// Only the subset of JSON Schema 2020-12 listed in is_supported_keyword is
// used; validate.cpp implements exactly that subset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtrain {

// Ordered, so properties keep the order of the schema file (messages and YAML follow it).
using Json = nlohmann::ordered_json;

// The parsed schema, its layer branches made from the layer table.
// Thread-safe (initialized once).
const Json& job_schema();

// True for the keywords our validator implements or that are annotations.
bool is_supported_keyword(std::string_view keyword);

// `schema` with its "$ref" (a "#/$defs/name" pointer into `root`) merged in,
// recursively; the schema's own keywords win over the referenced ones.
Json resolve_ref(const Json& root, const Json& schema);

// The JSON types a schema admits, from "type" (string or list), else from the
// values of "enum"/"const"; empty means any.
std::vector<std::string> schema_types(const Json& schema);

// What a (resolved) schema expects, in words: "an integer >= 1",
// "one of valid, same", "an integer >= 1 or a list of 2 integers >= 1".
std::string describe_expected(const Json& root, const Json& schema);

// Property names of an object schema, in schema order.
std::vector<std::string> property_names(const Json& schema);

// String values of "enum" (or the single "const").
std::vector<std::string> enum_names(const Json& schema);

// For a "oneOf" whose branches all fix properties.type.const (the layer
// list): the branch for `type`, or nullptr; and all the type names in order.
bool is_type_discriminated(const Json& root, const Json& one_of);
const Json* branch_for_type(const Json& one_of, std::string_view type);
std::vector<std::string> discriminator_values(const Json& one_of);

}  // namespace dtrain
