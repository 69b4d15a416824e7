// Every malformed job under tests/bad_jobs/ fails with exactly the message and
// exit code in tests/bad_jobs/expected.json. Paths are given relative to the
// source root (the test runs from there); "@SOURCE_ROOT@" in an expected
// message stands for that directory as an absolute path.
#include <doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

// Runs the test from another directory, restoring the old one after.
struct ScopedCwd {
  fs::path old = fs::current_path();
  explicit ScopedCwd(const fs::path& dir) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old); }
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size())) text.replace(p, from.size(), to);
  return text;
}

TEST_CASE("bad_jobs: each malformed job gives its expected message and exit code") {
  ScopedCwd cwd(DTRAIN_SOURCE_ROOT);
  const std::string root = fs::current_path().string();
  std::ifstream in("tests/bad_jobs/expected.json");
  REQUIRE(in.good());
  const nlohmann::json expected = nlohmann::json::parse(in);

  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator("tests/bad_jobs"))
    if (entry.path().extension() == ".yaml") files.insert(entry.path().filename().string());
  CHECK(files.size() >= 25);
  for (const std::string& f : files) {
    INFO(f << " has no entry in expected.json");
    CHECK(expected.contains(f));
  }

  LoadOptions options;  // check_files on, as `dtrain validate`
  options.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  for (const auto& item : expected.items()) {
    // Plain names, not a structured binding: INFO captures them in a lambda (clang 14 cannot).
    const std::string name = item.key();
    const auto& want = item.value();
    INFO("tests/bad_jobs/" << name);
    REQUIRE(files.count(name) == 1);
    Result<JobSpec> r = load_job("tests/bad_jobs/" + name, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == replace_all(want["stderr"].get<std::string>(), "@SOURCE_ROOT@", root));
    CHECK(static_cast<int>(exit_code_for(r.error().kind)) == want["exit"].get<int>());
  }
}

}  // namespace
}  // namespace dtrain
