// The ETA and the live progress line (estimator/hooks/progress_hook.hpp).
#include "estimator/hooks/progress_hook.hpp"

#include <algorithm>

namespace dtrain {

void RateWindow::add(double time, int64_t step, int64_t examples) {
  if (first_ < 0) first_ = time;
  // One sample per tenth of a second is plenty; the newest always replaces.
  if (samples_.size() >= 2 && time - samples_[samples_.size() - 2].time < 0.1) samples_.pop_back();
  samples_.push_back({time, step, examples});
  const double horizon = std::max(min_horizon_, 0.5 * (time - first_));
  while (samples_.size() > 2 && samples_[1].time <= time - horizon) samples_.pop_front();
}

double RateWindow::steps_per_sec() const {
  if (span() <= 0) return 0;
  return static_cast<double>(samples_.back().step - samples_.front().step) / span();
}

double RateWindow::examples_per_sec() const {
  if (span() <= 0) return 0;
  return static_cast<double>(samples_.back().examples - samples_.front().examples) / span();
}

double RateWindow::eta(int64_t max_steps) const {
  if (samples_.empty()) return -1;
  const int64_t left = max_steps - samples_.back().step;
  if (left <= 0) return 0;
  const double rate = steps_per_sec();
  if (span() < 0.5 || rate <= 0) return -1;
  return static_cast<double>(left) / rate;
}

Status ProgressHook::after_step(StepState& s) {
  const Clock::time_point now = Clock::now();
  examples_ += s.out.examples;
  rate_.add(std::chrono::duration<double>(now - start_).count(), s.step, examples_);
  s.eta_seconds = rate_.eta(s.max_steps);
  loss_ = has_loss_ ? 0.9 * loss_ + 0.1 * s.loss : s.loss;
  has_loss_ = true;
  // A terminal's line at most four times a second, and at the last step.
  if (log_.is_live() && (now - drawn_ >= std::chrono::milliseconds(250) || s.last())) {
    log_.progress({s.step, s.max_steps, rate_.examples_per_sec(), loss_, s.eta_seconds});
    drawn_ = now;
  }
  return Status::Ok();
}

}  // namespace dtrain
