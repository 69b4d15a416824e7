// Expanding file globs (`files:` of a data source) into a deterministic list:
// wildcards * ? [...] in the last path component only, sorted by name.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

// The regular files matching `pattern`, sorted bytewise by path. A pattern
// without wildcards names one file. Errors (kData): the directory cannot be
// read, wildcards in a directory part, or no file matches.
Result<std::vector<std::string>> glob_files(const std::string& pattern);

// glob_files() of each pattern in turn, concatenated in the order given (the
// matches of one pattern sorted). The first pattern's error, if any.
Result<std::vector<std::string>> glob_files(const std::vector<std::string>& patterns);

// The patterns as messages name them: "a", or "a, b".
std::string patterns_text(const std::vector<std::string>& patterns);

}  // namespace dtrain
