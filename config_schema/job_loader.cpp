// load_job: the pipeline from job-file text to JobSpec (see job_loader.hpp).
#include "config_schema/job_loader.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config_schema/blocks.hpp"
#include "config_schema/data_files.hpp"
#include "config_schema/emit_yaml.hpp"
#include "config_schema/interpolate.hpp"
#include "config_schema/job_json.hpp"
#include "config_schema/overrides.hpp"
#include "config_schema/schema.hpp"
#include "config_schema/semantic.hpp"
#include "config_schema/to_jobspec.hpp"
#include "config_schema/validate.hpp"
#include "config_schema/yaml_tree.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

void append(std::vector<Issue>& to, std::vector<Issue> from) {
  for (Issue& i : from) to.push_back(std::move(i));
}

// The names layers use for the model's inputs: model.inputs' keys, else "input".
std::vector<std::string> model_input_names(const Node& root) {
  const Node* model = root.find("model");
  const Node* inputs = model == nullptr ? nullptr : model->find("inputs");
  if (inputs == nullptr || !inputs->is_mapping() || inputs->entries.empty()) return {"input"};
  std::vector<std::string> names;
  for (const auto& [key, value] : inputs->entries) names.push_back(key.text);
  return names;
}

}  // namespace

Result<JobSpec> load_job_from_string(const std::string& yaml_text, const std::string& display_name,
                                     const std::string& base_dir, const LoadOptions& options) {
  Result<Node> parsed = parse_yaml(yaml_text, display_name);
  if (!parsed.ok()) return parsed.error();
  Node& root = parsed.value();

  std::vector<Issue> issues = find_duplicate_keys(root);
  append(issues, interpolate_tree(root, options.getenv ? options.getenv : process_environment()));
  for (const std::string& o : options.overrides) append(issues, apply_override(root, o));
  BlockExpansion expansion = expand_blocks(root, model_input_names(root));
  append(issues, std::move(expansion.issues));
  if (root.is_scalar() && root.text.empty() && !root.quoted) {
    issues.push_back({root.loc, "", "the job file is empty; expected a mapping with at least a model section"});
  } else {
    std::vector<Issue> found = validate(root, job_schema(), job_schema());
    append(found, semantic_checks(root));
    append(issues, map_to_origins(std::move(found), expansion.origins));
  }
  const std::string abs_base = fs::absolute(base_dir.empty() ? fs::path(".") : fs::path(base_dir)).lexically_normal().string();
  if (options.check_files) append(issues, check_data_files(root, abs_base));
  if (!issues.empty()) return issues_to_error(std::move(issues));

  JobSpec job = to_jobspec(root, display_name, abs_base);
  for (size_t i = 0; i < expansion.origins.size() && i < job.model.layers.size(); ++i) {
    job.model.layers[i].origin = expansion.origins[i].path;
    job.model.layers[i].note = expansion.origins[i].note;
  }
  const OrderedJson resolved = resolved_json(job);
  job.resolved_yaml = emit_yaml(resolved);
  job.model_hash = model_hash(resolved);
  return job;
}

Result<JobSpec> load_job(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return config_error(path + ": cannot read the job file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return config_error(path + ": cannot read the job file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  const fs::path dir = fs::path(path).parent_path();
  return load_job_from_string(text.str(), path, dir.empty() ? "." : dir.string(), options);
}

Status check_for_command(const JobSpec& job, std::string_view command) {
  const char* needed = nullptr;
  if (command == "train") {
    if (!job.data.train) needed = "train";
  } else if (command == "evaluate") {
    if (!job.data.eval) needed = "eval";
  } else if (command != "predict" && command != "export" && command != "validate" && command != "inspect") {
    return runtime_error("check_for_command: unknown command \"" + std::string(command) + "\"");
  }
  if (needed == nullptr) return Status::Ok();
  return config_error(job.source_path + ": data." + needed + ": required by \"dtrain " + std::string(command) +
                      "\" but missing; expected a data." + needed + " section with format idx, csv or synthetic");
}

}  // namespace dtrain
