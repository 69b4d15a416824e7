// The job file: YAML parsing with positions, interpolation, --set overrides,
// the schema, `block:` expansion, semantic and data-file checks. Any input
// gives a JobSpec or a config/data error with a message; never a throw
// (which main reports as an internal error). Lines "#set KEY=VALUE" at the
// top are also given as --set overrides.
#include <optional>
#include <string>
#include <string_view>

#include "config_schema/job_loader.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  LoadOptions options;
  std::string_view rest = text;
  while (rest.starts_with("#set ")) {
    const size_t end = rest.find('\n');
    options.overrides.emplace_back(rest.substr(5, end == std::string_view::npos ? rest.npos : end - 5));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  options.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "DATA") return std::string("data");
    if (name == "STEPS") return std::string("100");
    return std::nullopt;
  };
  auto job = load_job_from_string(text, "fuzz.yaml", fuzz::scratch_dir().string(), options);
  if (!job.ok() && job.error().kind != ErrorKind::kData) {
    fuzz::expect_kind(job.error(), ErrorKind::kConfig, "load_job_from_string");
  }
  if (job.ok()) {
    for (const char* command : {"train", "evaluate", "predict", "validate"}) {
      Status s = check_for_command(*job, command);
      if (!s.ok()) fuzz::expect_kind(s.error(), ErrorKind::kConfig, "check_for_command");
    }
  }
  return 0;
}
