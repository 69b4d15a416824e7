// Evaluation: loss, metrics and the per-output report over data.eval, written
// as eval summaries and JSON.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "engine/thread_errors.hpp"
#include "datasets/pipeline.hpp"
#include "engine/io/file_util.hpp"
#include "estimator/early_stopping.hpp"
#include "estimator/eval_report_output.hpp"
#include "estimator/estimator.hpp"
#include "estimator/model_outputs.hpp"
#include "strategies/cluster_runtime.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {

namespace fs = std::filesystem;

Result<EvalResult> Estimator::evaluate(const std::optional<std::string>& checkpoint) {
  auto path = restore_for_inference(checkpoint);
  if (!path) return path.error();
  return run_evaluation(*path);
}

Result<EvalResult> Estimator::run_evaluation(const std::string& checkpoint_name) {
  if (!job_.data.eval) return config_error(fmt::format("{}: data.eval: required for evaluation", job_.source_path));
  const DataSourceSpec& spec = *job_.data.eval;
  auto plan = batch_plan(spec, "eval");
  if (!plan) return plan.error();
  const int64_t batch = plan->per_process;
  VocabularyPtr vocabulary;
  if (spec.format == "text") {
    auto found = evaluation_vocabulary();
    if (!found) return found.error();
    if (Status s = check_vocabulary_fits_model(spec, "eval"); !s) return s.error();
    vocabulary = *found;
  }
  if (spec.format == "csv") {
    if (auto found = evaluation_tabular(); !found) return found.error();
  }
  auto input = open_input(spec, "eval", batch, vocabulary, false);
  if (!input) return input.error();
  log_threads();
  StepOutput total;
  total.metric_state.assign(program_.metric_state_size(), 0.0);
  std::vector<ReportAccumulator> reports = make_report_accumulators(program_);
  for (int64_t n = 0; !job_.eval.steps || n < *job_.eval.steps; ++n) {
    auto next = (*input)->next();
    if (!next) return next.error();
    if (!next->has_value()) break;
    if (Status s = check_batch(**next, spec, "data.eval", **input); !s) return s.error();
    maybe_pause_for_test("evaluation");
    StepOutput step = strategy_->eval_step(**next);
    add_to_reports(reports, step, **next);
    step.predictions.clear();  // the report has them; total keeps sums only
    accumulate(total, step);
  }
  if (total.examples == 0) {
    return data_error(fmt::format("{}: data.eval: the eval input has no examples", spec.where));
  }
  EvalResult r;
  r.global_step = global_step_;
  r.examples = total.examples;
  r.checkpoint = checkpoint_name;
  r.metrics = output_scalars(program_, total);
  r.reports = finish_reports(reports, {(*input)->class_names()});  // the first output's, where the data names them
  log_.eval(r.global_step, r.metrics, checkpoint_name);
  if (Status s = write_eval_outputs(r); !s) return s.error();
  return r;
}

