// The typed JobSpec from a schema-valid job tree: fields the file leaves out
// keep the defaults of job_spec.hpp, plus the defaults that depend on other
// fields (pool strides = size, repeat by role, checkpoint steps, layer names).
#pragma once

#include <string>

#include "engine/base/job_spec.hpp"
#include "config_schema/yaml_tree.hpp"

namespace dtrain {

// REQUIRES: `root` passed validation and semantic checks. Data paths are
// resolved against `base_dir` (absolute). Does not fill resolved_yaml or model_hash.
JobSpec to_jobspec(const Node& root, const std::string& source_path, const std::string& base_dir);

}  // namespace dtrain
