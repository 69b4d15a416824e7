// Glob expansion with fnmatch over one directory listing, sorted for a
// deterministic file order.
#include "datasets/file_glob.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

namespace dtrain {

Result<std::vector<std::string>> glob_files(const std::string& pattern) {
  namespace fs = std::filesystem;
  const fs::path p(pattern);
  const std::string dir = p.parent_path().string();
  const std::string name = p.filename().string();
  if (dir.find_first_of("*?[") != std::string::npos) {
    return data_error(pattern + ": wildcards are allowed only in the file name, not in directories");
  }
  std::vector<std::string> out;
  if (name.find_first_of("*?[") == std::string::npos) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return data_error(pattern + ": no such file");
    out.push_back(pattern);
    return out;
  }
  std::error_code ec;
  fs::directory_iterator it(dir.empty() ? fs::path(".") : fs::path(dir), ec);
  if (ec) return data_error(pattern + ": cannot read the directory: " + ec.message());
  for (const fs::directory_entry& e : it) {
    const std::string file = e.path().filename().string();
    std::error_code type_ec;
    if (fnmatch(name.c_str(), file.c_str(), FNM_PERIOD) == 0 && e.is_regular_file(type_ec)) {
      out.push_back(dir.empty() ? file : (fs::path(dir) / file).string());
    }
  }
  if (out.empty()) return data_error(pattern + ": no file matches");
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> glob_files(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    auto files = glob_files(pattern);
    if (!files) return files.error();
    out.insert(out.end(), files->begin(), files->end());
  }
  return out;
}

std::string patterns_text(const std::vector<std::string>& patterns) {
  std::string out;
  for (const std::string& p : patterns) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace dtrain
