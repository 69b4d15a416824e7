// The chief's checkpoints, with the evaluation and export that follow one:
// saves every run.save_checkpoints_steps steps or save_checkpoints_secs
// seconds, at the last step and when training stops; in a local
// train_and_evaluate evaluates the checkpoint as eval.throttle_secs and
// start_delay_secs allow (always the last), feeds eval.early_stopping, and
// exports as the job's export: section asks. At the end, saves (and
// evaluates) the final step if the last step did not, and exports it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "engine/base/job_spec.hpp"
#include "estimator/early_stopping.hpp"
#include "estimator/estimator.hpp"
#include "estimator/hooks/training_hook.hpp"

namespace dtrain {

class CheckpointHook : public TrainingHook {
 public:
  // What the hook asks of the Estimator.
  struct Actions {
    std::function<Status()> save;                  // a checkpoint of the current step and input position
    std::function<Result<EvalResult>()> evaluate;  // of the checkpoint just saved
    // Exports after an evaluation (null: none) or at the final step (exporters.cpp).
    std::function<Status(const EvalResult* eval, bool final_step)> export_after;
    // The early stop's record (model_dir/eval/early_stopping.json).
    std::function<Status(const EarlyStopping& early)> record_early_stop;
    std::function<double(const EvalResult& r)> early_metric;  // eval.early_stopping's metric in r
  };
  // `can_eval`: evaluate after saves (a local train_and_evaluate with
  // data.eval). `early`: eval.early_stopping's state, null without it.
  // `export_final`: export: every: final.
  CheckpointHook(const RunSpec& run, const EvalSpec& eval, bool can_eval, EarlyStopping* early, bool export_final,
                 Actions actions)
      : run_(run), eval_(eval), can_eval_(can_eval), early_(early), export_final_(export_final),
        actions_(std::move(actions)) {}
  Status after_step(StepState& s) override;
  Status end(int64_t step) override;

 private:
  using Clock = std::chrono::steady_clock;
  const RunSpec& run_;
  const EvalSpec& eval_;
  bool can_eval_;
  EarlyStopping* early_;
  bool export_final_;
  Actions actions_;
  Clock::time_point start_ = Clock::now(), last_save_ = Clock::now();
  std::optional<Clock::time_point> last_eval_;
  int64_t saved_step_ = -1;
};

}  // namespace dtrain
