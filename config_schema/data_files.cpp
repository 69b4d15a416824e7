// Resolution and existence checks of the data files a job names.
#include "config_schema/data_files.hpp"

#include <filesystem>
#include <fstream>

namespace dtrain {

namespace fs = std::filesystem;

std::string resolve_data_path(const std::string& base_dir, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return fs::absolute(fs::path(base_dir) / p).lexically_normal().string();
}

namespace {

// The problem with a data file, or "" when it can be read. `shown` is how the
// message names the file.
std::string file_problem(const std::string& resolved, const std::string& shown, bool folder = false) {
  std::error_code ec;
  const fs::file_status st = fs::status(resolved, ec);
  if (folder) {
    if (!fs::exists(st)) return "no such folder " + shown;
    return fs::is_directory(st) ? "" : shown + " is not a folder; expected a folder of class folders";
  }
  if (!fs::exists(st)) return "no such file " + shown;
  if (fs::is_directory(st)) return shown + " is a directory; expected a file";
  std::ifstream in(resolved, std::ios::binary);
  if (!in) return "cannot read " + shown + "; expected a readable file";
  return "";
}

}  // namespace

std::vector<Issue> check_data_files(const Node& root, const std::string& base_dir) {
  std::vector<Issue> out;
  const Node* data = root.find("data");
  if (data == nullptr) return out;
  for (const char* role : {"train", "eval", "predict"}) {
    const Node* source = data->find(role);
    if (source == nullptr) continue;
    for (const char* field : {"images", "labels", "path", "dir"}) {
      const Node* node = source->find(field);
      if (node == nullptr || node->flagged || value_type(*node) != ValueType::kString || node->text.empty()) continue;
      const std::string resolved = resolve_data_path(base_dir, node->text);
      std::string shown = in_quotes(resolved);
      if (!fs::path(node->text).is_absolute())
        shown += " (resolved from " + in_quotes(node->text) + " relative to the job file's directory)";
      std::string problem = file_problem(resolved, shown, std::string_view(field) == "dir");
      if (problem.empty()) continue;
      out.push_back({node->loc, std::string("data.") + role + "." + field, problem, ErrorKind::kData});
    }
  }
  return out;
}

}  // namespace dtrain
