// Checks the schema cannot express, on the schema-valid parts of the tree:
// piecewise schedules, settings that exclude each other, unique layer names
// and devices, run.warm_start.vars a valid regex. Each problem is located at
// the offending node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config_schema/diagnostics.hpp"
#include "config_schema/yaml_tree.hpp"

namespace dtrain {

std::vector<Issue> semantic_checks(const Node& root);

// Why `pattern` is not a valid ECMAScript regular expression ("it has an
// unmatched [", in our words: std::regex_error's own text differs between
// standard libraries); nullopt when it is valid.
std::optional<std::string> regex_problem(const std::string& pattern);

}  // namespace dtrain
