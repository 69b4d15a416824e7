// The resolved job as JSON, keys in schema order: the source of the YAML
// that `dtrain validate` prints and of the model hash stored in checkpoints.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/base/job_spec.hpp"

namespace dtrain {

using OrderedJson = nlohmann::ordered_json;

// Every field of the job with its value (defaults included), ordered as in
// the schema; each layer keeps only the keys its type's schema lists.
// Unset optionals are null; absent data sections are left out.
OrderedJson resolved_json(const JobSpec& job);

// 16 hex digits of the 64-bit FNV-1a hash of the key-sorted compact JSON of
// resolved_json(job)["model"]: unchanged by anything outside `model`.
std::string model_hash(const OrderedJson& resolved);

uint64_t fnv1a64(std::string_view bytes);

}  // namespace dtrain
