// The layer table (engine/layers/registry.hpp) seen from the job file: each
// row's schema branch of model.layers, and a layer's options read from its
// YAML and written back into the resolved job, all through the row's field
// table (config_schema/field_io.hpp).
#pragma once

#include "config_schema/schema.hpp"
#include "config_schema/yaml_tree.hpp"
#include "engine/base/job_spec.hpp"

namespace dtrain {

// The "oneOf" of model.layers' items: one branch per row, in table order.
Json layer_schema_branches();

// Fills spec.options (and spec.activation) of a layer whose type is set from
// its schema-valid node. A type with no row leaves the options empty.
void read_layer_options(const Node& node, LayerSpec& spec);

// The layer's options (and activation) as members of `out`, in table order.
void write_layer_options(const LayerSpec& spec, Json& out);

}  // namespace dtrain
