// Progress lines and throughput scalars (estimator/hooks/step_log_hook.hpp).
#include "estimator/hooks/step_log_hook.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace dtrain {

Status StepLogHook::after_step(StepState& s) {
  ++steps_;
  examples_ += s.out.examples;
  loss_ += s.loss;
  input_wait_ += s.input_wait_seconds;
  comm_ += s.comm_seconds;
  exposed_ += s.comm_exposed_seconds;
  if (!s.crossed(every_) && !s.last()) return Status::Ok();
  const double secs = std::max(seconds_since(start_), 1e-9);
  const double wait = std::min(1.0, input_wait_ / secs);
  const auto steps = static_cast<double>(steps_);
  log_.step({s.step, s.max_steps, loss_ / steps, s.learning_rate, steps / secs,
             static_cast<double>(examples_) / secs, wait, s.eta_seconds});
  if (writer_ != nullptr) {
    std::vector<std::pair<std::string, double>> scalars = {{"global_step/sec", steps / secs},
                                                           {"examples/sec", static_cast<double>(examples_) / secs},
                                                           {"input_wait_fraction", wait}};
    if (multi_worker_) {
      scalars.emplace_back("all_reduce_seconds_per_step", comm_ / steps);
      scalars.emplace_back("all_reduce_exposed_seconds_per_step", exposed_ / steps);
    }
    if (Status st = writer_->scalars(s.step, scalars); !st) return st;
  }
  start_ = Clock::now();
  steps_ = examples_ = 0;
  loss_ = input_wait_ = comm_ = exposed_ = 0;
  return Status::Ok();
}

}  // namespace dtrain
