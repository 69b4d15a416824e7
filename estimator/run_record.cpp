// model_dir/run.json (estimator/run_record.hpp).
#include "estimator/run_record.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"

namespace dtrain {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

Status RunRecord::begin(const std::string& model_dir, int64_t step, int64_t max_steps) {
  path_ = (std::filesystem::path(model_dir) / "run.json").string();
  host_ = host_name();
  started_ = updated_ = now();
  ended_ = 0;
  step_ = step;
  max_steps_ = max_steps;
  return write("running", "");
}

Status RunRecord::saved(int64_t step) {
  if (path_.empty()) return Status::Ok();
  step_ = step;
  updated_ = now();
  return write("running", "");
}

void RunRecord::end(const Status& result, int64_t step) {
  if (path_.empty()) return;
  step_ = step;
  updated_ = ended_ = now();
  if (result) {
    (void)write("finished", "");
  } else {
    (void)write(result.error().kind == ErrorKind::kStopped ? "stopped" : "failed", result.error().message);
  }
  path_.clear();
}

Status RunRecord::write(const std::string& status, const std::string& error) {
  nlohmann::ordered_json j{{"status", status},   {"host", host_},         {"pid", static_cast<int64_t>(::getpid())},
                           {"started", started_}, {"updated", updated_},  {"ended", nullptr},
                           {"step", step_},       {"max_steps", max_steps_}};
  if (ended_ > 0) j["ended"] = ended_;
  if (!error.empty()) j["error"] = error;
  const std::string text = j.dump(2) + "\n";
  return io::write_file_atomic(path_, {text});
}

}  // namespace dtrain
