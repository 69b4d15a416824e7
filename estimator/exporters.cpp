// The job's export: section during train: LatestExporter (every evaluation,
// or the final step) and BestExporter (only when an evaluation metric
// improves), into model_dir/export/<step>/model.onnx, keeping the newest N.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/io/file_util.hpp"
#include "estimator/estimator.hpp"

namespace dtrain {

namespace fs = std::filesystem;

namespace {

bool lower_is_better(const std::string& metric) {
  return metric == "loss" || metric == "mean_loss" || metric == "mean_absolute_error";
}

// The step directories of export_dir (names of digits only), oldest first.
std::vector<std::pair<int64_t, fs::path>> export_steps(const fs::path& export_dir) {
  std::vector<std::pair<int64_t, fs::path>> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(export_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    steps.emplace_back(std::stoll(name), entry.path());
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

Status Estimator::export_after(const EvalResult* eval, bool final_step) {
  if (!job_.export_spec || last_checkpoint_.empty()) return Status::Ok();
  const ExportSpec& spec = *job_.export_spec;
  if (spec.every == "final" && !final_step) return Status::Ok();
  if (last_export_step_ == global_step_) return Status::Ok();
  const fs::path export_dir = fs::path(job_.run.model_dir) / "export";
  const fs::path best_path = export_dir / "best.json";
  std::optional<double> value;
  if (spec.best_by) {
    if (eval == nullptr) return Status::Ok();  // nothing to compare (trained with --no-eval)
    for (const auto& [name, v] : eval->metrics) {
      if (name == *spec.best_by) value = v;
    }
    if (!value) {
      return config_error(fmt::format("{}: export.best_by: the evaluation reports no metric \"{}\"", spec.where,
                                      *spec.best_by));
    }
    std::ifstream f(best_path);
    const nlohmann::json best = f ? nlohmann::json::parse(f, nullptr, false) : nlohmann::json();
    if (best.is_object() && best.value("metric", "") == *spec.best_by && best.contains("value")) {
      const double before = best["value"].get<double>();
      const bool better = lower_is_better(*spec.best_by) ? *value < before : *value > before;
      if (!better) {
        log_.info(fmt::format("export: {} {:.6g} at step {} is not better than {:.6g} (step {}); not exported",
                              *spec.best_by, *value, global_step_, before, best.value("step", int64_t{0})));
        return Status::Ok();
      }
    }
  }
  auto ckpt = read_compatible_checkpoint(last_checkpoint_);
  if (!ckpt) return ckpt.error();
  const fs::path dir = export_dir / std::to_string(global_step_);
  if (Status s = io::ensure_directory(dir.string()); !s) return s;
  const std::string path = (dir / "model.onnx").string();
  if (Status s = export_checkpoint(*ckpt, last_checkpoint_, path); !s) return s;
  last_export_step_ = global_step_;
  if (value) {
    const nlohmann::json best{{"metric", *spec.best_by}, {"value", *value}, {"step", global_step_}, {"path", path}};
    if (Status s = io::write_file_atomic(best_path.string(), {best.dump(2) + "\n"}); !s) return s;
  }
  // keep: the newest exports stay, the oldest steps go.
  auto steps = export_steps(export_dir);
  for (size_t i = 0; i + static_cast<size_t>(spec.keep) < steps.size(); ++i) {
    std::error_code ec;
    fs::remove_all(steps[i].second, ec);
    if (ec) return runtime_error(fmt::format("cannot remove old export {}: {}", steps[i].second.string(), ec.message()));
  }
  log_.info(value ? fmt::format("exported step {} to {} ({} {:.6g}, the best so far)", global_step_, path,
                                *spec.best_by, *value)
                  : fmt::format("exported step {} to {}", global_step_, path));
  return Status::Ok();
}

}  // namespace dtrain
