// A field table (engine/base/fields.hpp) applied to a job: its YAML read into
// the table's struct, the struct written back as the resolved job's JSON, and
// the table's JSON Schema. Layer types use it through layer_schema.hpp and
// to_jobspec/job_json; any struct with a table can.
#pragma once

#include <span>
#include <string>

#include "config_schema/schema.hpp"
#include "config_schema/yaml_tree.hpp"
#include "engine/base/fields.hpp"

namespace dtrain {

// What reading needs besides the YAML.
struct FieldReading {
  std::string* activation = nullptr;  // gets a kActivation field ("linear" becomes "")
  std::string base_dir;               // the job file's directory: relative data paths start here
};

// Reads the fields `node` (a schema-valid mapping) gives into `object`; a
// missing or null key leaves the member as it is.
void read_fields(const Node& node, std::span<const Field> fields, void* object, const FieldReading& how = {});

// A kCustom field's codec (config_schema/field_codecs.cpp): how its value is
// read, written and described.
struct FieldCodec {
  const char* name;
  void (*read)(const Node& value, void* member, const FieldReading& how);
  Json (*write)(const void* member);
  Json (*schema)(const Field& f);  // the value's schema; null: the field's `schema` text
};
std::span<const FieldCodec> field_codecs();
// The codec named `name`; a table naming one that does not exist is a
// programming error, reported when the schema is first built.
const FieldCodec& field_codec(const char* name);

// The schema of a mapping with `fields`: {type: object, properties,
// required, additionalProperties: false} and `extra` (JSON text: more keys,
// e.g. an allOf of conditions between the fields), defaults from `defaults`.
Json fields_object_schema(std::span<const Field> fields, const void* defaults, const char* extra = nullptr);

// The fields of `object` as JSON members of `out`, in table order (a field
// hidden at its default is left out when it holds its default, compared with
// `defaults`, an object of the same struct at its defaults).
void write_fields(std::span<const Field> fields, const void* object, const void* defaults,
                  const std::string& activation, Json& out);

// One field's schema: its value's, then its description and (unless
// required) its default, read from `defaults` (an object of the table's
// struct at its defaults); a kStruct field's mapping with its own fields.
Json field_schema(const Field& f, const void* defaults);

// The schema of each field as a property of `properties`, and the required
// ones appended to `required`. Defaults are read from `defaults`.
void fields_schema(std::span<const Field> fields, const void* defaults, Json& properties, Json& required);

// An initializer as the resolved job shows it: its name, or the mapping when
// it has values ({type: constant, value: x}, {type: random_uniform, ...}).
Json initializer_json(const InitializerSpec& init);

// A float as the double of its shortest decimal form (0.2f -> 0.2, not
// 0.20000000298...), so that the YAML shows what the user wrote.
double shortest(float f);

}  // namespace dtrain