namespace {

// The step of "…/model.ckpt-<step>.safetensors"; -1 if the name differs.
int64_t checkpoint_step(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string prefix = "model.ckpt-", suffix = ".safetensors";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoll(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

Status Estimator::evaluate_continuously() {
  if (!job_.data.eval) return config_error(fmt::format("{}: data.eval: required for the evaluator", job_.source_path));
  const RunSpec& run = job_.run;
  int64_t final_step = run.max_steps;
  int64_t done = -1;  // the last step evaluated
  log_.info(fmt::format("evaluator: following {} and evaluating each new checkpoint until step {}", run.model_dir,
                        final_step));
  const fs::path eval_dir = fs::path(run.model_dir) / "eval";
  // eval.early_stopping: the evaluator decides, continuing the history in
  // eval_dir, and tells the training tasks through the coordination service.
  std::optional<EarlyStopping> early;
  auto tell_training = [&]() -> Status {
    log_.info(fmt::format("evaluator: early stopping after the evaluation of step {}: {}; the training tasks stop",
                          early->stop_step(), early->reason()));
    if (!options_.cluster) return Status::Ok();
    return options_.cluster->client().set(
        "train/early_stop", fmt::format("after the evaluation of step {}, {}", early->stop_step(), early->reason()));
  };
  if (job_.eval.early_stopping) {
    early.emplace(*job_.eval.early_stopping);
    if (Status s = early->replay(eval_dir.string(), INT64_MAX); !s) return s;
    if (early->stopped()) {
      if (Status s = tell_training(); !s) return s;
    }
  }
  for (;;) {
    for (const std::string& path : list_checkpoints(run.model_dir)) {
      const int64_t step = checkpoint_step(path);
      if (step <= done) continue;
      std::error_code ec;
      if (fs::exists(eval_dir / fmt::format("metrics-{}.json", step), ec)) {
        done = step;  // evaluated by an earlier run of this evaluator
        continue;
      }
      if (done >= 0 && run.save_checkpoints_steps && *run.save_checkpoints_steps > 0 &&
          step - done > *run.save_checkpoints_steps && step % *run.save_checkpoints_steps == 0) {
        log_.warning(fmt::format("evaluator: checkpoints after step {} and before {} were deleted "
                                 "(keep_checkpoint_max) before they could be evaluated",
                                 done, step));
      }
      auto ckpt = read_compatible_checkpoint(path);
      if (!ckpt) {
        if (!fs::exists(path, ec)) {
          log_.warning(fmt::format("evaluator: {} was deleted (keep_checkpoint_max) before it could be evaluated",
                                   path));
          continue;
        }
        return ckpt.error();
      }
      if (Status s = restore_from(*ckpt); !s) return s;
      auto r = run_evaluation(path);
      if (!r) return r.error();
      done = step;
      // export: every: eval is the evaluator's, as Estimator's exporters ran
      // in its evaluator (every: final stays the chief's).
      if (job_.export_spec && job_.export_spec->every == "eval") {
        last_checkpoint_ = path;
        if (Status s = export_after(&*r, false); !s) return s;
      }
      if (early && early->add(step, metric_value(*r, early_metric()))) {
        if (Status s = record_early_stop(*early); !s) return s;
        if (Status s = tell_training(); !s) return s;
      }
    }
    if (options_.cluster && final_step == run.max_steps) {
      // Training may end before max_steps (a non-repeating input ran out).
      auto f = options_.cluster->client().get("train/final_step", std::chrono::milliseconds(1));
      if (f) final_step = std::stoll(*f);
    }
    if (done >= final_step) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  log_.info(fmt::format("evaluator: evaluated the final checkpoint (step {}); done", done));
  return Status::Ok();
}

double Estimator::metric_value(const EvalResult& r, const std::string& metric) {
  for (const auto& [name, value] : r.metrics)
    if (name == metric) return value;
  return NAN;
}

Status Estimator::record_early_stop(const EarlyStopping& early) {
  const fs::path dir = fs::path(job_.run.model_dir) / "eval";
  if (Status s = early.write_record(dir.string()); !s) return s;
  if (!eval_writer_) return Status::Ok();  // opened by the evaluation that stopped
  if (Status s = eval_writer_->scalar("early_stopping/stopped", early.stop_step(), 1.0); !s) return s;
  return eval_writer_->flush();
}

Status Estimator::write_eval_outputs(const EvalResult& r) {
  const fs::path dir = fs::path(job_.run.model_dir) / "eval";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  if (!eval_writer_) {
    auto w = SummaryWriter::open(dir.string());
    if (!w) return w.error();
    eval_writer_ = std::move(*w);
  }
  if (Status s = eval_writer_->scalars(r.global_step, r.metrics); !s) return s;
  if (Status s = write_confusion_images(*eval_writer_, r.global_step, r.reports); !s) return s;
  if (Status s = eval_writer_->flush(); !s) return s;
  nlohmann::json j{{"global_step", r.global_step}, {"examples", r.examples}, {"checkpoint", r.checkpoint}};
  for (const auto& [k, v] : r.metrics) j["metrics"][k] = v;
  j["report"] = report_json(r.reports);
  const std::string text = j.dump(2) + "\n";
  for (const fs::path& p : {dir / fmt::format("metrics-{}.json", r.global_step), dir / "metrics.json"}) {
    if (Status s = io::write_file_atomic(p.string(), {text}); !s) return s;
  }
  return Status::Ok();
}

std::string Estimator::eval_json_path(int64_t step) const {
  return (fs::path(job_.run.model_dir) / "eval" / fmt::format("metrics-{}.json", step)).string();
}

void Estimator::log_eval_report(const EvalResult& r) {
  if (log_.is_json()) {
    log_.json_event("eval_report", {{"step", r.global_step}, {"report", report_json(r.reports)}});
    return;
  }
  std::string text = report_text(r.reports, eval_json_path(r.global_step));
  if (text.empty()) return;
  text.pop_back();  // info() ends the line
  log_.info(text);
}

}  // namespace dtrain
