// eval.early_stopping: the stop decision over a run's evaluations, as
// Estimator's stop_if_no_decrease_hook / stop_if_no_increase_hook counted in
// evaluations, and the record left in model_dir/eval when it stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// Feed evaluations in step order with add(). An evaluation improves when its
// value is below best - min_delta (mode min) or above best + min_delta (mode
// max); the first evaluation always does; NaN never does. After
// patience_evals evaluations in a row without improvement, stopped() is true
// and stays true (later evaluations are ignored). Not thread-safe.
class EarlyStopping {
 public:
  explicit EarlyStopping(const EarlyStoppingSpec& spec) : spec_(spec) {}

  // Adds the evaluation of the checkpoint of `step`. Returns true when this
  // evaluation is the one that stops training.
  bool add(int64_t step, double value);
  // add() for each model_dir/eval/metrics-<step>.json with step <= up_to, in
  // step order (the history of a resumed run). Files without the metric (an
  // earlier job computed other metrics) are skipped; an unreadable file is a
  // kData error naming it.
  Status replay(const std::string& eval_dir, int64_t up_to);

  bool stopped() const { return stop_step_ >= 0; }
  int64_t stop_step() const { return stop_step_; }  // the evaluation that stopped; -1 before
  // "eval loss has not decreased by more than 0 in 3 evaluations in a row
  // (best 0.1234 at step 20; last 0.2345 at step 80)".
  std::string reason() const;
  // Writes <eval_dir>/early_stopping.json (atomically): the spec, the best
  // value and step, the stopping evaluation and the reason. REQUIRES: stopped().
  Status write_record(const std::string& eval_dir) const;

 private:
  EarlyStoppingSpec spec_;
  std::optional<double> best_;
  int64_t best_step_ = -1;
  int64_t without_improvement_ = 0;
  int64_t last_step_ = -1;
  double last_value_ = 0;
  int64_t stop_step_ = -1;
};

}  // namespace dtrain
