// Loading a YAML job file into the typed JobSpec: parse (keeping line:column
// of every node), ${VAR} interpolation, --set overrides, validation against
// the embedded JSON Schema with "did you mean", semantic checks, data-file
// checks, defaults. Every problem found is reported, one line each:
//   job.yaml:9:3: strategy.type: "mirorred" is not one of one_device, ... (did you mean "mirrored"?)
// Thread-safe (no shared mutable state).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

struct LoadOptions {
  // "path.to.key=value" (the --set arguments), applied in order after
  // interpolation and before validation.
  std::vector<std::string> overrides;
  // Check that data files (data.*.images / labels / path) exist and are readable.
  bool check_files = true;
  // Environment lookup for ${VAR}; null means the real environment.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};

// Loads the job file at `path`. Messages name the file as given; relative
// data paths resolve against its directory. Errors: kConfig (exit 2) for
// anything wrong with the job (syntax, schema, overrides, unreadable job
// file), kData (exit 3) when every problem is a missing/unreadable data file.
Result<JobSpec> load_job(const std::string& path, const LoadOptions& options = {});

// The same from text: `display_name` names it in messages, relative data
// paths resolve against `base_dir`.
Result<JobSpec> load_job_from_string(const std::string& yaml_text, const std::string& display_name,
                                     const std::string& base_dir, const LoadOptions& options = {});

// What a command needs beyond a valid job: "train" needs data.train,
// "evaluate" needs data.eval; "predict", "validate" and "inspect" need only the
// model. An unknown command is a kRuntime error (a bug in the caller).
Status check_for_command(const JobSpec& job, std::string_view command);

// The JSON Schema of the job file as embedded at build time
// (config_schema/job.schema.json), and as dtrain uses it (`dtrain schema`):
// with the layer branches made from the layer table, which a test keeps
// equal to the embedded ones.
std::string_view job_schema_text();
std::string job_schema_json();

}  // namespace dtrain
