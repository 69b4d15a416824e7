// The time left to max_steps, and the live progress line on a terminal
// (step/max, percent, examples/s, loss, ETA), redrawn at most a few times a
// second. The ETA it sets in StepState is printed by StepLogHook's lines too.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

#include "estimator/hooks/training_hook.hpp"
#include "estimator/logger.hpp"

namespace dtrain {

// Steps and examples per second over the recent past: the newest half of
// the run's wall time (at least `min_horizon` seconds), so that evaluations
// and checkpoints count at their share and one slow or fast moment does not
// swing the estimate. Times are seconds on any monotonic clock.
class RateWindow {
 public:
  explicit RateWindow(double min_horizon = 5.0) : min_horizon_(min_horizon) {}
  // The state after a step: the global step and the examples trained so far.
  void add(double time, int64_t step, int64_t examples);
  // Seconds to reach `max_steps` from the newest sample at the window's
  // rate; < 0 until the window spans half a second.
  double eta(int64_t max_steps) const;
  double steps_per_sec() const;
  double examples_per_sec() const;

 private:
  struct Sample {
    double time;
    int64_t step, examples;
  };
  double span() const { return samples_.size() < 2 ? 0 : samples_.back().time - samples_.front().time; }
  double min_horizon_;
  double first_ = -1;  // the time of the first sample
  std::deque<Sample> samples_;
};

class ProgressHook : public TrainingHook {
 public:
  explicit ProgressHook(Logger& log) : log_(log) {}
  const char* phase() const override { return "summaries"; }
  Status after_step(StepState& s) override;

 private:
  using Clock = std::chrono::steady_clock;
  Logger& log_;
  RateWindow rate_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point drawn_{};
  int64_t examples_ = 0;
  double loss_ = 0;  // smoothed over the recent steps
  bool has_loss_ = false;
};

}  // namespace dtrain
