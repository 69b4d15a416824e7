// The early-stopping decision and its replay from model_dir/eval (see early_stopping.hpp).
#include "estimator/early_stopping.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"

namespace dtrain {

namespace fs = std::filesystem;

bool EarlyStopping::add(int64_t step, double value) {
  if (stopped()) return false;
  last_step_ = step;
  last_value_ = value;
  const bool improved =
      std::isfinite(value) &&
      (!best_ || (spec_.mode == "max" ? value > *best_ + spec_.min_delta : value < *best_ - spec_.min_delta));
  if (improved) {
    best_ = value;
    best_step_ = step;
    without_improvement_ = 0;
    return false;
  }
  if (++without_improvement_ < spec_.patience_evals) return false;
  stop_step_ = step;
  return true;
}

Status EarlyStopping::replay(const std::string& eval_dir, int64_t up_to) {
  std::vector<std::pair<int64_t, fs::path>> files;
  std::error_code ec;
  for (fs::directory_iterator it(eval_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string prefix = "metrics-", suffix = ".json";
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const int64_t step = std::stoll(digits);
    if (step <= up_to) files.emplace_back(step, it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [step, path] : files) {
    auto text = io::read_whole_file(path.string(), ErrorKind::kData);
    if (!text) return text.error();
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return data_error(fmt::format("{}: not the JSON of an evaluation (eval.early_stopping reads it to resume)",
                                    path.string()));
    }
    if (!j.contains("metrics") || !j["metrics"].contains(spec_.metric) || !j["metrics"][spec_.metric].is_number()) {
      continue;
    }
    add(step, j["metrics"][spec_.metric].get<double>());
  }
  return Status::Ok();
}

std::string EarlyStopping::reason() const {
  return fmt::format("eval {} has not {} by more than {} in {} evaluation{} in a row (best {:.6g} at step {}; last "
                     "{:.6g} at step {})",
                     spec_.metric, spec_.mode == "max" ? "increased" : "decreased", spec_.min_delta,
                     spec_.patience_evals, spec_.patience_evals == 1 ? "" : "s", best_.value_or(NAN), best_step_,
                     last_value_, last_step_);
}

Status EarlyStopping::write_record(const std::string& eval_dir) const {
  nlohmann::ordered_json j;
  j["stopped_at_eval_step"] = stop_step_;
  j["metric"] = spec_.metric;
  j["mode"] = spec_.mode;
  j["patience_evals"] = spec_.patience_evals;
  j["min_delta"] = spec_.min_delta;
  j["best"] = best_ ? nlohmann::ordered_json(*best_) : nlohmann::ordered_json(nullptr);
  j["best_step"] = best_step_;
  j["reason"] = reason();
  return io::write_file_atomic((fs::path(eval_dir) / "early_stopping.json").string(), {j.dump(2) + "\n"});
}

}  // namespace dtrain
