// Problems found in a job file, each pointing at the place it came from:
// "job.yaml:9:3: strategy.type: ..." for file nodes, "--set a.b=1: a.b: ..."
// for overrides, "job.yaml: data.train: ..." where no node exists.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

// Where a node came from: a file position (1-based line and column) or a
// source without position (an override "--set x=1", or the file as a whole).
struct Location {
  std::string source;  // the job file as given, or "--set path=value"
  int line = 0;        // 0 = no position
  int column = 0;
  std::string str() const;  // "job.yaml:9:3", or just the source when line == 0
};

struct Issue {
  Location where;
  std::string path;     // "model.layers[0].units"; "" for the whole job
  std::string message;  // what is wrong (and what was expected)
  ErrorKind kind = ErrorKind::kConfig;
};

// "<where>: <path>: <message>" (the path part left out when empty).
std::string format_issue(const Issue& issue);

// One Error holding every issue, one line each: issues with a file position
// first, sorted by line and column, then the rest in the order found. The
// kind is kData only when every issue is a data-file issue.
// REQUIRES: !issues.empty().
Error issues_to_error(std::vector<Issue> issues);

// Path building: child_path("model", "layers") == "model.layers",
// index_path("model.layers", 2) == "model.layers[2]", child_path("", "run") == "run".
std::string child_path(std::string_view parent, std::string_view key);
std::string index_path(std::string_view parent, size_t index);

// A string as the user would write it in a message: "dence" with quotes,
// backslashes and control characters escaped.
std::string in_quotes(std::string_view text);

// "a, b, c" from a list of names.
std::string join_names(const std::vector<std::string>& names);

}  // namespace dtrain
