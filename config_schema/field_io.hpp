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

// Reads the fields `node` (a schema-valid mapping) gives into `object`; a
// missing or null key leaves the member as it is. A kActivation field is
// read into *activation ("linear" becomes "").
void read_fields(const Node& node, std::span<const Field> fields, void* object, std::string* activation);

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
